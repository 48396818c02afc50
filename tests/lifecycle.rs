//! The life of a cluster, one scenario on nine real test hosts, each step asserted and timed
//! (the timings are printed at the end):
//!
//! 1. `kk create cluster`: external etcd on kk-e1..kk-e3, control plane kk-cp1, workers kk-w1
//!    and kk-w2, the image registry on kk-reg (Kubernetes v1.30.8, calico, containerd,
//!    haproxy in front of the API server). kk-w3 and kk-e4 are inventory hosts in no group.
//! 2. `kk add nodes --worker kk-w3 --etcd kk-e4 --override`: kk-e4 joins etcd as a learner and
//!    is promoted (four voting members: a warning, not a refusal, for an installed cluster),
//!    kube-apiserver is pointed at it, kk-w3 gets containerd and joins; the others change
//!    only what the new nodes need of them; the inventory file gains the two `- node` lines
//!    with its comments kept.
//! 3. `kk certs renew`: every etcd member serves a new certificate from the same CA,
//!    restarted one at a time and healthy, its data kept; the control plane renews through
//!    the FAKE kubeadm; the registry serves its renewed certificate.
//! 4. `kk delete nodes kk-w2 kk-e4 --all --with-data --override`: kk-w2 cordoned, drained,
//!    released by calicoctl and deleted from kk-cp1, its Kubernetes, runtime and data
//!    removed; kk-e4 leaves etcd through a member that stays (three voting members again)
//!    and kube-apiserver forgets it; both hosts fresh again; the inventory loses the lines;
//!    again, nothing changes. Deleting the only control plane is refused before anything
//!    changes.
//! 5. `kk artifact images --pull`, then `--push`: an image of another (real, local) registry
//!    is pulled into binary_dir/images and pushed into the cluster's registry, from which
//!    containerd on kk-cp1 pulls it.
//! 6. `kk delete cluster --all --with-data` (after a `--check` that changes nothing): every
//!    host is back to what it was before step 1 (files outside /var/log and /tmp, units,
//!    processes, sockets, links; every difference printed); a second delete changes nothing.
//! 7. `kk init registry` on kk-reg, fresh again: the registry and only the registry.
//!
//! Real: kk over SSH, etcd 3.5.16, containerd 1.7.24, runc, Docker 26.1.5, docker-compose
//! 2.26.1, the registry 2.8.2 in a container (tests/common/docker.rs), openssl and curl on the
//! controller, every file the roles write and remove. FAKES (tests/fakes; nothing here can
//! run an API server): kubeadm, kubelet, kubectl, helm, calicoctl and the charts; a plain
//! listener on kk-cp1's port 6443 stands in for kube-apiserver where kk waits for it.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::cluster::{failures, inits, kube_calls, line, results, serve_cluster};
use common::cri::busybox_layout;
use common::fakes::{self, FakeArtifacts};
use common::fresh::{differences, state};
use common::registry::curl;
use common::{assert_secret_hidden, sh, Project, Run};
use serde_json::Value;
use testbed::TestBed;

/// Test-bed hosts 0..9 by inventory name.
const NAMES: [&str; 9] = [
    "kk-e1", "kk-e2", "kk-e3", "kk-cp1", "kk-w1", "kk-w2", "kk-reg", "kk-w3", "kk-e4",
];
const CP: usize = 3;
const W2: usize = 5;
const REG: usize = 6;
const W3: usize = 7;
const E4: usize = 8;
const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";
const CALICO: &str = "v3.29.7";
const LOCALPV: &str = "4.4.0";
/// The registry password: never printed or recorded.
const PASSWORD: &str = "Lifecycle-Registry-Secret-5";
/// The image binary_dir/images holds from the start (the create pushes it).
const IMAGE: &str = "docker.io/kk/busybox:life";

/// The inventory's groups, block lists with comments, as a user writes them; `--override`
/// must keep all of it. `workers`/`etcd` are the `- node` lines.
fn inventory(bed: &TestBed, workers: &[&str], etcd: &[&str]) -> String {
    let items = |l: &[&str]| -> String { l.iter().map(|h| format!("        - {}\n", h)).collect() };
    let mut s =
        String::from("# The lifecycle scenario's cluster; comments must survive --override.\n");
    s.push_str(&common::bed_inventory_hosts(bed, &NAMES));
    s.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      # the workers\n      hosts:\n{}    etcd:\n      hosts:   # external etcd members\n{}    image_registry:\n      hosts: [kk-reg]\n",
        items(workers),
        items(etcd)
    ));
    s
}

