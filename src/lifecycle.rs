//! The cluster lifecycle commands after `kk create cluster`: add and delete nodes, delete a
//! cluster or a registry, renew certificates, install a registry, move images. Each checks
//! its input against the inventory (before any host is touched), then becomes a [`Plan`]:
//! a bundled playbook with upstream's variables and tags
//! (cmd/kk/app/options/builtin/*.go), maybe a confirmation question, and maybe an
//! inventory edit for `--override` applied after a successful run.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use kk_engine::inventory::Inventory;
use kk_engine::vars::input::{apply_set, load_config};
use kk_engine::vars::VarMap;
use kk_engine::{Error, ErrorKind};
use serde_json::Value;

use crate::inventory_edit::{self, Change};
use crate::options::{options_error, Builtin};

/// The groups a node is added to or removed from.
const CONTROL_PLANE: &str = "kube_control_plane";
const WORKER: &str = "kube_worker";
const ETCD: &str = "etcd";

/// What a command runs.
#[derive(Default)]
pub struct Plan {
    /// The bundled playbook's name (`playbooks/<name>.yaml`).
    pub playbook: &'static str,
    /// Tags added to `--tags`.
    pub tags: Vec<String>,
    /// Config values set over the user's (`(dotted.path, value)`).
    pub config: Vec<(&'static str, Value)>,
    /// `(group, host)` pairs added to the loaded inventory for this run.
    pub groups_add: Vec<(String, String)>,
    /// The question asked on a terminal before anything runs.
    pub confirm: Option<String>,
    /// The inventory edit `--override` makes after a successful run.
    pub edit: Option<Edit>,
}

/// An inventory file edit, planned before the run.
pub struct Edit {
    /// The inventory file.
    pub path: PathBuf,
    /// The group changes.
    pub changes: Vec<Change>,
}

impl Edit {
    /// Plans the edit on the file as it is now; errors (an inventory shape the editor cannot
    /// change) surface before the run.
    fn checked(path: PathBuf, changes: Vec<Change>) -> Result<Edit, Error> {
        let text = read(&path)?;
        inventory_edit::apply(&path.display().to_string(), &text, &changes)?;
        Ok(Edit { path, changes })
    }

    /// Applies the edit to the file as it is after the run (temp file + rename).
    pub fn write(&self) -> Result<(), Error> {
        let text = read(&self.path)?;
        let origin = self.path.display().to_string();
        let Some(new) = inventory_edit::apply(&origin, &text, &self.changes)? else {
            eprintln!("--override: {} already matches; not changed", origin);
            return Ok(());
        };
        let io = |e: std::io::Error| {
            Error::new(ErrorKind::Io, format!("cannot write {}: {}", origin, e))
        };
        // The file keeps its mode (an inventory may hold passwords).
        let mode = std::fs::metadata(&self.path)
            .ok()
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777);
        kk_engine::files::write_atomic(&self.path, new.as_bytes(), mode, false).map_err(io)?;
        let what: Vec<String> = self
            .changes
            .iter()
            .map(|c| format!("{}{} {}", if c.add { "+" } else { "-" }, c.group, c.host))
            .collect();
        eprintln!("--override: updated {} ({})", origin, what.join(", "));
        Ok(())
    }
}

fn read(path: &std::path::Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read {}: {}", path.display(), e),
        )
    })
}

/// `kk add nodes`.
#[derive(Args)]
pub struct AddNodes {
    /// Nodes to install as control plane nodes (comma-separated host names of the inventory).
    #[arg(long, value_delimiter = ',', value_name = "NODES")]
    pub control_plane: Vec<String>,
    /// Nodes to install as workers (comma-separated host names of the inventory).
    #[arg(long, value_delimiter = ',', value_name = "NODES")]
    pub worker: Vec<String>,
    /// Nodes to install as etcd members (comma-separated host names of the inventory).
    #[arg(long, value_delimiter = ',', value_name = "NODES")]
    pub etcd: Vec<String>,
    /// After a successful run, add the nodes to the groups in the inventory file (comments
    /// and formatting kept).
    #[arg(long = "override")]
    pub override_inventory: bool,
    #[command(flatten)]
    pub builtin: Builtin,
}

/// `kk delete nodes`.
#[derive(Args)]
pub struct DeleteNodes {
    /// The nodes to delete (host names of the inventory).
    #[arg(value_name = "NODE")]
    pub nodes: Vec<String>,
    #[command(flatten)]
    pub delete: DeleteFlags,
    /// After a successful run, remove the nodes from kube_control_plane and kube_worker (and
    /// etcd with --all) in the inventory file (comments and formatting kept).
    #[arg(long = "override")]
    pub override_inventory: bool,
    #[command(flatten)]
    pub builtin: Builtin,
}

