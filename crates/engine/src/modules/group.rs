//! `group`: makes a local group exist (or not) with the wanted gid, with
//! `groupadd`/`groupmod`/`groupdel` as Ansible's `group.py` runs them on Linux (same
//! command lines, same result keys). One round trip reads the groups; apply runs the
//! command and reads the group back.

use async_trait::async_trait;
use serde::Deserialize;

use super::accounts::{self, command_line};
use super::args::{Flag, Int, Text};
use super::plan::{Plan, PlanApply};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the group should exist.
    enum State for "state" { Present = "present", Absent = "absent" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupArgs {
    #[serde(default)]
    name: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    gid: Option<Int>,
    #[serde(default)]
    system: Flag,
    #[serde(default)]
    force: Flag,
    #[serde(default)]
    non_unique: Flag,
    #[serde(default)]
    local: Flag,
    #[serde(default)]
    gid_min: Option<Int>,
    #[serde(default)]
    gid_max: Option<Int>,
}

const VALID: &[&str] = &[
    "name",
    "state",
    "gid",
    "system",
    "force",
    "non_unique",
    "local",
    "gid_min",
    "gid_max",
];

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("group: {}", msg.into()))
}

fn check(raw: VarMap) -> Result<(String, GroupArgs)> {
    let a: GroupArgs = parse_args("group", raw, VALID)?;
    let name = a
        .name
        .as_ref()
        .map(|n| n.0.clone())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| arg_err("`name` is required"))?;
    if name.contains([':', '\n', ',']) || name.starts_with('-') {
        return Err(arg_err(format!("{:?} is not a valid group name", name)));
    }
    if a.local.0 {
        return Err(arg_err("`local: true` is not supported by kk").help(
            "kk manages groups with groupadd/groupmod/groupdel (libuser's lgroupadd is not used)",
        ));
    }
    if a.non_unique.0 && a.gid.is_none() {
        return Err(arg_err(
            "non_unique is True but all of the following are missing: gid",
        ));
    }
    Ok((name, a))
}

/// What apply does: the command, and what to report.
pub struct GroupWork {
    cmd: Vec<String>,
    name: String,
    system: bool,
}

/// Ansible's `group`.
pub struct GroupModule;

#[async_trait]
impl PlanApply for GroupModule {
    type Work = GroupWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<GroupWork>> {
        let (name, a) = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        // A name, not a gid: `accounts::group` would also take digits as a gid.
        let acc = accounts::read(ctx, "", "").await?;
        let existing = acc.groups.iter().find(|g| g.name == name).cloned();
        let state = a.state.unwrap_or(State::Present);
        let base = ModuleResult::ok()
            .with("name", name.clone())
            .with("state", state.as_str());
        let work = |cmd: Vec<String>| GroupWork {
            cmd,
            name: name.clone(),
            system: a.system.0,
        };
        match (state, existing) {
            (State::Absent, None) => Ok(Plan::Done(base)),
            (State::Absent, Some(_)) => {
                let mut cmd = vec!["groupdel".to_string()];
                if a.force.0 {
                    cmd.push("-f".into());
                }
                cmd.push(name.clone());
                // Check mode: only `changed`, as Ansible.
                Ok(Plan::change(ModuleResult::ok(), work(cmd)))
            }
            (State::Present, None) => {
                let mut cmd = vec!["groupadd".to_string()];
                if let Some(Int(gid)) = a.gid {
                    cmd.extend(["-g".into(), gid.to_string()]);
                    if a.non_unique.0 {
                        cmd.push("-o".into());
                    }
                }
                if a.system.0 {
                    cmd.push("-r".into());
                }
                if let Some(Int(m)) = a.gid_min {
                    cmd.extend(["-K".into(), format!("GID_MIN={}", m)]);
                }
                if let Some(Int(m)) = a.gid_max {
                    cmd.extend(["-K".into(), format!("GID_MAX={}", m)]);
                }
                cmd.push(name.clone());
                Ok(Plan::change(ModuleResult::ok(), work(cmd)))
            }
            (State::Present, Some(g)) => {
                let done = base.with("system", a.system.0).with("gid", g.gid);
                match a.gid {
                    Some(Int(gid)) if gid != g.gid as i64 => {
                        let mut cmd = vec!["groupmod".to_string(), "-g".into(), gid.to_string()];
                        if a.non_unique.0 {
                            cmd.push("-o".into());
                        }
                        cmd.push(name.clone());
                        Ok(Plan::change(done, work(cmd)))
                    }
                    _ => Ok(Plan::Done(done)),
                }
            }
        }
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: GroupWork,
        _planned: ModuleResult,
    ) -> Result<ModuleResult> {
        let out = ctx
            .exec(
                format!("LC_ALL=C; export LC_ALL\nexec {}\n", command_line(&w.cmd)),
                None,
            )
            .await?;
        if out.rc != 0 {
            return Ok(
                ModuleResult::failed(String::from_utf8_lossy(&out.stderr).into_owned())
                    .with("name", w.name),
            );
        }
        let state = if w.cmd[0] == "groupdel" {
            "absent"
        } else {
            "present"
        };
        let mut r = ModuleResult::changed(true)
            .with("name", w.name.clone())
            .with("state", state);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !stdout.is_empty() {
            r = r.with("stdout", stdout);
        }
        if !stderr.is_empty() {
            r = r.with("stderr", stderr);
        }
        let acc = accounts::read(ctx, "", "").await?;
        if let Some(g) = acc.groups.iter().find(|g| g.name == w.name) {
            r = r.with("system", w.system).with("gid", g.gid);
        }
        Ok(r)
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
        let e = |v: Value| check(v.as_object().unwrap().clone()).err().unwrap().message;
        assert!(e(json!({})).contains("`name` is required"));
        assert!(e(json!({"name": "g", "non_unique": true})).contains("gid"));
        assert!(e(json!({"name": "g", "local": true})).contains("local"));
        assert!(e(json!({"name": "g", "members": ["a"]})).contains("members"));
        assert!(check(
            json!({"name": "g", "gid": "3000", "system": "yes"})
                .as_object()
                .unwrap()
                .clone()
        )
        .is_ok());
    }
}
