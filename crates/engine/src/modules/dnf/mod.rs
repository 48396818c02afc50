//! `dnf` and `yum` (in ansible-core 2.19 `yum` is dnf's action too) as Ansible's dnf module
//! does it, with the dnf command line instead of its Python API: the same decisions (what
//! is installed, what to install, upgrade or remove, with the dnf settings Ansible's module
//! sets over dnf.conf), and a result of Ansible's shape: `msg` (`Nothing to do`, the
//! check-mode sentence, `Failed to install some of the specified packages`), `rc`,
//! `results` (`Installed: <nevra>`, `Removed: <nevra>`, `No match for argument: <spec>`),
//! `failures`, and `list`'s package dicts.
//!
//! What changed comes from dnf's transaction table, printed before dnf acts, and in check
//! mode alone with `--assumeno` ([`table`]). `package` on a host
//! whose manager is dnf or yum comes here as Ansible's package action runs the dnf module.

mod script;
mod table;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::args::{Flag, Int, List, Text};
use super::plan::OneScript;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the packages should be there (and at their newest version); `package`
    /// accepts the same spellings.
    pub(super) enum State for "state" {
        Present = "present" | "installed",
        Absent = "absent" | "removed",
        Latest = "latest",
    }
}

/// Ansible's dnf options kk carries out (the others are refused by name).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DnfArgs {
    #[serde(default, alias = "pkg")]
    name: List,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    list: Option<Text>,
    #[serde(default, alias = "expire-cache")]
    update_cache: Flag,
    #[serde(default)]
    update_only: Flag,
    #[serde(default)]
    autoremove: Flag,
    #[serde(default)]
    enablerepo: List,
    #[serde(default)]
    disablerepo: List,
    #[serde(default)]
    exclude: List,
    #[serde(default)]
    disable_excludes: Option<Text>,
    #[serde(default)]
    conf_file: Option<Text>,
    #[serde(default)]
    installroot: Option<Text>,
    #[serde(default)]
    releasever: Option<Text>,
    #[serde(default)]
    disable_gpg_check: Flag,
    #[serde(default = "Flag::on")]
    install_weak_deps: Flag,
    #[serde(default)]
    skip_broken: Flag,
    #[serde(default)]
    allowerasing: Flag,
    #[serde(default)]
    nobest: Option<Flag>,
    #[serde(default)]
    best: Option<Flag>,
    #[serde(default)]
    cacheonly: Flag,
    #[serde(default)]
    security: Flag,
    #[serde(default)]
    bugfix: Flag,
    #[serde(default)]
    enable_plugin: List,
    #[serde(default)]
    disable_plugin: List,
    #[serde(default = "Flag::on")]
    sslverify: Flag,
    #[serde(default = "Flag::on")]
    validate_certs: Flag,
    /// Only `false` (Ansible's default) is carried out.
    #[serde(default)]
    allow_downgrade: Flag,
    /// Only `false` (Ansible's default) is carried out.
    #[serde(default)]
    download_only: Flag,
    /// Accepted: the dnf command waits for dnf's lock itself.
    #[serde(default)]
    #[allow(dead_code)]
    lock_timeout: Option<Int>,
    /// Accepted: deprecated and without effect in Ansible too.
    #[serde(default)]
    #[allow(dead_code)]
    install_repoquery: Option<Flag>,
    #[serde(default, rename = "use")]
    use_: Option<Text>,
    #[serde(default)]
    use_backend: Option<Text>,
}

const VALID: &[&str] = &[
    "name",
    "pkg",
    "state",
    "list",
    "update_cache",
    "expire-cache",
    "update_only",
    "autoremove",
    "enablerepo",
    "disablerepo",
    "exclude",
    "disable_excludes",
    "conf_file",
    "installroot",
    "releasever",
    "disable_gpg_check",
    "install_weak_deps",
    "skip_broken",
    "allowerasing",
    "nobest",
    "best",
    "cacheonly",
    "security",
    "bugfix",
    "enable_plugin",
    "disable_plugin",
    "sslverify",
    "validate_certs",
    "allow_downgrade",
    "download_only",
    "lock_timeout",
    "install_repoquery",
    "use",
    "use_backend",
];

/// `dnf` or `yum`: the same module under two names.
pub struct Dnf {
    module: &'static str,
}

/// `dnf`.
pub const DNF: Dnf = Dnf { module: "dnf" };
/// `yum`: dnf's action in ansible-core 2.19.
pub const YUM: Dnf = Dnf { module: "yum" };

fn args_error(module: &str, msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("{}: {}", module, msg.into()))
}

/// Parses and checks the arguments without the host, with Ansible's rules.
fn check(module: &str, raw: VarMap) -> Result<DnfArgs> {
    let a: DnfArgs = parse_args(module, raw, VALID)?;
    if a.name.0.is_empty() && a.list.is_none() && !a.update_cache.0 && !a.autoremove.0 {
        return Err(args_error(
            module,
            "one of the following is required: name, list, update_cache",
        )
        .help("give a package name or a list of names, `list`, or only `update_cache: true`"));
    }
    if !a.name.0.is_empty() && a.list.is_some() {
        return Err(args_error(
            module,
            "parameters are mutually exclusive: name|list",
        ));
    }
    if a.use_backend.is_some() && a.use_.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "parameters are mutually exclusive: ('use', 'use_backend')",
        ));
    }
    for n in &a.name.0 {
        if n.trim().is_empty() || n.starts_with('-') || n.trim().contains(char::is_whitespace) {
            return Err(args_error(module, format!("{:?} is not a package name", n)));
        }
    }
    for (flag, on) in [
        ("allow_downgrade", a.allow_downgrade.0),
        ("download_only", a.download_only.0),
    ] {
        if on {
            return Err(
                args_error(module, format!("`{}` is not supported by kk", flag))
                    .help("kk runs the dnf command line; leave it out or use `command: dnf ...`"),
            );
        }
    }
    if a.autoremove.0 && a.state.is_some_and(|s| s != State::Absent) {
        return Err(args_error(
            module,
            "`autoremove` removes packages: use it with `state: absent` or alone",
        ));
    }
    Ok(a)
}