fn config(p: &Project, mirror: &str, sums: &BTreeMap<&str, String>, fa: &FakeArtifacts) -> String {
    testbed::artifacts::config::cluster_config(
        KUBE,
        PASSWORD,
        &p.path("artifacts.yaml"),
        mirror,
        sums,
        fa,
    )
}

/// The steps' wall times, printed as a table at the end (and as each step ends).
#[derive(Default)]
struct Timings(Vec<(String, Duration)>);

impl Timings {
    /// Runs one `kk` command as a timed step: `kk <args> -i … -c … --workdir wd --output json`.
    /// The registry password must appear nowhere in what it printed or recorded.
    fn kk(&mut self, p: &Project, step: &str, args: &[&str]) -> Run {
        let t = Instant::now();
        let r = p.kk_flow(args, &[]);
        self.0.push((step.to_string(), t.elapsed()));
        eprintln!("{}: {:.1}s", step, t.elapsed().as_secs_f64());
        assert_secret_hidden(p, &r, PASSWORD);
        r
    }

    /// [`Timings::kk`] that must succeed with no failed task.
    fn ok(&mut self, p: &Project, step: &str, args: &[&str]) -> Run {
        let r = self.kk(p, step, args);
        r.code(0);
        assert!(failures(&r).is_empty(), "{}: {:#?}", step, failures(&r));
        r
    }
}

impl Drop for Timings {
    fn drop(&mut self) {
        eprintln!("\nlifecycle steps (wall time):");
        for (step, d) in &self.0 {
            eprintln!("  {:<64} {:>6.1}s", step, d.as_secs_f64());
        }
    }
}

/// etcdctl through kk's client certificate, against host `i`'s member.
fn etcdctl(bed: &TestBed, i: usize, args: &str) -> String {
    sh(
        bed,
        i,
        &format!(
            "/usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
             --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key {}",
            bed.hosts()[i].ip,
            args
        ),
    )
}

/// `(name, is_learner)` of each etcd member, sorted, as kk-e1's member sees them.
fn members(bed: &TestBed) -> Vec<(String, bool)> {
    let out = etcdctl(bed, 0, "member list -w json");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{}: {}", e, out));
    let mut m: Vec<(String, bool)> = v["members"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", out))
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or_default().to_string(),
                m["isLearner"] == true,
            )
        })
        .collect();
    m.sort();
    m
}

fn voting(names: &[&str]) -> Vec<(String, bool)> {
    names.iter().map(|n| (n.to_string(), false)).collect()
}

/// Serial, issuer and dates of the certificate served at `addr` (etcd's with kk's client
/// certificate, read from kk-e1; the registry's from the controller).
fn served_cert(bed: &TestBed, addr: &str) -> String {
    let cmd = format!(
        "echo | openssl s_client -connect {} -cert /etc/ssl/etcd/ssl/client.crt \
         -key /etc/ssl/etcd/ssl/client.key 2>/dev/null | openssl x509 -noout -serial -issuer -dates",
        addr
    );
    sh(bed, 0, &cmd)
}

/// The LoadState of each unit on host `i`, one per line (`not-found` when absent).
fn load_states(bed: &TestBed, i: usize, units: &str) -> String {
    sh(
        bed,
        i,
        &format!(
            "for u in {}; do systemctl show -p LoadState --value $u; done",
            units
        ),
    )
}

/// The cluster-changing calls of the FAKE tools, without the kubeadm phases.
fn installs(j: &[Value]) -> Vec<String> {
    kube_calls(j)
        .into_iter()
        .filter(|c| !c.starts_with("kubeadm init phase"))
        .collect()
}

/// The FAKE tools' calls on kk-cp1 naming `node`, as `tool args… -> exit`, in order.
fn about(bed: &TestBed, node: &str) -> Vec<String> {
    let quoted = format!("\"{}\"", node);
    fakes::journal(bed, CP)
        .iter()
        .filter(|c| c["args"].to_string().contains(&quoted))
        .map(|c| {
            let args: Vec<&str> = c["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "{} {} -> {}",
                c["tool"].as_str().unwrap_or_default(),
                args.join(" "),
                c["exit"]
            )
        })
        .collect()
}

