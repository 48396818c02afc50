//! Reading playbooks, task files and roles from disk into [`Play`]s and [`Task`]s.
//!
//! Paths resolve as Ansible resolves them: imports relative to the importing file,
//! roles under `roles/` next to the playbook (and next to its parent, KubeKey's
//! project layout), role files from the role first.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::kv::{parse_kv, parse_kv_check_raw};
use super::{Inherited, Play, Playbook, RoleScope, Strategy, Task, TaskKind, TaskOwn};
use crate::error::{did_you_mean, Error, ErrorKind, Result, Span};
use crate::modules;
use crate::vars::VarMap;
use crate::yaml::{self, Node, Yaml};

mod roles;

/// Keywords a task may carry besides its module.
pub const TASK_KEYWORDS: &[&str] = &[
    "name",
    "when",
    "loop",
    "with_items",
    "with_list",
    "with_dict",
    "with_indexed_items",
    "loop_control",
    "register",
    "changed_when",
    "failed_when",
    "ignore_errors",
    "ignore_unreachable",
    "until",
    "retries",
    "delay",
    "delegate_to",
    "delegate_facts",
    "run_once",
    "notify",
    "tags",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "environment",
    "no_log",
    "timeout",
    "throttle",
    "check_mode",
    "diff",
    "args",
    "vars",
    "any_errors_fatal",
    "listen",
    "collections",
    "debugger",
    "module_defaults",
    "rescue",
    "always",
    "block",
    "connection",
    "remote_user",
    "port",
];

/// Play keywords.
pub const PLAY_KEYWORDS: &[&str] = &[
    "name",
    "hosts",
    "gather_facts",
    "vars",
    "vars_files",
    "pre_tasks",
    "roles",
    "tasks",
    "post_tasks",
    "handlers",
    "serial",
    "strategy",
    "any_errors_fatal",
    "max_fail_percentage",
    "become",
    "become_user",
    "become_method",
    "tags",
    "environment",
    "ignore_errors",
    "ignore_unreachable",
    "check_mode",
    "diff",
    "no_log",
    "run_once",
    "force_handlers",
    "gather_subset",
    "gather_timeout",
    "collections",
    "module_defaults",
    "connection",
    "remote_user",
    "port",
    "order",
    "timeout",
    "throttle",
    "vars_prompt",
    "fact_path",
    "debugger",
];

/// Loads files, remembering what the current file and role are.
#[derive(Debug, Clone)]
pub struct Loader {
    /// Directory of the top playbook (`playbook_dir`).
    pub playbook_dir: PathBuf,
    /// Extra directories searched for roles, before the built-in ones.
    pub roles_path: Vec<PathBuf>,
}

/// Where the entries being parsed come from.
#[derive(Debug, Clone)]
struct FileCtx {
    dir: PathBuf,
    role: Option<RoleScope>,
    stack: Vec<PathBuf>,
}

/// Loads a playbook file and everything it imports.
pub fn load_playbook(path: &Path, roles_path: Vec<PathBuf>) -> Result<Playbook> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let loader = Loader {
        playbook_dir: dir,
        roles_path,
    };
    let mut stack = Vec::new();
    let plays = loader.load_plays(path, &mut stack, None)?;
    Ok(Playbook {
        plays,
        path: path.to_path_buf(),
    })
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn cycle_error(stack: &[PathBuf], path: &Path, span: Option<&Span>) -> Error {
    let mut chain: Vec<String> = stack.iter().map(|p| p.display().to_string()).collect();
    chain.push(path.display().to_string());
    Error::new(
        ErrorKind::Syntax,
        format!("import cycle: {}", chain.join(" -> ")),
    )
    .at_opt(span)
    .help("a file may not import itself, directly or through other files")
}

