//! Where the real validators the tests run live: `kubernetes-validate` (PyPI) in the
//! virtualenv `scripts/test` creates. Shared by kk's e2e tests and kk-capkk's manifest
//! tests, so both name the same place and say the same thing when it is missing.

use std::path::{Path, PathBuf};

/// The virtualenv `scripts/test` creates and pip-installs kubernetes-validate into.
pub const VENV: &str = "/usr/local/lib/kk-test/venv";

/// A program of [`VENV`]'s `bin/`; panics with how to get it when it is missing.
pub fn venv_bin(name: &str) -> PathBuf {
    let p = Path::new(VENV).join("bin").join(name);
    assert!(
        p.is_file(),
        "{} is needed: run scripts/test (it creates the virtualenv {} and pip-installs kubernetes-validate)",
        p.display(),
        VENV
    );
    p
}
