//! A task's loop items (`loop`, or `with_<lookup>` run through its lookup), and the
//! `ansible_loop` mapping `loop_control.extended` gives each item: one place for tasks
//! and for looped includes.

use serde_json::{json, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::project::Task;
use crate::template::Templar;

/// The items of `t`'s loop for this context, or `None` when it has no loop.
pub(super) fn loop_items(
    templar: &Templar,
    t: &Task,
    ctx: &minijinja::Value,
) -> Option<Result<Vec<Value>>> {
    let l = t.own.loop_.as_ref()?;
    // `with_first_found` drops the terms that are undefined (ansible-core's backwards
    // compatibility for it alone); every other loop fails on them.
    let rendered = match t.own.loop_with.as_deref() {
        Some("first_found") => templar
            .render_value_omitting_undefined(l, ctx)
            .map(Option::unwrap_or_default),
        _ => templar.render_value(l, ctx),
    };
    let rendered = match rendered {
        Ok(v) => v,
        Err(e) => {
            return Some(Err(e
                .at(&t.span)
                .note(format!("in the loop of task `{}`", t.display_name()))))
        }
    };
    Some(match &t.own.loop_with {
        Some(name) => {
            crate::template::lookups::run_with(templar, name, rendered, ctx, &search_path(t, ctx))
                .map_err(|e| {
                    e.at(&t.span)
                        .note(format!("in `with_{}` of task `{}`", name, t.display_name()))
                })
                .map(|v| match v {
                    Value::Array(items) => items,
                    Value::Null => Vec::new(),
                    other => vec![other],
                })
        }
        None => match rendered {
            Value::Array(items) => Ok(items),
            Value::Null => Ok(Vec::new()),
            other => Err(Error::new(
                ErrorKind::Template,
                format!("loop needs a list, but got {}", other),
            )
            .at(&t.span)
            .help("use `| list`, `| dict2items` or a list literal")),
        },
    })
}

/// ansible-core's `ansible_search_path` for a `with_<lookup>` of task `t`: the role's
/// path, the directory of the task's file, then the playbook's directory.
fn search_path(t: &Task, ctx: &minijinja::Value) -> Vec<String> {
    let var = |k: &str| {
        ctx.get_attr(k)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
    };
    let mut out: Vec<String> = Vec::new();
    let task_dir = t.span.path().parent().map(|p| p.display().to_string());
    for p in [var("role_path"), task_dir, var("playbook_dir")]
        .into_iter()
        .flatten()
    {
        // Absolute, as ansible-core's: what a lookup finds is named from anywhere.
        let p = match std::path::absolute(&p) {
            Ok(abs) if !p.is_empty() => abs.display().to_string(),
            _ => continue,
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// `ansible_loop` for item `i` of `items` (`allitems` unless `extended_allitems: false`).
pub(super) fn loop_info(items: &[Value], i: usize, allitems: bool) -> Value {
    let n = items.len();
    let mut l = json!({
        "index": i + 1, "index0": i, "revindex": n - i, "revindex0": n - i - 1,
        "first": i == 0, "last": i + 1 == n, "length": n,
    });
    if allitems {
        l["allitems"] = Value::Array(items.to_vec());
    }
    if i > 0 {
        l["previtem"] = items[i - 1].clone();
    }
    if let Some(next) = items.get(i + 1) {
        l["nextitem"] = next.clone();
    }
    l
}