/// The results that changed something, as lines.
fn changed(r: &Run) -> Vec<String> {
    results(r)
        .iter()
        .filter(|(_, e)| e["changed"] == true)
        .map(|(path, e)| line(path, e))
        .collect()
}

#[test]
fn a_cluster_from_create_to_delete_add_renew_images_registry() {
    let bed = TestBed::start(NAMES.len()).expect("boot test hosts");
    let p = Project::new();
    let (srv, sums, fa) = serve_cluster(
        &p,
        KUBE,
        HELM,
        &[("calico", CALICO), ("localpv_provisioner", LOCALPV)],
        true,
    );
    p.file("config.yaml", &config(&p, &srv.url(""), &sums, &fa))
        .file(
            "inventory.yaml",
            &inventory(&bed, &["kk-w1", "kk-w2"], &["kk-e1", "kk-e2", "kk-e3"]),
        );
    busybox_layout(&p.path("wd/kubekey/images"), IMAGE);
    let fresh: Vec<(usize, Vec<String>)> = (0..NAMES.len()).map(|i| (i, state(&bed, i))).collect();
    let mut steps = Timings::default();
    let reg = bed.hosts()[REG].ip.to_string();
    let ca = p.path("wd/pki/root.crt").display().to_string();
    let auth = format!("admin:{}", PASSWORD);
    let catalog = || {
        curl(&[
            "--cacert",
            &ca,
            "-u",
            &auth,
            &format!("https://{}/v2/_catalog", reg),
        ])
    };

    // 1. The cluster.
    steps.ok(&p, "1. kk create cluster (9 hosts)", &["create", "cluster"]);
    assert_eq!(members(&bed), voting(&NAMES[..3]));
    etcdctl(&bed, 0, "put kk-life kept");
    for i in CP..=W2 {
        assert_eq!(
            sh(&bed, i, "systemctl is-active kubelet containerd"),
            "active\nactive"
        );
    }
    let j: Vec<Vec<Value>> = (0..NAMES.len()).map(|i| fakes::journal(&bed, i)).collect();
    assert_eq!(inits(&j[CP]).len(), 1);
    for i in [4, W2] {
        assert_eq!(
            fakes::calls(&j[i], "kubeadm", &["join"]).len(),
            1,
            "{}",
            NAMES[i]
        );
    }
    for i in [0, 1, 2, REG, W3, E4] {
        assert!(
            j[i].is_empty(),
            "FAKE tools ran on {}: {:#?}",
            NAMES[i],
            j[i]
        );
    }
    for i in [W3, E4] {
        assert_eq!(
            load_states(&bed, i, "etcd containerd kubelet"),
            "not-found\nnot-found\nnot-found",
            "{} is in no group",
            NAMES[i]
        );
    }
    let (body, code) = catalog();
    assert!(
        code == "200" && body.contains("\"kk/busybox\""),
        "{} {}",
        code,
        body
    );
    let before: Vec<Vec<String>> = j.iter().map(|j| installs(j)).collect();

    // 2. A worker and an etcd member added. kube-apiserver cannot run here: a plain listener
    //    on kk-cp1's port 6443 stands in for it (sync-etcd-config waits for it after the FAKE
    //    `kubeadm init phase control-plane apiserver`).
    sh(
        &bed,
        CP,
        "systemd-run --unit kk-test-apiserver python3 -m http.server 6443 --bind 127.0.0.1",
    );
    let r = steps.ok(
        &p,
        "2. kk add nodes --worker kk-w3 --etcd kk-e4 --override",
        &[
            "add",
            "nodes",
            "--worker",
            "kk-w3",
            "--etcd",
            "kk-e4",
            "--override",
        ],
    );
    assert_eq!(
        p.read("inventory.yaml"),
        inventory(
            &bed,
            &["kk-w1", "kk-w2", "kk-w3"],
            &["kk-e1", "kk-e2", "kk-e3", "kk-e4"]
        ),
        "--override: the two lines added, nothing else changed"
    );
    let warn = r.msg(
        "etcd | An even etcd group tolerates no more failures than one host less",
        "kk-e1",
    );
    assert!(warn.to_string().contains("quorum is 3"), "{}", warn);
    assert_eq!(members(&bed), voting(&["kk-e1", "kk-e2", "kk-e3", "kk-e4"]));
    let res = results(&r);
    let scaling: Vec<String> = res
        .iter()
        .filter(|(path, e)| path.contains("scaling_up/") && e["changed"] == true)
        .map(|(path, e)| {
            format!(
                "{} {}",
                if path.contains("learner") {
                    "learner"
                } else {
                    "promote"
                },
                e["host"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(scaling, ["learner kk-e4", "promote kk-e4"]);
    assert_eq!(etcdctl(&bed, E4, "get kk-life --print-value-only"), "kept");
    let kcfg = sh(&bed, CP, "cat /etc/kubernetes/kubeadm-config.yaml");
    for i in [0, 1, 2, E4] {
        let ep = format!("https://{}:2379", bed.hosts()[i].ip);
        assert!(kcfg.contains(&ep), "{} missing from {}", ep, kcfg);
    }
    assert_eq!(
        sh(&bed, W3, "systemctl is-active containerd kubelet"),
        "active\nactive"
    );
    let j: Vec<Vec<Value>> = (0..NAMES.len()).map(|i| fakes::journal(&bed, i)).collect();
    let joins = fakes::calls(&j[W3], "kubeadm", &["join"]);
    assert!(joins.len() == 1 && joins[0]["exit"] == 0, "{:#?}", j[W3]);
    assert!(j[E4].is_empty(), "FAKE tools ran on kk-e4: {:#?}", j[E4]);
    assert_eq!(sh(&bed, E4, "test -e /etc/kubernetes || echo none"), "none");
    for i in 0..W3 {
        assert_eq!(
            installs(&j[i]),
            before[i],
            "{} initialised or joined again",
            NAMES[i]
        );
    }
    // What the nodes that were there may change: /etc/hosts learns the new names, etcd's
    // snapshot and membership record, kube-apiserver's etcd endpoints, the join token, the
    // kubeadm config backup of the post-install hook. (The controller, localhost, makes
    // kk-e4's certificate.)
    let allowed = [
        "roles/native/dns/",
        "roles/etcd/backup/tasks/snapshot.yaml",
        "roles/etcd/postprocess/",
        "roles/kubernetes/sync-etcd-config/",
        "roles/kubernetes/init-kubernetes/tasks/credentials.yaml",
        "playbooks/hook/post_install.yaml",
    ];
    // The new nodes' labels go to the API once for all nodes, from the control plane
    // (run_once): the result is recorded on the play's first host, but changes no node.
    let allowed_tasks = ["Kubernetes | Label the nodes"];
    let others: Vec<String> = res
        .iter()
        .filter(|(path, e)| {
            e["changed"] == true
                && !["kk-w3", "kk-e4", "localhost"]
                    .contains(&e["host"].as_str().unwrap_or_default())
                && !allowed.iter().any(|a| path.contains(a))
                && !allowed_tasks.contains(&e["task"].as_str().unwrap_or_default())
        })
        .map(|(path, e)| line(path, e))
        .collect();
    assert!(others.is_empty(), "the other nodes changed: {:#?}", others);
    // The nodes that take no part (workers, the registry) get their facts gathered and
    // nothing else: one command each.
    for h in ["kk-w1", "kk-w2", "kk-reg"] {
        assert_eq!(
            r.transport(h)["commands"],
            1,
            "{} got more than its facts gathered: {}\n{}",
            h,
            r.transport(h),
            r.describe()
        );
    }

    // 3. Certificates renewed.
    let etcd_hosts = [0, 1, 2, E4];
    let addr = |i: usize| format!("{}:2379", bed.hosts()[i].ip);
    let served: Vec<String> = etcd_hosts
        .iter()
        .map(|&i| served_cert(&bed, &addr(i)))
        .collect();
    let reg_cert = || served_cert(&bed, &format!("{}:443", reg));
    let reg_before = reg_cert();
    let r = steps.ok(&p, "3. kk certs renew", &["certs", "renew"]);
    let dates = |c: &str| {
        c.lines()
            .filter(|l| l.starts_with("not"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (k, &i) in etcd_hosts.iter().enumerate() {
        let now = served_cert(&bed, &addr(i));
        assert_ne!(now, served[k], "{} serves the same certificate", NAMES[i]);
        assert_ne!(dates(&now), dates(&served[k]), "{}", now);
        let verify = sh(
            &bed,
            0,
            &format!(
                "echo | openssl s_client -connect {} -CAfile /etc/ssl/etcd/ssl/ca.crt \
                 -cert /etc/ssl/etcd/ssl/client.crt -key /etc/ssl/etcd/ssl/client.key 2>&1 \
                 | grep -o 'Verify return code: .*' | sort -u",
                addr(i)
            ),
        );
        assert_eq!(verify, "Verify return code: 0 (ok)", "{}", NAMES[i]);
    }
    let health = etcdctl(&bed, 0, "endpoint health --cluster 2>&1");
    assert_eq!(health.matches("is healthy").count(), 4, "{}", health);
    assert_eq!(etcdctl(&bed, 1, "get kk-life --print-value-only"), "kept");
    // One member restarted at a time, each followed by its health wait.
    let order: Vec<(String, String)> = results(&r)
        .into_iter()
        .filter(|(path, e)| path.contains("certs/renew/etcd") && e["status"] != "skipped")
        .map(|(_, e)| {
            (
                e["task"].as_str().unwrap_or_default().to_string(),
                e["host"].as_str().unwrap_or_default().to_string(),
            )
        })
        .filter(|(t, _)| t.contains("Restart") || t.contains("healthy"))
        .collect();
    assert_eq!(order.len(), 8, "{:#?}", order);
    for pair in order.chunks(2) {
        assert!(
            pair[0].0.contains("Restart")
                && pair[1].0.contains("healthy")
                && pair[0].1 == pair[1].1,
            "{:#?}",
            order
        );
    }
    let renews: Vec<usize> = (0..NAMES.len())
        .map(|i| {
            fakes::calls(
                &fakes::journal(&bed, i),
                "kubeadm",
                &["certs", "renew", "all"],
            )
            .len()
        })
        .collect();
    assert_eq!(
        renews,
        [0, 0, 0, 1, 0, 0, 0, 0, 0],
        "kubeadm certs renew all on kk-cp1 only"
    );
    // The registry: a new certificate (it restarts; give it a moment), still serving.
    let mut now = reg_cert();
    for _ in 0..30 {
        if now.contains("serial=") && now != reg_before {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
        now = reg_cert();
    }
    assert_ne!(now, reg_before, "the registry serves the same certificate");
    let mut code = String::new();
    for _ in 0..30 {
        code = catalog().1;
        if code == "200" {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    assert_eq!(code, "200", "the registry after its restart");

    // 4. A worker and an etcd member deleted. First: deleting the only control plane is
    //    refused, nothing changes.
    let r = steps.kk(
        &p,
        "4a. kk delete nodes kk-cp1 (refused)",
        &["delete", "nodes", "kk-cp1", "--yes"],
    );
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(changed(&r).is_empty(), "{:#?}", changed(&r));
    assert_eq!(sh(&bed, CP, "systemctl is-active kubelet"), "active");
    // A calicoctl of another Calico version ("Version mismatch") stops the deletion before
    // `kubectl delete node`: kk-w2 stays a node, installed. Then the cluster's calicoctl again.
    let scratch = tempfile::tempdir().unwrap();
    let calicoctl = scratch.path().join("calicoctl");
    fakes::fake_tool("v3.30.0", &calicoctl);
    fakes::push(&bed, CP, &calicoctl, "/usr/local/bin/calicoctl", "755");
    let r = steps.kk(
        &p,
        "4b. kk delete nodes kk-w2 (calicoctl of another version)",
        &["delete", "nodes", "kk-w2", "--all", "--yes"],
    );
    assert_eq!(r.code, 2, "{}", r.describe());
    assert!(r.stdout.contains("Version mismatch"), "{}", r.describe());
    assert!(
        fakes::calls(&fakes::journal(&bed, CP), "kubectl", &[])
            .iter()
            .all(|c| !c["args"].to_string().contains("\"delete\",\"node\"")),
        "kubectl delete node ran after calicoctl failed"
    );
    assert_eq!(
        load_states(&bed, W2, "kubelet containerd"),
        "loaded\nloaded"
    );
    let refused_calls = about(&bed, "kk-w2").len();
    fakes::fake_tool(CALICO, &calicoctl);
    fakes::push(&bed, CP, &calicoctl, "/usr/local/bin/calicoctl", "755");
    let r = steps.ok(
        &p,
        "4. kk delete nodes kk-w2 kk-e4 --all --with-data --override",
        &[
            "delete",
            "nodes",
            "kk-w2",
            "kk-e4",
            "--all",
            "--with-data",
            "--override",
            "--yes",
        ],
    );
    assert_eq!(
        p.read("inventory.yaml"),
        inventory(&bed, &["kk-w1", "kk-w3"], &["kk-e1", "kk-e2", "kk-e3"]),
        "--override: the lines of kk-w2 and kk-e4 removed, nothing else changed"
    );
    let on_cp = about(&bed, "kk-w2");
    let mut next = refused_calls;
    for want in [
        "kubectl get node kk-w2 -o name",
        "kubectl cordon kk-w2",
        "kubectl drain kk-w2 --ignore-daemonsets --delete-emptydir-data --force --disable-eviction",
        "calicoctl delete node kk-w2",
        "kubectl delete node kk-w2",
    ] {
        let (tool, args) = want.split_once(' ').unwrap();
        // calicoctl releases the node's Calico data, then refuses to delete the Node itself
        // (Kubernetes datastore: it is the Kubernetes Node, which kubectl deletes next).
        let exit = if tool == "calicoctl" { "-> 1" } else { "-> 0" };
        // In this order, after the refused run's calls.
        let found = on_cp[next..]
            .iter()
            .position(|c| c.starts_with(tool) && c.contains(args) && c.ends_with(exit));
        let at = found
            .unwrap_or_else(|| panic!("no `{}` on kk-cp1 after call {}: {:#?}", want, next, on_cp));
        next += at + 1;
    }
    let j = fakes::journal(&bed, W2);
    assert_eq!(fakes::calls(&j, "kubeadm", &["reset"]).len(), 1, "{:#?}", j);
    assert_eq!(
        load_states(&bed, W2, "kubelet containerd"),
        "not-found\nnot-found"
    );
    // kk-e4 left etcd through a member that stays; the data is kept; kube-apiserver no
    // longer names it.
    assert!(
        results(&r)
            .iter()
            .any(|(path, e)| path.contains("etcd/scaling_down/")
                && e["host"] == "kk-e4"
                && e["changed"] == true),
        "kk-e4 was not removed from etcd: {:#?}",
        changed(&r)
    );
    assert_eq!(members(&bed), voting(&NAMES[..3]));
    assert_eq!(etcdctl(&bed, 2, "get kk-life --print-value-only"), "kept");
    let kcfg = sh(&bed, CP, "cat /etc/kubernetes/kubeadm-config.yaml");
    let e4 = format!("https://{}:2379", bed.hosts()[E4].ip);
    assert!(
        !kcfg.contains(&e4),
        "kube-apiserver still uses kk-e4:\n{}",
        kcfg
    );
    // Both back to what they were before step 1; a second delete changes nothing.
    let d = differences(&bed, &NAMES, &[fresh[W2].clone(), fresh[E4].clone()]);
    assert!(d.is_empty(), "after delete nodes:\n{}", d);
    let r = steps.ok(
        &p,
        "4c. kk delete nodes kk-w2 kk-e4 --all --with-data (again)",
        &[
            "delete",
            "nodes",
            "kk-w2",
            "kk-e4",
            "--all",
            "--with-data",
            "--yes",
        ],
    );
    assert!(
        changed(&r).is_empty(),
        "second delete nodes: {:#?}",
        changed(&r)
    );

    // 5. Images: one from another registry (real, on loopback) pulled into binary_dir/images,
    //    then pushed into the cluster's registry, from which containerd pulls it.
    let source = common::registry::registry();
    let extra = format!("127.0.0.1:{}/kk/extra:v1", source.port);
    common::registry::layout(&p.path("src"), &extra);
    p.file(
        "push.yaml",
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - image: {src: \"local://{{ playbook_dir }}/src\", dest: \"oci://{{ image }}\", auths: [{registry: \"{{ reg }}\", plain_http: true}]}\n",
    );
    p.kk(&[
        "run",
        "push.yaml",
        "-e",
        &format!("image={}", extra),
        "-e",
        &format!("reg=127.0.0.1:{}", source.port),
    ])
    .code(0);
    let cfg = p.read("config.yaml");
    p.file(
        "config.yaml",
        &cfg.replace(
            "  download:\n",
            &format!(
                "  download:\n    images:\n      cluster: false\n      manifests: [\"{}\"]\n      auths: [{{registry: \"127.0.0.1:{}\", plain_http: true}}]\n",
                extra, source.port
            ),
        ),
    );
    steps.ok(
        &p,
        "5a. kk artifact images --pull",
        &["artifact", "images", "--pull"],
    );
    let index: Value =
        serde_json::from_str(&p.read("wd/kubekey/images/index.json")).expect("index.json");
    let named = |name: &str| -> String {
        index["manifests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == name)
            .and_then(|m| m["digest"].as_str())
            .unwrap_or_else(|| panic!("{} not in binary_dir/images: {}", name, index))
            .to_string()
    };
    // amd64 only (download.arch): the pulled index is kk's, not the source's.
    let extra_digest = named(&extra);
    named(IMAGE);
    steps.ok(
        &p,
        "5b. kk artifact images --push",
        &["artifact", "images", "--push"],
    );
    let (body, code) = catalog();
    assert!(
        code == "200" && body.contains("\"kk/extra\"") && body.contains("\"kk/busybox\""),
        "{}",
        body
    );
    sh(
        &bed,
        CP,
        &format!("ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d {}/kk/extra:v1 >/dev/null", reg),
    );
    let have = sh(
        &bed,
        CP,
        &format!(
            "ctr -n k8s.io images ls | grep -F '{}/kk/extra:v1' | awk '{{print $3}}'",
            reg
        ),
    );
    assert_eq!(
        have, extra_digest,
        "the image containerd pulled from the cluster's registry"
    );

    // 6. The whole cluster goes, with its data: --check first changes nothing.
    sh(&bed, CP, "systemctl stop kk-test-apiserver");
    let del = ["delete", "cluster", "--all", "--with-data", "--yes"];
    let before_check: Vec<(usize, Vec<String>)> =
        (0..NAMES.len()).map(|i| (i, state(&bed, i))).collect();
    let mut check = del.to_vec();
    check.push("--check");
    let r = steps.ok(
        &p,
        "6a. kk delete cluster --all --with-data --check",
        &check,
    );
    assert!(
        !changed(&r).is_empty(),
        "--check reported nothing to delete"
    );
    let d = differences(&bed, &NAMES, &before_check);
    assert!(d.is_empty(), "--check changed hosts:\n{}", d);
    steps.ok(&p, "6. kk delete cluster --all --with-data", &del);
    let d = differences(&bed, &NAMES, &fresh);
    assert!(d.is_empty(), "{}", d);
    let r = steps.ok(&p, "6b. kk delete cluster --all --with-data (again)", &del);
    assert!(
        changed(&r).is_empty(),
        "second delete cluster: {:#?}",
        changed(&r)
    );

    // 7. The registry alone on kk-reg, fresh again: Docker, the registry, the images pushed;
    //    no other host changes.
    let r = steps.ok(&p, "7. kk init registry", &["init", "registry"]);
    assert!(r.recap("kk-reg")["changed"].as_i64().unwrap_or(0) > 0);
    assert_eq!(
        sh(&bed, REG, "systemctl is-active docker docker-registry"),
        "active\nactive"
    );
    // (containerd.service is Docker's own, from its tarball.)
    assert_eq!(
        load_states(&bed, REG, "etcd kubelet cri-docker"),
        "not-found\nnot-found\nnot-found"
    );
    let (body, code) = catalog();
    assert!(
        code == "200" && body.contains("\"kk/extra\"") && body.contains("\"kk/busybox\""),
        "{}",
        body
    );
    let others: Vec<(usize, Vec<String>)> = fresh.into_iter().filter(|(i, _)| *i != REG).collect();
    let d = differences(&bed, &NAMES, &others);
    assert!(d.is_empty(), "kk init registry changed other hosts:\n{}", d);
}
