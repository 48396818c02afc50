//! "Back to a fresh test host": what a host is, for comparing it before an install and after
//! an uninstall — every file outside the logs and the virtual file systems (type and mode),
//! the content of /etc/hosts and /etc/fstab, the unit files with their state, the failed
//! units, the processes, the listening sockets, the links and addresses. Any difference is
//! printed, line by line, by the tests that use it.

use testbed::TestBed;

use super::sh;

/// The state of host `i` as sorted lines. Left out: /proc, /sys, /dev, /run, /tmp, /var/log,
/// /var/tmp, /var/cache, systemd's journal and random seed, the FAKE tools' own journal
/// (/var/lib/kk-fakes), the 127.0.1.1 line of /etc/hosts (the hostname kk set), the
/// processes of the SSH session that asks, and systemd-hostnamed (started on demand when kk
/// set the hostname, it exits by itself after 30 idle seconds: a fast run ends before).
pub fn state(bed: &TestBed, i: usize) -> Vec<String> {
    let out = sh(
        bed,
        i,
        r#"set -e
# kk's per-connection reaper (a `sleep 1` loop) outlives a run by up to a second.
i=0; while pgrep -x sleep >/dev/null && [ $i -lt 30 ]; do sleep 0.2; i=$((i+1)); done
find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
  -o -path /var/log -o -path /var/tmp -o -path /var/lib/kk-fakes -o -path /var/cache -o -path /var/lib/systemd/random-seed \
  -o -path /var/lib/systemd/journal \) -prune -o -printf 'file %p %y %m\n' | LC_ALL=C sort
for f in /etc/hosts /etc/fstab; do echo "content $f $(grep -Ev '^127[.]0[.]1[.]1[[:space:]]' $f | sha256sum | cut -c1-16)"; done
systemctl list-unit-files --no-legend --no-pager | awk '{ print "unit", $1, $2 }' | LC_ALL=C sort
systemctl list-units --failed --all --no-legend --plain --no-pager | awk '{ print "failed", $1 }'
ps -e -o comm= | grep -Ev '^(ps|sh|bash|sshd|sort|grep|awk|find|systemctl|sha256sum|cut|uniq|\(sd-pam\)|systemd-hostnam|kworker.*)$' | LC_ALL=C sort | uniq -c | awk '{ print "process", $2, "x" $1 }'
ss -Hlntu | awk '{ print "listen", $1, $5 }' | LC_ALL=C sort
ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link", $2 }'
ip -o addr show | awk '{ print "addr", $2, $4 }'
"#,
    );
    out.lines().map(str::to_string).collect()
}

/// For a difference's message: the host's /etc/hosts and processes.
pub fn detail(bed: &TestBed, i: usize) -> String {
    sh(
        bed,
        i,
        "echo '--- /etc/hosts'; cat /etc/hosts; echo '--- processes'; ps -eo pid,ppid,etimes,args",
    )
}

/// The lines only in `before` (-) or only in `after` (+).
pub fn diff(before: &[String], after: &[String]) -> Vec<String> {
    let (b, a): (std::collections::BTreeSet<_>, std::collections::BTreeSet<_>) =
        (before.iter().collect(), after.iter().collect());
    b.difference(&a)
        .map(|l| format!("- {}", l))
        .chain(a.difference(&b).map(|l| format!("+ {}", l)))
        .collect()
}

/// Every host of `names` whose state differs from `fresh` (same order), with the
/// differences and [`detail`]; empty when all are back to fresh.
pub fn differences(bed: &TestBed, names: &[&str], fresh: &[(usize, Vec<String>)]) -> String {
    let mut all = Vec::new();
    for (i, f) in fresh {
        let d = diff(f, &state(bed, *i));
        if !d.is_empty() {
            all.push(format!(
                "{} differs from its fresh state:\n{}\n{}",
                names[*i],
                d.join("\n"),
                detail(bed, *i)
            ));
        }
    }
    all.join("\n\n")
}
