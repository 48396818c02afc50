//! One task on a set of hosts: conditions, loops, templated arguments, the module
//! call, `changed_when`/`failed_when`/`until`, registration, and what it reports.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{PlayCtx, Runner, Scope};
use crate::connect::Become;
use crate::error::{Error, ErrorKind, Result};
use crate::modules::{self, ModuleContext, ModuleResult};
use crate::project::{value_text, Task, TaskKind};
use crate::report::{Event, Status};
use crate::template::OMIT;
use crate::vars::{VarMap, VarView};

/// What one host's run of a task produced, applied to the run state in host order.
struct HostOutcome {
    host: String,
    delegated: Option<String>,
    status: Status,
    ignored: bool,
    result: Value,
    display: Option<Value>,
    facts: Option<VarMap>,
    set_vars: Option<VarMap>,
    included: Option<VarMap>,
    host_vars: Vec<(String, VarMap)>,
    result_values: Option<VarMap>,
    add_hosts: Vec<Value>,
    group_by: Vec<String>,
    no_log: bool,
}

const CENSORED: &str =
    "the output has been hidden due to the fact that 'no_log: true' was specified for this result";

fn strip_omit(v: Value) -> Option<Value> {
    match v {
        Value::String(s) if s == OMIT => None,
        Value::Object(m) => Some(Value::Object(
            m.into_iter()
                .filter_map(|(k, v)| strip_omit(v).map(|v| (k, v)))
                .collect(),
        )),
        Value::Array(a) => Some(Value::Array(a.into_iter().filter_map(strip_omit).collect())),
        other => Some(other),
    }
}

fn is_true(v: &Value) -> bool {
    crate::modules::args::to_bool(v).unwrap_or(false)
}

impl Runner {
    /// Evaluates a keyword that may be a literal or a template, as a boolean.
    fn flag(&self, v: &Option<Value>, ctx: &minijinja::Value) -> Result<bool> {
        match v {
            None => Ok(false),
            Some(Value::String(s)) if crate::template::is_template(s) => {
                Ok(is_true(&self.templar.render_str(s, ctx)?))
            }
            Some(v) => Ok(is_true(v)),
        }
    }

