//! `include_tasks` and `include_role`: decided per host (condition, loop, the file or
//! role named), then the included tasks run for each group of hosts that included the
//! same thing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{PlayCtx, Runner, Scope};
use crate::ansible::value_text;
use crate::error::{Error, ErrorKind};
use crate::project::{Task, TaskKind};
use crate::report::{Event, Status};
use crate::vars::VarMap;

/// include_role's `tasks_from`, `vars_from`, `defaults_from`, `handlers_from`, rendered.
type Froms = [Option<String>; 4];

/// One include on the way to a point of the task tree: what it included and whether it
/// could have stopped (a condition, a loop, a templated name).
#[derive(Debug, Clone)]
pub(super) struct Included {
    key: PathBuf,
    label: String,
    conditional: bool,
}

/// Enters an included file or role (`key`, named `label`) from scope `s`, recording it in
/// the scope's chain of includes. Refuses, at the include, an include that closes a cycle
/// none of whose includes has a condition (it would never stop: Ansible recurses until
/// Python's recursion limit), and one more level than [`crate::depth::MAX_NESTING`]
/// (`depth`), naming the cycle the includes went round when they did.
fn enter(
    s: &mut Scope,
    key: &Path,
    label: &str,
    conditional: bool,
    depth: Result<usize, Error>,
    t: &Task,
) -> Result<usize, Error> {
    let key = key.canonicalize().unwrap_or_else(|_| key.to_path_buf());
    let cycle = s.includes.iter().rposition(|f| f.key == key).map(|i| {
        let chain = s.includes[i..].iter().map(|f| f.label.as_str());
        let text = crate::graph::cycle_text(chain.chain([label]));
        let endless = !conditional && s.includes[i + 1..].iter().all(|f| !f.conditional);
        (text, endless)
    });
    let depth = match (depth, &cycle) {
        (_, Some((text, true))) => {
            return Err(Error::syntax(format!("include cycle: {}", text), &t.span)
                .with_code("kk::include::cycle")
                .help("the includes repeat without a `when:`, so they would never stop; add a condition that ends the recursion, or remove the include"))
        }
        (Err(e), Some((text, false))) => {
            return Err(e.note(format!("the includes went round the cycle {}", text)))
        }
        (d, _) => d?,
    };
    let mut chain = (*s.includes).clone();
    chain.push(Included {
        key,
        label: label.to_string(),
        conditional,
    });
    s.includes = Arc::new(chain);
    s.depth = depth;
    Ok(depth)
}

