//! `playbooks/init_os.yaml` (role `native`) on three real test hosts: hostnames, the
//! hosts block, kernel modules, sysctl, limits, fstab, sudo's secure_path; a second run
//! changes nothing; a value the kernel refuses fails with a message naming the key.
//!
//! The test hosts are network namespaces sharing this machine's kernel: kernel-global
//! sysctls (vm.*, fs.*, kernel.*, the neighbour table limits) would change the CI machine,
//! so the config leaves them alone (`native.sysctl_skip`) and the test checks that this
//! machine's values did not move. Time sync is off (chrony could step the shared clock).

use crate::common;

use std::collections::BTreeMap;

use common::{sh, Project, Run};
use testbed::TestBed;

/// Inventory names the hosts get (they boot as node1..node3, so every hostname changes).
/// The first is a dotted name, the last has no internal_ipv4 (the default route's address
/// is used).
const NAMES: [&str; 3] = ["kk-cp1.kk.test", "kk-w1", "kk-w2"];

/// Kernel-global parameters whose values on this machine must not change.
const GLOBAL_SYSCTLS: [&str; 5] = [
    "vm.swappiness",
    "vm.max_map_count",
    "fs.inotify.max_user_instances",
    "kernel.pid_max",
    "net.ipv4.neigh.default.gc_thresh1",
];

/// native.kernel_modules by default.
const MODULES: [&str; 7] = [
    "br_netfilter",
    "overlay",
    "ip_vs",
    "ip_vs_rr",
    "ip_vs_wrr",
    "ip_vs_sh",
    "nf_conntrack",
];

/// The parameters checked on the hosts after the run (all per network namespace).
const NET_SYSCTLS: [(&str, &str); 7] = [
    ("net.ipv4.ip_forward", "1"),
    ("net.bridge.bridge-nf-call-iptables", "1"),
    ("net.bridge.bridge-nf-call-arptables", "1"),
    ("net.ipv4.conf.all.rp_filter", "1"),
    ("net.ipv4.ip_local_reserved_ports", "30000-32767"),
    ("net.ipv4.tcp_tw_reuse", "0"),
    ("net.core.somaxconn", "32768"),
];

fn inventory(bed: &TestBed) -> String {
    let mut s = String::from("apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata:\n  name: native\nspec:\n  hosts:\n");
    for (i, h) in bed.hosts().iter().enumerate() {
        s.push_str(&format!(
            "    {}:\n      connector:\n        type: ssh\n        host: {}\n        port: {}\n        user: root\n        private_key: {:?}\n",
            NAMES[i],
            h.ip,
            h.port,
            h.root_key_path.to_string_lossy()
        ));
        if i < 2 {
            s.push_str(&format!("      internal_ipv4: {}\n", h.ip));
        }
    }
    s.push_str(&format!(
        "  groups:\n    kube_control_plane:\n      hosts: [{a}]\n    kube_worker:\n      hosts: [{b}, {c}]\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    etcd:\n      hosts: [{a}]\n",
        a = NAMES[0],
        b = NAMES[1],
        c = NAMES[2]
    ));
    s
}

/// The config: no time sync, no kernel-global sysctls, and swap left alone when this
/// machine has swap (`swapoff -a` in a host would turn off the machine's own).
fn config() -> String {
    config_with("    ntp:\n      enabled: false\n")
}

/// [`config`] with other `native` keys (indented four spaces).
fn config_with(native: &str) -> String {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let machine_has_swap = swaps.lines().count() > 1;
    format!(
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  native:\n    disable_swap: {}\n    sysctl_skip: [vm., fs., kernel., net.core.rmem_max, net.core.wmem_max, net.ipv4.neigh., net.ipv6.neigh.]\n{}",
        !machine_has_swap, native
    )
}

fn machine_sysctls() -> BTreeMap<&'static str, String> {
    GLOBAL_SYSCTLS
        .iter()
        .map(|k| {
            let path = format!("/proc/sys/{}", k.replace('.', "/"));
            (*k, std::fs::read_to_string(path).unwrap_or_default())
        })
        .collect()
}

/// `kk init os` (the bundled playbooks/init_os.yaml) with the project's inventory and config.
fn init_os(p: &Project, extra: &[&str]) -> Run {
    p.kk_flow(&["init", "os"], extra)
}

