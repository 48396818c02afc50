//! Small system helpers: running commands with step-named errors, files with modes and
//! owners, locks, cgroups. Kept apart so `lib.rs` reads as the recipe.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

/// PATH given to every command we start, so a test's odd environment cannot pick other tools.
pub(crate) const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The command line as a person would type it, for error messages.
pub(crate) fn cmdline(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        let a = a.to_string_lossy();
        if a.contains(char::is_whitespace) || a.is_empty() {
            s.push('\'');
            s.push_str(&a);
            s.push('\'');
        } else {
            s.push_str(&a);
        }
    }
    s
}

/// Runs `cmd` to completion; a start failure or a non-zero exit is an [`Error`] naming `step`,
/// the command and its stderr (stdout too when stderr is empty).
pub(crate) fn run(step: &str, cmd: &mut Command) -> Result<Output, Error> {
    cmd.stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| Error::new(step, format!("could not start `{}`: {e}", cmdline(cmd))))?;
    if out.status.success() {
        return Ok(out);
    }
    Err(Error::new(
        step,
        format!(
            "`{}` failed ({}): {}",
            cmdline(cmd),
            out.status,
            output_text(&out)
        ),
    ))
}

/// stderr of a finished command, or its stdout when stderr says nothing; trimmed.
pub(crate) fn output_text(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = if err.trim().is_empty() {
        String::from_utf8_lossy(&out.stdout)
    } else {
        err
    };
    let text = text.trim();
    if text.is_empty() {
        "(no output)".to_string()
    } else {
        text.to_string()
    }
}

/// `ip ARGS` with the step name for errors.
pub(crate) fn ip(step: &str, args: &[&str]) -> Result<Output, Error> {
    run(step, Command::new("ip").args(args).env("PATH", PATH))
}

/// `ip ARGS`, where "it is already gone" is success (used by cleanup).
pub(crate) fn ip_ignore_missing(step: &str, args: &[&str]) -> Result<(), Error> {
    match ip(step, args) {
        Ok(_) => Ok(()),
        Err(e)
            if e.detail.contains("Cannot find device")
                || e.detail.contains("No such device")
                || e.detail.contains("No such file")
                || e.detail.contains("does not exist") =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn io_err(step: &str, what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(step, format!("{what} {}: {e}", path.display()))
}

/// Creates `path` (and parents) and sets its mode and owner.
pub(crate) fn mkdir(step: &str, path: &Path, mode: u32, owner: Option<u32>) -> Result<(), Error> {
    fs::create_dir_all(path).map_err(|e| io_err(step, "cannot create directory", path, e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| io_err(step, "cannot chmod", path, e))?;
    if let Some(id) = owner {
        std::os::unix::fs::chown(path, Some(id), Some(id))
            .map_err(|e| io_err(step, "cannot chown", path, e))?;
    }
    Ok(())
}

/// Writes `path` with `mode` (and owner uid=gid when given), creating parent directories 0755.
pub(crate) fn write_file(
    step: &str,
    path: &Path,
    contents: &[u8],
    mode: u32,
    owner: Option<u32>,
) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| io_err(step, "cannot create directory", parent, e))?;
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(|e| io_err(step, "cannot create", path, e))?;
    f.write_all(contents)
        .map_err(|e| io_err(step, "cannot write", path, e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| io_err(step, "cannot chmod", path, e))?;
    if let Some(id) = owner {
        std::os::unix::fs::chown(path, Some(id), Some(id))
            .map_err(|e| io_err(step, "cannot chown", path, e))?;
    }
    Ok(())
}

/// A symlink `path -> target` (replacing what is there); used to mask systemd units.
pub(crate) fn symlink(step: &str, target: &str, path: &Path) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| io_err(step, "cannot create directory", parent, e))?;
    }
    let _ = fs::remove_file(path);
    std::os::unix::fs::symlink(target, path).map_err(|e| io_err(step, "cannot symlink", path, e))
}

/// Reads a text file, with the step in the error.
pub(crate) fn read(step: &str, path: &Path) -> Result<String, Error> {
    fs::read_to_string(path).map_err(|e| io_err(step, "cannot read", path, e))
}

/// Opens (creating) a lock file; the lock itself is taken by the caller.
pub(crate) fn lock_file(step: &str, path: &Path) -> Result<File, Error> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| io_err(step, "cannot create directory", parent, e))?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_err(step, "cannot open lock file", path, e))
}

/// Takes an exclusive `flock` on `path`, waiting for it; released when the file is dropped,
/// also when the process dies, which is what makes stale-bed detection safe.
pub(crate) fn lock_exclusive(step: &str, path: &Path) -> Result<File, Error> {
    let f = lock_file(step, path)?;
    f.lock().map_err(|e| io_err(step, "cannot lock", path, e))?;
    Ok(f)
}

