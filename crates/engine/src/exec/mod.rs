//! The executor: plays in order, hosts in batches (`serial`), task lists walked with
//! Ansible's semantics (linear by default, `free` on request), blocks with rescue and
//! always, dynamic includes, handlers, and the recap.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use crate::connect::Connection;
use crate::error::Result;
use crate::inventory::Inventory;
use crate::project::{inherit, load_playbook_with, Inherited, Loader, Play, RoleScope};
use crate::report::{Counts, Event, Reporter};
use crate::template::Templar;
use crate::vars::{VarMap, VarView};

mod args;
mod async_job;
mod defaults;
mod host;
mod include;
mod item;
mod listing;
mod loop_items;
mod play;
mod role_magic;
mod start_at;
pub mod tags;
mod task;
#[cfg(test)]
mod tests;
mod view;
mod walk;

pub use defaults::{Gathering, PlayDefaults};
pub use listing::{list_playbook, syntax_check, ListWhat};
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
    /// `-b`, `--become-user`, `-K`, `--start-at-task`… (and `ansible.cfg`'s).
    pub defaults: PlayDefaults,
    /// `-u`, `--private-key`, `-k`, `timeout`, `ssh_args`… (and `ansible.cfg`'s).
    pub connect: crate::connect::ConnectDefaults,
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
    /// `kk_host_changes`: results that changed this host or failed on it (a failure may
    /// have changed it half-way), including tasks delegated to it. Probes compare it with
    /// the value they were taken at, to know whether they can still be trusted.
    changes: u64,
    /// `setup`/`gather_facts` ran on it: `gathering = smart` gathers it no more.
    gathered: bool,
    failed: bool,
    /// The failure happened inside a block whose `rescue` will handle it: it does not
    /// count for `max_fail_percentage` (Ansible counts a failure once it is final).
    rescuing: bool,
    /// Failed by another host's `run_once` failure, which Ansible marks failed twice: the
    /// innermost block around it skips its rescue (and its always, unless it has a rescue).
    failed_twice: bool,
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
    /// The dependencies of roles `include_role` entered here: their defaults and vars
    /// sit beneath those of `roles` (ansible-core's `Role.get_default_vars`/`get_vars`;
    /// a static role's are the play's already).
    role_dependencies: Vec<Arc<crate::project::Role>>,
    vars: Vec<Arc<VarMap>>,
    rescuable: bool,
    /// How many task lists this point is nested in (see [`crate::depth::MAX_NESTING`]).
    depth: usize,
    /// The includes that led here, outermost first, to find a cycle among them.
    includes: Arc<Vec<include::Included>>,
    /// `notify` of the innermost block, import or include_role that set one, with where
    /// it is written: the tasks inside that set none notify these (see [`Scope::notify`]).
    notify: Option<Arc<(Vec<String>, Option<crate::error::Span>)>>,
    /// Inside a handler: `--tags`/`--skip-tags` do not apply (ansible-core runs a
    /// notified handler whatever its tags, `never` included).
    handler: bool,
}

fn pick<T: Clone>(inner: &Option<T>, outer: &Option<T>) -> Option<T> {
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
                become_: inherit(&a.become_, &o.become_),
                become_user: inherit(&a.become_user, &o.become_user),
                become_method: inherit(&a.become_method, &o.become_method),
                become_flags: inherit(&a.become_flags, &o.become_flags),
                remote_user: inherit(&a.remote_user, &o.remote_user),
                environment: None,
                ignore_errors: inherit(&a.ignore_errors, &o.ignore_errors),
                ignore_unreachable: inherit(&a.ignore_unreachable, &o.ignore_unreachable),
                check_mode: inherit(&a.check_mode, &o.check_mode),
                diff: inherit(&a.diff, &o.diff),
                no_log: inherit(&a.no_log, &o.no_log),
                run_once: inherit(&a.run_once, &o.run_once),
                delegate_to: pick(&a.delegate_to, &o.delegate_to),
                delegate_facts: inherit(&a.delegate_facts, &o.delegate_facts),
                any_errors_fatal: inherit(&a.any_errors_fatal, &o.any_errors_fatal),
                timeout: inherit(&a.timeout, &o.timeout),
                throttle: inherit(&a.throttle, &o.throttle),
                vars: Arc::new(VarMap::new()),
            },
            environment,
            roles: self.roles.clone(),
            role_dependencies: self.role_dependencies.clone(),
            vars,
            rescuable: self.rescuable,
            depth: self.depth,
            includes: self.includes.clone(),
            notify: self.notify.clone(),
            handler: self.handler,
        }
    }

    /// Whether `--tags`/`--skip-tags` let a task with these (effective) tags run here.
    fn selects(&self, tags: &TagFilter) -> bool {
        self.handler || tags.selects(&self.attrs.tags)
    }

    /// Enters an entry (block, import, include) whose `notify` its tasks inherit.
    fn notify(&mut self, own: &crate::project::TaskOwn) {
        if !own.notify.is_empty() {
            self.notify = Some(Arc::new((own.notify.clone(), own.notify_span.clone())));
        }
    }
}

