//! `kk create cluster` (the bundled playbooks/create_cluster.yaml) end to end on four real
//! test hosts, up to where Kubernetes itself starts: sudo's secure_path, the pre-install
//! hooks, the precheck, certificates and sha256-verified downloads on the controller, the
//! OS init of every node, external etcd (3 members), Docker and the docker-registry on the
//! registry host with the images of binary_dir/images pushed into it, containerd on the
//! Kubernetes nodes, the post-install hooks.
//!
//! Real software throughout, fetched by role `download` from the local artifact server in
//! upstream's archive layouts: etcd 3.5.16, containerd 1.7.24, Docker 26.1.5 and
//! docker-compose 2.26.1 from Debian trixie; runc 1.1.5, the CNI plugins, kubectl 1.20.2 and
//! the docker-registry 2.8.2 binary (in a `registry` image the test builds) from bookworm.
//! FAKE stand-ins (clearly named, tests/common/artifacts.rs) only for what no Debian
//! release packages and this part of the flow does not run: kubelet, kubeadm, helm,
//! crictl, calicoctl, the calico chart.
//!
//! Kubernetes v1.20.2 (the served kubectl's version) has no version matrix in kk, so the
//! config lowers `cluster_require.kube_version_min_required`, allows the unsupported minor
//! and gives every component version. Kernel-global sysctls are left alone (the hosts share
//! this machine's kernel), time sync is off, and containerd's data root is on the hosts'
//! tmpfs (its overlayfs snapshotter cannot sit on their overlay root; see tests/cri.rs).
//! No NFS host: this machine's kernel has no NFS server (tests/native_install.rs shows it).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::artifacts::{assert_landed, build_server, manifest, sha256_file};
use common::cri::{busybox_layout, containerd_artifact, CONTAINERD_VERSION};
use common::docker::{compose_bin, docker_tgz, registry_image_tgz, COMPOSE_VERSION};
use common::docker::{DOCKER_VERSION, REGISTRY_VERSION};
use common::etcd::{build_etcd, ETCD_VERSION};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::http::HttpServer;
use testbed::TestBed;

/// Inventory names (the hosts boot as node1..node4, so every hostname changes).
const NAMES: [&str; 4] = ["kk-cp1", "kk-w1", "kk-w2", "kk-reg"];
/// The registry password of the config: it must never be printed or logged.
const PASSWORD: &str = "e2e-Registry-Secret-7";
/// The image the test puts into binary_dir/images (pushed by the flow).
const IMAGE: &str = "docker.io/kk/busybox:e2e";

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s.push_str(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      hosts: [kk-w1, kk-w2]\n    etcd:\n      hosts: [kk-cp1, kk-w1, kk-w2]\n    image_registry:\n      hosts: [kk-reg]\n",
    );
    s
}

/// The artifacts of the install phase beyond tests/common/artifacts.rs's tree, served under
/// `cn/`: their manifest entries, and their digests into `sums`.
fn serve_install_artifacts(
    root: &Path,
    scratch: &Path,
    sums: &mut BTreeMap<&'static str, String>,
) -> String {
    let etcd = build_etcd(root, scratch);
    sums.insert("etcd35", sha256_file(&root.join(&etcd.server_path)));
    sums.insert(
        "containerd17",
        sha256_file(&containerd_artifact(root, scratch)),
    );
    let docker = root.join(format!("cn/docker/{v}/docker-{v}.tgz", v = DOCKER_VERSION));
    docker_tgz(&docker, scratch);
    let compose = root.join(format!("cn/compose/{}/docker-compose", COMPOSE_VERSION));
    common::artifacts::copy_exec(&compose_bin(), &compose);
    let registry = root.join(format!(
        "cn/registry/{v}/docker-registry-{v}-linux-amd64.tgz",
        v = REGISTRY_VERSION
    ));
    registry_image_tgz(&registry, scratch);
    format!(
        r#"  docker:
    url: "docker/{{version}}/docker-{{version}}.tgz"
    dest: "docker/{{version}}/{{arch}}/docker-{{version}}.tgz"
    sha256:
      "{dv}": {{amd64: "{docker}"}}
  docker_compose:
    url: "compose/{{version}}/docker-compose"
    dest: "image-registry/docker-compose/{{version}}/{{arch}}/docker-compose"
    sha256:
      "{cv}": {{amd64: "{compose}"}}
  docker_registry:
    url: "registry/{{version}}/docker-registry-{{version}}-linux-{{arch}}.tgz"
    dest: "image-registry/docker-registry/{{version}}/{{arch}}/docker-registry-{{version}}-linux-{{arch}}.tgz"
    sha256:
      "{rv}": {{amd64: "{registry}"}}
"#,
        dv = DOCKER_VERSION,
        docker = sha256_file(&docker),
        cv = COMPOSE_VERSION,
        compose = sha256_file(&compose),
        rv = REGISTRY_VERSION,
        registry = sha256_file(&registry),
    )
}

