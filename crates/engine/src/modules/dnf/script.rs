//! The shell scripts that run dnf on the host, and Ansible's result from what they print.
//! One round trip per task: the script lists what `rpm -qa` has, sorts the names into
//! installed and missing as Ansible's module does, and runs dnf only when there is work.

use serde_json::{json, Value};

use super::table;
use super::{DnfArgs, State};
use crate::connect::shell_quote;
use crate::error::Result;
use crate::modules::{ModuleContext, ModuleResult};

/// Ansible's result for a change in check mode.
const CHECK_MSG: &str = "Check mode: No changes made, but would have if not in check mode";

/// The dnf options that give the settings Ansible's module puts over dnf.conf
/// (`install_weak_deps`, `clean_requirements_on_remove` = `autoremove`, gpg and ssl
/// checks), and the task's repository, exclude and plugin choices (disabled repositories
/// first, as Ansible applies them).
fn options(a: &DnfArgs) -> String {
    let mut o: Vec<String> = vec![
        format!(
            "--setopt=install_weak_deps={}",
            if a.install_weak_deps.0 {
                "True"
            } else {
                "False"
            }
        ),
        format!(
            "--setopt=clean_requirements_on_remove={}",
            if a.autoremove.0 { "True" } else { "False" }
        ),
    ];
    if a.disable_gpg_check.0 {
        o.push("--nogpgcheck".into());
    }
    if !a.sslverify.0 || !a.validate_certs.0 {
        o.push("--setopt=sslverify=False".into());
    }
    if let Some(c) = &a.conf_file {
        o.push(format!("--config={}", c.as_str()));
    }
    if let Some(r) = &a.installroot {
        o.push(format!("--installroot={}", r.as_str()));
    }
    if let Some(r) = &a.releasever {
        o.push(format!("--releasever={}", r.as_str()));
    }
    let each = |o: &mut Vec<String>, flag: &str, l: &[String]| {
        for v in l.iter().filter(|v| !v.is_empty()) {
            o.push(format!("--{}={}", flag, v));
        }
    };
    each(&mut o, "disablerepo", &a.disablerepo.0);
    each(&mut o, "enablerepo", &a.enablerepo.0);
    each(&mut o, "exclude", &a.exclude.0);
    each(&mut o, "disableplugin", &a.disable_plugin.0);
    each(&mut o, "enableplugin", &a.enable_plugin.0);
    if let Some(d) = &a.disable_excludes {
        o.push(format!("--disableexcludes={}", d.as_str()));
    }
    if a.skip_broken.0 {
        o.push("--setopt=strict=False".into());
    }
    match (a.nobest, a.best) {
        (Some(n), _) => o.push(format!("--setopt=best={}", !n.0)),
        (None, Some(b)) => o.push(format!("--setopt=best={}", b.0)),
        _ => {}
    }
    if a.allowerasing.0 {
        o.push("--allowerasing".into());
    }
    if a.cacheonly.0 {
        o.push("--cacheonly".into());
    }
    if a.update_cache.0 {
        o.push("--refresh".into());
    }
    if a.security.0 {
        o.push("--security".into());
    }
    if a.bugfix.0 {
        o.push("--bugfix".into());
    }
    o.iter()
        .map(|s| shell_quote(s))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The script's common start: C locale, no globbing of package specs, the tool there,
/// `kk_dnf` (dnf with the options, its output and exit code marked) and the rpm helpers.
fn prelude(a: &DnfArgs, tool: &str) -> String {
    let rpm = match a.installroot.as_ref().map(|r| r.as_str()) {
        Some(r) if r != "/" => format!("rpm --root={}", shell_quote(r)),
        _ => "rpm".to_string(),
    };
    format!(
        r#"set -f
export LC_ALL=C LANG=C
command -v {tool} >/dev/null 2>&1 || {{ echo KK_NO_TOOL; exit 127; }}
kk_dnf() {{ echo KK_DNF_START; {tool} {opts} "$@" 2>&1; kk_rc=$?; echo "KK_DNF_RC:$kk_rc"; }}
kk_q() {{ {rpm} -qa --qf '%{{NAME}}-%|EPOCH?{{%{{EPOCH}}:}}:{{}}|%{{VERSION}}-%{{RELEASE}}.%{{ARCH}}\n' 2>/dev/null; }}
kk_has() {{ {rpm} -q "$1" >/dev/null 2>&1 || {rpm} -q --whatprovides "$1" >/dev/null 2>&1 || [ -n "$({rpm} -qa "$1" 2>/dev/null)" ]; }}
"#,
        tool = tool,
        opts = options(a),
        rpm = rpm,
    )
}

/// The install/upgrade/remove script: `KK_B` lines are the packages installed before (the
/// versions an upgrade replaces), `KK_NOMATCH`/`KK_NOTINST` the specs with nothing to
/// remove or not upgraded.
fn ensure_script(a: &DnfArgs, tool: &str, state: State, check: bool) -> String {
    let specs: Vec<String> = a.name.0.iter().map(|n| shell_quote(n.trim())).collect();
    let specs = specs.join(" ");
    let yes = if check { "--assumeno" } else { "-y" };
    let mut s = prelude(a, tool);
    s.push_str("kk_q | sed 's/^/KK_B /'\n");
    let stop = if check {
        ""
    } else {
        "[ \"$kk_rc\" = 0 ] || exit 0\n"
    };
    match state {
        _ if a.name.0.is_empty() => {
            // autoremove alone
            s.push_str(&format!("kk_dnf {} autoremove\n", yes));
        }
        State::Latest if a.name.0.iter().all(|n| n.trim() == "*") => {
            s.push_str(&format!("kk_dnf {} upgrade\n", yes));
        }
        State::Absent => {
            s.push_str(&format!(
                "rm=''\nfor p in {}; do if kk_has \"$p\"; then rm=\"$rm $p\"; else echo \"KK_NOMATCH $p\"; fi; done\n",
                specs
            ));
            s.push_str(&format!("[ -z \"$rm\" ] || kk_dnf {} remove $rm\n", yes));
            if a.autoremove.0 {
                s.push_str(stop);
                s.push_str(&format!("kk_dnf {} autoremove\n", yes));
            }
        }
        _ => {
            s.push_str(&format!(
                "miss=''\nhave=''\nfor p in {}; do if kk_has \"$p\"; then have=\"$have $p\"; else miss=\"$miss $p\"; fi; done\n",
                specs
            ));
            if a.update_only.0 && state == State::Latest {
                s.push_str("for p in $miss; do echo \"KK_NOTINST $p\"; done\n");
            } else {
                s.push_str(&format!(
                    "if [ -n \"$miss\" ]; then\n  kk_dnf {} install $miss\n  {}fi\n",
                    yes, stop
                ));
            }
            if state == State::Latest {
                s.push_str(&format!(
                    "[ -z \"$have\" ] || kk_dnf {} upgrade $have\n",
                    yes
                ));
            }
        }
    }
    s.push_str("exit 0\n");
    s
}

/// One dnf run's output and exit code, from the `KK_DNF_START`/`KK_DNF_RC` marks.
struct DnfRun {
    out: String,
    rc: i32,
}

fn runs(text: &str) -> Vec<DnfRun> {
    let mut v = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if line == "KK_DNF_START" {
            cur = Some(String::new());
        } else if let Some(rc) = line.strip_prefix("KK_DNF_RC:") {
            v.push(DnfRun {
                out: cur.take().unwrap_or_default(),
                rc: rc.trim().parse().unwrap_or(1),
            });
        } else if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
    }
    v
}

