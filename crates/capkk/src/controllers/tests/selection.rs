//! KKCluster reconcile, pause, and how KKMachines get instances.

use super::super::kkmachine::{pick_instance, reason, roles_fit, INSTANCE_READY};
use super::super::{capi, Backoff, WAIT};
use super::world::*;
use crate::api::*;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

#[tokio::test]
async fn kkcluster_gets_finalizer_endpoint_and_ready_then_writes_nothing() {
    let w = World::new().await;
    let before = w.object_writes().len();
    assert_eq!(w.cluster().await, Action::await_change());
    let kkc: KKCluster = w.get("kkc1").await.unwrap();
    assert_eq!(kkc.finalizers(), [KKCLUSTER_FINALIZER]);
    assert_eq!(
        kkc.spec.control_plane_endpoint,
        ApiEndpoint {
            host: "10.0.0.100".into(),
            port: 6443
        }
    );
    let status = kkc.status.unwrap();
    assert!(status.ready);
    assert_eq!(
        cond(&status.conditions, "Ready"),
        Some(("True".into(), "".into()))
    );
    assert!(w
        .events("kkc1")
        .contains(&("Normal".into(), "ControlPlaneEndpointSet".into())));
    let after_first = w.fake.writes().len();
    assert_eq!(
        after_first - before,
        4,
        "finalizer, spec, status, one event: {:?}",
        w.fake.writes()
    );

    // Idempotent: the second reconcile reads and writes nothing.
    w.cluster().await;
    assert_eq!(w.fake.writes().len(), after_first, "{:?}", w.fake.writes());
    let again: KKCluster = w.get("kkc1").await.unwrap();
    assert_eq!(again.status.unwrap().conditions, status.conditions);
}

/// A spec that does not validate (no endpoint nor load balancer, two instances on one
/// address) is refused: Ready False with every problem, one Warning, then nothing until
/// the spec changes.
#[tokio::test]
async fn kkcluster_with_an_invalid_spec_is_refused_once_until_it_changes() {
    let w = World::new().await;
    let api: Api<KKCluster> = Api::namespaced(w.client.clone(), NS);
    let kkc: KKCluster = w.get("kkc1").await.unwrap();
    let mut instances = serde_json::to_value(&kkc.spec.nodes.instances).unwrap();
    let first = instances[0]["address"].clone();
    instances[1]["address"] = first;
    api.patch(
        "kkc1",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"controlPlaneLoadBalancer": null, "nodes": {"instances": instances}}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(w.cluster().await, Action::await_change());
    let status = w.get::<KKCluster>("kkc1").await.unwrap().status.unwrap();
    assert!(!status.ready);
    assert_eq!(
        cond(&status.conditions, "Ready"),
        Some(("False".into(), "InvalidSpec".into()))
    );
    let message = status.failure_message.unwrap_or_default();
    assert!(message.contains("controlPlaneLoadBalancer"), "{message}");
    assert!(
        message.contains("spec.nodes.instances[1].address"),
        "{message}"
    );
    assert_eq!(
        w.events("kkc1")
            .iter()
            .filter(|(_, reason)| reason == "InvalidSpec")
            .count(),
        1
    );
    let writes = w.fake.writes().len();
    assert_eq!(w.cluster().await, Action::await_change());
    assert_eq!(w.fake.writes().len(), writes, "{:?}", w.fake.writes());
}

#[tokio::test]
async fn kkcluster_without_owner_cluster_waits_and_writes_nothing() {
    let w = World::new().await;
    let api: Api<KKCluster> = Api::namespaced(w.client.clone(), NS);
    api.patch(
        "kkc1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": null}})),
    )
    .await
    .unwrap();
    let before = w.fake.writes().len();
    assert_eq!(w.cluster().await, Action::requeue(WAIT));
    assert_eq!(w.fake.writes().len(), before);
}

#[tokio::test]
async fn paused_cluster_or_annotation_stops_every_controller() {
    let w = World::new().await;
    w.machine("m1", vec![Role::ControlPlane]).await;
    let clusters: Api<capi::Cluster> = Api::namespaced(w.client.clone(), NS);
    clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    let before = w.fake.writes().len();
    assert_eq!(w.cluster().await, Action::await_change());
    assert_eq!(w.kkmachine("kk-m1").await, Action::await_change());
    assert_eq!(
        w.fake.writes().len(),
        before,
        "a paused cluster is not written to"
    );

    // Unpaused, but the KKMachine itself carries the pause annotation.
    clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": false}})),
        )
        .await
        .unwrap();
    let kkms: Api<KKMachine> = Api::namespaced(w.client.clone(), NS);
    kkms.patch(
        "kk-m1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {capi::PAUSED_ANNOTATION: ""}}})),
    )
    .await
    .unwrap();
    let before = w.fake.writes().len();
    w.kkmachine("kk-m1").await;
    assert_eq!(w.fake.writes().len(), before);
    assert!(w.fake.objects("kkinstances").is_empty());
    // The cluster itself is not paused by the machine's annotation.
    w.cluster().await;
    assert!(
        w.get::<KKCluster>("kkc1")
            .await
            .unwrap()
            .status
            .unwrap()
            .ready
    );
}