/// `--all`, `--with-data` and `--yes` of the delete commands.
#[derive(Args)]
pub struct DeleteFlags {
    /// Also delete the container runtime, etcd, the DNS entries kk wrote and the image
    /// registry (`delete registry`: the runtime and the DNS entries).
    #[arg(long)]
    pub all: bool,
    /// Also delete data directories (etcd data, registry and harbor data, local volumes).
    /// Use with caution.
    #[arg(long)]
    pub with_data: bool,
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// `kk delete cluster` and `kk delete registry`.
#[derive(Args)]
pub struct Delete {
    #[command(flatten)]
    pub delete: DeleteFlags,
    #[command(flatten)]
    pub builtin: Builtin,
}

/// `kk artifact images`.
#[derive(Args)]
pub struct ArtifactImages {
    /// Pull the images of the config into the work dir (both steps when neither is given).
    #[arg(long)]
    pub pull: bool,
    /// Push the pulled images to the image registry (both steps when neither is given).
    #[arg(long)]
    pub push: bool,
    #[command(flatten)]
    pub builtin: Builtin,
}

/// The inventory of a command: `-i`'s, or the bundled localhost one.
fn inventory(b: &Builtin) -> Result<(Inventory, String), Error> {
    match &b.common.inventory_file()? {
        Some(p) => Ok((Inventory::load(p)?, p.display().to_string())),
        None => {
            let text = crate::bundle::file("builtin/inventory/localhost.yaml").unwrap_or("");
            let node = kk_engine::yaml::parse_str("the bundled localhost inventory", text)?;
            Ok((
                Inventory::from_node(&node)?,
                "the bundled localhost inventory".into(),
            ))
        }
    }
}

/// The inventory of a command that changes nodes: `-i` is required.
fn required_inventory(b: &Builtin, command: &str) -> Result<(Inventory, PathBuf), Error> {
    match &b.common.inventory_file()? {
        Some(p) => Ok((Inventory::load(p)?, p.clone())),
        None => Err(options_error(format!(
            "`kk {}` needs the cluster's inventory, and none was given",
            command
        ))
        .help("give the inventory the cluster was created with: -i inventory.yaml")),
    }
}

/// Checks that every node is a host of the inventory.
fn known_nodes(inv: &Inventory, origin: &str, nodes: &[String], flag: &str) -> Result<(), Error> {
    let hosts = inv.host_names();
    for n in nodes {
        if n.trim().is_empty() {
            return Err(options_error(format!("{} has an empty node name", flag))
                .help("separate node names with single commas: --worker node4,node5"));
        }
        if !hosts.contains(n) {
            let mut e = options_error(format!("{} `{}` is not a host of {}", flag, n, origin));
            e = match kk_engine::error::did_you_mean(n, hosts.iter().map(String::as_str)) {
                Some(s) => e.help(format!("did you mean `{}`? hosts: {}", s, hosts.join(", "))),
                None => e.help(format!(
                    "define it under spec.hosts (with its connector) first; hosts: {}",
                    if hosts.is_empty() {
                        "none".into()
                    } else {
                        hosts.join(", ")
                    }
                )),
            };
            return Err(e);
        }
    }
    Ok(())
}

fn members(inv: &Inventory, group: &str) -> Vec<String> {
    inv.groups().get(group).cloned().unwrap_or_default()
}

/// `host (group, group)` for each host, for confirmation questions.
fn describe_hosts(inv: &Inventory, hosts: &[String]) -> String {
    hosts
        .iter()
        .map(|h| {
            let g = inv.group_names(h);
            if g.is_empty() {
                h.clone()
            } else {
                format!("{} ({})", h, g.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value of the config as the run will see it (config file, then --set).
fn config_value(b: &Builtin, path: &[&str]) -> Result<Option<Value>, Error> {
    let mut config = match &b.common.config {
        Some(p) => load_config(p)?,
        None => VarMap::new(),
    };
    for s in &b.common.set {
        apply_set(&mut config, s)?;
    }
    let mut v: Option<&Value> = config.get(path[0]);
    for k in &path[1..] {
        v = v.and_then(|x| x.get(*k));
    }
    Ok(v.cloned())
}

/// `kk add nodes`: the nodes join the named groups for this run (and the file with
/// `--override`); `add_nodes` lists them. Without any flag every node of the inventory that
/// is not installed yet is added (upstream's first mode), with `add_nodes` empty.
pub fn add_nodes(a: &AddNodes) -> Result<Plan, Error> {
    let (inv, path) = required_inventory(&a.builtin, "add nodes")?;
    let origin = path.display().to_string();
    let mut plan = Plan {
        playbook: "add_nodes",
        ..Plan::default()
    };
    let mut all: Vec<String> = Vec::new();
    let mut changes = Vec::new();
    for (flag, group, nodes) in [
        ("--control-plane", CONTROL_PLANE, &a.control_plane),
        ("--worker", WORKER, &a.worker),
        ("--etcd", ETCD, &a.etcd),
    ] {
        known_nodes(&inv, &origin, nodes, flag)?;
        for n in nodes {
            plan.groups_add.push((group.to_string(), n.clone()));
            changes.push(Change::add(group, n));
            if !all.contains(n) {
                all.push(n.clone());
            }
        }
    }
    plan.config.push(("add_nodes", Value::from(all.clone())));
    if a.override_inventory && !changes.is_empty() {
        let mut inv = inv;
        for (g, h) in &plan.groups_add {
            inv.add_to_group(h, g)?;
        }
        within_limit(&inv, &a.builtin, &all)?;
        plan.edit = Some(Edit::checked(path, changes)?);
    }
    Ok(plan)
}

/// `kk delete nodes`: refused when no node is named, a node is not in the inventory, or the
/// cluster would be left without a control plane node (or, with --all, without etcd).
pub fn delete_nodes(d: &DeleteNodes) -> Result<Plan, Error> {
    if d.nodes.is_empty() {
        return Err(
            options_error("`kk delete nodes` needs the names of the nodes to delete")
                .help("name them after the command: kk delete nodes node5 node6 -i inventory.yaml"),
        );
    }
    let (inv, path) = required_inventory(&d.builtin, "delete nodes")?;
    let origin = path.display().to_string();
    known_nodes(&inv, &origin, &d.nodes, "node")?;
    let mut nodes: Vec<String> = Vec::new();
    for n in &d.nodes {
        if !nodes.contains(n) {
            nodes.push(n.clone());
        }
    }
    let delete_etcd = d.delete.all
        || config_value(&d.builtin, &["delete", "etcd"])?.and_then(|v| v.as_bool()) == Some(true);
    // etcd is only scaled down when kk runs it (external, the default).
    let external_etcd = config_value(&d.builtin, &["etcd", "deployment_type"])?
        .and_then(|v| v.as_str().map(str::to_string))
        .is_none_or(|t| t == "external");
    let left = |group: &str| -> (Vec<String>, Vec<String>) {
        let m = members(&inv, group);
        m.into_iter().partition(|h| !nodes.contains(h))
    };
    let (cp_left, cp_gone) = left(CONTROL_PLANE);
    if cp_left.is_empty() && !cp_gone.is_empty() {
        return Err(options_error(format!(
            "deleting {} would leave the cluster with no control plane node (kube_control_plane: {})",
            nodes.join(", "),
            cp_gone.join(", ")
        ))
        .help("keep at least one control plane node, add one first (kk add nodes --control-plane <node>), or delete the whole cluster (kk delete cluster)"));
    }
    let (etcd_left, etcd_gone) = left(ETCD);
    if delete_etcd && external_etcd && etcd_left.is_empty() && !etcd_gone.is_empty() {
        return Err(options_error(format!(
            "deleting {} with --all would remove every etcd member ({})",
            nodes.join(", "),
            etcd_gone.join(", ")
        ))
        .help(
            "keep at least one etcd node, or delete the whole cluster (kk delete cluster --all)",
        ));
    }
    let mut plan = delete_config(&d.delete, "delete_nodes", true);
    plan.config
        .push(("delete_nodes", Value::from(nodes.clone())));
    plan.confirm = Some(format!(
        "kk will delete {} from the cluster: drain them, remove them from Kubernetes and uninstall it{}{}.",
        describe_hosts(&inv, &nodes),
        if d.delete.all { ", with their container runtime, etcd member, image registry and DNS entries" } else { "" },
        if d.delete.with_data { ", and delete their data" } else { "" },
    ));
    if d.override_inventory {
        let mut changes = Vec::new();
        for n in &nodes {
            changes.push(Change::remove(CONTROL_PLANE, n));
            changes.push(Change::remove(WORKER, n));
            // Upstream: the etcd group keeps the node unless etcd is deleted too.
            if delete_etcd {
                changes.push(Change::remove(ETCD, n));
            }
        }
        within_limit(&inv, &d.builtin, &nodes)?;
        plan.edit = Some(Edit::checked(path, changes)?);
    }
    Ok(plan)
}

/// `--override` records what the run did to the nodes: with `--limit`, every node must be
/// inside the limit (a run that skips a node must not edit its groups).
fn within_limit(inv: &Inventory, b: &Builtin, nodes: &[String]) -> Result<(), Error> {
    let Some(limit) = &b.common.limit else {
        return Ok(());
    };
    let selected = inv.select(limit)?;
    if let Some(n) = nodes.iter().find(|n| !selected.contains(n)) {
        return Err(options_error(format!(
            "--override with --limit {}: {} is outside the limit, so the run would not change it",
            limit, n
        ))
        .help("widen --limit to the nodes, or drop --override and edit the inventory by hand"));
    }
    Ok(())
}

/// The `delete.*` variables upstream sets: `--all` → cri, dns (+ etcd, image_registry for
/// clusters and nodes); `--with-data` → data.
fn delete_config(f: &DeleteFlags, playbook: &'static str, cluster: bool) -> Plan {
    let mut plan = Plan {
        playbook,
        ..Plan::default()
    };
    if f.all {
        plan.config.push(("delete.cri", true.into()));
        plan.config.push(("delete.dns", true.into()));
        if cluster {
            plan.config.push(("delete.etcd", true.into()));
            plan.config.push(("delete.image_registry", true.into()));
        }
    }
    if f.with_data {
        plan.config.push(("delete.data", true.into()));
    }
    plan
}

/// `kk delete cluster`.
pub fn delete_cluster(d: &Delete) -> Result<Plan, Error> {
    let (inv, origin) = inventory(&d.builtin)?;
    let mut plan = delete_config(&d.delete, "delete_cluster", true);
    let mut what = format!(
        "kk will delete the Kubernetes cluster of {}: {}",
        origin,
        describe_hosts(&inv, &members(&inv, "k8s_cluster"))
    );
    if d.delete.all {
        what.push_str(&format!(
            "; with --all also the container runtime, the DNS entries, etcd ({}) and the image registry ({})",
            members(&inv, ETCD).join(", "),
            members(&inv, "image_registry").join(", ")
        ));
    }
    if d.delete.with_data {
        what.push_str("; with --with-data their data too");
    }
    plan.confirm = Some(format!("{}.", what));
    Ok(plan)
}

/// `kk delete registry`.
pub fn delete_registry(d: &Delete) -> Result<Plan, Error> {
    let (inv, origin) = inventory(&d.builtin)?;
    let hosts = members(&inv, "image_registry");
    if hosts.is_empty() {
        return Err(options_error(format!(
            "{} has no host in group image_registry: there is no registry to delete",
            origin
        ))
        .help("give the inventory the registry was installed with (-i)"));
    }
    let mut plan = delete_config(&d.delete, "delete_registry", false);
    plan.confirm = Some(format!(
        "kk will delete the image registry on {}{}{}.",
        hosts.join(", "),
        if d.delete.all {
            ", with the container runtime and the DNS entries"
        } else {
            ""
        },
        if d.delete.with_data {
            ", and its data (the images)"
        } else {
            ""
        },
    ));
    Ok(plan)
}

/// `kk certs renew`: the `certs` tasks of every role.
pub fn certs_renew() -> Plan {
    Plan {
        playbook: "certs_renew",
        tags: vec!["certs".into()],
        ..Plan::default()
    }
}

/// `kk init registry`: only the `image_registry` tasks.
pub fn init_registry() -> Plan {
    Plan {
        playbook: "init_registry",
        tags: vec!["image_registry".into()],
        ..Plan::default()
    }
}

/// `kk artifact images`: the `pull` and/or `push` tasks (both when neither flag is given).
pub fn artifact_images(a: &ArtifactImages) -> Plan {
    let mut tags = Vec::new();
    if a.pull || !a.push {
        tags.push("pull".to_string());
    }
    if a.push || !a.pull {
        tags.push("push".to_string());
    }
    Plan {
        playbook: "artifact_images",
        tags,
        ..Plan::default()
    }
}

/// The question before `kk create cluster`.
pub fn create_question(b: &Builtin) -> Result<String, Error> {
    let (inv, origin) = inventory(b)?;
    let mut hosts = Vec::new();
    for g in ["k8s_cluster", ETCD, "image_registry", "nfs"] {
        for h in members(&inv, g) {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
    }
    Ok(format!(
        "kk will install Kubernetes{} on the hosts of {}: {}.",
        b.with_kubernetes
            .as_deref()
            .map(|v| format!(" {}", v))
            .unwrap_or_default(),
        origin,
        describe_hosts(&inv, &hosts)
    ))
}

/// Asks on a terminal; true without asking when `yes` is given or stdin is not a terminal
/// (scripts, pipes and tests never block).
pub fn confirm(question: &str, yes: bool) -> bool {
    if yes || !std::io::stdin().is_terminal() {
        return true;
    }
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "{}\nType yes to continue (--yes skips this question): ",
        question
    );
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    answer.trim().eq_ignore_ascii_case("yes")
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
