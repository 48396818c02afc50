//! Reading playbooks, task files and roles from disk into [`Play`]s and [`Task`]s.
//!
//! Paths resolve as Ansible resolves them: imports relative to the importing file,
//! roles under `roles/` next to the playbook (and next to its parent, KubeKey's
//! project layout), role files from the role first.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::{Keyword, Play, Playbook, RoleScope, Task};
use crate::error::{did_you_mean, Error, ErrorKind, Result, Span};
use crate::modules;
use crate::vars::VarMap;
use crate::yaml::{self, Node, Yaml};

use keywords::parse_inherited;
pub use keywords::{PLAY_KEYWORDS, TASK_KEYWORDS};

/// The names `import_playbook` goes by in a playbook (ansible-core's _ACTION_IMPORT_PLAYBOOK).
const IMPORT_PLAYBOOK: &[&str] = &[
    "import_playbook",
    "ansible.builtin.import_playbook",
    "ansible.legacy.import_playbook",
];

mod argspecs;
mod collections;
mod include_check;
mod keywords;
mod notify;
mod roles;
mod static_vars;
mod task;
pub mod text;

pub use notify::{check_notify, flatten_handlers, handler_names, includes_roles, unknown_handler};
pub use task::take_imported_handlers;

/// Loads files, remembering what the current file and role are.
#[derive(Debug, Clone)]
pub struct Loader {
    /// Directory of the top playbook (`playbook_dir`).
    pub playbook_dir: PathBuf,
    /// Extra directories searched for roles, before the built-in ones.
    pub roles_path: Vec<PathBuf>,
    /// `-e` variables: with the play's vars they render the names of static imports.
    pub extra_vars: Arc<VarMap>,
}

/// Where the entries being parsed come from.
#[derive(Debug, Clone)]
struct FileCtx {
    dir: PathBuf,
    role: Option<RoleScope>,
    stack: Vec<PathBuf>,
    /// How many task lists the entries are nested in (see [`crate::depth::MAX_NESTING`]).
    depth: usize,
    /// The play's `vars` and those of the enclosing blocks: what a static import's
    /// templated file name may use (see [`Loader::render_static`]).
    vars: Arc<VarMap>,
    /// Where the play is written: a role's argument validation task reports there.
    play_span: Option<Span>,
}

/// Loads a playbook file and everything it imports (tests; runs pass their extra vars).
#[cfg(test)]
pub fn load_playbook(path: &Path, roles_path: Vec<PathBuf>) -> Result<Playbook> {
    load_playbook_with(path, roles_path, Arc::new(VarMap::new()))
}

/// [`load_playbook`] with the run's extra vars, which templated static imports may use.
pub fn load_playbook_with(
    path: &Path,
    roles_path: Vec<PathBuf>,
    extra_vars: Arc<VarMap>,
) -> Result<Playbook> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let loader = Loader {
        playbook_dir: dir,
        roles_path,
        extra_vars,
    };
    let mut stack = Vec::new();
    let plays = loader.load_plays(path, &mut stack, None, &VarMap::new())?;
    Ok(Playbook { plays })
}

