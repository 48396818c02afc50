//! The FAKE API keeps the API server rules the controllers rely on.

use super::super::fake_api::FakeApi;
use crate::api::*;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

#[tokio::test]
async fn status_subresource_conflicts_finalizers_and_not_found() {
    let fake = FakeApi::new();
    let api: Api<KKInstance> = Api::namespaced(fake.client(), "default");
    let mut ki = KKInstance::new(
        "i1",
        KKInstanceSpec {
            name: "i1".into(),
            address: "10.0.0.1".into(),
            ..Default::default()
        },
    );
    ki.status = Some(KKInstanceStatus {
        failure_reason: Some("ignored on create".into()),
        ..Default::default()
    });
    let created = api.create(&PostParams::default(), &ki).await.unwrap();
    assert_eq!(created.status, None, "status is not set on create");
    let err = api.create(&PostParams::default(), &ki).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 409 && e.reason == "AlreadyExists"),
        "{err}"
    );

    // A status write changes only the status; a main write keeps it.
    let p = json!({"spec": {"address": "x"}, "status": {"instanceState": "running"}});
    let after = api
        .patch_status("i1", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    assert_eq!(after.spec.address, "10.0.0.1");
    assert_eq!(
        after.status.as_ref().unwrap().state,
        Some(InstanceState::Running)
    );
    let p = json!({"spec": {"arch": "arm64"}, "status": {"instanceState": "cleaned"}});
    let after = api
        .patch("i1", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    assert_eq!(after.spec.arch, "arm64");
    assert_eq!(after.status.unwrap().state, Some(InstanceState::Running));

    // A stale resourceVersion in a merge patch is a conflict.
    let stale =
        json!({"metadata": {"resourceVersion": created.resource_version(), "finalizers": ["f"]}});
    let err = api
        .patch("i1", &PatchParams::default(), &Patch::Merge(&stale))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 409),
        "{err}"
    );

    // Delete with a finalizer marks; removing the last finalizer deletes.
    api.patch(
        "i1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["f"]}})),
    )
    .await
    .unwrap();
    api.delete("i1", &DeleteParams::default()).await.unwrap();
    assert!(api
        .get("i1")
        .await
        .unwrap()
        .metadata
        .deletion_timestamp
        .is_some());
    api.patch(
        "i1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let err = api.get("i1").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 404),
        "{err}"
    );
}
