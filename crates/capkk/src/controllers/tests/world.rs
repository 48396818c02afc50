//! The test world: a fake API seeded with a Cluster API cluster (Cluster, KKCluster with
//! four nodes, an SSH auth Secret), Machines with bootstrap data, and a driver that
//! records the phases it is asked to run and fails when told to.

use super::super::fake_api::FakeApi;
use super::super::{capi, kkcluster, kkinstance, kkmachine, Context};
use crate::api::*;
use crate::machine::{Driver, Job, MachineError, Phase};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The namespace of the cluster's objects.
pub const NS: &str = "default";
/// The controller's namespace, where the auth Secret is.
pub const CTRL_NS: &str = "capkk-system";
/// The SSH password in the auth Secret; must never show up in the API's objects.
pub const PASSWORD: &str = "pw-Sup3rSecret-91";
/// One line of the private key in the auth Secret.
pub const KEY_LINE: &str = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";

/// One call the recording driver got.
#[derive(Clone, Debug)]
pub struct Call {
    pub phase: Phase,
    pub instance: String,
    pub job: Job,
}

/// Records every phase; fails a phase (once or always) when told to.
#[derive(Default)]
pub struct Recorder {
    pub calls: Mutex<Vec<Call>>,
    /// (phase, error, how many more times to fail)
    pub failures: Mutex<Vec<(Phase, MachineError, usize)>>,
}

impl Recorder {
    /// The phases run so far, with the instance they ran on.
    pub fn phases(&self) -> Vec<(Phase, String)> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|c| (c.phase, c.instance.clone()))
            .collect()
    }

    /// Makes `phase` fail `times` times with `error`.
    pub fn fail(&self, phase: Phase, message: &str, retryable: bool, times: usize) {
        let e = MachineError {
            message: message.to_string(),
            retryable,
        };
        self.failures.lock().unwrap().push((phase, e, times));
    }
}

#[async_trait::async_trait]
impl Driver for Recorder {
    async fn run(&self, phase: Phase, job: &Job) -> Result<(), MachineError> {
        self.calls.lock().unwrap().push(Call {
            phase,
            instance: job.instance.name.clone(),
            job: job.clone(),
        });
        let mut failures = self.failures.lock().unwrap();
        if let Some(f) = failures.iter_mut().find(|f| f.0 == phase && f.2 > 0) {
            f.2 -= 1;
            return Err(f.1.clone());
        }
        Ok(())
    }
}

/// The fake API, the driver and the controllers' context.
pub struct World {
    pub fake: FakeApi,
    pub client: kube::Client,
    pub driver: Arc<Recorder>,
    pub ctx: Arc<Context>,
}

/// The KKCluster's nodes, in this order: a worker, a control-plane, one with both roles
/// (the default), another worker.
pub fn nodes() -> Vec<InstanceInfo> {
    let node = |name: &str, addr: &str, roles: Vec<Role>| InstanceInfo {
        name: name.into(),
        address: addr.into(),
        internal_address: format!("192.168.0.{}", addr.rsplit('.').next().unwrap()),
        roles,
        ..InstanceInfo::default()
    };
    vec![
        node("w1", "10.0.0.11", vec![Role::Worker]),
        node("cp1", "10.0.0.1", vec![Role::ControlPlane]),
        node("both1", "10.0.0.21", vec![]),
        node("w2", "10.0.0.12", vec![Role::Worker]),
    ]
}

fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

