//! `playbooks/install/image_registry.yaml` (cri/docker, image_registry, image_registry/push)
//! and cri/docker on a Kubernetes host whose container manager is docker, on real test
//! hosts with real software (tests/common/docker.rs builds it from Debian packages):
//!
//! - Docker 26.1.5 (trixie's docker.io and docker-cli, containerd 1.7.24, tini-static as
//!   docker-init, bookworm's runc 1.1.5) from upstream's static-tarball layout; dockerd
//!   falls back to the `vfs` storage driver by itself inside a test host (overlay on the
//!   host's overlay root is refused by the kernel) and manages iptables in the host's own
//!   network namespace, so no test-only daemon settings are needed.
//! - docker-compose 2.26.1 (trixie) and a `registry:2.8.2` image the test builds from
//!   bookworm's docker-registry binary: the registry really runs in a container, with TLS
//!   from certs/init and htpasswd auth, and really receives the push of binary_dir/images.
//! - Docker on the second host (a Kubernetes host, container manager docker) pulls the
//!   pushed image through the registry's CA; its cri-dockerd is a FAKE (no Debian package).
//!
//! Harbor and keepalived need images that are only on the internet (goharbor/*,
//! osixia/keepalived): `harbor_and_keepalived_files` renders every file they use on two
//! hosts and checks them (keepalived -t, docker-compose config, harbor.yml parsed); neither
//! is started.
//!
//! The deletes, each compared with the hosts as they were before the test (tests/common/
//! fresh.rs: files, units, processes, sockets, links, addresses): `kk delete registry --all
//! [--with-data]` after the registry and Docker, and after the Harbor and keepalived files
//! (their units enabled, the VIP held); uninstall/cri on the Kubernetes host whose runtime is
//! docker + cri-dockerd (with /run and the netfilter rules). A second run changes nothing.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::artifacts::repo;
use common::docker::{binary_dir, compose_bin, CRIDOCKERD_VERSION, DOCKER_VERSION};
use common::registry::curl;
use common::{bed_inventory_hosts, fresh, sh, Project, Run};
use testbed::TestBed;

const NAMES: [&str; 2] = ["reg1", "k8s1"];
/// The registry password of the tests: it must never appear in kk's output.
const PASSWORD: &str = "Kk-Test-Secret-7";
const IMAGE: &str = "docker.io/kubesphere/kk-hello:v1";

/// What the runs may change on a fresh host: these trees, listed with the size and mtime
/// of every file (directories by name: a temporary entry made and removed is no change).
const WATCHED: &str = "/etc /usr/local /opt /var/lib/docker /var/lib/containerd /tmp/kubekey";
/// The same once Docker and the registry run (their state and logs change by themselves).
const WATCHED_RUNNING: &str = "/etc /usr/local /opt/docker-registry/2.8.2 /tmp/kubekey";

fn listing(bed: &TestBed, i: usize, trees: &str) -> Vec<String> {
    sh(
        bed,
        i,
        &format!(
            "find {} -xdev \\( -type d -printf '%p/\\n' \\) -o -printf '%p %s %T@\\n' 2>/dev/null | sort || true",
            trees
        ),
    )
    .lines()
    .map(String::from)
    .collect()
}

/// Asserts two listings are equal, showing only the lines that differ.
fn same_listing(before: &[String], after: &[String], what: &str) {
    let gone: Vec<&String> = before.iter().filter(|l| !after.contains(l)).collect();
    let new: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
    assert!(
        gone.is_empty() && new.is_empty(),
        "{}: gone or changed {:?}, new or changed {:?}",
        what,
        gone,
        new
    );
}

/// Hosts: reg1 in image_registry, k8s1 in k8s_cluster (`registry_group` replaces the
/// image_registry group's host list).
fn inventory(bed: &TestBed, registry_group: &str) -> String {
    let mut s = bed_inventory_hosts(bed, &NAMES);
    s.push_str(&format!(
        "  groups:\n    image_registry:\n      hosts: {}\n    k8s_cluster:\n      hosts: [k8s1]\n",
        registry_group
    ));
    s
}

