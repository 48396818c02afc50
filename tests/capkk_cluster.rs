//! CAPKK's whole loop on real hosts: the three controllers `kk-capkk run` starts
//! (`capkk::controllers::run`, the kube-runtime Controllers over watches) drive the real
//! `EngineDriver` against two real test hosts, one control plane and one worker, as
//! Cluster API would have them: a Cluster, a KKCluster listing both hosts (SSH key in a
//! Secret of the controller's namespace), a KubeadmControlPlane-style and a
//! MachineDeployment-style Machine, each with a KKMachine and CABPK-style cloud-config
//! bootstrap data (`kubeadm init` on the control plane, `kubeadm join` with a token on the
//! worker).
//!
//! Real: the controllers, the engine driver and its phase playbooks, the hosts (sshd,
//! systemd, Debian 12), containerd, runc, kubectl and the CNI plugins (served on loopback
//! by the artifact server of tests/common/capkk_shared.rs, sha256-checked overrides).
//! FAKE: the Kubernetes API server (`capkk::controllers::fake_api`, feature `fake-api`:
//! no API server can run here), Cluster API itself (this test writes what its controllers
//! would: the objects, owner references, `infrastructureReady`), kubeadm and kubelet
//! (tests/fakes, whose journal records the init/join/reset the phases ran), crictl.
//!
//! Checked: both machines become ready with providerID, addresses, every phase condition
//! True and the KKCluster ready with its endpoint; the hosts have what each phase does; a
//! second round of the controllers writes nothing and runs no phase; deleting the worker's
//! KKMachine resets its host and releases everything while the KKCluster keeps its
//! finalizer; an unreachable instance fails retryably and backs off with bounded writes.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capkk::api::{
    KKCluster, KKInstance, KKMachine, KKCLUSTER_FINALIZER, KKINSTANCE_FINALIZER,
    KKMACHINE_FINALIZER,
};
use capkk::controllers::fake_api::FakeApi;
use capkk::controllers::{capi, phase_condition, run, system_clock, Context};
use capkk::machine::{Driver, EngineDriver, Job, MachineError, Phase};
use common::capkk_shared::{b64, driver, runtime, serve, KUBE};
use common::sh;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};
use testbed::artifacts::fakes::journal;
use testbed::TestBed;

const NS: &str = "default";
const CTRL_NS: &str = "capkk-system";
/// The kube-vip address the KKCluster controller turns into the endpoint.
const VIP: &str = "192.0.2.10";
/// The worker's bootstrap token: in its bootstrap Secret and on the host only.
const TOKEN: &str = "k8s7qz.9w1nbxq2r0l4m6pd";
const SOCKET: &str = "unix:///run/containerd/containerd.sock";

/// One phase the controllers asked for.
#[derive(Clone, Debug)]
struct PhaseRun {
    phase: Phase,
    instance: String,
    at: Instant,
    /// The engine's changed count, or the error.
    outcome: Result<u32, MachineError>,
}

/// The real engine driver, recording each run and what the engine says it changed.
struct Tracking {
    engine: EngineDriver,
    runs: Mutex<Vec<PhaseRun>>,
}

impl Tracking {
    fn runs(&self) -> Vec<PhaseRun> {
        self.runs.lock().unwrap().clone()
    }

    fn of(&self, instance: &str) -> Vec<PhaseRun> {
        self.runs()
            .into_iter()
            .filter(|r| r.instance == instance)
            .collect()
    }
}

#[async_trait::async_trait]
impl Driver for Tracking {
    async fn run(&self, phase: Phase, job: &Job) -> Result<(), MachineError> {
        let t = Instant::now();
        let r = self.engine.run_phase(phase, job).await;
        eprintln!(
            "capkk_cluster: {} {} in {:.1}s: {}",
            job.instance.name,
            phase.as_str(),
            t.elapsed().as_secs_f64(),
            match &r {
                Ok(r) => format!("changed {}", r.changed),
                Err(e) => format!("failed: {e}"),
            }
        );
        self.runs.lock().unwrap().push(PhaseRun {
            phase,
            instance: job.instance.name.clone(),
            at: t,
            outcome: r.as_ref().map(|r| r.changed).map_err(Clone::clone),
        });
        r.map(|_| ())
    }
}

