//! The `native` parts of the install phase and the `security` hook on real test hosts:
//! native/storage (loop devices made by the test on this machine, seen by the hosts through
//! their /dev), native/multipath and native/network (files rendered and checked: there is
//! no multipathd and no NetworkManager in the hosts; systemd-networkd is started on one host
//! so its reload is real), security (modes and owners of the files the install roles will
//! write, stand-ins made by the test), native/nfs (the real nfs-kernel-server package).
//!
//! NFS: this machine's kernel is built without the NFS server and client (no CONFIG_NFSD,
//! no CONFIG_NFS_FS, no modules), and test hosts share it, so no host can serve or mount
//! NFS here. The test then checks the exports (`exportfs -v`), the service state, the
//! exact error kk gives, and that a client mount fails for the same reason. On a kernel
//! with nfsd it checks a real export mounted and read from the other host instead.
//!
//! Kernel-global sysctls are left alone and time sync is off, as in tests/native.rs.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bed_inventory_hosts, sh, Project, Run};
use testbed::TestBed;

/// A loop device over a sparse file, with partition scanning; detached on drop.
struct LoopDev {
    dev: String,
}

impl LoopDev {
    fn new(file: &Path, mb: u64) -> LoopDev {
        let f = std::fs::File::create(file).expect("create the loop file");
        f.set_len(mb << 20).expect("size the loop file");
        let out = Command::new("losetup")
            .args(["-f", "--show", "-P"])
            .arg(file)
            .output()
            .expect("run losetup");
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        LoopDev {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        }
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn base_config() -> String {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    format!(
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  security_enhancement: true\n  native:\n    disable_swap: {}\n    ntp: {{enabled: false}}\n    sysctl_skip: [vm., fs., kernel., net.core.rmem_max, net.core.wmem_max, net.ipv4.neigh., net.ipv6.neigh.]\n",
        swaps.lines().count() <= 1
    )
}

fn init_os(p: &Project, inventory: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "init",
        "os",
        "-i",
        inventory,
        "-c",
        "config.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    p.kk(&args)
}

/// hook/post_install.yaml (where role `security` runs) from this checkout.
fn post_install(p: &Project, extra: &[&str]) -> Run {
    let playbook: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "playbooks/hook/post_install.yaml",
    ]
    .iter()
    .collect();
    p.kk_flow(&["run", &playbook.to_string_lossy()], extra)
}

/// The tasks that reported a change on `host`, for assertion messages.
fn changed_tasks(r: &Run, host: &str) -> String {
    r.events()
        .iter()
        .filter(|e| e["event"] == "host_result" && e["host"] == host && e["status"] == "changed")
        .map(|e| format!("{}\n", e["task"]))
        .collect()
}

/// Every file and directory a run could touch, with mode, owner, size and mtime, plus the
/// mounts and the block devices' signatures.
fn listing(bed: &TestBed, i: usize, loops: &[&str]) -> String {
    let mut cmd = String::from(
        "find /etc /usr/local /var/lib/etcd /var/lib/kubelet /data /share -xdev \
         -printf '%p %m %u:%g %s %T@\\n' 2>/dev/null | grep -v '^/etc/ld.so.cache ' | sort; \
         findmnt -rn -o TARGET,SOURCE | grep -E '^/(data|share)' || true\n",
    );
    for l in loops {
        cmd.push_str(&format!(
            "echo {l}; lsblk -rno NAME,TYPE {l}; blkid -p {l} || true\n"
        ));
    }
    sh(bed, i, &cmd)
}

const NAMES: [&str; 2] = ["kk-s1", "kk-s2"];

/// Stand-ins for the files etcd and Kubernetes install later, all world-writable, so the
/// security role has something to harden. `etcd`: the etcd member's files too.
fn security_fixture(bed: &TestBed, i: usize, etcd: bool) {
    let mut cmd = String::from(
        "set -e
         mkdir -p /etc/kubernetes/manifests /etc/kubernetes/pki/etcd /var/lib/kubelet \
           /etc/systemd/system/kubelet.service.d /usr/local/bin/kube-scripts
         for f in /etc/kubernetes/admin.conf /etc/kubernetes/manifests/kube-apiserver.yaml \
           /etc/kubernetes/pki/ca.crt /etc/kubernetes/pki/etcd/ca.crt /var/lib/kubelet/config.yaml \
           /etc/systemd/system/kubelet.service /etc/systemd/system/kubelet.service.d/10-kubeadm.conf \
           /etc/systemd/system/k8s-certs-renew.timer; do echo stand-in > $f; chmod 0666 $f; done
         printf '#!/bin/sh\\necho stand-in\\n' > /usr/local/bin/kubelet
         printf '#!/bin/sh\\n' > /usr/local/bin/kube-scripts/backup.sh
         chmod 0777 /etc/kubernetes /etc/kubernetes/pki /usr/local/bin/kubelet \
           /usr/local/bin/kube-scripts /usr/local/bin/kube-scripts/backup.sh
         ",
    );
    if etcd {
        cmd.push_str(
            "useradd -r -M -s /usr/sbin/nologin etcd
             mkdir -p /etc/ssl/etcd/ssl /var/lib/etcd
             echo stand-in > /etc/ssl/etcd/ssl/ca.crt; echo stand-in > /etc/ssl/etcd/ssl/server.key
             chown etcd /etc/ssl/etcd/ssl/server.key
             printf '#!/bin/sh\\necho stand-in\\n' > /usr/local/bin/etcd
             chmod 0777 /etc/ssl/etcd/ssl /var/lib/etcd /usr/local/bin/etcd
             chmod 0666 /etc/ssl/etcd/ssl/ca.crt /etc/ssl/etcd/ssl/server.key
             ",
        );
    }
    sh(bed, i, &cmd);
}

#[test]
fn storage_multipath_network_and_security_then_again_with_no_change() {
    let p = Project::new();
    // Declared before the bed, so the hosts are gone before the devices are detached.
    let disk_a = LoopDev::new(&p.path("disk-a.img"), 400);
    let disk_b = LoopDev::new(&p.path("disk-b.img"), 400);
    let bed = TestBed::start(2).expect("boot test hosts");
    let ips: Vec<String> = bed.hosts().iter().map(|h| h.ip.to_string()).collect();
    let b_name = disk_b.dev.trim_start_matches("/dev/").to_string();

    let hosts = bed_inventory_hosts(&bed, &NAMES);
    let groups = format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [{a}]\n    kube_worker:\n      hosts: [{b}]\n    etcd:\n      hosts: [{a}]\n",
        a = NAMES[0],
        b = NAMES[1]
    );
    // kk-s1: disk A gets a partition and xfs (the default), disk B (named without /dev/,
    // as upstream's example does) ext4 on the whole device; multipath on.
    let inv = hosts.replace(
        &format!("      internal_ipv4: {}\n", ips[0]),
        &format!(
            "      internal_ipv4: {}\n      kubernetes:\n        storage_disks:\n          - {{device: {}, mountpoint: /data/a, partition: true}}\n          - {{device: {}, mountpoint: /data/b, filesystem: ext4}}\n        multipath: {{enabled: true}}\n",
            ips[0], disk_a.dev, b_name
        ),
    ) + &groups;
    // The same, where kk-s2 names a disk it does not have.
    let bad = hosts.replace(
        &format!("      internal_ipv4: {}\n", ips[1]),
        &format!(
            "      internal_ipv4: {}\n      kubernetes:\n        storage_disks:\n          - {{device: /dev/kk-no-such-disk, mountpoint: /data/x}}\n        multipath: {{enabled: true}}\n",
            ips[1]
        ),
    ) + &groups;
    p.file("inventory.yaml", &inv)
        .file("inventory-bad.yaml", &bad)
        .file("config.yaml", &base_config());
    security_fixture(&bed, 0, true);
    security_fixture(&bed, 1, false);
    // A running systemd-networkd on kk-s2 (kk-s1 has it installed but stopped).
    sh(&bed, 1, "systemctl start systemd-networkd");
    let loops = [disk_a.dev.as_str(), disk_b.dev.as_str()];
    let before: Vec<String> = (0..2).map(|i| listing(&bed, i, &loops)).collect();
    let a_name = disk_a.dev.trim_start_matches("/dev/").to_string();
    assert!(
        before[0].contains(&format!("{}\n{a_name} loop\n", disk_a.dev)),
        "the hosts see the loop devices:\n{}",
        before[0]
    );

