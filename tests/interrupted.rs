//! Interrupted runs leave nothing half-done (issue 15): `kk create cluster` stopped at
//! seeded random moments (SIGINT, SIGTERM, SIGKILL, a host cut off, a host rebooted),
//! then completed by the next run. And bounded command output: a command printing
//! without end costs kk bounded memory, locally and over SSH.

use crate::common;

use common::{Project, Run};
use testbed::TestBed;

/// A playbook whose one task prints `bytes` bytes of `y` on `hosts`.
fn runaway(hosts: &str, bytes: u64) -> String {
    format!(
        "- hosts: {hosts}\n  gather_facts: false\n  tasks:\n    - name: runaway\n      shell: \"head -c {bytes} /dev/zero | tr '\\\\0' y; echo done >&2\"\n"
    )
}

/// The runaway task's stdout as kk kept it.
fn kept_stdout(r: &Run, host: &str) -> String {
    r.result("runaway", host)["result"]["stdout"]
        .as_str()
        .unwrap_or_else(|| panic!("no stdout (exit {})\n{:.2000}", r.code, r.stderr))
        .to_string()
}

/// `kk run` with `KK_OUTPUT_KEEP` set, under the same address-space cap and deadline as
/// [`Project::kk_bounded`].
fn kk_keep(p: &Project, keep: &str, args: &[&str], mem_mib: u64) -> Run {
    let out = std::process::Command::new("timeout")
        .args(["-s", "KILL", "120", "prlimit"])
        .arg(format!("--as={}", mem_mib * 1024 * 1024))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_kk"))
        .args(args)
        .env("KK_OUTPUT_KEEP", keep)
        .current_dir(p.dir())
        .output()
        .expect("run kk");
    Run::from_output(out)
}

#[test]
fn a_local_command_printing_1_5_gb_costs_bounded_memory() {
    let p = Project::new();
    p.file("site.yaml", &runaway("localhost", 1_500_000_000));
    // 1.5 GB of output under a 200 MiB address-space cap: only both ends are kept.
    let r = p.kk_bounded(&["run", "site.yaml", "--output", "json"], 120, 200);
    r.code(0);
    let out = kept_stdout(&r, "localhost");
    let keep = 1 << 20;
    let marker = format!(
        "\n[kk: {} bytes of output dropped here; the first and last {} bytes are kept (KK_OUTPUT_KEEP sets how many)]\n",
        1_500_000_000 - 2 * keep,
        keep
    );
    assert_eq!(out.len(), 2 * keep + marker.len(), "{:.200}", out);
    assert!(out.contains(&marker));
    assert!(out.trim_matches('y') == marker);
    assert_eq!(r.result("runaway", "localhost")["result"]["stderr"], "done");
}

#[test]
fn a_command_over_ssh_printing_300_mb_keeps_what_kk_output_keep_says() {
    let bed = TestBed::start(1).expect("boot a test host");
    let p = Project::new();
    p.file(
        "inventory.yaml",
        &(common::bed_inventory_hosts(&bed, &["n1"]) + "  groups: {}\n"),
    );
    p.file("site.yaml", &runaway("n1", 300_000_000));
    let r = kk_keep(
        &p,
        "64K",
        &[
            "run",
            "site.yaml",
            "-i",
            "inventory.yaml",
            "--output",
            "json",
        ],
        200,
    );
    r.code(0);
    let out = kept_stdout(&r, "n1");
    let keep = 64 * 1024;
    let marker = format!(
        "\n[kk: {} bytes of output dropped here; the first and last {} bytes are kept (KK_OUTPUT_KEEP sets how many)]\n",
        300_000_000 - 2 * keep,
        keep
    );
    assert_eq!(out.len(), 2 * keep + marker.len());
    assert!(
        out.trim_matches('y') == marker,
        "{:.300}",
        out.trim_matches('y')
    );
    assert_eq!(r.result("runaway", "n1")["result"]["stderr"], "done");
}

// ---------------------------------------------------------------------------------------
// `kk create cluster` stopped again and again.

