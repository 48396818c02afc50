//! Facts parsing on captured script output (Debian, Ubuntu, Rocky, openEuler, busybox)
//! and on this machine's own.

use super::distro::{parse_distro_release_content, shlex_split};
use super::hardware::bytes_to_human;
use super::kk_names::normalize_arch;
use super::system::split_non_posix;

use std::collections::BTreeSet;

use super::*;

const DEBIAN: &str = include_str!("../../../../tests/fixtures/facts/debian12-vm.txt");
const MINIMAL: &str = include_str!("../../../../tests/fixtures/facts/busybox-minimal.txt");

/// Builds script output from `(path, content)` files plus extra raw sections.
fn output(sections: &str, files: &[(&str, &str)]) -> String {
    let mut s = String::from(sections);
    s.push_str("\n==kk:files\n");
    for (path, content) in files {
        for line in content.lines() {
            s.push_str(&format!("{path}:{line}\n"));
        }
    }
    s.push_str("==kk:end\n");
    s
}

#[test]
fn debian_fixture_kk_names() {
    let f = parse(DEBIAN);
    assert_eq!(f["hostname"], "vm");
    let os = &f["os"];
    assert_eq!(os["id"], "debian");
    assert_eq!(os["version_id"], "12");
    assert_eq!(os["pretty_name"], "Debian GNU/Linux 12 (bookworm)");
    assert_eq!(os["architecture"], "amd64");
    assert_eq!(os["architecture_raw"], "x86_64");
    assert_eq!(os["kernel_version"], "6.18.44-fc-v595");
    assert_eq!(os["release"]["VERSION_CODENAME"], "bookworm");
    assert_eq!(f["memory"]["total_mb"], 24105);
    assert!(f["memory"]["available_mb"].is_u64());
    assert_eq!(f["cpu"]["count"], 2);
    assert_eq!(f["cpu"]["model"], "Intel(R) Xeon(R) Processor");
    let net = &f["network"];
    assert_eq!(
        net["default_ipv4"],
        json!({"interface": "eth0", "address": "192.0.2.2", "gateway": "192.0.2.1"})
    );
    assert_eq!(
        net["default_ipv6"],
        json!({"interface": "eth0", "address": "fd00::2", "gateway": "fd00::1"})
    );
    assert_eq!(
        net["interfaces"]["eth0"],
        json!({"ipv4": ["192.0.2.2"], "ipv6": ["fd00::2", "fe80::fc:ff:fe00:1"], "mac": "02:fc:00:00:00:01", "mtu": 1400, "up": true})
    );
    assert_eq!(net["interfaces"]["ifb0"]["up"], false);
    assert_eq!(
        f["disks"]["vda"],
        json!({"size_bytes": 274877906944u64, "rotational": true, "removable": false})
    );
    assert_eq!(f["init"], "process_api");
    assert!(f["kernel_modules"].as_array().is_some());
}

