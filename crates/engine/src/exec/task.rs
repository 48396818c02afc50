//! One task on a set of hosts: who runs it (run-once, throttle, the run's forks), and
//! applying each host's outcome to the run state in host order: counts, registration,
//! the modules' typed effects, notifications, and the event that reports it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::item::Extras;
use super::{PlayCtx, Runner, Scope};
use crate::error::{Error, ErrorKind, Result};
use crate::modules;
use crate::project::{value_text, Keyword, KeywordValue, Task, TaskKind};
use crate::report::{Event, Status};
use crate::vars::VarMap;

/// What one host's run of a task produced, applied to the run state in host order.
pub(super) struct HostOutcome {
    pub(super) host: String,
    pub(super) status: Status,
    pub(super) ignored: bool,
    pub(super) result: Value,
    /// Where it ran and what the modules' effects ask for.
    pub(super) extras: Extras,
    pub(super) no_log: bool,
}

const CENSORED: &str =
    "the output has been hidden due to the fact that 'no_log: true' was specified for this result";

impl HostOutcome {
    /// A host's outcome before the task ran: ok, no result yet.
    pub(super) fn new(host: &str, no_log: bool) -> HostOutcome {
        HostOutcome {
            host: host.to_string(),
            status: Status::Ok,
            ignored: false,
            result: Value::Null,
            extras: Extras::default(),
            no_log,
        }
    }

    /// The outcome of a task that failed with `e` before its module ran (or could not
    /// reach the host).
    pub(super) fn fail(mut self, e: Error) -> HostOutcome {
        self.status = if e.kind == ErrorKind::Connection {
            Status::Unreachable
        } else {
            Status::Failed
        };
        self.result = json!({"failed": true, "changed": false, "msg": e.result_message()});
        if self.status == Status::Unreachable {
            self.result["unreachable"] = Value::Bool(true);
        }
        self
    }
}

/// The hosts one task result is given to: its registered result and facts (`vars`), and
/// its handler notifications (`notify`).
#[derive(Clone, Copy)]
pub(super) struct Targets<'a> {
    vars: &'a [String],
    notify: &'a [String],
}

impl Runner {
    /// A typed keyword's value for one host (`None`: not set, or set to `omit`).
    pub(super) fn keyword<T: KeywordValue>(
        &self,
        k: &Option<Keyword<T>>,
        ctx: &minijinja::Value,
    ) -> Result<Option<T>> {
        match k {
            None => Ok(None),
            Some(k) => k.resolve(&self.templar, ctx),
        }
    }

