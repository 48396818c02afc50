//! The FAKE kubeadm / kubelet / kubectl / helm / calicoctl of `tests/fakes/` as the tests use
//! them (built, laid out, served, pushed, their journals read): crates/testbed's
//! (`testbed::artifacts::fakes`), so the benchmark uses the same.

pub use testbed::artifacts::fakes::*;
