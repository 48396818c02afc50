//! Measuring one run from the outside: wall time, CPU of the whole process tree
//! (daemonised ssh masters included) and peak PSS sampled from /proc.

use super::*;

pub(super) fn children_of(pid: i32) -> Vec<i32> {
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

/// Whether `child` still runs in `parent`'s memory (a vfork/posix_spawn child before its
/// exec: its smaps are the parent's, counted once already).
fn shares_memory(parent: i32, child: i32) -> bool {
    const KCMP_VM: libc::c_long = 1;
    // SAFETY: kcmp only compares two processes' kernel objects; no memory is passed.
    let r = unsafe { libc::syscall(libc::SYS_kcmp, parent, child, KCMP_VM, 0, 0) };
    r == 0
}

/// PSS and RSS (kB) of one process, from smaps_rollup.
pub(super) fn mem_of(pid: i32) -> (u64, u64) {
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

pub(super) fn cpu_children() -> f64 {
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
pub(super) fn measure_tree(cmd: &mut Command, log: &Path) -> Result<(Sample, bool), String> {
    let (sample, ok, _) = measure_tree_lines(cmd, log, |_| false)?;
    Ok((sample, ok))
}

/// Stdout lines with the time (seconds from the start) each was printed.
pub(super) type TimedLines = Vec<(f64, String)>;

/// [`measure_tree`], also returning the stdout lines `select` picks, each with the time
/// (seconds from the start) it was printed: stdout goes through a pipe read as it comes
/// (the flow benchmark times kk's plays by their `play_start` events).
pub(super) fn measure_tree_lines(
    cmd: &mut Command,
    log: &Path,
    select: impl Fn(&str) -> bool + Send + 'static,
) -> Result<(Sample, bool, TimedLines), String> {
    let me = std::process::id() as i32;
    // Our children before the run: the test bed's host processes, never touched here.
    let keep: HashSet<i32> = children_of(me).into_iter().collect();
    let out = fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(err);
    let own_rss = mem_of(me).1;
    let cpu0 = cpu_children();
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let reader = {
        let pipe = child.stdout.take().expect("piped stdout");
        let mut out = out;
        std::thread::spawn(move || {
            use std::io::{BufRead, Write};
            let mut kept = Vec::new();
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(out, "{line}");
                if select(&line) {
                    kept.push((t0.elapsed().as_secs_f64(), line));
                }
            }
            kept
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let stop = stop.clone();
        let keep = keep.clone();
        std::thread::spawn(move || {
            let (mut peak_pss, mut peak_rss) = (0u64, 0u64);
            // KK_BENCH_MEM_DETAIL=1: which processes made the peak (stderr at the end).
            let detail = std::env::var_os("KK_BENCH_MEM_DETAIL").is_some();
            let mut peak_by: Vec<(u64, String)> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let mut todo: Vec<i32> = children_of(me)
                    .into_iter()
                    .filter(|p| !keep.contains(p))
                    .collect();
                let (mut pss, mut rss) = (0u64, 0u64);
                let mut seen = HashSet::new();
                let mut by = Vec::new();
                while let Some(p) = todo.pop() {
                    if !seen.insert(p) {
                        continue;
                    }
                    let kids = children_of(p);
                    todo.extend(kids.iter().copied().filter(|&c| !shares_memory(p, c)));
                    let (a, b) = mem_of(p);
                    pss += a;
                    rss += b;
                    if detail {
                        let comm =
                            fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
                        by.push((a, format!("{} ({p})", comm.trim())));
                    }
                }
                if detail && pss > peak_pss {
                    by.sort_by(|a, b| b.cmp(a));
                    peak_by = by;
                }
                peak_pss = peak_pss.max(pss);
                peak_rss = peak_rss.max(rss);
                // Sampling costs CPU on a busy machine: at most a quarter of one core.
                let cost = t.elapsed();
                std::thread::sleep((cost * 3).max(Duration::from_millis(10)));
            }
            if detail {
                let top: Vec<String> = peak_by
                    .iter()
                    .take(8)
                    .map(|(kb, what)| format!("{what} {:.1} MB", *kb as f64 / 1024.0))
                    .collect();
                eprintln!("bench: peak PSS by process: {}", top.join(", "));
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
    let lines = reader.join().unwrap_or_default();
    // The child's max RSS counts its pages from before `exec` too (the fork of this
    // process, whose RSS grows with the artifacts the bench serves): it is only a floor
    // for a run too short for any sample, and only when above our own RSS.
    let main_rss = ru.ru_maxrss.max(0) as u64;
    if rss == 0 && main_rss > own_rss {
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
        lines,
    ))
}
