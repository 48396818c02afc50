//! Real test hosts for kk's tests and benchmarks (dev only; never a dependency of `kk`).
//!
//! [`TestBed::start`]`(n)` boots `n` Debian 12 hosts on this machine: each runs systemd as
//! PID 1 and sshd, with its own hostname, filesystem (an overlay on a cached debootstrap
//! rootfs), network namespace, cgroup tree and IPv4 address on a private bridge. Tests then
//! talk to them over real SSH exactly like to remote machines. Needs root and debootstrap,
//! openssh-client, iproute2, util-linux, sshpass (`scripts/test` installs them).
//!
//! Layout of one bed (X is the bed's number, 1..=254, unique among live beds):
//! - bridge `kkbrX` with `10.213.X.1/24` in the root namespace (forwarding off on it, so
//!   traffic from the hosts never leaves the bridge and its namespaces);
//! - host `nodeI` (I from 1): netns `kktbX-nodeI`, veth `kkvXhI` on the bridge whose peer is
//!   `eth0` in the netns with `10.213.X.(10+I)/24`, default route via the bridge address;
//! - cgroup `<cgroup2>/kk-testbed/X/nodeI`, state in `/var/tmp/kk-testbed/beds/X/`.
//!
//! Everything is removed on drop, also when the test panics. A bed whose process died
//! (SIGKILL, crash) is removed by the next `start` in any process: a bed is live exactly as
//! long as its process holds the `flock` on its `lock` file.
//!
//! Users on every host: `root` (login by the bed's key only) and `kk` (login by the same key
//! or by password `kkpass`) with sudo: on host index 0 sudo asks for the password, on the
//! others it is NOPASSWD.

pub mod http;
mod rootfs;
mod sys;

pub use rootfs::{cache_dir, ensure_rootfs, PACKAGES};

use std::fmt;
use std::fs::{self, File};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why the test bed could not do something: the step that failed and what the command or
/// the system said (stderr, log tails), so a failing test explains itself.
#[derive(Debug, Clone)]
pub struct Error {
    /// What the test bed was doing, e.g. "booting node2".
    pub step: String,
    /// The failing command with its stderr, or the OS error.
    pub detail: String,
}

impl Error {
    pub(crate) fn new(step: impl Into<String>, detail: impl Into<String>) -> Self {
        Error {
            step: step.into(),
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "test bed: {} failed: {}", self.step, self.detail)
    }
}

impl std::error::Error for Error {}

/// Password of the `kk` user on every host (also its sudo password on host index 0).
pub const USER_PASSWORD: &str = "kkpass";
/// The non-root user on every host.
pub const USER: &str = "kk";
/// SHA-512 crypt of [`USER_PASSWORD`] (`openssl passwd -6 -salt kktestbed kkpass`).
const USER_PASSWORD_HASH: &str =
    "$6$kktestbed$oX27NbFHNmAxTl40kr1zqYC85LwwxneiXN7pOiGL7A.6RZ338eWSTsRdWa838MpdBeaRMpMwFOSxKjxhOqkzM0";
const USER_UID: u32 = 1000;
/// Most hosts one bed may have (addresses .11 .. .210 of its /24).
pub const MAX_HOSTS: usize = 200;
/// Where bed state lives; fixed (not configurable) so every process sees every bed.
const STATE_DIR: &str = "/var/tmp/kk-testbed/beds";
/// Held briefly while claiming, scanning or releasing beds, so those never interleave.
const GLOBAL_LOCK: &str = "/var/tmp/kk-testbed/beds.lock";
/// `ip netns add` run concurrently can race on setting up /run/netns; one at a time.
static NETNS_ADD: Mutex<()> = Mutex::new(());
/// Units that make no sense in a host without a console or that would only add load.
const MASKED_UNITS: &[&str] = &[
    "console-getty.service",
    "getty@tty1.service",
    "serial-getty@ttyS0.service",
    "systemd-logind.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "dpkg-db-backup.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
];
/// Debian's boot-time sysctl files that set kernel-global values (not per network
/// namespace): masked so booting a host never changes the real machine.
const MASKED_SYSCTL: &[&str] = &["50-pid-max.conf", "99-protect-links.conf"];

/// One booted host, as tests and inventories need it.
#[derive(Debug, Clone)]
pub struct Host {
    /// Position in [`TestBed::hosts`]; the index every `TestBed` method takes.
    pub index: usize,
    /// Inventory name and hostname: `node1`, `node2`, ….
    pub name: String,
    /// Address on the bed's bridge, reachable from the root namespace (where tests run).
    pub ip: Ipv4Addr,
    /// sshd port (always 22).
    pub port: u16,
    /// Private key that logs in as root (and as `kk`); owned by the bed, deleted on drop.
    pub root_key_path: PathBuf,
    /// The non-root user, "kk".
    pub user: String,
    /// Password of [`Host::user`] for SSH password login and sudo, "kkpass".
    pub user_password: String,
    /// Whether `sudo` asks [`Host::user`] for its password here (true on host index 0 only).
    pub sudo_needs_password: bool,
    /// The host's own sshd key (`ssh-ed25519 AAAA… root@nodeI`), for known_hosts tests.
    pub host_public_key: String,
    /// Network namespace the host lives in (`ip netns exec` it to see its side).
    pub netns: String,
    /// Root-namespace end of the host's veth pair, on the bridge (what `cut_host` downs).
    pub veth: String,
}

