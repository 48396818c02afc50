//! The local mirror of the upstream download sites for the offline tests: crates/testbed's
//! (`testbed::artifacts::mirror`).

pub use testbed::artifacts::mirror::*;
