//! The KKInstance controller: drives one machine through [`Phase::BUILD`] with the
//! [`Driver`](crate::machine::Driver), one condition per phase (KubeKey 3.x's names), in
//! order, skipping the phases whose condition is already True so a re-reconcile runs
//! nothing twice. State goes pending → bootstrapping → running. On delete: cleaning, the
//! `Reset` phase, cleaned, and the finalizer goes, which frees the machine for another
//! KKMachine.
//!
//! SSH auth named by `auth.secret` is read from a Secret in the controller's namespace
//! only to build the [`Job`]; it is never written to status or events, and driver
//! messages are scrubbed of it before they are.

use super::conditions::{self, ERROR, INFO, WARNING};
use super::patch::patch_status;
use super::{
    capi, fingerprint, is_paused, key_of, namespace_of, phase_condition, set_finalizer, Context,
    Error, WAIT,
};
use crate::api::{
    Auth, InstanceState, KKCluster, KKInstance, KKInstanceStatus, KKMachine, CLUSTER_NAME_LABEL,
    KKCLUSTER_LABEL, KKINSTANCE_FINALIZER,
};
use crate::machine::{BootstrapData, Job, MachineError, Phase};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use std::sync::Arc;

/// Cluster API's `failureReason` of a machine that could not be built.
pub const CREATE_ERROR: &str = "CreateError";
/// Cluster API's `failureReason` of a machine that could not be reset.
pub const DELETE_ERROR: &str = "DeleteError";

/// CamelCase name of a phase, for event reasons (`BootstrapStarted`, …).
fn event_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Bootstrap => "Bootstrap",
        Phase::Repository => "Repository",
        Phase::Binary => "Binary",
        Phase::ContainerManager => "ContainerManager",
        Phase::Provisioning => "Provisioning",
        Phase::Reset => "Reset",
    }
}

/// Replaces the password and private key (and each long line of the key) in `message`,
/// so a driver message quoting them never reaches status or events.
pub fn scrub(message: &str, auth: &Auth) -> String {
    let mut out = message.to_string();
    let mut secrets: Vec<&str> = vec![auth.password.as_str(), auth.private_key.as_str()];
    secrets.extend(
        auth.private_key
            .lines()
            .map(str::trim)
            .filter(|l| l.len() >= 16),
    );
    for s in secrets.into_iter().filter(|s| !s.is_empty()) {
        out = out.replace(s, "********");
    }
    out
}