    /// A boolean keyword's value for one host (false when not set).
    pub(super) fn flag(&self, k: &Option<Keyword<bool>>, ctx: &minijinja::Value) -> Result<bool> {
        Ok(self.keyword(k, ctx)?.unwrap_or(false))
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
            let mut t = t;
            if let (true, Some(n)) = (t.own.notify.is_empty(), &scope.notify) {
                t.own.notify = n.0.clone();
                t.own.notify_span = n.1.clone();
            }
            let inner = scope.child(&t.attrs);
            let hv = self.hostvars(pc.vars.clone());
            let first_view = self.view(&pc, &inner, &hosts[0], None, &hv);
            let name = match &t.name {
                Some(n) if crate::template::is_template(n) && !t.own.raw_name => {
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
            // `run_once` and `throttle` decide who runs the task, so they are read once,
            // with the first host's variables; a wrong value fails the task on every host.
            let first_ctx = first_view.context();
            let mut task_error: Option<Error> = None;
            let run_once = match self.flag(&inner.attrs.run_once, &first_ctx) {
                Ok(b) => b || modules::runs_once(&module),
                Err(e) => {
                    task_error = Some(e.at(&t.span));
                    false
                }
            };
            let targets = if run_once {
                vec![hosts[0].clone()]
            } else {
                hosts.clone()
            };
            let throttle = match self.keyword(&inner.attrs.throttle, &first_ctx) {
                Ok(n) => usize::try_from(n.unwrap_or(0)).unwrap_or(usize::MAX),
                Err(e) => {
                    task_error.get_or_insert(e.at(&t.span));
                    0
                }
            };
            // Read up front with the same variables: a value that does not resolve fails the
            // task rather than silently meaning false.
            let any_errors_fatal = match self.flag(&inner.attrs.any_errors_fatal, &first_ctx) {
                Ok(b) => b,
                Err(e) => {
                    task_error.get_or_insert(e.at(&t.span));
                    false
                }
            };
            // `throttle` limits this task; `--forks` (the run's semaphore) every task at once.
            let throttle = (throttle > 0 && throttle < self.opts.forks.max(1))
                .then(|| Arc::new(tokio::sync::Semaphore::new(throttle)));
            let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let total = targets.len();
            let futs = targets.iter().map(|h| {
                let done = done.clone();
                let task_error = task_error.clone();
                let (me, pc, t, inner, hv, throttle, h) = (
                    self.clone(),
                    pc.clone(),
                    t.clone(),
                    inner.clone(),
                    hv.clone(),
                    throttle.clone(),
                    h.clone(),
                );
                async move {
                    if let Some(e) = task_error {
                        return HostOutcome::new(&h, false).fail(e);
                    }
                    let _throttled = match &throttle {
                        Some(s) => Some(s.acquire().await),
                        None => None,
                    };
                    let _fork = me.forks.acquire().await;
                    let mut o = me.clone().run_on_host(&pc, &t, &inner, &h, &hv).await;
                    // Gathering Facts shows only "(gathered)": the facts themselves wait for
                    // the other hosts once (in the outcome's effects), not twice.
                    if facts_task && o.status == Status::Ok {
                        o.result = gathered_result();
                    }
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    me.reporter.progress(n, total);
                    o
                }
            });
            let outcomes = futures::future::join_all(futs).await;
            // The views of this task hold each host's variable maps: dropped before the
            // outcomes are applied, so that registering updates those maps in place.
            drop((first_ctx, first_view, hv));
            // Hosts this task failed or found unreachable (not ignored), as Ansible's
            // linear strategy collects them after each task.
            let mut failed_here: Vec<String> = Vec::new();
            let mut unreachable_here: Vec<String> = Vec::new();
            // ansible-core gives a run_once task's registered result and facts to every
            // host of the batch not unreachable (StrategyBase.get_task_hosts), also to those
            // that did not come to the task (an include_tasks that only some hosts ran);
            // its notifications stay with the hosts that came to it.
            let batch: Vec<String> = if run_once {
                let mut b: Vec<String> = pc
                    .batch
                    .iter()
                    .filter(|h| !hosts.contains(h) && !self.state(h).unreachable)
                    .cloned()
                    .collect();
                b.splice(0..0, hosts.iter().cloned());
                b
            } else {
                Vec::new()
            };
            for o in outcomes {
                let own = [o.host.clone()];
                let applies_to = if run_once {
                    Targets {
                        vars: &batch,
                        notify: &hosts,
                    }
                } else {
                    Targets {
                        vars: &own,
                        notify: &own,
                    }
                };
                if !o.ignored {
                    match o.status {
                        Status::Failed => failed_here.push(o.host.clone()),
                        Status::Unreachable => unreachable_here.push(o.host.clone()),
                        _ => {}
                    }
                }
                self.apply(&pc, &t, &inner, o, applies_to, &name, facts_task);
            }
            if failed_here.is_empty() && unreachable_here.is_empty() {
                return;
            }
            // any_errors_fatal (and any run_once task, as in Ansible) fails every other host
            // of the batch that was still running: they go to their rescue/always sections
            // if they are in a block that has them, and otherwise leave the play. Unlike
            // Ansible, a host found unreachable does not trigger it: the bundled playbooks
            // go on without such hosts (etcd_scale_down.yaml forgets them in a later play).
            let fatal = !failed_here.is_empty() && (run_once || any_errors_fatal);
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
                        s.failed_twice = run_once;
                    });
                }
            }
            // max_fail_percentage: failures a rescue will handle do not count, the batch
            // size includes hosts that failed in earlier plays; exceeding it ends the run.
            if let Some(pct) = pc.kw.max_fail_percentage {
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
        self: &Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        o: HostOutcome,
        applies_to: Targets<'_>,
        task_name: &str,
        facts_task: bool,
    ) {
        let mut o = o;
        self.check_rendered_notify(pc, t, inner, &mut o);
        let mut result = std::mem::take(&mut o.result);
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
        // ansible-core's `gathering: smart` counts a host as gathered only after the
        // gather_facts action (the implicit task or a `gather_facts` task), not `setup`.
        let gathers = facts_task
            || matches!(&t.kind, TaskKind::Module { module, .. }
                if modules::canonical_name(module) == "gather_facts");
        if gathers && o.extras.facts.is_some() {
            let on = o
                .extras
                .delegated
                .as_deref()
                .filter(|_| o.extras.delegate_facts);
            self.with_state(on.unwrap_or(&o.host), |s| s.gathered = true);
        }
        if changed || o.status == Status::Failed {
            let on = o.extras.delegated.as_deref().unwrap_or(&o.host);
            self.with_state(on, |s| s.changes += 1);
        }
        let fact_target = |h: &String| -> String {
            match &o.extras.delegated {
                Some(d) if o.extras.delegate_facts => d.clone(),
                _ => h.clone(),
            }
        };
        for (i, h) in applies_to.vars.iter().enumerate() {
            if let Some(reg) = &t.own.register {
                let mut m = VarMap::new();
                m.insert(reg.clone(), result.clone());
                self.set_runtime(h, m);
            }
            if o.extras.facts.is_some() {
                let target = fact_target(h);
                // The last host a result applies to takes the facts as they are: a host's
                // first facts (most of its memory) are moved in, not copied.
                let last = i + 1 == applies_to.vars.len();
                self.with_state(&target, |s| {
                    if last && s.facts.is_empty() {
                        s.facts = Arc::new(o.extras.facts.take().unwrap_or_default());
                    } else if let Some(f) = &o.extras.facts {
                        crate::vars::merge_maps(Arc::make_mut(&mut s.facts), f);
                    }
                });
            }
            if let Some(v) = &o.extras.included {
                let target = fact_target(h);
                self.with_state(&target, |s| {
                    Arc::make_mut(&mut s.included).extend(v.clone());
                });
            }
            if let Some(v) = &o.extras.set_vars {
                self.set_runtime(&fact_target(h), v.clone());
            }
            if changed
                && !t.own.notify.is_empty()
                && o.status != Status::Failed
                && applies_to.notify.contains(h)
            {
                let names = self.notify_names(pc, t, inner, h);
                self.with_state(h, |s| s.notified.extend(names));
            }
        }
        for (h, vars) in &o.extras.host_vars {
            self.set_runtime(h, vars.clone());
        }
        if let Some(r) = &o.extras.result {
            crate::vars::merge_maps(&mut self.results.lock().unwrap(), r);
        }
        if !o.extras.add_hosts.is_empty() || !o.extras.group_by.is_empty() {
            {
                let mut inv = self.inventory.write().unwrap();
                for (name, groups, vars) in &o.extras.add_hosts {
                    if let Err(e) = inv.add_host(name, groups, vars.clone()) {
                        self.warn(format!("add_host {}: {}", name, e.message));
                    }
                    self.inv_vars.write().unwrap().remove(name);
                }
                for g in &o.extras.group_by {
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
            result = gathered_result();
        }
        if o.no_log {
            result = censored(&result, changed);
        }
        // `-vvv` shows the module's arguments (not registered, and never under no_log).
        if let (Some(inv), Some(obj), false, Status::Ok | Status::Changed | Status::Failed) = (
            &o.extras.invocation,
            result.as_object_mut(),
            o.no_log,
            o.status,
        ) {
            obj.entry("invocation").or_insert_with(|| inv.clone());
        }
        let display = match o.status {
            _ if o.no_log => None,
            Status::Failed => super::item::failure_display(t, &result),
            _ => o.extras.display,
        };
        self.emit(Event::HostResult {
            play: pc.name.clone(),
            task: task_name.to_string(),
            host: o.host.clone(),
            delegated_to: o.extras.delegated.clone(),
            status: o.status,
            changed,
            ignored: o.ignored,
            result,
            display,
        });
    }

    /// A changed task whose `notify` names (rendered) a handler none answers to fails on
    /// the host (ansible-core stops the run: "The requested handler … was not found");
    /// literal names were checked when the play loaded, unless it has an `include_role`.
    fn check_rendered_notify(
        self: &Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        o: &mut HostOutcome,
    ) {
        let changed = o.result.get("changed").and_then(Value::as_bool) == Some(true);
        let templated = t.own.notify.iter().any(|n| crate::template::is_template(n));
        if !changed
            || o.status == Status::Failed
            || t.own.notify.is_empty()
            || !(templated || pc.notify_at_run)
        {
            return;
        }
        let Some(known) = crate::project::handler_names(&pc.handlers()) else {
            return;
        };
        let names = self.notify_names(pc, t, inner, &o.host);
        if let Some(bad) = names.iter().find(|n| !known.contains(n)) {
            let span = t.own.notify_span.as_ref().unwrap_or(&t.span);
            let e = crate::project::unknown_handler(bad, &known).at(span);
            o.status = Status::Failed;
            o.result = json!({"changed": true, "failed": true, "msg": e.result_message()});
        }
    }

    /// `notify` as Ansible reads it: a keyword it templates, so each name is rendered with
    /// the task's variables for the host (`notify: restart {{ service }}`). A name that
    /// does not render is kept as written, with a warning (it then matches no handler).
    fn notify_names(
        self: &Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        host: &str,
    ) -> Vec<String> {
        if !t.own.notify.iter().any(|n| crate::template::is_template(n)) {
            return t.own.notify.clone();
        }
        let hv = self.hostvars(pc.vars.clone());
        let ctx = self.view(pc, inner, host, None, &hv).context();
        t.own
            .notify
            .iter()
            .map(|n| match self.templar.render_str(n, &ctx) {
                Ok(v) => value_text(&v),
                Err(e) => {
                    self.warn(format!("notify `{}` on {}: {}", n, host, e.message));
                    n.clone()
                }
            })
            .collect()
    }

    pub(super) fn set_runtime(&self, host: &str, vars: VarMap) {
        self.with_state(host, |s| {
            // In place unless a live view still holds the map (then copied, as it must
            // not change under that view): a copy per registration cost every task the
            // size of all the host's set_fact and registered values so far.
            let rt = Arc::make_mut(&mut s.runtime);
            for (k, v) in vars {
                rt.insert(k, v);
            }
        });
    }
}

/// A `no_log` result as Ansible shows it: the keys it keeps (whether it changed, how
/// many attempts, warnings), and for a loop each item censored the same way, so the
/// output still shows a loop ran.
fn censored(result: &Value, changed: bool) -> Value {
    const KEPT: [&str; 5] = [
        "attempts",
        "retries",
        "exception",
        "warnings",
        "deprecations",
    ];
    let keep = |r: &Value| {
        let mut m = serde_json::Map::new();
        for k in KEPT {
            if let Some(v) = r.get(k) {
                m.insert(k.to_string(), v.clone());
            }
        }
        if let Some(c) = r.get("changed") {
            m.insert("changed".into(), c.clone());
        }
        m.insert("censored".into(), Value::from(CENSORED));
        m
    };
    let mut out = keep(result);
    out.insert("changed".into(), Value::Bool(changed));
    if let Some(Value::Array(items)) = result.get("results") {
        let items = items.iter().map(|i| Value::Object(keep(i))).collect();
        out.insert("results".into(), Value::Array(items));
    }
    Value::Object(out)
}

/// What the implicit Gathering Facts task shows for a host, in place of its facts.
fn gathered_result() -> Value {
    json!({"changed": false, "failed": false, "ansible_facts": "(gathered)"})
}
