//! CAPKK's machine side (crates/capkk, `capkk::machine::EngineDriver`) on a real test
//! host: every KKInstance phase — bootstrap, repository, binary, container_manager,
//! provisioning, reset — run in-process by the driver as the KKInstance controller runs it,
//! through the bundled phase playbooks and kk's engine over SSH, checked on the host.
//!
//! Real: the host (sshd, systemd, Debian 12), the distribution packages already on it
//! (conntrack, socat, ipset, ebtables, curl: the hosts reach no mirror, so `iso: none`
//! finds them installed), containerd 1.7.24 (Debian trixie) and runc (Debian), kubectl
//! (Debian's kubernetes-client) and the CNI plugins (Debian's containernetworking-plugins),
//! each served over HTTP on loopback from the test's artifact server and downloaded with
//! sha256 verification through the KKCluster's component.overrides.
//! FAKE (tests/fakes, no Kubernetes binary can be had here): kubeadm and kubelet (the
//! fake's journal records the `kubeadm init` provisioning asked for), crictl (a shell
//! stand-in: no Debian release packages cri-tools).
//!
//! Also: a second run of every phase changes nothing (the engine's changed counts), reset
//! leaves the machine clean and a second reset changes nothing; an unreachable address is a
//! retryable error; a wrong sha256 override is a terminal one naming the file and both
//! digests.
//!
//! Offline (`spec.repository.iso`): a host with no route to any mirror and some required
//! packages removed installs them from an apt repository built on this controller by kk's
//! download/repository role (tests/offline_packages.rs's way, real Debian packages), put
//! under the driver's binary_dir/repository: `auto` finds the release's own, a named
//! directory and a named image (loop-mounted) are used as named.

use crate::common;
use crate::offline_packages;

use capkk::api::{
    Auth, Component, ContainerManager, KKClusterSpec, KKInstanceSpec, Repository, Role,
};
use capkk::machine::{BootstrapData, EngineDriver, Job, Phase};
use common::capkk_shared::{b64, driver, runtime, serve, Artifacts, KUBE};
use common::sh;
use serde_json::{json, Value};
use testbed::artifacts::fakes::journal;
use testbed::TestBed;

const NAME: &str = "capkk-m1";

/// The kubeadm configuration Cluster API's KubeadmConfig renders (v1beta4 for v1.33).
fn kubeadm_yaml(ip: &str, socket: &str) -> String {
    format!(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint: {{advertiseAddress: {ip}, bindPort: 6443}}\nnodeRegistration: {{name: {NAME}, criSocket: {socket}}}\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: {KUBE}\ncontrolPlaneEndpoint: {ip}:6443\n"
    )
}

/// The provisioning steps of a kubeadm control plane's cloud-init (what
/// capkk::provisioning makes of `write_files` and `runcmd`).
fn steps(ip: &str, socket: &str) -> Value {
    json!([
        {"mkdir": {"path": "/run/cluster-api", "mode": "0755"}},
        {"write_file": {"path": "/etc/kubernetes/capkk-note.conf", "content_base64": b64("owned by kube\n"), "mode": "0640", "owner": "kube:kube"}},
        {"write_file": {"path": "/run/kubeadm/kubeadm.yaml", "content_base64": b64(&kubeadm_yaml(ip, socket)), "mode": "0600"}},
        {"write_file": {"path": "/etc/kubernetes/capkk-note.conf", "content_base64": b64("appended\n"), "mode": "0640", "owner": "kube:kube", "append": true}},
        {"argv": ["kubeadm", "init", "--config", "/run/kubeadm/kubeadm.yaml"]},
        {"shell": "echo success > /run/cluster-api/bootstrap-success.complete"},
    ])
}