    pub(super) fn run_tasks_on_hosts(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        t: Task,
        hosts: Vec<String>,
        scope: Scope,
        facts_task: bool,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            self.refresh_play_hosts(&pc);
            let inner = scope.child(&t.attrs);
            let hv = self.hostvars(pc.vars.clone());
            let first_view = self.view(&pc, &inner, &hosts[0], None, &hv);
            let name = match &t.name {
                Some(n) if crate::template::is_template(n) => {
                    match self.templar.render_str(n, &first_view.context()) {
                        Ok(v) => value_text(&v),
                        Err(_) => n.clone(),
                    }
                }
                _ => t.display_name(),
            };
            self.emit(Event::TaskStart {
                play: pc.name.clone(),
                task: name.clone(),
                path: format!("{}:{}", t.span.path().display(), t.span.line),
            });
            let module = match &t.kind {
                TaskKind::Module { module, .. } => module.clone(),
                _ => String::new(),
            };
            let run_once = match self.flag(&inner.attrs.run_once, &first_view.context()) {
                Ok(b) => b || modules::runs_once(&module),
                Err(_) => false,
            };
            let targets = if run_once {
                vec![hosts[0].clone()]
            } else {
                hosts.clone()
            };
            let throttle = match &inner.attrs.throttle {
                Some(v) => v
                    .as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    .unwrap_or(0) as usize,
                None => 0,
            };
            let limit = if throttle > 0 {
                throttle.min(self.opts.forks.max(1))
            } else {
                self.opts.forks.max(1)
            };
            let sem = Arc::new(tokio::sync::Semaphore::new(limit));
            let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let total = targets.len();
            let futs = targets.iter().map(|h| {
                let done = done.clone();
                let (me, pc, t, inner, hv, sem, h) = (
                    self.clone(),
                    pc.clone(),
                    t.clone(),
                    inner.clone(),
                    hv.clone(),
                    sem.clone(),
                    h.clone(),
                );
                async move {
                    let _permit = sem.acquire().await;
                    let o = me.clone().run_on_host(&pc, &t, &inner, &h, &hv).await;
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    me.reporter.progress(n, total);
                    o
                }
            });
            let outcomes = futures::future::join_all(futs).await;
            // Hosts this task failed or found unreachable (not ignored), as Ansible's
            // linear strategy collects them after each task.
            let mut failed_here: Vec<String> = Vec::new();
            let mut unreachable_here: Vec<String> = Vec::new();
            for o in outcomes {
                let applies_to: Vec<String> = if run_once {
                    hosts.clone()
                } else {
                    vec![o.host.clone()]
                };
                if !o.ignored {
                    match o.status {
                        Status::Failed => failed_here.push(o.host.clone()),
                        Status::Unreachable => unreachable_here.push(o.host.clone()),
                        _ => {}
                    }
                }
                self.apply(&pc, &t, &inner, o, &applies_to, &name, facts_task);
            }
            if failed_here.is_empty() && unreachable_here.is_empty() {
                return;
            }
            // any_errors_fatal (and any run_once task, as in Ansible) fails every other host
            // of the batch that was still running: they go to their rescue/always sections
            // if they are in a block that has them, and otherwise leave the play. Unlike
            // Ansible, a host found unreachable does not trigger it: the bundled playbooks
            // go on without such hosts (etcd_scale_down.yaml forgets them in a later play).
            let fatal = !failed_here.is_empty()
                && (run_once
                    || self
                        .flag(&inner.attrs.any_errors_fatal, &first_view.context())
                        .unwrap_or(false));
            if fatal {
                for h in &pc.batch {
                    if failed_here.contains(h) {
                        continue;
                    }
                    self.with_state(h, |s| {
                        if s.failed || (s.unreachable && !unreachable_here.contains(h)) {
                            return;
                        }
                        s.failed = true;
                        s.rescuing = inner.rescuable;
                    });
                }
            }
            // max_fail_percentage: failures a rescue will handle do not count, the batch
            // size includes hosts that failed in earlier plays; exceeding it ends the run.
            if let Some(pct) = pc.play.max_fail_percentage {
                let failed = pc
                    .batch
                    .iter()
                    .filter(|h| {
                        let s = self.state(h);
                        s.failed && !s.rescuing
                    })
                    .count();
                if (failed as f64) / (pc.batch_size as f64) > pct / 100.0 {
                    pc.abort.store(true, Ordering::SeqCst);
                    self.max_fail_break.store(true, Ordering::SeqCst);
                }
            }
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        o: HostOutcome,
        applies_to: &[String],
        task_name: &str,
        facts_task: bool,
    ) {
        let mut result = o.result.clone();
        let changed = result
            .get("changed")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.with_state(&o.host, |s| match o.status {
            Status::Ok => s.counts.ok += 1,
            Status::Changed => {
                s.counts.ok += 1;
                s.counts.changed += 1;
            }
            Status::Skipped => s.counts.skipped += 1,
            Status::Failed if o.ignored => {
                // Ansible counts an ignored failure as ok (and changed, if it changed).
                s.counts.ok += 1;
                s.counts.ignored += 1;
                if changed {
                    s.counts.changed += 1;
                }
            }
            Status::Failed => {
                if inner.rescuable {
                    s.counts.rescued += 1;
                } else {
                    s.counts.failed += 1;
                }
                s.failed = true;
                s.rescuing = inner.rescuable;
            }
            Status::Unreachable if o.ignored => s.counts.skipped += 1,
            Status::Unreachable => {
                s.counts.unreachable += 1;
                s.unreachable = true;
            }
        });
        if o.status == Status::Failed && !o.ignored && inner.rescuable {
            let mut m = VarMap::new();
            m.insert("ansible_failed_task".into(), json!({"name": task_name, "action": match &t.kind { TaskKind::Module { module, .. } => module.clone(), _ => String::new() }}));
            m.insert("ansible_failed_result".into(), result.clone());
            self.set_runtime(&o.host, m);
        }
        let fact_target = |h: &String| -> String {
            match (
                &o.delegated,
                inner.attrs.delegate_facts.as_ref().map(is_true),
            ) {
                (Some(d), Some(true)) => d.clone(),
                _ => h.clone(),
            }
        };
        for h in applies_to {
            if let Some(reg) = &t.own.register {
                let mut m = VarMap::new();
                m.insert(reg.clone(), result.clone());
                self.set_runtime(h, m);
            }
            if let Some(f) = &o.facts {
                let target = fact_target(h);
                self.with_state(&target, |s| {
                    let mut facts = (*s.facts).clone();
                    crate::vars::merge_maps(&mut facts, f);
                    s.facts = Arc::new(facts);
                });
            }
            if let Some(v) = &o.included {
                let target = fact_target(h);
                self.with_state(&target, |s| {
                    let mut inc = (*s.included).clone();
                    inc.extend(v.clone());
                    s.included = Arc::new(inc);
                });
            }
            if let Some(v) = &o.set_vars {
                self.set_runtime(&fact_target(h), v.clone());
            }
            if changed && !t.own.notify.is_empty() && o.status != Status::Failed {
                self.with_state(h, |s| {
                    for n in &t.own.notify {
                        s.notified.insert(n.clone());
                    }
                });
            }
        }
        for (h, vars) in &o.host_vars {
            self.set_runtime(h, vars.clone());
        }
        if let Some(r) = &o.result_values {
            crate::vars::merge_maps(&mut self.results.lock().unwrap(), r);
        }
        if !o.add_hosts.is_empty() || !o.group_by.is_empty() {
            {
                let mut inv = self.inventory.write().unwrap();
                for a in &o.add_hosts {
                    let name = a
                        .get("host_name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let groups: Vec<String> = a
                        .get("groups")
                        .and_then(Value::as_array)
                        .map(|g| g.iter().map(value_text).collect())
                        .unwrap_or_default();
                    let vars = a
                        .get("host_vars")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    if let Err(e) = inv.add_host(&name, &groups, vars) {
                        self.warn(format!("add_host {}: {}", name, e.message));
                    }
                    self.inv_vars.write().unwrap().remove(&name);
                }
                for g in &o.group_by {
                    if let Err(e) = inv.add_to_group(&o.host, g) {
                        self.warn(format!("group_by {}: {}", g, e.message));
                    }
                    self.inv_vars.write().unwrap().remove(&o.host);
                }
            }
            let mut magic = (**pc.magic.read().unwrap()).clone();
            let groups: serde_json::Map<String, Value> = self
                .inventory
                .read()
                .unwrap()
                .groups()
                .into_iter()
                .map(|(k, v)| (k, Value::from(v)))
                .collect();
            magic.insert("groups".into(), Value::Object(groups));
            *pc.magic.write().unwrap() = Arc::new(magic);
        }
        if facts_task && o.status == Status::Ok {
            result = json!({"changed": false, "failed": false, "ansible_facts": "(gathered)"});
        }
        if o.no_log {
            result = json!({"censored": CENSORED, "changed": changed});
        }
        self.emit(Event::HostResult {
            play: pc.name.clone(),
            task: task_name.to_string(),
            host: o.host.clone(),
            delegated_to: o.delegated.clone(),
            status: o.status,
            changed,
            ignored: o.ignored,
            result,
            display: if o.no_log { None } else { o.display },
        });
    }

    fn set_runtime(&self, host: &str, vars: VarMap) {
        self.with_state(host, |s| {
            let mut rt = (*s.runtime).clone();
            for (k, v) in vars {
                rt.insert(k, v);
            }
            s.runtime = Arc::new(rt);
        });
    }

    async fn run_on_host(
        self: Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        host: &str,
        hv: &minijinja::Value,
    ) -> HostOutcome {
        let view = self.view(pc, inner, host, None, hv);
        let ctx = view.context();
        let no_log = self.flag(&inner.attrs.no_log, &ctx).unwrap_or(false);
        let mut outcome = HostOutcome {
            host: host.to_string(),
            delegated: None,
            status: Status::Ok,
            ignored: false,
            result: Value::Null,
            display: None,
            facts: None,
            set_vars: None,
            included: None,
            host_vars: Vec::new(),
            result_values: None,
            add_hosts: Vec::new(),
            group_by: Vec::new(),
            no_log,
        };
        let fail = |mut o: HostOutcome, e: Error| {
            o.status = if e.kind == ErrorKind::Connection {
                Status::Unreachable
            } else {
                Status::Failed
            };
            let mut msg = e.render();
            if let Some(stripped) = msg.strip_prefix("error: ") {
                msg = stripped.trim_end().to_string();
            }
            o.result = json!({"failed": true, "changed": false, "msg": msg});
            if o.status == Status::Unreachable {
                o.result["unreachable"] = Value::Bool(true);
            }
            o
        };
        let ignore_errors = match self.flag(&inner.attrs.ignore_errors, &ctx) {
            Ok(b) => b,
            Err(e) => return fail(outcome, e.at(&t.span)),
        };
        let items = match &t.own.loop_ {
            None => None,
            Some(l) => match self.templar.render_value(l, &ctx) {
                Ok(Value::Array(items)) => Some(if t.own.loop_flatten {
                    items
                        .into_iter()
                        .flat_map(|i| match i {
                            Value::Array(a) => a,
                            other => vec![other],
                        })
                        .collect()
                } else {
                    items
                }),
                Ok(Value::Null) => Some(Vec::new()),
                Ok(other) => {
                    return fail(
                        outcome,
                        Error::new(
                            ErrorKind::Template,
                            format!("loop needs a list, but got {}", other),
                        )
                        .at(&t.span)
                        .help("use `| list`, `| dict2items` or a list literal"),
                    )
                }
                Err(e) => {
                    return fail(
                        outcome,
                        e.at(&t.span)
                            .note(format!("in the loop of task `{}`", t.display_name())),
                    )
                }
            },
        };
        let (status, result, extras) = match items {
            None => self.run_item(pc, t, inner, host, &view).await,
            Some(items) => {
                let lc = t
                    .own
                    .loop_control
                    .as_ref()
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let loop_var = lc
                    .get("loop_var")
                    .and_then(Value::as_str)
                    .unwrap_or("item")
                    .to_string();
                let index_var = lc
                    .get("index_var")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let extended = lc.get("extended").map(is_true).unwrap_or(false);
                let pause = lc.get("pause").and_then(Value::as_f64).unwrap_or(0.0);
                let n = items.len();
                let loop_info_for = |i: usize| {
                    let mut l = json!({
                        "index": i + 1, "index0": i, "revindex": n - i, "revindex0": n - i - 1,
                        "first": i == 0, "last": i + 1 == n, "length": n,
                        "allitems": items.clone(),
                    });
                    if i > 0 {
                        l["previtem"] = items[i - 1].clone();
                    }
                    if let Some(next) = items.get(i + 1) {
                        l["nextitem"] = next.clone();
                    }
                    l
                };
                let mut results = Vec::new();
                let mut any_changed = false;
                let mut any_failed = false;
                let mut all_skipped = true;
                let mut extras = Extras::default();
                // set_fact in a loop: each item sees what the earlier items set.
                let mut item_facts = VarMap::new();
                // command/shell items run several to a round trip (see `run_batch_from`);
                // results of items already run or prepared ahead of their turn.
                let batch = pause <= 0.0 && self.loop_batchable(t, inner);
                let mut ahead: std::collections::HashMap<usize, Ahead> = Default::default();
                // The variables item `i` adds on top of `base` (what earlier items set).
                let item_vars = |i: usize, item: &Value, base: &VarMap| -> VarMap {
                    let mut top = base.clone();
                    top.insert(loop_var.clone(), item.clone());
                    top.insert("ansible_loop_var".into(), Value::from(loop_var.clone()));
                    if let Some(iv) = &index_var {
                        top.insert(iv.clone(), Value::from(i));
                        top.insert("ansible_index_var".into(), Value::from(iv.clone()));
                    }
                    if extended {
                        top.insert("ansible_loop".into(), loop_info_for(i));
                    }
                    top
                };
                // The view an item sees, for items prepared ahead (no set_fact in between:
                // batched modules set no facts).
                let item_view_for = |i: usize, item: &Value| -> Arc<VarView> {
                    view.with_data(Arc::new(item_vars(i, item, &VarMap::new())))
                };
                for (i, item) in items.iter().enumerate() {
                    if i > 0 && pause > 0.0 {
                        tokio::time::sleep(Duration::from_secs_f64(pause)).await;
                    }
                    let loop_info = extended.then(|| loop_info_for(i));
                    let item_view = view.with_data(Arc::new(item_vars(i, item, &item_facts)));
                    let (st, mut r, ex) = match ahead.remove(&i) {
                        Some(Ahead::Done(done)) => done,
                        Some(Ahead::Ready(p)) => self.execute_item(t, &item_view, p).await,
                        None if batch => {
                            let mk = |j: usize| item_view_for(j, &items[j]);
                            self.run_batch_from(
                                pc, t, inner, host, i, n, &item_view, &mk, &mut ahead,
                            )
                            .await
                        }
                        None => self.run_item(pc, t, inner, host, &item_view).await,
                    };
                    if let Some(v) = &ex.set_vars {
                        item_facts.extend(v.clone());
                    }
                    extras.merge(ex);
                    if let Value::Object(m) = &mut r {
                        m.insert(loop_var.clone(), item.clone());
                        m.insert("ansible_loop_var".into(), Value::from(loop_var.clone()));
                        if let Some(iv) = &index_var {
                            m.insert(iv.clone(), Value::from(i));
                            m.insert("ansible_index_var".into(), Value::from(iv.clone()));
                        }
                        if let Some(l) = loop_info {
                            m.insert("ansible_loop".into(), l);
                        }
                    }
                    any_changed |= st == Status::Changed;
                    any_failed |= st == Status::Failed;
                    all_skipped &= st == Status::Skipped;
                    let unreachable = st == Status::Unreachable;
                    results.push(r);
                    if unreachable {
                        return HostOutcome {
                            status: Status::Unreachable,
                            result: json!({"unreachable": true, "results": results, "msg": "host unreachable during loop"}),
                            ..outcome
                        };
                    }
                }
                // Ansible's shape: `failed` only when an item failed; an empty loop is skipped.
                let mut agg = json!({"results": results, "changed": any_changed});
                if n == 0 {
                    agg["skipped"] = Value::Bool(true);
                    agg["skipped_reason"] = Value::from("No items in the list");
                } else {
                    agg["skipped"] = Value::Bool(all_skipped);
                    agg["msg"] = Value::from(if any_failed {
                        "One or more items failed"
                    } else if all_skipped {
                        "All items skipped"
                    } else {
                        "All items completed"
                    });
                }
                if any_failed {
                    agg["failed"] = Value::Bool(true);
                }
                let all_skipped = all_skipped || n == 0;
                let status = if any_failed {
                    Status::Failed
                } else if all_skipped {
                    Status::Skipped
                } else if any_changed {
                    Status::Changed
                } else {
                    Status::Ok
                };
                (status, agg, extras)
            }
        };
        outcome.status = status;
        outcome.result = result;
        outcome.delegated = extras.delegated;
        outcome.facts = extras.facts;
        outcome.set_vars = extras.set_vars;
        outcome.included = extras.included;
        outcome.host_vars = extras.host_vars;
        outcome.result_values = extras.result;
        outcome.add_hosts = extras.add_hosts;
        outcome.group_by = extras.group_by;
        outcome.display = extras.display;
        if status == Status::Failed && ignore_errors {
            outcome.ignored = true;
        }
        if status == Status::Unreachable
            && self
                .flag(&inner.attrs.ignore_unreachable, &ctx)
                .unwrap_or(false)
        {
            outcome.ignored = true;
        }
        outcome
    }

    /// Whether a loop of this task may run its items several to a round trip: a
    /// `command`/`shell` task without `until`, `timeout` or `delegate_to` (per item, the
    /// arguments and check mode decide further, in `run_batch_from`).
    fn loop_batchable(&self, t: &Task, inner: &Scope) -> bool {
        let TaskKind::Module { module, .. } = &t.kind else {
            return false;
        };
        matches!(modules::canonical_name(module), "command" | "shell")
            && t.own.until.is_none()
            && inner.attrs.timeout.is_none()
            && inner.attrs.delegate_to.is_none()
    }

    /// Loop item `first` of a batchable task: prepares it and the items after it (each
    /// with its own `when` and arguments) while they can share one remote script, runs
    /// those in one round trip, and finishes each (`changed_when`, `failed_when`) as if it
    /// had run alone. Returns item `first`'s result; later items' results, and the first
    /// item that could not join (prepared, to run after the batch), go to `ahead`.
    #[allow(clippy::too_many_arguments)]
    async fn run_batch_from(
        self: &Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        host: &str,
        first: usize,
        n: usize,
        first_view: &Arc<VarView>,
        view_for: &(dyn Fn(usize) -> Arc<VarView> + Sync),
        ahead: &mut std::collections::HashMap<usize, Ahead>,
    ) -> ItemResult {
        let joins = |p: &Prepared, lead: Option<&Prepared>| {
            let TaskKind::Module { module, .. } = &t.kind else {
                return false;
            };
            !p.mctx.check_mode
                && p.mctx.timeout.is_none()
                && modules::command::batchable(modules::canonical_name(module), &p.args)
                && lead.is_none_or(|l| l.mctx.become_ == p.mctx.become_ && l.mctx.env == p.mctx.env)
        };
        let p = match self.prepare_item(pc, t, inner, host, first_view).await {
            Ok(p) => p,
            Err(r) => return r,
        };
        if !joins(&p, None) {
            return self.execute_item(t, first_view, p).await;
        }
        let mut group: Vec<(usize, Arc<VarView>, Prepared)> = vec![(first, first_view.clone(), p)];
        for j in first + 1..n {
            let v = view_for(j);
            match self.prepare_item(pc, t, inner, host, &v).await {
                // Skipped by `when`, or failed before running: nothing runs, keep going.
                Err(r) => {
                    ahead.insert(j, Ahead::Done(r));
                }
                Ok(p) if joins(&p, Some(&group[0].2)) => group.push((j, v, p)),
                Ok(p) => {
                    ahead.insert(j, Ahead::Ready(p));
                    break;
                }
            }
        }
        if group.len() == 1 {
            let (_, v, p) = group.pop().expect("one item");
            return self.execute_item(t, &v, p).await;
        }
        let module = match &t.kind {
            TaskKind::Module { module, .. } => modules::canonical_name(module).to_string(),
            _ => String::new(),
        };
        let args: Vec<VarMap> = group.iter().map(|(_, _, p)| p.args.clone()).collect();
        let in_task = || format!("in task `{}`", t.display_name());
        let outs = modules::command::run_batch(&module, &group[0].2.mctx, args).await;
        let mut first_result = None;
        for (k, (j, v, mut p)) in group.into_iter().enumerate() {
            let done = match &outs {
                Err(e) => item_error(e.clone().at(&t.span).note(in_task())),
                Ok(outs) => match &outs[k] {
                    Err(e) => item_error(e.clone().at(&t.span).note(in_task())),
                    Ok(res) => self
                        .finish_item(t, &v, res.clone(), 1, 1, &mut p.extras)
                        .unwrap_or_else(|| {
                            item_error(Error::new(ErrorKind::Runtime, "retry in a batch"))
                        }),
                },
            };
            if j == first {
                first_result = Some(done);
            } else {
                ahead.insert(j, Ahead::Done(done));
            }
        }
        first_result.unwrap_or_else(|| {
            item_error(Error::new(ErrorKind::Runtime, "batch lost its first item"))
        })
    }

    /// Everything before the module runs for one item: `when`, templated arguments, the
    /// structural modules, connection, become, environment; `Err` is the item's final
    /// result (skipped, failed, or done by the executor itself).
    #[allow(clippy::result_large_err)]
    async fn prepare_item(
        self: &Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        host: &str,
        view: &Arc<VarView>,
    ) -> std::result::Result<Prepared, ItemResult> {
        let ctx = view.context();
        let mut extras = Extras::default();
        let err = |e: Error| -> std::result::Result<Prepared, ItemResult> { Err(item_error(e)) };
        // Conditions: inherited and own, all must hold.
        if !inner.attrs.when.is_empty() {
            for cond in &inner.attrs.when {
                match self.templar.eval_condition(cond, &ctx) {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err((
                            Status::Skipped,
                            json!({"changed": false, "skipped": true, "skip_reason": "Conditional result was False", "false_condition": cond}),
                            extras,
                        ));
                    }
                    Err(e) => {
                        return err(e
                            .at(&t.span)
                            .note(format!("in the `when` of task `{}`", t.display_name())))
                    }
                }
            }
        }
        let TaskKind::Module { module, args } = &t.kind else {
            return err(Error::new(ErrorKind::Runtime, "not a module task").at(&t.span));
        };
        // `image` renders `src`/`dest` itself, once per image of `manifests`.
        let mut raw_args = args.clone();
        let per_image: Vec<(String, Value)> =
            if module == "image" && raw_args.contains_key("manifests") {
                ["src", "dest"]
                    .iter()
                    .filter_map(|k| raw_args.remove(*k).map(|v| (k.to_string(), v)))
                    .collect()
            } else {
                Vec::new()
            };
        let mut args = match self.templar.render_value(&Value::Object(raw_args), &ctx) {
            Ok(v) => match strip_omit(v) {
                Some(Value::Object(m)) => m,
                _ => VarMap::new(),
            },
            Err(e) => {
                return err(e
                    .at(&t.span)
                    .note(format!("in the arguments of task `{}`", t.display_name())))
            }
        };
        args.extend(per_image);
        // Structural modules the executor applies itself.
        match module.as_str() {
            "add_host" => {
                let name = args
                    .get("name")
                    .or_else(|| args.get("hostname"))
                    .or_else(|| args.get("host"))
                    .map(value_text);
                let Some(name) = name else {
                    return err(
                        Error::new(ErrorKind::ModuleArgs, "add_host needs `name`").at(&t.span)
                    );
                };
                let groups: Vec<String> = match args
                    .get("groups")
                    .or_else(|| args.get("group"))
                    .or_else(|| args.get("groupname"))
                {
                    Some(Value::Array(a)) => a.iter().map(value_text).collect(),
                    Some(Value::String(s)) => s
                        .split(',')
                        .map(|x| x.trim().to_string())
                        .filter(|x| !x.is_empty())
                        .collect(),
                    _ => Vec::new(),
                };
                let vars: VarMap = args
                    .iter()
                    .filter(|(k, _)| {
                        !matches!(
                            k.as_str(),
                            "name" | "hostname" | "host" | "groups" | "group" | "groupname"
                        )
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let r = json!({"changed": true, "failed": false, "add_host": {"host_name": name, "groups": groups, "host_vars": vars}});
                extras.add_hosts.push(r["add_host"].clone());
                return Err((Status::Changed, r, extras));
            }
            "add_hostvars" => {
                let pattern = match args.get("hosts") {
                    Some(Value::Array(a)) => a.iter().map(value_text).collect::<Vec<_>>().join(":"),
                    Some(v) => value_text(v),
                    None => {
                        return err(Error::new(
                            ErrorKind::ModuleArgs,
                            "add_hostvars needs `hosts` (a host pattern)",
                        )
                        .at(&t.span))
                    }
                };
                let Some(Value::Object(vars)) = args.get("vars") else {
                    return err(Error::new(
                        ErrorKind::ModuleArgs,
                        "add_hostvars needs `vars` (a mapping)",
                    )
                    .at(&t.span));
                };
                if let Some(k) = args.keys().find(|k| *k != "hosts" && *k != "vars") {
                    return err(Error::new(
                        ErrorKind::ModuleArgs,
                        format!("add_hostvars: unknown argument `{}`", k),
                    )
                    .help("valid arguments of `add_hostvars` are: hosts, vars")
                    .at(&t.span));
                }
                let hosts = match self.inventory.read().unwrap().select(&pattern) {
                    Ok(h) => h,
                    Err(e) => return err(e.at(&t.span)),
                };
                for h in &hosts {
                    extras.host_vars.push((h.clone(), vars.clone()));
                }
                return Err((
                    Status::Changed,
                    json!({"changed": true, "failed": false, "hosts": hosts}),
                    extras,
                ));
            }
            "result" => {
                if args.is_empty() {
                    return err(Error::new(
                        ErrorKind::ModuleArgs,
                        "result needs at least one value to report",
                    )
                    .at(&t.span));
                }
                extras.result = Some(args.clone());
                return Err((
                    Status::Ok,
                    json!({"changed": false, "failed": false}),
                    extras,
                ));
            }
            "group_by" => {
                let key = args.get("key").map(value_text).unwrap_or_default();
                if key.is_empty() {
                    return err(
                        Error::new(ErrorKind::ModuleArgs, "group_by needs `key`").at(&t.span)
                    );
                }
                extras.group_by.push(key.clone());
                return Err((
                    Status::Ok,
                    json!({"changed": false, "failed": false, "add_group": key}),
                    extras,
                ));
            }
            _ => {}
        }
        if module == "debug" {
            let wanted = args
                .get("verbosity")
                .and_then(|v| {
                    v.as_u64()
                        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                })
                .unwrap_or(0);
            if wanted > u64::from(self.opts.verbosity) {
                return Err((
                    Status::Skipped,
                    json!({"changed": false, "skipped": true, "skipped_reason": "Verbosity threshold not met."}),
                    extras,
                ));
            }
        }
        let Some(imp) = modules::lookup(module) else {
            return err(
                Error::new(ErrorKind::Syntax, format!("unknown module `{}`", module)).at(&t.span),
            );
        };
        // Where it runs.
        let delegate = match &inner.attrs.delegate_to {
            None => None,
            Some(d) => match self.templar.render_value(d, &ctx) {
                Ok(v) => Some(value_text(&v)),
                Err(e) => return err(e.at(&t.span)),
            },
        };
        let conn_host = delegate.clone().unwrap_or_else(|| host.to_string());
        let conn = if conn_host == host {
            self.connection(host, view)
        } else {
            let hv = self.hostvars(pc.vars.clone());
            let dview = self.view(pc, &Scope::default(), &conn_host, None, &hv);
            self.connection(&conn_host, &dview)
        };
        let conn = match conn {
            Ok(c) => c,
            Err(e) => return err(e),
        };
        extras.delegated = delegate;
        let become_ = match self.flag(&inner.attrs.become_, &ctx) {
            Ok(true) => {
                let user = match &inner.attrs.become_user {
                    Some(u) => match self.templar.render_value(u, &ctx) {
                        Ok(v) => value_text(&v),
                        Err(e) => return err(e.at(&t.span)),
                    },
                    None => "root".into(),
                };
                // The become password, else the login password (KubeKey's connector
                // password serves both); sudo is asked for it only if it wants one.
                let password = [
                    "ansible_become_password",
                    "ansible_become_pass",
                    "ansible_password",
                    "ansible_ssh_pass",
                ]
                .iter()
                .find_map(|k| view.get_json(k).ok().flatten())
                .or_else(|| {
                    view.get_json("connector")
                        .ok()
                        .flatten()
                        .and_then(|c| c.get("password").cloned())
                })
                .filter(|v| !v.is_null())
                .map(|v| value_text(&v));
                Some(Become { user, password })
            }
            Ok(false) => None,
            Err(e) => return err(e.at(&t.span)),
        };
        let mut env = Vec::new();
        for e in &inner.environment {
            match self.templar.render_value(e, &ctx) {
                Ok(Value::Object(m)) => {
                    for (k, v) in m {
                        env.retain(|(ek, _): &(String, String)| *ek != k);
                        env.push((k, value_text(&v)));
                    }
                }
                Ok(Value::Null) => {}
                Ok(other) => {
                    return err(Error::new(
                        ErrorKind::Template,
                        format!("environment must be a mapping, got {}", other),
                    )
                    .at(&t.span))
                }
                Err(e) => return err(e.at(&t.span)),
            }
        }
        let check_mode = match &inner.attrs.check_mode {
            Some(v) => match self.flag(&Some(v.clone()), &ctx) {
                Ok(b) => b,
                Err(e) => return err(e.at(&t.span)),
            },
            None => self.opts.check,
        };
        let timeout = inner
            .attrs
            .timeout
            .as_ref()
            .and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            })
            .filter(|s| *s > 0)
            .map(Duration::from_secs);
        let mut search_dirs: Vec<std::path::PathBuf> = inner
            .roles
            .iter()
            .rev()
            .map(|r| r.role.path.clone())
            .collect();
        search_dirs.push(t.dir.clone());
        search_dirs.push(self.loader.playbook_dir.clone());
        let mctx = ModuleContext {
            host: host.to_string(),
            conn,
            check_mode,
            diff: self.opts.diff,
            become_,
            env,
            timeout,
            templar: self.templar.clone(),
            vars: ctx.clone(),
            search_dirs,
            span: Some(t.span.clone()),
            progress: Some({
                let reporter = self.reporter.clone();
                let host = host.to_string();
                Arc::new(move |text: &str| reporter.status(&host, text))
            }),
        };
        Ok(Prepared {
            args,
            imp,
            mctx,
            extras,
        })
    }