#[test]
fn debian_fixture_ansible_names() {
    let f = parse(DEBIAN);
    // Values as `ansible localhost -m setup` (ansible-core 2.19) printed on the same machine.
    let parts = [
        json!({
            "distribution": "Debian", "distribution_version": "12.11", "distribution_major_version": "12",
            "distribution_minor_version": "11", "distribution_release": "bookworm", "os_family": "Debian",
            "distribution_file_path": "/etc/os-release", "distribution_file_variety": "Debian",
            "distribution_file_parsed": true,
            "system": "Linux", "kernel": "6.18.44-fc-v595", "kernel_version": "#1 SMP PREEMPT_DYNAMIC @0",
            "architecture": "x86_64", "machine": "x86_64", "hostname": "vm", "nodename": "vm", "fqdn": "localhost",
            "domain": "", "memtotal_mb": 24105, "swaptotal_mb": 0, "processor_vcpus": 2, "processor_count": 1,
            "processor_cores": 2, "processor_threads_per_core": 1, "processor_nproc": 2,
            "processor": ["0", "GenuineIntel", "Intel(R) Xeon(R) Processor", "1", "GenuineIntel", "Intel(R) Xeon(R) Processor"],
        }),
        json!({
            "default_ipv4": {"address": "192.0.2.2", "alias": "eth0", "broadcast": "192.0.2.255", "gateway": "192.0.2.1",
                "interface": "eth0", "macaddress": "02:fc:00:00:00:01", "mtu": 1400, "netmask": "255.255.255.0",
                "network": "192.0.2.0", "prefix": "24", "type": "ether"},
            "default_ipv6": {"address": "fd00::2", "gateway": "fd00::1", "interface": "eth0",
                "macaddress": "02:fc:00:00:00:01", "mtu": 1400, "prefix": "64", "scope": "global", "type": "ether"},
            "all_ipv4_addresses": ["192.0.2.2"], "all_ipv6_addresses": ["fd00::2", "fe80::fc:ff:fe00:1"],
            "interfaces": ["ifb0", "ifb1", "lo", "eth0"],
        }),
        json!({
            "eth0": {"active": true, "device": "eth0", "ipv4": {"address": "192.0.2.2", "broadcast": "192.0.2.255",
                "netmask": "255.255.255.0", "network": "192.0.2.0", "prefix": "24"},
                "ipv6": [{"address": "fd00::2", "prefix": "64", "scope": "global"},
                         {"address": "fe80::fc:ff:fe00:1", "prefix": "64", "scope": "link"}],
                "macaddress": "02:fc:00:00:00:01", "mtu": 1400, "pciid": "virtio2", "promisc": false, "speed": -1, "type": "ether"},
        }),
        json!({
            "lo": {"active": true, "device": "lo", "ipv4": {"address": "127.0.0.1", "broadcast": "", "netmask": "255.0.0.0",
                "network": "127.0.0.0", "prefix": "8"}, "ipv6": [{"address": "::1", "prefix": "128", "scope": "host"}],
                "mtu": 65536, "promisc": false, "type": "loopback"},
        }),
        json!({
            "service_mgr": "process_api", "pkg_mgr": "apt", "user_id": "root", "user_uid": 0, "user_gid": 0,
            "user_dir": "/root", "user_shell": "/bin/bash", "selinux": {"status": "disabled"},
            "apparmor": {"status": "disabled"}, "fips": false, "dns": {"nameservers": ["10.255.255.53"]},
        }),
        json!({
            "lsb": {"codename": "bookworm", "description": "Debian GNU/Linux 12 (bookworm)", "id": "Debian",
                "major_release": "12", "release": "12"},
            "machine_id": "3d1219c7c4c5404aaa1f6d2a48adfda4", "bios_vendor": "NA", "product_name": "NA",
        }),
    ];
    for (k, v) in parts.iter().flat_map(|p| p.as_object().unwrap()) {
        assert_eq!(&f["ansible_facts"][k], v, "ansible_facts.{k}");
        assert_eq!(&f[&format!("ansible_{k}")], v, "ansible_{k}");
    }
    assert!(f["ansible_uptime_seconds"].is_u64());
    assert!(f["ansible_memfree_mb"].is_u64());
    assert_eq!(f["ansible_devices"]["vda"]["size"], "256.00 GB");
    assert_eq!(
        f["ansible_proc_cmdline"]["root"],
        "UUID=0b1d7e51-6a3c-4a8e-9f53-0c5e8d2d6c1e"
    );
    assert_eq!(f["module_setup"], true);
    // No Python on the host for kk: the documented shape, values null.
    assert!(f["ansible_python"]["executable"].is_null());
    assert!(f["ansible_python"]["version"]["major"].is_null());
    // ansible_facts keys are sorted; the prefixed copies follow the kk names.
    let keys: Vec<&String> = f["ansible_facts"].as_object().unwrap().keys().collect();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort();
    assert_eq!(keys, sorted_keys);
}

