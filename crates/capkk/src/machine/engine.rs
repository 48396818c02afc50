//! [`EngineDriver`]: the production [`Driver`]. Each phase is one bundled playbook
//! (`crates/capkk/playbooks/<phase>.yaml`) run by kk's engine against an inventory of the
//! one instance, built in memory; the engine keeps one SSH master per host for the run.
//! The outcome becomes `Ok`, or a [`MachineError`] that says what failed (task, exit code,
//! stdout, stderr, secrets masked) and whether trying again may help.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kk_engine::exec::{run_playbook, PlayDefaults, RunOptions, TagFilter};
use kk_engine::inventory::Inventory;
use kk_engine::report::{Event, Reporter, Status};
use kk_engine::vault::redact;
use serde_json::{json, Map, Value};

use super::{bundle, steps, vars, Driver, Job, MachineError, Phase};
use crate::api::Role;

/// Runs the phases with kk's engine. One driver serves every instance; each call is an
/// independent engine run; runs for different machines go on at once.
#[derive(Clone, Debug)]
pub struct EngineDriver {
    workdir: PathBuf,
    extra: Map<String, Value>,
}

/// What one phase did on the machine, for logs and for tests that check idempotence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseReport {
    /// Tasks that changed the machine (or the controller's download cache).
    pub changed: u32,
    /// Those tasks' names, in order (`task on host`).
    pub changed_tasks: Vec<String>,
    /// Tasks that ran.
    pub ok: u32,
}

impl EngineDriver {
    /// A driver keeping its files (the extracted playbooks, downloaded artifacts under
    /// `kubekey/`, the artifact lock file, SSH runtime files) under `workdir`, created
    /// private (0700): downloads are verified once and reused by every instance.
    pub fn new(workdir: impl Into<PathBuf>) -> std::io::Result<EngineDriver> {
        let workdir = workdir.into();
        std::fs::create_dir_all(&workdir)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&workdir, std::fs::Permissions::from_mode(0o700))?;
        let workdir = workdir.canonicalize()?;
        Ok(EngineDriver {
            workdir,
            extra: Map::new(),
        })
    }

    /// Settings of the shared roles the CRDs do not carry (e.g. `cri.containerd.data_root`,
    /// `download.manifest`, `native.sysctl_skip`), merged over what each Job gives: the
    /// operator's site-wide knobs, as a `kk` Config file's.
    pub fn with_settings(mut self, settings: Map<String, Value>) -> EngineDriver {
        self.extra = settings;
        self
    }

    /// Where the driver keeps its files.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// Runs `phase` for `job` and says what changed ([`Driver::run`] without the report).
    pub async fn run_phase(&self, phase: Phase, job: &Job) -> Result<PhaseReport, MachineError> {
        let root = bundle::extract(&self.workdir).map_err(|e| MachineError {
            message: format!(
                "cannot write the phase playbooks under {}: {}",
                self.workdir.display(),
                e
            ),
            retryable: true,
        })?;
        let mut config = vars::config(phase, job)?;
        if phase == Phase::Provisioning {
            config.insert("capkk_provision_steps".into(), steps::from_job(job)?);
            if let Some(id) = job.provider_id.as_deref().filter(|id| !id.is_empty()) {
                config.insert("capkk_provider_id".into(), json!(id));
            }
        }
        config.insert("work_dir".into(), json!(self.workdir.display().to_string()));
        kk_engine::vars::merge_maps(&mut config, &self.extra);
        // The private key given as text: a 0600 file for this run only (removed on drop).
        let key_file = key_file(job, &self.workdir)?;
        let host = host_name(job)?;
        let inventory = inventory(job, &host, key_file.as_ref().map(|f| f.path()))?;
        let opts = RunOptions {
            playbook: root.join(format!("playbooks/{}.yaml", phase.as_str())),
            inventory,
            config,
            extra_vars: Map::new(),
            tags: TagFilter::default(),
            limit: None,
            check: false,
            diff: false,
            forks: 5,
            roles_path: vec![root.join("roles")],
            inventory_path: None,
            verbosity: 0,
            workdir: self.workdir.clone(),
            ssh_strict: false,
            defaults: PlayDefaults::default(),
            connect: kk_engine::connect::ConnectDefaults {
                // Machines are reinstalled under the same address (KubeKey's CAPKK does
                // not check host keys either); the credentials are what is trusted.
                host_key_checking: Some(false),
                ..Default::default()
            },
        };
        let recorder = Arc::new(Recorder::default());
        let outcome = run_playbook(opts, recorder.clone()).await;
        drop(key_file);
        let events =
            std::mem::take(&mut *recorder.events.lock().unwrap_or_else(|e| e.into_inner()));
        match outcome {
            Ok(o) if o.exit_code == 0 => Ok(report(&events, &host)),
            Ok(o) => Err(failure(phase, &host, &events, o.exit_code)),
            Err(e) => Err(MachineError {
                message: redact::redact_text(&format!(
                    "{} phase on {}: the engine refused the run: {}",
                    phase.as_str(),
                    host,
                    e
                ))
                .into_owned(),
                retryable: false,
            }),
        }
    }
}

