//! Test support: a scratch project directory, the real `kk` binary, and its output
//! parsed (as ripgrep's `rgtest!` and cargo's testsuite do).
#![allow(dead_code)]

pub mod artifacts;
pub mod capkk_shared;
pub mod cluster;
pub mod cri;
pub mod docker;
pub mod etcd;
pub mod fakes;
pub mod fresh;
pub mod images;
pub mod mirror;
pub mod registry;
pub mod validate;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// A temporary project: write files into it, run `kk` in it.
pub struct Project {
    pub dir: tempfile::TempDir,
}

/// What one `kk` run left behind.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Three hosts on the local connection, each with its own `out` directory.
pub const LOCAL_INVENTORY: &str = r#"
kind: Inventory
spec:
  hosts:
    h1: {connector: {type: local}, n: 1}
    h2: {connector: {type: local}, n: 2}
    h3: {connector: {type: local}, n: 3}
  vars:
    out: "{{ playbook_dir }}/out/{{ inventory_hostname }}"
"#;

impl Project {
    pub fn new() -> Project {
        Project {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a file (parents created).
    pub fn file(&self, rel: &str, content: &str) -> &Project {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("reading {}: {}", rel, e))
    }

    /// Runs `kk` with arguments in the project directory.
    pub fn kk(&self, args: &[&str]) -> Run {
        let out = Command::new(env!("CARGO_BIN_EXE_kk"))
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run kk");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs `kk` as [`Project::kk`] does, but bounded as hostile-input tests need: its
    /// address space is capped at `mem_mib` MiB (`prlimit --as`), so a runaway allocation
    /// fails instead of taking the machine, and a run still going after `secs` seconds is
    /// killed and reported as a hang (the test fails, naming the arguments).
    pub fn kk_bounded(&self, args: &[&str], secs: u64, mem_mib: u64) -> Run {
        let mut child = Command::new("prlimit")
            .arg(format!("--as={}", mem_mib * 1024 * 1024))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_kk"))
            .args(args)
            .current_dir(self.dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run kk under prlimit");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        // Drain the pipes on threads so a chatty kk cannot block on a full pipe.
        let mut out = child.stdout.take().expect("stdout");
        let mut err = child.stderr.take().expect("stderr");
        let read_out = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut out, &mut v);
            v
        });
        let read_err = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut err, &mut v);
            v
        });
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for kk") {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("kk {:?} hung: still running after {} s", args, secs);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&read_out.join().unwrap_or_default()).into_owned(),
            stderr: String::from_utf8_lossy(&read_err.join().unwrap_or_default()).into_owned(),
        }
    }

    /// `kk run site.yaml -i inventory.yaml --output json` plus extra arguments.
    pub fn run_json(&self, extra: &[&str]) -> Run {
        let mut args = vec![
            "run",
            "site.yaml",
            "-i",
            "inventory.yaml",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        self.kk(&args)
    }

    /// `kk <command…> -i inventory.yaml -c config.yaml --workdir wd --output json <extra…>`:
    /// a command of the cluster flow (`create cluster`, or `run <playbook>`) on the
    /// project's inventory and config.
    pub fn kk_flow(&self, command: &[&str], extra: &[&str]) -> Run {
        let mut args = command.to_vec();
        args.extend([
            "-i",
            "inventory.yaml",
            "-c",
            "config.yaml",
            "--workdir",
            "wd",
            "--output",
            "json",
        ]);
        args.extend_from_slice(extra);
        self.kk(&args)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Run {
    /// The outcome of a `kk` process the test started itself.
    pub fn from_output(out: std::process::Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The JSON events printed with `--output json`.
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {:?}: {}", l, e))
            })
            .collect()
    }

    /// The result of a task on a host (the last one with that task name).
    pub fn result(&self, task: &str, host: &str) -> Value {
        self.events()
            .into_iter()
            .rev()
            .find(|e| e["event"] == "host_result" && e["task"] == task && e["host"] == host)
            .unwrap_or_else(|| {
                panic!(
                    "no result for task {:?} on {}\n{}",
                    task,
                    host,
                    self.describe()
                )
            })
    }

    /// Status of a task on a host.
    pub fn status(&self, task: &str, host: &str) -> String {
        self.result(task, host)["status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// `msg` of a debug task on a host.
    pub fn msg(&self, task: &str, host: &str) -> Value {
        self.result(task, host)["result"]["msg"].clone()
    }

    fn recap_event(&self) -> Value {
        self.events()
            .into_iter()
            .find(|e| e["event"] == "recap")
            .unwrap_or_else(|| panic!("no recap\n{}", self.describe()))
    }

    /// Recap counts of a host.
    pub fn recap(&self, host: &str) -> Value {
        self.recap_event()["hosts"][host].clone()
    }

    /// What the run sent a host (the recap's `transport`: commands, bytes, logins).
    pub fn transport(&self, host: &str) -> Value {
        self.recap_event()["transport"][host].clone()
    }

    pub fn describe(&self) -> String {
        format!(
            "exit code {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// Asserts the exit code, showing everything on failure.
    pub fn code(&self, want: i32) -> &Run {
        assert_eq!(self.code, want, "{}", self.describe());
        self
    }
}

/// The head of a `kind: Inventory` with one `spec.hosts` entry per test-bed host: host `i`
/// is named `names[i]`, reached as root over SSH, with its address as `internal_ipv4`.
/// The caller appends `  groups:` and the rest.
pub fn bed_inventory_hosts(bed: &testbed::TestBed, names: &[&str]) -> String {
    let mut s =
        String::from("apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nspec:\n  hosts:\n");
    for (h, name) in bed.hosts().iter().zip(names) {
        s.push_str(&format!(
            "    {name}:\n      connector: {{type: ssh, host: {ip}, port: {port}, user: root, private_key: {key}}}\n      internal_ipv4: {ip}\n",
            ip = h.ip,
            port = h.port,
            key = serde_json::to_string(&h.root_key_path.to_string_lossy()).unwrap(),
        ));
    }
    s
}

/// Runs `cmd` as root on test-bed host `i`; it must succeed. Its stdout, trailing
/// newlines trimmed.
pub fn sh(bed: &testbed::TestBed, i: usize, cmd: &str) -> String {
    let out = bed.ssh(i, cmd);
    assert!(
        out.status.success(),
        "{} on host {}: {}",
        cmd,
        i,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// A secret of the config (a password) appears nowhere in what a run printed or in the run
/// records under `<project>/wd/runs`.
pub fn assert_secret_hidden(p: &Project, r: &Run, secret: &str) {
    assert!(
        !r.stdout.contains(secret) && !r.stderr.contains(secret),
        "a secret was printed\n{}",
        r.describe()
    );
    let leaked = Command::new("grep")
        .args(["-rl", secret])
        .arg(p.path("wd/runs"))
        .output()
        .unwrap();
    assert!(
        leaked.stdout.is_empty(),
        "a secret is in the run records: {}",
        String::from_utf8_lossy(&leaked.stdout)
    );
}

/// Waits until `cond` holds, checking every 50 ms, at most `secs` seconds; panics naming
/// `what` when it never does. Tests wait for the event they need instead of sleeping a
/// guessed time.
pub fn wait_until(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited {secs} s for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The `bin/` of the oracle's ansible-core venv (`$KK_ORACLE_VENV`, default
/// `target/oracle-venv`), installed first if needed (once per process), for tests that
/// compare kk with the real `ansible`, `ansible-playbook` or `ansible-vault`.
pub fn oracle_venv_bin() -> PathBuf {
    static ONCE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut done = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    if !*done {
        let out = Command::new("bash")
            .arg(root.join("tests/oracle/setup_ansible.sh"))
            .current_dir(&root)
            .output()
            .expect("run setup_ansible.sh");
        assert!(out.status.success(), "setup_ansible.sh failed: {:?}", out);
        *done = true;
    }
    std::env::var_os("KK_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/oracle-venv"))
        .join("bin")
}

/// Runs `kk args…` in `p`'s directory on a real terminal (a pty driven by Python's
/// `pty`), answers `answer` once `prompt` appears, and returns everything the terminal
/// showed once `until` appears (or the run ends). Tests of hidden prompts check that the
/// answer is not in it: an echoed password would be.
pub fn run_on_pty(p: &Project, args: &[&str], prompt: &str, answer: &str, until: &str) -> Run {
    const DRIVER: &str = r#"
import os, pty, select, sys, time
kk, prompt, answer, until, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["PAGER"] = "cat"
    os.execv(kk, [kk] + args)
out = b""
def read(want, secs):
    global out
    end = time.time() + secs
    while time.time() < end and want not in out:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                d = os.read(fd, 1024)
            except OSError:
                return
            if not d:
                return
            out += d
read(prompt.encode(), 20)
os.write(fd, answer.encode() + b"\n")
read(until.encode(), 30)
read(b"\x00", 1)
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            DRIVER,
            env!("CARGO_BIN_EXE_kk"),
            prompt,
            answer,
            until,
        ])
        .args(args)
        .current_dir(p.dir())
        .output()
        .expect("python3");
    Run::from_output(out)
}
