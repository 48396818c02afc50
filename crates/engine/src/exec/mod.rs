//! The executor: plays in order, hosts in batches (`serial`), task lists walked with
//! Ansible's semantics (linear by default, `free` on request), blocks with rescue and
//! always, dynamic includes, handlers, and the recap.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use futures::future::BoxFuture;
use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use crate::connect::Connection;
use crate::error::{Error, ErrorKind, Result};
use crate::inventory::Inventory;
use crate::project::{load_playbook, Inherited, Loader, Play, RoleScope, Strategy, Task, TaskKind};
use crate::report::{Counts, Event, Reporter};
use crate::template::{Templar, OMIT};
use crate::vars::{HostVars, Layers, Magic, VarMap, VarView};

pub mod tags;
mod task;

pub use tags::TagFilter;

/// Everything a run needs besides the reporter.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The playbook file.
    pub playbook: PathBuf,
    /// The inventory.
    pub inventory: Inventory,
    /// `spec` of the Config file (layer 2).
    pub config: VarMap,
    /// `-e` and `--set` (layer 11).
    pub extra_vars: VarMap,
    /// `--tags` / `--skip-tags`.
    pub tags: TagFilter,
    /// `--limit`.
    pub limit: Option<String>,
    /// `--check`.
    pub check: bool,
    /// `--diff`.
    pub diff: bool,
    /// `--forks`.
    pub forks: usize,
    /// Extra role directories.
    pub roles_path: Vec<PathBuf>,
    /// The inventory file, for `inventory_file` and `inventory_dir`.
    pub inventory_path: Option<PathBuf>,
    /// `-v` count: `debug` tasks with a higher `verbosity` are skipped.
    pub verbosity: u8,
    /// The work dir (`known_hosts`, run records).
    pub workdir: PathBuf,
    /// `--ssh-strict`: refuse hosts whose key is not in `<workdir>/known_hosts`.
    pub ssh_strict: bool,
}

/// How the run ended, as Ansible's exit codes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// 0 ok, 2 a host failed, 3 a host unreachable.
    pub exit_code: i32,
}

/// Per-host state that lives for the whole run.
#[derive(Debug, Default, Clone)]
struct HostState {
    facts: Arc<VarMap>,
    /// `include_vars` results: user-written, templated when read, below `set_fact`.
    included: Arc<VarMap>,
    runtime: Arc<VarMap>,
    counts: Counts,
    failed: bool,
    /// The failure happened inside a block whose `rescue` will handle it: it does not
    /// count for `max_fail_percentage` (Ansible counts a failure once it is final).
    rescuing: bool,
    unreachable: bool,
    ended: bool,
    notified: IndexSet<String>,
}

/// Keywords in force at a point of the task tree, accumulated from outer to inner.
#[derive(Clone, Default)]
struct Scope {
    attrs: Inherited,
    environment: Vec<Value>,
    roles: Vec<RoleScope>,
    vars: Vec<Arc<VarMap>>,
    rescuable: bool,
}

fn pick(inner: &Option<Value>, outer: &Option<Value>) -> Option<Value> {
    inner.clone().or_else(|| outer.clone())
}