/// The last `max` bytes of a log file (for boot errors), or a note why there is none.
pub(crate) fn tail(path: &Path, max: usize) -> String {
    match fs::read(path) {
        Ok(b) => {
            let start = b.len().saturating_sub(max);
            let s = String::from_utf8_lossy(&b[start..]).trim().to_string();
            if s.is_empty() {
                "(empty)".into()
            } else {
                s
            }
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Raises a sysctl under /proc/sys to at least `min` (never lowers what someone else set).
pub(crate) fn sysctl_at_least(key: &str, min: u64) -> Result<(), Error> {
    let path = PathBuf::from("/proc/sys").join(key.replace('.', "/"));
    let step = format!("raising sysctl {key}");
    let cur = read(&step, &path)?;
    let cur: u64 = cur.trim().parse().unwrap_or(0);
    if cur < min {
        fs::write(&path, min.to_string()).map_err(|e| io_err(&step, "cannot write", &path, e))?;
    }
    Ok(())
}

/// Writes a value under /proc/sys if the file exists (per-interface settings).
pub(crate) fn sysctl_set_if_present(step: &str, rel: &str, value: &str) -> Result<(), Error> {
    let path = PathBuf::from("/proc/sys").join(rel);
    if !path.exists() {
        return Ok(());
    }
    fs::write(&path, value).map_err(|e| io_err(step, "cannot write", &path, e))
}

/// The cgroup v2 hierarchy on this machine: `/sys/fs/cgroup` on a unified system,
/// `/sys/fs/cgroup/unified` on a hybrid one. Each host gets a cgroup below it so its systemd
/// (in its own cgroup namespace) never touches another host's units.
pub(crate) fn cgroup2_root() -> Result<PathBuf, Error> {
    for p in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let p = PathBuf::from(p);
        if p.join("cgroup.procs").exists() && p.join("cgroup.subtree_control").exists() {
            return Ok(p);
        }
    }
    Err(Error::new(
        "finding the cgroup v2 hierarchy",
        "neither /sys/fs/cgroup nor /sys/fs/cgroup/unified is a cgroup2 mount; the test bed needs cgroup v2 to give each host's systemd its own cgroup tree",
    ))
}

/// Kills every process in a cgroup tree (cgroup.kill), waits until it is empty and removes
/// the directories bottom-up. Missing cgroup = nothing to do.
pub(crate) fn cgroup_destroy(step: &str, cg: &Path) -> Result<(), Error> {
    if !cg.exists() {
        return Ok(());
    }
    let _ = fs::write(cg.join("cgroup.kill"), "1");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let events = fs::read_to_string(cg.join("cgroup.events")).unwrap_or_default();
        if !events.lines().any(|l| l.trim() == "populated 1") {
            break;
        }
        if Instant::now() > deadline {
            return Err(Error::new(
                step,
                format!(
                    "processes in {} did not exit within 20 s of cgroup.kill",
                    cg.display()
                ),
            ));
        }
        let _ = fs::write(cg.join("cgroup.kill"), "1");
        std::thread::sleep(Duration::from_millis(20));
    }
    rmdir_tree(step, cg)
}

fn rmdir_tree(step: &str, dir: &Path) -> Result<(), Error> {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                rmdir_tree(step, &e.path())?;
            }
        }
    }
    // An emptied cgroup can stay busy for a moment after its last process exits.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(io_err(step, "cannot remove cgroup", dir, e))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Names of all network interfaces in the root namespace.
pub(crate) fn link_names() -> Result<Vec<String>, Error> {
    let out = ip("listing network interfaces", &["-o", "link", "show"])?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| {
            let name = l.split(':').nth(1)?.trim();
            Some(name.split('@').next().unwrap_or(name).to_string())
        })
        .collect())
}

/// Names of the named network namespaces (`ip netns add`).
pub(crate) fn netns_names() -> Vec<String> {
    fs::read_dir("/run/netns")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// IPv4 prefixes (address, length) of every route in every table of the root namespace,
/// except the default route; used to pick a subnet nobody uses.
pub(crate) fn ipv4_prefixes() -> Result<Vec<(u32, u8)>, Error> {
    let out = ip(
        "listing IPv4 routes",
        &["-4", "-o", "route", "show", "table", "all"],
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for line in text.lines() {
        let mut toks = line.split_whitespace();
        let mut t = toks.next().unwrap_or("");
        if matches!(
            t,
            "local"
                | "broadcast"
                | "unicast"
                | "blackhole"
                | "unreachable"
                | "prohibit"
                | "anycast"
                | "multicast"
                | "throw"
                | "nat"
        ) {
            t = toks.next().unwrap_or("");
        }
        if t == "default" {
            continue;
        }
        if let Some(p) = parse_prefix(t) {
            if p.1 > 0 {
                v.push(p);
            }
        }
    }
    Ok(v)
}

/// "a.b.c.d/len" or "a.b.c.d" (= /32) as (address, length).
pub(crate) fn parse_prefix(s: &str) -> Option<(u32, u8)> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, l.parse::<u8>().ok()?),
        None => (s, 32),
    };
    if len > 32 {
        return None;
    }
    let a: std::net::Ipv4Addr = addr.parse().ok()?;
    Some((u32::from(a), len))
}

/// Whether two IPv4 prefixes share any address.
pub(crate) fn prefixes_overlap(a: (u32, u8), b: (u32, u8)) -> bool {
    let len = a.1.min(b.1);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    a.0 & mask == b.0 & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert_eq!(parse_prefix("10.213.5.0/24"), Some((0x0AD5_0500, 24)));
        assert_eq!(parse_prefix("10.213.5.7"), Some((0x0AD5_0507, 32)));
        assert_eq!(parse_prefix("10.213.5.0/33"), None);
        assert_eq!(parse_prefix("fe80::/64"), None);
        let net = parse_prefix("10.213.5.0/24").unwrap();
        assert!(prefixes_overlap(net, parse_prefix("10.0.0.0/8").unwrap()));
        assert!(prefixes_overlap(net, parse_prefix("10.213.5.1").unwrap()));
        assert!(!prefixes_overlap(
            net,
            parse_prefix("10.213.6.0/24").unwrap()
        ));
        assert!(!prefixes_overlap(
            net,
            parse_prefix("192.0.2.0/24").unwrap()
        ));
    }
}