/// The same as a kubeadm control plane's cloud-config as Cluster API's bootstrap provider
/// writes it (a Jinja-templated document: the node name comes from the machine), mapped
/// by capkk::provisioning on the way to the playbook.
fn cloud_config(ip: &str, socket: &str) -> String {
    let kubeadm = kubeadm_yaml(ip, socket).replace(
        &format!("name: {NAME},"),
        "name: '{{ ds.meta_data.local_hostname }}',",
    );
    let indented: String = kubeadm.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        "## template: jinja\n#cloud-config\n\nwrite_files:\n\
-   path: /etc/kubernetes/capkk-note.conf\n    owner: kube:kube\n    permissions: '0640'\n    encoding: b64\n    content: {note}\n\
-   path: /run/kubeadm/kubeadm.yaml\n    owner: root:root\n    permissions: '0600'\n    content: |\n{indented}\
-   path: /etc/kubernetes/capkk-note.conf\n    owner: kube:kube\n    permissions: '0640'\n    append: true\n    content: |\n      appended\n\
-   path: /run/cluster-api/placeholder\n    owner: root:root\n    permissions: '0640'\n    content: \"creates /run/cluster-api\"\n\
runcmd:\n  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml  && echo success > /run/cluster-api/bootstrap-success.complete'\n",
        note = b64("owned by kube\n"),
    )
}

fn job(bed: &TestBed, a: &Artifacts, manager: &str) -> Job {
    let h = &bed.hosts()[0];
    let socket = if manager == "docker" {
        "unix:///var/run/cri-dockerd.sock"
    } else {
        "unix:///run/containerd/containerd.sock"
    };
    Job {
        instance: KKInstanceSpec {
            name: NAME.into(),
            address: h.ip.to_string(),
            roles: vec![Role::ControlPlane, Role::Worker],
            auth: Auth {
                user: "root".into(),
                // As text: the driver writes it to a 0600 file for the run.
                private_key: std::fs::read_to_string(bed.key_path()).unwrap(),
                ..Default::default()
            },
            container_manager: ContainerManager {
                type_: manager.into(),
                ..Default::default()
            },
            repository: Some(Repository {
                iso: "none".into(),
                update: false,
                packages: vec!["curl".into()],
            }),
            ..Default::default()
        },
        cluster: KKClusterSpec {
            component: Some(Component {
                overrides: a.overrides(),
                ..Default::default()
            }),
            ..Default::default()
        },
        kubernetes_version: Some(KUBE.into()),
        // containerd gets Cluster API's cloud-config, docker the mapped steps directly.
        bootstrap_data: Some(if manager == "containerd" {
            BootstrapData {
                value: cloud_config(&h.ip.to_string(), socket).into_bytes(),
                format: "cloud-config".into(),
            }
        } else {
            BootstrapData {
                value: steps(&h.ip.to_string(), socket).to_string().into_bytes(),
                format: capkk::machine::steps::STEPS_FORMAT.into(),
            }
        }),
        provider_id: Some(format!("kk://default/{NAME}")),
    }
}

/// Runs every build phase in order; the changed tasks of each.
fn build(rt: &tokio::runtime::Runtime, d: &EngineDriver, job: &Job) -> Vec<(Phase, Vec<String>)> {
    Phase::BUILD
        .iter()
        .map(|&p| {
            let t = std::time::Instant::now();
            let r = rt
                .block_on(d.run_phase(p, job))
                .unwrap_or_else(|e| panic!("{} failed: {}", p.as_str(), e));
            eprintln!(
                "capkk_machine: {} in {:.1}s, changed {}",
                p.as_str(),
                t.elapsed().as_secs_f64(),
                r.changed
            );
            (p, r.changed_tasks)
        })
        .collect()
}

