//! One item of a task on one host: its condition, templated arguments, the module's
//! answer on the controller or its run (connection, become, environment, timeout,
//! `until`/`retries`), and `changed_when`/`failed_when` on its result. The module's
//! typed effects are collected in [`Extras`] for the task to apply.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{PlayCtx, Runner, Scope};
use crate::connect::Become;
use crate::error::{Error, ErrorKind};
use crate::modules::{self, Controller, Effect, ModuleContext, ModuleResult};
use crate::project::{value_text, Task, TaskKind};
use crate::report::Status;
use crate::template::OMIT;
use crate::vars::{VarMap, VarView};

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

/// A connection variable that overrides a become keyword, when set (and not null).
fn become_var(view: &Arc<VarView>, name: &str) -> crate::error::Result<Option<Value>> {
    Ok(view.get_json(name)?.filter(|v| !v.is_null()))
}

/// One item's status, result and side effects.
pub(super) type ItemResult = (Status, Value, Extras);

/// What [`Runner::prepare_item`] hands to the module run.
pub(super) struct Prepared {
    /// Templated module arguments.
    pub(super) args: VarMap,
    /// The module.
    pub(super) imp: &'static dyn modules::Module,
    /// Where and how it runs.
    pub(super) mctx: ModuleContext,
    /// Side effects decided before the run (`delegated`).
    pub(super) extras: Extras,
    /// `retries` for this item (used with `until`).
    pub(super) retries: Option<u64>,
    /// `delay` in seconds between attempts.
    pub(super) delay: Option<f64>,
}

/// The result of a task stopped by its `timeout`, as ansible-core words it.
fn timed_out(d: Duration) -> ModuleResult {
    ModuleResult::failed(format!(
        "Task failed: Timed out after {} second(s).",
        d.as_secs()
    ))
}

/// The result of an item that failed with `e` before or while its module ran.
pub(super) fn item_error(e: Error) -> ItemResult {
    let status = if e.kind == ErrorKind::Connection {
        Status::Unreachable
    } else {
        Status::Failed
    };
    let mut r = json!({"failed": true, "changed": false, "msg": e.result_message()});
    if status == Status::Unreachable {
        r["unreachable"] = Value::Bool(true);
    } else {
        r["exception"] = Value::from(modules::NO_TRACEBACK);
    }
    (status, r, Extras::default())
}

/// A module's error as its failed result when Ansible would have it from the module
/// itself (arguments it rejects, a failure it reports), so that `failed_when`,
/// `changed_when` and `until` judge it; `None` for the errors that fail the task before
/// those apply (the connection, become, templates, files on the controller).
pub(super) fn module_failure(e: &Error) -> Option<ModuleResult> {
    (matches!(e.kind, ErrorKind::ModuleArgs | ErrorKind::Runtime)
        && e.code != Some(crate::connect::BECOME_FAILED))
    .then(|| ModuleResult::failed(e.result_message()))
}

/// What the items of a task on a host ask the run to do besides registering the result:
/// where it ran, and the modules' typed effects, gathered by kind.
#[derive(Default)]
pub(super) struct Extras {
    /// `delegate_to`: the host it ran on.
    pub(super) delegated: Option<String>,
    /// `delegate_facts`: facts go to the host it ran on.
    pub(super) delegate_facts: bool,
    /// Gathered facts.
    pub(super) facts: Option<VarMap>,
    /// Variables read from files.
    pub(super) included: Option<VarMap>,
    /// Facts set for the host.
    pub(super) set_vars: Option<VarMap>,
    /// Variables for other hosts.
    pub(super) host_vars: Vec<(String, VarMap)>,
    /// Values reported at the end of the run.
    pub(super) result: Option<VarMap>,
    /// Hosts added to the inventory: name, groups, variables.
    pub(super) add_hosts: Vec<(String, Vec<String>, VarMap)>,
    /// Groups the host joins.
    pub(super) group_by: Vec<String>,
    /// The result as shown to the user.
    pub(super) display: Option<Value>,
    /// `invocation` (the module's arguments as it received them), shown from `-vvv` on
    /// and never registered, as in Ansible; only for a task without a loop.
    pub(super) invocation: Option<Value>,
}