    // Bad input: a missing device fails kk-s2 before anything changes there (multipath,
    // which comes first, is not written either), naming host, value and key.
    let r = init_os(&p, "inventory-bad.yaml", &["-l", NAMES[1]]);
    r.code(2);
    let res = r
        .result(
            "storage | storage_disks devices are block devices",
            NAMES[1],
        )
        .to_string();
    for want in [
        "kk-s2: kubernetes.storage_disks entry",
        "/dev/kk-no-such-disk does not exist",
        "expected an existing block device as `device`",
    ] {
        assert!(res.contains(want), "{:?} not in {}", want, res);
    }
    assert_eq!(
        r.recap(NAMES[1])["changed"],
        0,
        "{}",
        changed_tasks(&r, NAMES[1])
    );
    assert_eq!(
        listing(&bed, 1, &loops),
        before[1],
        "the bad run changed kk-s2"
    );

    // Check mode on fresh hosts: changes reported, none made.
    let limit = NAMES.join(",");
    let check = init_os(&p, "inventory.yaml", &["-C", "-l", &limit]);
    check.code(0);
    let check_post = post_install(&p, &["-C", "-l", &limit]);
    check_post.code(0);
    for (i, name) in NAMES.iter().enumerate() {
        assert_ne!(check.recap(name)["changed"], 0, "{}", check.describe());
        assert_ne!(
            check_post.recap(name)["changed"],
            0,
            "{}",
            check_post.describe()
        );
        assert_eq!(
            listing(&bed, i, &loops),
            before[i],
            "check mode changed {}",
            name
        );
    }
    let dry = check
        .result(
            "Storage | Partition, format and mount the data disks",
            NAMES[0],
        )
        .to_string();
    assert!(
        dry.contains(&format!(
            "changed: would partition {} (one GPT partition), format it xfs, mount it on /data/a",
            disk_a.dev
        )) && dry.contains(&format!(
            "changed: would format {} ext4 and mount it on /data/b",
            disk_b.dev
        )),
        "{}",
        dry
    );