use std::io::BufRead;
use std::time::{Duration, Instant};

use common::cluster::{config_downloads_and_native, failures, serve_cluster};

const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";

/// One control plane (etcd kubeadm's own, containerd, no CNI, no add-ons): the smallest
/// cluster the flow makes, so twenty-odd runs fit the time budget.
fn cluster_files(p: &Project, bed: &TestBed) -> testbed::http::HttpServer {
    let (srv, sums, fa) = serve_cluster(p, KUBE, HELM, &[], false);
    let mut inv = common::bed_inventory_hosts(bed, &["kk-cp1"]);
    inv.push_str("  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      hosts: [kk-cp1]\n");
    let config = format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  kubernetes:
    kube_version: {KUBE}
  etcd: {{deployment_type: internal}}
  cri:
    container_manager: containerd
    containerd_version: {containerd}
    runc_version: v1.1.5
    crictl_version: v1.34.0
    containerd:
      data_root: /tmp/kk-containerd
  cni:
    type: none
    cni_plugins_version: v1.1.1
  storage_class:
    local: {{enabled: false}}
    nfs: {{enabled: false}}
{tail}"#,
        containerd = common::cri::CONTAINERD_VERSION,
        tail = config_downloads_and_native(&p.path("artifacts.yaml"), &srv.url(""), &sums, &fa),
    );
    p.file("inventory.yaml", &inv).file("config.yaml", &config);
    srv
}

/// A `kk create cluster` running in the background, its JSON events read as they come.
struct Bg {
    child: std::process::Child,
    events: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Bg {
    fn start(p: &Project) -> Bg {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kk"))
            .args([
                "create",
                "cluster",
                "-i",
                "inventory.yaml",
                "-c",
                "config.yaml",
            ])
            .args(["--workdir", "wd", "--output", "json"])
            .current_dir(p.dir())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start kk");
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let out = child.stdout.take().unwrap();
        let ev = events.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                    ev.lock().unwrap().push(v);
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        Bg {
            child,
            events,
            reader: Some(reader),
            stderr: Some(stderr),
        }
    }

    /// Tasks started so far.
    fn progress(&self) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "task_start")
            .count()
    }

    /// The task started last (`file:line name`).
    fn last_task(&self) -> String {
        self.events
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|e| e["event"] == "task_start")
            .map(|e| format!("{} {}", e["path"].as_str().unwrap_or(""), e["task"]))
            .unwrap_or_default()
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    fn signal(&self, sig: &str) {
        let _ = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status();
    }

    /// Waits for kk's end (at most `secs`), returning its outcome as a [`Run`].
    fn finish(mut self, secs: u64) -> Run {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("kk still running {secs} s after it was stopped");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.reader.take().unwrap().join().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        let stdout = self
            .events
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.to_string() + "\n")
            .collect();
        use std::os::unix::process::ExitStatusExt;
        Run {
            code: status.code().unwrap_or(-status.signal().unwrap_or(0)),
            stdout,
            stderr,
        }
    }
}

/// Tasks the flow of [`cluster_files`] starts in a full run (586 when written, 451 since
/// role defaults derives once per host and facts are gathered once; a stop planned beyond
/// the end of a run does not count, and the test fails below 20).
const FLOW_TASKS: usize = 451;

/// How a run is stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    /// Ctrl-C.
    Int,
    /// SIGTERM.
    Term,
    /// SIGKILL: kk cannot clean up; the next run must.
    Kill,
    /// The host's SSH connections killed (the host cut off mid-command), then SIGINT.
    Drop,
    /// The host "rebooted" (its systemd killed, started again), then SIGTERM.
    Reboot,
}

/// Names kk gives its temp files on hosts and on the controller.
const TEMP_NAMES: &str = r"-name '.kk_tmp*' -o -name '.kk_get_url*' -o -name '.kk_unarchive*'";

/// Where kk's files land on the host (append-only files excluded: the fakes' journal).
const SCAN: &str = "/etc /usr/local /opt /root /var/lib/kubelet";