/// Live process state of one host.
#[derive(Default)]
struct HostState {
    /// The `unshare` process (parent of the host's PID 1).
    child: Option<Child>,
    /// PID (in the root namespace) of the host's systemd.
    init_pid: Option<u32>,
    /// Whether the netns/veth exist.
    net_up: bool,
}

/// N real hosts for one test; dropping it removes every trace of them.
pub struct TestBed {
    num: u8,
    dir: PathBuf,
    rootfs: PathBuf,
    cgroup: PathBuf,
    bridge: String,
    key_path: PathBuf,
    hosts: Vec<Host>,
    state: Vec<Mutex<HostState>>,
    /// The bed's liveness lock (flock), held until drop.
    lock: Option<File>,
}

static BED_COUNTER: AtomicU32 = AtomicU32::new(0);

impl TestBed {
    /// Boots `n` hosts in parallel and returns when every one answers on port 22 and its
    /// systemd reports `running` or `degraded`. Builds the rootfs first if it is not cached
    /// (about a minute, once per machine). 3 hosts take ~2–3 s, 32 hosts ~20 s on 2 cores.
    pub fn start(n: usize) -> Result<TestBed, Error> {
        if n == 0 || n > MAX_HOSTS {
            return Err(Error::new(
                "starting the test bed",
                format!("asked for {n} hosts; a bed has 1 to {MAX_HOSTS}"),
            ));
        }
        if unsafe { libc::geteuid() } != 0 {
            return Err(Error::new(
                "starting the test bed",
                "the test bed needs root (network namespaces, mounts, cgroups)",
            ));
        }
        let rootfs = ensure_rootfs()?;
        // Each systemd needs several inotify instances; at the default 128 only ~25 boot.
        sys::sysctl_at_least("fs.inotify.max_user_instances", 8192)?;
        sys::sysctl_at_least("fs.inotify.max_user_watches", 1_048_576)?;
        let cgroot = sys::cgroup2_root()?;
        let (num, lock) = claim_bed(&cgroot)?;
        let dir = PathBuf::from(STATE_DIR).join(num.to_string());
        let key_path = dir.join("id_ed25519");
        let hosts: Vec<Host> = (0..n)
            .map(|i| {
                let idx = i + 1;
                Host {
                    index: i,
                    name: format!("node{idx}"),
                    ip: Ipv4Addr::new(10, 213, num, 10 + idx as u8),
                    port: 22,
                    root_key_path: key_path.clone(),
                    user: USER.to_string(),
                    user_password: USER_PASSWORD.to_string(),
                    sudo_needs_password: i == 0,
                    host_public_key: String::new(),
                    netns: format!("kktb{num}-node{idx}"),
                    veth: format!("kkv{num}h{idx}"),
                }
            })
            .collect();
        let mut bed = TestBed {
            num,
            dir,
            rootfs,
            cgroup: cgroot.join("kk-testbed").join(num.to_string()),
            bridge: format!("kkbr{num}"),
            key_path,
            state: (0..n).map(|_| Mutex::new(HostState::default())).collect(),
            hosts,
            lock: Some(lock),
        };
        // From here on, an error drops `bed`, which removes whatever was made.
        bed.setup_shared()?;
        for i in 0..n {
            bed.hosts[i].host_public_key = bed.prepare_host(i)?;
        }
        let bed_ref = &bed;
        let errors: Vec<Error> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|i| s.spawn(move || bed_ref.boot_host(i)))
                .collect();
            handles
                .into_iter()
                .filter_map(|h| match h.join() {
                    Ok(r) => r.err(),
                    Err(_) => Some(Error::new("booting hosts", "a boot thread panicked")),
                })
                .collect()
        });
        if let Some(first) = errors.first() {
            let mut e = first.clone();
            if errors.len() > 1 {
                e.detail
                    .push_str(&format!("\n({} other hosts failed too)", errors.len() - 1));
            }
            return Err(e);
        }
        Ok(bed)
    }

    /// The hosts, in order `node1`, `node2`, …; index `i` here is the `i` of every method.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The controller's address on the bed's bridge (`10.213.X.1`): what the hosts reach the
    /// test process at, e.g. for a local HTTP server serving artifacts.
    pub fn bridge_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 213, self.num, 1)
    }

    /// Name of the bed's bridge (`kkbrX`).
    pub fn bridge_name(&self) -> &str {
        &self.bridge
    }

    /// The bed's subnet, e.g. `10.213.7.0/24`.
    pub fn subnet(&self) -> String {
        format!("10.213.{}.0/24", self.num)
    }

    /// The private key logging in as root on every host (same as `hosts()[i].root_key_path`).
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }

    /// CPU time (µs) used so far by everything running in the bed's hosts (sshd, shells,
    /// commands), from the bed's cgroup: what a benchmark reads before and after a run to
    /// see the remote work it caused (the hosts share this machine's cores).
    pub fn cpu_usage_usec(&self) -> u64 {
        fs::read_to_string(self.cgroup.join("cpu.stat"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0)
    }

    fn host(&self, i: usize) -> Result<&Host, Error> {
        self.hosts.get(i).ok_or_else(|| {
            Error::new(
                "choosing a host",
                format!(
                    "host index {i} is out of range: the bed has {} hosts (0..{})",
                    self.hosts.len(),
                    self.hosts.len()
                ),
            )
        })
    }

    fn lock_state(&self, i: usize) -> MutexGuard<'_, HostState> {
        // A panic while holding the lock leaves consistent-enough state for cleanup.
        self.state[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops host `i` like pulling its plug: SIGKILL to its systemd (which ends every
    /// process in it), then its netns and veth are deleted, so connecting to it fails
    /// (no route: ARP gets no answer) instead of being refused. Its disk (overlay upper)
    /// stays: [`TestBed::start_host`] boots it again with its files.
    pub fn stop_host(&self, i: usize) -> Result<(), Error> {
        self.host(i)?;
        self.teardown_host(i)
    }

    /// Boots a host stopped by [`TestBed::stop_host`] again (same disk, address, keys) and
    /// waits until it is ready; a running host is left alone.
    pub fn start_host(&self, i: usize) -> Result<(), Error> {
        self.host(i)?;
        if self.lock_state(i).init_pid.is_some() {
            return Ok(());
        }
        self.boot_host(i)
    }

    /// Cuts host `i` off the network without stopping it (`ip link set vethX down`): packets
    /// to and from it are dropped silently, open connections hang until their timeouts.
    pub fn cut_host(&self, i: usize) -> Result<(), Error> {
        let h = self.host(i)?;
        sys::ip(
            &format!("cutting {} off", h.name),
            &["link", "set", &h.veth, "down"],
        )?;
        Ok(())
    }

    /// Undoes [`TestBed::cut_host`] (`ip link set vethX up`); connections that have not
    /// timed out yet carry on.
    pub fn restore_host(&self, i: usize) -> Result<(), Error> {
        let h = self.host(i)?;
        sys::ip(
            &format!("reconnecting {}", h.name),
            &["link", "set", &h.veth, "up"],
        )?;
        // The bridge port takes a moment to forward again (and stale neighbour entries
        // say "no route"): wait until sshd answers, so callers see a reachable host.
        let addr = SocketAddr::from((h.ip, h.port));
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(Error {
            step: format!("reconnecting {}", h.name),
            detail: format!(
                "sshd at {} did not answer within 15 s after the link came up",
                addr
            ),
        })
    }

    /// A KubeKey inventory (`kind: Inventory`) listing every host with an ssh connector
    /// (host, port, user root, private_key) and `internal_ipv4`, all in group `testbed`.
    pub fn inventory_yaml(&self) -> String {
        let mut s = String::from(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata:\n  name: testbed\nspec:\n  hosts:\n",
        );
        for h in &self.hosts {
            s.push_str(&format!(
                "    {}:\n      connector:\n        type: ssh\n        host: {}\n        port: {}\n        user: root\n        private_key: {}\n      internal_ipv4: {}\n",
                h.name,
                h.ip,
                h.port,
                yaml_str(&h.root_key_path.to_string_lossy()),
                h.ip
            ));
        }
        s.push_str("  groups:\n    testbed:\n      hosts:\n");
        for h in &self.hosts {
            s.push_str(&format!("        - {}\n", h.name));
        }
        s
    }

    /// The same hosts as an Ansible YAML inventory (`all: hosts:`), with host key checking
    /// off (each bed has new host keys on reused addresses) and python3 as interpreter.
    pub fn inventory_ansible_yaml(&self) -> String {
        let mut s = String::from("all:\n  hosts:\n");
        for h in &self.hosts {
            s.push_str(&format!(
                "    {}:\n      ansible_host: {}\n      ansible_port: {}\n      ansible_user: root\n      ansible_ssh_private_key_file: {}\n      ansible_ssh_common_args: \"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\"\n      ansible_python_interpreter: /usr/bin/python3\n",
                h.name,
                h.ip,
                h.port,
                yaml_str(&h.root_key_path.to_string_lossy())
            ));
        }
        s
    }

    /// Options for the system `ssh` that log into host `i` without prompts or known_hosts
    /// (key, port, BatchMode, no host key checking, short connect timeout); add the
    /// destination (`root@IP`) and command yourself.
    pub fn ssh_options(&self, i: usize) -> Vec<String> {
        let mut v: Vec<String> = [
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-i",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.push(self.key_path.to_string_lossy().into_owned());
        if let Some(h) = self.hosts.get(i) {
            v.push("-p".into());
            v.push(h.port.to_string());
        }
        v
    }

    /// Runs `cmd` on host `i` as root over SSH (system `ssh`, the bed's key) and returns its
    /// output; exit code 255 means ssh itself failed (e.g. the host is down or cut off).
    /// Every call is one SSH login, visible in [`TestBed::accepted_ssh_logins`].
    pub fn ssh(&self, i: usize, cmd: &str) -> Output {
        self.ssh_as(i, "root", cmd)
    }

    /// Like [`TestBed::ssh`] but logs in as the `kk` user (with the same key).
    pub fn ssh_user(&self, i: usize, cmd: &str) -> Output {
        self.ssh_as(i, USER, cmd)
    }

    fn ssh_as(&self, i: usize, user: &str, cmd: &str) -> Output {
        let h = match self.host(i) {
            Ok(h) => h,
            Err(e) => return failed_output(&e.to_string()),
        };
        let mut c = Command::new("ssh");
        c.env("PATH", sys::PATH)
            .args(self.ssh_options(i))
            .arg(format!("{user}@{}", h.ip))
            .arg(cmd)
            .stdin(Stdio::null());
        c.output()
            .unwrap_or_else(|e| failed_output(&format!("cannot start ssh: {e}")))
    }

    /// Runs `cmd` on host `i` as `kk` logging in by password (`sshpass`, public keys off),
    /// to test password login.
    pub fn ssh_user_password(&self, i: usize, cmd: &str) -> Output {
        let h = match self.host(i) {
            Ok(h) => h,
            Err(e) => return failed_output(&e.to_string()),
        };
        let mut c = Command::new("sshpass");
        c.env("PATH", sys::PATH)
            .env("SSHPASS", USER_PASSWORD)
            .args(["-e", "ssh"])
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "ConnectTimeout=10",
                "-o",
                "PubkeyAuthentication=no",
                "-o",
                "PreferredAuthentications=password",
                "-p",
            ])
            .arg(h.port.to_string())
            .arg(format!("{USER}@{}", h.ip))
            .arg(cmd)
            .stdin(Stdio::null());
        c.output().unwrap_or_else(|e| {
            failed_output(&format!(
                "cannot start sshpass (apt-get install sshpass): {e}"
            ))
        })
    }

    /// Runs `sh -c cmd` inside host `i` as root WITHOUT SSH (nsenter into its namespaces),
    /// so inspecting a host does not add SSH logins to what a test counts. Fails if the host
    /// is stopped.
    pub fn exec(&self, i: usize, cmd: &str) -> Result<Output, Error> {
        let h = self.host(i)?;
        let step = format!("running `{cmd}` in {}", h.name);
        let pid = self
            .lock_state(i)
            .init_pid
            .ok_or_else(|| Error::new(&step, format!("{} is stopped", h.name)))?;
        let mut c = nsenter(pid);
        c.args(["sh", "-c", cmd]).stdin(Stdio::null());
        c.output()
            .map_err(|e| Error::new(&step, format!("cannot start `{}`: {e}", sys::cmdline(&c))))
    }

    /// Host `i`'s systemd journal (`journalctl --no-pager` plus `args`, e.g. `-u ssh`), read
    /// without SSH after `journalctl --sync`, so it holds everything logged before the call.
    pub fn journal(&self, i: usize, args: &str) -> Result<String, Error> {
        let h = self.host(i)?;
        let out = self.exec(
            i,
            &format!("journalctl --sync; journalctl --no-pager {args}"),
        )?;
        if !out.status.success() {
            return Err(Error::new(
                format!("reading the journal of {}", h.name),
                sys::output_text(&out),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// How many SSH logins sshd on host `i` has accepted since boot ("Accepted publickey"
    /// and "Accepted password" lines): a multiplexed run should add one per host. The
    /// test bed itself logs in zero times (readiness is checked without SSH).
    pub fn accepted_ssh_logins(&self, i: usize) -> Result<usize, Error> {
        let text = self.journal(i, "-o cat -t sshd")?;
        Ok(text.lines().filter(|l| l.starts_with("Accepted ")).count())
    }

    // ---- setup ----

    /// Bridge, cgroup and key pair shared by all hosts of the bed.
    fn setup_shared(&self) -> Result<(), Error> {
        let step = "creating the bed's directory";
        sys::mkdir(step, &self.dir, 0o700, None)?;
        let step = "generating the bed's SSH key (ssh-keygen)";
        sys::run(
            step,
            Command::new("ssh-keygen")
                .env("PATH", sys::PATH)
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "kk-testbed", "-f"])
                .arg(&self.key_path),
        )?;
        let step = format!("creating bridge {}", self.bridge);
        sys::ip(
            &step,
            &[
                "link",
                "add",
                &self.bridge,
                "type",
                "bridge",
                "forward_delay",
                "0",
            ],
        )?;
        // Nothing that arrives on the bridge is routed on: the hosts reach only each other
        // and the controller's bridge address.
        sys::sysctl_set_if_present(
            &step,
            &format!("net/ipv4/conf/{}/forwarding", self.bridge),
            "0",
        )?;
        sys::sysctl_set_if_present(
            &step,
            &format!("net/ipv6/conf/{}/disable_ipv6", self.bridge),
            "1",
        )?;
        let addr = format!("{}/24", self.bridge_ip());
        sys::ip(&step, &["addr", "add", &addr, "dev", &self.bridge])?;
        sys::ip(&step, &["link", "set", &self.bridge, "up"])?;
        sys::mkdir("creating the bed's cgroup", &self.cgroup, 0o755, None)?;
        Ok(())
    }

    /// Writes host `i`'s overlay upper directory; returns its sshd public key.
    fn prepare_host(&self, i: usize) -> Result<String, Error> {
        let h = &self.hosts[i];
        let step = format!("preparing the disk of {}", h.name);
        let step = step.as_str();
        let hdir = self.dir.join(&h.name);
        let up = hdir.join("upper");
        for d in ["upper", "work", "merged"] {
            sys::mkdir(step, &hdir.join(d), 0o755, None)?;
        }
        sys::mkdir(step, &up.join(".oldroot"), 0o755, None)?;
        let etc = up.join("etc");
        sys::mkdir(step, &etc, 0o755, None)?;
        sys::write_file(
            step,
            &etc.join("hostname"),
            format!("{}\n", h.name).as_bytes(),
            0o644,
            None,
        )?;
        let mut hosts = format!(
            "127.0.0.1\tlocalhost\n127.0.1.1\t{}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
            h.name
        );
        for o in &self.hosts {
            hosts.push_str(&format!("{}\t{}\n", o.ip, o.name));
        }
        sys::write_file(step, &etc.join("hosts"), hosts.as_bytes(), 0o644, None)?;
        // No nameserver: lookups fail at once instead of waiting on an unreachable one.
        sys::write_file(
            step,
            &etc.join("resolv.conf"),
            b"# kk test bed: no DNS\n",
            0o644,
            None,
        )?;
        let uuid = sys::read(step, Path::new("/proc/sys/kernel/random/uuid"))?;
        let machine_id: String = uuid.trim().chars().filter(|c| *c != '-').collect();
        sys::write_file(
            step,
            &etc.join("machine-id"),
            format!("{machine_id}\n").as_bytes(),
            0o444,
            None,
        )?;
        // Host key of its own, so host key tests see distinct keys.
        let ssh_dir = etc.join("ssh");
        sys::mkdir(step, &ssh_dir.join("sshd_config.d"), 0o755, None)?;
        let hostkey = ssh_dir.join("ssh_host_ed25519_key");
        sys::run(
            step,
            Command::new("ssh-keygen")
                .env("PATH", sys::PATH)
                .args(["-q", "-t", "ed25519", "-N", ""])
                .arg("-C")
                .arg(format!("root@{}", h.name))
                .arg("-f")
                .arg(&hostkey),
        )?;
        let host_public_key = sys::read(step, &ssh_dir.join("ssh_host_ed25519_key.pub"))?
            .trim()
            .to_string();
        sys::write_file(
            step,
            &ssh_dir.join("sshd_config.d/kk-testbed.conf"),
            b"# kk test bed\nHostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\nPasswordAuthentication yes\nUseDNS no\nMaxStartups 200:30:400\n",
            0o644,
            None,
        )?;
        let pubkey = sys::read(step, &self.key_path.with_extension("pub"))?;
        sys::mkdir(step, &up.join("root/.ssh"), 0o700, None)?;
        sys::write_file(
            step,
            &up.join("root/.ssh/authorized_keys"),
            pubkey.as_bytes(),
            0o600,
            None,
        )?;
        // The kk user: appended to the rootfs's account files.
        let lower_etc = self.rootfs.join("etc");
        let append = |name: &str, line: String, mode: u32| -> Result<(), Error> {
            let mut text = sys::read(step, &lower_etc.join(name))?;
            if !text.ends_with('\n') && !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&line);
            sys::write_file(step, &etc.join(name), text.as_bytes(), mode, None)
        };
        append(
            "passwd",
            format!("{USER}:x:{USER_UID}:{USER_UID}:kk test user:/home/{USER}:/bin/bash\n"),
            0o644,
        )?;
        append("group", format!("{USER}:x:{USER_UID}:\n"), 0o644)?;
        append(
            "shadow",
            format!("{USER}:{USER_PASSWORD_HASH}:19800:0:99999:7:::\n"),
            0o640,
        )?;
        append("gshadow", format!("{USER}:!::\n"), 0o640)?;
        // shadow files belong to group shadow in Debian.
        for f in ["shadow", "gshadow"] {
            if let Ok(meta) = fs::metadata(lower_etc.join(f)) {
                use std::os::unix::fs::MetadataExt;
                let _ = std::os::unix::fs::chown(etc.join(f), Some(0), Some(meta.gid()));
            }
        }
        let home = up.join("home").join(USER);
        sys::mkdir(step, &up.join("home"), 0o755, None)?;
        sys::mkdir(step, &home, 0o755, Some(USER_UID))?;
        if let Ok(rd) = fs::read_dir(self.rootfs.join("etc/skel")) {
            for e in rd.flatten() {
                if let Ok(data) = fs::read(e.path()) {
                    sys::write_file(
                        step,
                        &home.join(e.file_name()),
                        &data,
                        0o644,
                        Some(USER_UID),
                    )?;
                }
            }
        }
        sys::mkdir(step, &home.join(".ssh"), 0o700, Some(USER_UID))?;
        sys::write_file(
            step,
            &home.join(".ssh/authorized_keys"),
            pubkey.as_bytes(),
            0o600,
            Some(USER_UID),
        )?;
        let sudoers = if h.sudo_needs_password {
            format!("{USER} ALL=(ALL:ALL) ALL\n")
        } else {
            format!("{USER} ALL=(ALL:ALL) NOPASSWD: ALL\n")
        };
        sys::write_file(
            step,
            &etc.join("sudoers.d/kk"),
            sudoers.as_bytes(),
            0o440,
            None,
        )?;
        for unit in MASKED_UNITS {
            sys::symlink(step, "/dev/null", &etc.join("systemd/system").join(unit))?;
        }
        for f in MASKED_SYSCTL {
            sys::symlink(step, "/dev/null", &etc.join("sysctl.d").join(f))?;
        }
        Ok(host_public_key)
    }

    /// Creates host `i`'s netns and veth, starts its systemd and waits until it is ready.
    fn boot_host(&self, i: usize) -> Result<(), Error> {
        let h = &self.hosts[i];
        let step = format!("booting {}", h.name);
        let mut st = self.lock_state(i);
        if !st.net_up {
            let nstep = format!("creating the network of {}", h.name);
            {
                let _one = NETNS_ADD.lock().unwrap_or_else(|p| p.into_inner());
                sys::ip(&nstep, &["netns", "add", &h.netns])?;
            }
            st.net_up = true;
            sys::ip(
                &nstep,
                &[
                    "link", "add", &h.veth, "type", "veth", "peer", "name", "eth0", "netns",
                    &h.netns,
                ],
            )?;
            sys::sysctl_set_if_present(
                &nstep,
                &format!("net/ipv6/conf/{}/disable_ipv6", h.veth),
                "1",
            )?;
            sys::ip(
                &nstep,
                &["link", "set", &h.veth, "master", &self.bridge, "up"],
            )?;
            let addr = format!("{}/24", h.ip);
            let gw = self.bridge_ip().to_string();
            sys::ip(&nstep, &["-n", &h.netns, "link", "set", "lo", "up"])?;
            sys::ip(
                &nstep,
                &["-n", &h.netns, "addr", "add", &addr, "dev", "eth0"],
            )?;
            sys::ip(&nstep, &["-n", &h.netns, "link", "set", "eth0", "up"])?;
            sys::ip(
                &nstep,
                &["-n", &h.netns, "route", "add", "default", "via", &gw],
            )?;
        }
        let hdir = self.dir.join(&h.name);
        let cg = self.cgroup.join(&h.name);
        sys::mkdir(&step, &cg, 0o755, None)?;
        let merged = hdir.join("merged");
        let console = hdir.join("console.log");
        sys::write_file(&step, &console, b"", 0o644, None)?;
        let m = merged.to_string_lossy();
        let boot = format!(
            "set -e\n\
             mount --make-rprivate /\n\
             mount -t overlay overlay -o lowerdir={lower},upperdir={up},workdir={work} {m}\n\
             mount --rbind /dev {m}/dev\n\
             mount --bind {console} {m}/dev/console\n\
             mount --rbind /sys {m}/sys\n\
             mount -t cgroup2 cgroup2 {m}/sys/fs/cgroup\n\
             mount -t proc proc {m}/proc\n\
             mount -t tmpfs -o mode=755 tmpfs {m}/run\n\
             mount -t tmpfs -o mode=1777 tmpfs {m}/tmp\n\
             hostname {name}\n\
             cd {m}\n\
             pivot_root . .oldroot\n\
             umount -l /.oldroot\n\
             exec env -i PATH={path} /lib/systemd/systemd --system\n",
            lower = self.rootfs.display(),
            up = hdir.join("upper").display(),
            work = hdir.join("work").display(),
            console = console.display(),
            name = h.name,
            path = sys::PATH,
        );
        let boot_path = hdir.join("boot.sh");
        sys::write_file(&step, &boot_path, boot.as_bytes(), 0o755, None)?;
        let log_path = hdir.join("boot.log");
        let log = File::create(&log_path)
            .map_err(|e| Error::new(&step, format!("cannot create {}: {e}", log_path.display())))?;
        let log2 = log
            .try_clone()
            .map_err(|e| Error::new(&step, format!("cannot dup log file: {e}")))?;
        // The shell joins the host's cgroup first, so `unshare --cgroup` makes that cgroup
        // the root of the host's cgroup namespace.
        let script = format!(
            "echo $$ > {procs} && exec ip netns exec {ns} unshare --mount --uts --ipc --pid --cgroup --fork --kill-child sh {boot}",
            procs = cg.join("cgroup.procs").display(),
            ns = h.netns,
            boot = boot_path.display(),
        );
        let mut cmd = Command::new("sh");
        cmd.env_clear()
            .env("PATH", sys::PATH)
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        let child = cmd.spawn().map_err(|e| {
            Error::new(&step, format!("cannot start `{}`: {e}", sys::cmdline(&cmd)))
        })?;
        let unshare_pid = child.id();
        st.child = Some(child);
        let logs = || {
            format!(
                "\n--- boot.log ---\n{}\n--- console ({}) ---\n{}",
                sys::tail(&log_path, 2000),
                console.display(),
                sys::tail(&console, 3000)
            )
        };
        let deadline = Instant::now() + Duration::from_secs(120 + 3 * self.hosts.len() as u64);
        let addr = SocketAddr::from((h.ip, h.port));
        loop {
            if let Some(child) = st.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    st.child = None;
                    st.init_pid = None;
                    return Err(Error::new(
                        &step,
                        format!("the host's boot process exited ({status}){}", logs()),
                    ));
                }
            }
            if st.init_pid.is_none() {
                st.init_pid = first_child(unshare_pid);
            }
            if st.init_pid.is_some()
                && TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
            {
                break;
            }
            if Instant::now() > deadline {
                return Err(Error::new(
                    &step,
                    format!("sshd did not answer on {addr} in time{}", logs()),
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let pid = st.init_pid.unwrap_or(0);
        drop(st);
        let mut c = Command::new("timeout");
        c.env("PATH", sys::PATH)
            .args(["-k", "5", "180"])
            .args(nsenter_args(pid))
            .args(["systemctl", "is-system-running", "--wait"]);
        let out = c
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::new(&step, format!("cannot start `{}`: {e}", sys::cmdline(&c))))?;
        let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if state != "running" && state != "degraded" {
            let failed = self
                .exec(i, "systemctl --failed --no-legend --no-pager")
                .map(|o| sys::output_text(&o))
                .unwrap_or_else(|e| e.to_string());
            return Err(Error::new(
                &step,
                format!(
                    "systemctl is-system-running says `{state}` ({}); failed units: {failed}{}",
                    sys::output_text(&out),
                    logs()
                ),
            ));
        }
        Ok(())
    }

    /// Kills host `i` and removes its netns, veth and cgroup; its disk stays.
    fn teardown_host(&self, i: usize) -> Result<(), Error> {
        let h = &self.hosts[i];
        let step = format!("stopping {}", h.name);
        let mut st = self.lock_state(i);
        if let Some(pid) = st.init_pid.take() {
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
        let cg = self.cgroup.join(&h.name);
        let _ = fs::write(cg.join("cgroup.kill"), "1");
        if let Some(mut child) = st.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let mut first_err = sys::cgroup_destroy(&step, &cg).err();
        if st.net_up {
            if let Err(e) = sys::ip_ignore_missing(&step, &["netns", "del", &h.netns]) {
                first_err.get_or_insert(e);
            }
            if let Err(e) = sys::ip_ignore_missing(&step, &["link", "del", &h.veth]) {
                first_err.get_or_insert(e);
            }
            st.net_up = false;
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for TestBed {
    /// Kills every host and removes netns, veths, bridge, cgroups and the bed's directory
    /// (keys, disks). Runs during unwinding too, so a panicking test leaves nothing behind.
    fn drop(&mut self) {
        let n = self.hosts.len();
        let this = &*self;
        let errors: Vec<Error> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..n)
                .map(|i| s.spawn(move || this.teardown_host(i)))
                .collect();
            hs.into_iter()
                .filter_map(|h| h.join().ok().and_then(|r| r.err()))
                .collect()
        });
        for e in errors {
            eprintln!("testbed: cleanup: {e}");
        }
        if let Err(e) =
            destroy_bed_resources(self.num, self.cgroup.parent().unwrap_or(Path::new("/")))
        {
            eprintln!("testbed: cleanup: {e}");
        }
        // Rename under the global lock so no other process sees a half-deleted claim,
        // then give up the claim and delete the files at leisure.
        let trash = PathBuf::from(STATE_DIR).join(format!(
            "trash-{}-{}-{}",
            self.num,
            std::process::id(),
            BED_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match sys::lock_exclusive("removing the bed", Path::new(GLOBAL_LOCK)) {
            Ok(global) => {
                if let Err(e) = fs::rename(&self.dir, &trash) {
                    eprintln!(
                        "testbed: cleanup: cannot rename {}: {e}",
                        self.dir.display()
                    );
                }
                self.lock = None;
                drop(global);
            }
            Err(e) => eprintln!("testbed: cleanup: {e}"),
        }
        let _ = fs::remove_dir_all(&trash);
    }
}

/// `nsenter` into every namespace of the host whose PID 1 is `pid`, with its root and a
/// clean environment.
fn nsenter_args(pid: u32) -> Vec<String> {
    vec![
        "nsenter".into(),
        "-t".into(),
        pid.to_string(),
        "-a".into(),
        "-r".into(),
        "-w".into(),
        "env".into(),
        "-i".into(),
        format!("PATH={}", sys::PATH),
        "HOME=/root".into(),
        "LANG=C.UTF-8".into(),
    ]
}

fn nsenter(pid: u32) -> Command {
    let args = nsenter_args(pid);
    let mut c = Command::new(&args[0]);
    c.env("PATH", sys::PATH).args(&args[1..]);
    c
}

/// First child of process `pid` (the host's systemd is the only child of `unshare`).
fn first_child(pid: u32) -> Option<u32> {
    let text = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// An `Output` for an ssh that could not even start, so `ssh()` stays infallible.
fn failed_output(msg: &str) -> Output {
    Output {
        status: ExitStatus::from_raw(255 << 8),
        stdout: Vec::new(),
        stderr: format!("testbed: {msg}\n").into_bytes(),
    }
}

/// A YAML scalar for a path: plain when safe, else double-quoted.
fn yaml_str(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
    {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}

/// Parses the bed number out of our interface / netns names (`kkbr7`, `kkv7h3`, `kktb7-node3`).
fn bed_of_name(name: &str) -> Option<u8> {
    let digits = |s: &str| -> Option<u8> {
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if let Some(rest) = name.strip_prefix("kkbr") {
        return digits(rest);
    }
    if let Some(rest) = name.strip_prefix("kkv") {
        let (x, host) = rest.split_once('h')?;
        digits(host)?;
        return digits(x);
    }
    if let Some(rest) = name.strip_prefix("kktb") {
        let (x, host) = rest.split_once("-node")?;
        digits(host)?;
        return digits(x);
    }
    None
}

/// Removes everything of bed `num` that lives outside its directory: processes (via its
/// cgroup), netns, veths, bridge. Used by drop and for beds left by dead processes.
fn destroy_bed_resources(num: u8, cg_parent: &Path) -> Result<(), Error> {
    let step = format!("removing test bed {num}");
    let mut first_err = sys::cgroup_destroy(&step, &cg_parent.join(num.to_string())).err();
    for ns in sys::netns_names() {
        if bed_of_name(&ns) == Some(num) && ns.starts_with("kktb") {
            if let Err(e) = sys::ip_ignore_missing(&step, &["netns", "del", &ns]) {
                first_err.get_or_insert(e);
            }
        }
    }
    for link in sys::link_names()? {
        if bed_of_name(&link) == Some(num) && (link.starts_with("kkv") || link.starts_with("kkbr"))
        {
            if let Err(e) = sys::ip_ignore_missing(&step, &["link", "del", &link]) {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Under the global lock: removes beds whose process is gone, then claims a free bed
/// number (its directory + a held flock). A number is free when no live bed holds it, no
/// interface `kkbrX` exists and nothing on this machine routes into 10.213.X.0/24.
fn claim_bed(cgroot: &Path) -> Result<(u8, File), Error> {
    let step = "claiming a bed number and subnet";
    let state = PathBuf::from(STATE_DIR);
    sys::mkdir(step, &state, 0o755, None)?;
    let _global = sys::lock_exclusive(step, Path::new(GLOBAL_LOCK))?;
    let cg_parent = cgroot.join("kk-testbed");
    sys::mkdir(step, &cg_parent, 0o755, None)?;

    // 1. Beds of dead processes: their flock is free.
    let mut claimed = std::collections::BTreeSet::new();
    if let Ok(rd) = fs::read_dir(&state) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Ok(num) = name.parse::<u8>() {
                let lock_path = e.path().join("lock");
                let alive = match File::open(&lock_path) {
                    Ok(f) => matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock)),
                    Err(_) => false, // claims are made with their lock under the global lock
                };
                if alive {
                    claimed.insert(num);
                } else {
                    eprintln!("testbed: removing bed {num} left by a process that is gone");
                    destroy_bed_resources(num, &cg_parent)?;
                    let _ = fs::remove_dir_all(e.path());
                }
            } else if let Some(rest) = name.strip_prefix("trash-") {
                // trash-NUM-PID-N: deleted by its owner; finish the job if the owner is gone.
                let pid: Option<i32> = rest.split('-').nth(1).and_then(|p| p.parse().ok());
                if let Some(pid) = pid {
                    if unsafe { libc::kill(pid, 0) } != 0 {
                        let _ = fs::remove_dir_all(e.path());
                    }
                }
            }
        }
    }
    // 2. Resources with our names but no claim: left by a run that died mid-cleanup.
    let mut orphans = std::collections::BTreeSet::new();
    for name in sys::link_names()?.into_iter().chain(sys::netns_names()) {
        if let Some(num) = bed_of_name(&name) {
            if !claimed.contains(&num) {
                orphans.insert(num);
            }
        }
    }
    if let Ok(rd) = fs::read_dir(&cg_parent) {
        for e in rd.flatten() {
            if let Ok(num) = e.file_name().to_string_lossy().parse::<u8>() {
                if !claimed.contains(&num) {
                    orphans.insert(num);
                }
            }
        }
    }
    for num in orphans {
        destroy_bed_resources(num, &cg_parent)?;
    }
    // 3. A free number, starting from one derived from pid and a counter so parallel beds
    //    spread out.
    let prefixes = sys::ipv4_prefixes()?;
    let links = sys::link_names()?;
    let counter = BED_COUNTER.fetch_add(1, Ordering::Relaxed);
    let start = (std::process::id()
        .wrapping_mul(31)
        .wrapping_add(counter.wrapping_mul(7)))
        % 254;
    for k in 0..254u32 {
        let num = ((start + k) % 254 + 1) as u8;
        let net = (u32::from(Ipv4Addr::new(10, 213, num, 0)), 24u8);
        if claimed.contains(&num)
            || links.iter().any(|l| l == &format!("kkbr{num}"))
            || prefixes.iter().any(|p| sys::prefixes_overlap(*p, net))
        {
            continue;
        }
        let dir = state.join(num.to_string());
        if fs::create_dir(&dir).is_err() {
            continue;
        }
        let lock = sys::lock_file(step, &dir.join("lock"))?;
        lock.try_lock().map_err(|e| {
            Error::new(
                step,
                format!("cannot lock {}: {e:?}", dir.join("lock").display()),
            )
        })?;
        let _ = fs::write(dir.join("owner"), format!("{}\n", std::process::id()));
        return Ok((num, lock));
    }
    Err(Error::new(
        step,
        "all 254 subnets 10.213.1-254.0/24 are taken by live beds or overlap routes on this machine",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_to_their_bed() {
        assert_eq!(bed_of_name("kkbr7"), Some(7));
        assert_eq!(bed_of_name("kkv12h3"), Some(12));
        assert_eq!(bed_of_name("kktb254-node200"), Some(254));
        assert_eq!(bed_of_name("kkbr"), None);
        assert_eq!(bed_of_name("kkbr7x"), None);
        assert_eq!(bed_of_name("kkvh3"), None);
        assert_eq!(bed_of_name("eth0"), None);
        assert_eq!(bed_of_name("kktb3-nodeX"), None);
    }

    #[test]
    fn yaml_paths() {
        assert_eq!(
            yaml_str("/var/tmp/kk-testbed/beds/3/id_ed25519"),
            "/var/tmp/kk-testbed/beds/3/id_ed25519"
        );
        assert_eq!(yaml_str("/a b: c"), "\"/a b: c\"");
    }
}
