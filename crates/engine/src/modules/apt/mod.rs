//! `apt` as Ansible's (ansible-core 2.19) module does it, without python-apt: the same
//! decisions (what is installed, which version apt would pick, what to pass to apt-get),
//! the same apt-get and dpkg command lines with the same environment, so the result has
//! Ansible's shape and content: `stdout`/`stderr` of apt-get, `cache_updated`,
//! `cache_update_time`, `diff.prepared`, and Ansible's messages on failure.
//!
//! The package state comes from `dpkg-query` and `apt-cache policy` (which applies the
//! pins and `default_release` as python-apt's policy does). aptitude is never used: Ansible
//! uses apt-get too when aptitude is absent, as on a stock Debian host; with aptitude
//! present, Ansible's `upgrade: yes|safe|full` would run aptitude instead.

mod policy;
mod run;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::args::{Flag, Int, List, Text};
use super::plan::OneScript;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};
use policy::parse_diff;
use run::{expand_dpkg_options, text, with_out, Run};

crate::closed_set! {
    /// Ansible's `state` choices.
    enum State for "state" {
        Present = "present",
        Absent = "absent",
        Latest = "latest",
        Fixed = "fixed",
        BuildDep = "build-dep",
    }
}

crate::closed_set! {
    /// Ansible's `upgrade` choices.
    enum Upgrade for "upgrade" {
        No = "no",
        Yes = "yes",
        Safe = "safe",
        Full = "full",
        Dist = "dist",
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AptArgs {
    #[serde(default, alias = "name", alias = "pkg")]
    package: Option<List>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default, alias = "update-cache")]
    update_cache: Option<Flag>,
    #[serde(default)]
    update_cache_retries: Option<Int>,
    #[serde(default)]
    update_cache_retry_max_delay: Option<Int>,
    #[serde(default)]
    cache_valid_time: Option<Int>,
    #[serde(default)]
    purge: Flag,
    #[serde(default)]
    deb: Option<Text>,
    #[serde(default, alias = "default-release")]
    default_release: Option<Text>,
    #[serde(default, alias = "install-recommends")]
    install_recommends: Option<Flag>,
    #[serde(default)]
    force: Flag,
    #[serde(default)]
    upgrade: Option<Upgrade>,
    #[serde(default)]
    dpkg_options: Option<Text>,
    #[serde(default)]
    autoremove: Flag,
    #[serde(default)]
    autoclean: Flag,
    #[serde(default)]
    fail_on_autoremove: Flag,
    /// The exit code of a `/usr/sbin/policy-rc.d` in place while apt-get and dpkg run.
    #[serde(default)]
    policy_rc_d: Option<Int>,
    #[serde(default)]
    only_upgrade: Flag,
    /// Accepted; kk always uses apt-get (Ansible does too without aptitude).
    #[serde(default)]
    #[allow(dead_code)]
    force_apt_get: Flag,
    #[serde(default)]
    clean: Flag,
    #[serde(default, alias = "allow-unauthenticated")]
    allow_unauthenticated: Flag,
    #[serde(
        default,
        alias = "allow-downgrade",
        alias = "allow_downgrades",
        alias = "allow-downgrades"
    )]
    allow_downgrade: Flag,
    #[serde(default)]
    allow_change_held_packages: Flag,
    #[serde(default)]
    lock_timeout: Option<Int>,
    /// Accepted; kk needs no python3-apt on the host, so there is nothing to install.
    #[serde(default)]
    #[allow(dead_code)]
    auto_install_module_deps: Option<Flag>,
}

const VALID: &[&str] = &[
    "state",
    "update_cache",
    "update_cache_retries",
    "update_cache_retry_max_delay",
    "cache_valid_time",
    "purge",
    "package",
    "name",
    "pkg",
    "deb",
    "default_release",
    "install_recommends",
    "force",
    "upgrade",
    "dpkg_options",
    "autoremove",
    "autoclean",
    "fail_on_autoremove",
    "policy_rc_d",
    "only_upgrade",
    "force_apt_get",
    "clean",
    "allow_unauthenticated",
    "allow_downgrade",
    "allow_change_held_packages",
    "lock_timeout",
    "auto_install_module_deps",
];

const APT_GET: &str = "/usr/bin/apt-get";
const APT_GET_ZERO: &str = "\n0 upgraded, 0 newly installed, 0 to remove";

/// The environment Ansible's apt module gives apt-get and dpkg: non-interactive, and the
/// most parsable locale the host has (Ansible's `get_best_parsable_locale`).
const ENV: &str = "kk_loc=C\nkk_all=\"\n$(locale -a 2>/dev/null)\n\"\nfor l in C.utf8 C.UTF-8 en_US.utf8 en_US.UTF-8 C POSIX; do case $kk_all in *\"\n$l\n\"*) kk_loc=$l; break ;; esac; done\nexport DEBIAN_FRONTEND=noninteractive DEBIAN_PRIORITY=critical LANG=$kk_loc LC_ALL=$kk_loc LC_MESSAGES=$kk_loc LC_CTYPE=$kk_loc LANGUAGE=$kk_loc\n";

