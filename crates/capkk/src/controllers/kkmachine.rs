//! The KKMachine controller, Cluster API's infrastructure-machine contract: once the
//! cluster's infrastructure is ready and the Machine has bootstrap data, give the KKMachine
//! a free instance of the KKCluster whose roles cover the machine's, create its KKInstance
//! (which does the machine work), and report `spec.providerID`, `status.ready` and
//! `status.addresses` when the instance runs. On delete it deletes the KKInstance and
//! keeps its finalizer until the instance has been reset and is gone: only then is the
//! machine free for another KKMachine.

use super::conditions::{self, ERROR, INFO, WARNING};
use super::kkcluster::INVALID_SPEC;
use super::patch::{patch_spec, patch_status};
use super::{capi, is_paused, key_of, namespace_of, Context, Error, WAIT};
use crate::api::{
    Auth, InstanceInfo, InstanceState, KKCluster, KKClusterSpec, KKInstance, KKInstanceSpec,
    KKMachine, KKMachineSpec, MachineAddress, Role, CLUSTER_NAME_LABEL, KKCLUSTER_LABEL,
    KKMACHINE_FINALIZER,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// The condition Cluster API reads for the machine's infrastructure.
pub const INSTANCE_READY: &str = "InstanceReady";
/// Reasons of a False `InstanceReady`, KubeKey 3.x's words.
pub mod reason {
    /// The Cluster's infrastructure (the KKCluster) is not ready yet.
    pub const WAITING_FOR_INFRASTRUCTURE: &str = "WaitingForClusterInfrastructure";
    /// The Machine's bootstrap data Secret is not there yet.
    pub const WAITING_FOR_BOOTSTRAP_DATA: &str = "WaitingForBootstrapData";
    /// No instance could be created (none free, or the create failed).
    pub const BOOTSTRAP_FAILED: &str = "InstanceBootstrapFailed";
    /// The instance is pending or being provisioned.
    pub const NOT_READY: &str = "InstanceNotReady";
    /// The instance is being or has been reset.
    pub const CLEANED: &str = "InstanceCleaned";
}

/// `kk://<namespace>/<instance name>`, what the KKMachine's `spec.providerID` becomes.
pub fn provider_id(namespace: &str, instance: &str) -> String {
    format!("kk://{namespace}/{instance}")
}

/// Whether a machine with `wanted` roles may go onto an instance with `have` roles
/// (empty: control-plane and worker; `master` counts as `control-plane`).
pub fn roles_fit(have: &[Role], wanted: &[Role]) -> bool {
    let norm = |r: &Role| {
        if *r == Role::Master {
            Role::ControlPlane
        } else {
            *r
        }
    };
    let have: Vec<Role> = if have.is_empty() {
        vec![Role::ControlPlane, Role::Worker]
    } else {
        have.iter().map(norm).collect()
    };
    wanted.iter().map(norm).all(|r| have.contains(&r))
}

/// The first node of the KKCluster (in its order) whose roles fit `roles` and that no
/// existing KKInstance holds: an instance is held by a KKInstance with its name or
/// address unless that KKInstance has been cleaned.
pub fn pick_instance<'a>(
    cluster: &'a KKClusterSpec,
    roles: &[Role],
    existing: &[KKInstance],
) -> Option<&'a InstanceInfo> {
    let held = |node: &InstanceInfo| {
        existing.iter().any(|ki| {
            let cleaned = ki.status.as_ref().and_then(|s| s.state) == Some(InstanceState::Cleaned);
            !cleaned && (ki.name_any() == node.name || ki.spec.address == node.address)
        })
    };
    cluster
        .nodes
        .instances
        .iter()
        .find(|node| roles_fit(&node.roles, roles) && !held(node))
}

