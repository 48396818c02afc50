//! What wakes the real `Controller` loops (over the fake's watches): a KKInstance's own
//! status writes do not (a retryable failure waits for its backoff), other changes of it
//! do; a Cluster becoming infrastructure-ready resumes its KKMachines at once.

use super::world::*;
use crate::api::*;
use crate::controllers::{Backoff, WAIT};
use crate::machine::Phase;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;
use std::time::Duration;

fn bootstraps(w: &World) -> usize {
    w.driver
        .phases()
        .iter()
        .filter(|p| p.0 == Phase::Bootstrap)
        .count()
}

#[tokio::test]
async fn a_failing_instance_waits_for_its_backoff_not_for_its_own_status_writes() {
    let w = World::new().await;
    w.driver
        .fail(Phase::Bootstrap, "host unreachable", true, usize::MAX);
    let (tx, handle) = w.run_controllers();
    w.machine("m1", vec![Role::Worker]).await;
    within("the bootstrap failed", Duration::from_secs(5), async {
        while bootstraps(&w) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // The failure's status write must not wake the controller: the retry waits for the
    // backoff (5 s), it does not come at once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(Backoff::BASE > Duration::from_millis(1500));
    assert_eq!(bootstraps(&w), 1, "retried before the backoff");
    let st = w.get::<KKInstance>("w1").await.unwrap().status.unwrap();
    assert_eq!(
        cond(&st.conditions, "InstanceBootstrapped"),
        Some(("False".into(), "InitOSFailed".into()))
    );
    // A change of anything but the status (here an annotation) still wakes it.
    Api::<KKInstance>::namespaced(w.client.clone(), NS)
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/poke": "1"}}})),
        )
        .await
        .unwrap();
    within(
        "a retry after the annotation",
        Duration::from_secs(2),
        async {
            while bootstraps(&w) < 2 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        },
    )
    .await;
    let _ = tx.send(());
    handle.await.unwrap();
}

#[tokio::test]
async fn machines_resume_when_their_cluster_becomes_infrastructure_ready() {
    let w = World::new().await;
    w.infrastructure_ready(false).await;
    let (tx, handle) = w.run_controllers();
    w.machine("m1", vec![Role::Worker]).await;
    within("the KKMachine waits", Duration::from_secs(5), async {
        loop {
            let st = w.get::<KKMachine>("kk-m1").await.and_then(|k| k.status);
            if st.is_some_and(|s| {
                cond(&s.conditions, "InstanceReady")
                    .is_some_and(|c| c.1 == "WaitingForClusterInfrastructure")
            }) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    w.infrastructure_ready(true).await;
    // Sooner than the KKMachine's own look again after WAIT.
    within("the KKMachine ready", WAIT / 2, async {
        while !w
            .get::<KKMachine>("kk-m1")
            .await
            .and_then(|k| k.status)
            .is_some_and(|s| s.ready)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let _ = tx.send(());
    handle.await.unwrap();
}