impl Extras {
    /// Takes in a module's effects; `value` is its final result (for [`Effect::Display`]).
    fn absorb(&mut self, effects: Vec<Effect>, value: &Value) {
        for e in effects {
            match e {
                Effect::SetFacts(v) => self.set_vars = Some(v),
                Effect::GatheredFacts(v) => self.facts = Some(v),
                Effect::IncludedVars(v) => self.included = Some(v),
                Effect::AddHost { name, groups, vars } => self.add_hosts.push((name, groups, vars)),
                Effect::HostVars { host, vars } => self.host_vars.push((host, vars)),
                Effect::GroupBy(g) => self.group_by.push(g),
                Effect::Report(v) => {
                    let mut cur = self.result.take().unwrap_or_default();
                    crate::vars::merge_maps(&mut cur, &v);
                    self.result = Some(cur);
                }
                Effect::Display => {
                    let mut d = value.as_object().cloned().unwrap_or_default();
                    d.remove("changed");
                    d.remove("failed");
                    self.display = Some(Value::Object(d));
                }
            }
        }
    }

    /// Adds what a later loop item asked for.
    pub(super) fn merge(&mut self, o: Extras) {
        if o.delegated.is_some() {
            self.delegate_facts = o.delegate_facts;
        }
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

/// An item's status from its final result.
fn status_of(value: &Value) -> Status {
    let flag = |k: &str| value.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("failed") {
        Status::Failed
    } else if flag("skipped") {
        Status::Skipped
    } else if flag("changed") {
        Status::Changed
    } else {
        Status::Ok
    }
}

impl Runner {
    /// Everything before the module runs for one item: `when`, templated arguments, the
    /// module's answer on the controller, connection, become, environment; `Err` is the
    /// item's final result (skipped, failed, or answered on the controller).
    #[allow(clippy::result_large_err)]
    pub(super) async fn prepare_item(
        self: &Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        host: &str,
        view: &Arc<VarView>,
    ) -> Result<Prepared, ItemResult> {
        let ctx = view.context();
        let mut extras = Extras::default();
        let err = |e: Error| -> Result<Prepared, ItemResult> { Err(item_error(e)) };
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
        let module = match super::args::module_for_host(&self.templar, module, &ctx) {
            Ok(m) => m,
            Err(e) => return err(e.at(&t.span)),
        };
        let module = module.as_ref();
        // Arguments the module renders itself stay as written.
        let imp = modules::lookup(module);
        let mut raw_args = args.clone();
        let own: Vec<(String, Value)> = imp
            .map(|m| m.own_templates(args))
            .unwrap_or_default()
            .iter()
            .filter_map(|k| raw_args.remove(*k).map(|v| (k.to_string(), v)))
            .collect();
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
        args.extend(own);
        super::args::merge_raw_mapping(module, &mut args);
        if self.opts.verbosity >= 3 {
            extras.invocation = modules::invocation::invocation(module, &args);
        }
        let Some(imp) = imp else {
            return err(
                Error::new(ErrorKind::Syntax, format!("unknown module `{}`", module)).at(&t.span),
            );
        };
        let answer = imp.answer(
            &args,
            &Controller {
                inventory: &self.inventory.read().unwrap(),
                verbosity: self.opts.verbosity,
                host,
            },
        );
        match answer {
            Some(Ok(a)) => {
                extras.absorb(a.effects, &a.result);
                return Err((status_of(&a.result), a.result, extras));
            }
            Some(Err(e)) => return err(e.at(&t.span)),
            None => {}
        }
        // Where it runs.
        let delegate = match &inner.attrs.delegate_to {
            None => None,
            Some(d) => match self.templar.render_value(d, &ctx) {
                Ok(v) => Some(value_text(&v)),
                Err(e) => return err(e.at(&t.span)),
            },
        };
        let conn_host = delegate.clone().unwrap_or_else(|| host.to_string());
        let remote_user = match self.keyword(&inner.attrs.remote_user, &ctx) {
            Ok(u) => u,
            Err(e) => return err(e.at(&t.span)),
        };
        let (conn, delegation) = if conn_host == host {
            let conn = self.connection(host, view, remote_user);
            // `delegate_to` naming the host itself is still a delegation (synchronize
            // then runs rsync on the host).
            let delegation = match (&delegate, &conn) {
                (Some(_), Ok(c)) => Some(modules::Delegation {
                    to: conn_host.clone(),
                    host_conn: Ok(c.clone()),
                }),
                _ => None,
            };
            (conn, delegation)
        } else {
            let hv = self.hostvars(pc.vars.clone());
            let dview = self.view(pc, &Scope::default(), &conn_host, None, &hv);
            // The task host's own connection (prepared, opened on first use) goes along
            // for modules that reach it from the delegate; one that cannot be prepared
            // fails only a module that needs it.
            let own = self.connection(host, view, remote_user.clone());
            (
                self.connection(&conn_host, &dview, remote_user),
                Some(modules::Delegation {
                    to: conn_host.clone(),
                    host_conn: own.map_err(|e| e.message),
                }),
            )
        };
        let conn = match conn {
            Ok(c) => c,
            Err(e) => return err(e),
        };
        if delegate.is_some() {
            extras.delegate_facts = match self.flag(&inner.attrs.delegate_facts, &ctx) {
                Ok(b) => b,
                Err(e) => return err(e.at(&t.span)),
            };
        }
        extras.delegated = delegate;
        // Ansible's rule: the connection variables (`ansible_become`,
        // `ansible_become_user`, `ansible_become_method`) win over the keywords.
        let become_on = match become_var(view, "ansible_become") {
            Ok(Some(v)) => match crate::ansible::to_bool(&v) {
                Some(b) => Ok(b),
                None => {
                    return err(Error::new(
                        ErrorKind::Runtime,
                        format!("ansible_become is {}, not a boolean", v),
                    )
                    .help("set ansible_become to true or false")
                    .at(&t.span))
                }
            },
            Ok(None) => self.flag(&inner.attrs.become_, &ctx),
            Err(e) => Err(e),
        };
        let become_ = match become_on {
            Ok(true) => {
                let method = match become_var(view, "ansible_become_method") {
                    Ok(Some(v)) => {
                        use crate::project::KeywordValue;
                        match crate::connect::BecomeMethod::from_value(&v) {
                            Ok(m) => Ok(Some(m)),
                            Err(_) => Err(Error::new(
                                ErrorKind::Runtime,
                                format!(
                                    "ansible_become_method is {}: kk supports {}",
                                    v,
                                    crate::connect::BecomeMethod::EXPECTED
                                ),
                            )
                            .help("use sudo or su")),
                        }
                    }
                    Ok(None) => self.keyword(&inner.attrs.become_method, &ctx),
                    Err(e) => Err(e),
                };
                let method = match method {
                    Ok(m) => m.unwrap_or_default(),
                    Err(e) => return err(e.at(&t.span)),
                };
                let user = match become_var(view, "ansible_become_user") {
                    Ok(Some(v)) => Ok(Some(value_text(&v))),
                    Ok(None) => self.keyword(&inner.attrs.become_user, &ctx),
                    Err(e) => Err(e),
                };
                let user = match user {
                    Ok(u) => u.unwrap_or_else(|| "root".into()),
                    Err(e) => return err(e.at(&t.span)),
                };
                // The become password, else the login password (KubeKey's connector
                // password serves both); sudo is asked for it only if it wants one.
                // `-K`'s password comes after the become variables, before the login's.
                let asked = || {
                    self.opts
                        .defaults
                        .become_password
                        .clone()
                        .map(Value::String)
                };
                let password = ["ansible_become_password", "ansible_become_pass"]
                    .iter()
                    .find_map(|k| view.get_json(k).ok().flatten())
                    .or_else(asked)
                    .or_else(|| {
                        ["ansible_password", "ansible_ssh_pass"]
                            .iter()
                            .find_map(|k| view.get_json(k).ok().flatten())
                    })
                    .or_else(|| {
                        view.get_json("connector")
                            .ok()
                            .flatten()
                            .and_then(|c| c.get("password").cloned())
                    })
                    .filter(|v| !v.is_null())
                    .map(|v| value_text(&v));
                // `become_flags`: the method's variable (`ansible_sudo_flags`,
                // `ansible_su_flags`) over `ansible_become_flags` (Ansible takes the last
                // of its list that is set), over the keyword (whose default is ansible.cfg's).
                let method_var = match method {
                    crate::connect::BecomeMethod::Sudo => "ansible_sudo_flags",
                    crate::connect::BecomeMethod::Su => "ansible_su_flags",
                };
                let flags = match become_var(view, method_var) {
                    Ok(None) => become_var(view, "ansible_become_flags"),
                    other => other,
                };
                let flags = match flags {
                    Ok(Some(v)) => Some(value_text(&v)),
                    Ok(None) => match self.keyword(&inner.attrs.become_flags, &ctx) {
                        Ok(f) => f,
                        Err(e) => return err(e.at(&t.span)),
                    },
                    Err(e) => return err(e.at(&t.span)),
                };
                Some(Become {
                    user,
                    password,
                    method,
                    flags,
                })
            }
            Ok(false) => None,
            Err(e) => return err(e.at(&t.span)),
        };
        let mut env = Vec::new();
        for e in &inner.environment {
            match self.templar.render_value(e, &ctx) {
                Ok(v) => {
                    for s in super::args::add_environment(&mut env, v) {
                        self.warn(format!(
                            "could not parse environment value, skipping: {}",
                            s
                        ));
                    }
                }
                Err(e) => return err(e.at(&t.span)),
            }
        }
        let check_mode = match self.keyword(&inner.attrs.check_mode, &ctx) {
            Ok(b) => b.unwrap_or(self.opts.check),
            Err(e) => return err(e.at(&t.span)),
        };
        // A module without check-mode support is skipped, as Ansible does; a remote
        // module only once its arguments are valid (else it runs, to fail on them).
        let refuses = match imp.check_mode() {
            modules::CheckMode::RemoteRefuses => imp.validate(&args).is_ok(),
            other => other != modules::CheckMode::Supported,
        };
        if let (true, true, Some(msg)) = (
            check_mode,
            refuses,
            imp.check_mode()
                .refusal(t.own.action.as_deref().unwrap_or(module)),
        ) {
            return Err((
                Status::Skipped,
                json!({"changed": false, "skipped": true, "msg": msg}),
                extras,
            ));
        }
        let diff = match self.keyword(&inner.attrs.diff, &ctx) {
            Ok(b) => b.unwrap_or(self.opts.diff),
            Err(e) => return err(e.at(&t.span)),
        };
        let no_log = match self.flag(&inner.attrs.no_log, &ctx) {
            Ok(b) => b,
            Err(e) => return err(e.at(&t.span)),
        };
        // `timeout: 0` is no timeout, as in Ansible.
        let timeout = match self.keyword(&inner.attrs.timeout, &ctx) {
            Ok(s) => s.filter(|s| *s > 0).map(Duration::from_secs),
            Err(e) => return err(e.at(&t.span)),
        };
        // `retries` and `delay` are read here, with the item's variables, so a wrong value
        // fails the item before its module runs.
        let retries = match self.keyword(&t.own.retries, &ctx) {
            Ok(r) => r,
            Err(e) => return err(e.at(&t.span)),
        };
        let delay = match self.keyword(&t.own.delay, &ctx) {
            Ok(d) => d.map(|d| d.0),
            Err(e) => return err(e.at(&t.span)),
        };
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
            diff,
            no_log,
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
            delegation,
        };
        Ok(Prepared {
            args,
            imp,
            mctx,
            extras,
            retries,
            delay,
        })
    }

    /// Runs the module once (one loop item, or the task without a loop).
    pub(super) async fn run_item(
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
    pub(super) async fn execute_item(
        &self,
        t: &Task,
        view: &Arc<VarView>,
        p: Prepared,
    ) -> ItemResult {
        let Prepared {
            args,
            imp,
            mctx,
            mut extras,
            retries,
            delay,
        } = p;
        let err = item_error;
        let timeout = mctx.timeout;
        let retries = match &t.own.until {
            // ansible-core 2.19 makes `retries` the total number of attempts.
            Some(_) => retries.unwrap_or(3).max(1),
            None => 1,
        };
        let delay = delay.unwrap_or(if t.own.until.is_some() { 5.0 } else { 0.0 });
        let job = match self.async_spec(t, view) {
            Ok(j) => j,
            Err(e) => return err(e.at(&t.span)),
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let run = match (&job, timeout) {
                (Some((module, spec)), _) => {
                    super::async_job::run(module, imp, &mctx, args.clone(), *spec).await
                }
                // A task past its `timeout` fails with ansible-core's message (and may be
                // retried by `until`), whether kk stopped it here or the connection killed
                // the remote command (its error says "command timed out").
                (None, Some(d)) => {
                    match tokio::time::timeout(d, imp.run(&mctx, args.clone())).await {
                        Err(_) => Ok(timed_out(d)),
                        Ok(Err(e)) if e.message.starts_with("command timed out") => {
                            Ok(timed_out(d))
                        }
                        Ok(r) => r,
                    }
                }
                (None, None) => imp.run(&mctx, args.clone()).await,
            };
            let res: ModuleResult = match run {
                Ok(r) => r,
                Err(e) => {
                    let e = e
                        .at(&t.span)
                        .note(format!("in task `{}`", t.display_name()));
                    match module_failure(&e) {
                        Some(r) => r,
                        None => return err(e),
                    }
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
    pub(super) fn finish_item(
        &self,
        t: &Task,
        view: &Arc<VarView>,
        mut res: ModuleResult,
        attempt: u64,
        retries: u64,
        extras: &mut Extras,
    ) -> Option<ItemResult> {
        let err = |e: Error| Some(item_error(e));
        {
            let effects = std::mem::take(&mut res.effects);
            let diffs = std::mem::take(&mut res.diffs);
            let has_diff = res.data.contains_key("diff");
            let mut value = res.into_value();
            // A module that gives its diff in Ansible's shape keeps it.
            if self.opts.diff && !diffs.is_empty() && !has_diff {
                value["diff"] = Value::Array(diffs.iter().map(|d| json!({"before_header": d.before_header, "after_header": d.after_header, "before": d.before, "after": d.after})).collect());
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
                            // Ansible keeps the exception of a failure failed_when overrules.
                            if let (false, Some(obj)) = (b, value.as_object_mut()) {
                                if let Some(x) = obj.remove("exception") {
                                    obj.insert("failed_when_suppressed_exception".into(), x);
                                }
                            }
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
                        // The result keeps Ansible's shape (a command's msg stays ""); the
                        // output says why (see failure_display).
                        value["failed"] = Value::Bool(true);
                    }
                }
            }
            let failed = value
                .get("failed")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            // Every failed result has one in Ansible (failed_when: true and until included).
            if let (true, Some(obj)) = (failed, value.as_object_mut()) {
                obj.entry("exception")
                    .or_insert(modules::NO_TRACEBACK.into());
            }
            let changed = value
                .get("changed")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let skipped = value
                .get("skipped")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !failed {
                extras.absorb(effects, &value);
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
}

/// Whether a result's `msg` says nothing (missing, null, or blank text).
fn is_blank(msg: Option<&Value>) -> bool {
    match msg {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(_) => false,
    }
}

/// A condition (`until`, `failed_when`) as written: a string, or a list of them.
fn condition_text(cond: &Value) -> String {
    match cond {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(condition_text)
            .collect::<Vec<_>>()
            .join(" and "),
        other => other.to_string(),
    }
}

/// What the output shows for a failed result, when it or one of its loop items has no
/// message (a command failed by `failed_when` or `until` keeps Ansible's `msg: ""`): a
/// copy with each blank message replaced by [`failure_fallback`]; `None` when every
/// failure already says why. The registered result is left as Ansible shapes it.
pub(super) fn failure_display(t: &Task, result: &Value) -> Option<Value> {
    let mut shown = result.clone();
    let mut filled = false;
    let mut fill = |v: &mut Value| {
        if v.get("failed") == Some(&Value::Bool(true)) && is_blank(v.get("msg")) {
            v["msg"] = Value::from(failure_fallback(t, v));
            filled = true;
        }
    };
    if let Some(Value::Array(items)) = shown.get_mut("results") {
        items.iter_mut().for_each(&mut fill);
    }
    fill(&mut shown);
    filled.then_some(shown)
}

/// The message of a failed result that came without one: what failed it (`until` still
/// false, `failed_when` true, or the module), with its rc and last line of stderr when it
/// has them, so a failure never prints an empty message.
fn failure_fallback(t: &Task, value: &Value) -> String {
    let module = match &t.kind {
        TaskKind::Module { module, .. } => module.as_str(),
        _ => "task",
    };
    let failed_when = value.get("failed_when_result") == Some(&Value::Bool(true));
    let mut msg = match (&t.own.failed_when, &t.own.until, value.get("attempts")) {
        (Some(fw), _, _) if failed_when => format!(
            "failed_when condition `{}` is true ({})",
            condition_text(fw),
            module
        ),
        (_, Some(until), Some(n)) => format!(
            "until condition `{}` still false after {} attempts ({})",
            condition_text(until),
            n,
            module
        ),
        _ => format!("{} failed without a message", module),
    };
    if let Some(rc) = value.get("rc").filter(|rc| !rc.is_null()) {
        msg.push_str(&format!("; rc {}", rc));
    }
    let stderr = value.get("stderr").and_then(Value::as_str).unwrap_or("");
    if let Some(line) = stderr.lines().rev().find(|l| !l.trim().is_empty()) {
        msg.push_str(&format!("; stderr: {}", line.trim()));
    }
    msg
}
