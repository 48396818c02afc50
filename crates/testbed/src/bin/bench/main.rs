//! The benchmark: kk against ansible-core, pyinfra and a raw OpenSSH floor on real hosts.
//!
//! `cargo run --release -p testbed --bin bench -- --hosts 4,32 [--runs N]`
//!
//! For each host count it boots a test bed, writes the benchmark playbook (20 task runs
//! per host), an equivalent pyinfra deploy file and a raw OpenSSH script, then runs them
//! alternating, several times, from a fresh state each time (the bench directory removed
//! on every host without SSH). kk and pyinfra are also timed on a no-op re-run (everything
//! in place) and on a run where every task is skipped by `when`. Each run is measured from
//! the outside: wall time, controller CPU time (user + system of the whole process tree,
//! including `ssh` helpers: the bench is a child subreaper, so daemonised `ssh -f` masters
//! are reaped and counted here too) and controller peak memory (the largest sum of PSS
//! over the process tree, sampled from /proc, so shared pages are not counted once per
//! process). It ends with the issue's targets and whether each holds.

mod flow;
mod measure;
mod report;
mod transfer;
mod workload;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use testbed::TestBed;

use measure::measure_tree;
use report::{table, targets};
use workload::write_files;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Tool {
    Kk,
    Ansible,
    Pyinfra,
    Raw,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Kk => "kk",
            Tool::Ansible => "ansible-core",
            Tool::Pyinfra => "pyinfra",
            Tool::Raw => "raw OpenSSH floor",
        }
    }

    fn parse(s: &str) -> Option<Tool> {
        match s {
            "kk" => Some(Tool::Kk),
            "ansible" | "ansible-core" => Some(Tool::Ansible),
            "pyinfra" => Some(Tool::Pyinfra),
            "raw" | "floor" => Some(Tool::Raw),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Mode {
    /// From a fresh state: everything is created.
    Full,
    /// Right after a full run: everything already in place.
    Noop,
    /// Every task skipped by `when`.
    Skip,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Full => "",
            Mode::Noop => " no-op re-run",
            Mode::Skip => " all skipped (when)",
        }
    }
}

/// One measured run.
#[derive(Clone, Debug)]
struct Sample {
    wall: f64,
    cpu: f64,
    pss_mb: f64,
    rss_mb: f64,
    /// Sum of `changed=` in the recap (kk, ansible).
    changed: Option<u64>,
    /// SSH logins accepted by node1 during the run.
    logins: Option<usize>,
    /// CPU time used inside the hosts during the run (sshd, shells, commands).
    remote_cpu: f64,
}

struct Opts {
    hosts: Vec<usize>,
    runs: usize,
    ansible_runs: Option<usize>,
    ansible_max_hosts: usize,
    tools: Vec<Tool>,
    kk: Option<PathBuf>,
    workdir: Option<PathBuf>,
    /// `--flow`: the cluster flow benchmark ([`flow`]) instead of the generic one.
    flow: bool,
    /// `--throttle RATE`: the controller's uplink limited (tc), e.g. `1gbit`.
    throttle: Option<String>,
    /// `--flow-keep`: stop after the no-op re-run and keep the hosts up for runs by hand.
    flow_keep: bool,
    hosts_given: bool,
}

const USAGE: &str = "usage: bench [--hosts 4,32] [--runs N] [--tools kk,ansible,pyinfra,raw]
             [--ansible-runs N] [--ansible-max-hosts N] [--kk PATH] [--workdir DIR]
  --hosts         host counts to measure, comma-separated (1..=200; default 4,32)
  --runs          measured runs of each tool per host count (default 3)
  --tools         which to run (default all four)
  --ansible-runs  measured ansible-core runs (default: --runs up to 32 hosts, 1 above)
  --ansible-max-hosts  skip ansible-core above this many hosts (default 64: ~10 min a run at 200)
  --kk            the kk binary (default: built with `cargo build --release -p kk`)
  --workdir       where playbooks, inventories and logs go (default: a temporary directory)
  --flow          the cluster flow instead: create cluster, no-op re-run, add nodes, certs
                  renew, delete nodes on fresh hosts of each count (default --hosts 3,32)
  --throttle      with --flow: limit the controller's uplink to the hosts (tc rate, e.g. 1gbit)
  --flow-keep     with --flow: stop after the no-op re-run, keep the hosts and the artifact
                  server up and print how to re-run kk by hand (for profiling)";