/// Leftover temp files on the host (the root file system and /tmp) and in the controller's
/// work dir.
fn temp_files(bed: &TestBed, p: &Project) -> Vec<String> {
    let out = bed
        .exec(
            0,
            &format!("find / /tmp -xdev \\( {TEMP_NAMES} \\) -print 2>/dev/null | sort -u"),
        )
        .expect("scan the host");
    let mut left: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| format!("host:{l}"))
        .collect();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("find wd \\( {TEMP_NAMES} \\) -print"))
        .current_dir(p.dir())
        .output()
        .unwrap();
    left.extend(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| format!("controller:{l}")),
    );
    left
}

/// Processes on the host started over SSH from the controller (their environment holds
/// its address), and sshd sessions: none may outlive a run stopped by SIGINT/SIGTERM.
fn remote_processes(bed: &TestBed) -> String {
    let script = format!(
        r#"for f in $(grep -lsz '^SSH_CONNECTION={} ' /proc/[0-9]*/environ); do
  q=${{f#/proc/}}; q=${{q%/environ}}
  [ "$q" = "$$" ] && continue
  echo "$q $(tr '\0' ' ' < /proc/$q/cmdline 2>/dev/null | cut -c1-120)"
done
pgrep -a -f '^sshd: root' || true"#,
        bed.bridge_ip()
    );
    let out = bed.exec(0, &script).expect("list host processes");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The controller's processes that belong to the kk run `pid` (its SSH masters name its
/// runtime dir).
fn controller_processes(pid: u32) -> String {
    let dir = std::env::temp_dir().join(format!("kk-{pid}"));
    let out = std::process::Command::new("pgrep")
        .args(["-a", "-f"])
        .arg(dir.to_string_lossy().as_ref())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every regular file kk may have written on the host: path → (size, sha256). Files whose
/// size and mtime are those of `prev` keep their hash (only changed files are read again).
fn host_files(bed: &TestBed, prev: Option<&Snapshot>) -> Snapshot {
    let out = bed
        .exec(
            0,
            &format!(
                "find {SCAN} -xdev -type f -not -name '.kk_*' -printf '%s %T@ %p\\n' 2>/dev/null"
            ),
        )
        .expect("list host files");
    let mut snap = Snapshot::new();
    let mut todo = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let mut w = l.splitn(3, ' ');
        let (Some(size), Some(mtime), Some(path)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let size: u64 = size.parse().unwrap_or(0);
        match prev.and_then(|p| p.get(path)) {
            Some((s, m, h)) if *s == size && m == mtime => {
                snap.insert(path.to_string(), (size, mtime.to_string(), h.clone()));
            }
            _ => {
                snap.insert(path.to_string(), (size, mtime.to_string(), String::new()));
                todo.push(path.to_string());
            }
        }
    }
    for chunk in todo.chunks(200) {
        let list: String = chunk
            .iter()
            .map(|p| format!("'{}' ", p.replace('\'', "'\\''")))
            .collect();
        let out = bed
            .exec(0, &format!("sha256sum {list} 2>/dev/null"))
            .expect("hash host files");
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((h, path)) = l.split_once("  ") {
                if let Some(e) = snap.get_mut(path) {
                    e.2 = h.to_string();
                }
            }
        }
    }
    snap
}

/// Path → (size, mtime, sha256).
type Snapshot = std::collections::BTreeMap<String, (u64, String, String)>;

/// Files kk edits in place by adding lines (blockinfile, lineinfile): an earlier version
/// is a prefix of the final one by design; the test bed also rewrites /etc/hosts at boot.
const APPENDED: &[&str] = &["/etc/hosts"];

/// Files of an earlier snapshot that were a strict prefix of what the file finally holds:
/// half-written.
fn truncated(bed: &TestBed, snaps: &[Snapshot], fin: &Snapshot) -> Vec<String> {
    let mut suspects = std::collections::BTreeMap::new();
    for snap in snaps {
        for (path, (size, _, hash)) in snap {
            if APPENDED.contains(&path.as_str()) {
                continue;
            }
            if let Some((fsize, _, fhash)) = fin.get(path) {
                if size < fsize && hash != fhash {
                    suspects.insert((path.clone(), *size), hash.clone());
                }
            }
        }
    }
    let mut bad = Vec::new();
    for ((path, size), hash) in suspects {
        let out = bed
            .exec(0, &format!("head -c {size} '{path}' | sha256sum"))
            .expect("hash a prefix");
        let got = String::from_utf8_lossy(&out.stdout);
        if got.split_whitespace().next() == Some(hash.as_str()) {
            bad.push(format!(
                "{path}: {size} bytes, a prefix of its final content"
            ));
        }
    }
    bad
}

#[test]
fn create_cluster_interrupted_again_and_again_then_completed() {
    let t0 = Instant::now();
    let seed: u64 = std::env::var("KK_INTERRUPT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let mut rng = fastrand::Rng::with_seed(seed);
    let bed = TestBed::start(1).expect("boot a test host");
    let p = Project::new();
    let _srv = cluster_files(&p, &bed);
    // The stops, a seeded shuffle with each kind several times.
    let mut plan: Vec<Stop> = [
        [Stop::Int; 5].as_slice(),
        &[Stop::Term; 5],
        &[Stop::Kill; 5],
        &[Stop::Drop; 4],
        &[Stop::Reboot; 3],
    ]
    .concat();
    rng.shuffle(&mut plan);
    eprintln!("seed {seed}: {:?}", plan);
    // Where each run is stopped: its task count spread evenly over the flow (seeded
    // jitter), so each run gets further than the one before and the stops cover the
    // whole flow; then a seeded moment (0-1.2 s) later, inside whatever runs then.
    // (The flow's last quarter runs in about a second once done: a stop planned there
    // often comes after the end.)
    let span = FLOW_TASKS * 3 / 4 - 30;
    let targets: Vec<usize> = (0..plan.len())
        .map(|k| 30 + k * span / plan.len() + rng.usize(0..span / plan.len()))
        .collect();
    let (mut seen_remote, mut dropped) = (0, 0);
    let mut survived = 0usize;
    let mut snaps = Vec::new();
    let mut rebooted = false;
    for (n, stop) in plan.iter().copied().enumerate() {
        let t = Instant::now();
        let mut bg = Bg::start(&p);
        let pid = bg.child.id();
        while bg.progress() < targets[n] && bg.running() {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(rng.u64(0..1200)));
        let at = bg.progress();
        let task = bg.last_task();
        // What the run has going on the host (its SSH session at least, once connected):
        // the check after the stop must see it gone.
        if bg.running() && !remote_processes(&bed).is_empty() {
            seen_remote += 1;
        }
        let finished = !bg.running();
        match stop {
            Stop::Int => bg.signal("INT"),
            Stop::Term => bg.signal("TERM"),
            Stop::Kill => bg.signal("KILL"),
            Stop::Drop => {
                let out = bed
                    .exec(0, "pkill -e -KILL -f '^sshd: root' || true")
                    .expect("kill the host's SSH sessions");
                dropped += String::from_utf8_lossy(&out.stdout).lines().count();
                std::thread::sleep(Duration::from_millis(rng.u64(100..800)));
                bg.signal("INT");
            }
            Stop::Reboot => {
                bed.stop_host(0).expect("stop the host");
                bed.start_host(0).expect("start the host again");
                rebooted = true;
                bg.signal("TERM");
            }
        }
        let reached = t.elapsed();
        let r = bg.finish(30);
        let ended = t.elapsed();
        eprintln!(
            "stop {n:2} {stop:?} at task {at} {task} ({:.1}s, exit after {:.1}s): exit {}{}",
            reached.as_secs_f64(),
            (ended - reached).as_secs_f64(),
            r.code,
            if finished { " (had finished)" } else { "" }
        );
        let want: &[i32] = match stop {
            _ if finished => &[0],
            Stop::Kill => &[-9],
            Stop::Int | Stop::Term => &[99],
            // The lost connection may have failed the run (unreachable, 3) before the
            // signal came, or the run may have reconnected and ended meanwhile.
            Stop::Drop | Stop::Reboot => &[99, 0, 2, 3],
        };
        assert!(
            want.contains(&r.code),
            "stop {n} ({stop:?}): exit {}, expected {:?}\n{:#?}\n{:.3000}",
            r.code,
            want,
            failures(&r),
            r.stderr
        );
        if stop != Stop::Kill {
            // Nothing of the run is left: no master or other process on the controller,
            // no runtime dir, nothing it started on the host (the host stops what the
            // closed connection had started within a few seconds).
            assert_eq!(controller_processes(pid), "", "stop {n} ({stop:?})");
            assert!(
                !std::env::temp_dir().join(format!("kk-{pid}")).exists(),
                "stop {n}: runtime dir left"
            );
            let mut left = String::new();
            let gone = (0..100).any(|_| {
                left = remote_processes(&bed);
                left.is_empty() || {
                    std::thread::sleep(Duration::from_millis(100));
                    false
                }
            });
            assert!(
                gone,
                "stop {n} ({stop:?}): still running on the host:\n{left}"
            );
        }
        // A SIGKILLed kk cannot stop the commands it ran on the controller (they run in
        // their own process groups): they carry on and finish (a download renames its temp
        // file into place). Wait for them, so a temp file found after a later stop is that
        // run's own.
        if stop == Stop::Kill {
            let waited = (0..200).any(|_| {
                temp_files(&bed, &p)
                    .iter()
                    .all(|f| !f.starts_with("controller:"))
                    || {
                        std::thread::sleep(Duration::from_millis(100));
                        false
                    }
            });
            assert!(
                waited,
                "stop {n}: the killed run's controller commands left {:#?}",
                temp_files(&bed, &p)
            );
        }
        // No temp file left, except by a writer killed with its host (the next write in
        // that directory sweeps it; checked at the end).
        if !rebooted && stop != Stop::Kill {
            let left = temp_files(&bed, &p);
            assert!(
                left.is_empty(),
                "stop {n} ({stop:?}): temp files left: {left:#?}"
            );
        }
        let snap = host_files(&bed, snaps.last());
        snaps.push(snap);
        if !finished {
            survived += 1;
        }
        eprintln!(
            "        checks: {:.1}s",
            (t.elapsed() - ended).as_secs_f64()
        );
    }
    assert!(
        survived >= 20,
        "only {survived} runs were stopped before they ended (FLOW_TASKS too high for the flow?)"
    );
    // The next run completes the work; a further one changes nothing.
    let t = Instant::now();
    let r = Bg::start(&p).finish(300);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    r.code(0);
    eprintln!("completing run: {:.1}s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let r = Bg::start(&p).finish(300);
    r.code(0);
    let changed: Vec<String> = r
        .events()
        .iter()
        .filter(|e| e["event"] == "host_result" && e["changed"] == true)
        .map(|e| format!("{} on {}", e["task"], e["host"]))
        .collect();
    assert!(
        changed.is_empty(),
        "the run after the complete one changed: {changed:#?}"
    );
    eprintln!("no-change run: {:.1}s", t.elapsed().as_secs_f64());
    // The checks had something to find: the runs' SSH sessions were seen before the
    // stops, and the Drop stops killed live sessions.
    assert!(
        seen_remote >= plan.len() / 2,
        "host processes seen before only {seen_remote} stops"
    );
    assert!(dropped > 0, "no SSH session was killed");
    let left = temp_files(&bed, &p);
    assert!(left.is_empty(), "temp files left at the end: {left:#?}");
    let bad = truncated(&bed, &snaps, &host_files(&bed, snaps.last()));
    assert!(bad.is_empty(), "half-written files seen: {bad:#?}");
    eprintln!(
        "survived {survived}/{} interruptions (seed {seed}; {seen_remote} with host processes seen before the stop, {dropped} SSH sessions killed) in {:.1}s",
        plan.len(),
        t0.elapsed().as_secs_f64()
    );
}
