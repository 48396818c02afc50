//! CAPKK on kk: a Cluster API infrastructure provider that turns machines reachable over
//! SSH into Kubernetes nodes. The controllers (`controllers`) watch the custom resources
//! (`api`); the machine work (`machine`) runs bundled playbooks through kk's engine, and
//! `provisioning` maps Cluster API's bootstrap data (cloud-init, ignition) to files and
//! commands those playbooks apply.

pub mod api;
pub mod controllers;
pub mod machine;
pub mod provisioning;
