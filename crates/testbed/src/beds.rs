//! Bed numbers: claiming a free one (a live bed holds the `flock` on its lock file) and
//! removing what a dead process left behind.

use super::*;

/// Parses the bed number out of our interface / netns names (`kkbr7`, `kkv7h3`, `kktb7-node3`).
pub(crate) fn bed_of_name(name: &str) -> Option<u8> {
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
pub(crate) fn destroy_bed_resources(num: u8, cg_parent: &Path) -> Result<(), Error> {
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
pub(crate) fn claim_bed(cgroot: &Path) -> Result<(u8, File), Error> {
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