#[test]
fn containerd_machine_through_every_phase_then_reset() {
    let started = std::time::Instant::now();
    let bed = TestBed::start(1).expect("boot a test host");
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path(), false);
    let d = driver(dir.path());
    let job = job(&bed, &a, "containerd");
    let rt = runtime();

    let first = build(&rt, &d, &job);
    for (p, changed) in &first {
        if *p != Phase::Repository {
            assert!(!changed.is_empty(), "{} changed nothing", p.as_str());
        }
    }

    // bootstrap: directories, hostname, the kube user.
    assert_eq!(sh(&bed, 0, "hostname"), NAME);
    assert_eq!(sh(&bed, 0, "cat /etc/hostname"), NAME);
    sh(
        &bed,
        0,
        "test -d /etc/kubernetes/manifests && test -d /var/lib/kubelet && test -d /opt/cni/bin && test -d /etc/cni/net.d",
    );
    let kube = sh(&bed, 0, "getent passwd kube");
    assert!(kube.ends_with(":/sbin/nologin"), "{}", kube);
    // The sysctl the cluster needs (per network namespace, so the host's own).
    assert_eq!(sh(&bed, 0, "sysctl -n net.ipv4.ip_forward"), "1");
    // repository: the packages the node needs and the one asked for.
    for p in ["conntrack", "socat", "ipset", "ebtables", "ipvsadm", "curl"] {
        assert_eq!(
            sh(&bed, 0, &format!("dpkg-query -W -f='${{Status}}' {p}")),
            "install ok installed",
            "{p}"
        );
    }
    // binary: each with the served sha256.
    for (id, path) in [
        ("kubeadm", "/usr/local/bin/kubeadm"),
        ("kubelet", "/usr/local/bin/kubelet"),
        ("kubectl", "/usr/local/bin/kubectl"),
    ] {
        let got = sh(&bed, 0, &format!("sha256sum {path} | cut -d' ' -f1"));
        assert_eq!(got, a.sums[id], "{path}");
    }
    sh(
        &bed,
        0,
        "test -x /opt/cni/bin/bridge && test -x /opt/cni/bin/loopback && test -x /usr/local/bin/crictl && systemctl is-enabled kubelet",
    );
    // container_manager: containerd runs, with Debian's runc.
    assert_eq!(sh(&bed, 0, "systemctl is-active containerd"), "active");
    assert!(sh(&bed, 0, "/usr/local/bin/containerd --version").contains("1.7.24"));
    // provisioning: files with content, mode and owner; kubeadm init as asked.
    assert_eq!(
        sh(&bed, 0, "cat /etc/kubernetes/capkk-note.conf"),
        "owned by kube\nappended"
    );
    assert_eq!(
        sh(
            &bed,
            0,
            "stat -c '%a %U %G' /etc/kubernetes/capkk-note.conf /run/kubeadm/kubeadm.yaml"
        ),
        "640 kube kube\n600 root root"
    );
    assert_eq!(
        sh(&bed, 0, "cat /run/cluster-api/bootstrap-success.complete"),
        "success"
    );
    // The kubelet registers the Node with the provider ID Cluster API matches.
    assert_eq!(
        sh(&bed, 0, "cat /etc/default/kubelet"),
        format!("KUBELET_EXTRA_ARGS=--provider-id=kk://default/{NAME}")
    );
    // The Jinja template rendered with the machine's name.
    assert!(
        sh(&bed, 0, "cat /run/kubeadm/kubeadm.yaml").contains(&format!("name: '{NAME}'")),
        "{}",
        sh(&bed, 0, "cat /run/kubeadm/kubeadm.yaml")
    );
    let inits: Vec<Value> = journal(&bed, 0)
        .into_iter()
        .filter(|e| e["tool"] == "kubeadm" && e["args"][0] == "init")
        .collect();
    assert_eq!(inits.len(), 1, "{:?}", inits);
    assert_eq!(
        inits[0]["args"],
        json!(["init", "--config", "/run/kubeadm/kubeadm.yaml"])
    );
    assert_eq!(inits[0]["exit"], 0, "{}", inits[0]);
    let before = sh(
        &bed,
        0,
        "find /etc /usr/local /opt /var/lib/capkk /run/kubeadm -xdev -printf '%p %s %m %T@\\n' 2>/dev/null | LC_ALL=C sort",
    );

    // Again: nothing changes.
    for (p, changed) in build(&rt, &d, &job) {
        assert!(
            changed.is_empty(),
            "{} changed again: {:?}",
            p.as_str(),
            changed
        );
    }
    let after = sh(
        &bed,
        0,
        "find /etc /usr/local /opt /var/lib/capkk /run/kubeadm -xdev -printf '%p %s %m %T@\\n' 2>/dev/null | LC_ALL=C sort",
    );
    assert_eq!(before, after, "a second run touched files");

    // Reset: clean and reusable; a second reset changes nothing.
    let r = rt.block_on(d.run_phase(Phase::Reset, &job)).unwrap();
    assert!(r.changed > 0);
    let left = sh(
        &bed,
        0,
        "for f in /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl /usr/local/bin/crictl /usr/local/bin/containerd /usr/local/bin/runc /etc/kubernetes /var/lib/kubelet /opt/cni /etc/cni /etc/containerd /tmp/kk-containerd /var/lib/capkk /etc/systemd/system/kubelet.service /etc/systemd/system/containerd.service /etc/default/kubelet; do [ ! -e $f ] || echo $f; done; getent passwd kube; getent group kube; true",
    );
    assert_eq!(left, "", "left after reset");
    assert_eq!(
        sh(&bed, 0, "systemctl is-active containerd kubelet || true"),
        "inactive\ninactive"
    );
    let resets = journal(&bed, 0)
        .into_iter()
        .filter(|e| e["tool"] == "kubeadm" && e["args"][0] == "reset")
        .count();
    assert_eq!(resets, 1);
    let again = rt.block_on(d.run_phase(Phase::Reset, &job)).unwrap();
    assert_eq!(again.changed, 0, "{:?}", again.changed_tasks);
    eprintln!(
        "capkk_machine: containerd flow in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn docker_machine_with_cri_dockerd_then_reset() {
    let started = std::time::Instant::now();
    let bed = TestBed::start(1).expect("boot a test host");
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path(), true);
    let d = driver(dir.path());
    let job = job(&bed, &a, "docker");
    let rt = runtime();
    build(&rt, &d, &job);
    assert_eq!(
        sh(&bed, 0, "systemctl is-active docker cri-docker"),
        "active\nactive"
    );
    assert!(sh(&bed, 0, "docker version --format '{{.Server.Version}}'").contains("26.1.5"));
    assert_eq!(
        sh(
            &bed,
            0,
            "test -x /usr/local/bin/containerd && echo no-separate-runtime || echo none"
        ),
        "no-separate-runtime",
        "docker's own containerd is installed with it"
    );
    let init = journal(&bed, 0)
        .into_iter()
        .find(|e| e["tool"] == "kubeadm" && e["args"][0] == "init")
        .expect("kubeadm init ran");
    assert_eq!(init["exit"], 0, "{}", init);
    // The runtime phase again: nothing to do.
    let r = rt
        .block_on(d.run_phase(Phase::ContainerManager, &job))
        .unwrap();
    assert_eq!(r.changed, 0, "{:?}", r.changed_tasks);

    rt.block_on(d.run_phase(Phase::Reset, &job)).unwrap();
    let left = sh(
        &bed,
        0,
        "for f in /usr/local/bin/docker /usr/local/bin/dockerd /usr/local/bin/cri-dockerd /usr/local/bin/kubeadm /etc/systemd/system/docker.service /etc/systemd/system/cri-docker.service /var/lib/capkk /etc/kubernetes; do [ ! -e $f ] || echo $f; done",
    );
    assert_eq!(left, "", "left after reset");
    let again = rt.block_on(d.run_phase(Phase::Reset, &job)).unwrap();
    assert_eq!(again.changed, 0, "{:?}", again.changed_tasks);
    eprintln!(
        "capkk_machine: docker flow in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn unreachable_is_retryable_and_a_wrong_sha256_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path(), false);
    let d = driver(dir.path());
    let rt = runtime();
    let mut job = Job {
        instance: KKInstanceSpec {
            name: "capkk-gone".into(),
            // Nothing listens on loopback port 1.
            address: "127.0.0.1".into(),
            auth: Auth {
                port: Some(1),
                password: "Not-In-Output-77".into(),
                timeout: Some("3s".into()),
                ..Default::default()
            },
            ..Default::default()
        },
        cluster: KKClusterSpec {
            component: Some(Component {
                overrides: a.overrides(),
                ..Default::default()
            }),
            ..Default::default()
        },
        kubernetes_version: Some(KUBE.into()),
        ..Default::default()
    };
    let e = rt
        .block_on(d.run_phase(Phase::Bootstrap, &job))
        .unwrap_err();
    eprintln!("capkk_machine: unreachable → {}", e.message);
    assert!(e.retryable, "{}", e.message);
    assert!(e.message.contains("unreachable"), "{}", e.message);
    assert!(!e.message.contains("Not-In-Output-77"), "{}", e.message);

    // The binary phase downloads on the controller first: a wrong digest stops it there.
    let wrong = "0".repeat(64);
    let comp = job.cluster.component.as_mut().unwrap();
    comp.overrides
        .iter_mut()
        .find(|o| o.id == "kubeadm")
        .unwrap()
        .checksum
        .value = wrong.clone();
    let e = rt.block_on(d.run_phase(Phase::Binary, &job)).unwrap_err();
    eprintln!("capkk_machine: wrong sha256 → {}", e.message);
    assert!(!e.retryable, "{}", e.message);
    for want in [
        a.srv.url(&format!("cn/kube/{KUBE}/kubeadm")),
        wrong,
        a.sums["kubeadm"].clone(),
    ] {
        assert!(e.message.contains(&want), "no {} in: {}", want, e.message);
    }
    assert!(
        !d.workdir()
            .join(format!("kubekey/kube/{KUBE}/amd64/kubeadm"))
            .exists(),
        "the refused file was stored"
    );
}