fn tagged(text: &str, tag: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(tag))
        .filter_map(table::normalise)
        .collect()
}

/// Ansible's failure result (`results: []`, `rc: 1`, `failures`).
fn failure(msg: String, failures: Vec<String>) -> ModuleResult {
    ModuleResult::failed(msg)
        .with("failures", failures)
        .with("results", Value::Array(vec![]))
        .with("rc", 1)
}

/// dnf's error lines (`Error: …` and what follows), for a failure's message.
fn error_text(out: &str) -> String {
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("Error:"))
        .collect();
    let text = if lines.is_empty() {
        out.lines()
            .filter(|l| !l.starts_with("Unable to detect release version"))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        lines.join("\n")
    };
    text.trim_start_matches("Error:").trim().to_string()
}

/// Runs the module on the host: `list`, `update_cache` alone, or install/upgrade/remove.
pub async fn run(
    ctx: &ModuleContext,
    a: &DnfArgs,
    tool: &str,
    check: bool,
) -> Result<ModuleResult> {
    if let Some(l) = &a.list {
        return list(ctx, a, tool, l.as_str()).await;
    }
    if a.name.0.is_empty() && !a.autoremove.0 {
        // update_cache alone: Ansible refreshes the metadata, changes nothing.
        let out = ctx
            .exec(
                format!("{}kk_dnf makecache\nexit 0\n", prelude(a, tool)),
                None,
            )
            .await?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(r) = no_tool(out.rc, &text, tool) {
            return Ok(r);
        }
        let run = runs(&text).into_iter().next();
        return Ok(match run {
            Some(r) if r.rc != 0 => ModuleResult::failed(error_text(&r.out))
                .with("results", Value::Array(vec![]))
                .with("rc", 1),
            _ => ModuleResult::changed(false)
                .msg("Cache updated")
                .with("results", Value::Array(vec![]))
                .with("rc", 0),
        });
    }
    let state = if a.name.0.is_empty() {
        State::Absent
    } else {
        a.state.unwrap_or(State::Present)
    };
    let out = ctx.exec(ensure_script(a, tool, state, check), None).await?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some(r) = no_tool(out.rc, &text, tool) {
        return Ok(r);
    }
    let runs = runs(&text);
    // A spec dnf finds nowhere: Ansible's "No package X available." for each, and nothing done.
    let failures: Vec<String> = runs
        .iter()
        .flat_map(|r| r.out.lines())
        .filter_map(|l| l.strip_prefix("No match for argument: "))
        .map(|s| format!("No package {} available.", s.trim()))
        .collect();
    if !failures.is_empty() && state != State::Absent {
        return Ok(failure(
            "Failed to install some of the specified packages".into(),
            failures,
        ));
    }
    if let Some(r) = runs
        .iter()
        .find(|r| r.rc != 0 && !(check && r.out.contains("Operation aborted.")))
    {
        let err = error_text(&r.out);
        let msg = if err.contains("Problem") {
            format!("Depsolve Error occurred: {}", err)
        } else {
            format!("Unknown Error occurred: {}", err)
        };
        return Ok(failure(msg, vec![]));
    }
    let mut results: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("KK_NOMATCH "))
        .map(|s| format!("No match for argument: {}", s))
        .collect();
    results.extend(
        text.lines()
            .filter_map(|l| l.strip_prefix("KK_NOTINST "))
            .map(|s| {
                format!(
                    "Packages providing {} not installed due to update_only specified",
                    s
                )
            }),
    );
    // What dnf's transaction table says it does (it prints the table before acting, and
    // alone with --assumeno): only this task's packages, whatever else runs on the host.
    let mut t = table::Table::default();
    for r in &runs {
        let one = table::parse(&r.out);
        t.install.extend(one.install);
        t.remove.extend(one.remove);
        t.replaced.extend(one.replaced);
    }
    let changes = table::planned(&t, &tagged(&text, "KK_B "));
    let changed = !changes.is_empty();
    results.extend(changes);
    let msg = match (changed, check) {
        (false, _) => "Nothing to do",
        (true, true) => CHECK_MSG,
        (true, false) => "",
    };
    Ok(ModuleResult::changed(changed)
        .msg(msg)
        .with("results", results)
        .with("rc", 0))
}

