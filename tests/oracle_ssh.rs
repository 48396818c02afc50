//! Ansible as oracle over SSH: the same fixture playbooks as `tests/oracle.rs`, but both
//! ansible-playbook and `kk run` drive three real Debian 12 hosts (the `testbed` crate)
//! over SSH instead of `ansible_connection: local`. `tests/oracle/compare.py --hosts-file`
//! gives each run its own oracle_root on the hosts and on the controller, collects the
//! files from both places and compares them with the event streams and exit codes.
//! Fixtures whose meaning depends on the local connection carry `# ssh-skip: <reason>`.
//!
//! Needs what both suites need: root with the test bed's tools, and `python3` (with
//! `venv`) plus, the first time, PyPI for ansible-core (`tests/oracle/setup_ansible.sh`).
//! `KK_ORACLE_SSH_JOBS` sets how many fixtures run at once (default 3).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

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

/// compare.py's hosts file: inventory host `hN` is the bed's host index N-1, root by key.
fn hosts_file(bed: &testbed::TestBed) -> String {
    let mut map = serde_json::Map::new();
    for (i, h) in bed.hosts().iter().enumerate() {
        map.insert(
            format!("h{}", i + 1),
            serde_json::json!({
                "ip": h.ip.to_string(),
                "port": h.port,
                "key": h.root_key_path,
                "user": "root",
            }),
        );
    }
    serde_json::to_string_pretty(&serde_json::Value::Object(map)).expect("hosts file as JSON")
}

/// kk gives the same results as Ansible on every fixture when both run over SSH against
/// three real hosts (apart from declared differences and `# ssh-skip` fixtures).
#[test]
fn oracle_kk_matches_ansible_over_ssh_on_three_hosts() {
    let started = Instant::now();
    setup_ansible();
    let bed = testbed::TestBed::start(3).unwrap_or_else(|e| panic!("cannot boot test hosts: {e}"));
    let dir = tempfile::tempdir().expect("temp dir");
    let hosts = dir.path().join("hosts.json");
    std::fs::write(&hosts, hosts_file(&bed)).expect("write the hosts file");
    let jobs = std::env::var("KK_ORACLE_SSH_JOBS").unwrap_or_else(|_| "3".into());
    let script = oracle_dir().join("compare.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg("--all")
        .arg("--hosts-file")
        .arg(&hosts)
        .args(["-j", &jobs])
        .env("KK_BIN", env!("CARGO_BIN_EXE_kk"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    let report = text(&out);
    println!("{report}");
    println!(
        "oracle over SSH: {:.0}s in all (setup, boot, {} fixtures at once)",
        started.elapsed().as_secs_f64(),
        jobs
    );
    assert!(
        out.status.success(),
        "the oracle comparison over SSH found mismatches ({}):\n{report}",
        out.status
    );
}