/// The controllers running until `stop`.
struct Controllers {
    stop: tokio::sync::oneshot::Sender<()>,
    done: tokio::task::JoinHandle<()>,
}

fn start(ctx: &Arc<Context>) -> Controllers {
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(run(ctx.clone(), async move {
        let _ = rx.await;
    }));
    Controllers { stop, done }
}

impl Controllers {
    /// Stops them; running reconciles finish first.
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(120), self.done)
            .await
            .expect("the controllers stop gracefully")
            .unwrap();
    }
}

/// Polls `cond` every 100 ms for up to `secs`.
async fn until(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(
            t.elapsed() < Duration::from_secs(secs),
            "timed out after {secs}s waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "capkk_cluster: {what} after {:.1}s",
        t.elapsed().as_secs_f64()
    );
}

/// Waits until the fake saw no write for `quiet`: the controllers have settled.
async fn settle(fake: &FakeApi, quiet: Duration) {
    let mut n = fake.writes().len();
    let mut since = Instant::now();
    let t = Instant::now();
    while since.elapsed() < quiet {
        assert!(t.elapsed() < Duration::from_secs(60), "never settled");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = fake.writes().len();
        if now != n {
            n = now;
            since = Instant::now();
        }
    }
}

fn get<K: serde::de::DeserializeOwned>(fake: &FakeApi, resource: &str, name: &str) -> Option<K> {
    let o = json_of(fake, resource, name);
    (!o.is_null()).then(|| serde_json::from_value(o).unwrap())
}

fn kkm(fake: &FakeApi, name: &str) -> Option<KKMachine> {
    get(fake, "kkmachines", name)
}

fn kki(fake: &FakeApi, name: &str) -> Option<KKInstance> {
    get(fake, "kkinstances", name)
}

/// `(status, reason, severity)` of condition `type_` in an object's JSON status.
fn condition(obj: &Value, type_: &str) -> Option<(String, String, String)> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("status"), s("reason"), s("severity"))
        })
}

/// The object `name` of `resource` as the fake holds it (`null` when there is none).
fn json_of(fake: &FakeApi, resource: &str, name: &str) -> Value {
    fake.objects(resource)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap_or(Value::Null)
}

/// CABPK's cloud-config of a KubeadmControlPlane's first machine (the node name templated
/// from the instance, as `## template: jinja` documents have it).
fn init_cloud_config(ip: &str) -> String {
    format!(
        "## template: jinja\n#cloud-config\n\nwrite_files:\n\
-   path: /run/kubeadm/kubeadm.yaml\n    owner: root:root\n    permissions: '0640'\n    content: |\n      ---\n      apiVersion: kubeadm.k8s.io/v1beta4\n      kind: ClusterConfiguration\n      clusterName: c1\n      controlPlaneEndpoint: {VIP}:6443\n      kubernetesVersion: {KUBE}\n      networking:\n        dnsDomain: cluster.local\n        podSubnet: 10.233.64.0/18\n        serviceSubnet: 10.233.0.0/18\n      ---\n      apiVersion: kubeadm.k8s.io/v1beta4\n      kind: InitConfiguration\n      localAPIEndpoint:\n        advertiseAddress: {ip}\n        bindPort: 6443\n      nodeRegistration:\n        criSocket: {SOCKET}\n        name: '{{{{ ds.meta_data.local_hostname }}}}'\n\
-   path: /run/cluster-api/placeholder\n    owner: root:root\n    permissions: '0640'\n    content: \"This placeholder file is used to create the /run/cluster-api sub directory in a way that is compatible with both Linux and Windows (mkdir -p /run/cluster-api does not work with Windows)\"\n\
runcmd:\n  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml  && echo success > /run/cluster-api/bootstrap-success.complete'\n"
    )
}