/// The mtime Ansible reads as the cache's age (the update stamp, else the lists directory).
const MTIME: &str = "if [ -e /var/lib/apt/periodic/update-success-stamp ]; then stat -c %Y /var/lib/apt/periodic/update-success-stamp; elif [ -e /var/lib/apt/lists ]; then stat -c %Y /var/lib/apt/lists; else echo 0; fi";

/// `apt`.
pub struct Apt;

/// The `apt` module.
pub const APT: Apt = Apt;

fn check(raw: VarMap) -> Result<AptArgs> {
    let given: Vec<&str> = ["deb", "package", "name", "pkg", "upgrade"]
        .into_iter()
        .filter(|k| raw.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    let a: AptArgs = parse_args("apt", raw.clone(), VALID)?;
    let exclusive = given
        .iter()
        .map(|k| {
            if matches!(*k, "name" | "pkg") {
                "package"
            } else {
                k
            }
        })
        .collect::<std::collections::BTreeSet<_>>();
    if exclusive.len() > 1 {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "apt: parameters are mutually exclusive: deb|package|upgrade",
        ));
    }
    Ok(a)
}

/// The `-o Dpkg::Options::=…` and lock-timeout options every apt-get line carries.
fn dpkg_options(a: &AptArgs) -> String {
    format!(
        "{} -o DPkg::Lock::Timeout={}",
        expand_dpkg_options(
            a.dpkg_options
                .as_ref()
                .map(|t| t.as_str())
                .unwrap_or("force-confdef,force-confold")
        ),
        a.lock_timeout.map(|i| i.0).unwrap_or(60)
    )
}

#[async_trait]
impl OneScript for Apt {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    /// With `report_only` (check mode) apt-get and dpkg run with `--simulate`, as Ansible's.
    async fn script(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let a = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let dpkg_options = dpkg_options(&a);
        if a.clean.0 {
            let out = ctx.exec(format!("{}apt-get clean\n", ENV), None).await?;
            let (so, se) = (text(&out.stdout), text(&out.stderr));
            if out.rc != 0 || !se.is_empty() {
                let msg = if se.is_empty() {
                    "apt-get clean failed".to_string()
                } else {
                    format!("apt-get clean failed: {}", se)
                };
                let mut r = ModuleResult::failed(msg).with("rc", out.rc);
                r.data.insert("stdout".into(), so.into());
                return Ok(r);
            }
            if a.package.is_none() && a.upgrade.is_none() && a.deb.is_none() {
                let diff = if ctx.diff { parse_diff(&so) } else { json!({}) };
                return Ok(
                    with_out(ModuleResult::changed(true).msg(so.clone()), &so, &se)
                        .with("diff", diff),
                );
            }
        }
        let run = Run {
            ctx,
            a: &a,
            check: report_only,
            dpkg_options,
            cache_fields: std::sync::Mutex::new(None),
            age_pending: std::sync::atomic::AtomicBool::new(false),
        };
        if let Some(r) = run.update_cache().await? {
            return Ok(r);
        }
        if let Some(mode) = a.upgrade.filter(|u| *u != Upgrade::No) {
            return run.upgrade(mode).await;
        }
        let state = a.state.unwrap_or(State::Present);
        if let Some(deb) = &a.deb {
            if state != State::Present {
                return Ok(ModuleResult::failed("deb only supports state=present"));
            }
            if deb.as_str().contains("://") {
                return Ok(ModuleResult::failed(
                    "apt: `deb` from a URL is not supported by kk; fetch it with get_url first",
                ));
            }
            return run.install_deb(deb.as_str()).await;
        }
        let all: Vec<String> = a.package.as_ref().map(|l| l.0.clone()).unwrap_or_default();
        let packages: Vec<String> = all
            .iter()
            .filter(|p| *p != "*")
            .map(|p| p.trim().to_string())
            .collect();
        if state == State::Latest && all.iter().any(|p| p == "*") {
            if !packages.is_empty() {
                return Ok(ModuleResult::failed(
                    "unable to install additional packages when upgrading all installed packages",
                ));
            }
            return run.upgrade(Upgrade::Yes).await;
        }
        if let Some(p) = packages.iter().find(|p| p.matches('=').count() > 1) {
            return Ok(ModuleResult::failed(format!("invalid package spec: {}", p)));
        }
        if packages.is_empty() {
            if a.autoclean.0 {
                return run.cleanup("autoclean").await;
            }
            if a.autoremove.0 {
                return run.cleanup("autoremove").await;
            }
        }
        if state == State::Absent {
            return run.remove(&packages).await;
        }
        let opts = run.dpkg_options.clone();
        run.install(&packages, state, &opts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn arguments_checked_as_ansible() {
        let c = |v: Value| check(v.as_object().unwrap().clone());
        assert!(c(json!({"name": "x", "state": "latest"})).is_ok());
        // Ansible counts defaults (autoremove, upgrade) for required_one_of: always met.
        assert!(c(json!({"state": "present"})).is_ok());
        let e = c(json!({"name": "x", "deb": "/x.deb"})).err().unwrap();
        assert!(e.message.contains("mutually exclusive"));
        assert!(c(json!({"name": "x", "state": "newest"})).is_err());
    }
}