    // The real run.
    let r = init_os(&p, "inventory.yaml", &[]);
    r.code(0);
    let post = post_install(&p, &[]);
    post.code(0);

    // Storage: a GPT partition on A with xfs, ext4 on B, both in fstab by UUID and mounted.
    let st = sh(
        &bed,
        0,
        &format!(
            "lsblk -rno NAME,TYPE {a}; echo @; blkid -p -s PTTYPE -o value {a}; echo @; \
             p=$(lsblk -rnpo NAME,TYPE {a} | awk '$2 == \"part\" {{ print $1 }}'); echo $p; \
             blkid -p -s TYPE -s UUID -o export $p; echo @; blkid -p -s TYPE -s UUID -o export {b}; echo @; \
             grep -v '^#' /etc/fstab; echo @; findmnt -rn -o TARGET,SOURCE,FSTYPE /data/a; findmnt -rn -o TARGET,SOURCE,FSTYPE /data/b",
            a = disk_a.dev,
            b = disk_b.dev
        ),
    );
    let parts: Vec<&str> = st.split("\n@\n").collect();
    assert_eq!(parts.len(), 6, "{}", st);
    assert_eq!(parts[0], format!("{a_name} loop\n{a_name}p1 part"));
    assert_eq!(parts[1], "gpt");
    let a_part = format!("{}p1", disk_a.dev);
    let field = |s: &str, k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {} in {}", k, s))
            .to_string()
    };
    assert!(parts[2].starts_with(&format!("{a_part}\n")), "{}", parts[2]);
    assert_eq!(field(parts[2], "TYPE"), "xfs");
    assert_eq!(field(parts[3], "TYPE"), "ext4");
    let (uuid_a, uuid_b) = (field(parts[2], "UUID"), field(parts[3], "UUID"));
    assert!(
        parts[4].ends_with(&format!(
            "UUID={uuid_a} /data/a xfs defaults 0 0\nUUID={uuid_b} /data/b ext4 defaults 0 2"
        )),
        "fstab:\n{}",
        parts[4]
    );
    assert_eq!(
        parts[5],
        format!("/data/a {a_part} xfs\n/data/b {} ext4", disk_b.dev)
    );

    // Multipath: the block, exactly; no multipathd, so no reload.
    assert_eq!(
        sh(&bed, 0, "cat /etc/multipath.conf"),
        "# BEGIN kubekey multipath blacklist\nblacklist {\n    devnode \"^sd[a-z]\"\n    devnode \"^vd[a-z]\"\n    devnode \"^xvd[a-z]\"\n    devnode \"^nvme[0-9]n[0-9]\"\n}\n# END kubekey multipath blacklist"
    );
    assert_eq!(
        r.status("Multipath | Reload multipathd", NAMES[0]),
        "skipped"
    );
    assert_eq!(
        r.status("Multipath | Write the blacklist block", NAMES[1]),
        "skipped"
    );

    // Network (cni.type calico by default): the systemd-networkd file on both, no
    // NetworkManager file (not installed); networkd reloaded only where it runs.
    let networkd = "# Written by kubekey: Calico manages these interfaces.\n[Match]\nName=cali* tunl* vxlan.calico vxlan-v6.calico wireguard.cali wg-v6.cali\n\n[Link]\nUnmanaged=yes";
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(
            sh(
                &bed,
                i,
                "cat /etc/systemd/network/20-calico.network; ls /etc/NetworkManager 2>&1 || true"
            ),
            format!(
                "{networkd}\nls: cannot access '/etc/NetworkManager': No such file or directory"
            )
        );
        assert_eq!(
            r.status(
                "Network | NetworkManager leaves Calico's interfaces alone",
                name
            ),
            "skipped"
        );
        assert_eq!(r.status("Network | Reload NetworkManager", name), "skipped");
    }
    assert_eq!(
        r.status("Network | Reload systemd-networkd", NAMES[0]),
        "skipped"
    );
    assert_eq!(
        r.status("Network | Reload systemd-networkd", NAMES[1]),
        "changed"
    );
    assert_eq!(
        sh(&bed, 1, "systemctl is-active systemd-networkd"),
        "active"
    );

    // Security: modes and owners.
    let stat = |i: usize, paths: &[&str]| {
        sh(
            &bed,
            i,
            &format!("stat -c '%a %U:%G %n' {}", paths.join(" ")),
        )
    };
    let k8s = [
        "/etc/kubernetes",
        "/etc/kubernetes/admin.conf",
        "/etc/kubernetes/manifests",
        "/etc/kubernetes/pki/etcd",
        "/etc/kubernetes/pki/etcd/ca.crt",
        "/var/lib/kubelet/config.yaml",
        "/etc/systemd/system/kubelet.service",
        "/etc/systemd/system/kubelet.service.d",
        "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "/usr/local/bin",
        "/usr/local/bin/kubelet",
        "/usr/local/bin/kube-scripts",
        "/usr/local/bin/kube-scripts/backup.sh",
        "/etc/systemd/system/k8s-certs-renew.timer",
    ];
    let k8s_want = "700 root:root /etc/kubernetes\n600 root:root /etc/kubernetes/admin.conf\n700 root:root /etc/kubernetes/manifests\n700 root:root /etc/kubernetes/pki/etcd\n600 root:root /etc/kubernetes/pki/etcd/ca.crt\n640 root:root /var/lib/kubelet/config.yaml\n640 root:root /etc/systemd/system/kubelet.service\n750 root:root /etc/systemd/system/kubelet.service.d\n640 root:root /etc/systemd/system/kubelet.service.d/10-kubeadm.conf\n755 root:root /usr/local/bin\n550 root:root /usr/local/bin/kubelet\n550 root:root /usr/local/bin/kube-scripts\n550 root:root /usr/local/bin/kube-scripts/backup.sh\n";
    // The renew timer is a control-plane file: the worker's stays as it was.
    assert_eq!(
        stat(0, &k8s),
        format!("{k8s_want}640 root:root /etc/systemd/system/k8s-certs-renew.timer")
    );
    assert_eq!(
        stat(1, &k8s),
        format!("{k8s_want}666 root:root /etc/systemd/system/k8s-certs-renew.timer")
    );
    assert_eq!(
        stat(
            0,
            &[
                "/etc/ssl/etcd/ssl",
                "/etc/ssl/etcd/ssl/ca.crt",
                "/etc/ssl/etcd/ssl/server.key",
                "/var/lib/etcd",
                "/usr/local/bin/etcd"
            ]
        ),
        "750 root:etcd /etc/ssl/etcd/ssl\n644 root:root /etc/ssl/etcd/ssl/ca.crt\n600 etcd:root /etc/ssl/etcd/ssl/server.key\n700 etcd:etcd /var/lib/etcd\n555 root:root /usr/local/bin/etcd"
    );

    // Data on the disks, then everything again: nothing changes, nothing is formatted.
    sh(
        &bed,
        0,
        "echo kept-a > /data/a/file; echo kept-b > /data/b/file; sync",
    );
    let after_first: Vec<String> = (0..2).map(|i| listing(&bed, i, &loops)).collect();
    let again = init_os(&p, "inventory.yaml", &[]);
    again.code(0);
    let again_post = post_install(&p, &[]);
    again_post.code(0);
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(
            again.recap(name)["changed"],
            0,
            "{}",
            changed_tasks(&again, name)
        );
        assert_eq!(
            again_post.recap(name)["changed"],
            0,
            "{}",
            changed_tasks(&again_post, name)
        );
        assert_eq!(
            listing(&bed, i, &loops),
            after_first[i],
            "second run on {}",
            name
        );
    }
    assert_eq!(
        sh(&bed, 0, "cat /data/a/file /data/b/file"),
        "kept-a\nkept-b"
    );
    assert_eq!(
        again.status("Network | Reload systemd-networkd", NAMES[1]),
        "skipped"
    );

    // Check mode after the real run: nothing to change.
    let check = init_os(&p, "inventory.yaml", &["-C", "-l", &limit]);
    check.code(0);
    let check_post = post_install(&p, &["-C", "-l", &limit]);
    check_post.code(0);
    for name in NAMES {
        assert_eq!(
            check.recap(name)["changed"],
            0,
            "{}",
            changed_tasks(&check, name)
        );
        assert_eq!(
            check_post.recap(name)["changed"],
            0,
            "{}",
            changed_tasks(&check_post, name)
        );
    }

    // A disk that holds another filesystem is not reformatted: kk-s1 now wants xfs on B.
    p.file(
        "inventory-xfs.yaml",
        &inv.replace(
            "mountpoint: /data/b, filesystem: ext4",
            "mountpoint: /data/b, filesystem: xfs",
        ),
    );
    let r = init_os(&p, "inventory-xfs.yaml", &["-l", NAMES[0]]);
    r.code(2);
    let res = r
        .result(
            "Storage | Partition, format and mount the data disks",
            NAMES[0],
        )
        .to_string();
    assert!(
        res.contains(&format!(
            "kk-s1: kubernetes.storage_disks entry {b}: {b} holds ext4; expected xfs (filesystem). Set overwrite: true to reformat it",
            b = disk_b.dev
        )),
        "{}",
        res
    );
    assert_eq!(
        sh(
            &bed,
            0,
            &format!("blkid -p -s UUID -o value {}; cat /data/b/file", disk_b.dev)
        ),
        format!("{uuid_b}\nkept-b")
    );

    // uninstall/storage (what `kk delete cluster|nodes --with-data` runs on these disks):
    // --check changes nothing; then both mounts, their fstab lines and the filesystems (and
    // disk A's partition table) are gone; a second run changes nothing.
    std::os::unix::fs::symlink(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("roles"),
        p.path("roles"),
    )
    .unwrap();
    p.file(
        "uninstall_storage.yaml",
        "- hosts: k8s_cluster\n  gather_facts: false\n  roles: [defaults, uninstall/storage]\n",
    );
    let data = r#"{"delete": {"data": true}}"#;
    let uninstall = |extra: &[&str]| {
        let mut a = vec!["-l", NAMES[0], "-e", data];
        a.extend_from_slice(extra);
        p.kk_flow(&["run", "uninstall_storage.yaml"], &a)
    };
    let probe = format!(
        "for m in /data/a /data/b; do mountpoint -q $m && echo mounted $m; done; \
         grep ' /data/' /etc/fstab || true; blkid -p {a} {b} || true; lsblk -lnpo NAME,TYPE {a} | grep part || true",
        a = disk_a.dev,
        b = disk_b.dev
    );
    let mounted = sh(&bed, 0, &probe);
    let check = uninstall(&["-C"]);
    check.code(0);
    assert!(
        check.recap(NAMES[0])["changed"].as_i64() > Some(0),
        "{}",
        check.describe()
    );
    assert_eq!(sh(&bed, 0, &probe), mounted, "--check changed the disks");
    let r = uninstall(&[]);
    r.code(0);
    assert_eq!(sh(&bed, 0, &probe), "", "{}", r.describe());
    let again = uninstall(&[]);
    again.code(0);
    assert_eq!(
        again.recap(NAMES[0])["changed"],
        0,
        "{}",
        changed_tasks(&again, NAMES[0])
    );
}

