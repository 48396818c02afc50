//! `dpkg_selections`: a package's dpkg selection (`install`, `hold`, `deinstall`,
//! `purge`), read with `dpkg --get-selections` and set with `dpkg --set-selections`;
//! nothing is installed or removed. Results (`before`, `after`, the message for an
//! unknown package) are ansible-core's.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::Text;
use super::plan::{Plan, PlanApply};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::{shell_quote, ExecOutput};
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// The selection to set.
    enum Selection for "selection" {
        Install = "install", Hold = "hold", Deinstall = "deinstall", Purge = "purge"
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DpkgArgs {
    #[serde(default)]
    name: Option<Text>,
    #[serde(default)]
    selection: Option<Text>,
}

/// The environment ansible-core runs dpkg in (its "best parsable" locale).
const ENV: &str = "export LANG=C LC_ALL=C LC_MESSAGES=C LC_CTYPE=C LANGUAGE=C\n";

/// Checked arguments; `Ok(Err(msg))` for ansible-core's failed-task messages.
fn check(raw: VarMap) -> Result<std::result::Result<(String, Selection), String>> {
    let a: DpkgArgs = parse_args("dpkg_selections", raw, &["name", "selection"])?;
    let mut missing = Vec::new();
    if a.name.is_none() {
        missing.push("name");
    }
    if a.selection.is_none() {
        missing.push("selection");
    }
    if !missing.is_empty() {
        return Ok(Err(format!(
            "missing required arguments: {}",
            missing.join(", ")
        )));
    }
    let sel = a.selection.expect("checked").0;
    let Ok(selection) = serde_json::from_value::<Selection>(serde_json::Value::String(sel.clone()))
    else {
        return Ok(Err(format!(
            "value of selection must be one of: {}, got: {}",
            Selection::VALUES.join(", "),
            sel
        )));
    };
    let name = a.name.expect("checked").0;
    if name.is_empty() || name.contains(['\n', ' ', '\t']) {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("dpkg_selections: {:?} is not a package name", name),
        ));
    }
    Ok(Ok((name, selection)))
}

/// ansible-core's `run_command(check_rc=True)` failure.
fn command_failed(cmd: &str, out: &ExecOutput) -> ModuleResult {
    let stderr = out.stderr_text();
    ModuleResult::failed(stderr.trim_end().to_string())
        .with("rc", out.rc)
        .with("cmd", cmd)
        .with("stdout", out.stdout_text())
        .with("stderr", stderr)
}

/// What apply sets.
pub struct SelectionWork {
    name: String,
    selection: Selection,
}

/// `ansible.builtin.dpkg_selections`.
pub struct DpkgSelections;

#[async_trait]
impl PlanApply for DpkgSelections {
    type Work = SelectionWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<SelectionWork>> {
        let (name, selection) = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let script = format!(
            "{ENV}command -v dpkg >/dev/null 2>&1 || {{ echo 'Failed to find required executable \"dpkg\" in paths: '\"$PATH\" >&2; exit 127; }}\nexec dpkg --get-selections {}\n",
            shell_quote(&name)
        );
        let out = ctx.exec(script, None).await?;
        if out.rc == 127 && out.stdout.is_empty() {
            return Ok(Plan::Done(ModuleResult::failed(
                out.stderr_text().trim_end().to_string(),
            )));
        }
        if out.rc != 0 {
            return Ok(Plan::Done(command_failed(
                &format!("dpkg --get-selections {}", name),
                &out,
            )));
        }
        let sel = selection.as_str();
        if out.stderr_text().contains("no packages found matching") {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Failed to find package '{}' to perform selection '{}'.",
                name, sel
            ))));
        }
        let stdout = out.stdout_text();
        let current = if stdout.is_empty() {
            "not present".to_string()
        } else {
            stdout.split_whitespace().nth(1).unwrap_or("").to_string()
        };
        let res = ModuleResult::changed(false)
            .with("before", current.clone())
            .with("after", sel);
        if current == sel {
            return Ok(Plan::Done(res));
        }
        Ok(Plan::change(res, SelectionWork { name, selection }))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: SelectionWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let script = format!(
            "{ENV}printf '%s %s\\n' {} {} | dpkg --set-selections\n",
            shell_quote(&w.name),
            w.selection.as_str()
        );
        let out = ctx.exec(script, None).await?;
        if out.rc != 0 {
            return Ok(command_failed("dpkg --set-selections", &out));
        }
        Ok(result)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn arguments() {
        let c = |v: Value| check(v.as_object().unwrap().clone());
        assert_eq!(
            c(json!({})).unwrap().unwrap_err(),
            "missing required arguments: name, selection"
        );
        assert_eq!(
            c(json!({"name": "a", "selection": "keep"}))
                .unwrap()
                .unwrap_err(),
            "value of selection must be one of: install, hold, deinstall, purge, got: keep"
        );
        assert!(c(json!({"name": "a b", "selection": "hold"})).is_err());
        let (n, s) = c(json!({"name": "bash", "selection": "hold"}))
            .unwrap()
            .unwrap();
        assert_eq!((n.as_str(), s.as_str()), ("bash", "hold"));
    }
}