impl Runner {
    /// `include_tasks` / `include_role`: decided per host, then run for each group of
    /// hosts that included the same thing.
    pub(super) fn run_include(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        t: Task,
        hosts: Vec<String>,
        scope: Scope,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let own = scope.child(&t.attrs);
            if !own.selects(&self.opts.tags) {
                return;
            }
            // The included tasks inherit the include's keywords except its condition and tags.
            let mut passed = t.attrs.clone();
            passed.when.clear();
            passed.tags.clear();
            let mut child_scope = scope.child(&passed);
            child_scope.notify(&t.own);
            let hv = self.hostvars(pc.vars.clone());
            self.emit(Event::TaskStart {
                play: pc.name.clone(),
                task: t.display_name(),
                path: format!("{}:{}", t.span.path().display(), t.span.line),
            });
            let mut groups: Vec<(String, Value, Vec<String>, Froms)> = Vec::new();
            // Each host's result of the include, for a failure to load what it included.
            let mut shown: Vec<(String, Value)> = Vec::new();
            for h in &hosts {
                let view = self.view(&pc, &own, h, None, &hv);
                let ctx = view.context();
                // A failure to decide the include (its loop, condition or name) is the
                // task's own, which ignore_errors ignores (a value that does not resolve
                // means false here).
                let ignored = self.flag(&own.attrs.ignore_errors, &ctx).unwrap_or(false);
                let (items, looped): (Vec<Value>, bool) =
                    match super::loop_items::loop_items(&self.templar, &t, &ctx) {
                        None => (vec![Value::Null], false),
                        Some(Ok(items)) => (items, true),
                        Some(Err(e)) => {
                            self.include_failed(&pc, &t, h, e, ignored);
                            continue;
                        }
                    };
                let lc = &t.own.loop_control;
                let resolved = (|| -> crate::error::Result<_> {
                    Ok((
                        self.keyword(&lc.loop_var, &ctx)?
                            .unwrap_or_else(|| "item".to_string()),
                        self.keyword(&lc.index_var, &ctx)?,
                        self.flag(&lc.extended, &ctx)?,
                        self.keyword(&lc.extended_allitems, &ctx)?.unwrap_or(true),
                    ))
                })();
                let (loop_var, index_var, extended, allitems) = match resolved {
                    Ok(r) => r,
                    Err(e) => {
                        self.include_failed(&pc, &t, h, e.at(&t.span), ignored);
                        continue;
                    }
                };
                let mut item_results = Vec::new();
                let mut host_failed = false;
                for (i, item) in items.iter().enumerate() {
                    // What Ansible's process_include_results gives the included tasks.
                    let mut top = VarMap::new();
                    if looped {
                        top.insert(loop_var.clone(), item.clone());
                        top.insert("ansible_loop_var".into(), Value::from(loop_var.clone()));
                        if let Some(iv) = &index_var {
                            top.insert(iv.clone(), Value::from(i));
                            top.insert("ansible_index_var".into(), Value::from(iv.clone()));
                        }
                        if extended {
                            top.insert(
                                "ansible_loop".into(),
                                super::loop_items::loop_info(&items, i, allitems),
                            );
                        }
                    }
                    let mut item_result = top.clone();
                    let iview = self.view(&pc, &own, h, Some(Arc::new(top.clone())), &hv);
                    let ictx = iview.context();
                    let mut ok = true;
                    // As for every task: the first false condition decides, the later
                    // ones (the include's own after its role's) are not evaluated.
                    for cond in &own.attrs.when {
                        match self.templar.eval_condition(cond, &ictx) {
                            Ok(true) => {}
                            Ok(false) => {
                                ok = false;
                                break;
                            }
                            Err(e) => {
                                self.include_failed(&pc, &t, h, e.at(&t.span), ignored);
                                ok = false;
                                host_failed = true;
                            }
                        }
                    }
                    if !ok {
                        item_result.insert("skipped".into(), Value::Bool(true));
                        item_results.push(Value::Object(item_result));
                        continue;
                    }
                    let target = match &t.kind {
                        TaskKind::IncludeTasks { file, .. } => {
                            self.templar.render_value(file, &ictx)
                        }
                        TaskKind::IncludeRole { name, .. } => {
                            self.templar.render_value(name, &ictx)
                        }
                        _ => Ok(Value::Null),
                    };
                    let target = match target {
                        Ok(v) => value_text(&v),
                        Err(e) => {
                            self.include_failed(&pc, &t, h, e.at(&t.span), ignored);
                            host_failed = true;
                            continue;
                        }
                    };
                    // include_role's *_from names are templated too.
                    let froms = match self.role_froms(&t, &ictx) {
                        Ok(f) => f,
                        Err(e) => {
                            self.include_failed(&pc, &t, h, e.at(&t.span), ignored);
                            host_failed = true;
                            continue;
                        }
                    };
                    item_results.push(Value::Object(item_result));
                    let key = Value::Object(top);
                    match groups
                        .iter_mut()
                        .find(|(f, k, _, fr)| *f == target && *k == key && *fr == froms)
                    {
                        Some((_, _, hs, _)) => hs.push(h.clone()),
                        None => groups.push((target, key, vec![h.clone()], froms)),
                    }
                }
                if !host_failed {
                    let r = self.include_result(&pc, &t, h, looped, item_results);
                    shown.push((h.clone(), r));
                }
            }
            // An include that repeats on every lap cannot stop its cycle; one with a
            // condition, a loop or a templated name may, up to the nesting limit.
            let conditional = !own.attrs.when.is_empty()
                || t.own.loop_.is_some()
                || match &t.kind {
                    TaskKind::IncludeTasks { file: v, .. }
                    | TaskKind::IncludeRole { name: v, .. } => {
                        v.as_str().is_none_or(crate::template::is_template)
                    }
                    _ => false,
                };
            // Ansible loads everything included before the hosts run any of it.
            let mut loaded = Vec::new();
            for (target, item_vars, mut group_hosts, froms) in groups {
                let included_by = group_hosts.clone();
                let [tasks_from, vars_from, defaults_from, handlers_from] = &froms;
                let mut s = child_scope.clone();
                let mut done_key = None;
                if let Value::Object(m) = &item_vars {
                    if !m.is_empty() {
                        s.vars.push(Arc::new(m.clone()));
                    }
                }
                let depth = crate::depth::deeper(s.depth, &t.span);
                let tasks = match &t.kind {
                    TaskKind::IncludeTasks { role, .. } => {
                        let role = role.clone().or_else(|| s.roles.last().cloned());
                        match self.loader.find_task_file(&target, &t.dir, role.as_ref()) {
                            Some(p) => {
                                enter(&mut s, &p, &target, conditional, depth, &t).and_then(|d| {
                                    self.loader.load_task_file(&p, role, &[], d, Some(&t.span))
                                })
                            }
                            None => Err(Error::new(
                                ErrorKind::Io,
                                format!("included task file `{}` not found", target),
                            )
                            .at(&t.span)),
                        }
                    }
                    TaskKind::IncludeRole {
                        rolespec_validate,
                        apply,
                        public,
                        allow_duplicates,
                        ..
                    } => {
                        // The include's vars are include params to its tasks (ansible-core's
                        // precedence: above task, block and `apply` vars, and set_fact).
                        match self.loader.load_role(
                            &target,
                            (*t.attrs.vars).clone(),
                            &t.dir,
                            &t.span,
                            defaults_from.as_deref().unwrap_or("main"),
                            vars_from.as_deref().unwrap_or("main"),
                        ) {
                            Ok(scope_role) => {
                                let from = tasks_from.as_deref().unwrap_or("main");
                                let key = scope_role.role.path.join("tasks").join(from);
                                let r = enter(&mut s, &key, &target, conditional, depth, &t)
                                    .and_then(|d| {
                                        let validate = rolespec_validate.then_some(&pc.play.span);
                                        self.loader.included_role(
                                            &scope_role,
                                            from,
                                            d,
                                            &t.span,
                                            validate,
                                            handlers_from.as_deref().unwrap_or("main"),
                                        )
                                    })
                                    .map(|loaded| {
                                        let (tasks, handlers) = (loaded.tasks, loaded.handlers);
                                        for d in &loaded.dependencies {
                                            if !s
                                                .role_dependencies
                                                .iter()
                                                .any(|x| Arc::ptr_eq(x, d))
                                            {
                                                s.role_dependencies.push(d.clone());
                                            }
                                        }
                                        self.add_included_handlers(
                                            &pc,
                                            &scope_role,
                                            handlers_from.as_deref(),
                                            handlers,
                                        );
                                        pc.note_included_role(
                                            &scope_role,
                                            &tasks,
                                            *public,
                                            &loaded.dependencies,
                                        );
                                        // ansible-core's role identity: its files, parameters and vars.
                                        let key = format!(
                                            "{}|{:?}|{:?}|{:?}|{:?}|{}|{}",
                                            scope_role.role.path.display(),
                                            tasks_from,
                                            vars_from,
                                            defaults_from,
                                            handlers_from,
                                            Value::Object((*scope_role.params).clone()),
                                            Value::Object((*t.attrs.vars).clone()),
                                        );
                                        if !*allow_duplicates {
                                            let done = pc.roles_done.lock().unwrap();
                                            group_hosts.retain(|h| {
                                                !done.contains(&(h.clone(), key.clone()))
                                            });
                                        }
                                        done_key = Some(key);
                                        match apply {
                                            // `apply`: a block with those keywords around the role's tasks.
                                            Some(a) => vec![Task {
                                                name: None,
                                                kind: TaskKind::Block {
                                                    block: tasks,
                                                    rescue: Vec::new(),
                                                    always: Vec::new(),
                                                    role: None,
                                                },
                                                attrs: (**a).clone(),
                                                own: Default::default(),
                                                span: t.span.clone(),
                                                dir: t.dir.clone(),
                                            }],
                                            None => tasks,
                                        }
                                    });
                                s.roles.push(scope_role);
                                r
                            }
                            Err(e) => Err(e),
                        }
                    }
                    _ => Ok(Vec::new()),
                };
                // Roles the included file imported bring their handlers too.
                let imported = crate::project::take_imported_handlers();
                if !imported.is_empty() {
                    pc.included_handlers.write().unwrap().extend(imported);
                }
                // A file that does not parse stops the run, as Ansible's parser errors do.
                if let Err(e) = &tasks {
                    if stops_run(e) {
                        pc.fatal.lock().unwrap().get_or_insert(e.clone());
                        pc.abort.store(true, std::sync::atomic::Ordering::SeqCst);
                        return;
                    }
                }
                let tasks = tasks.and_then(|ts| {
                    crate::modules::validate::check_tasks(&ts)?;
                    crate::project::check_notify(&ts, &pc.handlers())?;
                    Ok(ts)
                });
                loaded.push((included_by, group_hosts, s, done_key, tasks));
            }
            // What could not be loaded fails the hosts that included it (even under
            // ignore_errors), before anything included runs; what could counts as ok.
            for (included_by, _, _, _, tasks) in &loaded {
                for h in included_by {
                    match tasks {
                        Ok(_) => self.with_state(h, |s| s.counts.ok += 1),
                        Err(e) => {
                            let shown = shown.iter().find(|(n, _)| n == h).map(|(_, r)| r);
                            self.load_failed(&pc, &t, h, e, shown);
                        }
                    }
                }
            }
            for (_, group_hosts, s, done_key, tasks) in loaded {
                let Ok(tasks) = tasks else { continue };
                self.clone()
                    .run_list(pc.clone(), tasks, group_hosts.clone(), s)
                    .await;
                if let Some(key) = done_key {
                    let ran = self.active(&pc, &group_hosts);
                    let mut done = pc.roles_done.lock().unwrap();
                    done.extend(ran.into_iter().map(|h| (h, key.clone())));
                }
            }
        })
    }

    /// include_role's `tasks_from`, `vars_from`, `defaults_from` and `handlers_from`,
    /// rendered with the include's variables (ansible-core templates them).
    fn role_froms(&self, t: &Task, ctx: &minijinja::Value) -> crate::error::Result<Froms> {
        let TaskKind::IncludeRole {
            tasks_from,
            vars_from,
            defaults_from,
            handlers_from,
            ..
        } = &t.kind
        else {
            return Ok(Default::default());
        };
        let render = |f: &Option<String>| -> crate::error::Result<Option<String>> {
            match f {
                Some(s) if crate::template::is_template(s) => Ok(Some(value_text(
                    &self.templar.render_value(&Value::String(s.clone()), ctx)?,
                ))),
                other => Ok(other.clone()),
            }
        };
        Ok([
            render(tasks_from)?,
            render(vars_from)?,
            render(defaults_from)?,
            render(handlers_from)?,
        ])
    }

    /// Adds an included role's handlers to the play's, once per role and handlers file.
    fn add_included_handlers(
        &self,
        pc: &PlayCtx,
        role: &crate::project::RoleScope,
        from: Option<&str>,
        handlers: Vec<Task>,
    ) {
        let key = (role.role.path.clone(), from.unwrap_or("main").to_string());
        if !pc.included_handler_files.lock().unwrap().insert(key) {
            return;
        }
        pc.included_handlers.write().unwrap().extend(handlers);
    }

    /// Reports what an include did on a host: included (ok) or skipped by its condition;
    /// returns the result. A skip is counted here; an inclusion once what it included has
    /// loaded (once per item, as Ansible counts it).
    fn include_result(
        &self,
        pc: &PlayCtx,
        t: &Task,
        host: &str,
        looped: bool,
        items: Vec<Value>,
    ) -> Value {
        let skipped_item = |i: &Value| i.get("skipped") == Some(&Value::Bool(true));
        let all_skipped = items.iter().all(skipped_item);
        let (status, result) = if looped {
            let mut r = json!({"changed": false, "skipped": all_skipped && !items.is_empty(), "results": items});
            if r["results"].as_array().is_some_and(|a| a.is_empty()) {
                r["skipped"] = Value::Bool(true);
                r["skipped_reason"] = Value::from("No items in the list");
            } else {
                r["msg"] = Value::from(if all_skipped {
                    "All items skipped"
                } else {
                    "All items completed"
                });
            }
            (
                if r["skipped"] == Value::Bool(true) {
                    Status::Skipped
                } else {
                    Status::Ok
                },
                r,
            )
        } else if all_skipped {
            (
                Status::Skipped,
                json!({"changed": false, "skipped": true, "skip_reason": "Conditional result was False"}),
            )
        } else {
            (Status::Ok, json!({"changed": false}))
        };
        if status == Status::Skipped {
            self.with_state(host, |s| s.counts.skipped += 1);
        }
        self.emit(Event::HostResult {
            play: pc.name.clone(),
            task: t.display_name(),
            host: host.to_string(),
            delegated_to: None,
            status,
            changed: false,
            ignored: false,
            result: result.clone(),
            display: None,
        });
        result
    }

    /// A host whose included file or role could not be loaded: it fails (ignore_errors
    /// does not apply), with the include's result marked failed and the `reason`, as
    /// Ansible reports it; the output shows the error.
    fn load_failed(&self, pc: &PlayCtx, t: &Task, host: &str, e: &Error, shown: Option<&Value>) {
        let mut result = shown.cloned().unwrap_or_else(|| json!({"changed": false}));
        result["failed"] = Value::Bool(true);
        result["reason"] = Value::from(e.result_message());
        let mut display = result.clone();
        display["msg"] = Value::from(e.result_message());
        self.include_failure(pc, t, host, false, result, Some(display));
    }

    /// A host on which the include failed before anything was included; `ignored`
    /// under ignore_errors (counted ok and ignored, as Ansible counts it).
    fn include_failed(&self, pc: &PlayCtx, t: &Task, host: &str, e: Error, ignored: bool) {
        let result = json!({"failed": true, "msg": e.result_message()});
        self.include_failure(pc, t, host, ignored, result, None);
    }

    /// Counts a failed include on `host` and reports its result.
    fn include_failure(
        &self,
        pc: &PlayCtx,
        t: &Task,
        host: &str,
        ignored: bool,
        result: Value,
        display: Option<Value>,
    ) {
        self.with_state(host, |s| {
            if ignored {
                s.counts.ok += 1;
                s.counts.ignored += 1;
            } else {
                s.counts.failed += 1;
                s.failed = true;
            }
        });
        self.emit(Event::HostResult {
            play: pc.name.clone(),
            task: t.display_name(),
            host: host.to_string(),
            delegated_to: None,
            status: Status::Failed,
            changed: false,
            ignored,
            result,
            display,
        });
    }
}

/// Whether an include's load error stops the run (a file that does not parse, a task in
/// it that is not valid) rather than failing the hosts: Ansible fails them only for a
/// missing task file, a file that is not a list of tasks and a role it cannot find (kk
/// also for an include cycle and too deep a nesting).
fn stops_run(e: &Error) -> bool {
    matches!(
        e.kind,
        ErrorKind::Yaml | ErrorKind::Syntax | ErrorKind::Input
    ) && !matches!(
        e.code,
        Some(
            "kk::include::not_a_list"
                | "kk::role::not_found"
                | "kk::include::cycle"
                | "kk::nesting"
        )
    )
}