    /// Runs the module once (one loop item, or the task without a loop).
    async fn run_item(
        self: &Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        host: &str,
        view: &Arc<VarView>,
    ) -> ItemResult {
        match self.prepare_item(pc, t, inner, host, view).await {
            Ok(p) => self.execute_item(t, view, p).await,
            Err(r) => r,
        }
    }

    /// Runs a prepared item's module, with `until`/`retries` and `timeout`.
    async fn execute_item(&self, t: &Task, view: &Arc<VarView>, p: Prepared) -> ItemResult {
        let Prepared {
            args,
            imp,
            mctx,
            mut extras,
        } = p;
        let err = item_error;
        let timeout = mctx.timeout;
        let retries = match &t.own.until {
            Some(_) => {
                t.own
                    .retries
                    .as_ref()
                    .and_then(|v| {
                        v.as_u64()
                            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    })
                    // ansible-core 2.19 makes `retries` the total number of attempts.
                    .unwrap_or(3)
                    .max(1)
            }
            None => 1,
        };
        let delay = t
            .own
            .delay
            .as_ref()
            .and_then(|v| {
                v.as_f64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            })
            .unwrap_or(if t.own.until.is_some() { 5.0 } else { 0.0 });
        let mut attempt = 0;
        loop {
            attempt += 1;
            let run = match timeout {
                Some(d) => match tokio::time::timeout(d, imp.run(&mctx, args.clone())).await {
                    Ok(r) => r,
                    Err(_) => Err(Error::new(
                        ErrorKind::Runtime,
                        format!("the task timed out after {} seconds", d.as_secs()),
                    )),
                },
                None => imp.run(&mctx, args.clone()).await,
            };
            let res: ModuleResult = match run {
                Ok(r) => r,
                Err(e) => {
                    return err(e
                        .at(&t.span)
                        .note(format!("in task `{}`", t.display_name())))
                }
            };
            match self.finish_item(t, view, res, attempt, retries, &mut extras) {
                Some(done) => return done,
                None => tokio::time::sleep(Duration::from_secs_f64(delay)).await,
            }
        }
    }