/// `auth` with `password` / `privateKey` filled from its Secret (in `namespace`) where
/// empty; the Secret's absence is retryable (it may be created later).
async fn resolve_auth(ctx: &Context, auth: &Auth) -> Result<Auth, MachineError> {
    let mut auth = auth.clone();
    if auth.secret.is_empty() {
        return Ok(auth);
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let secret = secrets
        .get_opt(&auth.secret)
        .await
        .map_err(|e| MachineError {
            message: format!("reading auth Secret {}/{}: {e}", ctx.namespace, auth.secret),
            retryable: true,
        })?;
    let Some(secret) = secret else {
        return Err(MachineError {
            message: format!(
                "auth Secret {}/{} not found: create it with the keys password and/or privateKey",
                ctx.namespace, auth.secret
            ),
            retryable: true,
        });
    };
    let data = secret.data.unwrap_or_default();
    let text = |k: &str| {
        data.get(k)
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
    };
    if auth.password.is_empty() {
        auth.password = text("password").unwrap_or_default();
    }
    if auth.private_key.is_empty() {
        auth.private_key = text("privateKey").unwrap_or_default();
    }
    Ok(auth)
}

/// The Machine behind the KKInstance (its KKMachine's owner), if both exist.
async fn machine_of(
    ctx: &Context,
    ns: &str,
    ki: &KKInstance,
) -> Result<Option<capi::Machine>, Error> {
    let Some(kkm) = ki
        .owner_references()
        .iter()
        .find(|o| o.kind == "KKMachine" && o.controller == Some(true))
    else {
        return Ok(None);
    };
    let Some(kkm) = Api::<KKMachine>::namespaced(ctx.client.clone(), ns)
        .get_opt(&kkm.name)
        .await?
    else {
        return Ok(None);
    };
    let Some(machine) = capi::owner_name(&kkm.metadata, capi::GROUP, "Machine") else {
        return Ok(None);
    };
    Ok(Api::<capi::Machine>::namespaced(ctx.client.clone(), ns)
        .get_opt(&machine)
        .await?)
}

/// The bootstrap data of `machine` (Secret keys `value`, `format`); `Ok(None)` while the
/// bootstrap provider has not written it.
async fn bootstrap_data(
    ctx: &Context,
    ns: &str,
    machine: &capi::Machine,
) -> Result<Option<BootstrapData>, MachineError> {
    let Some(name) = machine.spec.bootstrap.data_secret_name.as_deref() else {
        return Ok(None);
    };
    let secret = Api::<Secret>::namespaced(ctx.client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(|e| MachineError {
            message: format!("reading bootstrap data Secret {ns}/{name}: {e}"),
            retryable: true,
        })?;
    let Some(secret) = secret else {
        return Ok(None);
    };
    let data = secret.data.unwrap_or_default();
    let Some(value) = data.get("value") else {
        return Err(MachineError {
            message: format!("bootstrap data Secret {ns}/{name} has no key `value`"),
            retryable: false,
        });
    };
    let format = data
        .get("format")
        .map(|f| String::from_utf8_lossy(&f.0).into_owned())
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| "cloud-config".to_string());
    Ok(Some(BootstrapData {
        value: value.0.clone(),
        format,
    }))
}

/// Reconciles one KKInstance.
pub async fn reconcile(obj: Arc<KKInstance>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = namespace_of(obj.as_ref())?;
    let name = obj.name_any();
    let api: Api<KKInstance> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(ki) = api.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    let cluster = match ki.labels().get(CLUSTER_NAME_LABEL) {
        Some(c) => {
            Api::<capi::Cluster>::namespaced(ctx.client.clone(), &ns)
                .get_opt(c)
                .await?
        }
        None => None,
    };
    if is_paused(cluster.as_ref(), &ki) {
        tracing::info!(kkinstance = %name, "paused; not reconciling");
        return Ok(Action::await_change());
    }
    let kkc = match ki.labels().get(KKCLUSTER_LABEL) {
        Some(c) => {
            Api::<KKCluster>::namespaced(ctx.client.clone(), &ns)
                .get_opt(c)
                .await?
        }
        None => None,
    };
    let mut job = Job {
        instance: ki.spec.clone(),
        cluster: kkc.as_ref().map(|k| k.spec.clone()).unwrap_or_default(),
        provider_id: Some(super::kkmachine::provider_id(&ns, &name)),
        ..Job::default()
    };
    let old = ki.status.clone().unwrap_or_default();
    let mut status = old.clone();
    // Woken by its own status write while waiting out a retryable failure: keep waiting.
    if let Some(left) = ctx.backoff.deferred(&key_of(&ki), fingerprint(&ki)) {
        return Ok(Action::requeue(left));
    }
    if ki.metadata.deletion_timestamp.is_some() {
        return delete(&ctx, &api, &ki, job, old).await;
    }
    if old.failure_reason.is_some() {
        // A terminal failure needs a person; Cluster API replaces the machine.
        return Ok(Action::await_change());
    }
    set_finalizer(&api, &ki, KKINSTANCE_FINALIZER, true).await?;
    let mut written = old;
    if status.state.is_none() {
        status.state = Some(InstanceState::Pending);
        patch_status(&api, &name, &written, &status).await?;
        written = status.clone();
    }
    if kkc.is_none() {
        tracing::info!(kkinstance = %name, "waiting for its KKCluster");
        return Ok(Action::requeue(WAIT));
    }
    let machine = machine_of(&ctx, &ns, &ki).await?;
    job.kubernetes_version = machine.as_ref().and_then(|m| m.spec.version.clone());
    let now = ctx.now();
    let key = key_of(&ki);

    let pending: Vec<Phase> = Phase::BUILD
        .into_iter()
        .filter(|p| !conditions::is_true(&status.conditions, phase_condition(*p).0))
        .collect();
    if pending.is_empty() {
        status.state = Some(InstanceState::Running);
        conditions::mark_true(&mut status.conditions, "Ready", &now);
        patch_status(&api, &name, &written, &status).await?;
        return Ok(Action::await_change());
    }
    let auth = match resolve_auth(&ctx, &ki.spec.auth).await {
        Ok(a) => a,
        Err(e) => {
            conditions::mark_false(
                &mut status.conditions,
                "Ready",
                "AuthNotResolved",
                WARNING,
                &e.message,
                &now,
            );
            patch_status(&api, &name, &written, &status).await?;
            return Ok(Action::requeue(ctx.backoff.defer(&key, fingerprint(&ki))));
        }
    };
    job.instance.auth = auth;

    for phase in pending {
        let cond = phase_condition(phase).0;
        if phase == Phase::Provisioning {
            let data = match machine.as_ref() {
                Some(m) => bootstrap_data(&ctx, &ns, m).await,
                None => Ok(None),
            };
            match data {
                Ok(Some(d)) => job.bootstrap_data = Some(d),
                Ok(None) => {
                    conditions::mark_false(
                        &mut status.conditions,
                        cond,
                        "WaitingForBootstrapData",
                        INFO,
                        "",
                        &now,
                    );
                    patch_status(&api, &name, &written, &status).await?;
                    return Ok(Action::requeue(WAIT));
                }
                Err(e) => return fail(&ctx, &api, &ki, written, status, phase, e).await,
            }
        }
        status.state = Some(InstanceState::Bootstrapping);
        conditions::mark_false(
            &mut status.conditions,
            "Ready",
            "Bootstrapping",
            INFO,
            "",
            &now,
        );
        patch_status(&api, &name, &written, &status).await?;
        written = status.clone();
        ctx.event(
            &ki,
            EventType::Normal,
            &format!("{}Started", event_name(phase)),
            format!("{} phase started", phase.as_str()),
        )
        .await;
        match ctx.driver.run(phase, &job).await {
            Ok(()) => {
                conditions::mark_true(&mut status.conditions, cond, &ctx.now());
                patch_status(&api, &name, &written, &status).await?;
                written = status.clone();
                ctx.event(
                    &ki,
                    EventType::Normal,
                    &format!("{}Succeeded", event_name(phase)),
                    format!("{} phase done", phase.as_str()),
                )
                .await;
            }
            Err(e) => {
                return fail(
                    &ctx,
                    &api,
                    &ki,
                    written,
                    status,
                    phase,
                    scrubbed(e, &job.instance.auth),
                )
                .await;
            }
        }
    }
    status.state = Some(InstanceState::Running);
    conditions::mark_true(&mut status.conditions, "Ready", &ctx.now());
    patch_status(&api, &name, &written, &status).await?;
    ctx.backoff.reset(&key);
    Ok(Action::await_change())
}

fn scrubbed(e: MachineError, auth: &Auth) -> MachineError {
    MachineError {
        message: scrub(&e.message, auth),
        retryable: e.retryable,
    }
}

/// Reports a failed phase: its condition False, a Warning event; a terminal failure also
/// sets `failureReason` / `failureMessage` and stops, a retryable one requeues with
/// backoff.
async fn fail(
    ctx: &Context,
    api: &Api<KKInstance>,
    ki: &KKInstance,
    written: KKInstanceStatus,
    mut status: KKInstanceStatus,
    phase: Phase,
    e: MachineError,
) -> Result<Action, Error> {
    let (cond, reason) = phase_condition(phase);
    let now = ctx.now();
    let severity = if e.retryable { WARNING } else { ERROR };
    conditions::mark_false(
        &mut status.conditions,
        cond,
        reason,
        severity,
        &e.message,
        &now,
    );
    let message = format!("{} phase failed: {}", phase.as_str(), e.message);
    if !e.retryable {
        status.failure_reason = Some(
            if phase == Phase::Reset {
                DELETE_ERROR
            } else {
                CREATE_ERROR
            }
            .to_string(),
        );
        status.failure_message = Some(message.clone());
    }
    patch_status(api, &ki.name_any(), &written, &status).await?;
    ctx.event(
        ki,
        EventType::Warning,
        &format!("{}Failed", event_name(phase)),
        message,
    )
    .await;
    if e.retryable {
        Ok(Action::requeue(
            ctx.backoff.defer(&key_of(ki), fingerprint(ki)),
        ))
    } else {
        Ok(Action::await_change())
    }
}

/// cleaning → `Reset` → cleaned, then the finalizer goes. A cleaned instance is not reset
/// again.
async fn delete(
    ctx: &Context,
    api: &Api<KKInstance>,
    ki: &KKInstance,
    mut job: Job,
    old: KKInstanceStatus,
) -> Result<Action, Error> {
    let name = ki.name_any();
    if old.state != Some(InstanceState::Cleaned) {
        if old.failure_reason.as_deref() == Some(DELETE_ERROR) {
            return Ok(Action::await_change());
        }
        let mut status = old.clone();
        status.state = Some(InstanceState::Cleaning);
        patch_status(api, &name, &old, &status).await?;
        let written = status.clone();
        job.instance.auth = match resolve_auth(ctx, &ki.spec.auth).await {
            Ok(a) => a,
            Err(e) => return fail(ctx, api, ki, written, status, Phase::Reset, e).await,
        };
        ctx.event(
            ki,
            EventType::Normal,
            "ResetStarted",
            "reset phase started".into(),
        )
        .await;
        if let Err(e) = ctx.driver.run(Phase::Reset, &job).await {
            return fail(
                ctx,
                api,
                ki,
                written,
                status,
                Phase::Reset,
                scrubbed(e, &job.instance.auth),
            )
            .await;
        }
        status.state = Some(InstanceState::Cleaned);
        conditions::mark_true(
            &mut status.conditions,
            phase_condition(Phase::Reset).0,
            &ctx.now(),
        );
        conditions::mark_false(
            &mut status.conditions,
            "Ready",
            "InstanceCleaned",
            INFO,
            "",
            &ctx.now(),
        );
        patch_status(api, &name, &written, &status).await?;
        ctx.event(
            ki,
            EventType::Normal,
            "ResetSucceeded",
            "reset phase done; the machine is free".into(),
        )
        .await;
        ctx.backoff.reset(&key_of(ki));
    }
    // Re-read: the status patches above changed the resourceVersion.
    if let Some(fresh) = api.get_opt(&name).await? {
        set_finalizer(api, &fresh, KKINSTANCE_FINALIZER, false).await?;
    }
    Ok(Action::await_change())
}
