//! A machine's life through the three controllers: phases, status, idempotency, errors,
//! deletion with finalizers, and the real `Controller` loops.

use super::super::kkinstance::{scrub, CREATE_ERROR};
use super::super::kkmachine::INSTANCE_READY;
use super::super::{capi, phase_condition, Backoff};
use super::world::*;
use crate::api::*;
use crate::machine::Phase;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;
use std::time::Duration;

const BUILD_CONDITIONS: [&str; 5] = [
    "InstanceBootstrapped",
    "InstanceRepositoryReady",
    "InstanceBinariesReady",
    "InstanceCRIReady",
    "InstanceProvisioned",
];

fn assert_no_secret(w: &World) {
    let dump = w.fake.dump();
    let outside_secrets: Vec<&str> = dump
        .lines()
        .filter(|l| !l.contains("\"kind\":\"Secret\""))
        .collect();
    for line in outside_secrets {
        assert!(!line.contains(PASSWORD), "password leaked: {line}");
        assert!(!line.contains(KEY_LINE), "private key leaked: {line}");
    }
}

#[tokio::test]
async fn machine_is_built_in_phase_order_and_a_second_pass_changes_nothing() {
    let w = World::new().await;
    w.machine("m1", vec![Role::ControlPlane]).await;
    w.settle(3).await;

    assert_eq!(
        w.driver.phases(),
        Phase::BUILD
            .iter()
            .map(|p| (*p, "cp1".to_string()))
            .collect::<Vec<_>>()
    );
    // The job: auth resolved from the Secret, the cluster, the version, bootstrap data.
    let calls = w.driver.calls.lock().unwrap().clone();
    let job = &calls[0].job;
    assert_eq!(job.instance.auth.password, PASSWORD);
    assert!(job.instance.auth.private_key.contains(KEY_LINE));
    assert_eq!(job.instance.auth.user, "root");
    assert_eq!(job.cluster.control_plane_endpoint.host, "10.0.0.100");
    assert_eq!(job.kubernetes_version.as_deref(), Some("v1.33.0"));
    assert_eq!(job.provider_id.as_deref(), Some("kk://default/cp1"));
    assert!(
        job.bootstrap_data.is_none(),
        "bootstrap data only for provisioning"
    );
    let prov = calls[4].job.bootstrap_data.as_ref().unwrap();
    assert_eq!(prov.format, "cloud-config");
    assert!(String::from_utf8_lossy(&prov.value).contains("kubeadm init"));

    let ki: KKInstance = w.get("cp1").await.unwrap();
    assert_eq!(ki.finalizers(), [KKINSTANCE_FINALIZER]);
    let st = ki.status.unwrap();
    assert_eq!(st.state, Some(InstanceState::Running));
    for c in BUILD_CONDITIONS.iter().chain(&["Ready"]) {
        assert_eq!(
            cond(&st.conditions, c),
            Some(("True".into(), "".into())),
            "{c}"
        );
    }
    let kkm: KKMachine = w.get("kk-m1").await.unwrap();
    assert_eq!(kkm.spec.instance_id.as_deref(), Some("cp1"));
    assert_eq!(kkm.spec.provider_id.as_deref(), Some("kk://default/cp1"));
    let ms = kkm.status.unwrap();
    assert!(ms.ready);
    assert_eq!(ms.instance_state, Some(InstanceState::Running));
    assert_eq!(
        ms.addresses,
        [MachineAddress {
            type_: "InternalIP".into(),
            address: "192.168.0.1".into()
        }]
    );
    assert_eq!(
        cond(&ms.conditions, INSTANCE_READY),
        Some(("True".into(), "".into()))
    );
    let events = w.events("cp1");
    for p in [
        "Bootstrap",
        "Repository",
        "Binary",
        "ContainerManager",
        "Provisioning",
    ] {
        assert!(
            events.contains(&("Normal".into(), format!("{p}Started"))),
            "{p}: {events:?}"
        );
        assert!(
            events.contains(&("Normal".into(), format!("{p}Succeeded"))),
            "{p}: {events:?}"
        );
    }

    // Idempotent: everything again, nothing written, no phase run again.
    let writes = w.fake.writes();
    w.settle(2).await;
    assert_eq!(w.fake.writes(), writes);
    assert_eq!(w.driver.phases().len(), 5);
    let again = w.get::<KKInstance>("cp1").await.unwrap().status.unwrap();
    assert_eq!(
        again.conditions, st.conditions,
        "lastTransitionTime unchanged"
    );
    assert_no_secret(&w);
}

