//! The Docker and image-registry artifacts of tests/image_registry.rs: crates/testbed's
//! (`testbed::artifacts::docker`).

pub use testbed::artifacts::docker::*;
