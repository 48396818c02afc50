//! The etcd artifact of tests/etcd.rs: crates/testbed's (`testbed::artifacts::etcd`).

pub use testbed::artifacts::etcd::*;