    /// Everything after the module ran for one item: `changed_when`, `failed_when`,
    /// `until` (`None`: run it again), facts and the item's status.
    fn finish_item(
        &self,
        t: &Task,
        view: &Arc<VarView>,
        res: ModuleResult,
        attempt: u64,
        retries: u64,
        extras: &mut Extras,
    ) -> Option<ItemResult> {
        let err = |e: Error| Some(item_error(e));
        let module = match &t.kind {
            TaskKind::Module { module, .. } => module.as_str(),
            _ => "",
        };
        {
            let mut value = res.to_value();
            if self.opts.diff && !res.diffs.is_empty() {
                value["diff"] = Value::Array(res.diffs.iter().map(|d| json!({"before_header": d.before_header, "after_header": d.after_header, "before": d.before, "after": d.after})).collect());
            }
            // changed_when / failed_when / until see the result under the register name.
            let needs_eval = t.own.changed_when.is_some()
                || t.own.failed_when.is_some()
                || t.own.until.is_some();
            if needs_eval {
                let mut top = VarMap::new();
                if let Some(reg) = &t.own.register {
                    top.insert(reg.clone(), value.clone());
                }
                let rv = view.with_data(Arc::new(top));
                let rctx = rv.context();
                if let Some(cw) = &t.own.changed_when {
                    match self.templar.eval_condition(cw, &rctx) {
                        Ok(b) => value["changed"] = Value::Bool(b),
                        Err(e) => return err(e.at(&t.span).note("in `changed_when`")),
                    }
                }
                if let Some(fw) = &t.own.failed_when {
                    match self.templar.eval_condition(fw, &rctx) {
                        Ok(b) => {
                            value["failed"] = Value::Bool(b);
                            value["failed_when_result"] = Value::Bool(b);
                        }
                        Err(e) => return err(e.at(&t.span).note("in `failed_when`")),
                    }
                }
                if let Some(until) = &t.own.until {
                    let done = match self.templar.eval_condition(until, &rctx) {
                        Ok(b) => b,
                        Err(e) => return err(e.at(&t.span).note("in `until`")),
                    };
                    value["attempts"] = Value::from(attempt);
                    if !done {
                        if attempt < retries {
                            return None;
                        }
                        value["failed"] = Value::Bool(true);
                        if value.get("msg").is_none() {
                            value["msg"] = Value::from(format!(
                                "retries exhausted after {} attempts",
                                attempt
                            ));
                        }
                    }
                }
            }
            let failed = value
                .get("failed")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let changed = value
                .get("changed")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let skipped = value
                .get("skipped")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !failed {
                if let Some(Value::Object(f)) = value.get("ansible_facts") {
                    if module == "setup" {
                        extras.facts = Some(f.clone());
                    } else if module == "include_vars" {
                        extras.included = Some(f.clone());
                    } else {
                        extras.set_vars = Some(f.clone());
                    }
                }
            }
            if module == "debug" && !failed {
                let mut d = value.as_object().cloned().unwrap_or_default();
                d.remove("changed");
                d.remove("failed");
                extras.display = Some(Value::Object(d));
            }
            let status = if failed {
                Status::Failed
            } else if skipped {
                Status::Skipped
            } else if changed {
                Status::Changed
            } else {
                Status::Ok
            };
            Some((status, value, std::mem::take(extras)))
        }
    }

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
            if !self.opts.tags.selects(&own.attrs.tags) {
                return;
            }
            // The included tasks inherit the include's keywords except its condition and tags.
            let mut passed = t.attrs.clone();
            passed.when.clear();
            passed.tags.clear();
            let child_scope = scope.child(&passed);
            let hv = self.hostvars(pc.vars.clone());
            self.emit(Event::TaskStart {
                play: pc.name.clone(),
                task: t.display_name(),
                path: format!("{}:{}", t.span.path().display(), t.span.line),
            });
            let mut groups: Vec<(String, Value, Vec<String>)> = Vec::new();
            for h in &hosts {
                let view = self.view(&pc, &own, h, None, &hv);
                let ctx = view.context();
                let items: Vec<Option<Value>> = match &t.own.loop_ {
                    None => vec![None],
                    Some(l) => match self.templar.render_value(l, &ctx) {
                        Ok(Value::Array(a)) => a.into_iter().map(Some).collect(),
                        Ok(other) => {
                            self.include_failed(
                                &pc,
                                &t,
                                h,
                                Error::new(
                                    ErrorKind::Template,
                                    format!("loop needs a list, got {}", other),
                                )
                                .at(&t.span),
                            );
                            continue;
                        }
                        Err(e) => {
                            self.include_failed(&pc, &t, h, e.at(&t.span));
                            continue;
                        }
                    },
                };
                let loop_var = t
                    .own
                    .loop_control
                    .as_ref()
                    .and_then(|lc| lc.get("loop_var"))
                    .and_then(Value::as_str)
                    .unwrap_or("item")
                    .to_string();
                let looped = t.own.loop_.is_some();
                let mut item_results = Vec::new();
                let mut host_failed = false;
                for item in items {
                    let mut top = VarMap::new();
                    if let Some(i) = &item {
                        top.insert(loop_var.clone(), i.clone());
                    }
                    let mut item_result = top.clone();
                    if looped {
                        item_result
                            .insert("ansible_loop_var".into(), Value::from(loop_var.clone()));
                    }
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
                                self.include_failed(&pc, &t, h, e.at(&t.span));
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
                            self.include_failed(&pc, &t, h, e.at(&t.span));
                            host_failed = true;
                            continue;
                        }
                    };
                    item_results.push(Value::Object(item_result));
                    let key = Value::Object(top);
                    match groups
                        .iter_mut()
                        .find(|(f, k, _)| *f == target && *k == key)
                    {
                        Some((_, _, hs)) => hs.push(h.clone()),
                        None => groups.push((target, key, vec![h.clone()])),
                    }
                }
                if !host_failed {
                    self.include_result(&pc, &t, h, looped, item_results);
                }
            }
            for (target, item_vars, group_hosts) in groups {
                let mut s = child_scope.clone();
                if let Value::Object(m) = &item_vars {
                    if !m.is_empty() {
                        s.vars.push(Arc::new(m.clone()));
                    }
                }
                let tasks = match &t.kind {
                    TaskKind::IncludeTasks { role, .. } => {
                        let role = role.clone().or_else(|| s.roles.last().cloned());
                        match self.loader.find_task_file(&target, &t.dir, role.as_ref()) {
                            Some(p) => self.loader.load_task_file(&p, role, &[], Some(&t.span)),
                            None => Err(Error::new(
                                ErrorKind::Io,
                                format!("included task file `{}` not found", target),
                            )
                            .at(&t.span)),
                        }
                    }
                    TaskKind::IncludeRole {
                        tasks_from,
                        vars_from,
                        defaults_from,
                        ..
                    } => {
                        match self.loader.load_role(
                            &target,
                            VarMap::new(),
                            &t.dir,
                            &t.span,
                            defaults_from.as_deref().unwrap_or("main"),
                            vars_from.as_deref().unwrap_or("main"),
                        ) {
                            Ok(scope_role) => {
                                let r = self.loader.role_tasks(
                                    &scope_role,
                                    tasks_from.as_deref().unwrap_or("main"),
                                    &[],
                                    &t.span,
                                );
                                s.roles.push(scope_role);
                                r
                            }
                            Err(e) => Err(e),
                        }
                    }
                    _ => Ok(Vec::new()),
                };
                match tasks {
                    Ok(tasks) => {
                        self.clone()
                            .run_list(pc.clone(), tasks, group_hosts, s)
                            .await
                    }
                    Err(e) => {
                        for h in &group_hosts {
                            self.include_failed(&pc, &t, h, e.clone());
                        }
                    }
                }
            }
        })
    }

    /// Reports what an include did on a host: included (ok) or skipped by its condition.
    fn include_result(&self, pc: &PlayCtx, t: &Task, host: &str, looped: bool, items: Vec<Value>) {
        let skipped_item = |i: &Value| i.get("skipped") == Some(&Value::Bool(true));
        let all_skipped = items.iter().all(skipped_item);
        // Ansible counts a looped include once per item it included.
        let included = if looped {
            items.iter().filter(|i| !skipped_item(i)).count() as u32
        } else {
            1
        };
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
        self.with_state(host, |s| {
            if status == Status::Skipped {
                s.counts.skipped += 1;
            } else {
                s.counts.ok += included;
            }
        });
        self.emit(Event::HostResult {
            play: pc.name.clone(),
            task: t.display_name(),
            host: host.to_string(),
            delegated_to: None,
            status,
            changed: false,
            ignored: false,
            result,
            display: None,
        });
    }

    fn include_failed(&self, pc: &PlayCtx, t: &Task, host: &str, e: Error) {
        let msg = e.render();
        self.with_state(host, |s| {
            s.counts.failed += 1;
            s.failed = true;
        });
        self.emit(Event::HostResult {
            play: pc.name.clone(),
            task: t.display_name(),
            host: host.to_string(),
            delegated_to: None,
            status: Status::Failed,
            changed: false,
            ignored: false,
            result: json!({"failed": true, "msg": msg.strip_prefix("error: ").unwrap_or(&msg).trim_end()}),
            display: None,
        });
    }
}