/// The result when the host has no dnf command.
fn no_tool(rc: i32, text: &str, tool: &str) -> Option<ModuleResult> {
    (rc == 127 && text.lines().any(|l| l == "KK_NO_TOOL")).then(|| {
        ModuleResult::failed(format!("{} is not installed on this host", tool))
            .with("results", Value::Array(vec![]))
            .with("rc", 127)
    })
}

/// `list`: Ansible's package dicts for `installed`, `available`, `updates`/`upgrades` or a
/// package spec (installed and available), or the enabled repositories for `repos`.
async fn list(ctx: &ModuleContext, a: &DnfArgs, tool: &str, what: &str) -> Result<ModuleResult> {
    const QF: &str = "'KK_P %{name}|%{arch}|%{epoch}|%{version}|%{release}|%{repoid}'";
    let body = match what {
        "installed" => format!("kk_dnf -q repoquery --installed --qf {}\n", QF),
        "available" => format!("kk_dnf -q repoquery --qf {}\n", QF),
        "updates" | "upgrades" => format!("kk_dnf -q repoquery --upgrades --qf {}\n", QF),
        "repos" | "repositories" => "kk_dnf -q repolist --enabled\n".to_string(),
        spec => format!(
            "kk_dnf -q repoquery --installed --qf {qf} -- {s}\nkk_dnf -q repoquery --qf {qf} -- {s}\n",
            qf = QF,
            s = shell_quote(spec)
        ),
    };
    let out = ctx
        .exec(format!("{}{}exit 0\n", prelude(a, tool), body), None)
        .await?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some(r) = no_tool(out.rc, &text, tool) {
        return Ok(r);
    }
    let runs = runs(&text);
    if let Some(r) = runs.iter().find(|r| r.rc != 0) {
        return Ok(ModuleResult::failed(error_text(&r.out))
            .with("results", Value::Array(vec![]))
            .with("rc", 1));
    }
    let results: Vec<Value> = if matches!(what, "repos" | "repositories") {
        runs.iter()
            .flat_map(|r| r.out.lines())
            .filter(|l| !l.starts_with("repo id") && !l.starts_with("Unable to detect"))
            .filter_map(|l| l.split_whitespace().next())
            .map(|id| json!({"repoid": id, "state": "enabled"}))
            .collect()
    } else {
        runs.iter()
            .flat_map(|r| r.out.lines())
            .filter_map(|l| l.strip_prefix("KK_P "))
            .filter_map(package_dict)
            .collect()
    };
    Ok(ModuleResult::changed(false)
        .msg("")
        .with("results", results))
}

