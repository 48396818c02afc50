//! `package`: install, upgrade or remove OS packages with the host's package manager,
//! chosen from facts (`ansible_pkg_mgr`) or found on the host. On a dnf or yum host it is
//! [`super::dnf`] with the same arguments (less `use`), as ansible-core's package action
//! runs the dnf module.
//! On an apt host `package` is [`super::apt`] with the same arguments (less `use`), as
//! ansible-core's package action delegates, so its result has apt's fields.
//!
//! One script per call: it finds what is missing (or present, or upgradable), says so,
//! and acts only when needed, so an unchanged host costs one round trip and reports
//! `changed: false`.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Int, List, Text};
use super::plan::OneScript;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the packages should be there (and at their newest version).
    enum State for "state" {
        Present = "present" | "installed",
        Absent = "absent" | "removed",
        Latest = "latest",
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PackageArgs {
    #[serde(default, alias = "pkg")]
    name: List,
    #[serde(default)]
    state: Option<State>,
    #[serde(default, alias = "update-cache")]
    update_cache: Flag,
    #[serde(default, rename = "use")]
    use_: Option<Text>,
    /// dnf/yum: the backend (`auto`, `yum`, `yum4`, `dnf`, `dnf4`, `dnf5`), as Ansible's
    /// dnf action reads it.
    #[serde(default)]
    use_backend: Option<Text>,
    #[serde(default)]
    cache_valid_time: Option<Int>,
    #[serde(default)]
    install_recommends: Option<Flag>,
    /// apt: remove configuration files too (`--purge`).
    #[serde(default)]
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

/// Which package manager, and how to ask it things.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Manager {
    Apt,
    Dnf,
    Yum,
}

impl Manager {
    fn parse(s: &str) -> Option<Manager> {
        match s {
            "apt" | "apt-get" => Some(Manager::Apt),
            "dnf" | "dnf5" => Some(Manager::Dnf),
            "yum" => Some(Manager::Yum),
            _ => None,
        }
    }

    /// Shell test printing nothing and succeeding when package `$p` is installed.
    fn installed_test(self) -> &'static str {
        match self {
            Manager::Apt => {
                r#"dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'"#
            }
            _ => r#"rpm -q "$p" >/dev/null 2>&1"#,
        }
    }

    /// Shell command printing the installed version of `$p`.
    fn version_query(self) -> &'static str {
        match self {
            Manager::Apt => r#"dpkg-query -W -f='${Version}' "$p" 2>/dev/null"#,
            _ => r#"rpm -q --qf '%{VERSION}-%{RELEASE}' "$p" 2>/dev/null"#,
        }
    }

    fn tool(self) -> &'static str {
        match self {
            Manager::Apt => "apt-get",
            Manager::Dnf => "dnf",
            Manager::Yum => "yum",
        }
    }
}

/// `package`, and the same for `apt`, `dnf` and `yum` with the manager fixed.
pub struct Package {
    /// The manager a module name forces (`apt`), or none for `package`.
    forced: Option<&'static str>,
}

/// `package`: the manager comes from facts or the host.
pub const PACKAGE: Package = Package { forced: None };

/// Parses and checks the arguments without the host.
fn check(module: &str, raw: VarMap) -> Result<PackageArgs> {
    let a: PackageArgs = parse_args(module, raw, VALID)?;
    if (a.purge.0 || a.autoremove.0) && !matches!(module, "apt" | "package") {
        let which = if a.purge.0 { "purge" } else { "autoremove" };
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("{}: `{}` is an apt option", module, which),
        )
        .help("use the apt module (or package on a Debian host) for it"));
    }
    if a.name.0.is_empty() && !a.update_cache.0 && !a.autoremove.0 {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("{}: `name` is required", module),
        )
        .help("give a package name or a list of names (or only `update_cache: true`)"));
    }
    for n in &a.name.0 {
        if n.is_empty() || n.starts_with('-') || n.contains(char::is_whitespace) {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("{}: {:?} is not a package name", module, n),
            ));
        }
    }
    if a.use_backend.is_some() && a.use_.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "parameters are mutually exclusive: ('use', 'use_backend')",
        ));
    }
    if a.use_backend.is_some() && !matches!(module, "dnf" | "yum") {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("{}: `use_backend` is a dnf option", module),
        ));
    }
    if let Some(u) = a.use_.as_ref().map(Text::as_str).filter(|u| *u != "auto") {
        if Manager::parse(u).is_none() {
            return Err(unsupported(module, u));
        }
    }
    Ok(a)
}

fn unsupported(module: &str, manager: &str) -> Error {
    Error::new(
        ErrorKind::ModuleArgs,
        format!("{}: package manager {:?} is not supported", module, manager),
    )
    .help("kk manages packages with apt, dnf or yum")
}