impl Scope {
    fn child(&self, a: &Inherited) -> Scope {
        let o = &self.attrs;
        let mut when = o.when.clone();
        when.extend(a.when.iter().cloned());
        let mut tags = o.tags.clone();
        for t in &a.tags {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        let mut environment = self.environment.clone();
        if let Some(e) = &a.environment {
            environment.push(e.clone());
        }
        let mut vars = self.vars.clone();
        if !a.vars.is_empty() {
            vars.push(a.vars.clone());
        }
        Scope {
            attrs: Inherited {
                when,
                tags,
                become_: pick(&a.become_, &o.become_),
                become_user: pick(&a.become_user, &o.become_user),
                become_method: a.become_method.clone().or_else(|| o.become_method.clone()),
                environment: None,
                ignore_errors: pick(&a.ignore_errors, &o.ignore_errors),
                ignore_unreachable: pick(&a.ignore_unreachable, &o.ignore_unreachable),
                check_mode: pick(&a.check_mode, &o.check_mode),
                diff: pick(&a.diff, &o.diff),
                no_log: pick(&a.no_log, &o.no_log),
                run_once: pick(&a.run_once, &o.run_once),
                delegate_to: pick(&a.delegate_to, &o.delegate_to),
                delegate_facts: pick(&a.delegate_facts, &o.delegate_facts),
                any_errors_fatal: pick(&a.any_errors_fatal, &o.any_errors_fatal),
                timeout: pick(&a.timeout, &o.timeout),
                throttle: pick(&a.throttle, &o.throttle),
                vars: Arc::new(VarMap::new()),
            },
            environment,
            roles: self.roles.clone(),
            vars,
            rescuable: self.rescuable,
        }
    }
}

/// State of one play (or one `serial` batch of it).
struct PlayCtx {
    play: Play,
    name: String,
    vars: Arc<VarMap>,
    /// `vars_files`, rendered and loaded per host (their names may use host variables).
    host_vars_files: HashMap<String, Arc<VarMap>>,
    /// Defaults and vars of the play's static roles (`roles:`, `import_role`): Ansible
    /// makes them visible to the whole play.
    role_defaults: Vec<Arc<VarMap>>,
    role_vars: Vec<Arc<VarMap>>,
    magic: RwLock<Arc<VarMap>>,
    /// `play_hosts`, `ansible_play_batch`, `ansible_play_hosts`: the batch's hosts still active.
    play_hosts: RwLock<Arc<VarMap>>,
    batch: Vec<String>,
    /// Size of the `serial` batch as Ansible counts it: with the hosts that failed in
    /// earlier plays (they take no part but fill their place in the batch).
    batch_size: usize,
    abort: AtomicBool,
}

/// The run: shared by every task future.
pub(crate) struct Runner {
    opts: RunOptions,
    templar: Arc<Templar>,
    reporter: Arc<dyn Reporter>,
    loader: Loader,
    inventory: RwLock<Inventory>,
    inv_vars: RwLock<HashMap<String, Arc<VarMap>>>,
    hosts: Mutex<IndexMap<String, HostState>>,
    conns: Mutex<HashMap<String, Arc<dyn Connection>>>,
    config: Arc<VarMap>,
    extra: Arc<VarMap>,
    /// Values the `result` module reported, shown at the end of the run.
    results: Mutex<VarMap>,
    connect_opts: crate::connect::ConnectOptions,
    /// A play exceeded its `max_fail_percentage`: the run stops and exits 2.
    max_fail_break: AtomicBool,
}

/// Loads a playbook and runs it; errors in the files come back as `Err` (exit code 4).
pub async fn run_playbook(opts: RunOptions, reporter: Arc<dyn Reporter>) -> Result<Outcome> {
    let start = Instant::now();
    let playbook = load_playbook(&opts.playbook, opts.roles_path.clone())?;
    let playbook_dir = opts
        .playbook
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let abs_dir = std::fs::canonicalize(if playbook_dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        playbook_dir.clone()
    })
    .unwrap_or(playbook_dir.clone());
    let runner = Arc::new(Runner {
        templar: Arc::new(Templar::new()),
        reporter,
        loader: Loader {
            playbook_dir: abs_dir,
            roles_path: opts.roles_path.clone(),
        },
        inventory: RwLock::new(opts.inventory.clone()),
        inv_vars: RwLock::new(HashMap::new()),
        hosts: Mutex::new(IndexMap::new()),
        conns: Mutex::new(HashMap::new()),
        config: Arc::new(opts.config.clone()),
        extra: Arc::new(opts.extra_vars.clone()),
        results: Mutex::new(VarMap::new()),
        connect_opts: crate::connect::ConnectOptions {
            workdir: opts.workdir.clone(),
            strict_host_keys: opts.ssh_strict,
        },
        max_fail_break: AtomicBool::new(false),
        opts,
    });
    for play in playbook.plays {
        if !runner.clone().run_play(play).await? {
            break;
        }
    }
    let conns: Vec<_> = runner
        .conns
        .lock()
        .unwrap()
        .drain()
        .map(|(_, c)| c)
        .collect();
    for c in conns {
        c.close().await;
    }
    crate::connect::remove_runtime_dir();
    let hosts = runner.hosts.lock().unwrap().clone();
    let mut recap = IndexMap::new();
    // Ansible's exit code: unreachable hosts win over failed ones, except when a play's
    // max_fail_percentage stopped the run (always 2).
    let mut code = 0;
    for (h, st) in &hosts {
        // Like Ansible's recap, only hosts that have a result (not those a failed batch
        // kept from running, or that were only delegated to).
        if st.counts != Counts::default() {
            recap.insert(h.clone(), st.counts);
        }
        if st.counts.unreachable > 0 || st.unreachable {
            code = 3;
        } else if (st.counts.failed > 0 || st.failed) && code == 0 {
            code = 2;
        }
    }
    if runner.max_fail_break.load(Ordering::SeqCst) {
        code = 2;
    }
    let results = runner.results.lock().unwrap().clone();
    if !results.is_empty() {
        runner.reporter.event(&Event::Result {
            data: Value::Object(results),
        });
    }
    runner.reporter.event(&Event::Recap {
        hosts: recap,
        elapsed_s: (start.elapsed().as_secs_f64() * 100.0).round() / 100.0,
    });
    Ok(Outcome { exit_code: code })
}