/// One `name|arch|epoch|version|release|repoid` line as Ansible's package dict.
fn package_dict(line: &str) -> Option<Value> {
    let f: Vec<&str> = line.split('|').collect();
    let [name, arch, epoch, version, release, repo] = f.as_slice() else {
        return None;
    };
    let epoch = if epoch.is_empty() { "0" } else { epoch };
    let envra = format!("{}:{}-{}-{}.{}", epoch, name, version, release, arch);
    Some(json!({
        "name": name,
        "arch": arch,
        "epoch": epoch,
        "release": release,
        "version": version,
        "repo": repo,
        "envra": envra,
        "nevra": envra,
        "yumstate": if *repo == "@System" { "installed" } else { "available" },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_package_dicts() {
        let r = runs("KK_B a-1-1.noarch\nKK_DNF_START\nNo match for argument: x\nKK_DNF_RC:1\nKK_DNF_START\nok\nKK_DNF_RC:0\n");
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].rc, r[0].out.as_str()),
            (1, "No match for argument: x\n")
        );
        assert_eq!(r[1].rc, 0);
        let d = package_dict("kk-a|noarch|0|2.0|1|@System").unwrap();
        assert_eq!(d["nevra"], "0:kk-a-2.0-1.noarch");
        assert_eq!(d["yumstate"], "installed");
        assert_eq!(
            error_text("Unable to detect release version\nError: Unable to find a match: x"),
            "Unable to find a match: x"
        );
    }
}