/// What the checks read from host `i`, in one SSH login: sections `@name` → text.
/// Kernel modules show as `@module <m>` → `yes` when loaded or built in.
fn host_state(bed: &TestBed, i: usize) -> BTreeMap<String, String> {
    let mut cmd = String::from(
        "for f in /etc/hostname /etc/hosts /etc/sysctl.d/99-kubekey.conf /etc/modules-load.d/kubekey.conf \
           /etc/security/limits.d/99-kubekey.conf /etc/fstab; do echo \"@$f\"; cat \"$f\"; done
         echo @hostname; hostname
         echo @sudo; grep secure_path /etc/sudoers; visudo -c >/dev/null && echo visudo-ok
         echo @getent; getent hosts kk-cp1.kk.test.kubekey kk-w1 kk-w2
         ",
    );
    for (k, _) in NET_SYSCTLS {
        cmd.push_str(&format!("echo '@sysctl {k}'; sysctl -n {k}\n"));
    }
    for m in MODULES {
        let probe = match m {
            "br_netfilter" => " || [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]",
            "ip_vs" => " || [ -e /proc/net/ip_vs ]",
            _ => "",
        };
        cmd.push_str(&format!(
            "echo '@module {m}'; if grep -q '^{m} ' /proc/modules 2>/dev/null || [ -d /sys/module/{m} ]{probe}; then echo yes; else echo no; fi\n"
        ));
    }
    let out = sh(bed, i, &cmd);
    let mut map = BTreeMap::new();
    let mut key = String::new();
    for line in out.lines() {
        if let Some(k) = line.strip_prefix('@') {
            key = k.to_string();
            map.insert(key.clone(), String::new());
        } else if let Some(v) = map.get_mut(&key) {
            v.push_str(line);
            v.push('\n');
        }
    }
    map
}