/// The KKInstance spec for `node`: its own auth over the cluster's, field by field, and
/// the machine's runtime and repository.
pub fn instance_spec(
    node: &InstanceInfo,
    cluster_auth: &Auth,
    machine: &KKMachineSpec,
) -> KKInstanceSpec {
    let pick = |own: &String, all: &String| {
        if own.is_empty() {
            all.clone()
        } else {
            own.clone()
        }
    };
    let a = &node.auth;
    let auth = Auth {
        user: pick(&a.user, &cluster_auth.user),
        password: pick(&a.password, &cluster_auth.password),
        port: a.port.or(cluster_auth.port),
        private_key: pick(&a.private_key, &cluster_auth.private_key),
        private_key_path: pick(&a.private_key_path, &cluster_auth.private_key_path),
        secret: pick(&a.secret, &cluster_auth.secret),
        timeout: a.timeout.clone().or_else(|| cluster_auth.timeout.clone()),
    };
    KKInstanceSpec {
        name: node.name.clone(),
        address: node.address.clone(),
        internal_address: node.internal_address.clone(),
        roles: if node.roles.is_empty() {
            vec![Role::ControlPlane, Role::Worker]
        } else {
            node.roles.clone()
        },
        arch: node.arch.clone(),
        auth,
        container_manager: machine.container_manager.clone(),
        repository: machine.repository.clone(),
    }
}

/// The KKInstances whose controller owner is `kkm`.
async fn owned_instances(api: &Api<KKInstance>, kkm: &KKMachine) -> Result<Vec<KKInstance>, Error> {
    let uid = kkm.uid().unwrap_or_default();
    let mut owned: Vec<KKInstance> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|ki| {
            ki.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && o.uid == uid)
        })
        .collect();
    owned.sort_by_key(|ki| ki.name_any());
    Ok(owned)
}