#[test]
fn roles_fit_by_containment_with_defaults_and_master_alias() {
    assert!(roles_fit(&[], &[Role::ControlPlane]));
    assert!(roles_fit(&[], &[Role::Worker, Role::ControlPlane]));
    assert!(roles_fit(&[Role::Master], &[Role::ControlPlane]));
    assert!(!roles_fit(&[Role::Worker], &[Role::ControlPlane]));
    assert!(!roles_fit(&[Role::ControlPlane], &[Role::Worker]));
    assert!(roles_fit(&[Role::Worker], &[]));
}

#[test]
fn pick_instance_follows_kkcluster_order_and_skips_held_ones() {
    let spec = KKClusterSpec {
        nodes: Nodes {
            instances: nodes(),
            ..Nodes::default()
        },
        ..KKClusterSpec::default()
    };
    let held = |name: &str, state: Option<InstanceState>| {
        let mut ki = KKInstance::new(
            name,
            KKInstanceSpec {
                name: name.into(),
                ..Default::default()
            },
        );
        ki.status = Some(KKInstanceStatus {
            state,
            ..Default::default()
        });
        ki
    };
    let pick = |roles: &[Role], existing: &[KKInstance]| {
        pick_instance(&spec, roles, existing).map(|n| n.name.clone())
    };
    assert_eq!(pick(&[Role::ControlPlane], &[]).as_deref(), Some("cp1"));
    assert_eq!(pick(&[Role::Worker], &[]).as_deref(), Some("w1"));
    let taken = [held("cp1", Some(InstanceState::Running)), held("w1", None)];
    assert_eq!(
        pick(&[Role::ControlPlane], &taken).as_deref(),
        Some("both1")
    );
    assert_eq!(pick(&[Role::Worker], &taken).as_deref(), Some("both1"));
    let all_cp = [
        held("cp1", Some(InstanceState::Running)),
        held("both1", Some(InstanceState::Cleaning)),
    ];
    assert_eq!(pick(&[Role::ControlPlane], &all_cp), None);
    // A cleaned instance is free again.
    let cleaned = [held("cp1", Some(InstanceState::Cleaned))];
    assert_eq!(
        pick(&[Role::ControlPlane], &cleaned).as_deref(),
        Some("cp1")
    );
}

#[tokio::test]
async fn machines_get_instances_by_role_until_none_is_free() {
    let w = World::new().await;
    w.cluster().await;
    for (m, roles) in [
        ("cp-a", vec![Role::ControlPlane]),
        ("cp-b", vec![Role::ControlPlane]),
        ("wk-a", vec![Role::Worker]),
        ("wk-b", vec![Role::Worker]),
        ("cp-c", vec![Role::ControlPlane]),
    ] {
        w.machine(m, roles).await;
        w.kkmachine(&format!("kk-{m}")).await;
    }
    assert_eq!(
        w.get::<KKMachine>("kk-cp-a")
            .await
            .unwrap()
            .spec
            .instance_id
            .as_deref(),
        Some("cp1")
    );
    assert_eq!(
        w.get::<KKMachine>("kk-cp-b")
            .await
            .unwrap()
            .spec
            .instance_id
            .as_deref(),
        Some("both1"),
        "control-plane only onto instances with the role"
    );
    assert_eq!(
        w.get::<KKMachine>("kk-wk-a")
            .await
            .unwrap()
            .spec
            .instance_id
            .as_deref(),
        Some("w1")
    );
    assert_eq!(
        w.get::<KKMachine>("kk-wk-b")
            .await
            .unwrap()
            .spec
            .instance_id
            .as_deref(),
        Some("w2")
    );
    assert_eq!(
        w.get::<KKMachine>("kk-cp-c")
            .await
            .unwrap()
            .spec
            .instance_id,
        None
    );

    // The KKInstance: named after the node, owned by the KKMachine, labelled, spec merged.
    let ki: KKInstance = w.get("cp1").await.unwrap();
    let kkm: KKMachine = w.get("kk-cp-a").await.unwrap();
    let ctrl = ki
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .unwrap();
    assert_eq!(
        (ctrl.kind.as_str(), ctrl.uid.as_str()),
        ("KKMachine", kkm.uid().unwrap().as_str())
    );
    assert_eq!(ctrl.block_owner_deletion, Some(true));
    assert_eq!(
        ki.labels().get(KKCLUSTER_LABEL).map(String::as_str),
        Some("kkc1")
    );
    assert_eq!(
        ki.labels().get(CLUSTER_NAME_LABEL).map(String::as_str),
        Some("c1")
    );
    assert_eq!(ki.spec.auth.user, "root");
    assert_eq!(ki.spec.auth.secret, "ssh-auth");
    assert_eq!(
        ki.spec.auth.password, "",
        "the password stays in its Secret"
    );
    assert_eq!(ki.spec.container_manager.type_, "containerd");
    assert_eq!(ki.spec.roles, [Role::ControlPlane]);
    assert_eq!(kkm.finalizers(), [KKMACHINE_FINALIZER]);
    assert_eq!(
        kkm.labels().get(KKCLUSTER_LABEL).map(String::as_str),
        Some("kkc1")
    );
    // Not running yet: no providerID, not ready.
    assert_eq!(kkm.spec.provider_id, None);
    let st = kkm.status.unwrap();
    assert!(!st.ready);
    assert_eq!(
        cond(&st.conditions, INSTANCE_READY),
        Some(("False".into(), reason::NOT_READY.into()))
    );

    // None free: InstanceReady False with KubeKey's reason, a Warning event, backoff.
    let st = w.get::<KKMachine>("kk-cp-c").await.unwrap().status.unwrap();
    assert_eq!(
        cond(&st.conditions, INSTANCE_READY),
        Some(("False".into(), reason::BOOTSTRAP_FAILED.into()))
    );
    assert!(st.conditions[0]
        .message
        .contains("no free instance in KKCluster kkc1 with roles [control-plane]"));
    assert!(w
        .events("kk-cp-c")
        .contains(&("Warning".into(), "FailedCreate".into())));
    // The first attempt waited BASE; the next waits twice as long, and writes nothing new.
    let before = w.fake.writes().len();
    assert_eq!(
        w.kkmachine("kk-cp-c").await,
        Action::requeue(Backoff::BASE * 2)
    );
    assert_eq!(
        w.kkmachine("kk-cp-c").await,
        Action::requeue(Backoff::BASE * 4)
    );
    assert_eq!(
        w.fake.writes().len(),
        before,
        "same condition, no repeated event: {:?}",
        &w.fake.writes()[before..]
    );
}