#[tokio::test]
async fn retryable_failure_requeues_with_backoff_and_resumes_at_the_failed_phase() {
    let w = World::new().await;
    w.driver
        .fail(Phase::Binary, "download of kubeadm timed out", true, 1);
    w.machine("m1", vec![Role::Worker]).await;
    w.cluster().await;
    w.kkmachine("kk-m1").await;
    assert_eq!(w.kkinstance("w1").await, Action::requeue(Backoff::BASE));
    let st = w.get::<KKInstance>("w1").await.unwrap().status.unwrap();
    assert_eq!(st.state, Some(InstanceState::Bootstrapping));
    assert_eq!(
        cond(&st.conditions, "InstanceBinariesReady"),
        Some(("False".into(), "GetBinaryFailed".into()))
    );
    let c = st
        .conditions
        .iter()
        .find(|c| c.type_ == "InstanceBinariesReady")
        .unwrap();
    assert_eq!(
        (c.severity.as_str(), c.message.as_str()),
        ("Warning", "download of kubeadm timed out")
    );
    assert_eq!(st.failure_reason, None, "retryable: not a terminal failure");
    assert!(w
        .events("w1")
        .contains(&("Warning".into(), "BinaryFailed".into())));

    // Woken before the backoff ends (by its own status write): it keeps waiting.
    match w.kkinstance("w1").await {
        a if a != Action::await_change() => {}
        a => panic!("ran again before the backoff: {a:?}"),
    }
    assert_eq!(w.driver.phases().len(), 3);
    // The requeue time comes: it resumes at the failed phase.
    w.ctx.backoff.time_up("KKInstance/default/w1");
    assert_eq!(w.kkinstance("w1").await, Action::await_change());
    let phases: Vec<Phase> = w.driver.phases().into_iter().map(|p| p.0).collect();
    assert_eq!(
        phases,
        [
            Phase::Bootstrap,
            Phase::Repository,
            Phase::Binary,
            Phase::Binary,
            Phase::ContainerManager,
            Phase::Provisioning
        ]
    );
    let st = w.get::<KKInstance>("w1").await.unwrap().status.unwrap();
    assert_eq!(st.state, Some(InstanceState::Running));
    assert_eq!(
        cond(&st.conditions, "InstanceBinariesReady"),
        Some(("True".into(), "".into()))
    );
}

#[tokio::test]
async fn terminal_failure_sets_failure_fields_scrubbed_and_stops() {
    let w = World::new().await;
    let leaky = format!("containerd config rejected: login root/{PASSWORD} key {KEY_LINE}");
    w.driver.fail(Phase::ContainerManager, &leaky, false, 1);
    w.machine("m1", vec![Role::Worker]).await;
    w.settle(2).await;

    let st = w.get::<KKInstance>("w1").await.unwrap().status.unwrap();
    assert_eq!(st.failure_reason.as_deref(), Some(CREATE_ERROR));
    let msg = st.failure_message.unwrap();
    assert!(
        msg.starts_with("container_manager phase failed: containerd config rejected"),
        "{msg}"
    );
    assert!(msg.contains("********"));
    assert_eq!(
        cond(&st.conditions, "InstanceCRIReady"),
        Some(("False".into(), "InstallCRIFailed".into()))
    );
    assert!(w
        .events("w1")
        .contains(&("Warning".into(), "ContainerManagerFailed".into())));
    // Surfaced on the KKMachine for Cluster API.
    let ms = w.get::<KKMachine>("kk-m1").await.unwrap().status.unwrap();
    assert_eq!(ms.failure_reason.as_deref(), Some(CREATE_ERROR));
    assert!(!ms.ready);
    // Nothing more is tried.
    let n = w.driver.phases().len();
    w.settle(2).await;
    assert_eq!(w.driver.phases().len(), n);
    assert_eq!(n, 4);
    assert_no_secret(&w);
}

