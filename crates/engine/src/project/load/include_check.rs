//! The keywords a dynamic include accepts. ansible-core refuses any other on
//! `include_tasks` and `include_role` ("'notify' is not a valid attribute for a
//! IncludeRole", playbook/task_include.py's VALID_INCLUDE_KEYWORDS), so kk does too.

use crate::error::{Error, Result};
use crate::yaml::Node;

/// ansible-core's VALID_INCLUDE_KEYWORDS (besides the action and `with_<lookup>`).
const VALID: &[&str] = &[
    "action",
    "args",
    "collections",
    "debugger",
    "ignore_errors",
    "loop",
    "loop_control",
    "name",
    "no_log",
    "register",
    "run_once",
    "tags",
    "timeout",
    "vars",
    "when",
];

/// Refuses a keyword a dynamic include (`module`, canonical) does not take.
pub(super) fn check_include_keywords(node: &Node, module: &str, action_key: &str) -> Result<()> {
    let class = match module {
        "include_role" => "IncludeRole",
        "include_tasks" => "TaskInclude",
        _ => return Ok(()),
    };
    for (k, v) in node.entries() {
        if k == action_key || VALID.contains(&k.as_str()) || k.starts_with("with_") {
            continue;
        }
        return Err(Error::syntax(
            format!("'{}' is not a valid attribute for a {}", k, class),
            &v.span,
        )
        .help(format!(
            "{} takes only: {}; put `{}` on the included tasks, or use import_{} (static)",
            module,
            VALID.join(", "),
            k,
            module.trim_start_matches("include_")
        )));
    }
    Ok(())
}