/// The host's `ansible_pkg_mgr` fact, when facts are there: how Ansible's package and dnf
/// actions choose without asking the host.
pub(super) fn pkg_mgr_fact(ctx: &ModuleContext) -> Option<String> {
    ctx.templar
        .eval_expr("ansible_pkg_mgr | default('')", &ctx.vars)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|s| !s.is_empty())
}

/// Ansible's dnf action picks the backend from `use`/`use_backend`, else the host's package
/// manager (facts, else gathered); on a host whose manager is neither dnf nor yum it fails
/// with Ansible's message and the `pkg_mgr` it found, before anything runs. `Ok(tool)`:
/// the dnf command to run (`dnf`, or `dnf5` when asked for).
async fn backend(
    ctx: &ModuleContext,
    a: &DnfArgs,
) -> Result<std::result::Result<&'static str, ModuleResult>> {
    const VALID_BACKENDS: &[&str] = &["yum", "yum4", "dnf", "dnf4", "dnf5"];
    let from_facts = pkg_mgr_fact(ctx);
    let mut backend = a
        .use_
        .as_ref()
        .or(a.use_backend.as_ref())
        .map(|t| t.as_str().to_string())
        .unwrap_or_else(|| "auto".into());
    if matches!(backend.as_str(), "yum" | "auto") {
        if let Some(f) = from_facts {
            backend = f;
        }
    }
    let tool = |b: &str| if b == "dnf5" { "dnf5" } else { "dnf" };
    if VALID_BACKENDS.contains(&backend.as_str()) {
        return Ok(Ok(tool(&backend)));
    }
    // As Ansible's action runs `setup` for `ansible_pkg_mgr`: kk's facts, same rules (a
    // Debian host is `apt` even with dnf installed).
    let out = ctx
        .exec(super::setup::facts::SCRIPT.to_string(), None)
        .await?;
    let facts = super::setup::facts::parse(&String::from_utf8_lossy(&out.stdout));
    let found = facts
        .get("ansible_facts")
        .and_then(|f| f.get("pkg_mgr"))
        .and_then(|v| v.as_str())
        .unwrap_or("unknown")
        .to_string();
    if VALID_BACKENDS.contains(&found.as_str()) {
        return Ok(Ok(tool(&found)));
    }
    let mut r = ModuleResult::changed(false).failed_too();
    r.data.insert(
        "msg".into(),
        json!([
            "Could not detect which major revision of dnf is in use, which is required to determine module backend.",
            "You should manually specify use_backend to tell the module whether to use the dnf4 or dnf5 backend})"
        ]),
    );
    r.data
        .insert("ansible_facts".into(), json!({ "pkg_mgr": found }));
    Ok(Err(r))
}

impl Dnf {
    /// Runs the module for `package` on a dnf or yum host (Ansible's package action runs
    /// the dnf module with the same arguments).
    pub async fn run_for_package(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let a = check("package", raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        script::run(ctx, &a, "dnf", report_only).await
    }
}

#[async_trait]
impl OneScript for Dnf {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(self.module, args.clone()).map(|_| ())
    }

    /// Runs dnf; with `report_only` (check mode) dnf only says what it would do.
    async fn script(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let a = check(self.module, raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let tool = match backend(ctx, &a).await? {
            Ok(t) => t,
            Err(r) => return Ok(r),
        };
        script::run(ctx, &a, tool, report_only).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn arguments_checked_as_ansible() {
        let c = |v: Value| check("dnf", v.as_object().unwrap().clone());
        assert!(c(json!({"name": "a,b", "state": "installed"})).is_ok());
        assert!(c(json!({"list": "installed", "enablerepo": "x"})).is_ok());
        assert!(c(json!({"update_cache": true})).is_ok());
        assert!(c(json!({"autoremove": true})).is_ok());
        let e = c(json!({"state": "present"})).err().unwrap();
        assert!(e.message.contains("one of the following is required"));
        let e = c(json!({"name": "x", "list": "x"})).err().unwrap();
        assert!(e.message.contains("mutually exclusive"), "{}", e.message);
        let e = c(json!({"name": "x", "use": "dnf", "use_backend": "dnf"}))
            .err()
            .unwrap();
        assert!(e.message.contains("mutually exclusive"));
        let e = c(json!({"name": "x", "purge": true})).err().unwrap();
        assert!(e.message.contains("purge"), "{}", e.message);
        let e = c(json!({"name": "x", "allow_downgrade": true}))
            .err()
            .unwrap();
        assert!(e.message.contains("allow_downgrade"));
        assert!(c(json!({"name": "x", "state": "newest"})).is_err());
    }
}