#[async_trait::async_trait]
impl Driver for EngineDriver {
    async fn run(&self, phase: Phase, job: &Job) -> Result<(), MachineError> {
        let r = self.run_phase(phase, job).await?;
        tracing::info!(
            phase = phase.as_str(),
            instance = %job.instance.name,
            changed = r.changed,
            "phase done"
        );
        Ok(())
    }
}

/// Keeps every event of a run (the driver reads them when it ends).
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
}

impl Reporter for Recorder {
    fn event(&self, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

/// The instance's inventory name: its host name (the bootstrap phase sets it).
fn host_name(job: &Job) -> Result<String, MachineError> {
    let n = job.instance.name.trim();
    if n.is_empty() || n.contains(char::is_whitespace) || n == "localhost" || n == "all" {
        return Err(MachineError {
            message: format!(
                "the instance name `{}` cannot be a host name; expected a DNS name such as node1",
                job.instance.name
            ),
            retryable: false,
        });
    }
    if job.instance.address.trim().is_empty() {
        return Err(MachineError {
            message: format!("instance {}: its address is empty", n),
            retryable: false,
        });
    }
    Ok(n.to_string())
}

/// `auth.privateKey` (PEM text) in a 0600 file of the workdir, for this run.
fn key_file(job: &Job, workdir: &Path) -> Result<Option<tempfile::NamedTempFile>, MachineError> {
    let key = job.instance.auth.private_key.trim();
    if key.is_empty() {
        return Ok(None);
    }
    let io = |e: std::io::Error| MachineError {
        message: format!(
            "cannot write the SSH key under {}: {}",
            workdir.display(),
            e
        ),
        retryable: true,
    };
    // NamedTempFile creates 0600 files.
    let mut f = tempfile::Builder::new()
        .prefix(".key-")
        .tempfile_in(workdir)
        .map_err(io)?;
    use std::io::Write;
    f.write_all(key.as_bytes()).map_err(io)?;
    f.write_all(b"\n").map_err(io)?;
    f.flush().map_err(io)?;
    Ok(Some(f))
}

/// The one-host inventory: connection variables, the node's addresses, and the groups
/// the shared roles read (kube_control_plane, kube_worker, both in k8s_cluster).
fn inventory(job: &Job, host: &str, key: Option<&Path>) -> Result<Inventory, MachineError> {
    let i = &job.instance;
    let a = &i.auth;
    let mut v = Map::new();
    v.insert("ansible_connection".into(), json!("ssh"));
    v.insert("ansible_host".into(), json!(i.address));
    v.insert("ansible_port".into(), json!(a.port.unwrap_or(22)));
    let user = if a.user.is_empty() {
        "root"
    } else {
        a.user.as_str()
    };
    v.insert("ansible_user".into(), json!(user));
    if !a.password.is_empty() {
        redact::remember(&a.password);
        v.insert("ansible_password".into(), json!(a.password));
        if user != "root" {
            v.insert("ansible_become_password".into(), json!(a.password));
        }
    }
    if let Some(k) = key {
        v.insert(
            "ansible_ssh_private_key_file".into(),
            json!(k.display().to_string()),
        );
    } else if !a.private_key_path.is_empty() {
        v.insert(
            "ansible_ssh_private_key_file".into(),
            json!(a.private_key_path),
        );
    }
    if let Some(t) = a.timeout.as_deref().and_then(timeout_secs) {
        v.insert("ansible_timeout".into(), json!(t));
    }
    if user != "root" {
        v.insert("ansible_become".into(), json!(true));
    }
    let internal = if i.internal_address.is_empty() {
        &i.address
    } else {
        &i.internal_address
    };
    match internal.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(_)) => v.insert("internal_ipv6".into(), json!(internal)),
        _ => v.insert("internal_ipv4".into(), json!(internal)),
    };
    let roles = if i.roles.is_empty() {
        vec![Role::ControlPlane, Role::Worker]
    } else {
        i.roles.clone()
    };
    let mut groups = Vec::new();
    if roles
        .iter()
        .any(|r| matches!(r, Role::ControlPlane | Role::Master))
    {
        groups.push("kube_control_plane".to_string());
    }
    if roles.contains(&Role::Worker) {
        groups.push("kube_worker".to_string());
    }
    groups.push("k8s_cluster".to_string());
    let mut inv = Inventory::empty();
    inv.add_host(host, &groups, v).map_err(|e| MachineError {
        message: format!("instance {}: {}", host, e),
        retryable: false,
    })?;
    Ok(inv)
}

