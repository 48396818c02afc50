//! The machine side: each KKInstance phase is a bundled playbook run by kk's engine over
//! SSH. The controllers only see [`Driver`], so their tests can record the jobs instead of
//! reaching machines, and the phases can be tested on real hosts without an API server.

use crate::api::{KKClusterSpec, KKInstanceSpec};

/// One step of a machine's life, in the order they run (`Reset` runs on delete).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Directories, users, the init script: the machine made ready for Kubernetes.
    Bootstrap,
    /// OS packages, from an ISO or the machine's own repositories.
    Repository,
    /// Component binaries (kubeadm, kubelet, kubectl, …), sha256-verified downloads.
    Binary,
    /// The container runtime (containerd or docker).
    ContainerManager,
    /// Cluster API's bootstrap data (cloud-init or ignition) applied: files written and
    /// commands run, which include `kubeadm init` / `kubeadm join`.
    Provisioning,
    /// The machine cleaned for reuse after its KKMachine is deleted (`kubeadm reset`, the
    /// files of the earlier phases removed).
    Reset,
}

impl Phase {
    /// Every phase that builds a machine, in order (not `Reset`).
    pub const BUILD: [Phase; 5] = [
        Phase::Bootstrap,
        Phase::Repository,
        Phase::Binary,
        Phase::ContainerManager,
        Phase::Provisioning,
    ];

    /// The phase's name, as in playbook file names and conditions.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Bootstrap => "bootstrap",
            Phase::Repository => "repository",
            Phase::Binary => "binary",
            Phase::ContainerManager => "container_manager",
            Phase::Provisioning => "provisioning",
            Phase::Reset => "reset",
        }
    }
}

/// Everything one phase needs: the instance (its SSH auth already resolved from Secrets),
/// the cluster's settings, and for `Provisioning` the bootstrap data.
#[derive(Clone, Debug, Default)]
pub struct Job {
    /// The machine and its software settings.
    pub instance: KKInstanceSpec,
    /// The cluster's component, registry and endpoint settings.
    pub cluster: KKClusterSpec,
    /// The Kubernetes version of the Machine (`v1.33.0`), for the binaries.
    pub kubernetes_version: Option<String>,
    /// The Cluster API bootstrap data (the `value` of the bootstrap Secret) and its
    /// `format` (`cloud-config` or `ignition`), for `Provisioning`.
    pub bootstrap_data: Option<BootstrapData>,
    /// The provider ID (`kk://<namespace>/<instance>`) the kubelet registers its Node
    /// with, for `Provisioning`: Cluster API links a Machine to its Node by it.
    pub provider_id: Option<String>,
}

/// Cluster API's bootstrap data for one machine. It holds join tokens and keys: its
/// `Debug` shows the format and size only.
#[derive(Clone, Default)]
pub struct BootstrapData {
    /// The document itself.
    pub value: Vec<u8>,
    /// `cloud-config` (the default) or `ignition`.
    pub format: String,
}

impl std::fmt::Debug for BootstrapData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootstrapData")
            .field("format", &self.format)
            .field("value", &format_args!("<{} bytes>", self.value.len()))
            .finish()
    }
}

/// Why a phase failed, and whether trying again later may help (a lost connection may;
/// bad bootstrap data will not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineError {
    /// What failed, with the failing task, its exit code, stdout and stderr.
    pub message: String,
    /// Retry with backoff (true) or report a terminal failure (false).
    pub retryable: bool,
}

impl std::fmt::Display for MachineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MachineError {}

/// Runs phases on machines; the engine in production, a recorder in controller tests.
#[async_trait::async_trait]
pub trait Driver: Send + Sync {
    /// Runs `phase` for `job`'s instance; running a phase again on a machine that already
    /// went through it changes nothing.
    async fn run(&self, phase: Phase, job: &Job) -> Result<(), MachineError>;
}

// The production driver: bundled playbooks (bundle), a Job as the roles' variables (vars),
// the provisioning steps (steps), and the engine run with its outcome (engine).
mod bundle;
mod engine;
pub mod steps;
pub mod vars;

pub use engine::{EngineDriver, PhaseReport};
