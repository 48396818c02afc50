//! The tables of medians and the targets with whether each holds.

use super::*;

pub(super) fn median(v: &[f64]) -> f64 {
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

pub(super) fn stat(v: &[f64], prec: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.p$} [{:.p$}–{:.p$}]", median(v), min, max, p = prec)
}

pub(super) type Results = BTreeMap<(usize, Tool, Mode), Vec<Sample>>;

pub(super) fn med(
    all: &Results,
    n: usize,
    tool: Tool,
    mode: Mode,
    f: fn(&Sample) -> f64,
) -> Option<f64> {
    let v = all.get(&(n, tool, mode))?;
    if v.is_empty() {
        return None;
    }
    Some(median(&v.iter().map(f).collect::<Vec<_>>()))
}

pub(super) fn table(n: usize, opts: &Opts, all: &Results) -> String {
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

pub(super) fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "HOLDS",
        Some(false) => "FAILS",
        None => "not measured",
    }
}

/// The targets, each with the figures it is judged on.
pub(super) fn targets(opts: &Opts, all: &Results) -> String {
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