/// Reconciles one KKMachine.
pub async fn reconcile(obj: Arc<KKMachine>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = namespace_of(obj.as_ref())?;
    let name = obj.name_any();
    let api: Api<KKMachine> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(kkm) = api.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    let instances: Api<KKInstance> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(machine_name) = capi::owner_name(&kkm.metadata, capi::GROUP, "Machine") else {
        tracing::info!(kkmachine = %name, "waiting for Cluster API to set the owner Machine");
        return Ok(Action::requeue(WAIT));
    };
    let Some(machine) = Api::<capi::Machine>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&machine_name)
        .await?
    else {
        return Ok(Action::requeue(WAIT));
    };
    let cluster_name = kkm
        .labels()
        .get(CLUSTER_NAME_LABEL)
        .cloned()
        .unwrap_or_else(|| machine.spec.cluster_name.clone());
    let cluster = Api::<capi::Cluster>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&cluster_name)
        .await?;
    if is_paused(cluster.as_ref(), &kkm) {
        tracing::info!(kkmachine = %name, "paused; not reconciling");
        return Ok(Action::await_change());
    }
    if kkm.metadata.deletion_timestamp.is_some() {
        return delete(&api, &instances, &kkm).await;
    }
    let old = kkm.status.clone().unwrap_or_default();
    if old.failure_reason.is_some() {
        // A terminal failure needs a person (Cluster API replaces the Machine).
        return Ok(Action::await_change());
    }
    // KubeKey's admission webhook, done here: a spec that does not validate is a
    // terminal failure (Cluster API replaces the Machine once the template is fixed).
    let mut defaulted = kkm.clone();
    crate::api::default_kkmachine(&mut defaulted);
    if let Err(invalid) = crate::api::validate_kkmachine(&defaulted) {
        let mut status = old.clone();
        status.failure_reason = Some(INVALID_SPEC.to_string());
        status.failure_message = Some(invalid.to_string());
        conditions::mark_false(
            &mut status.conditions,
            INSTANCE_READY,
            INVALID_SPEC,
            ERROR,
            &invalid.to_string(),
            &ctx.now(),
        );
        if patch_status(&api, &name, &old, &status).await? {
            ctx.event(&kkm, EventType::Warning, INVALID_SPEC, invalid.to_string())
                .await;
        }
        return Ok(Action::await_change());
    }
    let Some(cluster) = cluster else {
        tracing::info!(kkmachine = %name, cluster = %cluster_name, "waiting for the Cluster");
        return Ok(Action::requeue(WAIT));
    };
    let kkc_name = cluster
        .spec
        .infrastructure_ref
        .as_ref()
        .map(|r| r.name.clone())
        .unwrap_or_else(|| cluster_name.clone());
    let Some(kkc) = Api::<KKCluster>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&kkc_name)
        .await?
    else {
        tracing::info!(kkmachine = %name, kkcluster = %kkc_name, "waiting for the KKCluster");
        return Ok(Action::requeue(WAIT));
    };

    // The finalizer and the cluster label, before anything is created for the machine.
    let has_label = kkm.labels().get(KKCLUSTER_LABEL) == Some(&kkc_name);
    let has_finalizer = kkm.finalizers().iter().any(|f| f == KKMACHINE_FINALIZER);
    if !has_label || !has_finalizer {
        let mut finalizers = kkm.finalizers().to_vec();
        if !has_finalizer {
            finalizers.push(KKMACHINE_FINALIZER.to_string());
        }
        let patch = serde_json::json!({"metadata": {
            "labels": {KKCLUSTER_LABEL: kkc_name},
            "finalizers": finalizers,
            "resourceVersion": kkm.resource_version(),
        }});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }

    let mut status = old.clone();
    let now = ctx.now();
    let infra_ready = cluster
        .status
        .as_ref()
        .is_some_and(|s| s.infrastructure_ready);
    if !infra_ready || machine.spec.bootstrap.data_secret_name.is_none() {
        let why = if infra_ready {
            reason::WAITING_FOR_BOOTSTRAP_DATA
        } else {
            reason::WAITING_FOR_INFRASTRUCTURE
        };
        conditions::mark_false(&mut status.conditions, INSTANCE_READY, why, INFO, "", &now);
        patch_status(&api, &name, &old, &status).await?;
        return Ok(Action::requeue(WAIT));
    }

    let instance = match owned_instances(&instances, &kkm).await?.into_iter().next() {
        Some(ki) => ki,
        None => match create_instance(&ctx, &instances, &kkm, &kkc, &cluster_name).await? {
            Ok(ki) => ki,
            Err(message) => {
                let was = conditions::get(&status.conditions, INSTANCE_READY).cloned();
                conditions::mark_false(
                    &mut status.conditions,
                    INSTANCE_READY,
                    reason::BOOTSTRAP_FAILED,
                    ERROR,
                    &message,
                    &now,
                );
                if was.as_ref().map(|c| (&c.reason, &c.message))
                    != Some((&reason::BOOTSTRAP_FAILED.to_string(), &message))
                {
                    ctx.event(&kkm, EventType::Warning, "FailedCreate", message.clone())
                        .await;
                }
                patch_status(&api, &name, &old, &status).await?;
                return Ok(Action::requeue(ctx.backoff.next(&key_of(&kkm))));
            }
        },
    };

    let state = instance.status.as_ref().and_then(|s| s.state);
    let mut spec = kkm.spec.clone();
    spec.instance_id = Some(instance.name_any());
    if state == Some(InstanceState::Running) {
        spec.provider_id = Some(provider_id(&ns, &instance.name_any()));
    }
    patch_spec(&api, &name, &kkm.spec, &spec).await?;

    status.instance_state = state;
    status.ready = state == Some(InstanceState::Running);
    if let Some(is) = instance
        .status
        .as_ref()
        .filter(|s| s.failure_reason.is_some())
    {
        status.failure_reason = is.failure_reason.clone();
        status.failure_message = is.failure_message.clone();
    }
    match state {
        Some(InstanceState::Running) => {
            let address = if instance.spec.internal_address.is_empty() {
                instance.spec.address.clone()
            } else {
                instance.spec.internal_address.clone()
            };
            status.addresses = vec![MachineAddress {
                type_: "InternalIP".into(),
                address,
            }];
            conditions::mark_true(&mut status.conditions, INSTANCE_READY, &now);
        }
        Some(InstanceState::Cleaning | InstanceState::Cleaned) => {
            conditions::mark_false(
                &mut status.conditions,
                INSTANCE_READY,
                reason::CLEANED,
                WARNING,
                "",
                &now,
            );
        }
        _ => {
            conditions::mark_false(
                &mut status.conditions,
                INSTANCE_READY,
                reason::NOT_READY,
                WARNING,
                "",
                &now,
            );
        }
    }
    patch_status(&api, &name, &old, &status).await?;
    ctx.backoff.reset(&key_of(&kkm));
    // Changes of the KKInstance (owned) wake this controller up again.
    Ok(Action::await_change())
}

