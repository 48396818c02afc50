//! Playbooks, plays, roles, blocks and tasks: typed, with source positions, loaded
//! once. Static constructs (`import_playbook`, `import_tasks`, `import_role`, role
//! dependencies) are expanded here; dynamic ones (`include_tasks`, `include_role`) stay
//! as nodes the executor expands per host.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Span;
use crate::vars::VarMap;

pub mod keyword;
pub mod kv;
pub mod load;

pub use keyword::{
    inherit, BatchSize, BecomeMethod, HostOrder, Keyword, KeywordValue, LoopControl, Percent,
    Seconds, Serial,
};
#[cfg(test)]
pub use load::load_playbook;
pub use load::{
    check_notify, handler_names, includes_roles, load_playbook_with, take_imported_handlers,
    unknown_handler, Loader,
};

/// A loaded playbook: its plays, imports already inlined.
#[derive(Debug, Clone)]
pub struct Playbook {
    /// The plays in order.
    pub plays: Vec<Play>,
}

/// How hosts progress through a play's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Every host finishes task N before any starts task N+1.
    #[default]
    Linear,
    /// Each host runs through the tasks at its own pace.
    Free,
    /// As `Free`, but a host that starts keeps its fork until it has run the section's
    /// last task: with fewer forks than hosts, the later hosts wait for whole hosts.
    HostPinned,
}

/// Keywords that plays, roles, blocks and tasks share and that children inherit.
#[derive(Debug, Clone, Default)]
pub struct Inherited {
    /// Conditions, all of which must hold.
    pub when: Vec<Value>,
    /// Tags of this node (children add theirs).
    pub tags: Vec<String>,
    /// `become`.
    pub become_: Option<Keyword<bool>>,
    /// `become_user`.
    pub become_user: Option<Keyword<String>>,
    /// `become_method` (sudo or su).
    pub become_method: Option<Keyword<BecomeMethod>>,
    /// `become_flags`: the options given to sudo or su (sudo's default `-H -S -n`).
    pub become_flags: Option<Keyword<String>>,
    /// `remote_user`: the login user, below the host's `ansible_user`, above `-u`.
    pub remote_user: Option<Keyword<String>>,
    /// `environment`, merged outer to inner.
    pub environment: Option<Value>,
    /// `ignore_errors`.
    pub ignore_errors: Option<Keyword<bool>>,
    /// `ignore_unreachable`.
    pub ignore_unreachable: Option<Keyword<bool>>,
    /// `check_mode`.
    pub check_mode: Option<Keyword<bool>>,
    /// `diff`.
    pub diff: Option<Keyword<bool>>,
    /// `no_log`.
    pub no_log: Option<Keyword<bool>>,
    /// `run_once`.
    pub run_once: Option<Keyword<bool>>,
    /// `delegate_to`.
    pub delegate_to: Option<Value>,
    /// `delegate_facts`.
    pub delegate_facts: Option<Keyword<bool>>,
    /// `any_errors_fatal`.
    pub any_errors_fatal: Option<Keyword<bool>>,
    /// `timeout` in seconds.
    pub timeout: Option<Keyword<u64>>,
    /// `throttle`.
    pub throttle: Option<Keyword<u64>>,
    /// `vars` of this node, visible only inside it.
    pub vars: Arc<VarMap>,
}

