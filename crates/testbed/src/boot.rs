//! Booting and stopping a bed's hosts: the shared bridge, cgroup and key, each host's
//! overlay disk, namespaces and systemd, and the teardown that removes all of it (also
//! on drop, while a failing test unwinds).

use super::*;

impl TestBed {
    /// Bridge, cgroup and key pair shared by all hosts of the bed.
    pub(crate) fn setup_shared(&self) -> Result<(), Error> {
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
    pub(crate) fn prepare_host(&self, i: usize) -> Result<String, Error> {
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
    pub(crate) fn boot_host(&self, i: usize) -> Result<(), Error> {
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
             n=0; until mount -t overlay overlay -o lowerdir={lower},upperdir={up},workdir={work} {m}; do\n\
             n=$((n+1)); [ $n -lt 50 ] || exit 32; sleep 0.1; done\n\
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
        // the root of the host's cgroup namespace. It then supervises the boot as
        // systemd-nspawn does: `reboot` in the host makes its systemd call reboot(2), which in
        // a PID namespace ends that namespace's init by SIGHUP (unshare re-raises it: status
        // 129); the host is then booted again on the same disk and network. Any other end
        // (poweroff's SIGINT, our SIGKILL on stop) ends the loop. The overlay mount is retried
        // in boot.sh because the old mount namespace may still hold the upper dir a moment.
        let script = format!(
            "echo $$ > {procs} || exit 1\n\
             while :; do\n\
             ip netns exec {ns} unshare --mount --uts --ipc --pid --cgroup --fork --kill-child sh {boot}\n\
             rc=$?\n\
             [ $rc -eq 129 ] || exit $rc\n\
             echo \"testbed: {name} rebooted\"\n\
             done",
            procs = cg.join("cgroup.procs").display(),
            ns = h.netns,
            boot = boot_path.display(),
            name = h.name,
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
        let supervisor_pid = child.id();
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
                st.init_pid = init_of(supervisor_pid);
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
    pub(crate) fn teardown_host(&self, i: usize) -> Result<(), Error> {
        let h = &self.hosts[i];
        let step = format!("stopping {}", h.name);
        let mut st = self.lock_state(i);
        // The supervising shell is killed with the host (cgroup.kill below), so a killed
        // init is never booted again; the init is looked up afresh (a reboot changes it).
        st.init_pid = None;
        if let Some(pid) = st.child.as_ref().and_then(|c| init_of(c.id())) {
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
pub(crate) fn nsenter_args(pid: u32) -> Vec<String> {
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

pub(crate) fn nsenter(pid: u32) -> Command {
    let args = nsenter_args(pid);
    let mut c = Command::new(&args[0]);
    c.env("PATH", sys::PATH).args(&args[1..]);
    c
}

/// First child of process `pid` (the host's systemd is the only child of `unshare`).
pub(crate) fn first_child(pid: u32) -> Option<u32> {
    let text = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The host's current PID 1 (in the root namespace), under the supervising shell `pid`:
/// shell → unshare → systemd. A new one after each reboot of the host.
pub(crate) fn init_of(supervisor: u32) -> Option<u32> {
    first_child(first_child(supervisor)?)
}

/// An `Output` for an ssh that could not even start, so `ssh()` stays infallible.
pub(crate) fn failed_output(msg: &str) -> Output {
    Output {
        status: ExitStatus::from_raw(255 << 8),
        stdout: Vec::new(),
        stderr: format!("testbed: {msg}\n").into_bytes(),
    }
}

/// A YAML scalar for a path: plain when safe, else double-quoted.
pub(crate) fn yaml_str(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
    {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}
