//! The bundled role `certs/init` and the hook playbooks `hook/pre_install.yaml` and
//! `hook/post_install.yaml`, run by the real `kk` binary. Certificates are checked with the
//! real `openssl` CLI; the hooks run over SSH on real test hosts (the `testbed` crate).

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Project, Run};
use testbed::TestBed;

/// The repository, where `playbooks/` and `roles/` are.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `kk run <playbook> -i inventory.yaml --workdir wd --output json` plus `extra`, in `p`.
fn kk_json(p: &Project, playbook: &Path, extra: &[&str]) -> Run {
    let pb = playbook.display().to_string();
    let mut args = vec![
        "run",
        pb.as_str(),
        "-i",
        "inventory.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    p.kk(&args)
}

/// `openssl <args>` must succeed; returns its stdout.
fn openssl(args: &[&str]) -> String {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("run openssl (scripts/test installs it)");
    assert!(
        out.status.success(),
        "openssl {:?} failed:\n{}{}",
        args,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The subject alternative names of a certificate as openssl prints them
/// (`DNS:x`, `IP Address:y`); empty when it has none.
fn sans(cert: &Path) -> BTreeSet<String> {
    let c = cert.display().to_string();
    let text = openssl(&["x509", "-in", &c, "-noout", "-ext", "subjectAltName"]);
    text.lines()
        .skip(1)
        .flat_map(|l| l.split(", "))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Three etcd hosts and one registry host; none is contacted (certs/init runs on the
/// controller), so they use the local connection. The hosts' addresses come in every
/// way a KubeKey inventory gives them.
const CERT_INVENTORY: &str = r#"
kind: Inventory
spec:
  hosts:
    node1: {connector: {type: local}, internal_ipv4: 10.1.0.1}
    node2: {connector: {type: local, host: 10.1.0.2}}
    node3: {ansible_connection: local, ansible_host: node3.example.com, internal_ipv6: "fd00::3"}
    registry1: {connector: {type: local, host: 192.0.2.9}, internal_ipv4: 10.1.0.9}
  groups:
    etcd: {hosts: [node1, node2, node3]}
    image_registry: {hosts: [registry1]}
  vars:
    image_registry:
      ha_vip: 10.1.0.100
      auth: {registry: "dockerhub.kubekey.local:5000"}
"#;

/// Every certificate certs/init makes for [`CERT_INVENTORY`].
const CERTS: &[&str] = &[
    "root",
    "kubernetes",
    "front-proxy",
    "etcd-node1",
    "etcd-node2",
    "etcd-node3",
    "etcd-client",
    "image_registry",
    "image-registry-client",
];

#[test]
fn certs_init_makes_a_verifiable_pki_and_keeps_it() {
    let p = Project::new();
    p.file("inventory.yaml", CERT_INVENTORY).file(
        "config.yaml",
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  certs:\n    etcd:\n      date: 8760h\n",
    );
    let playbook = repo().join("playbooks/certs_init.yaml");
    let r = kk_json(&p, &playbook, &["-c", "config.yaml"]);
    r.code(0);
    assert_eq!(r.recap("localhost")["failed"], 0, "{}", r.describe());

    let pki = p.path("wd/pki");
    let path = |name: &str, ext: &str| pki.join(format!("{}.{}", name, ext));
    let root = path("root", "crt").display().to_string();
    for name in CERTS {
        assert!(path(name, "key").is_file(), "{}.key missing", name);
        let c = path(name, "crt").display().to_string();
        let out = openssl(&["verify", "-CAfile", &root, &c]);
        assert!(out.trim().ends_with(": OK"), "{}: {}", name, out);
    }
    // The CAs are CAs, the rest are not; client certificates are for clients only.
    for (name, is_ca) in [
        ("root", true),
        ("kubernetes", true),
        ("front-proxy", true),
        ("etcd-node1", false),
        ("etcd-client", false),
        ("image_registry", false),
    ] {
        let c = path(name, "crt").display().to_string();
        let text = openssl(&["x509", "-in", &c, "-noout", "-ext", "basicConstraints"]);
        assert_eq!(text.contains("CA:TRUE"), is_ca, "{}: {}", name, text);
    }
    for name in ["etcd-client", "image-registry-client"] {
        let c = path(name, "crt").display().to_string();
        let text = openssl(&["x509", "-in", &c, "-noout", "-ext", "extendedKeyUsage"]);
        assert!(
            text.contains("TLS Web Client Authentication") && !text.contains("Server"),
            "{}: {}",
            name,
            text
        );
        assert!(sans(&path(name, "crt")).is_empty(), "{} has SANs", name);
    }

    // SANs: name, internal_ipv4, internal_ipv6, ansible_host / connector.host, localhost and
    // the loopback addresses.
    let local = [
        "DNS:localhost",
        "IP Address:127.0.0.1",
        "IP Address:0:0:0:0:0:0:0:1",
    ];
    let with_local = |own: &[&str]| {
        let mut s = set(own);
        s.extend(set(&local));
        s
    };
    assert_eq!(
        sans(&path("etcd-node1", "crt")),
        with_local(&["DNS:node1", "IP Address:10.1.0.1"])
    );
    assert_eq!(
        sans(&path("etcd-node2", "crt")),
        with_local(&["DNS:node2", "IP Address:10.1.0.2"])
    );
    assert_eq!(
        sans(&path("etcd-node3", "crt")),
        with_local(&[
            "DNS:node3",
            "DNS:node3.example.com",
            "IP Address:FD00:0:0:0:0:0:0:3"
        ])
    );
    assert_eq!(
        sans(&path("image_registry", "crt")),
        with_local(&[
            "IP Address:10.1.0.100",
            "DNS:dockerhub.kubekey.local",
            "DNS:registry1",
            "IP Address:10.1.0.9",
            "IP Address:192.0.2.9"
        ])
    );

    // Validity from `certs.*.date`: the config's 8760h for etcd, the default 87600h elsewhere.
    let year = 365 * 86400;
    let valid_for = |name: &str, secs: i64| {
        let c = path(name, "crt").display().to_string();
        let s = secs.to_string();
        Command::new("openssl")
            .args(["x509", "-in", &c, "-noout", "-checkend", &s])
            .output()
            .expect("openssl")
            .status
            .success()
    };
    assert!(valid_for("etcd-node1", year - 86400) && !valid_for("etcd-node1", year + 86400));
    assert!(valid_for("root", 9 * year) && valid_for("kubernetes", 9 * year));

    // Second run: every certificate is kept.
    let again = kk_json(&p, &playbook, &["-c", "config.yaml"]);
    again.code(0);
    assert_eq!(
        again.recap("localhost")["changed"],
        0,
        "second run must change nothing\n{}",
        again.describe()
    );
    let kept = again.result(
        "Cert | Generate the etcd server certificate of each etcd host",
        "localhost",
    );
    let items = kept["result"]["results"].as_array().expect("loop results");
    assert_eq!(items.len(), 3, "{}", kept);
    for item in items {
        assert!(
            item["reason"].as_str().unwrap_or("").starts_with("kept"),
            "{}",
            item
        );
    }

    // A new root CA (policy Always) renews everything it signed; the chain still verifies.
    let before = std::fs::read(path("etcd-node2", "crt")).unwrap();
    let renew = kk_json(
        &p,
        &playbook,
        &[
            "-c",
            "config.yaml",
            "--set",
            "certs.ca.gen_cert_policy=Always",
        ],
    );
    renew.code(0);
    for task in [
        "Cert | Generate the root CA",
        "Cert | Generate the Kubernetes CA",
        "Cert | Generate the front-proxy CA",
        "Cert | Generate the etcd server certificate of each etcd host",
        "Cert | Generate the etcd client certificate",
        "Cert | Generate the image registry certificate",
        "Cert | Generate the image registry client certificate",
    ] {
        assert_eq!(renew.status(task, "localhost"), "changed", "{}", task);
    }
    assert_ne!(before, std::fs::read(path("etcd-node2", "crt")).unwrap());
    for name in CERTS {
        let c = path(name, "crt").display().to_string();
        openssl(&["verify", "-CAfile", &root, &c]);
    }
}

/// The test bed's inventory plus group `hooked` (hosts 0 and 1) and
/// `kube_control_plane` (host 0).
fn hook_inventory(bed: &TestBed) -> String {
    let h = bed.hosts();
    format!(
        "{}    hooked:\n      hosts: [{}, {}]\n    kube_control_plane:\n      hosts: [{}]\n",
        bed.inventory_yaml(),
        h[0].name,
        h[1].name,
        h[0].name
    )
}

/// A project that runs one hook playbook: `site.yaml` imports it and `roles` links to the
/// repository's roles, as when create_cluster imports it from `playbooks/`.
fn hook_project(bed: &TestBed, hook: &str) -> Project {
    let p = Project::new();
    p.file("inventory.yaml", &hook_inventory(bed)).file(
        "site.yaml",
        &format!(
            "- import_playbook: {}\n",
            repo().join("playbooks/hook").join(hook).display()
        ),
    );
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).expect("link roles");
    p
}

/// A script that appends `<what> <hostname>` to /tmp/hook.log on the host.
fn logger(what: &str) -> String {
    format!(
        "#!/bin/sh\necho \"{} $(hostname)\" >> /tmp/hook.log\n",
        what
    )
}

/// /tmp/hook.log of host `i` ("" when absent).
fn hook_log(bed: &TestBed, i: usize) -> String {
    let out = bed.ssh(i, "cat /tmp/hook.log 2>/dev/null || true");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn hook_scripts_run_on_their_hosts_in_order_and_failures_fail_the_host() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let names: Vec<String> = bed.hosts().iter().map(|h| h.name.clone()).collect();

    // No scripts: nothing happens, nothing fails, nothing is created on the hosts.
    let pre = hook_project(&bed, "pre_install.yaml");
    let r = pre.run_json(&["--workdir", "wd"]);
    r.code(0);
    for (i, n) in names.iter().enumerate() {
        assert_eq!(r.recap(n)["changed"], 0, "{}", r.describe());
        let st = bed.ssh(i, "test -e /etc/kubekey/scripts");
        assert!(!st.status.success(), "{} got /etc/kubekey/scripts", n);
    }

    // A global script, one for group `hooked` (hosts 0 and 1) and one per host for 0 and 1.
    let scripts = pre.path("wd/scripts");
    let put = |rel: &str, text: &str| {
        let f = scripts.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    };
    put("pre_install.sh", &logger("pre global"));
    put("hooked/pre_install.sh", &logger("pre group hooked"));
    // An unused group's script and a script for a host not in the inventory are ignored.
    put("nosuchgroup/pre_install.sh", &logger("WRONG group"));
    put("pre_install_nosuchhost.sh", &logger("WRONG host"));
    for n in &names[..2] {
        put(&format!("pre_install_{}.sh", n), &logger("pre host"));
    }
    let r = pre.run_json(&["--workdir", "wd"]);
    r.code(0);
    for (i, n) in names.iter().enumerate() {
        let want = if i < 2 {
            format!("pre global {n}\npre group hooked {n}\npre host {n}\n")
        } else {
            format!("pre global {n}\n")
        };
        assert_eq!(hook_log(&bed, i), want, "on {}\n{}", n, r.describe());
    }
    let listing = bed.ssh(0, "stat -c '%a %n' /etc/kubekey/scripts/* | sort");
    assert_eq!(
        String::from_utf8_lossy(&listing.stdout),
        format!(
            "755 /etc/kubekey/scripts/pre_install.sh\n755 /etc/kubekey/scripts/pre_install_group_hooked.sh\n755 /etc/kubekey/scripts/pre_install_{}.sh\n",
            names[0]
        )
    );
    let listing = bed.ssh(2, "ls /etc/kubekey/scripts");
    assert_eq!(String::from_utf8_lossy(&listing.stdout), "pre_install.sh\n");

    // post_install: the kubeadm configuration of control-plane host 0 is backed up once;
    // host 1's group script fails, which fails host 1 (exit code, stderr shown) and stops
    // its host script; the other hosts finish.
    let post = hook_project(&bed, "post_install.yaml");
    let pscripts = post.path("wd/scripts");
    let put = |rel: &str, text: &str| {
        let f = pscripts.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    };
    put("post_install.sh", &logger("post global"));
    put(
        "hooked/post_install.sh",
        &format!(
            "#!/bin/sh\nif [ \"$(hostname)\" = {} ]; then echo \"out before failing\"; echo \"boom on $(hostname)\" >&2; exit 3; fi\necho \"post group hooked $(hostname)\" >> /tmp/hook.log\n",
            names[1]
        ),
    );
    for n in &names[..2] {
        put(&format!("post_install_{}.sh", n), &logger("post host"));
    }
    let st = bed.ssh(
        0,
        "mkdir -p /etc/kubernetes && echo 'kind: ClusterConfiguration' > /etc/kubernetes/kubeadm-config.yaml",
    );
    assert!(st.status.success());
    let r = post.run_json(&["--workdir", "wd"]);
    r.code(2);
    let failed = r.result("Post | Run the group post-install scripts", &names[1]);
    assert_eq!(failed["status"], "failed", "{}", failed);
    assert_eq!(failed["result"]["rc"], 3, "{}", failed);
    let stderr = failed["result"]["stderr"].as_str().unwrap_or_default();
    assert!(
        stderr.contains(&format!("boom on {}", names[1]))
            && stderr.contains("post_install_group_hooked.sh failed with exit code 3"),
        "{}",
        failed
    );
    assert_eq!(
        failed["result"]["stdout"], "out before failing",
        "{}",
        failed
    );
    assert_eq!(r.recap(&names[1])["failed"], 1);
    for n in [&names[0], &names[2]] {
        assert_eq!(r.recap(n)["failed"], 0, "{}", r.describe());
    }
    let post_log = |i: usize| {
        hook_log(&bed, i)
            .lines()
            .filter(|l| l.starts_with("post"))
            .map(|l| format!("{}\n", l))
            .collect::<String>()
    };
    let n0 = &names[0];
    assert_eq!(
        post_log(0),
        format!("post global {n0}\npost group hooked {n0}\npost host {n0}\n")
    );
    assert_eq!(post_log(1), format!("post global {}\n", names[1]));
    assert_eq!(post_log(2), format!("post global {}\n", names[2]));
    let backup = "Post | Back up kubeadm-config.yaml";
    assert_eq!(r.status(backup, n0), "changed");
    let backups = || {
        let out = bed.ssh(
            0,
            "stat -c '%a' /etc/kubekey/backup/kubernetes; for f in /etc/kubekey/backup/kubernetes/kubeadm-config-*.yaml; do stat -c '%a' \"$f\"; cat \"$f\"; done",
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(backups(), "700\n600\nkind: ClusterConfiguration\n");

    // Run again: the unchanged configuration is not backed up twice.
    let again = post.run_json(&["--workdir", "wd"]);
    again.code(2);
    assert_eq!(again.status(backup, n0), "ok", "{}", again.describe());
    assert_eq!(backups(), "700\n600\nkind: ClusterConfiguration\n");

    // The text report shows the failing script's exit code, stdout and stderr.
    let text = post.kk(&[
        "run",
        "site.yaml",
        "-i",
        "inventory.yaml",
        "--workdir",
        "wd",
    ]);
    text.code(2);
    for want in [
        "rc: 3".to_string(),
        "out before failing".to_string(),
        format!("boom on {}", names[1]),
    ] {
        assert!(
            text.stdout.contains(&want),
            "{:?} missing\n{}",
            want,
            text.describe()
        );
    }
}