#[tokio::test]
async fn machine_waits_for_infrastructure_and_bootstrap_data() {
    let w = World::new().await;
    w.infrastructure_ready(false).await;
    w.machine("m1", vec![Role::Worker]).await;
    assert_eq!(w.kkmachine("kk-m1").await, Action::requeue(WAIT));
    let st = w.get::<KKMachine>("kk-m1").await.unwrap().status.unwrap();
    assert_eq!(
        cond(&st.conditions, INSTANCE_READY),
        Some(("False".into(), reason::WAITING_FOR_INFRASTRUCTURE.into()))
    );

    w.infrastructure_ready(true).await;
    let machines: Api<capi::Machine> = Api::namespaced(w.client.clone(), NS);
    machines
        .patch(
            "m1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"bootstrap": {"dataSecretName": null}}})),
        )
        .await
        .unwrap();
    assert_eq!(w.kkmachine("kk-m1").await, Action::requeue(WAIT));
    let st = w.get::<KKMachine>("kk-m1").await.unwrap().status.unwrap();
    assert_eq!(
        cond(&st.conditions, INSTANCE_READY),
        Some(("False".into(), reason::WAITING_FOR_BOOTSTRAP_DATA.into()))
    );
    assert!(w.fake.objects("kkinstances").is_empty());
    let _ = PostParams::default();
}

/// A KKMachine whose spec does not validate (an unknown container manager) is a terminal
/// failure: no instance is taken, one Warning, nothing more until it changes.
#[tokio::test]
async fn kkmachine_with_an_invalid_spec_takes_no_instance() {
    let w = World::new().await;
    w.cluster().await;
    w.machine("m1", vec![Role::Worker]).await;
    Api::<KKMachine>::namespaced(w.client.clone(), NS)
        .patch(
            "kk-m1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"containerManager": {"type": "podman"}}})),
        )
        .await
        .unwrap();
    assert_eq!(w.kkmachine("kk-m1").await, Action::await_change());
    let status = w.get::<KKMachine>("kk-m1").await.unwrap().status.unwrap();
    assert_eq!(status.failure_reason.as_deref(), Some("InvalidSpec"));
    assert!(
        status
            .failure_message
            .as_deref()
            .unwrap_or("")
            .contains("spec.containerManager.type"),
        "{:?}",
        status.failure_message
    );
    assert!(w.get::<KKInstance>("wk-a").await.is_none());
    let writes = w.fake.writes().len();
    assert_eq!(w.kkmachine("kk-m1").await, Action::await_change());
    assert_eq!(w.fake.writes().len(), writes);
    assert_eq!(
        w.events("kk-m1")
            .iter()
            .filter(|(_, r)| r == "InvalidSpec")
            .count(),
        1
    );
}
