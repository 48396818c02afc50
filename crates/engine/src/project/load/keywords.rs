//! Which keywords a play or task may carry, and reading the ones children inherit
//! (typed, see [`crate::project::keyword`]).

use std::sync::Arc;

use serde_json::Value;

use super::value_string;
use crate::error::{Error, Result};
use crate::project::keyword::reject_template;
use crate::project::{Inherited, Keyword};
use crate::vars::VarMap;
use crate::yaml::Node;

/// Keywords a task may carry besides its module.
pub const TASK_KEYWORDS: &[&str] = &[
    "name",
    "when",
    "loop",
    "with_items",
    "with_list",
    "with_dict",
    "with_indexed_items",
    "loop_control",
    "register",
    "changed_when",
    "failed_when",
    "ignore_errors",
    "ignore_unreachable",
    "until",
    "retries",
    "delay",
    "delegate_to",
    "delegate_facts",
    "run_once",
    "notify",
    "tags",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "environment",
    "no_log",
    "timeout",
    "throttle",
    "check_mode",
    "async",
    "poll",
    "diff",
    "args",
    "vars",
    "any_errors_fatal",
    "listen",
    "collections",
    "debugger",
    "module_defaults",
    "rescue",
    "always",
    "block",
    "connection",
    "remote_user",
    "port",
];

/// Play keywords.
pub const PLAY_KEYWORDS: &[&str] = &[
    "name",
    "hosts",
    "gather_facts",
    "vars",
    "vars_files",
    "pre_tasks",
    "roles",
    "tasks",
    "post_tasks",
    "handlers",
    "serial",
    "strategy",
    "any_errors_fatal",
    "max_fail_percentage",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "tags",
    "environment",
    "ignore_errors",
    "ignore_unreachable",
    "check_mode",
    "diff",
    "no_log",
    "run_once",
    "force_handlers",
    "gather_subset",
    "gather_timeout",
    "collections",
    "module_defaults",
    "connection",
    "remote_user",
    "port",
    "order",
    "timeout",
    "throttle",
    "vars_prompt",
    "fact_path",
    "debugger",
];

pub(super) fn string_list(node: Option<&Node>) -> Result<Vec<String>> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    match node.to_value() {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s]),
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(node.expected("a list of names")),
            })
            .collect(),
        _ => Err(node.expected("a name or a list of names")),
    }
}

fn tags_of(node: Option<&Node>) -> Result<Vec<String>> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    match node.to_value() {
        Value::String(s) => Ok(s
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect()),
        Value::Number(n) => Ok(vec![n.to_string()]),
        Value::Array(items) => Ok(items.iter().map(value_string).collect()),
        Value::Null => Ok(Vec::new()),
        _ => Err(node.expected("a tag or a list of tags")),
    }
}

/// Reads the keywords children inherit from a play, role reference, block or task.
pub(super) fn parse_inherited(node: &Node) -> Result<Inherited> {
    let get = |k: &str| node.get(k).map(Node::to_value);
    let when = match node.get("when") {
        None => Vec::new(),
        Some(n) => match n.to_value() {
            Value::Array(items) => items,
            Value::Null => Vec::new(),
            v => vec![v],
        },
    };
    let vars = match node.get("vars") {
        None => VarMap::new(),
        Some(n) => {
            let m = n.to_map("vars")?;
            for k in m.keys() {
                if !crate::ansible::is_identifier(k) {
                    return Err(Error::syntax(format!("`{}` is not a valid variable name", k), &n.span)
                        .help("variable names are letters, digits and underscores, not starting with a digit"));
                }
            }
            m
        }
    };
    for static_kw in ["register", "listen", "collections"] {
        if let Some(n) = node.get(static_kw) {
            reject_template(static_kw, n)?;
        }
    }
    Ok(Inherited {
        when,
        tags: tags_of(node.get("tags"))?,
        become_: Keyword::from_node(node, "become")?,
        become_user: Keyword::from_node(node, "become_user")?,
        become_method: Keyword::from_node(node, "become_method")?,
        become_flags: Keyword::from_node(node, "become_flags")?,
        remote_user: Keyword::from_node(node, "remote_user")?,
        environment: get("environment"),
        ignore_errors: Keyword::from_node(node, "ignore_errors")?,
        ignore_unreachable: Keyword::from_node(node, "ignore_unreachable")?,
        check_mode: Keyword::from_node(node, "check_mode")?,
        diff: Keyword::from_node(node, "diff")?,
        no_log: Keyword::from_node(node, "no_log")?,
        run_once: Keyword::from_node(node, "run_once")?,
        delegate_to: get("delegate_to"),
        delegate_facts: Keyword::from_node(node, "delegate_facts")?,
        any_errors_fatal: Keyword::from_node(node, "any_errors_fatal")?,
        timeout: Keyword::from_node(node, "timeout")?,
        throttle: Keyword::from_node(node, "throttle")?,
        vars: Arc::new(vars),
    })
}