#[test]
fn minimal_busybox_host() {
    let f = parse(MINIMAL);
    let a = &f["ansible_facts"];
    assert_eq!(a["distribution"], "Alpine");
    assert_eq!(a["distribution_version"], "3.19.1");
    assert_eq!(a["distribution_major_version"], "3");
    assert_eq!(a["distribution_release"], "NA");
    assert_eq!(a["os_family"], "Alpine");
    assert_eq!(a["service_mgr"], "openrc");
    assert_eq!(a["pkg_mgr"], "apk");
    assert_eq!(a["architecture"], "aarch64");
    assert_eq!(f["os"]["architecture"], "arm64");
    assert_eq!(a["fqdn"], "alpine1");
    assert_eq!(a["processor"], json!(["0", "1"]));
    assert_eq!(
        (
            &a["processor_count"],
            &a["processor_cores"],
            &a["processor_vcpus"]
        ),
        (&json!(2), &json!(1), &json!(2))
    );
    assert_eq!(a["user_id"], "nobody");
    assert!(a.get("user_uid").is_none());
    assert_eq!(a["real_user_id"], 65534);
    assert_eq!(a["memtotal_mb"], 1987);
    assert_eq!(
        f["memory"],
        json!({"total_mb": 1987, "available_mb": 1840, "free_mb": 1662, "swap_total_mb": 1023})
    );
    assert_eq!(a["lsb"], json!({}));
    assert_eq!(
        a["proc_cmdline"]["modules"],
        json!(["sd-mod", "usb-storage"])
    );
    assert_eq!(a["cmdline"]["\"quoted arg\""], true);
    // No `ip`: interfaces from sysfs, IPv6 from /proc/net/if_inet6, default route from /proc/net/route.
    assert_eq!(a["interfaces"], json!(["eth0", "lo"]));
    assert_eq!(
        a["default_ipv4"],
        json!({"gateway": "192.168.1.1", "interface": "eth0"})
    );
    assert_eq!(a["all_ipv6_addresses"], json!(["fe80::5054:ff:fe12:3456"]));
    assert_eq!(a["all_ipv4_addresses"], json!([]));
    assert_eq!(
        f["network"]["interfaces"]["eth0"]["ipv6"],
        json!(["fe80::5054:ff:fe12:3456"])
    );
    assert_eq!(
        f["network"]["default_ipv4"],
        json!({"interface": "eth0", "gateway": "192.168.1.1"})
    );
    assert_eq!(f["disks"], json!({}));
    assert!(a.get("devices").is_none());
    assert_eq!(f["kernel_modules"], json!([]));
    assert_eq!(f["init"], "init");
}

#[test]
fn busybox_tools_give_the_same_facts() {
    // The same machine gathered with only busybox applets on PATH (no getent, no `ls -f`).
    let gnu = parse(DEBIAN);
    let bb = parse(include_str!(
        "../../../../tests/fixtures/facts/debian12-busybox.txt"
    ));
    for k in [
        "distribution",
        "distribution_version",
        "distribution_major_version",
        "distribution_release",
        "os_family",
        "kernel",
        "kernel_version",
        "architecture",
        "hostname",
        "memtotal_mb",
        "processor",
        "processor_vcpus",
        "processor_count",
        "processor_cores",
        "default_ipv4",
        "default_ipv6",
        "all_ipv4_addresses",
        "all_ipv6_addresses",
        "eth0",
        "lo",
        "service_mgr",
        "pkg_mgr",
        "user_id",
        "user_uid",
        "selinux",
    ] {
        assert_eq!(bb["ansible_facts"][k], gnu["ansible_facts"][k], "{k}");
    }
    let set = |v: &Value| {
        v.as_array()
            .map(|a| a.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>())
    };
    assert_eq!(
        set(&bb["ansible_interfaces"]),
        set(&gnu["ansible_interfaces"])
    );
    assert_eq!(bb["ansible_fqdn"], "vm", "no getent: `hostname -f`");
    for k in ["os", "hostname", "network", "disks", "init"] {
        if k == "network" {
            assert_eq!(bb[k]["default_ipv4"], gnu[k]["default_ipv4"]);
            assert_eq!(bb[k]["interfaces"]["eth0"], gnu[k]["interfaces"]["eth0"]);
        } else {
            assert_eq!(bb[k], gnu[k], "{k}");
        }
    }
}

#[test]
fn empty_or_garbage_output_never_fails() {
    for text in ["", "garbage\n", "==kk:files\nno colon here\n/x:y\n==kk:ip\n1:\n3: eth0 inet\n==kk:route4\nvia\n==kk:uname\nLinux\n"] {
        let f = parse(text);
        assert_eq!(f["ansible_system"], "Linux");
        assert_eq!(f["ansible_distribution"], "OtherLinux");
        assert!(f["ansible_facts"].is_object());
        assert!(f["os"]["release"].is_object());
    }
}

const UBUNTU_OS: &str = r#"PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy"#;