impl Loader {
    fn load_plays(
        &self,
        path: &Path,
        stack: &mut Vec<PathBuf>,
        span: Option<&Span>,
    ) -> Result<Vec<Play>> {
        let key = canonical(path);
        if stack.contains(&key) {
            return Err(cycle_error(stack, path, span));
        }
        let root = yaml::load_file(path).map_err(|e| e.at_opt(span))?;
        stack.push(key);
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let items = match &root.value {
            Yaml::Seq(items) => items,
            Yaml::Null => return Ok(Vec::new()),
            _ => return Err(root.expected("a list of plays")),
        };
        let mut plays = Vec::new();
        for item in items {
            if let Some(imp) = item.get("import_playbook") {
                let name = imp
                    .as_str()
                    .ok_or_else(|| imp.expected("a playbook path"))?;
                let target = resolve_first(&[dir.join(name), dir.join("playbooks").join(name)])
                    .ok_or_else(|| {
                        Error::syntax(format!("imported playbook `{}` not found", name), &imp.span)
                            .note(format!("looked in {}", dir.display()))
                    })?;
                plays.extend(self.load_plays(&target, stack, Some(&imp.span))?);
                continue;
            }
            plays.push(self.parse_play(item, &dir, stack)?);
        }
        stack.pop();
        Ok(plays)
    }

