//! Load-time checks of module arguments: every task whose arguments hold no template is
//! checked by its module ([`Module::validate`]) before anything runs, so `mode: rwx` or an
//! unknown argument stops the run at load (exit 4, with the task's place) instead of on
//! the hundredth host halfway through. Templated arguments are checked when they run.

use super::{args, find, Module};
use crate::error::{Error, ErrorKind, Result};
use crate::project::{Play, Playbook, Task, TaskKind};

/// Checks every literal module call of the playbook.
pub fn check_playbook(playbook: &Playbook) -> Result<()> {
    playbook.plays.iter().try_for_each(check_play)
}

/// Checks every literal module call of a play (its roles, handlers and task lists).
pub fn check_play(play: &Play) -> Result<()> {
    [
        &play.pre_tasks,
        &play.roles,
        &play.tasks,
        &play.post_tasks,
        &play.handlers,
    ]
    .into_iter()
    .try_for_each(|tasks| check_tasks(tasks))
}

/// Checks a task list, blocks included (tasks loaded by includes are checked as they load).
pub fn check_tasks(tasks: &[Task]) -> Result<()> {
    for task in tasks {
        match &task.kind {
            TaskKind::Module { module, args } => {
                let Some(m) = find(module).and_then(|e| e.module()) else {
                    continue;
                };
                if args::is_literal(args) {
                    check_one(m, args, task)?;
                }
            }
            TaskKind::Block {
                block,
                rescue,
                always,
                ..
            } => {
                check_tasks(block)?;
                check_tasks(rescue)?;
                check_tasks(always)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_one(m: &dyn Module, args: &super::VarMap, task: &Task) -> Result<()> {
    m.validate(args).map_err(|e| {
        // A load error (exit 4): the playbook is wrong, whatever the hosts; the module's
        // diagnostic code stays.
        Error {
            kind: ErrorKind::Syntax,
            code: Some(e.code()),
            ..e
        }
        .at(&task.span)
    })
}