#[test]
fn ubuntu_distribution() {
    let out = output(
        "==kk:uname\nLinux u1 5.15.0-91-generic #101-Ubuntu SMP x86_64\n==kk:cmds\nlsb_release\n==kk:exists\n/usr/bin/apt-get\n/etc/lsb-release",
        &[
            ("/etc/os-release", UBUNTU_OS),
            ("/etc/lsb-release", "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\nDISTRIB_CODENAME=jammy\nDISTRIB_DESCRIPTION=\"Ubuntu 22.04.4 LTS\""),
            ("/etc/debian_version", "bookworm/sid"),
        ],
    );
    let f = parse(&out);
    let a = &f["ansible_facts"];
    assert_eq!(a["distribution"], "Ubuntu");
    assert_eq!(a["distribution_version"], "22.04");
    assert_eq!(a["distribution_major_version"], "22");
    assert_eq!(a["distribution_release"], "jammy");
    assert_eq!(a["os_family"], "Debian");
    assert_eq!(a["pkg_mgr"], "apt");
    assert_eq!(a["lsb"]["description"], "Ubuntu 22.04.4 LTS");
    assert_eq!(a["lsb"]["major_release"], "22");
    assert_eq!(f["os"]["id"], "ubuntu");
}

#[test]
fn centos7_distribution() {
    let out = output(
        "==kk:uname\nLinux c7 3.10.0-1160.el7.x86_64 #1 SMP Mon Oct 19 16:18:59 UTC 2020 x86_64\n==kk:cmds\nsystemctl\n==kk:exists\n/run/systemd/system\n/usr/bin/yum\n/usr/bin/dnf\n==kk:links\nlrwxrwxrwx 1 root root 5 Oct 1 2020 /usr/bin/dnf -> dnf-3",
        &[
            (
                "/etc/os-release",
                "NAME=\"CentOS Linux\"\nVERSION=\"7 (Core)\"\nID=\"centos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"7\"\nPRETTY_NAME=\"CentOS Linux 7 (Core)\"",
            ),
            ("/etc/centos-release", "CentOS Linux release 7.9.2009 (Core)"),
            ("/etc/redhat-release", "CentOS Linux release 7.9.2009 (Core)"),
            ("/etc/system-release", "CentOS Linux release 7.9.2009 (Core)"),
            ("/proc/1/comm", "systemd"),
        ],
    );
    let a = &parse(&out)["ansible_facts"];
    assert_eq!(a["distribution"], "CentOS");
    assert_eq!(a["distribution_version"], "7.9");
    assert_eq!(a["distribution_major_version"], "7");
    assert_eq!(a["distribution_release"], "Core");
    assert_eq!(a["distribution_file_variety"], "RedHat");
    assert_eq!(a["os_family"], "RedHat");
    assert_eq!(a["service_mgr"], "systemd");
    assert_eq!(a["pkg_mgr"], "dnf");
}

#[test]
fn rocky9_and_openeuler_distribution() {
    let rocky = output(
        "==kk:uname\nLinux r9 5.14.0-362.8.1.el9_3.x86_64 #1 SMP PREEMPT_DYNAMIC x86_64\n==kk:exists\n/usr/bin/dnf",
        &[
            (
                "/etc/os-release",
                "NAME=\"Rocky Linux\"\nVERSION=\"9.3 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.3\"\nPRETTY_NAME=\"Rocky Linux 9.3 (Blue Onyx)\"",
            ),
            ("/etc/redhat-release", "Rocky Linux release 9.3 (Blue Onyx)"),
            ("/etc/rocky-release", "Rocky Linux release 9.3 (Blue Onyx)"),
        ],
    );
    let a = &parse(&rocky)["ansible_facts"];
    assert_eq!(
        (
            &a["distribution"],
            &a["distribution_version"],
            &a["distribution_major_version"],
            &a["distribution_release"]
        ),
        (
            &json!("Rocky"),
            &json!("9.3"),
            &json!("9"),
            &json!("Blue Onyx")
        )
    );
    assert_eq!(a["os_family"], "RedHat");
    assert_eq!(a["pkg_mgr"], "dnf");

    let euler = output(
        "==kk:uname\nLinux e1 5.10.0-136.12.0.86.oe2203sp1.aarch64 #1 SMP aarch64",
        &[
            (
                "/etc/os-release",
                "NAME=\"openEuler\"\nVERSION=\"22.03 (LTS-SP1)\"\nID=\"openEuler\"\nVERSION_ID=\"22.03\"\nPRETTY_NAME=\"openEuler 22.03 (LTS-SP1)\"\nANSI_COLOR=\"0;31\"",
            ),
            ("/etc/openEuler-release", "openEuler release 22.03 (LTS-SP1)"),
        ],
    );
    let f = parse(&euler);
    let a = &f["ansible_facts"];
    assert_eq!(
        (
            &a["distribution"],
            &a["distribution_version"],
            &a["os_family"]
        ),
        (&json!("openEuler"), &json!("22.03"), &json!("RedHat"))
    );
    assert_eq!(f["os"]["architecture"], "arm64");
}

