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

    fn validate(&self, args: &VarMap) -> Result<()> {
        add_host_name(args).map(|_| ())
    }

    fn answer(&self, args: &VarMap, _c: &Controller) -> Option<Result<Answer>> {
        let name = match add_host_name(args) {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
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

/// The host `add_host` adds (`name`, or its aliases `hostname` and `host`).
fn add_host_name(args: &VarMap) -> Result<String> {
    args.get("name")
        .or_else(|| args.get("hostname"))
        .or_else(|| args.get("host"))
        .map(value_text)
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "add_host needs `name`"))
}

/// `add_hostvars`: sets variables on the hosts of a pattern (KubeKey's module); runs
/// once per task.
pub struct AddHostVars;

#[async_trait]
impl Module for AddHostVars {
    async fn run(&self, _ctx: &ModuleContext, _args: VarMap) -> Result<ModuleResult> {
        controller_only("add_hostvars")
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        hostvars_args(args).map(|_| ())
    }

    fn answer(&self, args: &VarMap, c: &Controller) -> Option<Result<Answer>> {
        Some(add_hostvars(args, c))
    }
}

/// `add_hostvars`' host pattern and variables, checked.
fn hostvars_args(args: &VarMap) -> Result<(String, &VarMap)> {
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
    Ok((pattern, vars))
}

fn add_hostvars(args: &VarMap, c: &Controller) -> Result<Answer> {
    let (pattern, vars) = hostvars_args(args)?;
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

    fn validate(&self, args: &VarMap) -> Result<()> {
        group_key(args).map(|_| ())
    }

    fn answer(&self, args: &VarMap, c: &Controller) -> Option<Result<Answer>> {
        let key = match group_key(args) {
            Ok(k) => k,
            Err(e) => return Some(Err(e)),
        };
        // Changed when the host joins the group now, as ansible-core reports it.
        let joins = !c.inventory.group_names(c.host).contains(&key);
        let parents: Vec<String> = match args.get("parents") {
            Some(Value::Array(items)) => items.iter().map(value_text).collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => vec!["all".to_string()],
        };
        Some(Ok(Answer {
            result: json!({"changed": joins, "failed": false, "add_group": key, "parent_groups": parents}),
            effects: vec![Effect::GroupBy(key)],
        }))
    }
}

/// The group `group_by` puts the host in.
fn group_key(args: &VarMap) -> Result<String> {
    Some(args.get("key").map(value_text).unwrap_or_default())
        .filter(|k| !k.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "group_by needs `key`"))
}

/// `result`: values shown at the end of the run (merged over every host and task).
pub struct Report;

#[async_trait]
impl Module for Report {
    async fn run(&self, _ctx: &ModuleContext, _args: VarMap) -> Result<ModuleResult> {
        controller_only("result")
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        if args.is_empty() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "result needs at least one value to report",
            ));
        }
        Ok(())
    }

    fn answer(&self, args: &VarMap, _c: &Controller) -> Option<Result<Answer>> {
        if let Err(e) = self.validate(args) {
            return Some(Err(e));
        }
        Some(Ok(Answer {
            result: json!({"changed": false, "failed": false}),
            effects: vec![Effect::Report(args.clone())],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_at_load() {
        let v = |a: Value| a.as_object().unwrap().clone();
        assert!(AddHost
            .validate(&v(json!({"hostname": "n1", "groups": "a,b"})))
            .is_ok());
        assert!(AddHost
            .validate(&v(json!({"groups": "a"})))
            .unwrap_err()
            .message
            .contains("`name`"));
        assert!(AddHostVars
            .validate(&v(json!({"hosts": "all", "vars": {"a": 1}})))
            .is_ok());
        let e = AddHostVars
            .validate(&v(json!({"hosts": "all", "vars": {}, "var": 1})))
            .unwrap_err();
        assert!(e.message.contains("add_hostvars") && e.message.contains("`var`"));
        assert!(AddHostVars
            .validate(&v(json!({"hosts": "all", "vars": "x"})))
            .is_err());
        assert!(GroupBy.validate(&v(json!({"key": ""}))).is_err());
        assert!(Report.validate(&v(json!({}))).is_err());
    }
}