/// A config the precheck passes with v1.20.2 and the served artifacts; `mirror` is the
/// server's root URL (runc is served only under /mirror/). etcd and containerd are newer
/// than the test manifest's entries: download.sha256 gives their digests.
fn config(p: &Project, mirror: &str, sums: &BTreeMap<&str, String>) -> String {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let machine_has_swap = swaps.lines().count() > 1;
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  cluster_require:
    kube_version_min_required: v1.20.0
    allow_unsupported_kube_version: true
    calico_allowed_versions: {{v3.31: [v1.20]}}
  kubernetes: {{kube_version: v1.20.2, helm_version: v3.18.5, sandbox_image: {{tag: "3.10"}}}}
  etcd: {{deployment_type: external, etcd_version: {etcd}}}
  cri:
    container_manager: containerd
    containerd_version: {containerd}
    runc_version: v1.1.5
    crictl_version: v1.34.0
    docker_version: "{docker}"
    containerd:
      data_root: /tmp/kk-containerd
  cni: {{type: calico, multi_cni: none, cni_plugins_version: v1.1.1, calico_version: v3.31.3}}
  storage_class: {{local: {{enabled: false}}, nfs: {{enabled: false}}}}
  image_registry:
    type: docker-registry
    docker_registry_version: "{registry}"
    dockercompose_version: {compose}
    auth:
      password: "{password}"
  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url:
      runc: "{mirror}mirror/runc/{{version}}/runc.{{arch}}"
    sha256:
      kubectl: "{kubectl}"
      etcd: "{etcd_sha}"
      containerd: "{containerd_sha}"
  native:
    disable_swap: {swap}
    sysctl_skip: [vm., fs., kernel., net.core.rmem_max, net.core.wmem_max, net.ipv4.neigh., net.ipv6.neigh.]
    ntp:
      enabled: false
"#,
        etcd = ETCD_VERSION,
        containerd = CONTAINERD_VERSION,
        docker = DOCKER_VERSION,
        registry = REGISTRY_VERSION,
        compose = COMPOSE_VERSION,
        password = PASSWORD,
        manifest = p.path("artifacts.yaml").display(),
        mirror = mirror,
        kubectl = sums["kubectl"],
        etcd_sha = sums["etcd35"],
        containerd_sha = sums["containerd17"],
        swap = !machine_has_swap,
    )
}

/// `kk create cluster -i inventory.yaml -c config.yaml --workdir wd --output json <extra…>`;
/// the registry password appears nowhere in what it prints or records.
fn create_cluster(p: &Project, extra: &[&str]) -> Run {
    let r = p.kk_flow(&["create", "cluster"], extra);
    assert!(
        !r.stdout.contains(PASSWORD) && !r.stderr.contains(PASSWORD),
        "the registry password was printed\n{}",
        r.describe()
    );
    let leaked = std::process::Command::new("grep")
        .args(["-rl", PASSWORD])
        .arg(p.path("wd/runs"))
        .output()
        .unwrap();
    assert!(
        leaked.stdout.is_empty(),
        "the registry password is in the run records: {}",
        String::from_utf8_lossy(&leaked.stdout)
    );
    r
}

/// Every host result with the `file:line` of its task (from the task_start before it).
fn results(r: &Run) -> Vec<(String, Value)> {
    let mut path = String::new();
    let mut out = Vec::new();
    for e in r.events() {
        if e["event"] == "task_start" {
            path = e["path"].as_str().unwrap_or_default().to_string();
        } else if e["event"] == "host_result" {
            out.push((path.clone(), e));
        }
    }
    out
}

/// A one-line description of a result, for assertion messages.
fn line(path: &str, e: &Value) -> String {
    format!(
        "{} on {} ({}): {} changed={}",
        e["task"], e["host"], path, e["status"], e["changed"]
    )
}

/// Failed (not ignored) or unreachable results.
fn failures(r: &Run) -> Vec<String> {
    results(r)
        .iter()
        .filter(|(_, e)| {
            e["status"] == "unreachable" || e["status"] == "failed" && e["ignored"] != true
        })
        .map(|(path, e)| format!("{}\n{}", line(path, e), e["result"]))
        .collect()
}

/// What a run could change on a host: every file under the places the flow writes, with
/// size, mode and mtime, and the enabled units.
fn listing(bed: &TestBed, i: usize) -> String {
    sh(
        bed,
        i,
        "find /etc /usr/local /opt /var/lib /root -xdev -not -path '/var/lib/systemd/*' \
         -printf '%p %s %m %T@\\n' 2>/dev/null | LC_ALL=C sort; systemctl list-unit-files --state=enabled --no-legend",
    )
}