/// CABPK's cloud-config of a MachineDeployment's machine: a worker join with a token.
fn join_cloud_config() -> String {
    format!(
        "## template: jinja\n#cloud-config\n\nwrite_files:\n\
-   path: /run/kubeadm/kubeadm-join-config.yaml\n    owner: root:root\n    permissions: '0640'\n    content: |\n      ---\n      apiVersion: kubeadm.k8s.io/v1beta4\n      kind: JoinConfiguration\n      discovery:\n        bootstrapToken:\n          apiServerEndpoint: {VIP}:6443\n          caCertHashes:\n          - sha256:{hash}\n          token: {TOKEN}\n      nodeRegistration:\n        criSocket: {SOCKET}\n        name: '{{{{ ds.meta_data.local_hostname }}}}'\n\
-   path: /run/cluster-api/placeholder\n    owner: root:root\n    permissions: '0640'\n    content: \"This placeholder file is used to create the /run/cluster-api sub directory in a way that is compatible with both Linux and Windows (mkdir -p /run/cluster-api does not work with Windows)\"\n\
runcmd:\n  - kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml  && echo success > /run/cluster-api/bootstrap-success.complete\n",
        hash = "3b".repeat(32),
    )
}

async fn create<K>(client: &kube::Client, ns: &str, obj: Value) -> K
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(obj).unwrap();
    Api::<K>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &obj)
        .await
        .unwrap()
}

fn owner(kind: &str, api_version: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
           "controller": true, "blockOwnerDeletion": true})
}

/// A Machine (as a KubeadmControlPlane or MachineDeployment makes it) with its bootstrap
/// data Secret, and its KKMachine with `role`.
async fn machine(
    client: &kube::Client,
    name: &str,
    role: &str,
    labels: Value,
    owner_ref: Value,
    cloud_config: &str,
) {
    create::<k8s_openapi::api::core::v1::Secret>(
        client,
        NS,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
               "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
               "data": {"value": b64(cloud_config), "format": b64("cloud-config")}}),
    )
    .await;
    let m: capi::Machine = create(
        client,
        NS,
        json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
               "metadata": {"name": name, "labels": labels, "ownerReferences": [owner_ref]},
               "spec": {"clusterName": "c1", "version": KUBE,
                        "bootstrap": {"dataSecretName": name},
                        "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                              "kind": "KKMachine", "name": format!("kk-{name}")}}}),
    )
    .await;
    let uid = m.metadata.uid.unwrap();
    create::<KKMachine>(
        client,
        NS,
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "KKMachine",
               "metadata": {"name": format!("kk-{name}"),
                            "labels": {"cluster.x-k8s.io/cluster-name": "c1"},
                            "ownerReferences": [owner("Machine", "cluster.x-k8s.io/v1beta1", name, &uid)]},
               "spec": {"roles": [role],
                        "containerManager": {"type": "containerd"},
                        "repository": {"iso": "none", "update": false, "packages": ["curl"]}}}),
    )
    .await;
}