    fn parse_play(&self, node: &Node, dir: &Path, stack: &[PathBuf]) -> Result<Play> {
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
        };
        let attrs = parse_inherited(node)?;
        let strategy = match node.get("strategy").map(|n| (n, n.as_str())) {
            None => Strategy::Linear,
            Some((_, Some("linear"))) => Strategy::Linear,
            Some((_, Some("free"))) => Strategy::Free,
            Some((n, _)) => {
                return Err(
                    Error::syntax(format!("unknown strategy {}", n.to_value()), &n.span)
                        .help("use `linear` (default) or `free`"),
                )
            }
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
        let max_fail_percentage = match node.get("max_fail_percentage") {
            None => None,
            Some(n) => Some(match &n.value {
                Yaml::Int(i) => *i as f64,
                Yaml::Float(f) => *f,
                Yaml::Str(s) => s
                    .trim_end_matches('%')
                    .parse()
                    .map_err(|_| n.expected("a percentage"))?,
                _ => return Err(n.expected("a percentage")),
            }),
        };
        let mut handlers = self.parse_task_list(node.get("handlers"), &ctx)?;
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
            gather_facts: node.get("gather_facts").map(Node::to_value),
            vars_files,
            pre_tasks: self.parse_task_list(node.get("pre_tasks"), &ctx)?,
            roles,
            tasks: self.parse_task_list(node.get("tasks"), &ctx)?,
            post_tasks: self.parse_task_list(node.get("post_tasks"), &ctx)?,
            handlers,
            serial: node.get("serial").map(Node::to_value),
            strategy,
            max_fail_percentage,
            force_handlers: node
                .get("force_handlers")
                .and_then(|n| crate::ansible::to_bool(&n.to_value()))
                .unwrap_or(false),
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
            Yaml::Seq(items) => items.iter().map(|i| self.parse_task(i, ctx)).collect(),
            _ => Err(node.expected("a list of tasks")),
        }
    }

    /// Loads a task file (for `include_tasks` at run time and `import_tasks` at load time).
    pub fn load_task_file(
        &self,
        path: &Path,
        role: Option<RoleScope>,
        stack: &[PathBuf],
        span: Option<&Span>,
    ) -> Result<Vec<Task>> {
        let key = canonical(path);
        if stack.contains(&key) {
            return Err(cycle_error(stack, path, span));
        }
        let root = yaml::load_file(path).map_err(|e| e.at_opt(span))?;
        let mut stack = stack.to_vec();
        stack.push(key);
        let ctx = FileCtx {
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            role,
            stack,
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

    fn parse_task(&self, node: &Node, ctx: &FileCtx) -> Result<Task> {
        if !matches!(node.value, Yaml::Map(_)) {
            return Err(node.expected("a task (a mapping with a module name)"));
        }
        let attrs = parse_inherited(node)?;
        let mut own = TaskOwn::default();
        let name = node.get("name").map(|n| value_string(&n.to_value()));
        let task = |kind: TaskKind, attrs: Inherited, own: TaskOwn| Task {
            name: name.clone(),
            kind,
            attrs,
            own,
            span: node.span.clone(),
            dir: ctx.dir.clone(),
        };
        if let Some(block) = node.get("block") {
            for (k, v) in node.entries() {
                if !TASK_KEYWORDS.contains(&k.as_str()) {
                    return Err(Error::syntax(
                        format!("unknown keyword `{}` on a block", k),
                        &v.span,
                    ));
                }
            }
            return Ok(task(
                TaskKind::Block {
                    block: self.parse_task_list(Some(block), ctx)?,
                    rescue: self.parse_task_list(node.get("rescue"), ctx)?,
                    always: self.parse_task_list(node.get("always"), ctx)?,
                    role: None,
                },
                attrs,
                own,
            ));
        }
        // Find the one key that names the action.
        let mut action: Option<(&str, &Node)> = None;
        for (k, v) in node.entries() {
            if TASK_KEYWORDS.contains(&k.as_str()) {
                continue;
            }
            let canon = modules::canonical_name(k);
            let known = modules::find(canon).is_some() || k == "action" || k == "local_action";
            if !known {
                let mut e = Error::syntax(format!("unknown module or keyword `{}`", k), &v.span);
                let candidates = modules::all_names().chain(TASK_KEYWORDS.iter().copied());
                if let Some(s) = did_you_mean(canon, candidates) {
                    e = e.help(format!("did you mean `{}`?", s));
                }
                return Err(e);
            }
            if let Some((prev, _)) = action {
                return Err(Error::syntax(
                    format!("task has two actions: `{}` and `{}`", prev, k),
                    &v.span,
                )
                .help("a task runs one module; split it into two tasks"));
            }
            action = Some((k.as_str(), v));
        }
        let Some((key, args_node)) = action else {
            return Err(Error::syntax("task has no module", &node.span)
                .help("add a module such as `command:` or `debug:`; keywords alone do nothing"));
        };
        let mut module = modules::canonical_name(key).to_string();
        let mut args_node = args_node.clone();
        let mut attrs = attrs;
        if key == "action" || key == "local_action" {
            if key == "local_action" {
                attrs.delegate_to = Some(Value::String("localhost".into()));
            }
            match &args_node.value {
                Yaml::Str(s) => {
                    let (m, rest) = s
                        .trim()
                        .split_once(char::is_whitespace)
                        .unwrap_or((s.trim(), ""));
                    module = modules::canonical_name(m).to_string();
                    args_node = Node {
                        value: Yaml::Str(rest.to_string()),
                        span: args_node.span.clone(),
                    };
                }
                Yaml::Map(entries) => {
                    let m = entries
                        .iter()
                        .find(|(k, _)| k == "module")
                        .and_then(|(_, v)| v.as_str())
                        .ok_or_else(|| args_node.expected("`action` with a `module:` key"))?;
                    module = modules::canonical_name(m).to_string();
                    let rest: Vec<_> = entries
                        .iter()
                        .filter(|(k, _)| k != "module")
                        .cloned()
                        .collect();
                    args_node = Node {
                        value: Yaml::Map(rest),
                        span: args_node.span.clone(),
                    };
                }
                _ => return Err(args_node.expected("a module and its arguments")),
            }
        }
        let mut args: VarMap = match &args_node.value {
            Yaml::Null => VarMap::new(),
            Yaml::Str(s) if modules::is_command_line(&module) => parse_kv_check_raw(s, true),
            Yaml::Str(s) => parse_kv(s, modules::is_free_form(&module)),
            Yaml::Map(_) => args_node.to_map("module arguments")?,
            Yaml::Int(_) | Yaml::Float(_) | Yaml::Bool(_) if modules::is_free_form(&module) => {
                let mut m = VarMap::new();
                m.insert(
                    "_raw_params".into(),
                    Value::String(value_string(&args_node.to_value())),
                );
                m
            }
            _ => {
                return Err(args_node.expected(&format!(
                    "arguments for `{}` (a mapping or key=value string)",
                    module
                )))
            }
        };
        if let Some(extra) = node.get("args") {
            for (k, v) in extra.to_map("args")? {
                args.entry(k).or_insert(v);
            }
        }
        own.register = match node.get("register") {
            None => None,
            Some(n) => Some(
                n.as_str()
                    .filter(|s| crate::ansible::is_identifier(s))
                    .ok_or_else(|| n.expected("a variable name"))?
                    .to_string(),
            ),
        };
        for (kw, flatten) in [
            ("loop", false),
            ("with_list", false),
            ("with_items", true),
            ("with_dict", false),
            ("with_indexed_items", true),
        ] {
            if let Some(l) = node.get(kw) {
                if own.loop_.is_some() {
                    return Err(Error::syntax(
                        "a task may have only one loop keyword",
                        &l.span,
                    ));
                }
                let v = l.to_value();
                own.loop_ = Some(match kw {
                    "with_dict" => Value::String(format!("{{{{ {} | dict2items }}}}", expr_of(&v))),
                    "with_indexed_items" => Value::String(format!(
                        "{{{{ {} | flatten(levels=1) | kk_indexed }}}}",
                        expr_of(&v)
                    )),
                    _ => v,
                });
                own.loop_flatten = flatten;
            }
        }
        own.loop_control = node.get("loop_control").map(Node::to_value);
        own.changed_when = node.get("changed_when").map(Node::to_value);
        own.failed_when = node.get("failed_when").map(Node::to_value);
        own.until = node.get("until").map(Node::to_value);
        own.retries = node.get("retries").map(Node::to_value);
        own.delay = node.get("delay").map(Node::to_value);
        own.notify = string_list(node.get("notify"))?;
        own.listen = string_list(node.get("listen"))?;

        let kind = match module.as_str() {
            "include_tasks" | "include" => TaskKind::IncludeTasks {
                file: args
                    .get("file")
                    .or_else(|| args.get("_raw_params"))
                    .cloned()
                    .ok_or_else(|| {
                        Error::syntax("include_tasks needs a file name", &args_node.span)
                    })?,
                role: ctx.role.clone(),
            },
            "import_tasks" => {
                let file = args
                    .get("file")
                    .or_else(|| args.get("_raw_params"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        Error::syntax("import_tasks needs a file name", &args_node.span)
                    })?;
                if crate::template::is_template(file) {
                    return Err(Error::syntax(
                        "import_tasks is static: its file name cannot be templated",
                        &args_node.span,
                    )
                    .help("use include_tasks for a file chosen at run time"));
                }
                let path = self
                    .find_task_file(file, &ctx.dir, ctx.role.as_ref())
                    .ok_or_else(|| {
                        Error::syntax(format!("task file `{}` not found", file), &args_node.span)
                            .note(format!(
                                "looked next to {} and in the role/playbook dirs",
                                ctx.dir.display()
                            ))
                    })?;
                let tasks = self.load_task_file(
                    &path,
                    ctx.role.clone(),
                    &ctx.stack,
                    Some(&args_node.span),
                )?;
                TaskKind::Block {
                    block: tasks,
                    rescue: Vec::new(),
                    always: Vec::new(),
                    role: None,
                }
            }
            "import_role" => {
                let mut handlers = Vec::new();
                let mut seen = HashSet::new();
                let mut out = Vec::new();
                let mut role_node = Node {
                    value: Yaml::Map(Vec::new()),
                    span: args_node.span.clone(),
                };
                let mut entries = vec![];
                for (k, v) in &args {
                    let k = if k == "name" {
                        "role".to_string()
                    } else {
                        k.clone()
                    };
                    entries.push((k, value_node(v, &args_node.span)));
                }
                role_node.value = Yaml::Map(entries);
                self.load_role_ref(&role_node, ctx, &mut out, &mut handlers, &mut seen)?;
                TaskKind::Block {
                    block: out,
                    rescue: Vec::new(),
                    always: Vec::new(),
                    role: None,
                }
            }
            "include_role" => TaskKind::IncludeRole {
                name: args
                    .get("name")
                    .cloned()
                    .ok_or_else(|| Error::syntax("include_role needs `name:`", &args_node.span))?,
                tasks_from: args
                    .get("tasks_from")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                vars_from: args
                    .get("vars_from")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                defaults_from: args
                    .get("defaults_from")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            },
            "meta" => {
                let what = args
                    .get("_raw_params")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim()
                    .to_string();
                const META: &[&str] = &[
                    "flush_handlers",
                    "end_play",
                    "end_host",
                    "end_batch",
                    "noop",
                    "clear_host_errors",
                    "refresh_inventory",
                    "clear_facts",
                    "reset_connection",
                ];
                if !META.contains(&what.as_str()) {
                    return Err(Error::syntax(
                        format!("unknown meta action `{}`", what),
                        &args_node.span,
                    )
                    .help(format!("use one of: {}", META.join(", "))));
                }
                TaskKind::Meta(what)
            }
            "import_playbook" => {
                return Err(Error::syntax(
                    "import_playbook is only allowed at the top level of a playbook",
                    &node.span,
                ))
            }
            _ => TaskKind::Module { module, args },
        };
        Ok(task(kind, attrs, own))
    }
}

fn value_node(v: &Value, span: &Span) -> Node {
    let value = match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map(Yaml::Int)
            .unwrap_or_else(|| Yaml::Float(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => Yaml::Str(s.clone()),
        Value::Array(a) => Yaml::Seq(a.iter().map(|i| value_node(i, span)).collect()),
        Value::Object(m) => Yaml::Map(
            m.iter()
                .map(|(k, v)| (k.clone(), value_node(v, span)))
                .collect(),
        ),
    };
    Node {
        value,
        span: span.clone(),
    }
}

fn expr_of(v: &Value) -> String {
    match v {
        Value::String(s) => match s
            .trim()
            .strip_prefix("{{")
            .and_then(|x| x.strip_suffix("}}"))
        {
            Some(inner) => inner.trim().to_string(),
            None => s.clone(),
        },
        other => other.to_string(),
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

fn string_list(node: Option<&Node>) -> Result<Vec<String>> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    match node.to_value() {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s]),
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(node.expected("a list of names")),
            })
            .collect(),
        _ => Err(node.expected("a name or a list of names")),
    }
}