/// One script finds what is missing (or present, or upgradable) and acts, in one round
/// trip; in check mode the same script stops after finding (the plan).
#[async_trait]
impl OneScript for Package {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(self.forced.unwrap_or("package"), args.clone()).map(|_| ())
    }

    /// Runs the package script; with `report_only`, it finds and changes nothing.
    async fn script(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let module = self.forced.unwrap_or("package");
        let a = check(module, raw.clone()).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let state = a.state.unwrap_or(State::Present);
        let names = &a.name.0;
        let use_ = a.use_.as_ref().map(|u| u.as_str().to_string());
        // Facts say which manager; without facts, the host is asked in the same script.
        let from_facts = ctx
            .templar
            .eval_expr("ansible_pkg_mgr | default('')", &ctx.vars)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|s| !s.is_empty());
        let chosen = self
            .forced
            .map(str::to_string)
            .or(use_.filter(|u| u != "auto"))
            .or(from_facts);
        let manager = match chosen.as_deref() {
            Some(m) => Some(Manager::parse(m).ok_or_else(|| unsupported(module, m))?),
            None => None,
        };
        let manager = match manager {
            Some(m) => m,
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
        // ansible-core's package action runs the host's package module with the task's
        // arguments less `use`: on an apt host the result is apt's, field for field.
        if manager == Manager::Apt && self.forced.is_none() {
            let mut apt_args = raw;
            apt_args.remove("use");
            return super::apt::APT.script(ctx, apt_args, report_only).await;
        }
        // On a dnf or yum host it runs the dnf module (yum is dnf's action in ansible-core
        // 2.19), with the same arguments less `use`.
        if manager != Manager::Apt {
            let mut dnf_args = raw;
            dnf_args.remove("use");
            return super::dnf::DNF
                .run_for_package(ctx, dnf_args, report_only)
                .await;
        }
        let names: Vec<String> = names.iter().map(|n| shell_quote(n)).collect();
        let list = names.join(" ");
        let mut script = String::from("export DEBIAN_FRONTEND=noninteractive LC_ALL=C\n");
        // A manager named by the task (`dnf:` on a Debian host) must be there.
        script.push_str(&format!(
            "command -v {} >/dev/null 2>&1 || {{ echo KK_NO_TOOL; exit 127; }}\n",
            manager.tool()
        ));
        script.push_str(&format!("todo=''\nfor p in {}; do\n", list));
        match state {
            State::Present => script.push_str(&format!(
                "  {} || todo=\"$todo $p\"\n",
                manager.installed_test()
            )),
            // With purge, a package removed but for its configuration is still there.
            State::Absent if a.purge.0 && manager == Manager::Apt => script.push_str(
                "  dpkg-query -W -f='${Status}' \"$p\" 2>/dev/null | grep -Eq ' (installed|config-files)$' && todo=\"$todo $p\"\n",
            ),
            State::Absent => script.push_str(&format!(
                "  {} && todo=\"$todo $p\"\n",
                manager.installed_test()
            )),
            _ => script.push_str(&format!(
                "  echo \"KK_BEFORE $p $({})\"\n  todo=\"$todo $p\"\n",
                manager.version_query()
            )),
        }
        script.push_str("done\necho \"KK_TODO:$todo\"\n");
        if (a.purge.0 || a.autoremove.0) && manager != Manager::Apt {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!(
                    "{}: `purge` and `autoremove` are apt options; this host uses {}",
                    module,
                    manager.tool()
                ),
            )
            .at_opt(ctx.span.as_ref()));
        }
        let purge = if a.purge.0 { " --purge" } else { "" };
        // `autoremove` alone: what `apt-get autoremove` would remove, counted first.
        let bare_autoremove = a.autoremove.0 && names.is_empty();
        if bare_autoremove {
            script.push_str(&format!(
                "kk_n=$(apt-get -s autoremove{} 2>/dev/null | grep -c '^Remv ')\necho \"KK_AUTOREMOVE:$kk_n\"\n",
                purge
            ));
        }
        if report_only {
            script.push_str("exit 0\n");
        } else {
            let recommends = match (manager, a.install_recommends) {
                (Manager::Apt, Some(Flag(false))) | (Manager::Apt, None) => {
                    " --no-install-recommends"
                }
                _ => "",
            };
            let update = match manager {
                Manager::Apt => {
                    let fresh = a.cache_valid_time.map(|Int(t)| {
                        format!("[ -n \"$(find /var/lib/apt/lists -maxdepth 1 -newermt \"-{} seconds\" -name '*Packages*' 2>/dev/null | head -1)\" ] || ", t)
                    });
                    format!("{}{{ apt-get update -q >/tmp/kk-apt-update.log 2>&1 || {{ cat /tmp/kk-apt-update.log >&2; exit 100; }}; echo KK_CACHE_UPDATED; }}\n", fresh.unwrap_or_default())
                }
                m => format!(
                    "{} makecache -q >/dev/null 2>&1 && echo KK_CACHE_UPDATED\n",
                    m.tool()
                ),
            };
            if a.update_cache.0 {
                script.push_str(&update);
            }
            let act = match (state, manager) {
                (State::Absent, Manager::Apt) => format!(
                    "apt-get remove -y -q{}{} $todo",
                    purge,
                    if a.autoremove.0 { " --auto-remove" } else { "" }
                ),
                (State::Absent, m) => format!("{} remove -y -q $todo", m.tool()),
                // apt-get install also upgrades a package that is already there.
                (_, Manager::Apt) => format!(
                    "apt-get install -y -q{}{} $todo",
                    recommends,
                    if a.autoremove.0 { " --auto-remove" } else { "" }
                ),
                (State::Latest, m) => format!(
                    "{} install -y -q $todo && {} upgrade -y -q $todo",
                    m.tool(),
                    m.tool()
                ),
                (_, m) => format!("{} install -y -q $todo", m.tool()),
            };
            script.push_str(&format!(
                "if [ -n \"$todo\" ]; then\n  {} || exit $?\nfi\n",
                act
            ));
            if bare_autoremove {
                script.push_str(&format!(
                    "if [ \"$kk_n\" -gt 0 ]; then\n  apt-get autoremove -y -q{} || exit $?\nfi\n",
                    purge
                ));
            }
            if state == State::Latest {
                script.push_str(&format!(
                    "for p in {}; do echo \"KK_AFTER $p $({})\"; done\n",
                    list,
                    manager.version_query()
                ));
            }
        }
        let out = ctx.exec(script, None).await?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let todo: Vec<String> = text
            .lines()
            .find_map(|l| l.strip_prefix("KK_TODO:"))
            .unwrap_or("")
            .split_whitespace()
            .map(|s| s.trim_matches('\'').to_string())
            .collect();
        let cache_updated = text.lines().any(|l| l == "KK_CACHE_UPDATED");
        let versions = |tag: &str| -> Vec<(String, String)> {
            text.lines()
                .filter_map(|l| l.strip_prefix(tag))
                .map(|l| {
                    let mut it = l.trim().splitn(2, ' ');
                    (
                        it.next().unwrap_or("").to_string(),
                        it.next().unwrap_or("").to_string(),
                    )
                })
                .collect()
        };
        if out.rc == 127 && text.lines().any(|l| l == "KK_NO_TOOL") {
            return Ok(ModuleResult::failed(format!(
                "{}: {} is not installed on this host",
                module,
                manager.tool()
            ))
            .with("rc", 127));
        }
        if out.rc != 0 {
            let mut r = ModuleResult::failed(format!(
                "{} failed with exit code {}",
                manager.tool(),
                out.rc
            ))
            .with_output(&out);
            r.data.insert("packages".into(), serde_json::json!(todo));
            return Ok(r);
        }
        let changed_pkgs: Vec<String> = if state == State::Latest {
            if report_only {
                // Without asking the repositories we can only say that missing ones would come.
                versions("KK_BEFORE ")
                    .into_iter()
                    .filter(|(_, v)| v.is_empty())
                    .map(|(p, _)| p)
                    .collect()
            } else {
                let before = versions("KK_BEFORE ");
                let after = versions("KK_AFTER ");
                after
                    .into_iter()
                    .filter(|(p, v)| !before.iter().any(|(bp, bv)| bp == p && bv == v))
                    .map(|(p, _)| p)
                    .collect()
            }
        } else {
            todo.clone()
        };
        let autoremoved: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("KK_AUTOREMOVE:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        let changed = !changed_pkgs.is_empty() || autoremoved > 0;
        let msg = match (state, changed_pkgs.is_empty(), report_only) {
            (_, true, true) if autoremoved > 0 => {
                format!("would remove {} unneeded packages", autoremoved)
            }
            (_, true, false) if autoremoved > 0 => {
                format!("removed {} unneeded packages", autoremoved)
            }
            (_, true, _) => "nothing to do".to_string(),
            (State::Absent, false, true) => format!("would remove {}", changed_pkgs.join(", ")),
            (State::Absent, false, false) => format!("removed {}", changed_pkgs.join(", ")),
            (_, false, true) => format!("would install {}", changed_pkgs.join(", ")),
            (_, false, false) => format!("installed {}", changed_pkgs.join(", ")),
        };
        let mut r = ModuleResult::changed(changed).msg(msg);
        r.data
            .insert("packages".into(), serde_json::json!(changed_pkgs));
        r.data.insert("cache_updated".into(), cache_updated.into());
        r.data.insert("pkg_mgr".into(), manager.tool().into());
        Ok(r.with(
            "stdout",
            String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
        )
        .with(
            "stderr",
            String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
        ))
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
