//! The artifacts kk's end-to-end tests and the benchmark's `--flow` serve to `kk create
//! cluster`: real binaries repackaged in upstream's archive layouts from the Debian packages
//! installed or unpacked on this machine (`scripts/test` provides them), clearly named FAKE
//! stand-ins where no Debian package exists (the `kube-fake` tools of tests/fakes, shell
//! scripts, charts), and manifests in builtin/artifacts.yaml's format.
//!
//! They live here, not in tests/common, so a binary (crates/testbed/src/bin/bench) can build
//! and serve exactly what the tests do. This is test support: a missing package or a failing
//! `tar` panics with what to install, as the tests expect.

pub mod config;
pub mod containerd;
pub mod debian;
pub mod docker;
pub mod etcd;
pub mod fakes;
pub mod files;
pub mod mirror;
pub mod oci;
pub mod serve;
pub mod tree;
pub mod validators;

use std::path::{Path, PathBuf};

/// The repository root (playbooks/, roles/, builtin/, tests/fakes): two levels above this
/// crate, the same path the tests' `CARGO_MANIFEST_DIR` is.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/testbed lies two levels under the repository root")
        .to_path_buf()
}

/// A YAML file of the repository as JSON, parsed by the engine's own YAML loader (so the
/// versions read are the ones kk reads).
pub fn load_yaml(path: &Path) -> serde_json::Value {
    kk_engine::yaml::load_file(path)
        .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message))
        .to_value()
}
