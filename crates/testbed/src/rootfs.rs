//! The cached Debian 12 root filesystem every host's overlay sits on.
//!
//! Built once with debootstrap (about a minute), in a temporary directory renamed into place,
//! so the cache directory exists only when complete; a lock file keeps two test processes
//! from building at the same time. The rootfs is plain debootstrap output (minus the .deb
//! cache): every host-specific change lives in the host's overlay upper directory.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::sys;
use crate::Error;

/// Bump when the package list changes, so old caches are not reused.
const ROOTFS_NAME: &str = "rootfs-bookworm-v7";

/// Packages beyond minbase: systemd as PID 1, sshd, sudo, the tools kk's roles call, and
/// python3 so Ansible can run against the same hosts in benchmarks, the packages the
/// `native` role requires (no network on test hosts to install them), fio for precheck, the
/// NFS server and client for `native/nfs`, and the partition and filesystem tools (sfdisk in
/// fdisk, mkfs.xfs, mkfs.ext4) for `native/storage`, and cron (crontab) and git for the
/// `cron` and `git` modules' oracle fixtures, and python3-apt, which Ansible's `apt` module
/// imports (it would otherwise try to install it, and the hosts have no network), and dnf
/// with python3-dnf, rpm (rpmbuild) and createrepo-c, so the `dnf`/`yum` fixtures build a
/// local RPM repository on a host and drive it with both kk and Ansible's dnf module, and
/// rsync, the other end of `synchronize`.
pub const PACKAGES: &str = "systemd,systemd-sysv,dbus,openssh-server,iproute2,sudo,procps,kmod,iptables,ca-certificates,curl,tar,gzip,python3,socat,conntrack,ipset,ebtables,ipvsadm,fio,nfs-kernel-server,nfs-common,xfsprogs,e2fsprogs,fdisk,cron,git,python3-apt,dnf,python3-dnf,rpm,createrepo-c,rsync";

/// Where caches live: `$KK_TESTBED_CACHE` or `/var/tmp/kk-testbed` (kept across runs).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("KK_TESTBED_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/kk-testbed"))
}

/// Returns the cached rootfs, building it first if it is not there yet.
pub fn ensure_rootfs() -> Result<PathBuf, Error> {
    let cache = cache_dir();
    let dst = cache.join(ROOTFS_NAME);
    if dst.join("etc/os-release").exists() {
        return Ok(dst);
    }
    let step = "building the Debian 12 rootfs";
    let _lock = sys::lock_exclusive(step, &cache.join("rootfs.lock"))?;
    if dst.join("etc/os-release").exists() {
        return Ok(dst); // another process built it while we waited
    }
    // Anything half-built is from a builder that died (we hold the lock).
    if let Ok(rd) = fs::read_dir(&cache) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("{ROOTFS_NAME}.tmp-")) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
    if Command::new("debootstrap")
        .arg("--version")
        .env("PATH", sys::PATH)
        .output()
        .is_err()
    {
        return Err(Error::new(
            step,
            "debootstrap is not installed: run `apt-get install debootstrap` (scripts/test installs it)",
        ));
    }
    let tmp = cache.join(format!("{ROOTFS_NAME}.tmp-{}", std::process::id()));
    eprintln!(
        "testbed: building the Debian 12 rootfs into {} (once, about a minute)",
        dst.display()
    );
    let res = sys::run(
        step,
        Command::new("debootstrap")
            .env("PATH", sys::PATH)
            .arg("--variant=minbase")
            .arg(format!("--include={PACKAGES}"))
            .arg("bookworm")
            .arg(&tmp)
            .arg("http://deb.debian.org/debian"),
    );
    if let Err(mut e) = res {
        e.detail.push_str(&format!(
            "\n--- debootstrap.log (tail) ---\n{}",
            sys::tail(&tmp.join("debootstrap/debootstrap.log"), 3000)
        ));
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    // The downloaded .debs are not needed by the hosts; 50+ MB less to keep.
    if let Ok(rd) = fs::read_dir(tmp.join("var/cache/apt/archives")) {
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "deb") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    fs::rename(&tmp, &dst).map_err(|e| {
        Error::new(
            step,
            format!("cannot rename {} to {}: {e}", tmp.display(), dst.display()),
        )
    })?;
    Ok(dst)
}