fn parse_opts() -> Result<Opts, String> {
    let mut o = Opts {
        hosts: vec![4, 32],
        runs: 3,
        ansible_runs: None,
        ansible_max_hosts: 64,
        tools: vec![Tool::Kk, Tool::Ansible, Tool::Pyinfra, Tool::Raw],
        kk: None,
        workdir: None,
        flow: false,
        throttle: None,
        flow_keep: false,
        hosts_given: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        if key == "-h" || key == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        if key == "--flow" {
            o.flow = true;
            continue;
        }
        if key == "--flow-keep" {
            o.flow = true;
            o.flow_keep = true;
            continue;
        }
        let val = match inline {
            Some(v) => v,
            None => args
                .next()
                .ok_or_else(|| format!("{key} needs a value\n{USAGE}"))?,
        };
        let num = |v: &str| -> Result<usize, String> {
            v.trim()
                .parse::<usize>()
                .map_err(|_| format!("{key}: `{v}` is not a number"))
        };
        match key.as_str() {
            "--hosts" => {
                o.hosts_given = true;
                o.hosts = val.split(',').map(num).collect::<Result<_, _>>()?;
                if let Some(bad) = o
                    .hosts
                    .iter()
                    .find(|n| **n == 0 || **n > testbed::MAX_HOSTS)
                {
                    return Err(format!(
                        "--hosts: {bad} is out of range (1..={})",
                        testbed::MAX_HOSTS
                    ));
                }
            }
            "--runs" => o.runs = num(&val)?.max(1),
            "--ansible-runs" => o.ansible_runs = Some(num(&val)?),
            "--ansible-max-hosts" => o.ansible_max_hosts = num(&val)?,
            "--tools" => {
                o.tools = val
                    .split(',')
                    .map(|t| {
                        Tool::parse(t.trim()).ok_or_else(|| {
                            format!("--tools: unknown `{t}` (kk, ansible, pyinfra, raw)")
                        })
                    })
                    .collect::<Result<_, _>>()?;
                o.tools.sort();
                o.tools.dedup();
            }
            "--kk" => o.kk = Some(PathBuf::from(val)),
            "--workdir" => o.workdir = Some(PathBuf::from(val)),
            "--throttle" => o.throttle = Some(val),
            _ => return Err(format!("unknown option {key}\n{USAGE}")),
        }
    }
    if o.flow && !o.hosts_given {
        o.hosts = vec![3, 32];
    }
    if o.flow
        && o.hosts
            .iter()
            .any(|n| *n < 3 || *n + 1 > testbed::MAX_HOSTS)
    {
        return Err(format!(
            "--flow: host counts from 3 to {} (one more host is booted to be added)",
            testbed::MAX_HOSTS - 1
        ));
    }
    Ok(o)
}

fn main() {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    match run(&opts) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    }
}

/// The repository root (this crate is `crates/testbed`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

fn run_checked(step: &str, cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{step}: cannot start {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{step} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Builds kk (release) unless a binary was given.
fn kk_binary(opts: &Opts) -> Result<PathBuf, String> {
    if let Some(p) = &opts.kk {
        return p
            .canonicalize()
            .map_err(|e| format!("--kk {}: {e}", p.display()));
    }
    let root = repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("bench: building kk (cargo build --release -p kk)");
    run_checked(
        "building kk",
        Command::new(cargo).current_dir(&root).args([
            "build",
            "--release",
            "-p",
            "kk",
            "--bin",
            "kk",
        ]),
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let p = target.join("release/kk");
    if !p.is_file() {
        return Err(format!("kk was built but {} is not there", p.display()));
    }
    Ok(p)
}

/// ansible-core in `target/oracle-venv` (the oracle tests' venv and script).
fn ansible_playbook() -> Result<PathBuf, String> {
    let root = repo_root();
    eprintln!("bench: making sure ansible-core is installed (tests/oracle/setup_ansible.sh)");
    run_checked(
        "installing ansible-core",
        Command::new("bash").arg(root.join("tests/oracle/setup_ansible.sh")),
    )?;
    let venv = std::env::var_os("KK_ORACLE_VENV")
        .map(|v| {
            let p = PathBuf::from(v);
            if p.is_absolute() {
                p
            } else {
                root.join(p)
            }
        })
        .unwrap_or_else(|| root.join("target/oracle-venv"));
    Ok(venv.join("bin/ansible-playbook"))
}

/// pyinfra 3 in `target/pyinfra-venv`, installed from PyPI on first use.
fn pyinfra() -> Result<PathBuf, String> {
    let venv = repo_root().join("target/pyinfra-venv");
    let bin = venv.join("bin/pyinfra");
    let ready = || {
        Command::new(&bin)
            .arg("--version")
            .output()
            .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("v3."))
            .unwrap_or(false)
    };
    if ready() {
        return Ok(bin);
    }
    eprintln!("bench: installing pyinfra 3 into {}", venv.display());
    if !venv.join("bin/python").exists() {
        run_checked(
            "creating the pyinfra venv",
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
        )?;
    }
    run_checked(
        "installing pyinfra",
        Command::new(venv.join("bin/python")).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "pyinfra==3.*",
        ]),
    )?;
    if !ready() {
        return Err(format!("pyinfra 3 is not usable in {}", venv.display()));
    }
    Ok(bin)
}