impl World {
    /// A world with the Cluster (infrastructure ready), its KKCluster and the auth Secret.
    pub async fn new() -> World {
        let fake = FakeApi::new();
        let client = fake.client();
        let driver = Arc::new(Recorder::default());
        let tick = Arc::new(AtomicU64::new(0));
        let clock = Arc::new(move || {
            format!(
                "2026-01-01T00:00:{:02}Z",
                tick.fetch_add(1, Ordering::SeqCst) % 60
            )
        });
        let ctx = Arc::new(Context::new(client.clone(), driver.clone(), CTRL_NS, clock));
        let w = World {
            fake,
            client,
            driver,
            ctx,
        };

        let clusters: Api<capi::Cluster> = Api::namespaced(w.client.clone(), NS);
        let mut c = capi::Cluster::new(
            "c1",
            capi::ClusterSpec {
                paused: false,
                infrastructure_ref: Some(capi::Reference {
                    kind: "KKCluster".into(),
                    name: "kkc1".into(),
                    ..Default::default()
                }),
            },
        );
        c.metadata.namespace = Some(NS.into());
        let c = clusters.create(&PostParams::default(), &c).await.unwrap();
        w.infrastructure_ready(true).await;

        let mut kkc = KKCluster::new(
            "kkc1",
            KKClusterSpec {
                nodes: Nodes {
                    auth: Auth {
                        user: "root".into(),
                        secret: "ssh-auth".into(),
                        ..Auth::default()
                    },
                    instances: nodes(),
                },
                control_plane_load_balancer: Some(KKLoadBalancerSpec {
                    host: "10.0.0.100".into(),
                }),
                ..KKClusterSpec::default()
            },
        );
        kkc.metadata.namespace = Some(NS.into());
        kkc.metadata.labels = Some([(CLUSTER_NAME_LABEL.to_string(), "c1".to_string())].into());
        kkc.metadata.owner_references = Some(vec![owner(
            "cluster.x-k8s.io/v1beta1",
            "Cluster",
            "c1",
            &c.uid().unwrap(),
        )]);
        Api::<KKCluster>::namespaced(w.client.clone(), NS)
            .create(&PostParams::default(), &kkc)
            .await
            .unwrap();

        let secret: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "ssh-auth", "namespace": CTRL_NS},
            "stringData": {},
            "data": {
                "password": b64(PASSWORD),
                "privateKey": b64(&format!("-----BEGIN RSA PRIVATE KEY-----\n{KEY_LINE}\n-----END RSA PRIVATE KEY-----\n")),
            }
        }))
        .unwrap();
        Api::<Secret>::namespaced(w.client.clone(), CTRL_NS)
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
        w
    }

    /// A Machine `name` with bootstrap data, and its KKMachine `kk-<name>` with `roles`.
    pub async fn machine(&self, name: &str, roles: Vec<Role>) {
        self.machine_with(name, roles, true).await
    }

    /// The same, the Machine's bootstrap data Secret named or not yet.
    pub async fn machine_with(&self, name: &str, roles: Vec<Role>, with_data: bool) {
        let secret_name = format!("{name}-bootstrap");
        let secret: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret_name, "namespace": NS},
            "data": {"value": b64("## template: jinja\n#cloud-config\nruncmd:\n- kubeadm init\n"), "format": b64("cloud-config")}
        }))
        .unwrap();
        Api::<Secret>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
        let mut m = capi::Machine::new(
            name,
            capi::MachineSpec {
                cluster_name: "c1".into(),
                bootstrap: capi::Bootstrap {
                    data_secret_name: with_data.then_some(secret_name),
                },
                version: Some("v1.33.0".into()),
                infrastructure_ref: Some(capi::Reference {
                    kind: "KKMachine".into(),
                    name: format!("kk-{name}"),
                    api_version: "infrastructure.cluster.x-k8s.io/v1beta1".into(),
                }),
            },
        );
        m.metadata.namespace = Some(NS.into());
        m.metadata.labels = Some([(CLUSTER_NAME_LABEL.to_string(), "c1".to_string())].into());
        let m = Api::<capi::Machine>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &m)
            .await
            .unwrap();
        let mut kkm = KKMachine::new(
            &format!("kk-{name}"),
            KKMachineSpec {
                roles,
                container_manager: ContainerManager {
                    type_: "containerd".into(),
                    ..Default::default()
                },
                ..KKMachineSpec::default()
            },
        );
        kkm.metadata.namespace = Some(NS.into());
        kkm.metadata.labels = Some([(CLUSTER_NAME_LABEL.to_string(), "c1".to_string())].into());
        kkm.metadata.owner_references = Some(vec![owner(
            "cluster.x-k8s.io/v1beta1",
            "Machine",
            name,
            &m.uid().unwrap(),
        )]);
        Api::<KKMachine>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &kkm)
            .await
            .unwrap();
    }

    /// The object `name` of kind `K` in [`NS`], if present.
    pub async fn get<K>(&self, name: &str) -> Option<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        Api::<K>::namespaced(self.client.clone(), NS)
            .get_opt(name)
            .await
            .unwrap()
    }

    /// Sets Cluster `c1`'s `status.infrastructureReady`, as Cluster API does from the
    /// KKCluster's readiness.
    pub async fn infrastructure_ready(&self, ready: bool) {
        Api::<capi::Cluster>::namespaced(self.client.clone(), NS)
            .patch_status(
                "c1",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"infrastructureReady": ready}})),
            )
            .await
            .unwrap();
    }

    /// Runs the three real controller loops over the fake's watches until the returned
    /// sender fires (then the handle ends once they have shut down).
    pub fn run_controllers(
        &self,
    ) -> (
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(super::super::run(self.ctx.clone(), async move {
            let _ = rx.await;
        }));
        (tx, handle)
    }

    /// Reconciles the KKCluster once.
    pub async fn cluster(&self) -> Action {
        let k: KKCluster = self.get("kkc1").await.unwrap();
        kkcluster::reconcile(Arc::new(k), self.ctx.clone())
            .await
            .unwrap()
    }

    /// Reconciles KKMachine `name` once.
    pub async fn kkmachine(&self, name: &str) -> Action {
        let k: KKMachine = self.get(name).await.unwrap();
        kkmachine::reconcile(Arc::new(k), self.ctx.clone())
            .await
            .unwrap()
    }

    /// Reconciles KKInstance `name` once.
    pub async fn kkinstance(&self, name: &str) -> Action {
        let k: KKInstance = self.get(name).await.unwrap();
        kkinstance::reconcile(Arc::new(k), self.ctx.clone())
            .await
            .unwrap()
    }

    /// Reconciles every object, KKClusters, KKMachines then KKInstances, `rounds` times:
    /// what the three controllers would do, in a deterministic order.
    pub async fn settle(&self, rounds: usize) {
        for _ in 0..rounds {
            for k in Api::<KKCluster>::namespaced(self.client.clone(), NS)
                .list(&ListParams::default())
                .await
                .unwrap()
            {
                kkcluster::reconcile(Arc::new(k), self.ctx.clone())
                    .await
                    .unwrap();
            }
            for k in Api::<KKMachine>::namespaced(self.client.clone(), NS)
                .list(&ListParams::default())
                .await
                .unwrap()
            {
                kkmachine::reconcile(Arc::new(k), self.ctx.clone())
                    .await
                    .unwrap();
            }
            for k in Api::<KKInstance>::namespaced(self.client.clone(), NS)
                .list(&ListParams::default())
                .await
                .unwrap()
            {
                kkinstance::reconcile(Arc::new(k), self.ctx.clone())
                    .await
                    .unwrap();
            }
        }
    }

    /// The reasons of the events about `name`, in order.
    pub fn events(&self, name: &str) -> Vec<(String, String)> {
        self.fake
            .objects("events")
            .iter()
            .filter(|e| e["regarding"]["name"] == name)
            .map(|e| {
                (
                    e["type"].as_str().unwrap_or("").to_string(),
                    e["reason"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The writes so far that are not events.
    pub fn object_writes(&self) -> Vec<String> {
        self.fake
            .writes()
            .into_iter()
            .filter(|w| !w.contains("/events/"))
            .collect()
    }
}

/// base64 of `s`, as Secret data.
pub fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The condition `type_` of a status' conditions, as (status, reason).
pub fn cond(conditions: &[Condition], type_: &str) -> Option<(String, String)> {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// Awaits `f`, failing the test with `what` if it takes longer than `d`.
pub async fn within<T>(
    what: &str,
    d: std::time::Duration,
    f: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(d, f)
        .await
        .unwrap_or_else(|_| panic!("not within {d:?}: {what}"))
}
