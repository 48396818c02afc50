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

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use testbed::TestBed;

/// The benchmark playbook (kk and ansible-playbook): 20 task runs per host of the kinds a
/// cluster install uses. Read-only commands say `changed_when: false`, so a re-run with
/// everything in place reports `changed=0`.
const PLAYBOOK: &str = r#"# kk benchmark playbook: 20 task runs per host.
- name: kk benchmark
  hosts: all
  gather_facts: false
  vars:
    bench_dir: /tmp/kkbench
    bench_skip: false
  tasks:
    - name: kernel release
      command: uname -r
      register: kernel
      changed_when: false
      when: not bench_skip
    - name: host name in capitals
      shell: echo {{ inventory_hostname }} | tr a-z A-Z
      register: upper
      changed_when: false
      when: not bench_skip
    - name: remember a greeting
      set_fact:
        greeting: "hello {{ upper.stdout }}"
      when: not bench_skip
    - name: bench directory
      file:
        path: "{{ bench_dir }}"
        state: directory
        mode: "0755"
      when: not bench_skip
    - name: kernel file
      copy:
        content: "kernel={{ kernel.stdout }}\n"
        dest: "{{ bench_dir }}/kernel.txt"
        mode: "0644"
      when: not bench_skip
    - name: config from a template
      template:
        src: bench.conf.j2
        dest: "{{ bench_dir }}/bench.conf"
        mode: "0644"
      when: not bench_skip
    - name: ten commands
      command: echo item {{ item }}
      loop: "{{ range(10) | list }}"
      changed_when: false
      when: not bench_skip
    - name: check what we have
      assert:
        that:
          - kernel.stdout | length > 0
          - greeting is defined
      when: not bench_skip
    - name: say hello
      debug:
        msg: "{{ greeting }}"
      when: not bench_skip
    - name: stat the config
      stat:
        path: "{{ bench_dir }}/bench.conf"
      register: conf
      when: not bench_skip
    - name: read the hostname
      command: cat /etc/hostname
      changed_when: false
      when: not bench_skip
"#;

/// The template both engines render (pyinfra gets the same variables as keywords).
const TEMPLATE: &str = r#"# kk benchmark config for {{ inventory_hostname }}
greeting: {{ greeting }}
kernel: {{ kernel.stdout }}
{% for i in range(5) %}
slot{{ i }}: {{ (i * 7) % 5 }}
{% endfor %}
"#;

/// The pyinfra deploy doing the same remote work: the two commands whose output later
/// steps use are facts (pyinfra's way), the rest are operations; `set_fact`, `assert` and
/// `debug` are plain Python, as they cost no remote work in any engine.
const DEPLOY: &str = r#"# pyinfra deploy equivalent to playbook.yml (same remote commands, uploads, template).
from io import StringIO

from pyinfra import host, logger
from pyinfra.facts.server import Command
from pyinfra.operations import files, server

BENCH_DIR = "/tmp/kkbench"

if str(host.data.get("bench_skip", "false")).lower() not in ("true", "1", "yes"):
    kernel = host.get_fact(Command, command="uname -r")
    upper = host.get_fact(Command, command="echo %s | tr a-z A-Z" % host.name)
    greeting = "hello %s" % upper
    files.directory(name="bench directory", path=BENCH_DIR, mode="755")
    files.put(
        name="kernel file",
        src=StringIO("kernel=%s\n" % kernel),
        dest=BENCH_DIR + "/kernel.txt",
        mode="644",
    )
    files.template(
        name="config from a template",
        src="templates/bench.conf.j2",
        dest=BENCH_DIR + "/bench.conf",
        mode="644",
        inventory_hostname=host.name,
        greeting=greeting,
        kernel={"stdout": kernel},
    )
    for i in range(10):
        server.shell(name="item %d" % i, commands=["echo item %d" % i])
    assert len(kernel) > 0 and greeting
    logger.info(greeting)
    server.shell(name="stat the config", commands=["stat " + BENCH_DIR + "/bench.conf"])
    server.shell(name="read the hostname", commands=["cat /etc/hostname"])
"#;

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
}

