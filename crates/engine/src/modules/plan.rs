//! Check and diff by construction: a state-changing module is split into *plan* (look at
//! the host, decide what would change, build the diff) and *apply* (make the change).
//! [`Planned`] wraps such a module into a [`Module`]; it alone decides whether apply
//! runs, so check mode cannot be forgotten by a module and means the same everywhere.
//! Round trips stay what they were: plan is the stat a module always made, apply the
//! write.

use async_trait::async_trait;

use super::{Module, ModuleContext, ModuleResult, VarMap};
use crate::error::Result;

/// What a plan found.
pub enum Plan<W> {
    /// The answer is final without applying anything: nothing to change, a failure found
    /// while planning, or a skip (`creates` exists …).
    Done(ModuleResult),
    /// Something would change. `result` is what is reported (in check mode as it is, with
    /// `changed: true`); `work` is what [`PlanApply::apply`] needs to make the change.
    Change {
        /// The result as reported, with its diffs.
        result: ModuleResult,
        /// What apply does.
        work: W,
    },
}

impl<W> Plan<W> {
    /// A change, reported by `result` (marked changed), made by `work`.
    pub fn change(result: ModuleResult, work: W) -> Plan<W> {
        Plan::Change {
            result: ModuleResult {
                changed: true,
                ..result
            },
            work,
        }
    }
}

/// A state-changing module in two steps. Implementors never look at
/// [`ModuleContext::check_mode`] to decide whether to write: [`Planned`] does.
#[async_trait]
pub trait PlanApply: Send + Sync {
    /// What apply needs from the plan (the new content, the temp path, the commands).
    type Work: Send;

    /// Inspects the host and decides; changes nothing on it.
    async fn plan(&self, ctx: &ModuleContext, args: VarMap) -> Result<Plan<Self::Work>>;

    /// Makes the planned change; `result` is the plan's result, to complete or replace.
    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: Self::Work,
        result: ModuleResult,
    ) -> Result<ModuleResult>;

    /// The common case in one round trip, for a module whose look and write fit in one
    /// script (copy's small file: stat, and write only if it differs). [`Planned`] tries
    /// it first, only when apply would run (never in check mode); `Ok(None)` means "not
    /// this time", and plan then apply run as usual.
    async fn at_once(&self, _ctx: &ModuleContext, _args: &VarMap) -> Result<Option<ModuleResult>> {
        Ok(None)
    }

    /// Checks arguments written without templates when the playbook loads
    /// (see [`Module::validate`]).
    fn validate(&self, _args: &VarMap) -> Result<()> {
        Ok(())
    }

    /// Whether loops of this module may plan items several to a round trip
    /// ([`PlanApply::plan_batch`]); see [`Module::batches`].
    fn batches(&self) -> bool {
        false
    }

    /// Whether a loop item with these arguments may join a batch.
    fn batchable(&self, _args: &VarMap) -> bool {
        false
    }

    /// Plans several items (never in check mode: batches are for real runs); one plan per
    /// item, each as [`PlanApply::plan`] would make it. By default, one after the other.
    async fn plan_batch(
        &self,
        ctx: &ModuleContext,
        items: Vec<VarMap>,
    ) -> Result<Vec<Result<Plan<Self::Work>>>> {
        let mut out = Vec::with_capacity(items.len());
        for args in items {
            out.push(self.plan(ctx, args).await);
        }
        Ok(out)
    }
}

/// The [`Module`] of a [`PlanApply`]: plan, then apply unless in check mode.
pub struct Planned<P>(pub P);

#[async_trait]
impl<P: PlanApply> Module for Planned<P> {
    async fn run(&self, ctx: &ModuleContext, args: VarMap) -> Result<ModuleResult> {
        if !ctx.check_mode {
            if let Some(result) = self.0.at_once(ctx, &args).await? {
                return Ok(result);
            }
        }
        match self.0.plan(ctx, args).await? {
            Plan::Done(result) => Ok(result),
            Plan::Change { result, .. } if ctx.check_mode => Ok(result),
            Plan::Change { result, work } => self.0.apply(ctx, work, result).await,
        }
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        self.0.validate(args)
    }

    fn batches(&self) -> bool {
        self.0.batches()
    }

    fn batchable(&self, args: &VarMap) -> bool {
        self.0.batchable(args)
    }

    /// The items' plans in one round trip, then in order: an item in place is done; a
    /// change is applied, and the items after it are planned again (one round trip), as
    /// the change may touch what they look at. So every item is planned after the items
    /// before it took effect, as one by one, and a loop whose items are in place costs
    /// one round trip instead of one per item.
    async fn run_batch(
        &self,
        ctx: &ModuleContext,
        items: Vec<VarMap>,
    ) -> Result<Vec<Result<ModuleResult>>> {
        let mut out = Vec::with_capacity(items.len());
        let mut plans = self.0.plan_batch(ctx, items.clone()).await?.into_iter();
        while let Some(plan) = plans.next() {
            let changed = matches!(plan, Ok(Plan::Change { .. })) && !ctx.check_mode;
            out.push(match plan {
                Err(e) => Err(e),
                Ok(Plan::Done(result)) => Ok(result),
                Ok(Plan::Change { result, .. }) if ctx.check_mode => Ok(result),
                Ok(Plan::Change { result, work }) => self.0.apply(ctx, work, result).await,
            });
            if changed && out.len() < items.len() {
                plans = self
                    .0
                    .plan_batch(ctx, items[out.len()..].to_vec())
                    .await?
                    .into_iter();
            }
        }
        Ok(out)
    }
}

/// A module whose look and write are one script on the host (package, systemd_service,
/// get_url, unarchive): run for real, the script decides and acts in one round trip; in
/// check mode the same script, told to report only, is the plan. [`Scripted`] makes it a
/// [`PlanApply`], so the check-mode decision stays with [`Planned`] like everywhere else.
#[async_trait]
pub trait OneScript: Send + Sync {
    /// Runs the module's script; with `report_only` it decides and changes nothing.
    async fn script(
        &self,
        ctx: &ModuleContext,
        args: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult>;

    /// Checks literal arguments at load time (see [`Module::validate`]).
    fn validate(&self, _args: &VarMap) -> Result<()> {
        Ok(())
    }
}

/// The [`PlanApply`] of a [`OneScript`] module: `at_once` is the script run for real,
/// plan the report-only run; apply (never reached while `at_once` answers) runs it for real.
pub struct Scripted<S>(pub S);

#[async_trait]
impl<S: OneScript> PlanApply for Scripted<S> {
    /// The arguments: apply runs the script for real.
    type Work = VarMap;

    async fn plan(&self, ctx: &ModuleContext, args: VarMap) -> Result<Plan<VarMap>> {
        let res = self.0.script(ctx, args.clone(), true).await?;
        Ok(if res.changed {
            Plan::change(res, args)
        } else {
            Plan::Done(res)
        })
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        args: VarMap,
        _planned: ModuleResult,
    ) -> Result<ModuleResult> {
        self.0.script(ctx, args, false).await
    }

    async fn at_once(&self, ctx: &ModuleContext, args: &VarMap) -> Result<Option<ModuleResult>> {
        self.0.script(ctx, args.clone(), false).await.map(Some)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        self.0.validate(args)
    }
}
