//! `--syntax-check`, `--list-hosts`, `--list-tasks` and `--list-tags`: the playbook is
//! loaded (imports and roles expanded, as a run loads it) but nothing runs, and the
//! report is written in ansible-playbook's words and layout.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::RunOptions;
use crate::error::Result;
use crate::project::{load_playbook_with, value_text, Play, Playbook, Task, TaskKind};
use crate::template::Templar;
use crate::vars::{Layers, Magic, VarView};

/// What to list.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListWhat {
    /// `--list-hosts`.
    pub hosts: bool,
    /// `--list-tasks`.
    pub tasks: bool,
    /// `--list-tags`.
    pub tags: bool,
}

/// Loads and checks the playbook as a run would, running nothing (`--syntax-check`):
/// an error is a load error (exit 4).
pub fn syntax_check(opts: &RunOptions) -> Result<()> {
    load(opts).map(|_| ())
}

/// The playbook as a run loads and checks it.
fn load(opts: &RunOptions) -> Result<Playbook> {
    let playbook = load_playbook_with(
        &opts.playbook,
        opts.roles_path.clone(),
        Arc::new(opts.extra_vars.clone()),
    )?;
    crate::modules::validate::check_playbook(&playbook)?;
    Ok(playbook)
}

/// The text ansible-playbook prints for `--list-hosts/--list-tasks/--list-tags`
/// (hosts in inventory order, where Ansible prints a set in no set order).
pub fn list_playbook(opts: &RunOptions, what: ListWhat) -> Result<String> {
    let playbook = load(opts)?;
    let mut out = format!("\nplaybook: {}\n", opts.playbook.display());
    for (i, play) in playbook.plays.iter().enumerate() {
        let patterns = play_patterns(opts, play)?;
        let play_tags: BTreeSet<String> = play.attrs.tags.iter().cloned().collect();
        out.push_str(&format!(
            "\n  play #{} ({}): {}\tTAGS: [{}]\n",
            i + 1,
            patterns.join(","),
            play.name,
            play_tags.iter().cloned().collect::<Vec<_>>().join(",")
        ));
        if what.hosts {
            let hosts = play_hosts(opts, play, &patterns)?;
            let quoted: Vec<String> = patterns.iter().map(|p| py_repr(p)).collect();
            out.push_str(&format!(
                "    pattern: [{}]\n    hosts ({}):\n",
                quoted.join(", "),
                hosts.len()
            ));
            for h in hosts {
                out.push_str(&format!("      {}\n", h));
            }
        }
        if what.tasks || what.tags {
            let mut lines = String::new();
            let mut all_tags = play_tags.clone();
            if what.tasks {
                lines.push_str("    tasks:\n");
            }
            let sections = [&play.pre_tasks, &play.roles, &play.tasks, &play.post_tasks];
            for list in sections {
                walk(
                    list,
                    &play.attrs.tags,
                    None,
                    opts,
                    what.tasks,
                    &mut lines,
                    &mut all_tags,
                );
            }
            if what.tags {
                lines.push_str(&format!(
                    "      TASK TAGS: [{}]\n",
                    all_tags.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            out.push_str(&lines);
        }
    }
    Ok(out)
}

/// Python's `repr` of a string, as Ansible prints the play's pattern list.
fn py_repr(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{}\"", s)
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// The play's `hosts:` patterns, templated with the run's extra variables.
fn play_patterns(opts: &RunOptions, play: &Play) -> Result<Vec<String>> {
    let templar = Arc::new(Templar::new());
    let mut l = Layers::default();
    l.push(Arc::new(opts.config.clone()));
    l.push(Arc::new(opts.extra_vars.clone()));
    let view = VarView::new(l, Magic::default(), templar.clone());
    let rendered = templar
        .render_value(&play.hosts, &view.context())
        .map_err(|e| e.at(&play.span))?;
    Ok(match rendered {
        Value::Array(items) => items.iter().map(value_text).collect(),
        other => vec![value_text(&other)],
    })
}

/// The hosts a play would run on, `--limit` applied.
fn play_hosts(opts: &RunOptions, play: &Play, patterns: &[String]) -> Result<Vec<String>> {
    let inv = &opts.inventory;
    let mut hosts = inv
        .select(&patterns.join(":"))
        .map_err(|e| e.at(&play.span))?;
    if let Some(limit) = &opts.limit {
        let allowed = inv.select(limit)?;
        hosts.retain(|h| allowed.contains(h));
    }
    Ok(hosts)
}

/// Lists the tasks of a task list that `--tags`/`--skip-tags` select (only a block's main
/// tasks, as Ansible lists them), collecting their tags.
fn walk(
    list: &[Task],
    outer: &[String],
    role: Option<&str>,
    opts: &RunOptions,
    tasks: bool,
    out: &mut String,
    all_tags: &mut BTreeSet<String>,
) {
    for t in list {
        let mut tags: Vec<String> = outer.to_vec();
        for tag in &t.attrs.tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        if let TaskKind::Block { block, role: r, .. } = &t.kind {
            let role = r.as_ref().map(|r| r.role.name.as_str()).or(role);
            walk(block, &tags, role, opts, tasks, out, all_tags);
            continue;
        }
        if !opts.tags.selects(&tags) {
            continue;
        }
        let sorted: BTreeSet<String> = tags.iter().cloned().collect();
        all_tags.extend(sorted.iter().cloned());
        if tasks {
            let name = match (&t.name, role) {
                (Some(n), Some(r)) => format!("{} : {}", r, n),
                (Some(n), None) => n.clone(),
                (None, _) => action(t),
            };
            out.push_str(&format!(
                "      {}\tTAGS: [{}]\n",
                name,
                sorted.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

/// The action of an unnamed task, as Ansible prints it.
fn action(t: &Task) -> String {
    match &t.kind {
        TaskKind::Module { module, .. } => module.clone(),
        TaskKind::IncludeTasks { .. } => "include_tasks".into(),
        TaskKind::IncludeRole { .. } => "include_role".into(),
        TaskKind::Meta(_) => "meta".into(),
        TaskKind::Block { .. } => "block".into(),
    }
}