impl Runner {
    fn inventory_vars(&self, host: &str) -> Arc<VarMap> {
        if let Some(v) = self.inv_vars.read().unwrap().get(host) {
            return v.clone();
        }
        let v = Arc::new(self.inventory.read().unwrap().host_vars(host));
        self.inv_vars
            .write()
            .unwrap()
            .insert(host.to_string(), v.clone());
        v
    }

    fn state(&self, host: &str) -> HostState {
        self.hosts
            .lock()
            .unwrap()
            .get(host)
            .cloned()
            .unwrap_or_default()
    }

    fn with_state<R>(&self, host: &str, f: impl FnOnce(&mut HostState) -> R) -> R {
        let mut hosts = self.hosts.lock().unwrap();
        f(hosts.entry(host.to_string()).or_default())
    }

    fn play_magic(&self, all_play_hosts: &[String], play_name: &str) -> VarMap {
        let inv = self.inventory.read().unwrap();
        let mut m = VarMap::new();
        let groups: serde_json::Map<String, Value> = inv
            .groups()
            .into_iter()
            .map(|(k, v)| (k, Value::from(v)))
            .collect();
        m.insert("groups".into(), Value::Object(groups));
        m.insert(
            "ansible_play_hosts_all".into(),
            Value::from(all_play_hosts.to_vec()),
        );
        m.insert("ansible_play_name".into(), Value::from(play_name));
        m.insert(
            "playbook_dir".into(),
            Value::from(self.loader.playbook_dir.display().to_string()),
        );
        if let Some(inv) = &self.opts.inventory_path {
            let inv = std::fs::canonicalize(inv).unwrap_or(inv.clone());
            m.insert(
                "inventory_file".into(),
                Value::from(inv.display().to_string()),
            );
            if let Some(d) = inv.parent() {
                m.insert("inventory_dir".into(), Value::from(d.display().to_string()));
            }
        }
        m.insert("ansible_check_mode".into(), Value::from(self.opts.check));
        m.insert("ansible_diff_mode".into(), Value::from(self.opts.diff));
        m.insert(
            "ansible_run_tags".into(),
            Value::from(if self.opts.tags.only.is_empty() {
                vec!["all".to_string()]
            } else {
                self.opts.tags.only.clone()
            }),
        );
        m.insert(
            "ansible_skip_tags".into(),
            Value::from(self.opts.tags.skip.clone()),
        );
        m.insert("ansible_version".into(), serde_json::json!({"full": "2.19.0", "major": 2, "minor": 19, "revision": 0, "string": "2.19.0 (kk)"}));
        m.insert("omit".into(), Value::from(OMIT));
        m
    }

    /// The layers a host sees outside any role/block/task scope (what `hostvars[h]` shows).
    fn base_layers(&self, host: &str, play_vars: &Arc<VarMap>) -> Layers {
        let st = self.state(host);
        let mut l = Layers::default();
        l.push(self.config.clone());
        l.push(self.inventory_vars(host));
        l.push_data(st.facts.clone());
        l.push(play_vars.clone());
        l.push(st.included.clone());
        l.push_data(st.runtime.clone());
        l.push(self.extra.clone());
        l
    }

    fn host_magic(&self, host: &str) -> Arc<VarMap> {
        let mut m = VarMap::new();
        m.insert("inventory_hostname".into(), Value::from(host));
        m.insert(
            "inventory_hostname_short".into(),
            Value::from(host.split('.').next().unwrap_or(host)),
        );
        m.insert(
            "group_names".into(),
            Value::from(self.inventory.read().unwrap().group_names(host)),
        );
        Arc::new(m)
    }

    fn hostvars(self: &Arc<Self>, play_vars: Arc<VarMap>) -> minijinja::Value {
        let me = self.clone();
        let mut names = self.inventory.read().unwrap().host_names();
        if !names.iter().any(|n| n == "localhost")
            && self.hosts.lock().unwrap().contains_key("localhost")
        {
            names.push("localhost".into());
        }
        let known: IndexSet<String> = names.iter().cloned().collect();
        let hv = HostVars::new(
            names,
            Box::new(move |name: &str| {
                if !known.contains(name) && name != "localhost" {
                    return None;
                }
                let magic = Magic {
                    values: vec![me.host_magic(name)],
                    hostvars: None,
                };
                Some(VarView::new(
                    me.base_layers(name, &play_vars),
                    magic,
                    me.templar.clone(),
                ))
            }),
        );
        minijinja::Value::from_object(hv)
    }