/// One item's status, result and side effects.
type ItemResult = (Status, Value, Extras);

/// What [`Runner::prepare_item`] hands to the module run.
struct Prepared {
    /// Templated module arguments.
    args: VarMap,
    /// The module.
    imp: &'static dyn modules::Module,
    /// Where and how it runs.
    mctx: ModuleContext,
    /// Side effects decided before the run (`delegated`).
    extras: Extras,
}

/// A loop item handled ahead of its turn by a batch (few live at once; size is no concern).
#[allow(clippy::large_enum_variant)]
enum Ahead {
    /// Its final result.
    Done(ItemResult),
    /// Prepared, to run when its turn comes.
    Ready(Prepared),
}

/// The result of an item that failed with `e` before or while its module ran.
fn item_error(e: Error) -> ItemResult {
    let status = if e.kind == ErrorKind::Connection {
        Status::Unreachable
    } else {
        Status::Failed
    };
    let msg = e.render();
    let msg = msg
        .strip_prefix("error: ")
        .unwrap_or(&msg)
        .trim_end()
        .to_string();
    let mut r = json!({"failed": true, "changed": false, "msg": msg});
    if status == Status::Unreachable {
        r["unreachable"] = Value::Bool(true);
    }
    (status, r, Extras::default())
}

/// Side effects of a module run besides its result.
#[derive(Default)]
struct Extras {
    /// `add_hostvars`: variables for other hosts.
    host_vars: Vec<(String, VarMap)>,
    /// `result`: values reported at the end of the run.
    result: Option<VarMap>,
    delegated: Option<String>,
    facts: Option<VarMap>,
    included: Option<VarMap>,
    set_vars: Option<VarMap>,
    add_hosts: Vec<Value>,
    group_by: Vec<String>,
    display: Option<Value>,
}

impl Extras {
    fn merge(&mut self, o: Extras) {
        self.delegated = o.delegated.or(self.delegated.take());
        if let Some(f) = o.facts {
            let mut cur = self.facts.take().unwrap_or_default();
            crate::vars::merge_maps(&mut cur, &f);
            self.facts = Some(cur);
        }
        if let Some(v) = o.included {
            let mut cur = self.included.take().unwrap_or_default();
            cur.extend(v);
            self.included = Some(cur);
        }
        if let Some(v) = o.set_vars {
            let mut cur = self.set_vars.take().unwrap_or_default();
            cur.extend(v);
            self.set_vars = Some(cur);
        }
        self.add_hosts.extend(o.add_hosts);
        self.host_vars.extend(o.host_vars);
        if let Some(r) = o.result {
            let mut cur = self.result.take().unwrap_or_default();
            crate::vars::merge_maps(&mut cur, &r);
            self.result = Some(cur);
        }
        self.group_by.extend(o.group_by);
    }
}
