//! The transfer target of `bench --flow`: kk putting one artifact on every host at once
//! (`copy`), against the raw floor: `ssh host 'cat > file' < artifact` to every host at
//! once, each over its own already-open master (as kk's commands go). Both are timed
//! from when the connections are open, so logins do not count on either side.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;
use testbed::TestBed;

use super::measure::measure_tree_lines;

/// The artifact's size: big enough that per-command costs vanish, small enough for 100 hosts.
const SIZE: usize = 48 << 20;

/// One measurement.
pub(super) struct Transfer {
    /// Hosts written to.
    pub hosts: usize,
    /// Seconds kk's `copy` task took on all hosts.
    pub kk_s: f64,
    /// Seconds raw `ssh … cat` took on all hosts.
    pub raw_s: f64,
}

impl Transfer {
    /// Bytes per host.
    pub fn bytes(&self) -> u64 {
        SIZE as u64
    }
}

/// Incompressible bytes (a fixed xorshift stream, the same in every run).
fn artifact(path: &Path) -> Result<(), String> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut data = Vec::with_capacity(SIZE);
    while data.len() < SIZE {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend_from_slice(&x.to_le_bytes());
    }
    fs::write(path, &data).map_err(|e| format!("{}: {e}", path.display()))
}

/// Measures kk then raw ssh on the first `hosts` hosts of `bed` (inventory `inventory`
/// in `dir` names them `names`).
pub(super) fn measure(
    kk: &Path,
    bed: &TestBed,
    dir: &Path,
    names: &[String],
) -> Result<Transfer, String> {
    let hosts = names.len();
    artifact(&dir.join("transfer.bin"))?;
    // The first ping opens every master; the copy is timed from its task_start to the
    // last ping's.
    fs::write(
        dir.join("transfer.yaml"),
        format!(
            "- hosts: {}\n  gather_facts: false\n  tasks:\n    - name: open\n      ping:\n    - name: transfer\n      copy: {{src: transfer.bin, dest: /var/tmp/kk-transfer.bin}}\n    - name: done\n      ping:\n",
            names.join(",")
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut cmd = Command::new(kk);
    cmd.args([
        "run",
        "transfer.yaml",
        "-i",
        "inventory.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ])
    .current_dir(dir);
    let (_, ok, lines) = measure_tree_lines(&mut cmd, &dir.join("transfer.log"), |l| {
        l.starts_with("{\"event\":\"task_start\"")
    })?;
    if !ok {
        return Err(format!(
            "transfer: kk failed (log {})",
            dir.join("transfer.log").display()
        ));
    }
    let at = |task: &str| {
        lines.iter().find_map(|(t, l)| {
            let e: Value = serde_json::from_str(l).ok()?;
            (e["task"] == task).then_some(*t)
        })
    };
    let kk_s = match (at("transfer"), at("done")) {
        (Some(a), Some(b)) => b - a,
        _ => return Err("transfer: kk printed no task_start for the copy".into()),
    };
    let raw_s = raw(bed, hosts, &dir.join("transfer.bin"))?;
    for i in 0..hosts {
        let _ = bed.exec(
            i,
            "rm -f /var/tmp/kk-transfer.bin /var/tmp/kk-raw-transfer.bin",
        );
    }
    let _ = fs::remove_file(dir.join("transfer.bin"));
    Ok(Transfer { hosts, kk_s, raw_s })
}

/// `ssh -S master host 'cat > file' < artifact` on every host at once, masters opened first.
fn raw(bed: &TestBed, hosts: usize, file: &Path) -> Result<f64, String> {
    let ctl = |i: usize| format!("/tmp/kk-bench-raw-{}-{i}", std::process::id());
    let target = |i: usize| format!("root@{}", bed.hosts()[i].ip);
    for i in 0..hosts {
        let st = Command::new("ssh")
            .args(bed.ssh_options(i))
            .args(["-o", "ControlMaster=yes", "-o", "ControlPersist=60", "-S"])
            .arg(ctl(i))
            .args(["-fN", &target(i)])
            .stdin(Stdio::null())
            .status()
            .map_err(|e| format!("ssh: {e}"))?;
        if !st.success() {
            return Err(format!("raw transfer: cannot open a master to host {i}"));
        }
    }
    let t0 = Instant::now();
    let mut children = Vec::new();
    for i in 0..hosts {
        let input = fs::File::open(file).map_err(|e| e.to_string())?;
        children.push(
            Command::new("ssh")
                .args(["-S", &ctl(i), &target(i)])
                .arg("cat > /var/tmp/kk-raw-transfer.bin")
                .stdin(input)
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| format!("ssh: {e}"))?,
        );
    }
    let mut ok = true;
    for mut c in children {
        ok &= c.wait().map(|s| s.success()).unwrap_or(false);
    }
    let secs = t0.elapsed().as_secs_f64();
    for i in 0..hosts {
        let _ = Command::new("ssh")
            .args(["-S", &ctl(i), "-O", "exit", &target(i)])
            .stderr(Stdio::null())
            .status();
    }
    if !ok {
        return Err("raw transfer: an ssh cat failed".into());
    }
    Ok(secs)
}