    /// The full view of a host's variables inside a scope.
    fn view(
        &self,
        pc: &PlayCtx,
        scope: &Scope,
        host: &str,
        top: Option<Arc<VarMap>>,
        hostvars: &minijinja::Value,
    ) -> Arc<VarView> {
        let st = self.state(host);
        let mut l = Layers::default();
        for d in &pc.role_defaults {
            l.push(d.clone());
        }
        for r in &scope.roles {
            l.push(r.role.defaults.clone());
        }
        l.push(self.config.clone());
        l.push(self.inventory_vars(host));
        l.push_data(st.facts.clone());
        l.push(pc.vars.clone());
        if let Some(vf) = pc.host_vars_files.get(host) {
            l.push(vf.clone());
        }
        for v in &pc.role_vars {
            l.push(v.clone());
        }
        for r in &scope.roles {
            l.push(r.role.vars.clone());
        }
        for v in &scope.vars {
            l.push(v.clone());
        }
        l.push(st.included.clone());
        l.push_data(st.runtime.clone());
        // Role parameters beat set_fact (Ansible's precedence), but stay private to the role.
        for r in &scope.roles {
            l.push(r.params.clone());
        }
        l.push(self.extra.clone());
        if let Some(t) = top {
            l.push_data(t);
        }
        let mut values = vec![self.host_magic(host)];
        if let Some(r) = scope.roles.last() {
            let mut m = VarMap::new();
            m.insert(
                "role_path".into(),
                Value::from(r.role.path.display().to_string()),
            );
            m.insert("role_name".into(), Value::from(r.role.name.clone()));
            m.insert("ansible_role_name".into(), Value::from(r.role.name.clone()));
            let parents: Vec<String> = scope
                .roles
                .iter()
                .rev()
                .skip(1)
                .map(|r| r.role.name.clone())
                .collect();
            m.insert("ansible_parent_role_names".into(), Value::from(parents));
            values.push(Arc::new(m));
        }
        values.push(pc.play_hosts.read().unwrap().clone());
        values.push(pc.magic.read().unwrap().clone());
        VarView::new(
            l,
            Magic {
                values,
                hostvars: Some(hostvars.clone()),
            },
            self.templar.clone(),
        )
    }

    /// The connection to a host, opened on first use and kept for the run.
    fn connection(&self, host: &str, view: &Arc<VarView>) -> Result<Arc<dyn Connection>> {
        // Held while creating, so concurrent tasks (delegate_to) share one connection.
        let mut conns = self.conns.lock().unwrap();
        if let Some(c) = conns.get(host) {
            return Ok(c.clone());
        }
        let c = crate::connect::for_host(host, &|k| view.get_json(k), &self.connect_opts)?;
        conns.insert(host.to_string(), c.clone());
        Ok(c)
    }

    fn emit(&self, e: Event) {
        self.reporter.event(&e);
    }

    fn warn(&self, msg: impl Into<String>) {
        self.emit(Event::Warning { msg: msg.into() });
    }

    /// Resolves the play's host patterns (templated with extra vars and config).
    fn play_hosts(&self, play: &Play) -> Result<Vec<String>> {
        let mut l = Layers::default();
        l.push(self.config.clone());
        l.push(self.extra.clone());
        let view = VarView::new(l, Magic::default(), self.templar.clone());
        let ctx = view.context();
        let rendered = self
            .templar
            .render_value(&play.hosts, &ctx)
            .map_err(|e| e.at(&play.span))?;
        let patterns: Vec<String> = match rendered {
            Value::String(s) => vec![s],
            Value::Array(items) => items.iter().map(crate::project::value_text).collect(),
            other => vec![crate::project::value_text(&other)],
        };
        let inv = self.inventory.read().unwrap();
        let pattern = patterns.join(":");
        let mut hosts = inv.select(&pattern).map_err(|e| e.at(&play.span))?;
        if let Some(limit) = &self.opts.limit {
            let allowed = inv.select(limit)?;
            hosts.retain(|h| allowed.contains(h));
        }
        Ok(hosts)
    }