fn tags_of(node: Option<&Node>) -> Result<Vec<String>> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    match node.to_value() {
        Value::String(s) => Ok(s
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect()),
        Value::Number(n) => Ok(vec![n.to_string()]),
        Value::Array(items) => Ok(items.iter().map(value_string).collect()),
        Value::Null => Ok(Vec::new()),
        _ => Err(node.expected("a tag or a list of tags")),
    }
}

/// Reads the keywords children inherit from a play, role reference, block or task.
fn parse_inherited(node: &Node) -> Result<Inherited> {
    let get = |k: &str| node.get(k).map(Node::to_value);
    let when = match node.get("when") {
        None => Vec::new(),
        Some(n) => match n.to_value() {
            Value::Array(items) => items,
            Value::Null => Vec::new(),
            v => vec![v],
        },
    };
    let vars = match node.get("vars") {
        None => VarMap::new(),
        Some(n) => {
            let m = n.to_map("vars")?;
            for k in m.keys() {
                if !crate::ansible::is_identifier(k) {
                    return Err(Error::syntax(format!("`{}` is not a valid variable name", k), &n.span)
                        .help("variable names are letters, digits and underscores, not starting with a digit"));
                }
            }
            m
        }
    };
    if let Some(b) = node.get("become_method") {
        if b.as_str() != Some("sudo") {
            return Err(Error::syntax(
                format!("unsupported become_method {}", b.to_value()),
                &b.span,
            )
            .help("kk supports `sudo`"));
        }
    }
    Ok(Inherited {
        when,
        tags: tags_of(node.get("tags"))?,
        become_: get("become"),
        become_user: get("become_user"),
        become_method: node
            .get("become_method")
            .and_then(Node::as_str)
            .map(str::to_string),
        environment: get("environment"),
        ignore_errors: get("ignore_errors"),
        ignore_unreachable: get("ignore_unreachable"),
        check_mode: get("check_mode"),
        diff: get("diff"),
        no_log: get("no_log"),
        run_once: get("run_once"),
        delegate_to: get("delegate_to"),
        delegate_facts: get("delegate_facts"),
        any_errors_fatal: get("any_errors_fatal"),
        timeout: get("timeout"),
        throttle: get("throttle"),
        vars: Arc::new(vars),
    })
}