/// `30s`, `2m`, `45` (KubeKey's Go durations, seconds when bare) in whole seconds.
fn timeout_secs(t: &str) -> Option<u64> {
    let t = t.trim();
    let (n, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = n.parse().ok()?;
    match unit {
        "" | "s" => Some(n),
        "m" => Some(n * 60),
        _ => None,
    }
}

fn report(events: &[Event], host: &str) -> PhaseReport {
    let mut r = PhaseReport::default();
    for e in events {
        if let Event::HostResult {
            task,
            host: h,
            status,
            changed,
            ..
        } = e
        {
            if *changed {
                r.changed_tasks.push(format!("{} on {}", task, h));
            }
            if matches!(status, Status::Ok | Status::Changed) && h == host {
                r.ok += 1;
            }
        }
        if let Event::Recap { hosts, .. } = e {
            r.changed = hosts.values().map(|c| c.changed).sum();
        }
    }
    r
}

/// Words in a failure that mean the network or a server failed, not the machine or the
/// input: the download or package fetch may work later.
const TRANSIENT: &[&str] = &[
    "could not be fetched",
    "curl exit",
    "connection refused",
    "timed out",
    "could not resolve",
    "temporary failure",
    "network is unreachable",
    "no route to host",
    "http 5",
    "failed to fetch",
];

fn failure(phase: Phase, host: &str, events: &[Event], exit_code: i32) -> MachineError {
    let mut unreachable = None;
    let mut failed = None;
    for e in events {
        if let Event::HostResult {
            task,
            status,
            ignored: false,
            result,
            ..
        } = e
        {
            match status {
                Status::Unreachable => unreachable = Some((task.clone(), result.clone())),
                Status::Failed => failed = Some((task.clone(), result.clone())),
                _ => {}
            }
        }
    }
    let (message, retryable) = if let Some((task, result)) = unreachable {
        (
            format!(
                "{} phase: {} is unreachable (task `{}`): {}",
                phase.as_str(),
                host,
                task,
                text(&result, "msg")
            ),
            true,
        )
    } else if let Some((task, result)) = failed {
        let msg = text(&result, "msg");
        let mut m = format!(
            "{} phase on {}: task `{}` failed: {}",
            phase.as_str(),
            host,
            task,
            msg
        );
        if let Some(rc) = result.get("rc").filter(|v| !v.is_null()) {
            m.push_str(&format!("\nexit code: {}", rc));
        }
        for k in ["stdout", "stderr"] {
            let s = text(&result, k);
            if !s.trim().is_empty() {
                m.push_str(&format!("\n{}:\n{}", k, s.trim_end()));
            }
        }
        let lower = msg.to_lowercase();
        let retryable = !lower.contains("checksum") && TRANSIENT.iter().any(|w| lower.contains(w));
        (m, retryable)
    } else {
        (
            format!(
                "{} phase on {}: the run failed (exit code {}) without a failed task",
                phase.as_str(),
                host,
                exit_code
            ),
            false,
        )
    };
    MachineError {
        message: redact::redact_text(&message).into_owned(),
        retryable,
    }
}

fn text(result: &Value, key: &str) -> String {
    match result.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Auth, KKInstanceSpec};

    #[test]
    fn timeouts_in_go_durations() {
        assert_eq!(timeout_secs("30s"), Some(30));
        assert_eq!(timeout_secs("2m"), Some(120));
        assert_eq!(timeout_secs("45"), Some(45));
        assert_eq!(timeout_secs("1h"), None);
    }

    #[test]
    fn roles_become_the_groups_and_secrets_stay_out_of_errors() {
        let job = Job {
            instance: KKInstanceSpec {
                name: "n1".into(),
                address: "192.0.2.7".into(),
                roles: vec![Role::Worker],
                auth: Auth {
                    user: "ubuntu".into(),
                    password: "pw-Secret-42".into(),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        let inv = inventory(&job, "n1", None).unwrap();
        assert_eq!(inv.group_names("n1"), vec!["k8s_cluster", "kube_worker"]);
        let v = inv.host_vars("n1");
        assert_eq!(v["ansible_become"], true);
        assert_eq!(v["internal_ipv4"], "192.0.2.7");
        let failed = Event::HostResult {
            play: "p".into(),
            task: "t".into(),
            host: "n1".into(),
            delegated_to: None,
            status: Status::Failed,
            changed: false,
            ignored: false,
            result: json!({"msg": "login pw-Secret-42 refused", "rc": 1}),
            display: None,
        };
        let e = failure(Phase::Bootstrap, "n1", &[failed], 2);
        assert!(!e.message.contains("pw-Secret-42"), "{}", e.message);
        assert!(e.message.contains("exit code: 1"), "{}", e.message);
        assert!(!e.retryable);
    }

    #[test]
    fn download_failures_are_retried_unless_the_digest_is_wrong() {
        let failed = |msg: &str| Event::HostResult {
            play: "p".into(),
            task: "Download | report what could not be fetched".into(),
            host: "localhost".into(),
            delegated_to: None,
            status: Status::Failed,
            changed: false,
            ignored: false,
            result: json!({ "msg": msg }),
            display: None,
        };
        let net = failure(
            Phase::Binary,
            "n1",
            &[failed(
                "1 artifact(s) could not be fetched: get_url: HTTP 503 (curl exit 22)",
            )],
            2,
        );
        assert!(net.retryable, "{}", net.message);
        let sum = failure(
            Phase::Binary,
            "n1",
            &[failed("1 artifact(s) could not be fetched: the sha256 checksum of the file downloaded from http://x/kubeadm is 1, but 2 was expected")],
            2,
        );
        assert!(!sum.retryable, "{}", sum.message);
        let gone = Event::HostResult {
            play: "p".into(),
            task: "Gathering Facts".into(),
            host: "n1".into(),
            delegated_to: None,
            status: Status::Unreachable,
            changed: false,
            ignored: false,
            result: json!({"msg": "Connection refused"}),
            display: None,
        };
        assert!(failure(Phase::Reset, "n1", &[gone], 3).retryable);
    }

    #[test]
    fn bad_names_are_refused() {
        let mut job = Job::default();
        assert!(host_name(&job).is_err());
        job.instance.name = "n1".into();
        assert!(host_name(&job).unwrap_err().message.contains("address"));
    }
}
