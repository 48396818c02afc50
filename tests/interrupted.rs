//! Interrupted runs leave nothing half-done (issue 15): `kk create cluster` stopped at
//! seeded random moments (SIGINT, SIGTERM, SIGKILL, a host cut off, a host rebooted),
//! then completed by the next run.