#[test]
fn two_hosts_built_by_the_controllers_then_a_worker_released_and_an_unreachable_backs_off() {
    let started = Instant::now();
    let bed = TestBed::start(2).expect("boot two test hosts");
    let (cp_ip, w_ip) = (bed.hosts()[0].ip.to_string(), bed.hosts()[1].ip.to_string());
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path(), false);
    let key = std::fs::read_to_string(bed.key_path()).unwrap();
    let tracking = Arc::new(Tracking {
        engine: driver(dir.path()),
        runs: Mutex::default(),
    });
    let rt = runtime();
    rt.block_on(async {
        let fake = FakeApi::new();
        let client = fake.client();

        // What a person and Cluster API would have written.
        create::<k8s_openapi::api::core::v1::Secret>(
            &client,
            CTRL_NS,
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "capkk-ssh"},
                   "data": {"privateKey": b64(&key)}}),
        )
        .await;
        let cluster: capi::Cluster = create(
            &client,
            NS,
            json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                   "metadata": {"name": "c1"},
                   "spec": {"infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                                  "kind": "KKCluster", "name": "c1"}}}),
        )
        .await;
        let overrides = serde_json::to_value(a.overrides()).unwrap();
        create::<KKCluster>(
            &client,
            NS,
            json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "KKCluster",
                   "metadata": {"name": "c1", "labels": {"cluster.x-k8s.io/cluster-name": "c1"},
                                "ownerReferences": [owner("Cluster", "cluster.x-k8s.io/v1beta1", "c1",
                                                          cluster.metadata.uid.as_deref().unwrap())]},
                   "spec": {
                       "nodes": {
                           "auth": {"user": "root", "secret": "capkk-ssh"},
                           "instances": [
                               {"name": "cp1", "address": cp_ip, "internalAddress": cp_ip, "roles": ["control-plane"]},
                               {"name": "w1", "address": w_ip, "internalAddress": w_ip, "roles": ["worker"]},
                               // Nothing listens on loopback port 1.
                               {"name": "gone1", "address": "127.0.0.1", "roles": ["worker"],
                                "auth": {"port": 1, "timeout": "3s"}},
                           ]},
                       "controlPlaneLoadBalancer": {"host": VIP},
                       "component": {"overrides": overrides}}}),
        )
        .await;
        let ctx = Arc::new(Context::new(
            client.clone(),
            tracking.clone(),
            CTRL_NS,
            system_clock(),
        ));
        let ctl = start(&ctx);

        machine(
            &client,
            "c1-control-plane-x7k2p",
            "control-plane",
            json!({"cluster.x-k8s.io/cluster-name": "c1", "cluster.x-k8s.io/control-plane": ""}),
            owner("KubeadmControlPlane", "controlplane.cluster.x-k8s.io/v1beta1", "c1-control-plane", "kcp-uid"),
            &init_cloud_config(&cp_ip),
        )
        .await;
        machine(
            &client,
            "c1-md-0-5d8f9-q2wzl",
            "worker",
            json!({"cluster.x-k8s.io/cluster-name": "c1", "cluster.x-k8s.io/deployment-name": "c1-md-0"}),
            owner("MachineSet", "cluster.x-k8s.io/v1beta1", "c1-md-0-5d8f9", "ms-uid"),
            &join_cloud_config(),
        )
        .await;
        // Cluster API copies the KKCluster's readiness to the Cluster, which resumes the
        // KKMachines waiting for it.
        until("the KKCluster ready", 30, || {
            json_of(&fake, "kkclusters", "c1")["status"]["ready"] == true
        })
        .await;
        Api::<capi::Cluster>::namespaced(client.clone(), NS)
            .patch_status(
                "c1",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"infrastructureReady": true}})),
            )
            .await
            .unwrap();
        let (cp_m, w_m) = ("kk-c1-control-plane-x7k2p", "kk-c1-md-0-5d8f9-q2wzl");
        let t = Instant::now();
        until("both KKMachines ready", 240, || {
            [cp_m, w_m]
                .iter()
                .all(|m| kkm(&fake, m).and_then(|k| k.status).is_some_and(|s| s.ready))
        })
        .await;
        eprintln!(
            "capkk_cluster: two machines built in {:.1}s",
            t.elapsed().as_secs_f64()
        );

        // The Cluster API contract on each machine.
        for (m, instance, ip) in [(cp_m, "cp1", &cp_ip), (w_m, "w1", &w_ip)] {
            let k = kkm(&fake, m).unwrap();
            assert_eq!(
                k.spec.provider_id.as_deref(),
                Some(format!("kk://{NS}/{instance}").as_str())
            );
            assert_eq!(k.spec.instance_id.as_deref(), Some(instance));
            let st = k.status.clone().unwrap();
            assert_eq!(st.addresses.len(), 1, "{:?}", st.addresses);
            assert_eq!(
                (st.addresses[0].type_.as_str(), st.addresses[0].address.as_str()),
                ("InternalIP", ip.as_str())
            );
            assert!(k.metadata.finalizers.unwrap().contains(&KKMACHINE_FINALIZER.to_string()));
            assert_eq!(
                condition(&json_of(&fake, "kkmachines", m), "InstanceReady").unwrap().0,
                "True"
            );
            let ki = json_of(&fake, "kkinstances", instance);
            assert_eq!(ki["status"]["instanceState"], "running", "{ki}");
            for p in Phase::BUILD {
                let c = condition(&ki, phase_condition(p).0);
                assert_eq!(c.as_ref().map(|c| c.0.as_str()), Some("True"), "{} {:?}", p.as_str(), c);
            }
            assert_eq!(condition(&ki, "Ready").unwrap().0, "True");
            assert_eq!(ki["metadata"]["finalizers"], json!([KKINSTANCE_FINALIZER]));
            // Each phase ran once, in order, and changed the machine.
            let runs = tracking.of(instance);
            assert_eq!(
                runs.iter().map(|r| r.phase).collect::<Vec<_>>(),
                Phase::BUILD.to_vec(),
                "{instance}"
            );
            for r in &runs {
                let changed = r.outcome.clone().unwrap();
                assert!(
                    changed > 0 || r.phase == Phase::Repository,
                    "{instance} {} changed nothing",
                    r.phase.as_str()
                );
            }
        }
        let kkc: KKCluster = get(&fake, "kkclusters", "c1").unwrap();
        assert_eq!(
            (kkc.spec.control_plane_endpoint.host.as_str(), kkc.spec.control_plane_endpoint.port),
            (VIP, 6443)
        );
        assert!(kkc.status.unwrap().ready);
        assert_eq!(kkc.metadata.finalizers.unwrap(), vec![KKCLUSTER_FINALIZER.to_string()]);

        // On the hosts: what each phase did.
        for (i, name) in [(0, "cp1"), (1, "w1")] {
            assert_eq!(sh(&bed, i, "hostname"), name);
            for (id, path) in [
                ("kubeadm", "/usr/local/bin/kubeadm"),
                ("kubelet", "/usr/local/bin/kubelet"),
                ("kubectl", "/usr/local/bin/kubectl"),
            ] {
                let got = sh(&bed, i, &format!("sha256sum {path} | cut -d' ' -f1"));
                assert_eq!(got, a.sums[id], "{path} on {name}");
            }
            assert_eq!(sh(&bed, i, "systemctl is-active containerd"), "active");
            assert_eq!(sh(&bed, i, "cat /run/cluster-api/bootstrap-success.complete"), "success");
            // The kubelet registers the Node with the KKMachine's provider ID.
            assert_eq!(
                sh(&bed, i, "cat /etc/default/kubelet"),
                format!("KUBELET_EXTRA_ARGS=--provider-id=kk://default/{name}")
            );
        }
        let cp_kubeadm: Vec<Value> = journal(&bed, 0)
            .into_iter()
            .filter(|e| e["tool"] == "kubeadm" && (e["args"][0] == "init" || e["args"][0] == "join"))
            .collect();
        assert_eq!(cp_kubeadm.len(), 1, "{cp_kubeadm:?}");
        assert_eq!(cp_kubeadm[0]["args"], json!(["init", "--config", "/run/kubeadm/kubeadm.yaml"]));
        assert_eq!(cp_kubeadm[0]["exit"], 0, "{}", cp_kubeadm[0]);
        let w_kubeadm: Vec<Value> = journal(&bed, 1)
            .into_iter()
            .filter(|e| e["tool"] == "kubeadm" && (e["args"][0] == "init" || e["args"][0] == "join"))
            .collect();
        assert_eq!(w_kubeadm.len(), 1, "{w_kubeadm:?}");
        assert_eq!(
            w_kubeadm[0]["args"],
            json!(["join", "--config", "/run/kubeadm/kubeadm-join-config.yaml"])
        );
        assert_eq!(w_kubeadm[0]["exit"], 0, "{}", w_kubeadm[0]);
        assert!(sh(&bed, 1, "cat /run/kubeadm/kubeadm-join-config.yaml").contains(TOKEN));
        assert!(sh(&bed, 1, "cat /run/kubeadm/kubeadm-join-config.yaml").contains("name: 'w1'"));
        sh(&bed, 1, "test -s /etc/kubernetes/kubelet.conf");

        // A second round of the controllers (a restart lists and reconciles everything)
        // writes nothing and runs no phase.
        settle(&fake, Duration::from_secs(2)).await;
        ctl.stop().await;
        let (writes, runs, reads) = (fake.writes(), tracking.runs().len(), fake.reads().len());
        let ctl = start(&ctx);
        let wanted = [
            "kkclusters/default/c1".to_string(),
            format!("kkmachines/default/{cp_m}"),
            format!("kkmachines/default/{w_m}"),
            "kkinstances/default/cp1".to_string(),
            "kkinstances/default/w1".to_string(),
        ];
        until("every object reconciled again", 30, || {
            let seen = fake.reads()[reads..].to_vec();
            wanted.iter().all(|w| seen.iter().any(|r| r.ends_with(w.as_str())))
        })
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        ctl.stop().await;
        assert_eq!(fake.writes()[writes.len()..], [] as [String; 0], "a re-reconcile wrote");
        assert_eq!(tracking.runs().len(), runs, "a re-reconcile ran a phase");

        // An unreachable instance: a third worker machine gets gone1 (w1 is taken).
        let ctl = start(&ctx);
        let writes_before_gone = fake.writes().len();
        machine(
            &client,
            "c1-md-0-5d8f9-zz9kq",
            "worker",
            json!({"cluster.x-k8s.io/cluster-name": "c1", "cluster.x-k8s.io/deployment-name": "c1-md-0"}),
            owner("MachineSet", "cluster.x-k8s.io/v1beta1", "c1-md-0-5d8f9", "ms-uid"),
            &join_cloud_config(),
        )
        .await;
        until("gone1's bootstrap failed", 60, || {
            condition(&json_of(&fake, "kkinstances", "gone1"), "InstanceBootstrapped")
                .is_some_and(|c| c.0 == "False")
        })
        .await;

        // Release the worker: its KKInstance is reset on the host, then everything goes.
        Api::<KKMachine>::namespaced(client.clone(), NS)
            .delete(w_m, &DeleteParams::default())
            .await
            .unwrap();
        until("the worker's KKMachine and KKInstance gone", 120, || {
            kkm(&fake, w_m).is_none() && kki(&fake, "w1").is_none()
        })
        .await;
        let states: Vec<String> = fake
            .history("kkinstances")
            .iter()
            .filter(|(_, o)| o["metadata"]["name"] == "w1")
            .map(|(t, o)| format!("{t} {}", o["status"]["instanceState"].as_str().unwrap_or("-")))
            .fold(Vec::new(), |mut v, s| {
                if v.last() != Some(&s) {
                    v.push(s);
                }
                v
            });
        let tail: Vec<&str> = states.iter().rev().take(3).rev().map(String::as_str).collect();
        assert_eq!(tail, ["MODIFIED cleaning", "MODIFIED cleaned", "DELETED cleaned"], "{states:?}");
        let resets: Vec<PhaseRun> = tracking
            .of("w1")
            .into_iter()
            .filter(|r| r.phase == Phase::Reset)
            .collect();
        assert_eq!(resets.len(), 1, "{resets:?}");
        assert!(resets[0].outcome.clone().unwrap() > 0);
        let reset_calls = journal(&bed, 1)
            .into_iter()
            .filter(|e| e["tool"] == "kubeadm" && e["args"][0] == "reset")
            .count();
        assert_eq!(reset_calls, 1);
        let left = sh(
            &bed,
            1,
            "for f in /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl /usr/local/bin/containerd /etc/kubernetes /var/lib/kubelet /etc/containerd /var/lib/capkk /run/kubeadm/kubeadm-join-config.yaml /etc/systemd/system/kubelet.service; do [ ! -e $f ] || echo $f; done",
        );
        assert_eq!(left, "", "left on the worker after reset");
        assert_eq!(sh(&bed, 1, "systemctl is-active containerd kubelet || true"), "inactive\ninactive");
        // The control plane is untouched and the KKCluster keeps its finalizer.
        assert_eq!(sh(&bed, 0, "systemctl is-active containerd"), "active");
        assert!(kkm(&fake, cp_m).and_then(|k| k.status).is_some_and(|s| s.ready));
        let kkc: KKCluster = get(&fake, "kkclusters", "c1").unwrap();
        assert_eq!(kkc.metadata.finalizers.unwrap(), vec![KKCLUSTER_FINALIZER.to_string()]);

        // The unreachable instance: retryable, backing off, writes bounded.
        until("gone1 tried three times", 60, || {
            tracking.of("gone1").len() >= 3
        })
        .await;
        // Deleting the KKCluster waits for its machines: the finalizer stays.
        let reads = fake.reads().len();
        Api::<KKCluster>::namespaced(client.clone(), NS)
            .delete("c1", &DeleteParams::default())
            .await
            .unwrap();
        until("the KKCluster's deletion reconciled", 30, || {
            fake.reads()[reads..]
                .iter()
                .any(|r| r.ends_with("kkclusters/default/c1"))
        })
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        ctl.stop().await;
        let kkc: KKCluster = get(&fake, "kkclusters", "c1").expect("the KKCluster stays");
        assert!(kkc.metadata.deletion_timestamp.is_some());
        assert_eq!(
            kkc.metadata.finalizers.unwrap(),
            vec![KKCLUSTER_FINALIZER.to_string()]
        );
        let gone = tracking.of("gone1");
        eprintln!(
            "capkk_cluster: gone1 attempts at {:?}",
            gone.iter().map(|r| r.at.duration_since(gone[0].at).as_secs_f64()).collect::<Vec<_>>()
        );
        for r in &gone {
            assert_eq!(r.phase, Phase::Bootstrap);
            let e = r.outcome.clone().unwrap_err();
            assert!(e.retryable, "{e}");
        }
        // 5 s, then 10 s: never at once (its own status writes do not wake it early).
        let gaps: Vec<Duration> = gone.windows(2).map(|w| w[1].at - w[0].at).collect();
        assert!(
            gaps.iter().all(|g| *g >= Duration::from_secs(4)) && gaps[1] > gaps[0],
            "no backoff between attempts: {gaps:?}"
        );
        let ki = json_of(&fake, "kkinstances", "gone1");
        let c = condition(&ki, "InstanceBootstrapped").unwrap();
        assert_eq!((c.0.as_str(), c.1.as_str(), c.2.as_str()), ("False", "InitOSFailed", "Warning"), "{ki}");
        assert!(ki["status"].get("failureReason").is_none(), "{ki}");
        let msg = ki["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "InstanceBootstrapped")
            .unwrap()["message"]
            .to_string();
        assert!(msg.contains("unreachable"), "{msg}");
        let gone_writes: Vec<String> = fake.writes()[writes_before_gone..]
            .iter()
            .filter(|w| w.contains("/kkinstances/default/gone1"))
            .cloned()
            .collect();
        eprintln!("capkk_cluster: gone1 writes {gone_writes:?}");
        assert!(gone_writes.len() <= 6, "gone1 written in a loop: {gone_writes:?}");

        // Secrets stay in their Secrets.
        let others: String = ["kkclusters", "kkmachines", "kkinstances", "events", "machines", "clusters"]
            .iter()
            .flat_map(|r| fake.objects(r))
            .map(|o| o.to_string())
            .collect();
        assert!(!others.contains(TOKEN), "the bootstrap token leaked");
        for line in key.lines().filter(|l| l.len() >= 16) {
            assert!(!others.contains(line), "the private key leaked");
        }
    });
    eprintln!(
        "capkk_cluster: whole loop in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