/// Creates the KKInstance of a free instance; `Ok(Err(why))` when there is none (or it
/// was taken between the list and the create).
async fn create_instance(
    ctx: &Context,
    instances: &Api<KKInstance>,
    kkm: &KKMachine,
    kkc: &KKCluster,
    cluster_name: &str,
) -> Result<Result<KKInstance, String>, Error> {
    let kkc_name = kkc.name_any();
    let existing = instances
        .list(&ListParams::default().labels(&format!("{KKCLUSTER_LABEL}={kkc_name}")))
        .await?
        .items;
    let roles = &kkm.spec.roles;
    let Some(node) = pick_instance(&kkc.spec, roles, &existing) else {
        let roles: Vec<String> = roles
            .iter()
            .map(|r| {
                serde_json::to_value(r)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            })
            .collect();
        return Ok(Err(format!(
            "no free instance in KKCluster {kkc_name} with roles [{}]: every matching instance \
             is held by another KKMachine; add one to spec.nodes.instances or delete a machine",
            roles.join(", ")
        )));
    };
    let mut ki = KKInstance::new(
        &node.name,
        instance_spec(node, &kkc.spec.nodes.auth, &kkm.spec),
    );
    ki.metadata.namespace = kkm.namespace();
    ki.metadata.labels = Some(
        [
            (CLUSTER_NAME_LABEL.to_string(), cluster_name.to_string()),
            (KKCLUSTER_LABEL.to_string(), kkc_name.clone()),
        ]
        .into(),
    );
    ki.metadata.owner_references = Some(vec![
        OwnerReference {
            controller: Some(true),
            block_owner_deletion: Some(true),
            ..kkm
                .owner_ref(&())
                .ok_or_else(|| Error::Invalid(format!("KKMachine {} has no uid", kkm.name_any())))?
        },
        OwnerReference {
            block_owner_deletion: Some(true),
            ..kkc
                .owner_ref(&())
                .ok_or_else(|| Error::Invalid(format!("KKCluster {kkc_name} has no uid")))?
        },
    ]);
    match instances.create(&PostParams::default(), &ki).await {
        Ok(created) => {
            ctx.event(
                kkm,
                EventType::Normal,
                "InstanceCreated",
                format!(
                    "KKInstance {} created for instance {}",
                    created.name_any(),
                    node.address
                ),
            )
            .await;
            Ok(Ok(created))
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Err(format!(
            "instance {} was taken by another KKMachine meanwhile; trying again",
            node.name
        ))),
        Err(e) => Err(e.into()),
    }
}

/// Deletes the machine's KKInstance and waits until it is gone (reset) before dropping
/// the finalizer.
async fn delete(
    api: &Api<KKMachine>,
    instances: &Api<KKInstance>,
    kkm: &KKMachine,
) -> Result<Action, Error> {
    let owned = owned_instances(instances, kkm).await?;
    for ki in &owned {
        if ki.metadata.deletion_timestamp.is_none() {
            instances
                .delete(&ki.name_any(), &DeleteParams::default())
                .await?;
        }
    }
    if !owned.is_empty() {
        tracing::info!(kkmachine = %kkm.name_any(), "waiting for the KKInstance to be reset and deleted");
        return Ok(Action::requeue(Duration::from_secs(5)));
    }
    super::set_finalizer(api, kkm, KKMACHINE_FINALIZER, false).await?;
    Ok(Action::await_change())
}
