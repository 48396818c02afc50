//! One task-list entry: its action (module, `action:`/`local_action:`, includes,
//! imports, `meta`), its arguments and the keywords only tasks have.

use std::collections::HashSet;

use serde_json::Value;

use super::keywords::{parse_inherited, string_list, TASK_KEYWORDS};
use super::{value_string, FileCtx, Loader};
use crate::error::{did_you_mean, Error, Result, Span};
use crate::modules;
use crate::project::kv::{parse_kv, parse_kv_check_raw};
use crate::project::{Inherited, Keyword, LoopControl, Task, TaskKind, TaskOwn};
use crate::vars::VarMap;
use crate::yaml::{Node, Yaml};

thread_local! {
    /// Handlers of the roles `import_role` loaded on this thread, until the play (or the
    /// include) being loaded takes them: they join the play's handlers.
    static IMPORTED_HANDLERS: std::cell::RefCell<Vec<Task>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Takes the handlers of the roles `import_role` loaded on this thread since the last call.
pub fn take_imported_handlers() -> Vec<Task> {
    IMPORTED_HANDLERS.with(|h| std::mem::take(&mut *h.borrow_mut()))
}

impl Loader {
    pub(super) fn parse_task(&self, node: &Node, ctx: &FileCtx) -> Result<Task> {
        if !matches!(node.value, Yaml::Map(_)) {
            return Err(node.expected("a task (a mapping with a module name)"));
        }
        let attrs = parse_inherited(node)?;
        let mut own = TaskOwn::default();
        let name = match node.get("name") {
            // `name: !unsafe "... {{ x }} ..."`: kept as written.
            Some(n) if unsafe_text(n).is_some() => {
                own.raw_name = true;
                unsafe_text(n).map(str::to_string)
            }
            Some(n) if matches!(n.value, Yaml::Map(_) | Yaml::Seq(_)) => {
                return Err(n.expected("a task name (a string)"))
            }
            n => n.map(|n| value_string(&n.to_value())),
        };
        let task = |kind: TaskKind, attrs: Inherited, own: TaskOwn| Task {
            name: name.clone(),
            kind,
            attrs,
            own,
            span: node.span.clone(),
            dir: ctx.dir.clone(),
        };
        if let Some(block) = node.get("block") {
            let ctx = &FileCtx {
                depth: crate::depth::deeper(ctx.depth, &node.span)?,
                vars: super::static_vars::with_vars(&ctx.vars, &attrs.vars),
                ..ctx.clone()
            };
            for (k, v) in node.entries() {
                if !TASK_KEYWORDS.contains(&k.as_str()) {
                    return Err(Error::syntax(
                        format!("unknown keyword `{}` on a block", k),
                        &v.span,
                    ));
                }
            }
            // A block's `notify` is its tasks' unless they set their own (ansible-core's
            // Block is Notifiable and its tasks inherit the attribute).
            own.notify = string_list(node.get("notify"))?;
            own.notify_span = node.get("notify").map(|n| n.span.clone());
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
        // As ansible-core: "'rescue' keyword cannot be used without 'block'".
        for k in ["rescue", "always"] {
            if let Some(v) = node.get(k) {
                return Err(Error::syntax(
                    format!("`{}` cannot be used without `block`", k),
                    &v.span,
                )
                .help(format!(
                    "put the tasks it guards under `block:` in the same entry, with `{}:` beside it",
                    k
                )));
            }
        }
        // Find the one key that names the action.
        let mut action: Option<(&str, &Node)> = None;
        for (k, v) in node.entries() {
            if TASK_KEYWORDS.contains(&k.as_str()) || is_with_lookup(k) {
                continue;
            }
            let canon = modules::canonical_name(k);
            let role_dir = ctx.role.as_ref().map(|r| r.role.path.as_path());
            let known = modules::find(canon).is_some()
                || k == "action"
                || k == "local_action"
                || (!crate::template::is_template(k)
                    && modules::python::resolve(canon, &self.playbook_dir, role_dir)
                        .map_err(|e| e.at(&v.span))?);
            if !known && crate::template::is_template(k) {
                return Err(templated_module(k, &v.span));
            }
            if !known {
                let mut e = Error::syntax(format!("unknown module or keyword `{}`", k), &v.span)
                    .with_code("kk::module::unknown");
                let candidates = modules::all_names().chain(TASK_KEYWORDS.iter().copied());
                e = match did_you_mean(canon, candidates) {
                    Some(s) => e.help(format!("did you mean `{}`?", s)),
                    None => e.help("kk implements no such module, and found none written in Python in library/ (next to the playbook, in a role, ansible.cfg's `library`) or in an installed collection (`collections_path`): check the name, or install the collection"),
                };
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
        let mut written = key.to_string();
        let mut args_node = args_node.clone();
        // `command: !unsafe echo {{ x }}`: the words are read as usual and every value
        // stays raw text (Ansible never templates them).
        let raw_args = match unsafe_text(&args_node) {
            Some(text) => {
                args_node.value = Yaml::Str(text.to_string());
                true
            }
            None => false,
        };
        let mut attrs = attrs;
        if key == "action" || key == "local_action" {
            if key == "local_action" {
                attrs.delegate_to = Some(Value::String("localhost".into()));
            }
            match &args_node.value {
                Yaml::Str(s) if s.trim_start().starts_with("{{") => {
                    // ansible-core templates the action when the task runs; its
                    // arguments are read as key=value words (not a command line).
                    let (m, rest) = split_templated_action(s);
                    module = m;
                    args_node = Node {
                        value: Yaml::Str(rest),
                        span: args_node.span.clone(),
                    };
                }
                Yaml::Str(s) => {
                    let (m, rest) = s
                        .trim()
                        .split_once(char::is_whitespace)
                        .unwrap_or((s.trim(), ""));
                    module = modules::canonical_name(m).to_string();
                    written = m.to_string();
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
                    if crate::template::is_template(m) {
                        return Err(templated_module(m, &args_node.span));
                    }
                    module = modules::canonical_name(m).to_string();
                    written = m.to_string();
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
            Yaml::Str(s) if modules::is_free_form(&module) => parse_kv(s, true),
            // ansible-core's parse_kv: `k=v` words with its quoting, a templated key
            // (`set_fact: "{{ item }}=moo"`) rendered when the task runs.
            Yaml::Str(s) => parse_kv_check_raw(s, false),
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
        if raw_args {
            for v in args.values_mut() {
                if let Value::String(s) = v {
                    if crate::template::is_template(s) {
                        *v = crate::template::unsafe_text::wrap(std::mem::take(s));
                    }
                }
            }
        }
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
        // `loop`, or `with_<lookup>`: Ansible runs the lookup with the keyword's value as
        // its terms (wantlist) when the loop starts; see `TaskOwn::loop_with`.
        for (kw, l) in node.entries() {
            let lookup = match kw.strip_prefix("with_") {
                Some(name) if crate::template::lookups::is_known(name) => Some(name),
                Some(_) => continue,
                None if kw == "loop" => None,
                None => continue,
            };
            if own.loop_.is_some() {
                return Err(Error::syntax(
                    "a task may have only one loop keyword",
                    &l.span,
                ));
            }
            own.loop_ = Some(l.to_value());
            own.loop_with = lookup.map(str::to_string);
        }
        if let Some(lc) = node.get("loop_control") {
            own.loop_control = LoopControl::parse(lc)?;
        }
        own.changed_when = node.get("changed_when").map(Node::to_value);
        own.failed_when = node.get("failed_when").map(Node::to_value);
        own.until = node.get("until").map(Node::to_value);
        own.retries = Keyword::from_node(node, "retries")?;
        own.delay = Keyword::from_node(node, "delay")?;
        own.async_ = Keyword::from_node(node, "async")?;
        own.poll = Keyword::from_node(node, "poll")?;
        own.notify = string_list(node.get("notify"))?;
        own.notify_span = node.get("notify").map(|n| n.span.clone());
        own.listen = string_list(node.get("listen"))?;

        super::include_check::check_include_keywords(node, &module, key)?;
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
                let rendered;
                let file = if crate::template::is_template(file) {
                    rendered = self.render_static(file, ctx, &attrs.vars, &args_node.span)?;
                    rendered.as_str()
                } else {
                    file
                };
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
                    crate::depth::deeper(ctx.depth, &node.span)?,
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
                if let Some(n) = args_node.get("apply") {
                    return Err(Error::syntax("Invalid options for import_role: apply", &n.span)
                        .help("`apply` is for include_role; an import's tasks take the import's own keywords"));
                }
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
                IMPORTED_HANDLERS.with(|h| h.borrow_mut().extend(handlers));
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
                rolespec_validate: args
                    .get("rolespec_validate")
                    .is_none_or(|v| crate::ansible::to_bool(v) != Some(false)),
                handlers_from: args
                    .get("handlers_from")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                apply: match args_node.get("apply") {
                    None => None,
                    Some(n) if matches!(n.value, Yaml::Map(_)) => {
                        Some(Box::new(parse_inherited(n)?))
                    }
                    Some(n) => return Err(n.expected("a mapping of keywords for `apply`")),
                },
                public: args
                    .get("public")
                    .is_some_and(|v| crate::ansible::to_bool(v) == Some(true)),
                allow_duplicates: args
                    .get("allow_duplicates")
                    .is_none_or(|v| crate::ansible::to_bool(v) != Some(false)),
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
            _ => {
                own.action = (written != module).then_some(written);
                TaskKind::Module { module, args }
            }
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

/// `with_<lookup>` for a lookup kk has: a loop keyword, not a module.
pub(super) fn is_with_lookup(key: &str) -> bool {
    key.strip_prefix("with_")
        .is_some_and(crate::template::lookups::is_known)
}

/// `action: "{{ mod }} k=v"`: the templated module name (the first word of ansible-core's
/// split_args, a template kept whole) and the rest of the text.
fn split_templated_action(s: &str) -> (String, String) {
    let words: Vec<String> = crate::ansible::split_args(s.trim())
        .0
        .into_iter()
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .collect();
    match words.split_first() {
        Some((m, rest)) => (m.clone(), rest.join(" ")),
        None => (String::new(), String::new()),
    }
}

/// A templated module name as a task's key (or in `action:`'s mapping form): ansible-core
/// resolves such a key when it loads the task and fails ("couldn't resolve module/action");
/// only `action: "{{ mod }} …"` is templated when the task runs.
fn templated_module(name: &str, span: &Span) -> Error {
    Error::syntax(
        format!(
            "the module name `{}` cannot be templated here: Ansible resolves a task's module key when it loads the task",
            name
        ),
        span,
    )
    .help("write `action: \"{{ mod }} key=value …\"` to choose the module when the task runs, or name the module directly")
}

/// The text of an `!unsafe` string with Jinja syntax (the YAML loader's marker mapping).
fn unsafe_text(n: &Node) -> Option<&str> {
    match &n.value {
        Yaml::Map(entries) if entries.len() == 1 => {
            let (k, v) = &entries[0];
            (k == crate::template::unsafe_text::UNSAFE_KEY)
                .then(|| v.as_str())
                .flatten()
        }
        _ => None,
    }
}