#[test]
fn scrub_hides_password_key_and_key_lines() {
    let auth = Auth {
        password: "hunter2-long".into(),
        private_key: format!("-----BEGIN KEY-----\n{KEY_LINE}\n-----END KEY-----"),
        ..Auth::default()
    };
    let out = scrub(&format!("pw hunter2-long then {KEY_LINE} end"), &auth);
    assert_eq!(out, "pw ******** then ******** end");
}

#[tokio::test]
async fn missing_auth_secret_is_retryable_and_runs_nothing() {
    let w = World::new().await;
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(w.client.clone(), CTRL_NS)
        .delete("ssh-auth", &DeleteParams::default())
        .await
        .unwrap();
    w.machine("m1", vec![Role::Worker]).await;
    w.cluster().await;
    w.kkmachine("kk-m1").await;
    assert_eq!(w.kkinstance("w1").await, Action::requeue(Backoff::BASE));
    assert!(w.driver.phases().is_empty());
    let kkm = w.get::<KKMachine>("kk-m1").await.unwrap();
    assert_eq!(
        kkm.status.unwrap().instance_state,
        None,
        "not yet seen by the KKMachine"
    );
    w.kkmachine("kk-m1").await;
    let ms = w.get::<KKMachine>("kk-m1").await.unwrap().status.unwrap();
    assert_eq!(ms.instance_state, Some(InstanceState::Pending));
    let st = w.get::<KKInstance>("w1").await.unwrap().status.unwrap();
    assert_eq!(st.state, Some(InstanceState::Pending));
    let ready = st.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.reason, "AuthNotResolved");
    assert!(
        ready
            .message
            .contains("auth Secret capkk-system/ssh-auth not found"),
        "{}",
        ready.message
    );
}

#[tokio::test]
async fn deleting_a_machine_resets_its_instance_once_and_frees_it() {
    let w = World::new().await;
    w.machine("m1", vec![Role::ControlPlane]).await;
    w.settle(3).await;
    let kkms: Api<KKMachine> = Api::namespaced(w.client.clone(), NS);
    kkms.delete("kk-m1", &DeleteParams::default())
        .await
        .unwrap();
    // Held by its finalizer until the instance is gone.
    assert!(w
        .get::<KKMachine>("kk-m1")
        .await
        .unwrap()
        .metadata
        .deletion_timestamp
        .is_some());
    assert_eq!(
        w.kkmachine("kk-m1").await,
        Action::requeue(Duration::from_secs(5))
    );
    let ki: KKInstance = w.get("cp1").await.unwrap();
    assert!(
        ki.metadata.deletion_timestamp.is_some(),
        "the KKMachine deleted its KKInstance"
    );
    // The KKCluster waits for its machines before letting go.
    Api::<KKCluster>::namespaced(w.client.clone(), NS)
        .delete("kkc1", &DeleteParams::default())
        .await
        .unwrap();
    w.cluster().await;
    assert!(w.get::<KKCluster>("kkc1").await.is_some());

    assert_eq!(w.kkinstance("cp1").await, Action::await_change());
    assert!(
        w.get::<KKInstance>("cp1").await.is_none(),
        "reset done, finalizer removed, gone"
    );
    assert_eq!(
        w.driver.phases().last(),
        Some(&(Phase::Reset, "cp1".to_string()))
    );
    assert_eq!(
        w.driver
            .calls
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .job
            .instance
            .auth
            .password,
        PASSWORD
    );
    let events = w.events("cp1");
    assert!(events.contains(&("Normal".into(), "ResetStarted".into())));
    assert!(events.contains(&("Normal".into(), "ResetSucceeded".into())));
    w.kkmachine("kk-m1").await;
    assert!(w.get::<KKMachine>("kk-m1").await.is_none());
    let resets = w
        .driver
        .phases()
        .iter()
        .filter(|p| p.0 == Phase::Reset)
        .count();
    assert_eq!(resets, 1);
    w.cluster().await;
    assert!(
        w.get::<KKCluster>("kkc1").await.is_none(),
        "no machines left: finalizer removed"
    );
    assert_no_secret(&w);
}