/// `etcdctl … <args>` on host `i` with the client certificate kk installed.
fn etcdctl(bed: &TestBed, i: usize, args: &str) -> String {
    sh(
        bed,
        i,
        &format!(
            "/usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
             --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key {} 2>&1",
            bed.hosts()[i].ip,
            args
        ),
    )
}

#[test]
fn create_cluster_installs_etcd_registry_and_containerd_then_changes_nothing() {
    let bed = TestBed::start(4).expect("boot test hosts");
    let p = Project::new();

    // The artifact server (the controller downloads, so loopback is enough).
    let root = p.path("srv");
    let scratch = p.path("scratch");
    let served = build_server(&root, &scratch);
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let mut sums: BTreeMap<&'static str, String> = BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    let extra = serve_install_artifacts(&root, &scratch, &mut sums);
    p.file("artifacts.yaml", &manifest(&srv.url("cn/"), &sums, &extra))
        .file("config.yaml", &config(&p, &srv.url(""), &sums))
        .file("inventory.yaml", &inventory(&bed));
    // The images the flow pushes into the registry (as `kk artifact export` leaves them).
    let digest = busybox_layout(&p.path("wd/kubekey/images"), IMAGE);

    // Hooks: a global pre-install script (every host) and a post-install script for
    // kk-w1 only. Each appends a line, so a second run shows they ran again.
    p.file(
        "wd/scripts/pre_install.sh",
        "#!/bin/sh\nset -e\necho \"pre $(hostname)\" >> /root/kk-e2e-hooks\n",
    )
    .file(
        "wd/scripts/post_install_kk-w1.sh",
        "#!/bin/sh\nset -e\necho \"post $(hostname)\" >> /root/kk-e2e-hooks\n",
    );

    // 0. --check on fresh hosts: changes reported, no file of any host changes. (The hook
    //    scripts are not run in check mode: they are the user's own commands.)
    let before: Vec<String> = (0..4).map(|i| listing(&bed, i)).collect();
    let r = create_cluster(&p, &["--check"]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    for (i, name) in NAMES.iter().enumerate() {
        assert!(
            r.recap(name)["changed"].as_i64().unwrap_or(0) > 0,
            "--check reports what would change on {}\n{}",
            name,
            r.describe()
        );
        assert_eq!(
            listing(&bed, i),
            before[i],
            "--check changed files on {}",
            name
        );
    }

    // 1. The first run does everything.
    let r = create_cluster(&p, &[]);
    r.code(0);
    let all = results(&r);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));

    // Every precheck check ran and passed (none failed, even ignored).
    let prechecks: Vec<&(String, Value)> = all
        .iter()
        .filter(|(path, _)| path.contains("roles/precheck/"))
        .collect();
    assert!(
        prechecks.len() > 20,
        "precheck ran only {}",
        prechecks.len()
    );
    for (path, e) in &prechecks {
        assert!(
            e["status"] == "ok" || e["status"] == "skipped",
            "precheck: {}\n{}",
            line(path, e),
            e["result"]
        );
    }

    // Hooks: the global pre-install script on every host (before the hostname changed),
    // the host's post-install script on kk-w1 only (after).
    for (i, name) in NAMES.iter().enumerate() {
        let log = sh(&bed, i, "cat /root/kk-e2e-hooks");
        let want = if *name == "kk-w1" {
            format!("pre node{}\npost kk-w1", i + 1)
        } else {
            format!("pre node{}", i + 1)
        };
        assert_eq!(log, want, "hook log on {}", name);
    }

    // The controller: certificates, and every artifact with its digest, fetched once.
    for f in [
        "root.crt",
        "etcd-kk-cp1.crt",
        "etcd-client.crt",
        "image_registry.crt",
    ] {
        assert!(p.path("wd/pki").join(f).is_file(), "{} missing", f);
    }
    let bin = p.path("wd/kubekey");
    let wanted: Vec<_> = served
        .into_iter()
        .filter(|s| s.component != "etcd" && s.component != "containerd")
        .collect();
    assert_landed(&wanted, &bin, &sums);
    for (dest, sum) in [
        (
            format!(
                "etcd/{v}/amd64/etcd-{v}-linux-amd64.tar.gz",
                v = ETCD_VERSION
            ),
            &sums["etcd35"],
        ),
        (
            format!(
                "containerd/{v}/amd64/containerd-{b}-linux-amd64.tar.gz",
                v = CONTAINERD_VERSION,
                b = CONTAINERD_VERSION.trim_start_matches('v')
            ),
            &sums["containerd17"],
        ),
    ] {
        assert_eq!(&sha256_file(&bin.join(&dest)), sum, "{}", dest);
    }
    // Each served file once: the shared tree (less the etcd 3.4 and containerd 1.6 it also
    // holds) plus etcd, containerd, docker, compose and the registry image.
    assert_eq!(
        srv.requests().len(),
        wanted.len() + 5,
        "{:?}",
        srv.requests()
    );

    // The nodes: hostname and the kubekey hosts block.
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(sh(&bed, i, "hostname"), *name);
        assert!(sh(&bed, i, "cat /etc/hosts").contains("# kubekey hosts BEGIN"));
    }

    // etcd: three healthy TLS members; a key written now survives the second run.
    let health = etcdctl(&bed, 0, "endpoint health --cluster");
    assert_eq!(
        health.lines().filter(|l| l.contains("is healthy")).count(),
        3,
        "{}",
        health
    );
    etcdctl(&bed, 0, "put kk-e2e kept");

    // The registry on kk-reg: the certs/init certificate, credentials required, and the
    // pushed image listed.
    let reg = bed.hosts()[3].ip.to_string();
    let ca = p.path("wd/pki/root.crt").display().to_string();
    let curl = |args: &[&str]| -> String {
        let out = std::process::Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", "--cacert", &ca])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(curl(&[&format!("https://{}/v2/", reg)]).ends_with("\n401"));
    let auth = format!("admin:{}", PASSWORD);
    let catalog = curl(&["-u", &auth, &format!("https://{}/v2/_catalog", reg)]);
    assert!(
        catalog.contains("\"kk/busybox\"") && catalog.ends_with("\n200"),
        "{}",
        catalog
    );

    // containerd on every Kubernetes node: active, the artifact's version, and it pulls the
    // pushed image from the registry through the configuration kk wrote (the cluster CA
    // and credentials under /etc/containerd/certs.d), then runs it.
    let pull = format!("{}/kk/busybox:e2e", reg);
    for (i, name) in NAMES[..3].iter().enumerate() {
        assert_eq!(sh(&bed, i, "systemctl is-active containerd"), "active");
        assert!(
            sh(&bed, i, "ctr version").contains("1.7.24"),
            "ctr version on {}",
            name
        );
        sh(
            &bed,
            i,
            &format!(
                "ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d {} >/dev/null",
                pull
            ),
        );
        let have = sh(
            &bed,
            i,
            &format!(
                "ctr -n k8s.io images ls | grep -F '{}' | awk '{{print $3}}'",
                pull
            ),
        );
        assert_eq!(have, digest, "the pulled image on {}", name);
    }
    // Docker on the registry host.
    assert!(sh(&bed, 3, "docker info --format '{{.ServerVersion}}'").contains("26.1.5"));

    // 2. A second run: exit 0, nothing downloaded, only the hook scripts change something
    //    (a script always reports a change); etcd's data is still there.
    let before_requests = srv.requests().len();
    let r2 = create_cluster(&p, &[]);
    r2.code(0);
    assert_eq!(
        srv.requests().len(),
        before_requests,
        "the second run fetched"
    );
    let changed: Vec<String> = results(&r2)
        .iter()
        .filter(|(path, e)| e["changed"] == true && !path.contains("playbooks/hook/"))
        .map(|(path, e)| line(path, e))
        .collect();
    assert!(
        changed.is_empty(),
        "only the hook scripts may change something on a second run: {:#?}",
        changed
    );
    for area in [
        "roles/native",
        "roles/etcd/",
        "roles/cri/",
        "roles/image_registry/",
    ] {
        assert!(
            results(&r2).iter().any(|(path, _)| path.contains(area)),
            "no task of {} ran the second time",
            area
        );
    }
    assert_eq!(etcdctl(&bed, 1, "get kk-e2e --print-value-only"), "kept");

    // 3. --check after the real run: nothing would change (the hooks are not run).
    let r3 = create_cluster(&p, &["--check"]);
    r3.code(0);
    for name in NAMES.iter().chain(["localhost"].iter()) {
        assert_eq!(r3.recap(name)["changed"], 0, "{}\n{}", name, r3.describe());
    }

    // 4. `--tags etcd` runs the etcd part alone (with the checks, certificates and
    //    downloads it needs): no task of the registry, the runtime or the OS init runs.
    let r4 = create_cluster(&p, &["--tags", "etcd"]);
    r4.code(0);
    let paths: Vec<String> = results(&r4).into_iter().map(|(p, _)| p).collect();
    assert!(paths.iter().any(|p| p.contains("roles/etcd/")));
    for other in ["roles/cri/", "roles/image_registry/", "roles/native/init"] {
        assert!(
            !paths.iter().any(|p| p.contains(other)),
            "--tags etcd ran {}",
            other
        );
    }
    assert!(
        !results(&r4).iter().any(|(_, e)| e["changed"] == true),
        "--tags etcd on the installed cluster changed something"
    );
}
