//! `bench --flow`: the cluster flow itself, timed on fresh test-bed hosts at each size.
//!
//! For each host count N it boots N + 1 hosts, serves the artifacts the e2e tests serve
//! (`testbed::artifacts`: real etcd, containerd, runc, Docker, compose and registry from
//! Debian packages; the FAKE kubeadm, kubelet, kubectl, helm and charts), and runs in order:
//! `kk create cluster` (external etcd on the first three hosts, the control plane on the
//! first, the image registry on the last, workers between), a no-op re-run, `kk add nodes`
//! of one worker (host N + 1), `kk certs renew`, `kk delete nodes` of that worker. Each step
//! is measured from the outside as the generic benchmark measures (wall, controller CPU of
//! the whole process tree, peak PSS), plus the bytes the hosts received (their bridge
//! ports' counters), and from kk's JSON recap the remote commands, bytes and logins per
//! host; each play is timed by the moment its `play_start` event was printed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use testbed::artifacts::{config, oci, serve};
use testbed::TestBed;

use super::measure::measure_tree_lines;
use super::transfer::{self, Transfer};
use super::Sample;

const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";
const CHARTS: &[(&str, &str)] = &[("calico", "v3.29.7"), ("localpv_provisioner", "4.4.0")];
/// The image the create pushes into the registry.
const IMAGE: &str = "docker.io/kk/busybox:bench";
/// A password that must never show (the registry's).
const PASSWORD: &str = "Bench-Registry-Secret-3";

/// One measured step of the flow.
pub(super) struct Step {
    pub label: String,
    pub sample: Sample,
    /// `(play name, seconds)` in the order they ran.
    pub plays: Vec<(String, f64)>,
    /// kk's recap `transport`: per host, commands / bytes sent / bytes received / logins.
    pub transport: BTreeMap<String, [u64; 4]>,
    /// Bytes each host received during the step (bridge port counters), by inventory name.
    pub received: BTreeMap<String, u64>,
}

/// The flow at one size.
pub(super) struct FlowRun {
    pub n: usize,
    pub steps: Vec<Step>,
    /// Remote commands a host needs for fact gathering alone (a `gather_facts` play).
    pub facts_commands: u64,
    /// One artifact put on every host by kk and by raw ssh.
    pub transfer: Option<Transfer>,
}

/// Host names by bed index: `kk-e1..kk-e3` (etcd; the first also the control plane),
/// `kk-wI` workers, `kk-reg` the registry (the last; with 3 hosts also the third etcd
/// member), `kk-new` the host added later.
fn names(n: usize) -> Vec<String> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(if i + 1 == n && n >= 2 {
            "kk-reg".to_string()
        } else if i < 3 {
            format!("kk-e{}", i + 1)
        } else {
            format!("kk-w{}", i - 2)
        });
    }
    v.push("kk-new".into());
    v
}

fn inventory(bed: &TestBed, names: &[String], with_new: bool) -> String {
    let mut s =
        String::from("apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nspec:\n  hosts:\n");
    for (h, name) in bed.hosts().iter().zip(names) {
        let _ = writeln!(
            s,
            "    {name}:\n      connector: {{type: ssh, host: {ip}, port: {port}, user: root, private_key: {key}}}\n      internal_ipv4: {ip}",
            ip = h.ip,
            port = h.port,
            key = serde_json::to_string(&h.root_key_path.to_string_lossy()).unwrap(),
        );
    }
    let n = names.len() - 1;
    let reg = (n >= 2).then(|| names[n - 1].clone());
    // Three etcd members: the first three hosts (with 3 hosts, the registry's too).
    let etcd: Vec<&String> = names[..n].iter().take(3).collect();
    let mut workers: Vec<&String> = names[1..n]
        .iter()
        .filter(|h| Some(*h) != reg.as_ref())
        .collect();
    if with_new {
        workers.push(&names[n]);
    }
    let list = |v: &[&String]| v.iter().map(|h| h.as_str()).collect::<Vec<_>>().join(", ");
    let _ = write!(
        s,
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [{cp}]\n    kube_worker:\n      hosts: [{w}]\n    etcd:\n      hosts: [{e}]\n",
        cp = names[0],
        w = list(&workers),
        e = list(&etcd),
    );
    if let Some(r) = reg {
        let _ = writeln!(s, "    image_registry:\n      hosts: [{r}]");
    }
    s
}

