//! The test bed on real hosts: logins, sudo, hostnames, stop/cut/restore, parallel beds and
//! cleanup (also after a panic and after a killed process).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use testbed::TestBed;

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn start(n: usize) -> TestBed {
    match TestBed::start(n) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    }
}

fn port_open(bed: &TestBed, i: usize, timeout: Duration) -> bool {
    let h = &bed.hosts()[i];
    TcpStream::connect_timeout(&SocketAddr::from((h.ip, h.port)), timeout).is_ok()
}

/// Everything a bed leaves in the system, to check that it is all gone after drop.
fn traces(bed: &TestBed) -> Vec<String> {
    let mut v = vec![format!("link {}", bed.bridge_name())];
    for h in bed.hosts() {
        v.push(format!("netns {}", h.netns));
        v.push(format!("link {}", h.veth));
    }
    v.push(format!(
        "dir {}",
        bed.key_path().parent().unwrap().display()
    ));
    v
}

fn trace_exists(t: &str) -> bool {
    let (kind, name) = t.split_once(' ').unwrap();
    match kind {
        "link" => Path::new("/sys/class/net").join(name).exists(),
        "netns" => Path::new("/run/netns").join(name).exists(),
        "dir" => Path::new(name).exists(),
        _ => unreachable!(),
    }
}

fn cgroup_of(bed_dir: &Path) -> Vec<std::path::PathBuf> {
    let num = bed_dir.file_name().unwrap().to_string_lossy().into_owned();
    [
        "/sys/fs/cgroup/kk-testbed",
        "/sys/fs/cgroup/unified/kk-testbed",
    ]
    .iter()
    .map(|p| Path::new(p).join(&num))
    .collect()
}