fn config(registry_type: &str) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  kubernetes:
    kube_version: v1.33.4
  image_registry:
    type: {registry_type}
    docker_registry_version: "{reg}"
    dockercompose_version: {compose}
    auth:
      password: "{pw}"
  cri:
    container_manager: docker
    docker_version: "{docker}"
    cridockerd_version: {cridockerd}
    docker:
      # A setting of the config's own, merged into daemon.json.
      daemon: {{max-concurrent-downloads: 4}}
"#,
        registry_type = registry_type,
        reg = common::docker::REGISTRY_VERSION,
        compose = common::docker::COMPOSE_VERSION,
        pw = PASSWORD,
        docker = DOCKER_VERSION,
        cridockerd = CRIDOCKERD_VERSION,
    )
}

/// cri/docker on the Kubernetes hosts (what the `cri` aggregator does for docker).
const DOCKER_HOSTS: &str = r#"
- name: Docker on the Kubernetes hosts
  hosts: k8s_cluster
  gather_facts: true
  roles: [defaults, cri/docker]
"#;

/// uninstall/cri on the Kubernetes hosts, as delete_cluster's Kubernetes play runs it with
/// delete.cri (its uninstall/kubernetes left out: this host has no Kubernetes).
const UNINSTALL_CRI: &str = r#"
- name: Facts and defaults
  hosts: all
  gather_facts: true
  roles: [defaults]
- name: The container runtime of the Kubernetes hosts
  hosts: k8s_cluster
  gather_facts: false
  roles: [defaults, uninstall/cri]
"#;

/// What the container runtime leaves outside the files [`fresh::state`] compares: its
/// sockets and state under /run, and the netfilter chains and rules (counters, table
/// markers and the built-in chains' ACCEPT policies left out: loaded empty tables).
fn runtime_leftovers(bed: &TestBed, i: usize) -> Vec<String> {
    sh(
        bed,
        i,
        "ls -d /run/docker.sock /run/docker.pid /run/docker /run/containerd /run/cri-dockerd.sock 2>/dev/null; \
         for t in iptables ip6tables; do $t-save | grep -Ev '^(#|[*]|COMMIT|:[A-Z]+ ACCEPT)' | sed -E 's/ \\[[0-9]+:[0-9]+\\]//'; done; true",
    )
    .lines()
    .map(String::from)
    .collect()
}

/// `kk run <playbook> -i inventory.yaml -c config.yaml --workdir wd --output json` + extra.
fn run(p: &Project, playbook: &str, extra: &[&str]) -> Run {
    kk(p, &["run", playbook], extra)
}

/// `kk delete registry --all [--with-data] --yes` on the project's inventory and config.
fn delete_registry(p: &Project, with_data: bool, extra: &[&str]) -> Run {
    let mut cmd = vec!["delete", "registry", "--all", "--yes"];
    if with_data {
        cmd.push("--with-data");
    }
    kk(p, &cmd, extra)
}

/// `kk <command> -i inventory.yaml -c config.yaml --workdir wd --output json` + extra.
fn kk(p: &Project, command: &[&str], extra: &[&str]) -> Run {
    let r = p.kk_flow(command, extra);
    // The password is never shown: not by the registry roles, not by `defaults` (whose
    // merged settings hold it).
    for e in r.events() {
        assert!(
            !e.to_string().contains(PASSWORD),
            "the registry password appears in the output of {:?}: {}",
            e["task"],
            e
        );
    }
    assert!(!r.stderr.contains(PASSWORD), "{}", r.describe());
    r
}

fn changed(r: &Run, host: &str) -> i64 {
    r.recap(host)["changed"].as_i64().unwrap_or(-1)
}

fn playbook() -> String {
    repo()
        .join("playbooks/install/image_registry.yaml")
        .display()
        .to_string()
}

/// A project with the repository's roles (for the test's own playbooks), the inventory,
/// the config and binary_dir filled with the artifacts and a test image.
fn project(bed: &TestBed, registry_type: &str) -> Project {
    let p = Project::new();
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    p.file("inventory.yaml", &inventory(bed, "[reg1]"))
        .file("config.yaml", &config(registry_type))
        .file("docker_hosts.yaml", DOCKER_HOSTS)
        .file("uninstall_cri.yaml", UNINSTALL_CRI);
    p
}

