//! `kk-capkk run`: connect (kubeconfig, else the in-cluster service account), optionally
//! win a Lease so only one replica reconciles, run the three controllers, and stop
//! gracefully on SIGTERM / SIGINT (running reconciles finish; a machine phase is not cut
//! in the middle). Losing the Lease stops the manager too: two replicas must never drive
//! the same machine.

use super::{run, system_clock, Context, Error};
use crate::machine::Driver;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use std::sync::Arc;
use std::time::Duration;

/// Options of `kk-capkk run`.
#[derive(clap::Args, Clone, Debug)]
pub struct RunArgs {
    /// The controller's namespace, where `auth.secret` Secrets and the leader Lease are
    /// [default: $POD_NAMESPACE, else capkk-system].
    #[arg(long)]
    pub namespace: Option<String>,
    /// Take the Lease `--lease-name` before reconciling (for more than one replica).
    #[arg(long)]
    pub leader_elect: bool,
    /// The Lease's name.
    #[arg(long, default_value = "capkk-controller-manager")]
    pub lease_name: String,
}

impl RunArgs {
    /// `--namespace`, else `$POD_NAMESPACE` (set from the Pod's fieldRef), else
    /// `capkk-system`.
    pub fn namespace(&self) -> String {
        self.namespace
            .clone()
            .or_else(|| {
                std::env::var("POD_NAMESPACE")
                    .ok()
                    .filter(|n| !n.is_empty())
            })
            .unwrap_or_else(|| "capkk-system".to_string())
    }
}

/// How long a Lease is valid without renewal.
pub const LEASE_SECONDS: i32 = 15;
/// How often the holder renews it.
const RENEW_EVERY: Duration = Duration::from_secs(5);

/// Connects and runs the controllers with `driver` until a signal (or a lost Lease).
pub async fn run_manager(args: &RunArgs, driver: Arc<dyn Driver>) -> Result<(), Error> {
    // Logs to stderr, INFO and up (a subscriber set by the caller wins).
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::stderr)
        .try_init();
    let client = Client::try_default().await?;
    let namespace = args.namespace();
    let (lost_tx, lost_rx) = tokio::sync::oneshot::channel::<String>();
    if args.leader_elect {
        let identity =
            std::env::var("POD_NAME").unwrap_or_else(|_| format!("capkk-{}", std::process::id()));
        let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
        tracing::info!(lease = %args.lease_name, %identity, "waiting to become the leader");
        while !try_acquire(&leases, &args.lease_name, &identity, Timestamp::now()).await? {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        tracing::info!(%identity, "leader");
        let name = args.lease_name.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                match try_acquire(&leases, &name, &identity, Timestamp::now()).await {
                    Ok(true) => {}
                    Ok(false) => {
                        let _ = lost_tx.send(format!("Lease {name} taken by another replica"));
                        return;
                    }
                    Err(e) => {
                        let _ = lost_tx.send(format!("cannot renew Lease {name}: {e}"));
                        return;
                    }
                }
            }
        });
    }
    let ctx = Arc::new(Context::new(client, driver, &namespace, system_clock()));
    let lost = Arc::new(std::sync::Mutex::new(None::<String>));
    let lost_w = lost.clone();
    let shutdown = async move {
        tokio::select! {
            _ = signal() => tracing::info!("signal received; finishing running reconciles"),
            Ok(why) = lost_rx => {
                tracing::error!(%why, "lost leadership; stopping");
                *lost_w.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
            }
        }
    };
    run(ctx, shutdown).await;
    let why = lost.lock().unwrap_or_else(|e| e.into_inner()).take();
    match why {
        Some(why) => Err(Error::Invalid(format!("stopped: {why}"))),
        None => Ok(()),
    }
}

/// SIGTERM (what Kubernetes sends a Pod) or SIGINT.
async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Takes or renews Lease `name` for `identity` at `now`: true when held afterwards. A Lease
/// held by someone else is taken only once it expired (renewTime + duration < now). The
/// write carries the resourceVersion read, so of two replicas racing only one wins.
pub async fn try_acquire(
    leases: &Api<Lease>,
    name: &str,
    identity: &str,
    now: Timestamp,
) -> Result<bool, Error> {
    let fresh = |transitions: i32, acquired: Option<MicroTime>| LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(LEASE_SECONDS),
        acquire_time: acquired.or(Some(MicroTime(now))),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    };
    let Some(mut lease) = leases.get_opt(name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..ObjectMeta::default()
            },
            spec: Some(fresh(0, None)),
        };
        return match leases.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        };
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let mine = spec.holder_identity.as_deref() == Some(identity);
    let expired = match (spec.renew_time, spec.lease_duration_seconds) {
        (Some(MicroTime(renewed)), Some(secs)) => {
            renewed + SignedDuration::from_secs(secs.into()) < now
        }
        _ => true,
    };
    if !mine && !expired {
        return Ok(false);
    }
    let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
    lease.spec = Some(fresh(
        transitions,
        if mine { spec.acquire_time } else { None },
    ));
    match leases.replace(name, &PostParams::default(), &lease).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}
