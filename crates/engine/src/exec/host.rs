//! One task on one host: the loop over its items (loop variables, `loop_control`,
//! `pause`, the aggregate result), and items of a module that batches run several to a
//! round trip.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::item::{item_error, module_failure, Extras, ItemResult, Prepared};
use super::task::HostOutcome;
use super::{PlayCtx, Runner, Scope};
use crate::error::{Error, ErrorKind};
use crate::project::{Task, TaskKind};
use crate::report::Status;
use crate::vars::{VarMap, VarView};

/// A loop item handled ahead of its turn by a batch (few live at once; size is no concern).
#[allow(clippy::large_enum_variant)]
enum Ahead {
    /// Its final result.
    Done(ItemResult),
    /// Prepared, to run when its turn comes.
    Ready(Prepared),
}

impl Runner {
    pub(super) async fn run_on_host(
        self: Arc<Self>,
        pc: &PlayCtx,
        t: &Task,
        inner: &Scope,
        host: &str,
        hv: &minijinja::Value,
    ) -> HostOutcome {
        let view = self.view(pc, inner, host, None, hv);
        let ctx = view.context();
        let fail = HostOutcome::fail;
        let no_log = match self.flag(&inner.attrs.no_log, &ctx) {
            Ok(b) => b,
            // The error is about the `no_log` value itself, not the task's data: shown.
            Err(e) => return fail(HostOutcome::new(host, false), e.at(&t.span)),
        };
        let mut outcome = HostOutcome::new(host, no_log);
        let ignore_errors = match self.flag(&inner.attrs.ignore_errors, &ctx) {
            Ok(b) => b,
            Err(e) => return fail(outcome, e.at(&t.span)),
        };
        // Resolved before the task runs: one that does not resolve fails the task instead
        // of silently meaning false when the host turns out unreachable.
        let ignore_unreachable = match self.flag(&inner.attrs.ignore_unreachable, &ctx) {
            Ok(b) => b,
            Err(e) => return fail(outcome, e.at(&t.span)),
        };
        let items = match super::loop_items::loop_items(&self.templar, t, &ctx) {
            None => None,
            Some(Ok(items)) => Some(items),
            // As ansible-core: a loop that fails on something undefined is an error only
            // when the task's `when` holds; a false one skips the task (run_item says so).
            Some(Err(e))
                if e.kind == ErrorKind::Undefined
                    && matches!(
                        self.templar
                            .eval_condition(&Value::Array(inner.attrs.when.clone()), &ctx),
                        Ok(false)
                    ) =>
            {
                None
            }
            // A loop that does not render fails the task, which ignore_errors ignores
            // as Ansible does.
            Some(Err(e)) => {
                let mut o = fail(outcome, e);
                o.ignored = ignore_errors && o.status == Status::Failed;
                return o;
            }
        };
        let (status, result, extras) = match items {
            None => self.run_item(pc, t, inner, host, &view).await,
            Some(items) => {
                // loop_control, resolved for this host before the first item (ansible-core
                // post-validates it once per loop).
                let lc = &t.own.loop_control;
                let ctx = view.context();
                let resolved = (|| -> crate::error::Result<_> {
                    Ok((
                        self.keyword(&lc.loop_var, &ctx)?
                            .unwrap_or_else(|| "item".to_string()),
                        self.keyword(&lc.index_var, &ctx)?,
                        self.flag(&lc.extended, &ctx)?,
                        self.keyword(&lc.pause, &ctx)?.map_or(0.0, |s| s.0),
                        self.keyword(&lc.extended_allitems, &ctx)?.unwrap_or(true),
                    ))
                })();
                let (loop_var, index_var, extended, pause, allitems) = match resolved {
                    Ok(r) => r,
                    Err(e) => return fail(outcome, e.at(&t.span)),
                };
                let n = items.len();
                let loop_info_for = |i: usize| super::loop_items::loop_info(&items, i, allitems);
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
        outcome.extras = extras;
        if status == Status::Failed && ignore_errors {
            outcome.ignored = true;
        }
        if status == Status::Unreachable && ignore_unreachable {
            outcome.ignored = true;
        }
        outcome
    }

    /// Whether a loop of this task may run its items several to a round trip: its module
    /// offers batches and the task has no `until`, `timeout` or `delegate_to` (per item,
    /// the arguments and check mode decide further, in `run_batch_from`).
    fn loop_batchable(&self, t: &Task, inner: &Scope) -> bool {
        let TaskKind::Module { module, .. } = &t.kind else {
            return false;
        };
        crate::modules::lookup(module).is_some_and(|m| m.batches())
            && t.own.until.is_none()
            && t.own.async_.is_none()
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
            !p.mctx.check_mode
                && p.mctx.timeout.is_none()
                && p.imp.batchable(&p.args)
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
        let args: Vec<VarMap> = group.iter().map(|(_, _, p)| p.args.clone()).collect();
        let in_task = || format!("in task `{}`", t.display_name());
        let lead = &group[0].2;
        let outs = lead.imp.run_batch(&lead.mctx, args).await;
        let mut first_result = None;
        for (k, (j, v, mut p)) in group.into_iter().enumerate() {
            let done = match &outs {
                Err(e) => item_error(e.clone().at(&t.span).note(in_task())),
                Ok(outs) => match &outs[k] {
                    Err(e) => {
                        let e = e.clone().at(&t.span).note(in_task());
                        match module_failure(&e) {
                            Some(res) => self
                                .finish_item(t, &v, res, 1, 1, &mut p.extras)
                                .unwrap_or_else(|| {
                                    item_error(Error::new(ErrorKind::Runtime, "retry in a batch"))
                                }),
                            None => item_error(e),
                        }
                    }
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
}
