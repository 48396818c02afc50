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

pub mod artifacts;
mod beds;
mod boot;
pub mod http;
mod rootfs;
mod sys;

pub use rootfs::{cache_dir, ensure_rootfs, PACKAGES};

use beds::{claim_bed, destroy_bed_resources};
use boot::{failed_output, nsenter, yaml_str};

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
        let pid = {
            let mut st = self.lock_state(i);
            // After a reboot of the host its PID 1 is another process.
            let live = st.child.as_ref().and_then(|c| boot::init_of(c.id()));
            if st.init_pid.is_some() {
                st.init_pid = live;
            }
            st.init_pid
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::beds::bed_of_name;

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
