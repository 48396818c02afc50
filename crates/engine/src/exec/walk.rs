//! Walking task lists: linear order, blocks with `rescue` and `always`, `meta`
//! actions, and handlers when they are flushed.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{PlayCtx, Runner, Scope};
use crate::project::{Task, TaskKind};
use crate::report::Event;
use crate::vars::VarMap;

impl Runner {
    /// Recomputes `play_hosts` and friends after hosts failed or were rescued.
    pub(super) fn refresh_play_hosts(&self, pc: &PlayCtx) {
        let batch = self.still_in(&pc.batch);
        let current = pc.play_hosts.read().unwrap().clone();
        let all = self.still_in(&pc.play_hosts_all);
        if current.get("play_hosts") != Some(&Value::from(batch.clone()))
            || current.get("ansible_play_hosts") != Some(&Value::from(all.clone()))
        {
            *pc.play_hosts.write().unwrap() = Arc::new(play_hosts_map(&all, &batch));
        }
    }

    /// The hosts of a list that have not failed and are not unreachable (Ansible's hosts
    /// not in the play's `_removed_hosts`), in the list's order.
    pub(super) fn still_in(&self, hosts: &[String]) -> Vec<String> {
        let states = self.hosts.lock().unwrap();
        hosts
            .iter()
            .filter(|h| {
                states
                    .get(*h)
                    .map(|s| !s.failed && !s.unreachable)
                    .unwrap_or(true)
            })
            .cloned()
            .collect()
    }

    /// Hosts of a list that can still run tasks.
    pub(super) fn active(&self, pc: &PlayCtx, hosts: &[String]) -> Vec<String> {
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
    pub(super) fn run_list(
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

    pub(super) fn run_entry(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        t: Task,
        hosts: Vec<String>,
        scope: Scope,
    ) -> BoxFuture<'static, ()> {
        // Polling nests as deeply as the task lists do: on a fresh stack segment when low.
        Box::pin(crate::depth::GrowStack(Box::pin(async move {
            match &t.kind {
                TaskKind::Block {
                    block,
                    rescue,
                    always,
                    role,
                } => {
                    let mut inner = scope.child(&t.attrs);
                    inner.depth += 1;
                    inner.notify(&t.own);
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
                    if !inner.selects(&self.opts.tags) {
                        return;
                    }
                    if self.opts.defaults.step
                        && !super::defaults::take_step(t.display_name()).await
                    {
                        return;
                    }
                    self.run_tasks_on_hosts(pc, t, hosts, scope, false).await;
                }
            }
        })))
    }

    pub(super) fn run_block(
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
            // Hosts failed by another host's run_once failure skip this block's rescue,
            // and its always too when it has no rescue (Ansible fails them twice).
            let twice: Vec<String> = failed
                .iter()
                .filter(|h| self.state(h).failed_twice)
                .cloned()
                .collect();
            for h in &twice {
                self.with_state(h, |s| s.failed_twice = false);
            }
            let failed: Vec<String> = failed.into_iter().filter(|h| !twice.contains(h)).collect();
            let has_rescue = !rescue.is_empty();
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
                        !s.unreachable && !s.ended && (has_rescue || !twice.contains(h))
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

    pub(super) async fn run_meta(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        t: &Task,
        what: &str,
        hosts: Vec<String>,
        scope: Scope,
    ) {
        let inner = scope.child(&t.attrs);
        if !inner.selects(&self.opts.tags) {
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
                        s.failed_twice = false;
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

    pub(super) fn flush_handlers(
        self: Arc<Self>,
        pc: Arc<PlayCtx>,
        scope: Scope,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let handlers = pc.handlers();
            let answers: Vec<Answers> = handlers.iter().map(Answers::of).collect();
            // Each handler runs once per flush for the hosts that notified it (by name or
            // by a topic it listens to); handlers may notify later handlers.
            for (i, h) in handlers.into_iter().enumerate() {
                let hname = h.name.clone().unwrap_or_default();
                let qualified = answers[i].qualified.clone();
                let targets: Vec<String> = {
                    let states = self.hosts.lock().unwrap();
                    pc.batch
                        .iter()
                        .filter(|host| {
                            let Some(s) = states.get(*host) else {
                                return false;
                            };
                            let hit = s.notified.iter().any(|n| runs_for(&answers, i, n));
                            hit && !s.unreachable && !s.ended && (!s.failed || pc.kw.force_handlers)
                        })
                        .cloned()
                        .collect()
                };
                if targets.is_empty() {
                    continue;
                }
                for host in &targets {
                    self.with_state(host, |s| {
                        s.notified
                            .retain(|n| *n != hname && Some(n) != qualified.as_ref())
                    });
                }
                let mut handler = h.clone();
                handler.own.listen.clear();
                let scope = Scope {
                    handler: true,
                    ..scope.clone()
                };
                self.clone()
                    .run_entry(pc.clone(), handler, targets, scope)
                    .await;
            }
            for host in &pc.batch {
                self.with_state(host, |s| s.notified.clear());
            }
        })
    }
}

/// The names a handler answers to.
struct Answers {
    name: String,
    /// `role : name` for a role's handler, as in Ansible.
    qualified: Option<String>,
    listen: Vec<String>,
}

impl Answers {
    fn of(h: &Task) -> Answers {
        let name = h.name.clone().unwrap_or_default();
        let qualified = match &h.kind {
            TaskKind::Block { role: Some(r), .. } => Some(format!("{} : {}", r.role.name, name)),
            _ => None,
        };
        Answers {
            name,
            qualified,
            listen: h.own.listen.clone(),
        }
    }

    fn named(&self, n: &str) -> bool {
        !self.name.is_empty() && (self.name == n || self.qualified.as_deref() == Some(n))
    }
}

/// Whether handler `i` runs for notification `n`, as ansible-core picks handlers: by name
/// the last handler loaded with that name (a role included twice, or listed twice with
/// different parameters, loads its handlers again), by topic every handler listening to
/// it, the last of those sharing a name.
fn runs_for(answers: &[Answers], i: usize, n: &str) -> bool {
    let me = &answers[i];
    let later = &answers[i + 1..];
    if me.named(n) {
        return !later.iter().any(|a| a.named(n));
    }
    me.listen.iter().any(|l| l == n)
        && (me.name.is_empty()
            || !later
                .iter()
                .any(|a| a.name == me.name && a.listen.iter().any(|l| l == n)))
}

/// The play-host magic variables: `ansible_play_hosts` the play's hosts still active,
/// `ansible_play_batch` and `play_hosts` the batch's.
pub(super) fn play_hosts_map(play: &[String], batch: &[String]) -> VarMap {
    let mut m = VarMap::new();
    m.insert("ansible_play_hosts".into(), Value::from(play.to_vec()));
    for k in ["play_hosts", "ansible_play_batch"] {
        m.insert(k.into(), Value::from(batch.to_vec()));
    }
    m
}