#[test]
fn three_hosts_logins_sudo_and_hostnames() {
    let t = Instant::now();
    let bed = start(3);
    println!("booted 3 hosts in {:.2} s", t.elapsed().as_secs_f64());
    assert_eq!(bed.hosts().len(), 3);
    for (i, h) in bed.hosts().iter().enumerate() {
        assert_eq!(h.name, format!("node{}", i + 1));
        assert_eq!(h.port, 22);
        assert_eq!(h.user, "kk");
        assert_eq!(h.user_password, "kkpass");
        assert_eq!(h.sudo_needs_password, i == 0);
        // root by key; hostname and systemd state
        let out = bed.ssh(
            i,
            "hostname; cat /etc/hostname; id -un; systemctl is-system-running; ps -p 1 -o comm=",
        );
        assert!(out.status.success(), "{}", show(&out));
        let lines: Vec<String> = text(&out).lines().map(String::from).collect();
        assert_eq!(lines[0], h.name);
        assert_eq!(lines[1], h.name);
        assert_eq!(lines[2], "root");
        assert!(lines[3] == "running" || lines[3] == "degraded", "{lines:?}");
        assert_eq!(lines[4], "systemd");
        // its address is on eth0 and its OS is Debian 12
        let out = bed.ssh(
            i,
            "ip -4 -o addr show eth0; . /etc/os-release; echo $ID $VERSION_ID",
        );
        assert!(
            text(&out).contains(&format!("inet {}/24", h.ip)),
            "{}",
            show(&out)
        );
        assert!(text(&out).ends_with("debian 12"), "{}", show(&out));
        // kk by key
        let out = bed.ssh_user(i, "id -un");
        assert_eq!(text(&out), "kk", "{}", show(&out));
    }
    // kk by password; sudo without password on node2, with password on node1
    let out = bed.ssh_user_password(1, "id -un && sudo -n true && sudo -n id -u");
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(text(&out), "kk\n0");
    let out = bed.ssh_user_password(0, "sudo -n true");
    assert!(
        !out.status.success(),
        "sudo -n must need a password on node1: {}",
        show(&out)
    );
    let out = bed.ssh_user_password(0, "echo kkpass | sudo -S -p '' id -u");
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(text(&out), "0");
    let out = bed.ssh_user_password(0, "echo wrong | sudo -S -p '' true");
    assert!(
        !out.status.success(),
        "a wrong sudo password must fail: {}",
        show(&out)
    );
    // root cannot log in by password
    let h = &bed.hosts()[0];
    let out = Command::new("sshpass")
        .env("SSHPASS", "kkpass")
        .args([
            "-e",
            "ssh",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "PubkeyAuthentication=no", "-o", "ConnectTimeout=5"])
        .arg(format!("root@{}", h.ip))
        .arg("true")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", show(&out));

    // distinct host keys, and each host presents its own
    let keys: std::collections::BTreeSet<_> = bed
        .hosts()
        .iter()
        .map(|h| h.host_public_key.clone())
        .collect();
    assert_eq!(keys.len(), 3);
    let out = bed
        .exec(2, "cat /etc/ssh/ssh_host_ed25519_key.pub")
        .unwrap();
    assert_eq!(text(&out), bed.hosts()[2].host_public_key);

    // hosts see each other by name, and nothing routes beyond the bridge
    let out = bed.ssh(
        0,
        "getent hosts node3 && timeout 5 bash -c '</dev/tcp/node3/22' && echo reach",
    );
    assert!(text(&out).ends_with("reach"), "{}", show(&out));
    let out = Command::new("ip")
        .args(["route", "get", "203.0.113.1", "from"])
        .arg(bed.hosts()[0].ip.to_string())
        .args(["iif", bed.bridge_name()])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "traffic from the bed must not be forwarded: {}",
        show(&out)
    );

    // login counting without SSH
    let before = bed.accepted_ssh_logins(2).unwrap();
    let _ = bed.ssh(2, "true");
    let _ = bed.ssh_user(2, "true");
    let after = bed.accepted_ssh_logins(2).unwrap();
    assert_eq!(after, before + 2, "{}", bed.journal(2, "-t sshd").unwrap());
    let journal = bed.journal(2, "-u ssh").unwrap();
    assert!(journal.contains("Accepted publickey for root"), "{journal}");

    // inventories
    let inv = bed.inventory_yaml();
    assert!(inv.contains("kind: Inventory"));
    for h in bed.hosts() {
        assert!(inv.contains(&format!("    {}:\n      connector:\n        type: ssh\n        host: {}\n        port: 22\n        user: root\n        private_key: {}\n", h.name, h.ip, h.root_key_path.display())), "{inv}");
    }
    let ans = bed.inventory_ansible_yaml();
    assert!(ans.starts_with("all:\n  hosts:\n    node1:\n"), "{ans}");
    assert!(ans.contains(&format!("ansible_host: {}", bed.hosts()[2].ip)));
}

#[test]
fn stop_host_makes_it_unreachable_and_start_host_brings_it_back() {
    let bed = start(2);
    let out = bed.ssh(1, "echo kept > /root/marker");
    assert!(out.status.success(), "{}", show(&out));
    bed.stop_host(1).unwrap();
    assert!(!port_open(&bed, 1, Duration::from_secs(2)));
    let out = bed.ssh(1, "true");
    assert_eq!(out.status.code(), Some(255), "{}", show(&out));
    assert!(bed.exec(1, "true").is_err());
    // the other host is unaffected
    assert!(bed.ssh(0, "true").status.success());
    // stopping twice is harmless; starting again keeps the disk
    bed.stop_host(1).unwrap();
    bed.start_host(1).unwrap();
    let out = bed.ssh(1, "cat /root/marker; hostname");
    assert_eq!(text(&out), "kept\nnode2", "{}", show(&out));
}