#[test]
fn registry_docker_and_push_for_real() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let fresh = states(&bed);
    let fresh_runtime: Vec<Vec<String>> = (0..2).map(|i| runtime_leftovers(&bed, i)).collect();
    let p = project(&bed, "docker-registry");
    let scratch = tempfile::tempdir().unwrap();
    let bin = p.path("wd/kubekey");
    binary_dir(&bin, scratch.path());
    common::registry::layout(&bin.join("images"), IMAGE);
    let reg_ip = bed.hosts()[0].ip.to_string();
    let pb = playbook();

    run(
        &p,
        &repo()
            .join("playbooks/certs_init.yaml")
            .display()
            .to_string(),
        &[],
    )
    .code(0);

    // --check on fresh hosts: reports what it would change, changes nothing.
    let before: Vec<Vec<String>> = (0..2).map(|i| listing(&bed, i, WATCHED)).collect();
    let fresh_reg1 = before[0].clone();
    let c1 = run(&p, &pb, &["--check"]);
    c1.code(0);
    assert!(changed(&c1, "reg1") > 0, "{}", c1.describe());
    assert!(
        changed(&c1, "localhost") > 0,
        "would push\n{}",
        c1.describe()
    );
    let c2 = run(&p, "docker_hosts.yaml", &["--check"]);
    c2.code(0);
    assert!(changed(&c2, "k8s1") > 0, "{}", c2.describe());
    for (i, b) in before.iter().enumerate() {
        same_listing(
            b,
            &listing(&bed, i, WATCHED),
            &format!("--check on host {}", i),
        );
    }

    // The real run.
    let r1 = run(&p, &pb, &[]);
    r1.code(0);
    assert!(changed(&r1, "localhost") > 0, "pushed\n{}", r1.describe());
    let r2 = run(&p, "docker_hosts.yaml", &[]);
    r2.code(0);

    // Docker works on both hosts.
    for i in 0..2 {
        let info = sh(
            &bed,
            i,
            "docker info --format '{{.ServerVersion}} {{.Driver}}'",
        );
        assert!(
            info.starts_with(DOCKER_VERSION),
            "host {}: docker info: {}",
            i,
            info
        );
        assert_eq!(
            sh(&bed, i, "systemctl is-active docker containerd"),
            "active\nactive"
        );
    }
    assert_eq!(sh(&bed, 0, "systemctl is-active docker-registry"), "active");

    // The registry answers with the certs/init certificate, and wants credentials.
    let ca = p.path("wd/pki/root.crt").display().to_string();
    let url = format!("https://{}/v2/", reg_ip);
    let (_, code) = curl(&["--cacert", &ca, &url]);
    assert_eq!(code, "401", "a request without credentials is refused");
    let user = format!("admin:{}", PASSWORD);
    let (_, code) = curl(&["--cacert", &ca, "-u", &user, &url]);
    assert_eq!(code, "200");
    // After the push it lists the image of binary_dir/images.
    let (body, code) = curl(&["--cacert", &ca, "-u", &user, &format!("{}_catalog", url)]);
    assert_eq!(code, "200");
    assert!(
        body.contains("\"kubesphere/kk-hello\""),
        "catalog: {}",
        body
    );

    // Docker on the Kubernetes host pulls it, trusting the registry through
    // /etc/docker/certs.d/<registry>/ca.crt (not an insecure registry).
    let daemon = sh(&bed, 1, "cat /etc/docker/daemon.json");
    assert!(!daemon.contains(&reg_ip), "not insecure: {}", daemon);
    assert!(
        daemon.contains("\"max-concurrent-downloads\": 4"),
        "{}",
        daemon
    );
    assert!(daemon.contains("native.cgroupdriver=systemd"), "{}", daemon);
    sh(
        &bed,
        1,
        &format!(
            "printf '%s' '{pw}' | docker login -u admin --password-stdin {r} >/dev/null 2>&1 && docker pull -q {r}/kubesphere/kk-hello:v1 && docker image inspect {r}/kubesphere/kk-hello:v1 >/dev/null",
            pw = PASSWORD,
            r = reg_ip
        ),
    );
    // cri-dockerd (a FAKE here) is installed and running from its units.
    assert_eq!(
        sh(&bed, 1, "systemctl is-active cri-docker.socket cri-docker"),
        "active\nactive"
    );
    assert!(sh(&bed, 1, "cri-dockerd --version").contains("FAKE"));
    // The registry host is not a Kubernetes host: no cri-dockerd there.
    assert_eq!(
        sh(
            &bed,
            0,
            "test -e /usr/local/bin/cri-dockerd && echo yes || echo no"
        ),
        "no"
    );

    // The compose file kk wrote parses with the real docker-compose.
    let compose = p.path("registry-compose.yml");
    std::fs::write(
        &compose,
        sh(
            &bed,
            0,
            &format!(
                "cat /opt/docker-registry/{}/docker-compose.yml",
                common::docker::REGISTRY_VERSION
            ),
        ),
    )
    .unwrap();
    compose_config(&compose);

    // A second run changes nothing; neither does --check now.
    for extra in [&[][..], &["--check"][..]] {
        let again = run(&p, &pb, extra);
        again.code(0);
        assert_eq!(
            changed(&again, "reg1"),
            0,
            "{:?}\n{}",
            extra,
            again.describe()
        );
        assert_eq!(
            changed(&again, "localhost"),
            0,
            "{:?}\n{}",
            extra,
            again.describe()
        );
        let again = run(&p, "docker_hosts.yaml", extra);
        again.code(0);
        assert_eq!(
            changed(&again, "k8s1"),
            0,
            "{:?}\n{}",
            extra,
            again.describe()
        );
    }

    // Bad input, each stopped before a host is touched.
    let before: Vec<Vec<String>> = (0..2).map(|i| listing(&bed, i, WATCHED_RUNNING)).collect();
    // An unknown registry type.
    p.file("config.yaml", &config("quay"));
    let bad = run(&p, &pb, &[]);
    assert_ne!(bad.code, 0, "{}", bad.describe());
    let out = format!("{}{}", bad.stdout, bad.stderr);
    for want in [
        "reg1: image_registry.type is \\\"quay\\\"",
        "\\\"docker-registry\\\"",
        "\\\"harbor\\\"",
        "cluster_require.supported_image_registry_types",
    ] {
        assert!(out.contains(want), "missing {:?}\n{}", want, bad.describe());
    }
    // A registry type without registry hosts (kk precheck, as create_cluster runs it).
    p.file("config.yaml", &config("docker-registry"));
    p.file("inventory.yaml", &inventory(&bed, "[]"));
    let bad = p.kk(&[
        "precheck",
        "image_registry",
        "-i",
        "inventory.yaml",
        "-c",
        "config.yaml",
        "--workdir",
        "wd",
    ]);
    assert_ne!(bad.code, 0, "{}", bad.describe());
    assert!(
        bad.stdout.contains("image_registry.type is \"docker-registry\" but the inventory group image_registry has no hosts"),
        "{}",
        bad.describe()
    );
    // A registry host that the inventory does not define.
    p.file("inventory.yaml", &inventory(&bed, "[reg1, reg9]"));
    let bad = run(&p, &pb, &[]);
    bad.code(4);
    for want in [
        "group `image_registry` lists host `reg9`",
        "not defined in `spec.hosts`",
    ] {
        assert!(
            bad.stderr.contains(want),
            "missing {:?}\n{}",
            want,
            bad.describe()
        );
    }
    for (i, b) in before.iter().enumerate() {
        same_listing(
            b,
            &listing(&bed, i, WATCHED_RUNNING),
            &format!("bad input, host {}", i),
        );
    }

    // `kk delete registry --all --with-data`: the registry, its images, docker-compose,
    // Docker and its containerd leave reg1 as it was before the install (the watched
    // trees), with no unit, process or socket of theirs; a second delete changes nothing.
    // k8s1, a registry host too for the delete, is a Kubernetes node that stays: its Docker,
    // containerd and cri-dockerd (the kubelet's runtime) stay untouched.
    p.file("inventory.yaml", &inventory(&bed, "[reg1, k8s1]"));
    let running = listing(&bed, 0, WATCHED_RUNNING);
    let c = delete_registry(&p, true, &["--check"]);
    c.code(0);
    assert!(changed(&c, "reg1") > 0, "{}", c.describe());
    same_listing(
        &running,
        &listing(&bed, 0, WATCHED_RUNNING),
        "reg1 after delete registry --check",
    );
    assert_eq!(
        sh(&bed, 0, "systemctl is-active docker docker-registry"),
        "active\nactive"
    );
    let r = delete_registry(&p, true, &[]);
    r.code(0);
    assert!(changed(&r, "reg1") > 0, "{}", r.describe());
    same_listing(
        &fresh_reg1,
        &listing(&bed, 0, WATCHED),
        "reg1 after delete registry",
    );
    let left = sh(
        &bed,
        0,
        "systemctl list-unit-files --no-legend | grep -E '^(docker|containerd|docker-registry)' || true; \
         pgrep -l -x 'dockerd|containerd|registry|containerd-shim' || true; ip -o link show docker0 2>/dev/null || true",
    );
    assert!(left.is_empty(), "left on reg1: {}", left);
    assert_eq!(changed(&r, "k8s1"), 0, "{}", r.describe());
    assert_eq!(
        sh(&bed, 1, "systemctl is-active docker containerd cri-docker"),
        "active\nactive\nactive"
    );
    let r = delete_registry(&p, true, &[]);
    r.code(0);
    assert_eq!(changed(&r, "reg1"), 0, "{}", r.describe());

    // uninstall/cri (delete.cri, delete.data) on k8s1, whose container manager is docker:
    // docker, its containerd and cri-dockerd (units, sockets, binaries, /etc/docker, the
    // data roots, docker0, dockerd's netfilter rules) go; --check changes nothing first.
    // Both hosts are then what they were before the test; a second run changes nothing.
    // The test's own `docker login` credentials go first (kk did not write them).
    sh(&bed, 1, "rm -r /root/.docker");
    // A network of Docker's own, as a compose project makes (bridge br-<id>, its rules).
    sh(
        &bed,
        1,
        "docker network create kk-test >/dev/null && ip -o link show type bridge | grep -q ' br-'",
    );
    let un = ["-e", r#"{"delete": {"cri": true, "data": true}}"#];
    let running = fresh::state(&bed, 1);
    let c = run(&p, "uninstall_cri.yaml", &[&un[..], &["--check"]].concat());
    c.code(0);
    assert!(changed(&c, "k8s1") > 0, "{}", c.describe());
    let d = fresh::diff(&running, &fresh::state(&bed, 1));
    assert!(
        d.is_empty(),
        "k8s1 after uninstall/cri --check:\n{}",
        d.join("\n")
    );
    for again in [false, true] {
        let r = run(&p, "uninstall_cri.yaml", &un);
        r.code(0);
        assert_eq!(changed(&r, "k8s1") == 0, again, "{}", r.describe());
        assert_fresh(&bed, &fresh, "after uninstall/cri");
        // dockerd set the FORWARD policy to DROP when it turned on IP forwarding: both stay
        // (roles/uninstall/cri/docker says why).
        for (i, f) in fresh_runtime.iter().enumerate() {
            let d = fresh::diff(f, &runtime_leftovers(&bed, i));
            assert_eq!(d, ["+ :FORWARD DROP"], "{} after the deletes", NAMES[i]);
        }
    }
}