#[test]
fn init_os_prepares_three_hosts_and_a_second_run_changes_nothing() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let p = Project::new();
    p.file("inventory.yaml", &inventory(&bed))
        .file("config.yaml", &config());
    for i in 0..3 {
        // A swap line to comment out (never swapped on), and a secure_path without
        // /usr/local/bin for native/root to fix.
        sh(&bed, i, "echo '/swapfile none swap sw 0 0' >> /etc/fstab");
        sh(
            &bed,
            i,
            "sed -i 's|/usr/local/bin:||' /etc/sudoers && ! grep -q /usr/local/bin /etc/sudoers",
        );
    }
    let before = machine_sysctls();

    // Check mode (limited to the nodes: the controller play writes certificates) reports
    // changes and makes none.
    let limit = NAMES.join(",");
    let check = init_os(&p, &["-C", "-l", &limit]);
    check.code(0);
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(check.recap(name)["failed"], 0, "{}", check.describe());
        assert_ne!(check.recap(name)["changed"], 0, "{}", check.describe());
        assert_eq!(
            sh(&bed, i, "hostname; sysctl -n net.ipv4.ip_forward; ls /etc/sysctl.d/99-kubekey.conf 2>&1 || true; grep -c kubekey /etc/hosts || true"),
            format!("node{}\n0\nls: cannot access '/etc/sysctl.d/99-kubekey.conf': No such file or directory\n0", i + 1),
            "check mode changed {}",
            name
        );
    }

    let r = init_os(&p, &[]);
    r.code(0);
    let ips: Vec<String> = bed.hosts().iter().map(|h| h.ip.to_string()).collect();
    let want_block: String = (0..3)
        .map(|i| {
            let n = NAMES[i];
            format!("{} {n} {n}.kubekey {n}.kubekey.cluster.local\n", ips[i])
        })
        .collect();
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(r.recap(name)["failed"], 0, "{}", r.describe());
        let st = host_state(&bed, i);
        let get = |k: &str| {
            st.get(k)
                .cloned()
                .unwrap_or_else(|| panic!("no {} on {}: {:?}", k, name, st))
        };
        assert_eq!(get("hostname"), format!("{name}\n"));
        assert_eq!(get("/etc/hostname"), format!("{name}\n"));
        // The hosts block, exactly; the names resolve (on a node its own name resolves to
        // 127.0.1.1 first, Debian's convention, so look for the other nodes' addresses).
        let hosts = get("/etc/hosts");
        let block = hosts
            .split("# kubekey hosts BEGIN\n")
            .nth(1)
            .and_then(|rest| rest.split("# kubekey hosts END").next())
            .unwrap_or_else(|| panic!("no kubekey hosts block on {}:\n{}", name, hosts));
        assert_eq!(block, want_block, "hosts block on {}", name);
        // The control plane node (the init node) resolves the endpoint to itself; the
        // workers (endpoint type local) to it.
        let endpoint = if i == 0 {
            "127.0.0.1 lb.kubesphere.local\n::1 lb.kubesphere.local\n".to_string()
        } else {
            format!("{} lb.kubesphere.local\n", ips[0])
        };
        assert!(
            hosts.contains(&format!(
                "# kubekey kubernetes control_plane_endpoint BEGIN\n{endpoint}# kubekey kubernetes control_plane_endpoint END\n"
            )),
            "control plane endpoint on {}:\n{}",
            name,
            hosts
        );
        let short = name.split('.').next().unwrap();
        let own = if short == *name {
            format!("127.0.1.1 {name}\n")
        } else {
            format!("127.0.1.1 {name} {short}\n")
        };
        assert!(
            hosts.contains(&own),
            "127.0.1.1 line on {}:\n{}",
            name,
            hosts
        );
        let getent = get("getent");
        for j in (0..3).filter(|j| *j != i) {
            assert!(
                getent
                    .lines()
                    .any(|l| l.starts_with(&format!("{} ", ips[j])) && l.contains(NAMES[j])),
                "{} resolves {}: {}",
                name,
                NAMES[j],
                getent
            );
        }
        // Sysctl: applied now, persisted, nothing kernel-global in the file.
        let conf = get("/etc/sysctl.d/99-kubekey.conf");
        for (k, v) in NET_SYSCTLS {
            assert_eq!(
                get(&format!("sysctl {k}")),
                format!("{v}\n"),
                "{} on {}",
                k,
                name
            );
            assert!(
                conf.contains(&format!("{} = {}\n", k, v)),
                "{} missing:\n{}",
                k,
                conf
            );
        }
        for l in conf.lines().filter(|l| !l.starts_with('#')) {
            assert!(l.starts_with("net."), "only net.* keys here: {}", l);
        }
        // Kernel modules: what the role reports matches what the host shows, and the
        // boot-time list holds exactly the modules this kernel has.
        let states = r.result("Init | Record the kernel module states", name)["result"]
            ["ansible_facts"]["native_kernel_modules"]
            .clone();
        let mut at_boot = Vec::new();
        for m in MODULES {
            let s = states[m]
                .as_str()
                .unwrap_or_else(|| panic!("no state of {} in {}", m, states));
            assert!(
                ["loaded", "builtin", "loaded-now", "unavailable"].contains(&s),
                "{} {}",
                m,
                s
            );
            let present = get(&format!("module {m}")) == "yes\n";
            assert_eq!(
                present,
                s != "unavailable",
                "module {} reported {} on {}",
                m,
                s,
                name
            );
            if s != "unavailable" {
                at_boot.push(m);
            }
        }
        assert_ne!(states["br_netfilter"], "unavailable");
        let modules = get("/etc/modules-load.d/kubekey.conf");
        assert_eq!(
            modules
                .lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>(),
            at_boot
        );
        // Limits, fstab, sudo.
        assert!(get("/etc/security/limits.d/99-kubekey.conf").contains("* soft nofile 1048576\n"));
        if config().contains("disable_swap: true") {
            let fstab = get("/etc/fstab");
            assert!(fstab.contains("#/swapfile none swap sw 0 0"), "{}", fstab);
        }
        let sudo = get("sudo");
        assert!(
            sudo.contains(":/usr/local/bin\"") && sudo.contains("visudo-ok"),
            "{}",
            sudo
        );
    }
    // The controller play made the cluster's CA (role certs/init).
    assert!(p.path("wd/pki/root.crt").is_file(), "no CA in wd/pki");
    assert_eq!(
        before,
        machine_sysctls(),
        "this machine's kernel-global sysctls moved"
    );

    // Second run: nothing to do anywhere.
    let again = init_os(&p, &[]);
    again.code(0);
    for name in NAMES {
        assert_eq!(
            again.recap(name)["changed"],
            0,
            "second run must change nothing on {}:\n{}",
            name,
            again
                .events()
                .iter()
                .filter(|e| e["status"] == "changed")
                .map(|e| format!("{} on {}\n", e["task"], e["host"]))
                .collect::<String>()
        );
    }

    // A value the kernel refuses fails the host with a message naming key and variables.
    let bad = init_os(
        &p,
        &[
            "-e",
            r#"{"native": {"sysctl_ipv4": {"net.ipv4.ip_local_reserved_ports": "not-ports"}}}"#,
        ],
    );
    bad.code(2);
    let fail = bad.result(
        "Sysctl | Fail on kernel parameters that were refused",
        NAMES[1],
    );
    assert_eq!(fail["status"], "failed");
    let msg = fail["result"]["msg"].as_str().unwrap_or_default();
    for want in [
        "kk-w1: the kernel refused to set net.ipv4.ip_local_reserved_ports",
        "wanted not-ports, still 30000-32767",
        "native.sysctl_ipv4",
    ] {
        assert!(msg.contains(want), "{:?} not in {:?}", want, msg);
    }
    assert_eq!(
        sh(&bed, 1, "sysctl -n net.ipv4.ip_local_reserved_ports"),
        "30000-32767"
    );
}