/// `base` with `top`'s variables over it (an import's vars over a play's own).
fn overlay(base: &VarMap, top: &VarMap) -> VarMap {
    let mut out = base.clone();
    out.extend(top.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn cycle_error(stack: &[PathBuf], path: &Path, span: Option<&Span>) -> Error {
    let mut chain: Vec<String> = stack.iter().map(|p| p.display().to_string()).collect();
    chain.push(path.display().to_string());
    Error::new(
        ErrorKind::Syntax,
        format!("import cycle: {}", crate::graph::cycle_text(&chain)),
    )
    .at_opt(span)
    .help("a file may not import itself, directly or through other files")
}

impl Loader {
    /// The plays of a playbook file; `import_vars` are the `vars` of the `import_playbook`
    /// entries that led here, which every play sees above its own (ansible-core).
    fn load_plays(
        &self,
        path: &Path,
        stack: &mut Vec<PathBuf>,
        span: Option<&Span>,
        import_vars: &VarMap,
    ) -> Result<Vec<Play>> {
        let key = canonical(path);
        if stack.contains(&key) {
            return Err(cycle_error(stack, path, span));
        }
        if let (true, Some(span)) = (stack.len() >= crate::depth::MAX_NESTING, span) {
            return Err(crate::depth::too_deep(span));
        }
        let root = yaml::load_file(path).map_err(|e| e.at_opt(span))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        // As ansible-core (playbook/__init__.py): an empty file, only comments or `~` is
        // "nothing to do", `[]` a playbook without plays; both refused.
        let items = match &root.value {
            Yaml::Seq(items) if items.is_empty() => {
                return Err(Error::syntax(
                    format!(
                        "a playbook must contain at least one play: {}",
                        path.display()
                    ),
                    &root.span,
                )
                .help("add a play: `- hosts: all` with `tasks:`"))
            }
            Yaml::Seq(items) => items,
            Yaml::Null => {
                return Err(Error::syntax(
                    format!("empty playbook, nothing to do: {}", path.display()),
                    &root.span,
                )
                .help("a playbook is a list of plays: `- hosts: all` with `tasks:`"))
            }
            _ => return Err(root.expected("a list of plays")),
        };
        stack.push(key);
        let mut plays = Vec::new();
        for item in items {
            if let Some(imp) = IMPORT_PLAYBOOK.iter().find_map(|k| item.get(k)) {
                plays.extend(self.import_playbook(item, imp, &dir, stack, import_vars)?);
                continue;
            }
            plays.push(self.parse_play(item, &dir, stack, import_vars)?);
        }
        stack.pop();
        Ok(plays)
    }

    /// An `import_playbook` entry: the imported file's plays, with the entry's `vars` above
    /// each play's own, its `when` in front of each play's conditions (ansible-core prepends
    /// it to every block, Gathering Facts included) and its `tags` added to each play's.
    fn import_playbook(
        &self,
        item: &Node,
        imp: &Node,
        dir: &Path,
        stack: &mut Vec<PathBuf>,
        import_vars: &VarMap,
    ) -> Result<Vec<Play>> {
        let name = imp
            .as_str()
            .ok_or_else(|| imp.expected("a playbook path"))?;
        let target = resolve_first(&[dir.join(name), dir.join("playbooks").join(name)])
            .ok_or_else(|| {
                Error::syntax(format!("imported playbook `{}` not found", name), &imp.span)
                    .note(format!("looked in {}", dir.display()))
            })?;
        let own = parse_inherited(item)?;
        // An outer import's vars win over an inner one's (ansible-core applies the inner
        // import's first, then the outer's over every play it brought).
        let vars = overlay(&own.vars, import_vars);
        let mut imported =
            crate::depth::grow(|| self.load_plays(&target, stack, Some(&imp.span), &vars))?;
        for p in &mut imported {
            for t in &own.tags {
                if !p.attrs.tags.contains(t) {
                    p.attrs.tags.push(t.clone());
                }
            }
            if !own.when.is_empty() {
                let mut when = own.when.clone();
                when.append(&mut p.attrs.when);
                p.attrs.when = when;
            }
        }
        Ok(imported)
    }

    fn parse_play(
        &self,
        node: &Node,
        dir: &Path,
        stack: &[PathBuf],
        import_vars: &VarMap,
    ) -> Result<Play> {
        if !matches!(node.value, Yaml::Map(_)) {
            return Err(node.expected("a play (a mapping with `hosts:`)"));
        }
        for (k, v) in node.entries() {
            if !PLAY_KEYWORDS.contains(&k.as_str()) {
                let mut e = Error::syntax(format!("unknown play keyword `{}`", k), &v.span);
                if let Some(s) = did_you_mean(k, PLAY_KEYWORDS.iter().copied()) {
                    e = e.help(format!("did you mean `{}`?", s));
                } else if TASK_KEYWORDS.contains(&k.as_str())
                    || modules::lookup(modules::canonical_name(k)).is_some()
                {
                    e = e.help("tasks go under `tasks:` (or pre_tasks/post_tasks), not directly in the play");
                }
                return Err(e);
            }
        }
        let hosts = node.get("hosts").ok_or_else(|| {
            Error::syntax("play has no `hosts:`", &node.span)
                .help("add `hosts: all` or a group or host pattern")
        })?;
        let hosts_value = hosts.to_value();
        if !matches!(hosts_value, Value::String(_) | Value::Array(_)) {
            return Err(hosts.expected("a host pattern (string) or a list of patterns"));
        }
        let ctx = FileCtx {
            dir: dir.to_path_buf(),
            role: None,
            stack: stack.to_vec(),
            depth: 0,
            vars: Arc::new(VarMap::new()),
            play_span: Some(node.span.clone()),
        };
        let mut attrs = parse_inherited(node)?;
        if !import_vars.is_empty() {
            attrs.vars = Arc::new(overlay(&attrs.vars, import_vars));
        }
        let ctx = FileCtx {
            vars: attrs.vars.clone(),
            ..ctx
        };
        let mut vars_files = Vec::new();
        if let Some(vf) = node.get("vars_files") {
            match &vf.value {
                Yaml::Seq(items) => {
                    for i in items {
                        vars_files.push((i.to_value(), i.span.clone()));
                    }
                }
                Yaml::Str(_) => vars_files.push((vf.to_value(), vf.span.clone())),
                _ => return Err(vf.expected("a list of files")),
            }
        }
        take_imported_handlers();
        let mut handlers = flatten_handlers(self.parse_task_list(node.get("handlers"), &ctx)?);
        let mut roles = Vec::new();
        if let Some(r) = node.get("roles") {
            let Yaml::Seq(items) = &r.value else {
                return Err(r.expected("a list of roles"));
            };
            let mut seen = HashSet::new();
            for item in items {
                self.load_role_ref(item, &ctx, &mut roles, &mut handlers, &mut seen)?;
            }
        }
        let pre_tasks = self.parse_task_list(node.get("pre_tasks"), &ctx)?;
        let tasks = self.parse_task_list(node.get("tasks"), &ctx)?;
        let post_tasks = self.parse_task_list(node.get("post_tasks"), &ctx)?;
        // Handlers of roles import_role brought in (ansible-core adds them to the play's).
        handlers.extend(take_imported_handlers());
        let lists = [&pre_tasks, &roles, &tasks, &post_tasks, &handlers];
        if !lists.iter().any(|l| includes_roles(l)) {
            for list in lists {
                check_notify(list, &handlers)?;
            }
        }
        if let Some(n) = node.get("name") {
            if matches!(n.value, Yaml::Map(_) | Yaml::Seq(_)) {
                return Err(n.expected("a play name (a string)"));
            }
        }
        Ok(Play {
            name: node
                .get("name")
                .map(|n| value_string(&n.to_value()))
                .unwrap_or_else(|| match &hosts_value {
                    Value::Array(items) => {
                        items.iter().map(value_string).collect::<Vec<_>>().join(",")
                    }
                    other => value_string(other),
                }),
            hosts: hosts_value,
            gather_facts: Keyword::from_node(node, "gather_facts")?,
            // A list keyword: a string is one element, never split at commas (as Ansible).
            gather_subset: node.get("gather_subset").map(|n| match n.to_value() {
                Value::String(s) => Value::Array(vec![Value::String(s)]),
                v => v,
            }),
            vars_files,
            pre_tasks,
            roles,
            tasks,
            post_tasks,
            handlers,
            serial: Keyword::from_node(node, "serial")?,
            strategy: Keyword::from_node(node, "strategy")?,
            max_fail_percentage: Keyword::from_node(node, "max_fail_percentage")?,
            force_handlers: Keyword::from_node(node, "force_handlers")?,
            order: Keyword::from_node(node, "order")?,
            attrs,
            dir: dir.to_path_buf(),
            span: node.span.clone(),
        })
    }

    fn parse_task_list(&self, node: Option<&Node>, ctx: &FileCtx) -> Result<Vec<Task>> {
        let Some(node) = node else {
            return Ok(Vec::new());
        };
        match &node.value {
            Yaml::Null => Ok(Vec::new()),
            Yaml::Seq(items) => items
                .iter()
                .map(|i| crate::depth::grow(|| self.parse_task(i, ctx)))
                .collect(),
            _ => Err(node.expected("a list of tasks")),
        }
    }

    /// Loads a task file (for `include_tasks` at run time and `import_tasks` at load time),
    /// its tasks nested `depth` levels deep.
    pub fn load_task_file(
        &self,
        path: &Path,
        role: Option<RoleScope>,
        stack: &[PathBuf],
        depth: usize,
        span: Option<&Span>,
    ) -> Result<Vec<Task>> {
        let key = canonical(path);
        if stack.contains(&key) {
            return Err(cycle_error(stack, path, span));
        }
        let root = yaml::load_file(path).map_err(|e| e.at_opt(span))?;
        if !matches!(root.value, Yaml::Null | Yaml::Seq(_)) {
            return Err(root
                .expected("a list of tasks")
                .with_code("kk::include::not_a_list"));
        }
        let mut stack = stack.to_vec();
        stack.push(key);
        let ctx = FileCtx {
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            role,
            stack,
            depth,
            vars: Arc::new(VarMap::new()),
            play_span: None,
        };
        self.parse_task_list(Some(&root), &ctx)
    }

    /// Finds a task file named by an include: next to the including file, in the role's
    /// `tasks/`, then in the playbook dir.
    pub fn find_task_file(
        &self,
        name: &str,
        from_dir: &Path,
        role: Option<&RoleScope>,
    ) -> Option<PathBuf> {
        let mut cands = vec![from_dir.join(name)];
        if let Some(r) = role {
            cands.push(r.role.path.join("tasks").join(name));
            cands.push(r.role.path.join(name));
        }
        cands.push(self.playbook_dir.join(name));
        cands.push(self.playbook_dir.join("tasks").join(name));
        resolve_first(&cands)
    }
}

fn resolve_first(cands: &[PathBuf]) -> Option<PathBuf> {
    cands.iter().find(|c| c.is_file()).cloned()
}

fn value_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