/// Bytes received so far by each host, from its bridge port (traffic the bridge sent it).
fn host_rx(bed: &TestBed) -> Vec<u64> {
    bed.hosts()
        .iter()
        .map(|h| {
            fs::read_to_string(format!("/sys/class/net/{}/statistics/tx_bytes", h.veth))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        })
        .collect()
}

/// Runs `kk <args> -i inventory.yaml -c config.yaml --workdir wd --output json` in `dir`
/// and measures it; a failed run is an error with the end of its log.
fn step(
    kk: &Path,
    bed: &TestBed,
    dir: &Path,
    names: &[String],
    label: &str,
    args: &[&str],
) -> Result<Step, String> {
    let log = dir.join(format!("{}.log", label.replace([' ', '/'], "_")));
    let mut cmd = Command::new(kk);
    cmd.args(args)
        .args([
            "-i",
            "inventory.yaml",
            "--workdir",
            "wd",
            "--output",
            "json",
        ])
        .current_dir(dir);
    if !args.contains(&"run") {
        cmd.args(["-c", "config.yaml"]);
    }
    let rx0 = host_rx(bed);
    let hosts_cpu0 = bed.cpu_usage_usec();
    eprint!("bench: flow {} hosts: {label} … ", names.len() - 1);
    let (sample, ok, lines) = measure_tree_lines(&mut cmd, &log, |l| {
        l.starts_with("{\"event\":\"play_start\"")
            || l.starts_with("{\"event\":\"task_start\"")
            || l.starts_with("{\"event\":\"recap\"")
    })?;
    write_slowest(&log.with_extension("slowest.txt"), &lines, sample.wall);
    let rx1 = host_rx(bed);
    let mut sample = sample;
    sample.remote_cpu = bed.cpu_usage_usec().saturating_sub(hosts_cpu0) as f64 / 1e6;
    let text = fs::read_to_string(&log).unwrap_or_default();
    if !ok {
        let tail: String = text
            .chars()
            .rev()
            .take(4000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        eprintln!("FAILED");
        return Err(format!("{label} failed; log {}:\n{tail}", log.display()));
    }
    if text.contains(PASSWORD) {
        return Err(format!(
            "{label}: the registry password was printed ({})",
            log.display()
        ));
    }
    let mut plays = Vec::new();
    let mut transport = BTreeMap::new();
    let mut starts: Vec<(f64, String)> = Vec::new();
    for (t, line) in &lines {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if e["event"] == "play_start" {
            starts.push((*t, e["play"].as_str().unwrap_or("").to_string()));
        } else if let Some(m) = e["transport"].as_object() {
            for (h, v) in m {
                let f = |k: &str| v[k].as_u64().unwrap_or(0);
                transport.insert(
                    h.clone(),
                    [
                        f("commands"),
                        f("bytes_sent"),
                        f("bytes_received"),
                        f("logins"),
                    ],
                );
            }
        }
    }
    for (i, (t, name)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(sample.wall, |s| s.0);
        plays.push((name.clone(), end - t));
    }
    let received = names
        .iter()
        .zip(rx0.iter().zip(&rx1))
        .map(|(n, (a, b))| (n.clone(), b.saturating_sub(*a)))
        .collect();
    eprintln!(
        "{:.1} s, CPU {:.1} s, {:.1} MB",
        sample.wall, sample.cpu, sample.pss_mb
    );
    Ok(Step {
        label: label.to_string(),
        sample,
        plays,
        transport,
        received,
    })
}

/// Boots N + 1 hosts and runs the flow on them (see the module doc).
pub(super) fn run_size(
    kk: &Path,
    base: &Path,
    n: usize,
    throttle: Option<&str>,
    keep: bool,
) -> Result<FlowRun, String> {
    if n < 3 {
        return Err(format!(
            "--flow needs at least 3 hosts (3 etcd members), not {n}"
        ));
    }
    eprintln!("bench: flow: booting {} hosts", n + 1);
    let bed = TestBed::start(n + 1).map_err(|e| e.to_string())?;
    let dir = base.join(format!("flow-{n}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let names = names(n);
    let (srv, sums, fa) = serve::serve_cluster(&dir, KUBE, HELM, CHARTS, true);
    fs::write(
        dir.join("config.yaml"),
        config::cluster_config(
            KUBE,
            PASSWORD,
            &dir.join("artifacts.yaml"),
            &srv.url(""),
            &sums,
            &fa,
        ),
    )
    .map_err(|e| e.to_string())?;
    fs::write(dir.join("inventory.yaml"), inventory(&bed, &names, false))
        .map_err(|e| e.to_string())?;
    oci::busybox_layout(&dir.join("wd/kubekey/images"), IMAGE);
    fs::write(
        dir.join("facts.yaml"),
        "- hosts: all\n  gather_facts: true\n  tasks: []\n",
    )
    .map_err(|e| e.to_string())?;
    let _shaper = match throttle {
        Some(rate) => Some(Shaper::new(bed.bridge_name(), rate)?),
        None => None,
    };
    // What fact gathering alone costs a host, for the add-nodes target.
    let facts = step(kk, &bed, &dir, &names, "facts only", &["run", "facts.yaml"])?;
    let facts_commands = facts.transport.values().map(|t| t[0]).max().unwrap_or(0);
    eprint!("bench: flow {n} hosts: transfer … ");
    let transfer = transfer::measure(kk, &bed, &dir, &names[..n])?;
    eprintln!("kk {:.1} s, raw ssh {:.1} s", transfer.kk_s, transfer.raw_s);
    let mut transfer = Some(transfer);
    let mut steps = vec![
        step(
            kk,
            &bed,
            &dir,
            &names,
            "create cluster",
            &["create", "cluster"],
        )?,
        step(
            kk,
            &bed,
            &dir,
            &names,
            "no-op re-run",
            &["create", "cluster"],
        )?,
    ];
    if keep {
        let run = FlowRun {
            n,
            steps,
            facts_commands,
            transfer: transfer.take(),
        };
        eprint!("{}", table(&run));
        keep_up(kk, &dir);
        return Ok(run);
    }
    // kube-apiserver cannot run here: a plain listener on the control plane's port 6443
    // stands in where the flow waits for it (as tests/lifecycle.rs does).
    let _ = bed.exec(
        0,
        "systemd-run --unit kk-bench-apiserver python3 -m http.server 6443 --bind 127.0.0.1",
    );
    steps.push(step(
        kk,
        &bed,
        &dir,
        &names,
        "add nodes (1 worker)",
        &["add", "nodes", "--worker", "kk-new", "--override"],
    )?);
    steps.push(step(
        kk,
        &bed,
        &dir,
        &names,
        "certs renew",
        &["certs", "renew"],
    )?);
    steps.push(step(
        kk,
        &bed,
        &dir,
        &names,
        "delete nodes (1 worker)",
        &["delete", "nodes", "kk-new", "--yes", "--override"],
    )?);
    Ok(FlowRun {
        n,
        steps,
        facts_commands,
        transfer,
    })
}

/// `--flow-keep`: with the hosts and the artifact server still up, writes `rerun.sh` (the
/// no-op step's command line) and waits until the file `KEEP` is removed, so that kk can be
/// re-run, traced and profiled by hand on the same created cluster as often as needed.
fn keep_up(kk: &Path, dir: &Path) {
    let script = dir.join("rerun.sh");
    let keep = dir.join("KEEP");
    let _ = fs::write(
        &script,
        format!(
            "#!/bin/sh\n# The no-op re-run of the flow bench; KK=other/kk to run another build.\ncd {dir} && exec ${{KK:-{kk}}} create cluster -i inventory.yaml --workdir wd --output json -c config.yaml \"$@\"\n",
            dir = dir.display(),
            kk = kk.display()
        ),
    );
    let _ = fs::set_permissions(&script, fs::Permissions::from_mode(0o755));
    let _ = fs::write(&keep, "");
    eprintln!(
        "bench: flow: hosts kept up; re-run with {} (KK=path to use another kk); rm {} to stop",
        script.display(),
        keep.display()
    );
    while keep.exists() {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// Writes the step's slowest tasks (from a task's start to the next task or play start,
/// all hosts together) beside its log, for finding where a step's time goes.
fn write_slowest(path: &Path, lines: &[(f64, String)], wall: f64) {
    let mut marks: Vec<(f64, Option<String>)> = Vec::new();
    for (t, line) in lines {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let task = (e["event"] == "task_start").then(|| {
            format!(
                "{} | {}",
                e["play"].as_str().unwrap_or(""),
                e["task"].as_str().unwrap_or("")
            )
        });
        marks.push((*t, task));
    }
    let mut rows: Vec<(f64, String)> = marks
        .iter()
        .enumerate()
        .filter_map(|(i, (t, task))| {
            let end = marks.get(i + 1).map_or(wall, |m| m.0);
            task.clone().map(|name| (end - t, name))
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut s = String::new();
    for (secs, name) in rows.iter().take(40) {
        let _ = writeln!(s, "{secs:7.2} s  {name}");
    }
    let _ = fs::write(path, s);
}

/// The controller's uplink limited to a rate (`tc` token bucket on the bridge's own port:
/// what the controller sends to the hosts, not what they send each other); removed on drop.
struct Shaper(String);

impl Shaper {
    fn new(dev: &str, rate: &str) -> Result<Shaper, String> {
        let out = Command::new("tc")
            .args([
                "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", "1mb",
                "latency", "50ms",
            ])
            .output()
            .map_err(|e| format!("tc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "tc on {dev}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Shaper(dev.to_string()))
    }
}

impl Drop for Shaper {
    fn drop(&mut self) {
        let _ = Command::new("tc")
            .args(["qdisc", "del", "dev", &self.0, "root"])
            .output();
    }
}

/// The phase a play belongs to, by its name in the bundled playbooks.
fn phase(play: &str) -> &'static str {
    let p = play.to_ascii_lowercase();
    match () {
        _ if p.starts_with("facts") || p.starts_with("sudo") => "facts",
        _ if p.starts_with("pre |") || p.starts_with("post |") => "hooks",
        _ if p.starts_with("precheck") || p.starts_with("check what") => "precheck",
        _ if p.contains("on the controller") => "init",
        _ if p.starts_with("init the nodes") || p.starts_with("delete kk's dns") => "OS init",
        _ if p.starts_with("etcd") || p.contains("etcd members") => "etcd",
        _ if p.contains("container runtime") => "runtime",
        _ if p.contains("registry") || p.contains("push the images") => "registry",
        _ if p.contains("kubernetes") || p.starts_with("delete the nodes") => "Kubernetes",
        _ if p.contains("cni") => "CNI",
        _ if p.contains("certificates") => "certs",
        _ if p.starts_with("summary") => "summary",
        _ => "other",
    }
}

/// The report of one size: each step's totals, its phases, and per-host transport.
pub(super) fn table(r: &FlowRun) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n== flow on {} hosts (+1 added) ==", r.n);
    let _ = writeln!(
        s,
        "{:<26} {:>8} {:>8} {:>9} {:>8} {:>10} {:>9} {:>9} {:>7}",
        "step",
        "wall s",
        "CPU s",
        "hosts CPU",
        "PSS MB",
        "to hosts",
        "cmds/host",
        "max cmds",
        "logins"
    );
    for st in &r.steps {
        let total: u64 = st.received.values().sum();
        let cmds: Vec<u64> = st.transport.values().map(|t| t[0]).collect();
        let mean = cmds.iter().sum::<u64>() as f64 / cmds.len().max(1) as f64;
        let logins: u64 = st.transport.values().map(|t| t[3]).max().unwrap_or(0);
        let _ = writeln!(
            s,
            "{:<26} {:>8.1} {:>8.1} {:>9.1} {:>8.1} {:>10} {:>9.0} {:>9} {:>7}",
            st.label,
            st.sample.wall,
            st.sample.cpu,
            st.sample.remote_cpu,
            st.sample.pss_mb,
            human(total),
            mean,
            cmds.iter().max().unwrap_or(&0),
            logins
        );
        let mut phases: Vec<(&str, f64)> = Vec::new();
        for (play, secs) in &st.plays {
            let ph = phase(play);
            match phases.iter_mut().find(|(p, _)| *p == ph) {
                Some(e) => e.1 += secs,
                None => phases.push((ph, *secs)),
            }
        }
        let line: Vec<String> = phases.iter().map(|(p, t)| format!("{p} {t:.1}")).collect();
        let _ = writeln!(s, "    phases (s): {}", line.join(", "));
    }
    s
}

fn human(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.0} kB", b as f64 / 1024.0)
    }
}

/// The targets, from every size measured.
pub(super) fn targets(runs: &[FlowRun]) -> (String, bool) {
    let mut s = String::from("\n== flow targets ==\n");
    let mut all = true;
    let by = |n: usize, label: &str| -> Option<&Step> {
        runs.iter()
            .find(|r| r.n == n)?
            .steps
            .iter()
            .find(|s| s.label.starts_with(label))
    };
    let mut line = |holds: Option<bool>, text: String| {
        let tag = match holds {
            Some(true) => "HOLDS       ",
            Some(false) => {
                all = false;
                "DOES NOT HOLD"
            }
            None => "not measured",
        };
        let _ = writeln!(s, "[{tag}] {text}");
    };
    for (n, limit) in [(32, 1.5), (100, 2.5)] {
        match (by(3, "create"), by(n, "create")) {
            (Some(a), Some(b)) => {
                let x = b.sample.wall / a.sample.wall;
                // The hosts share this machine's cores: their work and the controller's
                // together set a floor under the wall time that real hosts would not have.
                let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
                let floor = (b.sample.cpu + b.sample.remote_cpu) / cores;
                line(Some(x <= limit), format!("create cluster on {n} hosts within {limit}× of 3 hosts: {:.1} s / {:.1} s = {x:.2}× (CPU floor here: controller {:.0} s + hosts {:.0} s on {cores} cores = {floor:.0} s)", b.sample.wall, a.sample.wall, b.sample.cpu, b.sample.remote_cpu));
            }
            _ => line(None, format!("create cluster on {n} hosts within {limit}× of 3 hosts (run with --hosts 3,{n})")),
        }
    }
    for r in runs {
        if let Some(t) = &r.transfer {
            let mb = t.bytes() as f64 * t.hosts as f64 / (1 << 20) as f64;
            let x = t.raw_s / t.kk_s;
            line(
                Some(x >= 0.8),
                format!(
                    "{} hosts: transfer throughput at least 80 % of raw ssh cat: kk {:.0} MB/s, raw {:.0} MB/s = {:.0} %",
                    t.hosts,
                    mb / t.kk_s,
                    mb / t.raw_s,
                    x * 100.0
                ),
            );
        }
    }
    match by(32, "no-op") {
        Some(st) => line(
            Some(st.sample.wall < 10.0),
            format!(
                "no-op re-run on 32 hosts under 10 s: {:.1} s",
                st.sample.wall
            ),
        ),
        None => line(
            None,
            "no-op re-run on 32 hosts under 10 s (run with --hosts 32)".into(),
        ),
    }
    for r in runs {
        if let Some(st) = r.steps.iter().find(|s| s.label.starts_with("no-op")) {
            let max = st.received.values().max().copied().unwrap_or(0);
            line(
                Some(max < 1 << 20),
                format!(
                    "{} hosts: a no-op re-run sends no artifact again (most any host received: {})",
                    r.n,
                    human(max)
                ),
            );
        }
    }
    match runs.iter().find(|r| r.n == 100) {
        Some(r) => {
            if let Some(st) = r.steps.iter().find(|s| s.label.starts_with("add")) {
                // Hosts that must act: the new node, the control plane, etcd (they hold the
                // cluster's state); everyone else only gathers facts.
                let involved = |h: &str| h == "kk-new" || h == "localhost" || h.starts_with("kk-e") || h == "kk-reg" && r.n == 3;
                let worst = st
                    .transport
                    .iter()
                    .filter(|(h, _)| !involved(h))
                    .map(|(h, t)| (t[0], h.clone()))
                    .max();
                let (cmds, host) = worst.unwrap_or((0, "-".into()));
                line(Some(st.sample.wall < 60.0), format!("add nodes (1 worker) to 100 hosts under 60 s: {:.1} s", st.sample.wall));
                line(Some(cmds <= r.facts_commands), format!("add nodes: uninvolved hosts run no more than fact gathering ({} commands): most {cmds} on {host}", r.facts_commands));
            }
            let mem = r.steps.iter().map(|s| s.sample.pss_mb).fold(0.0, f64::max);
            line(Some(mem < 200.0), format!("controller memory at 100 hosts under 200 MB: {mem:.1} MB"));
        }
        None => line(None, "add nodes to 100 hosts under 60 s; memory at 100 hosts under 200 MB (run with --hosts 100)".into()),
    }
    match (by(3, "certs"), by(100, "certs")) {
        (Some(a), Some(b)) => {
            let x = b.sample.wall / a.sample.wall;
            line(
                Some(x <= 2.0),
                format!(
                    "certs renew on 100 hosts within 2× of 3: {:.1} s / {:.1} s = {x:.2}×",
                    b.sample.wall, a.sample.wall
                ),
            );
        }
        _ => line(
            None,
            "certs renew on 100 hosts within 2× of 3 (run with --hosts 3,100)".into(),
        ),
    }
    (s, all)
}
