//! The KKCluster controller, Cluster API's infrastructure-cluster contract: wait for the
//! owner Cluster, keep a finalizer, fill `spec.controlPlaneEndpoint` from the kube-vip
//! address (`controlPlaneLoadBalancer.host`, port 6443) when empty, and report
//! `status.ready` with a `Ready` condition once the endpoint is valid. On delete it waits
//! until the cluster's KKMachines and KKInstances are gone, so no machine is left unreset.

use super::conditions::{self, ERROR, INFO};
use super::patch::{patch_spec, patch_status};
use super::{capi, is_paused, key_of, namespace_of, set_finalizer, Context, Error, WAIT};
use crate::api::{
    ApiEndpoint, KKCluster, KKInstance, KKMachine, KKCLUSTER_FINALIZER, KKCLUSTER_LABEL,
};
use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use std::sync::Arc;

/// The API server port of the endpoint the controller fills in.
pub const API_SERVER_PORT: i32 = 6443;

/// Condition and failure reason of a spec that does not validate.
pub const INVALID_SPEC: &str = "InvalidSpec";

/// Condition reason while neither endpoint nor load balancer is set.
pub const WAITING_FOR_ENDPOINT: &str = "WaitingForControlPlaneEndpoint";

/// Reconciles one KKCluster.
pub async fn reconcile(obj: Arc<KKCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = namespace_of(obj.as_ref())?;
    let name = obj.name_any();
    let api: Api<KKCluster> = Api::namespaced(ctx.client.clone(), &ns);
    // Work on what the API server has now, not on the watch's possibly older copy.
    let Some(kkc) = api.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    let Some(cluster_name) = capi::owner_name(&kkc.metadata, capi::GROUP, "Cluster") else {
        tracing::info!(kkcluster = %name, "waiting for Cluster API to set the owner Cluster");
        return Ok(Action::requeue(WAIT));
    };
    let clusters: Api<capi::Cluster> = Api::namespaced(ctx.client.clone(), &ns);
    let cluster = clusters.get_opt(&cluster_name).await?;
    if is_paused(cluster.as_ref(), &kkc) {
        tracing::info!(kkcluster = %name, "paused; not reconciling");
        return Ok(Action::await_change());
    }
    if kkc.metadata.deletion_timestamp.is_some() {
        return delete(&api, &kkc, &ns, &ctx).await;
    }
    set_finalizer(&api, &kkc, KKCLUSTER_FINALIZER, true).await?;

    // What KubeKey's admission webhooks do, done here (CAPKK runs no webhook server):
    // the defaults are written back, an invalid spec stops the cluster until it changes.
    let mut spec = kkc.spec.clone();
    crate::api::default_kkcluster_spec(&mut spec);
    if let Err(invalid) = crate::api::validate_kkcluster(&KKCluster {
        metadata: kkc.metadata.clone(),
        spec: spec.clone(),
        status: None,
    }) {
        return refuse(&api, &kkc, &ctx, invalid.to_string()).await;
    }
    if !spec.control_plane_endpoint.is_valid() {
        let lb = spec
            .control_plane_load_balancer
            .as_ref()
            .map(|lb| lb.host.as_str())
            .unwrap_or("");
        if !lb.is_empty() {
            spec.control_plane_endpoint = ApiEndpoint {
                host: lb.to_string(),
                port: API_SERVER_PORT,
            };
        }
    }
    if patch_spec(&api, &name, &kkc.spec, &spec).await? {
        let ep = &spec.control_plane_endpoint;
        ctx.event(
            &kkc,
            EventType::Normal,
            "ControlPlaneEndpointSet",
            format!("control plane endpoint set to {}:{}", ep.host, ep.port),
        )
        .await;
    }

    let old = kkc.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let now = ctx.now();
    let ready = spec.control_plane_endpoint.is_valid();
    status.ready = ready;
    if ready {
        conditions::mark_true(&mut status.conditions, "Ready", &now);
    } else {
        conditions::mark_false(
            &mut status.conditions,
            "Ready",
            WAITING_FOR_ENDPOINT,
            INFO,
            "set spec.controlPlaneEndpoint or spec.controlPlaneLoadBalancer.host",
            &now,
        );
    }
    patch_status(&api, &name, &old, &status).await?;
    ctx.backoff.reset(&key_of(&kkc));
    if ready {
        Ok(Action::await_change())
    } else {
        Ok(Action::requeue(WAIT))
    }
}

/// An invalid spec: `Ready` False (`InvalidSpec`, every problem in the message), the
/// terminal failure fields set, one Warning event; nothing more until the spec changes.
async fn refuse(
    api: &Api<KKCluster>,
    kkc: &KKCluster,
    ctx: &Context,
    message: String,
) -> Result<Action, Error> {
    let old = kkc.status.clone().unwrap_or_default();
    let mut status = old.clone();
    status.ready = false;
    status.failure_reason = Some(INVALID_SPEC.to_string());
    status.failure_message = Some(message.clone());
    conditions::mark_false(
        &mut status.conditions,
        "Ready",
        INVALID_SPEC,
        ERROR,
        &message,
        &ctx.now(),
    );
    if patch_status(api, &kkc.name_any(), &old, &status).await? {
        ctx.event(kkc, EventType::Warning, INVALID_SPEC, message)
            .await;
    }
    Ok(Action::await_change())
}

/// Waits until no KKMachine or KKInstance of the cluster is left, then drops the finalizer.
async fn delete(
    api: &Api<KKCluster>,
    kkc: &KKCluster,
    ns: &str,
    ctx: &Context,
) -> Result<Action, Error> {
    let selector = ListParams::default().labels(&format!("{KKCLUSTER_LABEL}={}", kkc.name_any()));
    let machines = Api::<KKMachine>::namespaced(ctx.client.clone(), ns)
        .list(&selector)
        .await?
        .items
        .len();
    let instances = Api::<KKInstance>::namespaced(ctx.client.clone(), ns)
        .list(&selector)
        .await?
        .items
        .len();
    if machines + instances > 0 {
        tracing::info!(
            kkcluster = %kkc.name_any(),
            machines,
            instances,
            "waiting for the cluster's machines to be deleted"
        );
        return Ok(Action::requeue(WAIT));
    }
    set_finalizer(api, kkc, KKCLUSTER_FINALIZER, false).await?;
    Ok(Action::await_change())
}
