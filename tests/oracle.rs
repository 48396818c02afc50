//! Ansible as oracle: every fixture playbook under `tests/oracle/playbooks/` is run by
//! ansible-playbook (ansible-core 2.19, installed into a venv by
//! `tests/oracle/setup_ansible.sh`) and by `kk run`, and `tests/oracle/compare.py`
//! compares the event streams, exit codes and the files both runs left behind.
//!
//! Needs `python3` (with `venv`) and, the first time, PyPI to install ansible-core.
//! The venv lives at `$KK_ORACLE_VENV` (default `target/oracle-venv`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where the oracle suite (fixtures, callback, scripts) lives.
fn oracle_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("oracle")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Installs ansible-core into the venv (a no-op when it is already there).
fn setup_ansible() {
    let script = oracle_dir().join("setup_ansible.sh");
    let out = Command::new("bash")
        .arg(&script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed ({}):\n{}",
        script.display(),
        out.status,
        text(&out)
    );
}

/// Runs compare.py with `args`; panics with its whole report unless every fixture passed.
fn compare(args: &[&str], kk_bin: Option<&str>) {
    setup_ansible();
    let script = oracle_dir().join("compare.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match kk_bin {
        Some(bin) => cmd.env("KK_BIN", bin),
        None => cmd.env_remove("KK_BIN"),
    };
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    let report = text(&out);
    println!("{report}");
    assert!(
        out.status.success(),
        "the oracle comparison found mismatches ({}):\n{report}",
        out.status
    );
}

/// kk gives the same results as Ansible on every fixture (apart from the differences
/// the fixtures declare with `# kk-differs:`). Ansible's side also checks each fixture
/// itself: it must end with the exit code its `# expect-rc:` header says.
#[test]
fn oracle_kk_matches_ansible() {
    compare(&["--all"], Some(env!("CARGO_BIN_EXE_kk")));
}