struct Tools {
    kk: PathBuf,
    ansible: Option<PathBuf>,
    pyinfra: Option<PathBuf>,
}

/// `--flow`: each size in turn, its table as it ends, then the targets.
fn run_flow(opts: &Opts, kk: &Path, base: &Path) -> Result<bool, String> {
    let started = Instant::now();
    let mut runs = Vec::new();
    let mut ok = true;
    for &n in &opts.hosts {
        match flow::run_size(kk, base, n, opts.throttle.as_deref(), opts.flow_keep) {
            Ok(r) => {
                print!("{}", flow::table(&r));
                runs.push(r);
            }
            Err(e) => {
                eprintln!("bench: flow on {n} hosts: {e}");
                ok = false;
            }
        }
    }
    let (text, holds) = flow::targets(&runs);
    print!("{text}");
    println!(
        "(flow benchmark took {:.0} s{})",
        started.elapsed().as_secs_f64(),
        opts.throttle
            .as_deref()
            .map(|r| format!("; controller uplink limited to {r}"))
            .unwrap_or_default()
    );
    Ok(ok && holds)
}

fn run(opts: &Opts) -> Result<bool, String> {
    // Orphans (daemonised `ssh -f` masters, ControlPersist masters) become our children,
    // so their CPU time is counted and none outlives its run.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let tools = Tools {
        kk: kk_binary(opts)?,
        ansible: if opts.tools.contains(&Tool::Ansible) && !opts.flow {
            Some(ansible_playbook()?)
        } else {
            None
        },
        pyinfra: if opts.tools.contains(&Tool::Pyinfra) && !opts.flow {
            Some(pyinfra()?)
        } else {
            None
        },
    };
    let tmp;
    let base = match &opts.workdir {
        Some(d) => {
            fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
            d.clone()
        }
        None => {
            tmp = TempDir::new()?;
            tmp.0.clone()
        }
    };
    if opts.flow {
        return run_flow(opts, &tools.kk, &base);
    }
    let mut all: BTreeMap<(usize, Tool, Mode), Vec<Sample>> = BTreeMap::new();
    let mut ok = true;
    let started = Instant::now();
    for &n in &opts.hosts {
        let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
        eprintln!(
            "bench: booting {n} hosts (load average {})",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        let t = Instant::now();
        let bed = TestBed::start(n).map_err(|e| e.to_string())?;
        eprintln!("bench: {n} hosts up in {:.1} s", t.elapsed().as_secs_f64());
        let dir = base.join(format!("hosts-{n}"));
        let _ = fs::remove_dir_all(&dir);
        write_files(&dir, &bed)?;
        let bench = Bench {
            bed: &bed,
            dir: &dir,
            tools: &tools,
            n,
        };
        let ansible_runs = if n > opts.ansible_max_hosts {
            if opts.tools.contains(&Tool::Ansible) {
                eprintln!(
                    "bench: {n} hosts: ansible-core skipped (more than --ansible-max-hosts {})",
                    opts.ansible_max_hosts
                );
            }
            0
        } else {
            opts.ansible_runs
                .unwrap_or(if n <= 32 { opts.runs } else { 1 })
        };
        // Warm-up: page cache, Python bytecode, kk's known_hosts; not measured.
        for &tool in &opts.tools {
            if tool == Tool::Ansible && ansible_runs == 0 {
                continue;
            }
            bench.clean();
            eprintln!("bench: {n} hosts: warm-up {}", tool.name());
            if let Err(e) = bench.measure(tool, Mode::Full) {
                eprintln!("bench: {e}");
                ok = false;
            }
        }
        for round in 0..opts.runs {
            let mut order = opts.tools.clone();
            let k = round % order.len().max(1);
            order.rotate_left(k);
            for &tool in &order {
                if tool == Tool::Ansible && round >= ansible_runs {
                    continue;
                }
                let modes: &[Mode] = match tool {
                    Tool::Kk | Tool::Pyinfra => &[Mode::Full, Mode::Noop, Mode::Skip],
                    _ => &[Mode::Full],
                };
                bench.clean();
                for &mode in modes {
                    eprint!(
                        "bench: {n} hosts: run {}/{} {}{} … ",
                        round + 1,
                        opts.runs,
                        tool.name(),
                        mode.label()
                    );
                    match bench.measure(tool, mode) {
                        Ok(s) => {
                            eprintln!("{:.2} s, CPU {:.2} s, {:.1} MB", s.wall, s.cpu, s.pss_mb);
                            all.entry((n, tool, mode)).or_default().push(s);
                        }
                        Err(e) => {
                            eprintln!("FAILED\nbench: {e}");
                            ok = false;
                        }
                    }
                }
            }
        }
        print!("{}", table(n, opts, &all));
        drop(bed);
    }
    print!("{}", targets(opts, &all));
    println!(
        "(benchmark took {:.0} s; load average at the end: {})",
        started.elapsed().as_secs_f64(),
        fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(ok)
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        let p = std::env::temp_dir().join(format!("kk-bench-{}", std::process::id()));
        fs::create_dir_all(&p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

struct Bench<'a> {
    bed: &'a TestBed,
    dir: &'a Path,
    tools: &'a Tools,
    n: usize,
}

impl Bench<'_> {
    /// Removes what the benchmark created on every host, without SSH.
    fn clean(&self) {
        for i in 0..self.n {
            let _ = self.bed.exec(i, "rm -rf /tmp/kkbench");
        }
    }

    fn command(&self, tool: Tool, mode: Mode) -> Command {
        let dir = self.dir;
        let n = self.n.to_string();
        let skip = mode == Mode::Skip;
        let mut c;
        match tool {
            Tool::Kk => {
                c = Command::new(&self.tools.kk);
                c.arg("run")
                    .arg("-i")
                    .arg(dir.join("inventory.yaml"))
                    .arg("--forks")
                    .arg(&n)
                    .arg("--workdir")
                    .arg(dir.join("kkwork"));
                if skip {
                    c.args(["-e", r#"{"bench_skip": true}"#]);
                }
                c.arg(dir.join("playbook.yml"));
            }
            Tool::Ansible => {
                c = Command::new(self.tools.ansible.as_ref().expect("ansible installed"));
                c.env("ANSIBLE_CONFIG", dir.join("ansible.cfg"))
                    .env("ANSIBLE_LOCAL_TEMP", dir.join("ansible-tmp"))
                    .arg("-i")
                    .arg(dir.join("inventory_ansible.yaml"))
                    .arg("-f")
                    .arg(&n);
                if skip {
                    c.args(["-e", r#"{"bench_skip": true}"#]);
                }
                c.arg(dir.join("playbook.yml"));
            }
            Tool::Pyinfra => {
                c = Command::new(self.tools.pyinfra.as_ref().expect("pyinfra installed"));
                c.arg("-y").arg("--parallel").arg(&n);
                if skip {
                    c.args(["--data", "bench_skip=true"]);
                }
                c.arg("inventory.py").arg("deploy.py");
            }
            Tool::Raw => {
                c = Command::new("sh");
                c.arg(dir.join("raw.sh"));
            }
        }
        c.current_dir(dir);
        c
    }

    /// Runs one tool once and measures it; a failed run is an error with its log's tail.
    fn measure(&self, tool: Tool, mode: Mode) -> Result<Sample, String> {
        let log = self.dir.join(format!(
            "{}-{:?}.log",
            tool.name().split_whitespace().next().unwrap_or("x"),
            mode
        ));
        let logins_before = self.bed.accepted_ssh_logins(0).ok();
        let mut cmd = self.command(tool, mode);
        let remote0 = self.bed.cpu_usage_usec();
        let (m, status) = measure_tree(&mut cmd, &log)?;
        let remote_cpu = self.bed.cpu_usage_usec().saturating_sub(remote0) as f64 / 1e6;
        let logins = match (logins_before, self.bed.accepted_ssh_logins(0).ok()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        let text = fs::read_to_string(&log).unwrap_or_default();
        if !status {
            let tail: String = text
                .chars()
                .rev()
                .take(3000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(format!(
                "{}{} on {} hosts failed; log {}:\n{tail}",
                tool.name(),
                mode.label(),
                self.n,
                log.display()
            ));
        }
        let changed = match tool {
            Tool::Kk | Tool::Ansible => Some(
                text.lines()
                    .filter_map(|l| l.split("changed=").nth(1))
                    .filter_map(|r| r.split_whitespace().next()?.parse::<u64>().ok())
                    .sum(),
            ),
            _ => None,
        };
        Ok(Sample {
            changed,
            logins,
            remote_cpu,
            ..m
        })
    }
}
