//! The three controllers of CAPKK (kube-runtime `Controller`s, one per kind) and what they
//! share: the context (client, driver, event recorder, clock, backoff), the error type and
//! the status-patching helpers. Each reconcile reads the objects it needs, decides, and
//! writes only what changed, so running it again on an unchanged world writes nothing.
//!
//! - [`kkcluster`]: finalizer, owner Cluster, control plane endpoint, `status.ready`.
//! - [`kkmachine`]: picks a free instance of the right role, creates its KKInstance,
//!   reports providerID / addresses / ready; deletes the KKInstance on delete.
//! - [`kkinstance`]: drives the machine through the [`Phase`]s with the [`Driver`], one
//!   condition per phase; runs [`Phase::Reset`] on delete.

pub mod capi;
pub mod conditions;
pub mod kkcluster;
pub mod kkinstance;
pub mod kkmachine;
pub mod manager;
mod patch;

#[cfg(any(test, feature = "fake-api"))]
pub mod fake_api;
#[cfg(test)]
mod tests;

pub use patch::merge_diff;

use crate::api::{KKCluster, KKInstance, KKMachine};
use crate::machine::{Driver, MachineError, Phase};
use futures::StreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long to wait before looking again at something another controller (or a person)
/// has to do first: the owner reference, the infrastructure, the bootstrap data.
pub const WAIT: Duration = Duration::from_secs(10);

/// Why a reconcile failed; the controller retries every kind with exponential backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error("Kubernetes API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// A machine phase failed in a way that may pass on a retry (already reported in the
    /// object's conditions and events).
    #[error("{0}")]
    Machine(MachineError),
    /// An object is not as the controller needs it (missing namespace, bad reference).
    #[error("{0}")]
    Invalid(String),
}

/// Returns "now" as RFC 3339 for `lastTransitionTime`; tests give a fixed clock.
pub type Clock = Arc<dyn Fn() -> String + Send + Sync>;

/// The real clock, in the seconds precision Kubernetes' `metav1.Time` keeps.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    })
}

/// Per-object exponential backoff (5 s doubling to 5 min), reset when the object reaches
/// a good state: a machine that keeps failing is not retried in a tight loop.
#[derive(Default)]
pub struct Backoff {
    failures: Mutex<HashMap<String, u32>>,
    /// Objects waiting out a delay: their [`fingerprint`] then, and until when.
    deferred: Mutex<HashMap<String, (u64, std::time::Instant)>>,
}

impl Backoff {
    /// The first delay.
    pub const BASE: Duration = Duration::from_secs(5);
    /// The longest delay.
    pub const MAX: Duration = Duration::from_secs(300);

    /// Counts one more failure of `key` and returns how long to wait.
    pub fn next(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let n = failures.entry(key.to_string()).or_insert(0);
        let delay = Self::BASE.saturating_mul(1u32 << (*n).min(10));
        *n = n.saturating_add(1);
        delay.min(Self::MAX)
    }

    /// Counts one more failure of `key` and holds it back for the delay returned: a wake-up
    /// before then by a change of its own status alone (the failure's status write wakes
    /// the controller watching the object) finds it [`deferred`](Self::deferred) and does
    /// not run the machine work again at once.
    pub fn defer(&self, key: &str, fingerprint: u64) -> Duration {
        let delay = self.next(key);
        self.deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                key.to_string(),
                (fingerprint, std::time::Instant::now() + delay),
            );
        delay
    }

    /// How much longer `key` waits, if it was deferred and nothing but its status has
    /// changed since ([`fingerprint`] unchanged); a changed object is tried at once.
    pub fn deferred(&self, key: &str, fingerprint: u64) -> Option<Duration> {
        let mut deferred = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        let (fp, until) = *deferred.get(key)?;
        let left = until.saturating_duration_since(std::time::Instant::now());
        if fp == fingerprint && !left.is_zero() {
            return Some(left);
        }
        deferred.remove(key);
        None
    }

    /// Ends `key`'s deferral now, as if its requeue time had come (tests that call
    /// reconcile directly instead of waiting).
    #[cfg(test)]
    pub(crate) fn time_up(&self, key: &str) {
        if let Some(d) = self
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(key)
        {
            d.1 = std::time::Instant::now();
        }
    }

    /// Forgets the failures of `key`.
    pub fn reset(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        self.deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

/// What every reconcile gets.
pub struct Context {
    /// The API client.
    pub client: Client,
    /// Runs machine phases (the engine in production).
    pub driver: Arc<dyn Driver>,
    /// Publishes events about the objects.
    pub recorder: Recorder,
    /// The controller's own namespace, where `auth.secret` Secrets live.
    pub namespace: String,
    /// The time source of conditions.
    pub clock: Clock,
    /// Failure counts for requeue delays.
    pub backoff: Backoff,
}

impl Context {
    /// A context publishing events as `capkk-controller-manager`.
    pub fn new(client: Client, driver: Arc<dyn Driver>, namespace: &str, clock: Clock) -> Self {
        let reporter = Reporter {
            controller: "capkk-controller-manager".into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            driver,
            namespace: namespace.to_string(),
            clock,
            backoff: Backoff::default(),
        }
    }

    /// Publishes an event about `obj`; a failure to publish is logged, never fatal (the
    /// object's status says the same).
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        let ev = Event {
            type_,
            reason: reason.to_string(),
            note: Some(note),
            action: reason.to_string(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, &obj.object_ref(&())).await {
            tracing::warn!(reason, error = %e, "could not publish an event");
        }
    }

    /// Now, for conditions.
    pub fn now(&self) -> String {
        (self.clock)()
    }
}

/// `kind/namespace/name`, the key of [`Backoff`].
pub fn key_of<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        obj.meta().namespace.as_deref().unwrap_or(""),
        obj.meta().name.as_deref().unwrap_or("")
    )
}

