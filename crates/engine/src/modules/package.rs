//! `package`: install, upgrade or remove OS packages with the host's package manager,
//! chosen from `use`, else facts (`ansible_pkg_mgr`), else found on the host. As
//! ansible-core's package action runs the host's package module with the task's
//! arguments less `use`, on an apt host `package` is [`super::apt`] (so its result has
//! apt's fields) and on a dnf or yum host it is [`super::dnf`].

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Int, List, Text};
use super::dnf::State;
use super::plan::OneScript;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

/// The arguments `package` checks at load; apt or dnf reads them when it runs.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PackageArgs {
    #[serde(default, alias = "pkg")]
    name: List,
    /// Checked here, carried out by apt or dnf.
    #[serde(default)]
    #[allow(dead_code)]
    state: Option<State>,
    #[serde(default, alias = "update-cache")]
    update_cache: Flag,
    #[serde(default, rename = "use")]
    use_: Option<Text>,
    /// dnf/yum: the backend (`auto`, `yum`, `yum4`, `dnf`, `dnf4`, `dnf5`), as Ansible's
    /// dnf action reads it.
    #[serde(default)]
    use_backend: Option<Text>,
    /// Checked here, carried out by apt.
    #[serde(default)]
    #[allow(dead_code)]
    cache_valid_time: Option<Int>,
    /// Checked here, carried out by apt.
    #[serde(default)]
    #[allow(dead_code)]
    install_recommends: Option<Flag>,
    /// apt: remove configuration files too (`--purge`). Checked here, carried out by apt.
    #[serde(default)]
    #[allow(dead_code)]
    purge: Flag,
    /// apt: remove dependencies nothing needs any more (`--auto-remove`, or alone
    /// `apt-get autoremove`).
    #[serde(default)]
    autoremove: Flag,
}

const VALID: &[&str] = &[
    "name",
    "state",
    "update_cache",
    "use",
    "use_backend",
    "cache_valid_time",
    "install_recommends",
    "purge",
    "autoremove",
];

/// Which package module runs the task: apt, or dnf (for dnf and yum hosts alike, as yum
/// is dnf's action in ansible-core 2.19).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Manager {
    Apt,
    Dnf,
}

impl Manager {
    fn parse(s: &str) -> Option<Manager> {
        match s {
            "apt" | "apt-get" => Some(Manager::Apt),
            "dnf" | "dnf5" | "yum" => Some(Manager::Dnf),
            _ => None,
        }
    }
}

/// `package`: the manager comes from `use`, facts or the host.
pub struct Package;

/// `package`.
pub const PACKAGE: Package = Package;

/// The module name in messages.
const MODULE: &str = "package";

/// Parses and checks the arguments without the host.
fn check(raw: VarMap) -> Result<PackageArgs> {
    let a: PackageArgs = parse_args(MODULE, raw, VALID)?;
    if a.name.0.is_empty() && !a.update_cache.0 && !a.autoremove.0 {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("{}: `name` is required", MODULE),
        )
        .help("give a package name or a list of names (or only `update_cache: true`)"));
    }
    for n in &a.name.0 {
        if n.is_empty() || n.starts_with('-') || n.contains(char::is_whitespace) {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("{}: {:?} is not a package name", MODULE, n),
            ));
        }
    }
    if a.use_backend.is_some() && a.use_.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "parameters are mutually exclusive: ('use', 'use_backend')",
        ));
    }
    if a.use_backend.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("{}: `use_backend` is a dnf option", MODULE),
        ));
    }
    if let Some(u) = a.use_.as_ref().map(Text::as_str).filter(|u| *u != "auto") {
        if Manager::parse(u).is_none() {
            return Err(unsupported(u));
        }
    }
    Ok(a)
}

fn unsupported(manager: &str) -> Error {
    Error::new(
        ErrorKind::ModuleArgs,
        format!("{}: package manager {:?} is not supported", MODULE, manager),
    )
    .help("kk manages packages with apt, dnf or yum")
}

/// Chooses the manager and runs apt's or dnf's script with the task's arguments less
/// `use`; in check mode that script only reports (the plan).
#[async_trait]
impl OneScript for Package {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    /// Runs apt's or dnf's script; with `report_only`, it finds and changes nothing.
    async fn script(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let a = check(raw.clone()).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        // `use` names the manager; else facts say; else the host is asked.
        let chosen = a
            .use_
            .as_ref()
            .map(|u| u.as_str().to_string())
            .filter(|u| u != "auto")
            .or_else(|| super::dnf::pkg_mgr_fact(ctx));
        let manager = match chosen.as_deref() {
            Some(m) => Manager::parse(m).ok_or_else(|| unsupported(m))?,
            None => {
                let out = ctx.exec("for t in apt-get dnf yum; do command -v $t >/dev/null 2>&1 && { echo $t; exit 0; }; done; exit 1", None).await?;
                let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
                Manager::parse(&found).ok_or_else(|| {
                    Error::new(
                        ErrorKind::Runtime,
                        "no supported package manager (apt-get, dnf, yum) on the host",
                    )
                })?
            }
        };
        let mut args = raw;
        args.remove("use");
        match manager {
            Manager::Apt => super::apt::APT.script(ctx, args, report_only).await,
            Manager::Dnf => {
                super::dnf::DNF
                    .run_for_package(ctx, args, report_only)
                    .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn validate_at_load() {
        let check = |m: &Package, a: Value| m.validate(a.as_object().unwrap());
        assert!(check(
            &PACKAGE,
            json!({"name": "curl,socat", "state": "installed"})
        )
        .is_ok());
        assert!(check(&PACKAGE, json!({"update_cache": "yes"})).is_ok());
        let e = check(&PACKAGE, json!({"name": "curl", "state": "newest"})).unwrap_err();
        assert!(
            e.message.contains("package")
                && e.message.contains("`state`")
                && e.message.contains("present, absent, latest"),
            "{}",
            e.message
        );
        let e = check(&PACKAGE, json!({"name": "curl", "stat": "present"})).unwrap_err();
        assert!(e.message.contains("package") && e.message.contains("stat"));
        let e = check(&PACKAGE, json!({"state": "present"})).unwrap_err();
        assert!(e.message.contains("package: `name` is required"));
        assert!(check(&PACKAGE, json!({"autoremove": true})).is_ok());
        assert!(check(
            &PACKAGE,
            json!({"name": "x", "state": "absent", "purge": true})
        )
        .is_ok());
        let e = check(&PACKAGE, json!({"name": "x", "use_backend": "dnf"})).unwrap_err();
        assert!(
            e.message.contains("`use_backend` is a dnf option"),
            "{}",
            e.message
        );
        let e = check(&PACKAGE, json!({"name": "curl", "use": "zypper"})).unwrap_err();
        assert!(e.message.contains("zypper"));
    }
}
