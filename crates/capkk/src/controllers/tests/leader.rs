//! The leader Lease of `kk-capkk run --leader-elect`, on the fake API.

use super::super::fake_api::FakeApi;
use super::super::manager::{try_acquire, LEASE_SECONDS};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;

#[tokio::test]
async fn one_holder_at_a_time_and_an_expired_lease_is_taken_over() {
    let fake = FakeApi::new();
    let leases: Api<Lease> = Api::namespaced(fake.client(), "capkk-system");
    let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let later = |s: i64| t0 + SignedDuration::from_secs(s);
    assert!(try_acquire(&leases, "l", "a", t0).await.unwrap());
    assert!(
        !try_acquire(&leases, "l", "b", later(5)).await.unwrap(),
        "held and fresh"
    );
    assert!(
        try_acquire(&leases, "l", "a", later(10)).await.unwrap(),
        "the holder renews"
    );
    assert!(
        !try_acquire(&leases, "l", "b", later(10 + i64::from(LEASE_SECONDS)))
            .await
            .unwrap()
    );
    assert!(
        try_acquire(&leases, "l", "b", later(11 + i64::from(LEASE_SECONDS)))
            .await
            .unwrap(),
        "expired"
    );
    let spec = leases.get("l").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));
    assert!(
        !try_acquire(&leases, "l", "a", later(12 + i64::from(LEASE_SECONDS)))
            .await
            .unwrap(),
        "a lost it"
    );
}