/// State of one play (or one `serial` batch of it).
struct PlayCtx {
    play: Play,
    /// The play's own keywords, resolved once for the play.
    kw: play::PlayKeywords,
    name: String,
    vars: Arc<VarMap>,
    /// `vars_files`, rendered and loaded per host (their names may use host variables).
    host_vars_files: HashMap<String, Arc<VarMap>>,
    /// Defaults and vars of the play's static roles (`roles:`, `import_role`): Ansible
    /// makes them visible to the whole play.
    role_defaults: Vec<Arc<VarMap>>,
    role_vars: Vec<Arc<VarMap>>,
    magic: RwLock<Arc<VarMap>>,
    /// `play_hosts` and `ansible_play_batch` (the batch's hosts still active, in the
    /// play's `order`) and `ansible_play_hosts` (the play's hosts still active, in the
    /// pattern's order, whatever the batch).
    play_hosts: RwLock<Arc<VarMap>>,
    /// `ansible_play_hosts_all`: the play's hosts in the pattern's order.
    play_hosts_all: Vec<String>,
    batch: Vec<String>,
    /// Size of the `serial` batch as Ansible counts it: with the hosts that failed in
    /// earlier plays (they take no part but fill their place in the batch).
    batch_size: usize,
    abort: AtomicBool,
    /// An error that stops the whole run (an included file that does not parse, as
    /// Ansible's parser errors do); set together with `abort`.
    fatal: Mutex<Option<crate::error::Error>>,
    /// Handlers of roles `include_role` loaded during the play (after the play's own).
    included_handlers: RwLock<Vec<crate::project::Task>>,
    /// The roles of the play for its role magic variables (grows with `include_role`).
    role_names: RwLock<role_magic::RoleNames>,
    /// Roles `include_role` loaded with `public: true`: their defaults and vars are seen
    /// by every later task of the play.
    public_roles: RwLock<Vec<RoleScope>>,
    /// (host, role identity) of each role `include_role` ran on a host, for
    /// `allow_duplicates: false`.
    roles_done: Mutex<std::collections::HashSet<(String, String)>>,
    /// The play has an `include_role`: its literal `notify` names are checked when
    /// notified (the role's handlers join the play then), not when it loaded.
    notify_at_run: bool,
    /// (role path, handlers file) of the included roles whose handlers joined the play.
    included_handler_files: Mutex<std::collections::HashSet<(PathBuf, String)>>,
}

impl PlayCtx {
    /// The play's handlers, then those of the roles included so far.
    fn handlers(&self) -> Vec<crate::project::Task> {
        let mut all = self.play.handlers.clone();
        all.extend(self.included_handlers.read().unwrap().iter().cloned());
        all
    }
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
    /// `--forks`: how many hosts run a task at once, over the whole run (every task of
    /// every host, whatever the strategy).
    forks: tokio::sync::Semaphore,
}

/// Loads a playbook and runs it; errors in the files come back as `Err` (exit code 4).
pub async fn run_playbook(opts: RunOptions, reporter: Arc<dyn Reporter>) -> Result<Outcome> {
    let start = Instant::now();
    let playbook = load_playbook_with(
        &opts.playbook,
        opts.roles_path.clone(),
        Arc::new(opts.extra_vars.clone()),
    )?;
    run_loaded(opts, playbook, reporter, start).await
}