#[test]
fn nfs_server_exports_the_share_dirs() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let names = ["kk-nfs", "kk-client"];
    let p = Project::new();
    p.file(
        "inventory.yaml",
        &(bed_inventory_hosts(&bed, &names)
            + "  groups:\n    nfs:\n      hosts: [kk-nfs]\n    k8s_cluster:\n      hosts: [kk-client]\n    etcd:\n      hosts: [kk-client]\n"),
    )
    .file(
        "config.yaml",
        &(base_config() + "  nfs:\n    share_dir: [/share/, /srv/nfs/data]\n"),
    );
    let kernel_nfsd = std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().last() == Some("nfsd"));
    let files =
        "cat /etc/exports; ls -ld /share /srv/nfs/data 2>&1; systemctl is-enabled nfs-server";
    let before = sh(&bed, 0, files);
    assert!(
        before.contains("ls: cannot access '/share'") && before.ends_with("\nenabled"),
        "{}",
        before
    );

    let check = init_os(&p, "inventory.yaml", &["-C", "-l", names[0]]);
    assert_eq!(
        sh(&bed, 0, files),
        before,
        "check mode changed the nfs host"
    );
    let run = init_os(&p, "inventory.yaml", &[]);
    // native/repository installs the server package on the nfs host (present already:
    // the hosts have no network).
    assert_eq!(
        run.result("Repository | Choose the packages of this node", names[0])["result"]
            ["ansible_facts"]["native_packages"],
        serde_json::json!([
            "socat",
            "conntrack",
            "ipset",
            "ebtables",
            "ipvsadm",
            "nfs-kernel-server"
        ])
    );
    let exports = sh(&bed, 0, "sed -n '/# BEGIN kubekey/,/# END kubekey/p' /etc/exports; exportfs -v; stat -c '%a %U:%G %n' /share /srv/nfs/data");
    assert_eq!(
        exports,
        "# BEGIN kubekey nfs exports\n/share *(rw,sync,no_subtree_check,no_root_squash)\n/srv/nfs/data *(rw,sync,no_subtree_check,no_root_squash)\n# END kubekey nfs exports\n\
         /share        \t<world>(sync,wdelay,hide,no_subtree_check,sec=sys,rw,no_root_squash,no_all_squash)\n\
         /srv/nfs/data \t<world>(sync,wdelay,hide,no_subtree_check,sec=sys,rw,no_root_squash,no_all_squash)\n\
         755 nobody:nogroup /share\n755 nobody:nogroup /srv/nfs/data"
    );
    assert_eq!(
        run.status("NFS | Re-export everything (the exports changed)", names[0]),
        "changed"
    );
    assert_eq!(run.recap(names[1])["failed"], 0, "{}", run.describe());

    if kernel_nfsd {
        check.code(0);
        run.code(0);
        assert_eq!(sh(&bed, 0, "systemctl is-active nfs-server"), "active");
        sh(&bed, 0, "echo from-the-server > /share/hello");
        assert_eq!(
            sh(
                &bed,
                1,
                &format!(
                    "mkdir -p /mnt/nfs && mount -t nfs {}:/share /mnt/nfs && cat /mnt/nfs/hello; umount /mnt/nfs",
                    bed.hosts()[0].ip
                )
            ),
            "from-the-server"
        );
    } else {
        // This kernel has no NFS server: kk says so, in check mode too (after reporting the
        // exports it would write), and the service cannot start.
        let want = "kk-nfs: the kernel (";
        let want2 = ") has no NFS server: `nfsd` is not in /proc/filesystems and `modprobe nfsd` found no module; expected a kernel with CONFIG_NFSD for the hosts of the inventory group nfs (nfs-server cannot start without it).";
        for r in [&check, &run] {
            r.code(2);
            let msg = r.msg("NFS | Fail when the kernel cannot serve NFS", names[0]);
            let msg = msg.as_str().unwrap_or_default();
            assert!(msg.starts_with(want) && msg.ends_with(want2), "{}", msg);
        }
        assert_eq!(check.status("NFS | Write the exports", names[0]), "changed");
        assert_eq!(
            sh(
                &bed,
                0,
                "systemctl is-enabled nfs-server; systemctl is-active nfs-server || true"
            ),
            "enabled\ninactive"
        );
        // A client cannot mount NFS here either (no NFS client in the kernel).
        let out = bed.ssh(
            1,
            &format!(
                "mkdir -p /mnt/nfs && timeout 20 mount -t nfs {}:/share /mnt/nfs",
                bed.hosts()[0].ip
            ),
        );
        assert_eq!(out.status.code(), Some(32));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim(),
            "mount.nfs: No such device"
        );
    }

    // Bad input: a relative share directory is refused by the precheck, naming the key.
    p.file(
        "config-bad.yaml",
        &(base_config() + "  nfs:\n    share_dir: share\n"),
    );
    let bad = p.kk(&[
        "precheck",
        "nfs",
        "-i",
        "inventory.yaml",
        "-c",
        "config-bad.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ]);
    bad.code(2);
    let res = bad
        .result("nfs | share directories are absolute paths", names[0])
        .to_string();
    assert!(
        res.contains(r#"kk-nfs: nfs.share_dir has \"share\"; expected absolute paths"#),
        "{}",
        res
    );

    // Again: the exports and directories are as wanted, so nothing changes.
    let again = init_os(&p, "inventory.yaml", &[]);
    assert_eq!(
        again.recap(names[0])["changed"],
        0,
        "{}",
        changed_tasks(&again, names[0])
    );
    assert_eq!(
        again.status("NFS | Re-export everything (the exports changed)", names[0]),
        "skipped"
    );
}