/// The object's namespace, which every CAPKK kind has.
pub fn namespace_of<K: Resource>(obj: &K) -> Result<String, Error> {
    obj.meta().namespace.clone().ok_or_else(|| {
        Error::Invalid(format!(
            "{} has no metadata.namespace; CAPKK kinds are namespaced",
            obj.meta().name.as_deref().unwrap_or("<unnamed>")
        ))
    })
}

/// Cluster API's pause: the Cluster's `spec.paused` or the object's
/// `cluster.x-k8s.io/paused` annotation stops reconciliation.
pub fn is_paused<K: Resource>(cluster: Option<&capi::Cluster>, obj: &K) -> bool {
    cluster.is_some_and(|c| c.spec.paused)
        || obj
            .meta()
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(capi::PAUSED_ANNOTATION))
}

/// Adds or removes `finalizer` with a merge patch that carries the resourceVersion read,
/// so a concurrent change makes it fail (409) and retry instead of dropping a finalizer.
pub async fn set_finalizer<K>(
    api: &Api<K>,
    obj: &K,
    finalizer: &str,
    present: bool,
) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut finalizers = obj.finalizers().to_vec();
    let has = finalizers.iter().any(|f| f == finalizer);
    if has == present {
        return Ok(());
    }
    if present {
        finalizers.push(finalizer.to_string());
    } else {
        finalizers.retain(|f| f != finalizer);
    }
    let patch = serde_json::json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": obj.resource_version(),
        }
    });
    api.patch(
        &obj.name_any(),
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Where a KKInstance's condition for `phase` is (KubeKey 3.x's names), and the reason a
/// failure of it gets.
pub fn phase_condition(phase: Phase) -> (&'static str, &'static str) {
    match phase {
        Phase::Bootstrap => ("InstanceBootstrapped", "InitOSFailed"),
        Phase::Repository => ("InstanceRepositoryReady", "InstanceRepositoryFailed"),
        Phase::Binary => ("InstanceBinariesReady", "GetBinaryFailed"),
        Phase::ContainerManager => ("InstanceCRIReady", "InstallCRIFailed"),
        Phase::Provisioning => ("InstanceProvisioned", "RunCloudConfigFailed"),
        Phase::Reset => ("InstanceDeletingBootstrapped", "ClearEnvironmentFailed"),
    }
}

/// A hash of what, when it changes, deserves a new attempt at once: everything of `obj`
/// but its status and the bookkeeping that changes with it (resourceVersion, managed
/// fields, generation, finalizers). See [`Backoff::defer`].
pub fn fingerprint<K: serde::Serialize>(obj: &K) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut v = serde_json::to_value(obj).unwrap_or_default();
    // `retain`, not `remove`: with serde_json's preserve_order, `remove` swaps the last
    // key into the gap, so the same object would hash differently.
    if let Some(o) = v.as_object_mut() {
        o.retain(|k, _| k != "status");
        if let Some(meta) = o.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            meta.retain(|k, _| {
                ![
                    "resourceVersion",
                    "managedFields",
                    "generation",
                    "finalizers",
                ]
                .contains(&k.as_str())
            });
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}

