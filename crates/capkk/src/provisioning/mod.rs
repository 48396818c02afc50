//! Cluster API bootstrap data (cloud-init, ignition) mapped to files and commands.