/// A job that runs only the repository phase on the bed's host, with `iso`.
fn repository_job(bed: &TestBed, iso: &str) -> Job {
    Job {
        instance: KKInstanceSpec {
            name: NAME.into(),
            address: bed.hosts()[0].ip.to_string(),
            auth: Auth {
                user: "root".into(),
                private_key: std::fs::read_to_string(bed.key_path()).unwrap(),
                ..Default::default()
            },
            repository: Some(Repository {
                iso: iso.into(),
                update: false,
                packages: vec![],
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn offline_repository_auto_then_named_directory_and_image() {
    let started = std::time::Instant::now();
    let bed = TestBed::start(1).expect("boot a test host");
    offline_packages::assert_no_mirror(&bed);
    offline_packages::purge(&bed);
    let apt_before = sh(&bed, 0, offline_packages::APT_STATE);
    let export = offline_packages::export_repository(&bed);
    eprintln!(
        "capkk_machine: repository exported in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir().unwrap();
    let d = driver(dir.path());
    let repos = d.workdir().join("kubekey/repository");
    std::fs::create_dir_all(&repos).unwrap();
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(export.path("wd/kubekey/repository/debian-12-debs-amd64"))
        .arg(&repos)
        .status()
        .unwrap();
    assert!(cp.success());
    let rt = runtime();
    let phase = |iso: &str| {
        let t = std::time::Instant::now();
        let r = rt
            .block_on(d.run_phase(Phase::Repository, &repository_job(&bed, iso)))
            .unwrap_or_else(|e| panic!("repository phase with iso {iso:?}: {}", e.message));
        eprintln!(
            "capkk_machine: repository ({iso}) in {:.1}s, changed {}",
            t.elapsed().as_secs_f64(),
            r.changed
        );
        r
    };
    let installed = |r: &capkk::machine::PhaseReport| {
        assert!(
            r.changed_tasks.contains(&format!(
                "Repository | Install the missing packages from it on {NAME}"
            )),
            "{:?}",
            r.changed_tasks
        );
        offline_packages::assert_host_installed(&bed, &apt_before);
    };

    // `auto`: the repository of the machine's release (debian-12-debs-amd64).
    installed(&phase("auto"));
    let again = phase("auto");
    assert_eq!(again.changed, 0, "{:?}", again.changed_tasks);

    // A named directory, under a name `auto` would not pick.
    std::fs::rename(repos.join("debian-12-debs-amd64"), repos.join("site-debs")).unwrap();
    offline_packages::purge(&bed);
    installed(&phase("site-debs"));

    // A named image of it (loop-mounted on the host), the directory gone; then nothing to do.
    offline_packages::ext4_image(&repos.join("site-debs"), &repos.join("site-debs.img"));
    std::fs::remove_dir_all(repos.join("site-debs")).unwrap();
    offline_packages::purge(&bed);
    installed(&phase("site-debs.img"));
    let again = phase("site-debs.img");
    assert_eq!(again.changed, 0, "{:?}", again.changed_tasks);

    // A name that is not there: a terminal error naming the path.
    let e = rt
        .block_on(d.run_phase(Phase::Repository, &repository_job(&bed, "gone.iso")))
        .unwrap_err();
    assert!(!e.retryable, "{}", e.message);
    assert!(
        e.message.contains(&format!("{}/gone.iso", repos.display())),
        "{}",
        e.message
    );
    eprintln!(
        "capkk_machine: offline repository flow in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