#[tokio::test]
async fn a_freed_instance_is_given_to_the_next_machine() {
    let w = World::new().await;
    w.machine("m1", vec![Role::ControlPlane]).await;
    w.machine("m2", vec![Role::ControlPlane]).await;
    w.settle(3).await;
    w.machine("m3", vec![Role::ControlPlane]).await;
    w.settle(1).await;
    assert_eq!(
        w.get::<KKMachine>("kk-m3").await.unwrap().spec.instance_id,
        None,
        "cp1 and both1 are held"
    );

    Api::<KKMachine>::namespaced(w.client.clone(), NS)
        .delete("kk-m1", &DeleteParams::default())
        .await
        .unwrap();
    w.settle(3).await;
    assert!(w.get::<KKMachine>("kk-m1").await.is_none());
    assert_eq!(
        w.get::<KKMachine>("kk-m3")
            .await
            .unwrap()
            .spec
            .instance_id
            .as_deref(),
        Some("cp1")
    );
    let phases = w.driver.phases();
    let on_cp1: Vec<Phase> = phases
        .iter()
        .filter(|p| p.1 == "cp1")
        .map(|p| p.0)
        .collect();
    let mut expect = Phase::BUILD.to_vec();
    expect.push(Phase::Reset);
    expect.extend(Phase::BUILD);
    assert_eq!(
        on_cp1, expect,
        "built, reset once, built again for the new machine"
    );
}

#[tokio::test]
async fn terminal_reset_failure_keeps_the_finalizer() {
    let w = World::new().await;
    w.machine("m1", vec![Role::Worker]).await;
    w.settle(3).await;
    w.driver
        .fail(Phase::Reset, "kubeadm reset: exit 1", false, 5);
    Api::<KKMachine>::namespaced(w.client.clone(), NS)
        .delete("kk-m1", &DeleteParams::default())
        .await
        .unwrap();
    w.settle(3).await;
    let ki: KKInstance = w.get("w1").await.unwrap();
    let st = ki.status.unwrap();
    assert_eq!(st.failure_reason.as_deref(), Some("DeleteError"));
    assert_eq!(st.state, Some(InstanceState::Cleaning));
    assert_eq!(
        cond(&st.conditions, phase_condition(Phase::Reset).0),
        Some(("False".into(), "ClearEnvironmentFailed".into()))
    );
    assert_eq!(
        w.driver
            .phases()
            .iter()
            .filter(|p| p.0 == Phase::Reset)
            .count(),
        1,
        "not retried"
    );
    assert!(
        w.get::<KKMachine>("kk-m1").await.is_some(),
        "the machine waits for a person"
    );
}

#[tokio::test]
async fn the_controller_loops_build_and_release_a_machine_over_watches() {
    let w = World::new().await;
    let (tx, run) = w.run_controllers();
    // The bootstrap data comes later: the Machine's watch, not the 10 s WAIT, resumes it.
    w.machine_with("m1", vec![Role::ControlPlane], false).await;
    let waiting = async {
        loop {
            let st = w.get::<KKMachine>("kk-m1").await.and_then(|k| k.status);
            if st.is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.reason == "WaitingForBootstrapData")
            }) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    within(
        "the KKMachine waits for data",
        Duration::from_secs(5),
        waiting,
    )
    .await;
    let data = json!({"spec": {"bootstrap": {"dataSecretName": "m1-bootstrap"}}});
    Api::<capi::Machine>::namespaced(w.client.clone(), NS)
        .patch("m1", &PatchParams::default(), &Patch::Merge(&data))
        .await
        .unwrap();
    let ready = async {
        loop {
            let kkm: Option<KKMachine> = w.get("kk-m1").await;
            if kkm.and_then(|k| k.status).is_some_and(|s| s.ready) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    within(
        "the KKMachine became ready, sooner than WAIT",
        Duration::from_secs(5),
        ready,
    )
    .await;
    assert!(
        w.get::<KKCluster>("kkc1")
            .await
            .unwrap()
            .status
            .unwrap()
            .ready
    );
    Api::<KKMachine>::namespaced(w.client.clone(), NS)
        .delete("kk-m1", &DeleteParams::default())
        .await
        .unwrap();
    let gone = async {
        while w.get::<KKMachine>("kk-m1").await.is_some()
            || w.get::<KKInstance>("cp1").await.is_some()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    within("the machine was released", Duration::from_secs(30), gone).await;
    let _ = tx.send(());
    within("graceful shutdown", Duration::from_secs(10), run)
        .await
        .unwrap();
    let resets = w
        .driver
        .phases()
        .iter()
        .filter(|p| p.0 == Phase::Reset)
        .count();
    assert_eq!(resets, 1);
}
