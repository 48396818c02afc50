//! Ansible as oracle: every fixture playbook under `tests/oracle/playbooks/` is run by
//! ansible-playbook (ansible-core 2.19, installed into a venv by
//! `tests/oracle/setup_ansible.sh`) and by `kk run`, and `tests/oracle/compare.py`
//! compares the event streams, exit codes and the files both runs left behind.
//!
//! Needs `python3` (with `venv`) and, the first time, PyPI to install ansible-core.
//! The venv lives at `$KK_ORACLE_VENV` (default `target/oracle-venv`).
//!
//! The second test runs the same fixtures with both tools driving three real Debian 12
//! hosts (the `testbed` crate) over SSH: `compare.py --hosts-file` gives each run its own
//! oracle_root on the hosts and on the controller and compares files from both places.
//! `KK_ORACLE_SSH_JOBS` sets how many fixtures run at once over SSH (default 3).
//! `KK_ORACLE_FIXTURES` (names separated by commas or spaces, e.g. `07_loops,100_ini`)
//! runs only those fixtures in both tests, for working on a few of them.

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

/// Installs ansible-core into the venv (a no-op when it is already there). The two
/// tests of this file may call it at once: a lock keeps the venv from being built twice.
fn setup_ansible() {
    static ONCE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut done = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    if *done {
        return;
    }
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
    *done = true;
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

/// The fixtures to run: `KK_ORACLE_FIXTURES` when set, else `--all`.
fn selection() -> Vec<String> {
    match std::env::var("KK_ORACLE_FIXTURES") {
        Ok(names) if !names.trim().is_empty() => names
            .split([',', ' '])
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect(),
        _ => vec!["--all".to_string()],
    }
}

/// kk gives the same results as Ansible on every fixture (apart from the differences
/// the fixtures declare with `# kk-differs:`). Ansible's side also checks each fixture
/// itself: it must end with the exit code its `# expect-rc:` header says.
#[test]
fn oracle_kk_matches_ansible() {
    let args = selection();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    compare(&args, Some(env!("CARGO_BIN_EXE_kk")));
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
        .args(selection())
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