/// A play.
#[derive(Debug, Clone)]
pub struct Play {
    /// `name` (may be templated).
    pub name: String,
    /// `hosts`: a pattern string or list of patterns.
    pub hosts: Value,
    /// `gather_facts` (default true).
    pub gather_facts: Option<Keyword<bool>>,
    /// `gather_subset` (passed to the implicit `setup`; may be templated).
    pub gather_subset: Option<Value>,
    /// `vars_files`, relative to the playbook dir, templated at run time.
    pub vars_files: Vec<(Value, Span)>,
    /// `pre_tasks`.
    pub pre_tasks: Vec<Task>,
    /// `roles`, each expanded into a role block.
    pub roles: Vec<Task>,
    /// `tasks`.
    pub tasks: Vec<Task>,
    /// `post_tasks`.
    pub post_tasks: Vec<Task>,
    /// `handlers` (plus every role's handlers).
    pub handlers: Vec<Task>,
    /// `serial`: int, "N%", or a list of them.
    pub serial: Option<Keyword<Serial>>,
    /// `strategy` (linear when absent).
    pub strategy: Option<Keyword<Strategy>>,
    /// `max_fail_percentage`.
    pub max_fail_percentage: Option<Keyword<Percent>>,
    /// `force_handlers`.
    pub force_handlers: Option<Keyword<bool>>,
    /// `order`: the order hosts run in and are batched (the pattern's when absent).
    pub order: Option<Keyword<HostOrder>>,
    /// Keywords inherited by every task (including play `vars`).
    pub attrs: Inherited,
    /// Directory of the playbook file that defines the play.
    pub dir: PathBuf,
    /// Where the play is written.
    pub span: Span,
}

/// A role as loaded from disk.
#[derive(Debug)]
pub struct Role {
    /// Name as referenced.
    pub name: String,
    /// The role's directory.
    pub path: PathBuf,
    /// `defaults/` (lowest precedence).
    pub defaults: Arc<VarMap>,
    /// `vars/main`.
    pub vars: Arc<VarMap>,
}

/// A role applied in a play: the role plus its parameters.
#[derive(Debug, Clone)]
pub struct RoleScope {
    /// The role.
    pub role: Arc<Role>,
    /// Parameters given where the role is used (`roles: [{role: x, a: 1}]`).
    pub params: Arc<VarMap>,
    /// Whether the role's defaults and vars are seen by the play's later tasks (and, for a
    /// static role, by all of them): `public:`, true unless an import says false.
    pub public: bool,
}

/// One entry of a task list.
#[derive(Debug, Clone)]
pub struct Task {
    /// `name`, possibly templated; absent for blocks and unnamed tasks.
    pub name: Option<String>,
    /// What the entry does.
    pub kind: TaskKind,
    /// Inherited keywords set on this entry.
    pub attrs: Inherited,
    /// Keywords only tasks have.
    pub own: TaskOwn,
    /// Where the entry is written.
    pub span: Span,
    /// Directory of the file the entry is in (for relative includes).
    pub dir: PathBuf,
}

/// The kinds of task-list entries.
#[derive(Debug)]
pub enum TaskKind {
    /// A module call with untemplated arguments.
    Module {
        /// Canonical module name.
        module: String,
        /// Arguments as written (free form already split into a map).
        args: VarMap,
    },
    /// `block` with optional `rescue` and `always`, or a role's task list.
    Block {
        /// The main tasks.
        block: Vec<Task>,
        /// Run for hosts that failed in `block`.
        rescue: Vec<Task>,
        /// Run for every host that entered the block.
        always: Vec<Task>,
        /// Set when this block is a role's tasks: gives role vars, defaults and paths.
        role: Option<RoleScope>,
    },
    /// `include_tasks`: loaded per host at run time.
    IncludeTasks {
        /// File name (templated).
        file: Value,
        /// Role the include appears in, to resolve relative names.
        role: Option<RoleScope>,
    },
    /// `include_role`: loaded at run time.
    IncludeRole {
        /// Role name (templated).
        name: Value,
        /// `tasks_from` (default `main`).
        tasks_from: Option<String>,
        /// `vars_from`.
        vars_from: Option<String>,
        /// `defaults_from`.
        defaults_from: Option<String>,
        /// `rolespec_validate` (default true): check the role's argument spec first.
        rolespec_validate: bool,
        /// `handlers_from` (default `main`).
        handlers_from: Option<String>,
        /// `apply`: block keywords the included tasks get (as a block around them).
        apply: Option<Box<Inherited>>,
        /// `public` (default false): the role's defaults and vars are seen by the play's
        /// later tasks once the include ran.
        public: bool,
        /// `allow_duplicates` (default true): false skips the role's tasks on a host where
        /// the same role (same files, parameters and vars) already ran.
        allow_duplicates: bool,
    },
    /// `meta: flush_handlers | end_play | end_host | noop | clear_host_errors | refresh_inventory`.
    Meta(String),
}