/// Runs plays written as text (`kk adhoc`'s one-task play) as if they were a playbook in
/// the working directory.
pub async fn run_play_text(
    opts: RunOptions,
    text: &str,
    reporter: Arc<dyn Reporter>,
) -> Result<Outcome> {
    let start = Instant::now();
    let dir = std::env::current_dir().unwrap_or_default();
    let playbook = crate::project::load::text::load_play_text(
        "<adhoc>",
        text,
        &dir,
        opts.roles_path.clone(),
        Arc::new(opts.extra_vars.clone()),
    )?;
    let opts = RunOptions {
        playbook: dir.join("<adhoc>"),
        ..opts
    };
    run_loaded(opts, playbook, reporter, start).await
}

async fn run_loaded(
    opts: RunOptions,
    mut playbook: crate::project::Playbook,
    reporter: Arc<dyn Reporter>,
    start: Instant,
) -> Result<Outcome> {
    for play in &mut playbook.plays {
        opts.defaults.apply(play);
    }
    let start_at_missed = opts
        .defaults
        .start_at_task
        .as_deref()
        .and_then(|name| start_at::apply(&mut playbook.plays, name));
    crate::modules::validate::check_playbook(&playbook)?;
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
    // Dropped after the runner (its connections) on every way out of the run.
    let runtime_dir = crate::connect::RuntimeDirUse::enter();
    let runner = Arc::new(Runner {
        templar: Arc::new(Templar::new()),
        reporter,
        loader: Loader {
            playbook_dir: abs_dir,
            roles_path: opts.roles_path.clone(),
            extra_vars: Arc::new(opts.extra_vars.clone()),
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
            defaults: opts.connect.clone(),
        },
        max_fail_break: AtomicBool::new(false),
        forks: tokio::sync::Semaphore::new(opts.forks.max(1)),
        opts,
    });
    for play in playbook.plays {
        // The group_vars/ and host_vars/ next to this play's playbook (Ansible's basedir).
        if runner
            .inventory
            .write()
            .unwrap()
            .set_playbook_dir(&play.dir)?
        {
            runner.inv_vars.write().unwrap().clear();
        }
        if !runner.clone().run_play(play).await? {
            break;
        }
    }
    async_job::wait_for_jobs().await;
    let conns: Vec<_> = runner.conns.lock().unwrap().drain().collect();
    // Per host (all its login users), in the order hosts first ran a task, then by name.
    let mut transport: IndexMap<String, crate::connect::Transport> = IndexMap::new();
    for h in runner.hosts.lock().unwrap().keys() {
        transport.insert(h.clone(), Default::default());
    }
    let mut by_key: Vec<_> = conns.iter().collect();
    by_key.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, c) in by_key {
        let host = key.split('\n').next().unwrap_or(key);
        *transport.entry(host.to_string()).or_default() += c.transport();
    }
    transport.retain(|_, t| *t != crate::connect::Transport::default());
    for (_, c) in conns {
        c.close().await;
    }
    drop(runtime_dir);
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
    if let Some(msg) = start_at_missed {
        runner.warn(msg);
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
        transport,
        python: crate::modules::python::runs().into_iter().collect(),
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

    /// The connection to a host as its login user, opened on first use and kept for the
    /// run: one per host and user (`remote_user`, or a play's `ansible_user`, may change
    /// the user from task to task). `remote_user` is the task's keyword, below the host's
    /// `ansible_user` and above `-u`, as in Ansible.
    fn connection(
        &self,
        host: &str,
        view: &Arc<VarView>,
        remote_user: Option<String>,
    ) -> Result<Arc<dyn Connection>> {
        let get = |k: &str| view.get_json(k);
        let default_user = remote_user.or_else(|| self.connect_opts.defaults.user.clone());
        let user = crate::connect::login_user(&get, default_user.as_deref())?;
        let key = format!("{}\n{}", host, user.as_deref().unwrap_or(""));
        // Held while creating, so concurrent tasks (delegate_to) share one connection.
        let mut conns = self.conns.lock().unwrap();
        if let Some(c) = conns.get(&key) {
            return Ok(c.clone());
        }
        let c = if default_user == self.connect_opts.defaults.user {
            crate::connect::for_host(host, &get, &self.connect_opts)?
        } else {
            let mut opts = self.connect_opts.clone();
            opts.defaults.user = default_user;
            crate::connect::for_host(host, &get, &opts)?
        };
        conns.insert(key, c.clone());
        Ok(c)
    }

    fn emit(&self, e: Event) {
        self.reporter.event(&e);
    }

    fn warn(&self, msg: impl Into<String>) {
        self.emit(Event::Warning { msg: msg.into() });
    }
}