/// `docker-compose -f <file> config -q` with trixie's docker-compose: the file parses.
fn compose_config(file: &Path) {
    let out = Command::new(compose_bin())
        .arg("-f")
        .arg(file)
        .args(["config", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "docker-compose config {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

const RENDER: &str = r#"
- name: Harbor and keepalived files
  hosts: image_registry
  gather_facts: true
  roles: [defaults]
  tasks:
    - include_role: {name: image_registry/keepalived, tasks_from: render}
    - include_role: {name: image_registry/harbor, tasks_from: render}
"#;

#[test]
fn harbor_and_keepalived_files() {
    eprintln!(
        "NOTE: Harbor and keepalived run from images only available on the internet \
         (goharbor/*, osixia/keepalived): this test renders and checks their files on two \
         hosts; it does not run install.sh, Harbor or keepalived."
    );
    let bed = TestBed::start(2).expect("boot test hosts");
    let fresh = states(&bed);
    let ips: Vec<String> = bed.hosts().iter().map(|h| h.ip.to_string()).collect();
    let vip = format!("{}.200", ips[0].rsplit_once('.').unwrap().0);
    let p = Project::new();
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    let mut inv = bed_inventory_hosts(&bed, &NAMES);
    inv.push_str("  groups:\n    image_registry:\n      hosts: [reg1, k8s1]\n");
    p.file("inventory.yaml", &inv)
        .file(
            "config.yaml",
            &format!(
                "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  kubernetes:\n    kube_version: v1.33.4\n  image_registry:\n    type: harbor\n    ha_vip: {}\n    auth:\n      password: \"{}\"\n",
                vip, PASSWORD
            ),
        )
        .file("render.yaml", RENDER);
    run(
        &p,
        &repo()
            .join("playbooks/certs_init.yaml")
            .display()
            .to_string(),
        &[],
    )
    .code(0);
    let r = run(&p, "render.yaml", &[]);
    r.code(0);
    let again = run(&p, "render.yaml", &[]);
    again.code(0);
    for h in NAMES {
        assert_eq!(changed(&again, h), 0, "{}", again.describe());
    }

    for (i, name) in NAMES.iter().enumerate() {
        let dir = p.path(&format!("got/{}", name));
        std::fs::create_dir_all(&dir).unwrap();
        let out = bed.ssh(
            i,
            "tar -cf - /opt/keepalived /opt/harbor/v2.10.2/harbor /etc/systemd/system/keepalived.service /etc/systemd/system/harbor.service 2>/dev/null",
        );
        assert!(out.status.success());
        let mut t = Command::new("tar")
            .arg("-C")
            .arg(&dir)
            .arg("-xf")
            .arg("-")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        t.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        assert!(t.wait().unwrap().success());
        let kdir = dir.join("opt/keepalived/2.3.4");

        // keepalived.conf: the interface holding the VIP, MASTER on the first host.
        let conf = std::fs::read_to_string(kdir.join("keepalived.conf")).unwrap();
        let nic = nic_of(&bed, i, &ips[i]);
        assert!(conf.contains(&format!("interface {}\n", nic)), "{}", conf);
        assert!(
            conf.contains(&format!("{}/24 dev {}", vip, nic)),
            "{}",
            conf
        );
        // Both start as BACKUP (nopreempt); the first host's priority makes it MASTER.
        let prio = if i == 0 { 100 } else { 99 };
        assert!(conf.contains("state BACKUP\n"), "{}", conf);
        assert!(conf.contains(&format!("priority {}\n", prio)), "{}", conf);
        assert!(
            conf.contains(&format!("unicast_peer {{\n    {}\n", ips[1 - i])),
            "{}",
            conf
        );
        // keepalived validates it (the healthcheck path is the container's: point it at the
        // rendered script for the check).
        let local = dir.join("keepalived-check.conf");
        std::fs::write(
            &local,
            conf.replace(
                "/container/service/keepalived/assets/healthcheck.sh",
                &kdir.join("healthcheck.sh").display().to_string(),
            ),
        )
        .unwrap();
        if Path::new("/usr/sbin/keepalived").exists() {
            let out = Command::new("/usr/sbin/keepalived")
                .arg("-t")
                .arg("-f")
                .arg(&local)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "keepalived -t: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            eprintln!("NOTE: keepalived is not installed here: keepalived.conf was not validated");
        }
        let st = Command::new("sh")
            .arg("-n")
            .arg(kdir.join("healthcheck.sh"))
            .status()
            .unwrap();
        assert!(st.success(), "healthcheck.sh parses");
        compose_config(&kdir.join("docker-compose.yml"));

        // harbor.yml parses and carries the settings.
        let yml = dir.join("opt/harbor/v2.10.2/harbor/harbor.yml");
        let out = Command::new("python3")
            .arg("-c")
            .arg("import json,sys,yaml; d=yaml.safe_load(open(sys.argv[1])); print(json.dumps(d))")
            .arg(&yml)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "harbor.yml: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(h["hostname"], vip.as_str());
        assert_eq!(h["https"]["port"], 443);
        assert_eq!(
            h["https"]["certificate"],
            "/opt/harbor/v2.10.2/ssl/server.crt"
        );
        assert_eq!(h["harbor_admin_password"], PASSWORD);
        assert_eq!(h["_version"], "2.10.2");
        for unit in ["keepalived.service", "harbor.service"] {
            let u = std::fs::read_to_string(dir.join("etc/systemd/system").join(unit)).unwrap();
            assert!(
                u.contains("ExecStart=/usr/local/bin/docker-compose -f "),
                "{}",
                u
            );
        }
        // The certificate Harbor serves is certs/init's registry certificate.
        assert_eq!(
            sh(&bed, i, "cat /opt/harbor/v2.10.2/ssl/server.crt"),
            std::fs::read_to_string(p.path("wd/pki/image_registry.crt"))
                .unwrap()
                .trim_end()
        );
    }

    // `kk delete registry --all`: as a running install would have left them, both units are
    // enabled and reg1 holds the VIP (keepalived's). --check changes nothing; the delete
    // disables and removes the units, drops the VIP, removes /opt/harbor and /opt/keepalived,
    // and Harbor's data_volume (/data) only with --with-data. Then both hosts are what they
    // were before the render, and a second delete changes nothing.
    for i in 0..2 {
        sh(
            &bed,
            i,
            "systemctl enable harbor.service keepalived.service 2>&1",
        );
    }
    let nic = nic_of(&bed, 0, &ips[0]);
    sh(&bed, 0, &format!("ip addr add {}/24 dev {}", vip, nic));
    // k8s1 learnt the VIP's MAC address (permanent here: it must not expire by itself).
    let neigh = format!("ip neigh show to {}", vip);
    sh(
        &bed,
        1,
        &format!(
            "ip neigh replace {} lladdr 02:00:00:00:00:01 nud permanent dev {}",
            vip,
            nic_of(&bed, 1, &ips[1])
        ),
    );
    assert!(!sh(&bed, 1, &neigh).is_empty());
    let installed = states(&bed);
    let c = delete_registry(&p, true, &["--check"]);
    c.code(0);
    let now = states(&bed);
    for (i, h) in NAMES.iter().enumerate() {
        assert!(changed(&c, h) > 0, "{}", c.describe());
        let d = fresh::diff(&installed[i], &now[i]);
        assert!(d.is_empty(), "{} after --check:\n{}", h, d.join("\n"));
    }
    assert!(!sh(&bed, 1, &neigh).is_empty(), "--check kept the entry");
    let r = delete_registry(&p, false, &[]);
    r.code(0);
    assert_eq!(sh(&bed, 1, &neigh), "", "k8s1 forgot the VIP's MAC address");
    let now = states(&bed);
    for (i, h) in NAMES.iter().enumerate() {
        assert!(changed(&r, h) > 0, "{}", r.describe());
        let d = fresh::diff(&fresh[i], &now[i]);
        assert_eq!(d, ["+ file /data d 755"], "{}: only Harbor's data stays", h);
    }
    for again in [true, false] {
        let r = delete_registry(&p, true, &[]);
        r.code(0);
        for h in NAMES {
            assert_eq!(changed(&r, h) > 0, again, "{}", r.describe());
        }
        assert_fresh(&bed, &fresh, "after delete registry --with-data");
    }
}

/// [`fresh::state`] of both hosts, taken side by side.
fn states(bed: &TestBed) -> Vec<Vec<String>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..NAMES.len())
            .map(|i| s.spawn(move || fresh::state(bed, i)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Asserts both hosts are as `fresh` (from [`states`]), printing every difference.
fn assert_fresh(bed: &TestBed, fresh: &[Vec<String>], what: &str) {
    for (i, now) in states(bed).iter().enumerate() {
        let d = fresh::diff(&fresh[i], now);
        assert!(
            d.is_empty(),
            "{} {}: differs from its fresh state:\n{}\n{}",
            NAMES[i],
            what,
            d.join("\n"),
            fresh::detail(bed, i)
        );
    }
}

/// The interface holding `ip` on host `i`.
fn nic_of(bed: &TestBed, i: usize, ip: &str) -> String {
    sh(
        bed,
        i,
        &format!(
            "ip -o -4 addr show | awk '$4 ~ /^{}\\// {{print $2}}'",
            ip.replace('.', "\\.")
        ),
    )
}