/// Cloning a block clones the task lists nested in it, as deeply as they nest: on a fresh
/// stack segment when the thread's runs low (see [`crate::depth`]).
impl Clone for TaskKind {
    fn clone(&self) -> TaskKind {
        match self {
            TaskKind::Block {
                block,
                rescue,
                always,
                role,
            } => crate::depth::grow(|| TaskKind::Block {
                block: block.clone(),
                rescue: rescue.clone(),
                always: always.clone(),
                role: role.clone(),
            }),
            TaskKind::Module { module, args } => TaskKind::Module {
                module: module.clone(),
                args: args.clone(),
            },
            TaskKind::IncludeTasks { file, role } => TaskKind::IncludeTasks {
                file: file.clone(),
                role: role.clone(),
            },
            TaskKind::IncludeRole {
                name,
                tasks_from,
                vars_from,
                defaults_from,
                rolespec_validate,
                handlers_from,
                apply,
                public,
                allow_duplicates,
            } => TaskKind::IncludeRole {
                name: name.clone(),
                tasks_from: tasks_from.clone(),
                vars_from: vars_from.clone(),
                defaults_from: defaults_from.clone(),
                rolespec_validate: *rolespec_validate,
                handlers_from: handlers_from.clone(),
                apply: apply.clone(),
                public: *public,
                allow_duplicates: *allow_duplicates,
            },
            TaskKind::Meta(m) => TaskKind::Meta(m.clone()),
        }
    }
}

/// Keywords that belong to tasks only (not inherited).
#[derive(Debug, Clone, Default)]
pub struct TaskOwn {
    /// The module's name as the task writes it (`ansible.builtin.uri`), when that is not
    /// the canonical one: Ansible's messages name it so.
    pub action: Option<String>,
    /// `name` was written `!unsafe`: shown as written, never rendered (as Ansible).
    pub raw_name: bool,
    /// `loop`, or the terms of `with_<lookup>`.
    pub loop_: Option<Value>,
    /// The lookup of `with_<lookup>`: the loop's items are what it returns for the
    /// rendered `loop_` (Ansible's `loop_with`).
    pub loop_with: Option<String>,
    /// `loop_control`, typed.
    pub loop_control: LoopControl,
    /// `register`.
    pub register: Option<String>,
    /// `changed_when`.
    pub changed_when: Option<Value>,
    /// `failed_when`.
    pub failed_when: Option<Value>,
    /// `until`.
    pub until: Option<Value>,
    /// `retries`.
    pub retries: Option<Keyword<u64>>,
    /// `delay`.
    pub delay: Option<Keyword<Seconds>>,
    /// `notify`.
    pub notify: Vec<String>,
    /// Where `notify` is written, for its errors.
    pub notify_span: Option<Span>,
    /// `listen` (handlers).
    pub listen: Vec<String>,
    /// `async`: run as a background job of at most this many seconds.
    pub async_: Option<Keyword<u64>>,
    /// `poll`: seconds between checks of an `async` job; 0 returns at once.
    pub poll: Option<Keyword<u64>>,
}

impl Task {
    /// The name shown in output: the given name, or the module name / block label.
    pub fn display_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        match &self.kind {
            TaskKind::Module { module, .. } => module.clone(),
            TaskKind::Block { role: Some(r), .. } => format!("role {}", r.role.name),
            TaskKind::Block { .. } => "block".into(),
            TaskKind::IncludeTasks { file, .. } => format!("include_tasks {}", value_text(file)),
            TaskKind::IncludeRole { name, .. } => format!("include_role {}", value_text(name)),
            TaskKind::Meta(m) => format!("meta {}", m),
        }
    }
}

pub use crate::ansible::value_text;