#[test]
fn shlex_like_python() {
    assert_eq!(
        shlex_split(r#"A="x y" B='q "r"' C=a\ b D="e\"f\g" # comment"#),
        vec!["A=x y", "B=q \"r\"", "C=a b", "D=e\"f\\g"]
    );
    assert_eq!(shlex_split("E=\"\"\nF=1#x\nG=2"), vec!["E=", "F=1", "G=2"]);
    assert_eq!(shlex_split("H=\"unclosed"), vec!["H=unclosed"]);
    assert_eq!(
        split_non_posix("a \"b c\" d=\"e f\""),
        Some(vec![
            "a".into(),
            "\"b c\"".into(),
            "d=\"e".into(),
            "f\"".into()
        ])
    );
    assert_eq!(split_non_posix("\"open"), None);
}

#[test]
fn distro_release_lines() {
    let c = parse_distro_release_content("CentOS Linux release 7.9.2009 (Core)");
    assert_eq!(
        (
            c["name"].as_str(),
            c["version_id"].as_str(),
            c["codename"].as_str()
        ),
        ("CentOS Linux", "7.9.2009", "Core")
    );
    let d = parse_distro_release_content("Debian GNU/Linux 12 (bookworm)");
    assert_eq!(
        (d["name"].as_str(), d["version_id"].as_str()),
        ("Debian GNU/Linux", "12")
    );
    let u = parse_distro_release_content("Ubuntu 22.04.4 LTS");
    assert_eq!(
        (u["name"].as_str(), u["version_id"].as_str()),
        ("Ubuntu", "22.04.4")
    );
    assert_eq!(
        parse_distro_release_content("Arch")
            .get("name")
            .map(String::as_str),
        Some("Arch")
    );
    assert!(parse_distro_release_content("").is_empty());
}

#[test]
fn ip_secondaries_aliases_and_peers() {
    let out = output(
        "==kk:ip\n2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever preferred_lft forever\n\
         2: eth0    inet 10.0.0.6/24 brd 10.0.0.255 scope global secondary eth0:1\\       valid_lft forever\n\
         2: eth0    inet6 2001:db8::5/64 scope global temporary dynamic \\       valid_lft 100sec\n\
         2: eth0    inet6 2001:db8::1/64 scope global \\       valid_lft forever\n\
         3: tun0    inet 172.16.0.1 peer 172.16.0.2/32 scope global tun0\\       valid_lft forever\n\
         ==kk:route4\n8.8.8.8 via 10.0.0.1 dev eth0 src 10.0.0.6 uid 0\n==kk:route6",
        &[
            ("/sys/class/net/eth0/address", "52:54:00:aa:bb:cc"),
            ("/sys/class/net/eth0/mtu", "1500"),
            ("/sys/class/net/eth0/type", "1"),
            ("/sys/class/net/tun0/mtu", "1400"),
            ("/sys/class/net/tun0/type", "65534"),
        ],
    );
    let f = parse(&out);
    let a = &f["ansible_facts"];
    assert_eq!(a["interfaces"], json!(["eth0", "eth0_1", "tun0"]));
    assert_eq!(a["eth0"]["ipv4"]["address"], "10.0.0.5");
    assert_eq!(a["eth0"]["ipv4_secondaries"][0]["address"], "10.0.0.6");
    assert_eq!(a["eth0_1"]["ipv4_secondaries"][0]["address"], "10.0.0.6");
    assert_eq!(
        a["eth0"]["ipv6"][0]["address"], "2001:db8::1",
        "primary (non-temporary) addresses first"
    );
    assert_eq!(
        a["tun0"]["ipv4"],
        json!({"address": "172.16.0.1", "broadcast": "", "netmask": "255.255.255.255", "network": "172.16.0.1", "prefix": "32"})
    );
    assert_eq!(a["default_ipv4"]["alias"], "eth0:1");
    assert_eq!(a["default_ipv4"]["netmask"], "255.255.255.0");
    assert_eq!(a["default_ipv6"], json!({}));
    assert_eq!(
        a["all_ipv4_addresses"],
        json!(["10.0.0.5", "10.0.0.6", "172.16.0.1"])
    );
    assert_eq!(
        f["network"]["interfaces"]["eth0"]["ipv4"],
        json!(["10.0.0.5", "10.0.0.6"])
    );
    assert!(f["network"]["interfaces"].get("eth0_1").is_none());
}

#[test]
fn cpu_topology_and_helpers() {
    // Two sockets, 4 cores each, hyperthreading: 16 vCPUs.
    let mut cpuinfo = String::new();
    for p in 0..16 {
        cpuinfo.push_str(&format!(
            "processor\t: {p}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\nphysical id\t: {}\nsiblings\t: 8\ncore id\t\t: {}\ncpu cores\t: 4\n\n",
            p / 8,
            p % 4
        ));
    }
    let f = parse(&output(
        "==kk:uname\nLinux h 6.1.0 #1 SMP x86_64",
        &[("/proc/cpuinfo", &cpuinfo)],
    ));
    let a = &f["ansible_facts"];
    assert_eq!(
        (
            &a["processor_count"],
            &a["processor_cores"],
            &a["processor_threads_per_core"]
        ),
        (&json!(2), &json!(4), &json!(2))
    );
    assert_eq!(
        (&a["processor_vcpus"], &a["processor_nproc"]),
        (&json!(16), &json!(16))
    );
    assert_eq!(f["cpu"]["count"], 16);
    assert_eq!(bytes_to_human(0.0), "0.00 Bytes");
    assert_eq!(bytes_to_human(1536.0), "1.50 KB");
    assert_eq!(bytes_to_human(274877906944.0), "256.00 GB");
    assert_eq!(normalize_arch("armv7l"), "arm");
    assert_eq!(normalize_arch("ppc64le"), "ppc64le");
}

/// Runs the real script on this machine and checks the main facts and their types.
#[tokio::test]
async fn gathers_on_this_machine() {
    use crate::connect::{local::LocalConnection, Connection, ExecRequest};
    let out = LocalConnection::new()
        .exec(&ExecRequest::script(SCRIPT))
        .await
        .unwrap();
    assert_eq!(out.rc, 0, "{}", out.stderr_text());
    let f = parse(&String::from_utf8_lossy(&out.stdout));
    assert!(f["hostname"].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(f["os"]["type"], "Linux");
    assert!(f["os"]["id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(f["os"]["kernel_version"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(f["os"]["architecture"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(f["memory"]["total_mb"].as_u64().is_some_and(|m| m > 0));
    assert!(f["memory"]["available_mb"].is_u64());
    assert!(f["cpu"]["count"].as_u64().is_some_and(|c| c > 0));
    assert!(f["network"]["interfaces"].is_object());
    assert!(f["disks"].is_object());
    assert!(f["kernel_modules"].is_array());
    assert!(f["init"].is_string());
    for k in [
        "memtotal_mb",
        "memfree_mb",
        "processor_vcpus",
        "processor_count",
        "processor_cores",
        "uptime_seconds",
    ] {
        assert!(
            f[&format!("ansible_{k}")].is_u64(),
            "ansible_{k} = {}",
            f[&format!("ansible_{k}")]
        );
    }
    for k in [
        "distribution",
        "distribution_version",
        "distribution_major_version",
        "os_family",
        "system",
        "kernel",
        "architecture",
        "hostname",
        "fqdn",
        "service_mgr",
        "pkg_mgr",
        "user_id",
    ] {
        assert!(
            f[&format!("ansible_{k}")].is_string(),
            "ansible_{k} = {}",
            f[&format!("ansible_{k}")]
        );
        assert_eq!(f["ansible_facts"][k], f[&format!("ansible_{k}")]);
    }
    assert!(f["ansible_interfaces"].is_array());
    assert!(f["ansible_all_ipv4_addresses"].is_array());
    assert!(f["ansible_processor"].is_array());
}
