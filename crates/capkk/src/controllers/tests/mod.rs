//! Controller tests against the in-process FAKE API server (`super::fake_api`) and a
//! recording [`Driver`]: the reconcile decisions (instance selection, idempotency,
//! deletion with finalizers, status and conditions, pause, errors), and one run of the
//! real kube-runtime `Controller` loops over the fake's watches.

mod fake;
mod leader;
mod lifecycle;
mod selection;
mod triggers;
mod world;