/// The retry delay of a failed reconcile: exponential per object.
fn error_policy<K: Resource<DynamicType = ()>>(
    obj: Arc<K>,
    err: &Error,
    ctx: Arc<Context>,
) -> Action {
    let key = key_of(obj.as_ref());
    let delay = ctx.backoff.next(&key);
    tracing::warn!(object = %key, error = %err, ?delay, "reconcile failed; retrying");
    Action::requeue(delay)
}

/// Runs the three controllers on every namespace until `shutdown` completes, then lets
/// the running reconciles finish. Besides their own kind, KKClusters are woken by their
/// Cluster, KKMachines by their Machine (bootstrap data), their Cluster (infrastructure
/// ready) and KKInstances; a KKInstance waiting out a backoff is not re-run by its own
/// status writes ([`Backoff::defer`]); what else they wait for is looked at again after
/// [`WAIT`].
pub async fn run<S>(ctx: Arc<Context>, shutdown: S)
where
    S: Future<Output = ()> + Send + Sync + 'static,
{
    let client = ctx.client.clone();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let stop = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stopped| *stopped).await;
    };
    let clusters = Controller::new(
        Api::<KKCluster>::all(client.clone()),
        watcher::Config::default(),
    )
    .watches(
        Api::<capi::Cluster>::all(client.clone()),
        watcher::Config::default(),
        |c| {
            capi::infrastructure_object(
                &c.metadata,
                c.spec.infrastructure_ref.as_ref(),
                "KKCluster",
            )
        },
    )
    .graceful_shutdown_on(stop(rx.clone()))
    .run(kkcluster::reconcile, error_policy, ctx.clone())
    .for_each(|res| async move { log_result("KKCluster", res) });
    let machines = Controller::new(
        Api::<KKMachine>::all(client.clone()),
        watcher::Config::default(),
    );
    let machine_store = machines.store();
    let machines = machines
        .watches(
            Api::<capi::Cluster>::all(client.clone()),
            watcher::Config::default(),
            move |c| machines_of_cluster(&machine_store, &c),
        )
        .owns(
            Api::<KKInstance>::all(client.clone()),
            watcher::Config::default(),
        )
        .watches(
            Api::<capi::Machine>::all(client.clone()),
            watcher::Config::default(),
            |m| {
                capi::infrastructure_object(
                    &m.metadata,
                    m.spec.infrastructure_ref.as_ref(),
                    "KKMachine",
                )
            },
        )
        .graceful_shutdown_on(stop(rx.clone()))
        .run(kkmachine::reconcile, error_policy, ctx.clone())
        .for_each(|res| async move { log_result("KKMachine", res) });
    let instances = Controller::new(Api::<KKInstance>::all(client), watcher::Config::default())
        .graceful_shutdown_on(stop(rx))
        .run(kkinstance::reconcile, error_policy, ctx)
        .for_each(|res| async move { log_result("KKInstance", res) });
    tokio::spawn(async move {
        shutdown.await;
        let _ = tx.send(true);
    });
    futures::join!(clusters, machines, instances);
}

/// The KKMachines of Cluster `c` (label `cluster.x-k8s.io/cluster-name`, same namespace),
/// from the controller's cache: a Cluster becoming infrastructure-ready resumes them at
/// once instead of after [`WAIT`].
fn machines_of_cluster(
    store: &reflector::Store<KKMachine>,
    c: &capi::Cluster,
) -> Vec<ObjectRef<KKMachine>> {
    let (Some(ns), name) = (c.metadata.namespace.as_deref(), c.name_any()) else {
        return Vec::new();
    };
    let mut refs: Vec<ObjectRef<KKMachine>> = store
        .state()
        .iter()
        .filter(|m| {
            m.metadata.namespace.as_deref() == Some(ns)
                && m.labels().get(crate::api::CLUSTER_NAME_LABEL) == Some(&name)
        })
        .map(|m| ObjectRef::from_obj(m.as_ref()))
        .collect();
    refs.sort_by(|a, b| a.name.cmp(&b.name));
    refs
}

fn log_result<T: std::fmt::Debug, E: std::fmt::Display>(kind: &str, res: Result<T, E>) {
    match res {
        Ok(done) => tracing::debug!(kind, ?done, "reconciled"),
        Err(e) => tracing::warn!(kind, error = %e, "reconcile error"),
    }
}