/// Time sync with a FAKE chronyd (a shell script that sleeps; a real chronyd in a test host
/// could step this machine's clock): first chrony is missing and the run says so, then
/// the fake is installed as `chrony.service` and the run writes chrony.conf (inventory
/// names resolved to addresses, the node itself left out, the distribution's sources
/// commented out) and restarts it; a second run changes nothing.
#[test]
fn ntp_configures_chrony_only_where_it_is_installed() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let p = Project::new();
    p.file(
        "inventory.yaml",
        // (An etcd group too: certs/init needs one.)
        &(bed.inventory_yaml().replace("    testbed:\n", "    k8s_cluster:\n")
            + "    etcd:\n      hosts: [node1]\n"),
    )
    .file(
        "config.yaml",
        &config_with(
            "    chrony_package: \"\"\n    ntp:\n      enabled: true\n      servers: [node1, ntp.example.org]\n",
        ),
    );
    for i in 0..2 {
        let real = bed.ssh(i, "command -v chronyd");
        assert!(
            !real.status.success(),
            "the test hosts now have a real chronyd; this test would start it and it can step \
             the shared clock: give it a fake path instead"
        );
    }
    // (Regression: a command the remote shell cannot find exits 127 over SSH; that is the
    // command's status, not a lost connection. The `defaults` probes rely on it. The
    // `command` module then reports what ansible-core's does for a program that cannot
    // start: rc 2, the errno, with "Error executing command.".)
    p.file(
        "missing.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: missing\n      command: kk-no-such-command --version\n      failed_when: false\n",
    );
    let missing = p.kk(&[
        "run",
        "missing.yaml",
        "-i",
        "inventory.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ]);
    missing.code(0);
    let res = missing.result("missing", "node1");
    assert_ne!(res["status"], "unreachable", "{}", res);
    assert_eq!(res["result"]["rc"], 2, "{}", res);
    assert_eq!(res["result"]["msg"], "Error executing command.", "{}", res);

    let r = init_os(&p, &[]);
    r.code(0);
    for h in ["node1", "node2"] {
        let msg = r.msg("NTP | Say that chrony is missing", h);
        assert!(
            msg.as_str().unwrap_or_default().contains(&format!(
                "{h}: chrony is not installed, so time sync is not configured"
            )),
            "{}",
            msg
        );
    }
    for i in 0..2 {
        sh(
            &bed,
            i,
            "mkdir -p /etc/chrony \
             && printf '#!/bin/sh\\n# FAKE chronyd for a test: never touches the clock\\nexec sleep infinity\\n' > /usr/local/sbin/chronyd \
             && chmod 755 /usr/local/sbin/chronyd \
             && printf '# distribution default\\npool 2.debian.pool.ntp.org iburst\\nserver 192.0.2.1 iburst\\nmakestep 1 3\\n' > /etc/chrony/chrony.conf \
             && printf '[Service]\\nExecStart=/usr/local/sbin/chronyd\\n[Install]\\nWantedBy=multi-user.target\\n' > /etc/systemd/system/chrony.service \
             && systemctl daemon-reload",
        );
    }
    let r = init_os(&p, &[]);
    r.code(0);
    let node1_ip = bed.hosts()[0].ip.to_string();
    for (i, h) in ["node1", "node2"].iter().enumerate() {
        assert_eq!(
            r.status("NTP | Restart chrony for the new configuration", h),
            "changed"
        );
        let conf = sh(&bed, i, "cat /etc/chrony/chrony.conf");
        let servers = if i == 0 {
            "# node1 is this node: it serves its own clock (local stratum)\n".to_string()
        } else {
            format!("server {node1_ip} iburst\n")
        };
        let want = format!(
            "# distribution default\n#pool 2.debian.pool.ntp.org iburst\n#server 192.0.2.1 iburst\nmakestep 1 3\n\
             # kubekey ntp BEGIN\n{servers}server ntp.example.org iburst\nallow 0.0.0.0/0\nallow ::/0\nlocal stratum 10\n# kubekey ntp END"
        );
        assert_eq!(conf, want, "chrony.conf on {}", h);
        assert_eq!(
            sh(
                &bed,
                i,
                "systemctl is-active chrony; systemctl is-enabled chrony"
            ),
            "active\nenabled"
        );
    }
    let again = init_os(&p, &[]);
    again.code(0);
    for h in ["node1", "node2"] {
        assert_eq!(again.recap(h)["changed"], 0, "{}", again.describe());
    }
}