    /// Runs one play; returns false when the run must stop: every host of a batch
    /// failed or was unreachable (Ansible's "NO MORE HOSTS LEFT", which ends the whole
    /// playbook, later plays on other hosts included), or `max_fail_percentage` was
    /// exceeded.
    fn run_play(self: Arc<Self>, play: Play) -> BoxFuture<'static, Result<bool>> {
        Box::pin(async move {
            let matched = self.play_hosts(&play)?;
            // Hosts that failed or were unreachable earlier in the run take no part
            // (Ansible's rule), but still count in the `serial` batches.
            let gone = |h: &String| {
                let s = self.state(h);
                s.failed || s.unreachable
            };
            let hosts: Vec<String> = matched.iter().filter(|h| !gone(h)).cloned().collect();
            for h in &hosts {
                self.with_state(h, |s| s.ended = false);
            }
            if hosts.is_empty() {
                self.emit(Event::PlayStart {
                    play: play.name.clone(),
                    hosts: Vec::new(),
                });
                self.warn(format!(
                    "no hosts matched the play's pattern {}",
                    play.hosts
                ));
                return Ok(true);
            }
            for full in serial_batches(&play.serial, &matched)? {
                let batch: Vec<String> = full.iter().filter(|h| !gone(h)).cloned().collect();
                if batch.is_empty() {
                    // A batch of hosts that all failed earlier: Ansible starts it and
                    // runs nothing.
                    self.emit(Event::PlayStart {
                        play: play.name.clone(),
                        hosts: Vec::new(),
                    });
                    continue;
                }
                let pc = Arc::new(self.prepare_play(&play, &batch, full.len(), &hosts)?);
                self.emit(Event::PlayStart {
                    play: pc.name.clone(),
                    hosts: batch.clone(),
                });
                self.clone().run_batch(pc.clone()).await?;
                if self.max_fail_break.load(Ordering::SeqCst) {
                    return Ok(false);
                }
                if pc.abort.load(Ordering::SeqCst) {
                    // end_play: the play stops, the run goes on.
                    break;
                }
                // Ansible compares the batch size with the hosts failed plus the hosts
                // unreachable in this batch; a host can be both (any_errors_fatal fails
                // a host that was unreachable at the same task), and then they differ.
                let lost: usize = batch
                    .iter()
                    .map(|h| {
                        let s = self.state(h);
                        usize::from(s.failed) + usize::from(s.unreachable)
                    })
                    .sum();
                if lost == full.len() {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    fn prepare_play(
        &self,
        play: &Play,
        batch: &[String],
        batch_size: usize,
        all: &[String],
    ) -> Result<PlayCtx> {
        let vars = (*play.attrs.vars).clone();
        let name = if crate::template::is_template(&play.name) {
            let mut l = Layers::default();
            l.push(self.config.clone());
            l.push(Arc::new(vars.clone()));
            l.push(self.extra.clone());
            let v = VarView::new(l, Magic::default(), self.templar.clone());
            crate::project::value_text(
                &self
                    .templar
                    .render_str(&play.name, &v.context())
                    .map_err(|e| e.at(&play.span))?,
            )
        } else {
            play.name.clone()
        };
        // vars_files names may use host variables, so each host gets its own set.
        let play_vars = Arc::new(vars.clone());
        let mut loaded_files: HashMap<PathBuf, VarMap> = HashMap::new();
        let mut host_vars_files = HashMap::new();
        if !play.vars_files.is_empty() {
            for host in batch {
                let view = VarView::new(
                    self.base_layers(host, &play_vars),
                    Magic {
                        values: vec![self.host_magic(host)],
                        hostvars: None,
                    },
                    self.templar.clone(),
                );
                let ctx = view.context();
                let mut merged = VarMap::new();
                for (file, span) in &play.vars_files {
                    let rendered = self
                        .templar
                        .render_value(file, &ctx)
                        .map_err(|e| e.at(span))?;
                    let candidates: Vec<String> = match rendered {
                        Value::Array(items) => {
                            items.iter().map(crate::project::value_text).collect()
                        }
                        other => vec![crate::project::value_text(&other)],
                    };
                    let Some(path) = candidates
                        .iter()
                        .map(|c| play.dir.join(c))
                        .find(|p| p.is_file())
                    else {
                        return Err(Error::new(
                            ErrorKind::Io,
                            format!(
                                "vars file {} not found (for host {})",
                                candidates.join(" or "),
                                host
                            ),
                        )
                        .at(span));
                    };
                    if !loaded_files.contains_key(&path) {
                        let node = crate::yaml::load_file(&path)?;
                        loaded_files.insert(path.clone(), node.to_map("vars_files")?);
                    }
                    crate::vars::merge_maps(&mut merged, &loaded_files[&path]);
                }
                host_vars_files.insert(host.clone(), Arc::new(merged));
            }
        }
        let (mut role_defaults, mut role_vars) = (Vec::new(), Vec::new());
        for list in [&play.roles, &play.pre_tasks, &play.tasks, &play.post_tasks] {
            collect_static_roles(list, &mut role_defaults, &mut role_vars);
        }
        let magic = self.play_magic(all, &name);
        Ok(PlayCtx {
            play: play.clone(),
            name,
            vars: Arc::new(vars),
            host_vars_files,
            role_defaults,
            role_vars,
            magic: RwLock::new(Arc::new(magic)),
            play_hosts: RwLock::new(Arc::new(play_hosts_map(batch))),
            batch: batch.to_vec(),
            batch_size,
            abort: AtomicBool::new(false),
        })
    }

    fn run_batch(self: Arc<Self>, pc: Arc<PlayCtx>) -> BoxFuture<'static, Result<()>> {
        Box::pin(async move {
            let scope = Scope {
                attrs: Inherited {
                    vars: Arc::new(VarMap::new()),
                    ..pc.play.attrs.clone()
                },
                environment: pc.play.attrs.environment.iter().cloned().collect(),
                ..Default::default()
            };
            let gather = match &pc.play.gather_facts {
                None => true,
                Some(v) => crate::modules::args::to_bool(v).unwrap_or(true),
            };
            if gather {
                self.gather_facts(&pc, &scope).await;
            }
            let sections: [(&str, Vec<Task>); 3] = [
                ("pre_tasks", pc.play.pre_tasks.clone()),
                (
                    "tasks",
                    pc.play
                        .roles
                        .iter()
                        .chain(pc.play.tasks.iter())
                        .cloned()
                        .collect(),
                ),
                ("post_tasks", pc.play.post_tasks.clone()),
            ];
            for (_, tasks) in sections {
                if tasks.is_empty() {
                    continue;
                }
                let hosts = self.active(&pc, &pc.batch);
                if pc.play.strategy == Strategy::Free {
                    let futs = hosts.iter().map(|h| {
                        self.clone().run_list(
                            pc.clone(),
                            tasks.clone(),
                            vec![h.clone()],
                            scope.clone(),
                        )
                    });
                    futures::future::join_all(futs).await;
                } else {
                    self.clone()
                        .run_list(pc.clone(), tasks, hosts, scope.clone())
                        .await;
                }
                self.clone().flush_handlers(pc.clone(), scope.clone()).await;
                if pc.abort.load(Ordering::SeqCst) {
                    break;
                }
            }
            Ok(())
        })
    }

    async fn gather_facts(self: &Arc<Self>, pc: &Arc<PlayCtx>, scope: &Scope) {
        let task = Task {
            name: Some("Gathering Facts".into()),
            kind: TaskKind::Module {
                module: "setup".into(),
                args: VarMap::new(),
            },
            attrs: Inherited::default(),
            own: Default::default(),
            span: pc.play.span.clone(),
            dir: pc.play.dir.clone(),
        };
        let hosts = self.active(pc, &pc.batch);
        self.clone()
            .run_tasks_on_hosts(pc.clone(), task, hosts, scope.clone(), true)
            .await;
    }

    /// Recomputes `play_hosts` and friends after hosts failed or were rescued.
    fn refresh_play_hosts(&self, pc: &PlayCtx) {
        let active: Vec<String> = {
            let states = self.hosts.lock().unwrap();
            pc.batch
                .iter()
                .filter(|h| {
                    states
                        .get(*h)
                        .map(|s| !s.failed && !s.unreachable)
                        .unwrap_or(true)
                })
                .cloned()
                .collect()
        };
        let current = pc.play_hosts.read().unwrap().clone();
        if current.get("play_hosts") != Some(&Value::from(active.clone())) {
            *pc.play_hosts.write().unwrap() = Arc::new(play_hosts_map(&active));
        }
    }

    /// Hosts of a list that can still run tasks.
    fn active(&self, pc: &PlayCtx, hosts: &[String]) -> Vec<String> {
        if pc.abort.load(Ordering::SeqCst) {
            return Vec::new();
        }
        let states = self.hosts.lock().unwrap();
        hosts
            .iter()
            .filter(|h| {
                states
                    .get(*h)
                    .map(|s| !s.failed && !s.unreachable && !s.ended)
                    .unwrap_or(true)
            })
            .cloned()
            .collect()
    }

    /// Runs a task list on hosts, each task on all of them before the next (linear).
    fn run_list(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        tasks: Vec<Task>,
        hosts: Vec<String>,
        scope: Scope,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            for t in tasks {
                let active = self.active(&pc, &hosts);
                if active.is_empty() {
                    break;
                }
                self.clone()
                    .run_entry(pc.clone(), t, active, scope.clone())
                    .await;
            }
        })
    }

    fn run_entry(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        t: Task,
        hosts: Vec<String>,
        scope: Scope,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            match &t.kind {
                TaskKind::Block {
                    block,
                    rescue,
                    always,
                    role,
                } => {
                    let mut inner = scope.child(&t.attrs);
                    if let Some(r) = role {
                        inner.roles.push(r.clone());
                    }
                    self.run_block(
                        pc,
                        block.clone(),
                        rescue.clone(),
                        always.clone(),
                        hosts,
                        inner,
                    )
                    .await;
                }
                TaskKind::Meta(what) => self.clone().run_meta(pc, &t, what, hosts, scope).await,
                TaskKind::IncludeTasks { .. } | TaskKind::IncludeRole { .. } => {
                    self.run_include(pc, t, hosts, scope).await
                }
                TaskKind::Module { .. } => {
                    let inner = scope.child(&t.attrs);
                    if !self.opts.tags.selects(&inner.attrs.tags) {
                        return;
                    }
                    self.run_tasks_on_hosts(pc, t, hosts, scope, false).await;
                }
            }
        })
    }

    fn run_block(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        block: Vec<Task>,
        rescue: Vec<Task>,
        always: Vec<Task>,
        hosts: Vec<String>,
        scope: Scope,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let mut body_scope = scope.clone();
            if !rescue.is_empty() {
                body_scope.rescuable = true;
            }
            self.clone()
                .run_list(pc.clone(), block, hosts.clone(), body_scope)
                .await;
            let failed: Vec<String> = hosts
                .iter()
                .filter(|h| {
                    let s = self.state(h);
                    s.failed && !s.unreachable
                })
                .cloned()
                .collect();
            if !rescue.is_empty() && !failed.is_empty() && !pc.abort.load(Ordering::SeqCst) {
                for h in &failed {
                    self.with_state(h, |s| {
                        s.failed = false;
                        s.rescuing = false;
                    });
                }
                self.clone()
                    .run_list(pc.clone(), rescue, failed.clone(), scope.clone())
                    .await;
            }
            if !always.is_empty() {
                let still_failed: Vec<String> = hosts
                    .iter()
                    .filter(|h| {
                        let s = self.state(h);
                        s.failed && !s.unreachable
                    })
                    .cloned()
                    .collect();
                for h in &still_failed {
                    self.with_state(h, |s| s.failed = false);
                }
                let run_on: Vec<String> = hosts
                    .iter()
                    .filter(|h| {
                        let s = self.state(h);
                        !s.unreachable && !s.ended
                    })
                    .cloned()
                    .collect();
                self.clone()
                    .run_list(pc.clone(), always, run_on, scope.clone())
                    .await;
                for h in &still_failed {
                    self.with_state(h, |s| s.failed = true);
                }
            }
        })
    }

    async fn run_meta(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        t: &Task,
        what: &str,
        hosts: Vec<String>,
        scope: Scope,
    ) {
        let inner = scope.child(&t.attrs);
        if !self.opts.tags.selects(&inner.attrs.tags) {
            return;
        }
        self.emit(Event::TaskStart {
            play: pc.name.clone(),
            task: t.display_name(),
            path: format!("{}:{}", t.span.path().display(), t.span.line),
        });
        // Conditions on meta tasks are evaluated per host (except flush_handlers, which has none).
        let hv = self.hostvars(pc.vars.clone());
        let mut selected = Vec::new();
        for h in &hosts {
            let view = self.view(&pc, &inner, h, None, &hv);
            match self
                .templar
                .eval_condition(&Value::Array(inner.attrs.when.clone()), &view.context())
            {
                Ok(true) => selected.push(h.clone()),
                Ok(false) => {}
                Err(e) => self.warn(format!("meta {}: {}", what, e.message)),
            }
        }
        match what {
            "flush_handlers" => self.flush_handlers(pc, scope).await,
            "end_play" | "end_batch" if !selected.is_empty() => {
                for h in &pc.batch {
                    self.with_state(h, |s| s.ended = true);
                }
                pc.abort.store(what == "end_play", Ordering::SeqCst);
            }
            "end_host" => {
                for h in &hosts {
                    if selected.contains(h) {
                        self.with_state(h, |s| s.ended = true);
                    } else {
                        self.emit(Event::HostResult {
                            play: pc.name.clone(),
                            task: t.display_name(),
                            host: h.clone(),
                            delegated_to: None,
                            status: crate::report::Status::Skipped,
                            changed: false,
                            ignored: false,
                            result: serde_json::json!({"changed": false, "skipped": true, "skip_reason": "Conditional result was False", "msg": format!("end_host conditional evaluated to false, continuing execution for {}", h)}),
                            display: None,
                        });
                    }
                }
            }
            "clear_host_errors" => {
                for h in &pc.batch {
                    self.with_state(h, |s| {
                        s.failed = false;
                        s.rescuing = false;
                    });
                }
            }
            "clear_facts" => {
                for h in &selected {
                    self.with_state(h, |s| s.facts = Arc::new(VarMap::new()));
                }
            }
            _ => {}
        }
    }

    fn flush_handlers(self: Arc<Self>, pc: Arc<PlayCtx>, scope: Scope) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let handlers = pc.play.handlers.clone();
            // Each handler runs once per flush for the hosts that notified it (by name or
            // by a topic it listens to); handlers may notify later handlers.
            for h in handlers {
                let hname = h.name.clone().unwrap_or_default();
                let listens = h.own.listen.clone();
                let targets: Vec<String> = {
                    let states = self.hosts.lock().unwrap();
                    pc.batch
                        .iter()
                        .filter(|host| {
                            let Some(s) = states.get(*host) else {
                                return false;
                            };
                            let hit = s
                                .notified
                                .iter()
                                .any(|n| *n == hname || listens.contains(n));
                            hit && !s.unreachable
                                && !s.ended
                                && (!s.failed || pc.play.force_handlers)
                        })
                        .cloned()
                        .collect()
                };
                if targets.is_empty() {
                    continue;
                }
                for host in &targets {
                    self.with_state(host, |s| s.notified.retain(|n| *n != hname));
                }
                let mut handler = h.clone();
                handler.own.listen.clear();
                self.clone()
                    .run_entry(pc.clone(), handler, targets, scope.clone())
                    .await;
            }
            for host in &pc.batch {
                self.with_state(host, |s| s.notified.clear());
            }
        })
    }
}

