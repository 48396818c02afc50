//! `notify` checked against the play's handlers: a name that no handler has and no
//! handler listens to would never run anything. ansible-core stops the run when such a
//! name is notified ("The requested handler 'x' was not found in either the main handlers
//! list nor in the listening handlers list"); kk refuses a literal name when the play
//! loads (or when an included file loads), and a templated one when it renders.

use crate::error::{did_you_mean, Error, Result};
use crate::project::{Task, TaskKind};
use crate::template::is_template;

/// The handlers of a list as flush_handlers sees them: an unnamed block without rescue or
/// always (what `import_tasks` of a handlers file, or a `block:` in `handlers:`, loads)
/// gives its tasks as handlers of their own, each wrapped in a block that keeps the
/// outer entry's keywords, so each is notified by its own name or topic, as in Ansible.
pub fn flatten_handlers(handlers: Vec<Task>) -> Vec<Task> {
    let mut out = Vec::new();
    for h in handlers {
        let outer = match &h.kind {
            TaskKind::Block {
                block,
                rescue,
                always,
                role: None,
            } if h.name.is_none() && rescue.is_empty() && always.is_empty() => block.clone(),
            _ => {
                out.push(h);
                continue;
            }
        };
        for inner in flatten_handlers(outer) {
            out.push(Task {
                name: inner.name.clone(),
                own: crate::project::TaskOwn {
                    listen: inner.own.listen.clone(),
                    ..Default::default()
                },
                attrs: h.attrs.clone(),
                span: inner.span.clone(),
                dir: inner.dir.clone(),
                kind: TaskKind::Block {
                    block: vec![inner],
                    rescue: Vec::new(),
                    always: Vec::new(),
                    role: None,
                },
            });
        }
    }
    out
}

/// The names a play's handlers answer to: each handler's name, `role : name` for a role's
/// handler, and every `listen` topic. `None` when a handler's name is templated (Ansible
/// renders those when it matches; kk cannot know them before the run).
pub fn handler_names(handlers: &[Task]) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for h in handlers {
        if let Some(n) = &h.name {
            if is_template(n) {
                return None;
            }
            names.push(n.clone());
            if let TaskKind::Block { role: Some(r), .. } = &h.kind {
                names.push(format!("{} : {}", r.role.name, n));
            }
        }
        names.extend(h.own.listen.iter().cloned());
    }
    Some(names)
}

/// The error of notifying `name`, which no handler answers to.
pub fn unknown_handler(name: &str, known: &[String]) -> Error {
    let e = Error::new(
        crate::error::ErrorKind::Syntax,
        format!("notify: no handler is named `{}` or listens to it", name),
    )
    .with_code("kk::notify::unknown");
    match did_you_mean(name, known.iter().map(String::as_str)) {
        Some(s) => e.help(format!("did you mean `{}`?", s)),
        None if known.is_empty() => {
            e.help("the play has no handlers: add one under `handlers:` with this name")
        }
        None => e.help(format!(
            "the play's handlers answer to: {}",
            known.join(", ")
        )),
    }
}

/// Whether `tasks` (blocks included) have an `include_role`, whose role's handlers join
/// the play's only when it runs: a play with one checks its literal `notify` names when
/// they are notified, as ansible-core does, not when it loads.
pub fn includes_roles(tasks: &[Task]) -> bool {
    tasks.iter().any(|t| match &t.kind {
        TaskKind::IncludeRole { .. } => true,
        TaskKind::Block {
            block,
            rescue,
            always,
            ..
        } => includes_roles(block) || includes_roles(rescue) || includes_roles(always),
        _ => false,
    })
}

/// Refuses the first literal `notify` name in `tasks` (blocks included) that none of
/// `handlers` answers to, at the task's `notify:`.
pub fn check_notify(tasks: &[Task], handlers: &[Task]) -> Result<()> {
    let Some(known) = handler_names(handlers) else {
        return Ok(());
    };
    walk(tasks, &known)
}

fn walk(tasks: &[Task], known: &[String]) -> Result<()> {
    for t in tasks {
        for n in &t.own.notify {
            if !is_template(n) && !known.contains(n) {
                let span = t.own.notify_span.as_ref().unwrap_or(&t.span);
                return Err(unknown_handler(n, known).at(span));
            }
        }
        if let TaskKind::Block {
            block,
            rescue,
            always,
            ..
        } = &t.kind
        {
            for list in [block, rescue, always] {
                walk(list, known)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Every playbook kk ships loads (its notify names among them).
    #[test]
    fn shipped_playbooks_load() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for entry in std::fs::read_dir(root.join("playbooks")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                if let Err(e) = crate::project::load_playbook(&path, Vec::new()) {
                    panic!("{}: {}", path.display(), e.render());
                }
            }
        }
    }
}
