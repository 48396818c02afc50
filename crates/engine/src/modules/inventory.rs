//! Modules that change the run's inventory or report rather than a host: `add_host`,
//! `add_hostvars`, `group_by` and `result`. They answer on the controller (no connection
//! is opened, `changed_when`/`failed_when` do not apply, as before) with typed
//! [`Effect`]s that the executor applies after the task.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{Answer, Controller, Effect, Module, ModuleContext, ModuleResult, VarMap};
use crate::ansible::value_text;
use crate::error::{Error, ErrorKind, Result};

/// The error for a `run` that should never happen: these modules always answer first.
fn controller_only(name: &str) -> Result<ModuleResult> {
    Err(Error::new(
        ErrorKind::Runtime,
        format!("{} runs on the controller only", name),
    ))
}

/// `add_host`: adds a host (with groups and variables) to the inventory for the rest
/// of the run; runs once per task (see the registry).
pub struct AddHost;

#[async_trait]
impl Module for AddHost {
    async fn run(&self, _ctx: &ModuleContext, _args: VarMap) -> Result<ModuleResult> {
        controller_only("add_host")
    }

    fn answer(&self, args: &VarMap, _c: &Controller) -> Option<Result<Answer>> {
        let name = args
            .get("name")
            .or_else(|| args.get("hostname"))
            .or_else(|| args.get("host"))
            .map(value_text);
        let Some(name) = name else {
            return Some(Err(Error::new(
                ErrorKind::ModuleArgs,
                "add_host needs `name`",
            )));
        };
        let groups: Vec<String> = match args
            .get("groups")
            .or_else(|| args.get("group"))
            .or_else(|| args.get("groupname"))
        {
            Some(Value::Array(a)) => a.iter().map(value_text).collect(),
            Some(Value::String(s)) => s
                .split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect(),
            _ => Vec::new(),
        };
        let vars: VarMap = args
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "name" | "hostname" | "host" | "groups" | "group" | "groupname"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let result = json!({"changed": true, "failed": false, "add_host": {"host_name": name, "groups": groups, "host_vars": vars}});
        Some(Ok(Answer {
            result,
            effects: vec![Effect::AddHost { name, groups, vars }],
        }))
    }
}

/// `add_hostvars`: sets variables on the hosts of a pattern (KubeKey's module); runs
/// once per task.
pub struct AddHostVars;

#[async_trait]
impl Module for AddHostVars {
    async fn run(&self, _ctx: &ModuleContext, _args: VarMap) -> Result<ModuleResult> {
        controller_only("add_hostvars")
    }

    fn answer(&self, args: &VarMap, c: &Controller) -> Option<Result<Answer>> {
        Some(add_hostvars(args, c))
    }
}

fn add_hostvars(args: &VarMap, c: &Controller) -> Result<Answer> {
    let pattern = match args.get("hosts") {
        Some(Value::Array(a)) => a.iter().map(value_text).collect::<Vec<_>>().join(":"),
        Some(v) => value_text(v),
        None => {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "add_hostvars needs `hosts` (a host pattern)",
            ))
        }
    };
    let Some(Value::Object(vars)) = args.get("vars") else {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "add_hostvars needs `vars` (a mapping)",
        ));
    };
    if let Some(k) = args.keys().find(|k| *k != "hosts" && *k != "vars") {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("add_hostvars: unknown argument `{}`", k),
        )
        .help("valid arguments of `add_hostvars` are: hosts, vars"));
    }
    let hosts = c.inventory.select(&pattern)?;
    let effects = hosts
        .iter()
        .map(|h| Effect::HostVars {
            host: h.clone(),
            vars: vars.clone(),
        })
        .collect();
    Ok(Answer {
        result: json!({"changed": true, "failed": false, "hosts": hosts}),
        effects,
    })
}

/// `group_by`: puts the host in the group named by `key`.
pub struct GroupBy;

#[async_trait]
impl Module for GroupBy {
    async fn run(&self, _ctx: &ModuleContext, _args: VarMap) -> Result<ModuleResult> {
        controller_only("group_by")
    }

    fn answer(&self, args: &VarMap, _c: &Controller) -> Option<Result<Answer>> {
        let key = args.get("key").map(value_text).unwrap_or_default();
        if key.is_empty() {
            return Some(Err(Error::new(
                ErrorKind::ModuleArgs,
                "group_by needs `key`",
            )));
        }
        Some(Ok(Answer {
            result: json!({"changed": false, "failed": false, "add_group": key}),
            effects: vec![Effect::GroupBy(key)],
        }))
    }
}

/// `result`: values shown at the end of the run (merged over every host and task).
pub struct Report;

#[async_trait]
impl Module for Report {
    async fn run(&self, _ctx: &ModuleContext, _args: VarMap) -> Result<ModuleResult> {
        controller_only("result")
    }

    fn answer(&self, args: &VarMap, _c: &Controller) -> Option<Result<Answer>> {
        if args.is_empty() {
            return Some(Err(Error::new(
                ErrorKind::ModuleArgs,
                "result needs at least one value to report",
            )));
        }
        Some(Ok(Answer {
            result: json!({"changed": false, "failed": false}),
            effects: vec![Effect::Report(args.clone())],
        }))
    }
}