/// The play-host magic variables for the hosts still active.
fn play_hosts_map(active: &[String]) -> VarMap {
    let mut m = VarMap::new();
    for k in ["play_hosts", "ansible_play_batch", "ansible_play_hosts"] {
        m.insert(k.into(), Value::from(active.to_vec()));
    }
    m
}

/// Gathers defaults and vars of roles applied statically (`roles:`, `import_role`,
/// their dependencies), which Ansible exposes to the whole play.
fn collect_static_roles(
    tasks: &[Task],
    defaults: &mut Vec<Arc<VarMap>>,
    vars: &mut Vec<Arc<VarMap>>,
) {
    for t in tasks {
        if let TaskKind::Block {
            block,
            rescue,
            always,
            role,
        } = &t.kind
        {
            if let Some(r) = role {
                if !defaults.iter().any(|d| Arc::ptr_eq(d, &r.role.defaults)) {
                    defaults.push(r.role.defaults.clone());
                    vars.push(r.role.vars.clone());
                }
            }
            collect_static_roles(block, defaults, vars);
            collect_static_roles(rescue, defaults, vars);
            collect_static_roles(always, defaults, vars);
        }
    }
}

/// Splits hosts into `serial` batches: an int, "N%", or a list of them (the last repeats).
fn serial_batches(serial: &Option<Value>, hosts: &[String]) -> Result<Vec<Vec<String>>> {
    let Some(serial) = serial else {
        return Ok(vec![hosts.to_vec()]);
    };
    let sizes: Vec<Value> = match serial {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    let total = hosts.len();
    let size_of = |v: &Value| -> Result<usize> {
        let n = match v {
            Value::Number(n) => n.as_f64().unwrap_or(0.0) as usize,
            Value::String(s) if s.trim().ends_with('%') => {
                let pct: f64 = s.trim().trim_end_matches('%').parse().map_err(|_| {
                    Error::new(ErrorKind::Syntax, format!("bad serial value {:?}", s))
                })?;
                ((total as f64) * pct / 100.0) as usize
            }
            Value::String(s) => s
                .trim()
                .parse()
                .map_err(|_| Error::new(ErrorKind::Syntax, format!("bad serial value {:?}", s)))?,
            other => {
                return Err(Error::new(
                    ErrorKind::Syntax,
                    format!("bad serial value {}", other),
                ))
            }
        };
        Ok(n.max(1))
    };
    if sizes.is_empty() {
        return Ok(vec![hosts.to_vec()]);
    }
    let mut out = Vec::new();
    let mut i = 0;
    let mut k = 0;
    while i < total {
        let n = size_of(&sizes[k.min(sizes.len() - 1)])?;
        let end = (i + n).min(total);
        out.push(hosts[i..end].to_vec());
        i = end;
        k += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::serial_batches;
    use serde_json::json;

    #[test]
    fn serial() {
        let hosts: Vec<String> = (1..=5).map(|i| format!("h{}", i)).collect();
        let b = serial_batches(&Some(json!(2)), &hosts).unwrap();
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 2, 1]);
        let b = serial_batches(&Some(json!([1, "50%"])), &hosts).unwrap();
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 2, 2]);
        let b = serial_batches(&None, &hosts).unwrap();
        assert_eq!(b.len(), 1);
    }
}