#[test]
fn cut_and_restore_host() {
    let bed = start(2);
    assert!(port_open(&bed, 0, Duration::from_secs(2)));
    bed.cut_host(0).unwrap();
    let t = Instant::now();
    assert!(!port_open(&bed, 0, Duration::from_secs(1)));
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "a cut host must time out, not refuse"
    );
    assert!(
        port_open(&bed, 1, Duration::from_secs(2)),
        "only host 0 is cut"
    );
    // the host itself keeps running
    let out = bed.exec(0, "systemctl is-active ssh").unwrap();
    assert_eq!(text(&out), "active");
    bed.restore_host(0).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !port_open(&bed, 0, Duration::from_secs(1)) {
        assert!(
            Instant::now() < deadline,
            "host 0 did not come back after restore"
        );
    }
    assert_eq!(text(&bed.ssh(0, "hostname")), "node1");
}

#[test]
fn two_beds_at_once_do_not_collide() {
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| start(2));
        let b = s.spawn(|| start(2));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_ne!(a.bridge_name(), b.bridge_name());
    assert_ne!(a.subnet(), b.subnet());
    assert_ne!(a.key_path(), b.key_path());
    for i in 0..2 {
        assert_ne!(a.hosts()[i].ip, b.hosts()[i].ip);
        assert_ne!(a.hosts()[i].netns, b.hosts()[i].netns);
        assert_ne!(a.hosts()[i].veth, b.hosts()[i].veth);
        assert_eq!(text(&a.ssh(i, "hostname")), a.hosts()[i].name);
        assert_eq!(text(&b.ssh(i, "hostname")), b.hosts()[i].name);
    }
    // stopping a host in one bed leaves the other bed's same-named host alone
    a.stop_host(0).unwrap();
    assert!(b.ssh(0, "true").status.success());
    // services of one host are not another's: restarting sshd on b/node2 leaves a/node2
    let out = b.ssh(1, "systemctl restart ssh");
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        text(&a.exec(1, "systemctl is-active ssh").unwrap()),
        "active"
    );
    let out = a
        .exec(1, "systemctl show -p MainPID --value ssh; pgrep -c sshd")
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
}

#[test]
fn drop_leaves_nothing_behind_also_after_a_panic() {
    let bed = start(2);
    let t = traces(&bed);
    let cgs = cgroup_of(bed.key_path().parent().unwrap());
    assert!(t.iter().all(|x| trace_exists(x)), "{t:?}");
    drop(bed);
    for x in &t {
        assert!(!trace_exists(x), "{x} is still there after drop");
    }
    assert!(cgs.iter().all(|c| !c.exists()), "{cgs:?}");

    let mut seen = Vec::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let bed = start(1);
        seen = traces(&bed);
        panic!("test failure inside a bed");
    }));
    assert!(r.is_err());
    assert!(!seen.is_empty());
    for x in &seen {
        assert!(!trace_exists(x), "{x} is still there after a panic");
    }
}

/// Not a check by itself: the child-process entry point of the next test (it does
/// nothing unless `KK_TESTBED_HOLD` is set), which boots a bed, says which, and waits
/// to be killed.
#[test]
fn helper_hold_a_bed() {
    if std::env::var_os("KK_TESTBED_HOLD").is_none() {
        return;
    }
    let bed = start(1);
    println!("BED {}", traces(&bed).join(","));
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn leftovers_of_a_killed_process_are_removed() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "helper_hold_a_bed",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("KK_TESTBED_HOLD", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(pos) = line.find("BED ") {
            seen = line[pos + 4..].split(',').map(String::from).collect();
            break;
        }
    }
    assert!(!seen.is_empty(), "the helper did not start a bed");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        seen.iter().all(|x| trace_exists(x)),
        "a killed bed stays until the next start"
    );
    // The next bed started anywhere removes it.
    let bed = start(1);
    for x in &seen {
        assert!(!trace_exists(x), "{x} of the killed process is still there");
    }
    assert!(bed.ssh(0, "true").status.success());
}

#[test]
fn bad_requests_are_errors() {
    let e = TestBed::start(0).err().unwrap();
    assert!(e.to_string().contains("1 to 200"), "{e}");
    let bed = start(1);
    assert!(bed.stop_host(5).is_err());
    assert!(bed.cut_host(5).is_err());
    assert_eq!(bed.ssh(5, "true").status.code(), Some(255));
}