const USAGE: &str = "usage: bench [--hosts 4,32] [--runs N] [--tools kk,ansible,pyinfra,raw]
             [--ansible-runs N] [--ansible-max-hosts N] [--kk PATH] [--workdir DIR]
  --hosts         host counts to measure, comma-separated (1..=200; default 4,32)
  --runs          measured runs of each tool per host count (default 3)
  --tools         which to run (default all four)
  --ansible-runs  measured ansible-core runs (default: --runs up to 32 hosts, 1 above)
  --ansible-max-hosts  skip ansible-core above this many hosts (default 64: ~10 min a run at 200)
  --kk            the kk binary (default: built with `cargo build --release -p kk`)
  --workdir       where playbooks, inventories and logs go (default: a temporary directory)";

fn parse_opts() -> Result<Opts, String> {
    let mut o = Opts {
        hosts: vec![4, 32],
        runs: 3,
        ansible_runs: None,
        ansible_max_hosts: 64,
        tools: vec![Tool::Kk, Tool::Ansible, Tool::Pyinfra, Tool::Raw],
        kk: None,
        workdir: None,
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
            _ => return Err(format!("unknown option {key}\n{USAGE}")),
        }
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

fn run(opts: &Opts) -> Result<bool, String> {
    // Orphans (daemonised `ssh -f` masters, ControlPersist masters) become our children,
    // so their CPU time is counted and none outlives its run.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let tools = Tools {
        kk: kk_binary(opts)?,
        ansible: if opts.tools.contains(&Tool::Ansible) {
            Some(ansible_playbook()?)
        } else {
            None
        },
        pyinfra: if opts.tools.contains(&Tool::Pyinfra) {
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

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Playbook, template, deploy file, inventories, ansible.cfg and the raw script.
fn write_files(dir: &Path, bed: &TestBed) -> Result<(), String> {
    let n = bed.hosts().len();
    write(&dir.join("playbook.yml"), PLAYBOOK)?;
    write(&dir.join("templates/bench.conf.j2"), TEMPLATE)?;
    write(&dir.join("deploy.py"), DEPLOY)?;
    write(&dir.join("inventory.yaml"), &bed.inventory_yaml())?;
    write(
        &dir.join("inventory_ansible.yaml"),
        &bed.inventory_ansible_yaml(),
    )?;
    let key = bed.key_path().display().to_string();
    let mut py = String::from("# pyinfra inventory of the test bed\nhosts = [\n");
    for h in bed.hosts() {
        let _ = writeln!(
            py,
            "    ({:?}, {{\"ssh_hostname\": \"{}\", \"ssh_port\": {}, \"ssh_user\": \"root\", \"ssh_key\": {:?}, \"ssh_known_hosts_file\": \"/dev/null\", \"ssh_strict_host_key_checking\": \"off\", \"ssh_allow_agent\": False, \"ssh_look_for_keys\": False}}),",
            h.name, h.ip, h.port, key
        );
    }
    py.push_str("]\n");
    write(&dir.join("inventory.py"), &py)?;
    // ansible-core at its fastest: pipelining, ControlPersist, forks = hosts, no facts.
    write(
        &dir.join("ansible.cfg"),
        &format!(
            "[defaults]\nforks = {n}\nhost_key_checking = False\ngathering = explicit\nretry_files_enabled = False\ninterpreter_python = /usr/bin/python3\n\n[ssh_connection]\npipelining = True\nssh_args = -o ControlMaster=auto -o ControlPersist=60s\ncontrol_path_dir = {}\n",
            dir.join("cp").display()
        ),
    )?;
    write(&dir.join("raw.sh"), &raw_script(dir, bed))?;
    Ok(())
}

/// The floor: the playbook's remote commands, one `ssh` process each, over one
/// multiplexed master per host (opened and closed in the run), all hosts in parallel.
fn raw_script(dir: &Path, bed: &TestBed) -> String {
    let o = bed.ssh_options(0).join(" ");
    let d = dir.display();
    let mut s = format!(
        r#"#!/bin/sh
# Raw OpenSSH floor: the benchmark's remote commands sent one after another over one
# multiplexed connection per host, all hosts in parallel, no engine.
o="{o}"
rm -f {d}/raw-ok-*
one() {{
  n=$1; ip=$2; c={d}/raw-$n.sock
  ssh $o -M -N -f -S $c root@$ip || return 1
  r() {{ ssh $o -S $c root@$ip "$1"; }}
  k=$(r 'uname -r') || return 1
  u=$(r "echo $n | tr a-z A-Z") || return 1
  r 'mkdir -p /tmp/kkbench && chmod 0755 /tmp/kkbench' || return 1
  printf 'kernel=%s\n' "$k" | r 'cat > /tmp/kkbench/kernel.txt && chmod 0644 /tmp/kkbench/kernel.txt' || return 1
  printf '# kk benchmark config for %s\ngreeting: hello %s\nkernel: %s\n' $n "$u" "$k" | r 'cat > /tmp/kkbench/bench.conf && chmod 0644 /tmp/kkbench/bench.conf' || return 1
  for i in 0 1 2 3 4 5 6 7 8 9; do r "echo item $i" >/dev/null || return 1; done
  r 'stat /tmp/kkbench/bench.conf' >/dev/null || return 1
  r 'cat /etc/hostname' >/dev/null || return 1
  ssh $o -S $c -O exit root@$ip 2>/dev/null
  : > {d}/raw-ok-$n
}}
"#
    );
    for h in bed.hosts() {
        let _ = writeln!(s, "one {} {} &", h.name, h.ip);
    }
    let _ = writeln!(
        s,
        "wait\n[ \"$(ls {d}/raw-ok-* 2>/dev/null | wc -l)\" -eq {} ]",
        bed.hosts().len()
    );
    s
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

fn children_of(pid: i32) -> Vec<i32> {
    let mut v = Vec::new();
    if let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) {
        for t in rd.flatten() {
            if let Ok(s) = fs::read_to_string(t.path().join("children")) {
                v.extend(s.split_whitespace().filter_map(|x| x.parse::<i32>().ok()));
            }
        }
    }
    v
}

/// PSS and RSS (kB) of one process, from smaps_rollup.
fn mem_of(pid: i32) -> (u64, u64) {
    let Ok(s) = fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
        return (0, 0);
    };
    let field = |name: &str| -> u64 {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Pss:"), field("Rss:"))
}

fn cpu_children() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs `cmd` (output to `log`) and measures its whole process tree: wall time until the
/// command exits, CPU of everything it started (processes left behind are stopped and
/// reaped first), and the peak of the tree's summed PSS (and RSS), sampled from /proc.
fn measure_tree(cmd: &mut Command, log: &Path) -> Result<(Sample, bool), String> {
    let me = std::process::id() as i32;
    // Our children before the run: the test bed's host processes, never touched here.
    let keep: HashSet<i32> = children_of(me).into_iter().collect();
    let out = fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let cpu0 = cpu_children();
    let t0 = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let stop = stop.clone();
        let keep = keep.clone();
        std::thread::spawn(move || {
            let (mut peak_pss, mut peak_rss) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let mut todo: Vec<i32> = children_of(me)
                    .into_iter()
                    .filter(|p| !keep.contains(p))
                    .collect();
                let (mut pss, mut rss) = (0u64, 0u64);
                let mut seen = HashSet::new();
                while let Some(p) = todo.pop() {
                    if !seen.insert(p) {
                        continue;
                    }
                    let (a, b) = mem_of(p);
                    pss += a;
                    rss += b;
                    todo.extend(children_of(p));
                }
                peak_pss = peak_pss.max(pss);
                peak_rss = peak_rss.max(rss);
                // Sampling costs CPU on a busy machine: at most a quarter of one core.
                let cost = t.elapsed();
                std::thread::sleep((cost * 3).max(Duration::from_millis(10)));
            }
            (peak_pss, peak_rss)
        })
    };
    // wait4 rather than `Child::wait`: its max RSS is a floor for runs too short to sample.
    let pid = child.id() as i32;
    let mut raw_status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::wait4(pid, &mut raw_status, 0, &mut ru) } != pid {
        return Err(format!(
            "waiting for {:?}: {}",
            cmd.get_program(),
            std::io::Error::last_os_error()
        ));
    }
    let success = libc::WIFEXITED(raw_status) && libc::WEXITSTATUS(raw_status) == 0;
    let wall = t0.elapsed().as_secs_f64();
    // Whatever the run left behind (e.g. ControlPersist masters) is stopped and reaped,
    // so its CPU time counts and it cannot serve the next run.
    for _ in 0..3 {
        let left: Vec<i32> = children_of(me)
            .into_iter()
            .filter(|p| !keep.contains(p))
            .collect();
        if left.is_empty() {
            break;
        }
        for &p in &left {
            unsafe {
                libc::kill(p, libc::SIGTERM);
            }
        }
        for &p in &left {
            let mut st = 0;
            unsafe {
                libc::waitpid(p, &mut st, 0);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (mut pss, mut rss) = poller.join().unwrap_or((0, 0));
    let main_rss = ru.ru_maxrss.max(0) as u64;
    if rss < main_rss {
        rss = main_rss;
        pss = pss.max(main_rss);
    }
    let cpu = cpu_children() - cpu0;
    Ok((
        Sample {
            wall,
            cpu,
            pss_mb: pss as f64 / 1024.0,
            rss_mb: rss as f64 / 1024.0,
            changed: None,
            logins: None,
            remote_cpu: 0.0,
        },
        success,
    ))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn stat(v: &[f64], prec: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.p$} [{:.p$}–{:.p$}]", median(v), min, max, p = prec)
}

type Results = BTreeMap<(usize, Tool, Mode), Vec<Sample>>;

fn med(all: &Results, n: usize, tool: Tool, mode: Mode, f: fn(&Sample) -> f64) -> Option<f64> {
    let v = all.get(&(n, tool, mode))?;
    if v.is_empty() {
        return None;
    }
    Some(median(&v.iter().map(f).collect::<Vec<_>>()))
}

fn table(n: usize, opts: &Opts, all: &Results) -> String {
    let mut s = String::new();
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let _ = writeln!(
        s,
        "\n== {n} hosts, 20 task runs per host; median [min–max] of the measured runs; load average now {} ==",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let _ = writeln!(
        s,
        "{:<36} {:>4}  {:<22} {:<22} {:<22} {:>7} {:>12} {:>7} {:>6}",
        "",
        "runs",
        "wall s",
        "controller CPU s",
        "peak MB (PSS)",
        "RSS MB",
        "hosts' CPU s",
        "changed",
        "logins"
    );
    for mode in [Mode::Full, Mode::Noop, Mode::Skip] {
        for &tool in &opts.tools {
            let Some(v) = all.get(&(n, tool, mode)) else {
                continue;
            };
            let walls: Vec<f64> = v.iter().map(|x| x.wall).collect();
            let cpus: Vec<f64> = v.iter().map(|x| x.cpu).collect();
            let mems: Vec<f64> = v.iter().map(|x| x.pss_mb).collect();
            let changed = v
                .last()
                .and_then(|x| x.changed)
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into());
            let logins = v
                .last()
                .and_then(|x| x.logins)
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into());
            let rss = median(&v.iter().map(|x| x.rss_mb).collect::<Vec<_>>());
            let remote = median(&v.iter().map(|x| x.remote_cpu).collect::<Vec<_>>());
            let _ = writeln!(
                s,
                "{:<36} {:>4}  {:<22} {:<22} {:<22} {:>7.1} {:>12.2} {:>7} {:>6}",
                format!("{}{}", tool.name(), mode.label()),
                v.len(),
                stat(&walls, 3),
                stat(&cpus, 3),
                stat(&mems, 1),
                rss,
                remote,
                changed,
                logins
            );
        }
    }
    let wall = |t, m| med(all, n, t, m, |x| x.wall);
    let cpu = |t, m| med(all, n, t, m, |x| x.cpu);
    let mem = |t, m| med(all, n, t, m, |x| x.pss_mb);
    let mut line = String::from("kk is faster by (other ÷ kk, wall / CPU / memory):");
    let mut any = false;
    for (other, mode) in [
        (Tool::Ansible, Mode::Full),
        (Tool::Pyinfra, Mode::Full),
        (Tool::Raw, Mode::Full),
        (Tool::Pyinfra, Mode::Noop),
        (Tool::Pyinfra, Mode::Skip),
    ] {
        if let (Some(kw), Some(ow), Some(kc), Some(oc), Some(km), Some(om)) = (
            wall(Tool::Kk, mode),
            wall(other, mode),
            cpu(Tool::Kk, mode),
            cpu(other, mode),
            mem(Tool::Kk, mode),
            mem(other, mode),
        ) {
            any = true;
            let _ = write!(
                line,
                "\n  vs {:<34} {:>6.1}× / {:>6.1}× / {:>6.1}×",
                format!("{}{}", other.name(), mode.label()),
                ow / kw,
                oc / kc,
                om / km
            );
        }
    }
    if any {
        let _ = writeln!(s, "{line}");
    }
    s
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "HOLDS",
        Some(false) => "FAILS",
        None => "not measured",
    }
}

/// The issue's targets, each with the figures it is judged on.
fn targets(opts: &Opts, all: &Results) -> String {
    let wall = |n, t, m| med(all, n, t, m, |x| x.wall);
    let mem = |n, t, m| med(all, n, t, m, |x| x.pss_mb);
    let mut s = String::from("\n== targets ==\n");
    let mut line = |ok: Option<bool>, what: String| {
        let _ = writeln!(s, "[{:<12}] {what}", verdict(ok));
    };
    let ratio =
        |n, other, mode| -> Option<f64> { Some(wall(n, other, mode)? / wall(n, Tool::Kk, mode)?) };
    let fmt = |r: Option<f64>| r.map(|r| format!("{r:.2}×")).unwrap_or_else(|| "-".into());
    let r32 = ratio(32, Tool::Pyinfra, Mode::Full);
    line(
        r32.map(|r| r >= 2.0),
        format!("kk ≥ 2× faster than pyinfra at 32 hosts: {}", fmt(r32)),
    );
    let r4 = ratio(4, Tool::Pyinfra, Mode::Full);
    line(
        r4.map(|r| r > 1.0),
        format!("kk faster than pyinfra at 4 hosts: {}", fmt(r4)),
    );
    let a32 = ratio(32, Tool::Ansible, Mode::Full);
    line(
        a32.map(|r| r >= 40.0),
        format!(
            "kk ≥ 40× faster than ansible-core at 32 hosts: {}",
            fmt(a32)
        ),
    );
    for n in [4usize, 32] {
        let r = ratio(n, Tool::Raw, Mode::Full);
        line(
            r.map(|r| r > 1.0),
            format!(
                "kk faster than the raw OpenSSH floor at {n} hosts: {}",
                fmt(r)
            ),
        );
    }
    // Skipped tasks cost no round trip: kk never even logs in when every task is skipped.
    let skip_logins: Vec<usize> = opts
        .hosts
        .iter()
        .filter_map(|n| all.get(&(*n, Tool::Kk, Mode::Skip)))
        .flatten()
        .filter_map(|x| x.logins)
        .collect();
    line(
        (!skip_logins.is_empty()).then(|| skip_logins.iter().all(|l| *l == 0)),
        format!(
            "a task skipped by `when` costs no round trip (SSH logins on node1 during kk's all-skipped runs: {:?})",
            skip_logins
        ),
    );
    let noop = wall(32, Tool::Kk, Mode::Noop);
    let noop_changed: Option<u64> = all
        .get(&(32, Tool::Kk, Mode::Noop))
        .and_then(|v| v.iter().filter_map(|x| x.changed).max());
    line(
        noop.map(|w| w < 2.0 && noop_changed == Some(0)),
        format!(
            "no-op re-run on 32 hosts under 2 s with changed=0: {} (changed={})",
            noop.map(|w| format!("{w:.2} s"))
                .unwrap_or_else(|| "-".into()),
            noop_changed
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into())
        ),
    );
    let m32 = mem(32, Tool::Kk, Mode::Full);
    line(
        m32.map(|m| m < 60.0),
        format!(
            "controller peak memory under 60 MB at 32 hosts: {}",
            m32.map(|m| format!("{m:.1} MB"))
                .unwrap_or_else(|| "-".into())
        ),
    );
    // Linear or better: memory per host does not grow with the host count.
    let mut sizes: Vec<(usize, f64)> = opts
        .hosts
        .iter()
        .filter_map(|&n| Some((n, mem(n, Tool::Kk, Mode::Full)?)))
        .collect();
    sizes.sort_by_key(|x| x.0);
    let growth = (sizes.len() >= 2).then(|| {
        sizes
            .windows(2)
            .all(|w| w[1].1 / w[0].1 <= (w[1].0 as f64 / w[0].0 as f64) * 1.05)
    });
    line(
        growth,
        format!(
            "kk's peak memory grows no more than linearly: {}",
            sizes
                .iter()
                .map(|(n, m)| format!("{n} hosts {m:.1} MB"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let w200 = wall(200, Tool::Kk, Mode::Full);
    line(
        w200.map(|_| true),
        format!(
            "200 hosts run to completion: {}",
            w200.map(|w| format!("kk {w:.2} s"))
                .unwrap_or_else(|| "(run with --hosts 200)".into())
        ),
    );
    s
}
