//! The actions of Ansible's apt module (install, remove, cleanup, upgrade, `deb:`, the
//! cache update), each the same apt-get or dpkg command line as Ansible's.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::policy::{package_split, package_status, parse_diff, parse_known, version_cmp, Known};
use super::{AptArgs, State, Upgrade, APT_GET, APT_GET_ZERO, ENV, MTIME};
use crate::connect::{shell_quote, ExecOutput};
use crate::error::Result;
use crate::modules::args::{Flag, Int};
use crate::modules::setup::fnmatch;
use crate::modules::{py_splitlines, ModuleContext, ModuleResult};

pub(super) fn expand_dpkg_options(opts: &str) -> String {
    opts.split(',')
        .map(|o| format!("-o \"Dpkg::Options::=--{}\"", o))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A result with Ansible's `stdout`/`stderr` and their `_lines`.
pub(super) fn with_out(mut r: ModuleResult, stdout: &str, stderr: &str) -> ModuleResult {
    r.data.insert("stdout".into(), stdout.into());
    r.data.insert("stderr".into(), stderr.into());
    r.data.insert("stdout_lines".into(), py_splitlines(stdout));
    r.data.insert("stderr_lines".into(), py_splitlines(stderr));
    r
}

pub(super) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Joins Ansible's `%s`-formatted command parts: empty parts leave their spaces.
pub(super) fn spaced(parts: &[&str]) -> String {
    parts.join(" ")
}

/// The line after which [`Run::probe_some`]'s script lists the automatically installed names.
const AUTO_MARK: &str = "KK_AUTO_INSTALLED";

pub(super) struct Run<'a> {
    pub(super) ctx: &'a ModuleContext,
    pub(super) a: &'a AptArgs,
    pub(super) check: bool,
    pub(super) dpkg_options: String,
    /// `cache_updated` and `cache_update_time` as Ansible reports them.
    pub(super) cache_fields: Mutex<Option<(bool, i64)>>,
    /// The cache's age is still to be read: the next command reads it first, so a
    /// run that does not update the cache needs no command of its own for it.
    pub(super) age_pending: AtomicBool,
}

impl Run<'_> {
    pub(super) async fn sh(&self, cmd: &str) -> Result<ExecOutput> {
        if !self.age_pending.swap(false, AtomicOrdering::Relaxed) {
            return self.ctx.exec(format!("{}{}\n", ENV, cmd), None).await;
        }
        let mut out = self
            .ctx
            .exec(format!("{ENV}echo \"KK_BEFORE $({MTIME})\"\n{cmd}\n"), None)
            .await?;
        let end = out.stdout.iter().position(|b| *b == b'\n');
        if let Some(end) = end {
            let line = text(&out.stdout[..end]);
            if let Some(t) = line.strip_prefix("KK_BEFORE ") {
                *self.cache_fields.lock().unwrap() = Some((false, t.trim().parse().unwrap_or(0)));
                out.stdout.drain(..=end);
            }
        }
        Ok(out)
    }

    /// Runs an apt-get or dpkg action; with `policy_rc_d`, a policy-rc.d exiting with that
    /// code is in place meanwhile (the host's own one put back after), as Ansible's PolicyRcD.
    pub(super) async fn act(&self, cmd: &str) -> Result<ExecOutput> {
        let Some(Int(code)) = self.a.policy_rc_d else {
            return self.sh(cmd).await;
        };
        let p = "/usr/sbin/policy-rc.d";
        let script = format!(
            "kk_bak=''\nif [ -e {p} ]; then kk_bak=$(mktemp -d) && mv {p} \"$kk_bak/\" || {{ echo 'Fail to move {p}' >&2; exit 1; }}; fi\nprintf '#!/bin/sh\\nexit %d\\n' {code} > {p}.kk-tmp && chmod 0755 {p}.kk-tmp && mv {p}.kk-tmp {p}\n( {cmd} )\nkk_rc=$?\nif [ -n \"$kk_bak\" ]; then mv \"$kk_bak/policy-rc.d\" {p} && rmdir \"$kk_bak\"; else rm -f {p}; fi\nexit $kk_rc"
        );
        self.sh(&script).await
    }

    pub(super) fn done(&self, mut r: ModuleResult, with_cache: bool) -> ModuleResult {
        if let (true, Some((updated, time))) = (with_cache, *self.cache_fields.lock().unwrap()) {
            r.data.insert("cache_updated".into(), updated.into());
            r.data.insert("cache_update_time".into(), time.into());
        }
        r
    }

    pub(super) fn diff_of(&self, out: &str) -> Value {
        if self.ctx.diff {
            parse_diff(out)
        } else {
            json!({})
        }
    }

    /// Ansible's `install`: Err carries a failed result.
    pub(super) async fn install(
        &self,
        specs: &[String],
        state: State,
        dpkg_options: &str,
    ) -> Result<ModuleResult> {
        let a = self.a;
        let build_dep = state == State::BuildDep;
        let specs = self.expand(specs).await?;
        let specs = match specs {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        let names: Vec<String> = specs.iter().map(|s| package_split(s).0).collect();
        let (known, auto) = if build_dep {
            (Vec::new(), Vec::new())
        } else {
            let versioned: Vec<bool> = specs
                .iter()
                .map(|s| state == State::Latest || package_split(s).2.is_some())
                .collect();
            self.probe_some(&names, |i| versioned[i], true).await?
        };
        let mut list: Vec<String> = Vec::new();
        for spec in &specs {
            if build_dep {
                list.push(format!("'{}'", spec));
                continue;
            }
            let (name, cmp, version) = package_split(spec);
            // A name the probe could not report on (odd characters) counts as unknown.
            let unknown = Known::default();
            let k = known
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, k)| k)
                .unwrap_or(&unknown);
            if !k.in_cache && !k.installed {
                return Ok(ModuleResult::failed(format!(
                    "No package matching '{}' is available",
                    name
                )));
            }
            let st = package_status(k, cmp.as_deref(), version.as_deref());
            if !st.installed && a.only_upgrade.0 {
                continue;
            }
            if !st.version_ok && st.installable.is_none() {
                return Ok(self.done(
                    ModuleResult::failed(format!(
                        "no available installation candidate for {}",
                        spec
                    )),
                    true,
                ));
            }
            let upgrade = state == State::Latest;
            match &st.installable {
                Some(v) if (!st.installed && !a.only_upgrade.0) || upgrade || !st.version_ok => {
                    match (v, &version) {
                        (Some(v), _) => list.push(format!("'{}={}'", name, v)),
                        (None, Some(ver)) => list.push(format!("'{}={}'", name, ver)),
                        (None, None) => list.push(format!("'{}'", name)),
                    }
                }
                Some(_) if st.version_ok && cmp.as_deref() == Some("=") => list.push(format!(
                    "'{}={}'",
                    name,
                    version.clone().unwrap_or_default()
                )),
                _ => {}
            }
        }
        let mut result = if list.is_empty() {
            ModuleResult::changed(false)
        } else {
            let packages = list.join(" ");
            let flag = |b: bool, s: &'static str| if b { s } else { "" };
            // build-dep takes no --auto-remove; otherwise both forms are the same line.
            let (autoremove, verb) = if build_dep {
                (false, "build-dep")
            } else {
                (a.autoremove.0, "install")
            };
            let mut cmd = spaced(&[
                APT_GET,
                "-y",
                dpkg_options,
                flag(a.only_upgrade.0, "--only-upgrade"),
                flag(state == State::Fixed, "--fix-broken"),
                flag(a.force.0, "--force-yes"),
                flag(autoremove, "--auto-remove"),
                flag(a.fail_on_autoremove.0, "--no-remove"),
                flag(self.check, "--simulate"),
                verb,
                &packages,
            ]);
            if let Some(r) = &a.default_release {
                cmd.push_str(&format!(" -t '{}'", r.as_str()));
            }
            match a.install_recommends {
                Some(Flag(false)) => cmd.push_str(" -o APT::Install-Recommends=no"),
                Some(Flag(true)) => cmd.push_str(" -o APT::Install-Recommends=yes"),
                None => {}
            }
            if a.allow_unauthenticated.0 {
                cmd.push_str(" --allow-unauthenticated");
            }
            if a.allow_downgrade.0 {
                cmd.push_str(" --allow-downgrades");
            }
            if a.allow_change_held_packages.0 {
                cmd.push_str(" --allow-change-held-packages");
            }
            let out = self.act(&cmd).await?;
            let (so, se) = (text(&out.stdout), text(&out.stderr));
            if out.rc != 0 {
                let r =
                    ModuleResult::failed(format!("'{}' failed: {}", cmd, se)).with("rc", out.rc);
                with_out(r, &so, &se)
            } else {
                let changed = !build_dep || !so.contains(APT_GET_ZERO);
                with_out(ModuleResult::changed(changed), &so, &se).with("diff", self.diff_of(&so))
            }
        };
        if !build_dep && !self.check && !result.failed && !names.is_empty() {
            let quoted: Vec<String> = names.iter().map(|n| shell_quote(n)).collect();
            let cmd = format!("/usr/bin/apt-mark manual {}", quoted.join(" "));
            // As Ansible, every named package ends up marked manual. apt-mark loads apt's
            // cache (about 0.1 s of the host's CPU) even when that changes nothing, so it
            // runs only when the probe found one of the names marked as automatically
            // installed (or a name has an architecture, which apt's record keeps apart).
            if names.iter().any(|n| n.contains(':')) || !auto.is_empty() {
                let out = self.sh(&cmd).await?;
                if out.rc != 0 {
                    let (so, se) = (text(&out.stdout), text(&out.stderr));
                    result = with_out(
                        ModuleResult::failed(format!("'{}' failed: {}", cmd, se)),
                        &so,
                        &se,
                    )
                    .with("rc", out.rc);
                    return Ok(result);
                }
            }
        }
        Ok(self.done(result, true))
    }

    /// Ansible's `expand_pkgspec_from_fnmatches`: names with `*?[]!` match the cache's names.
    pub(super) async fn expand(
        &self,
        specs: &[String],
    ) -> Result<std::result::Result<Vec<String>, ModuleResult>> {
        if !specs
            .iter()
            .any(|s| package_split(s).0.contains(['*', '?', '[', ']', '!']))
        {
            return Ok(Ok(specs.to_vec()));
        }
        let out = self.sh("apt-cache pkgnames").await?;
        let all: Vec<String> = {
            let mut v: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
            v.sort();
            v
        };
        let mut expanded = Vec::new();
        for s in specs {
            let (name, _, _) = package_split(s);
            if name.contains(['*', '?', '[', ']', '!']) {
                let m: Vec<String> = all
                    .iter()
                    .filter(|n| (name.contains(':') || !n.contains(':')) && fnmatch(&name, n))
                    .cloned()
                    .collect();
                if m.is_empty() {
                    return Ok(Err(ModuleResult::failed(format!(
                        "No package(s) matching '{}' available",
                        name
                    ))));
                }
                expanded.extend(m);
            } else {
                expanded.push(s.clone());
            }
        }
        Ok(Ok(expanded))
    }

    /// dpkg's state and apt's policy of each name, in one round trip.
    pub(super) async fn probe(&self, names: &[String]) -> Result<Vec<(String, Known)>> {
        Ok(self.probe_some(names, |_| true, false).await?.0)
    }

    /// [`Self::probe`], asking apt's policy of an installed name only when `always(i)`
    /// says its version matters (a version in the spec, `state=latest`): for an
    /// installed package wanted present, dpkg's answer decides alone, and each name apt
    /// is asked about costs the host time (30 ms a name, on every host). With `auto`, it
    /// also says which of the names apt's record marks as automatically installed.
    pub(super) async fn probe_some(
        &self,
        names: &[String],
        always: impl Fn(usize) -> bool,
        auto: bool,
    ) -> Result<(Vec<(String, Known)>, Vec<String>)> {
        let release = self
            .a
            .default_release
            .as_ref()
            .map(|r| format!(" -o APT::Default-Release={}", shell_quote(r.as_str())))
            .unwrap_or_default();
        // dpkg's state per name, then apt's policy of all plain names in one `apt-cache`
        // (each call loads apt's cache). Names with an architecture (`libc6:i386`) keep
        // their own call: apt-cache may head their section otherwise.
        let plain = |n: &str| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-' | '_'))
        };
        // dpkg's answers for all plain names come from one dpkg-query too (each loads
        // dpkg's status database); `kk_get NAME` picks a name's first line.
        let plain_names: Vec<String> = names
            .iter()
            .filter(|n| plain(n))
            .map(|n| shell_quote(n))
            .collect();
        let mut script = String::from("kk_pol=\nkk_d=\n");
        if !plain_names.is_empty() {
            script.push_str(&format!(
                "kk_d=$(dpkg-query -W -f='${{Package}} ${{db:Status-Abbrev}}${{Version}}\\n' {} 2>/dev/null)\n",
                plain_names.join(" ")
            ));
        }
        script.push_str("kk_get() {\n  kk_s=\n  while IFS= read -r kk_l; do\n    case \"$kk_l\" in \"$1 \"*) kk_s=${kk_l#\"$1 \"}; return 0 ;; esac\n  done <<KK_EOF\n$kk_d\nKK_EOF\n}\n");
        for (i, n) in names.iter().enumerate() {
            let q = shell_quote(n);
            script.push_str(&format!("echo 'KK_PKG '{q}\n"));
            if !plain(n) {
                script.push_str(&format!(
                    "kk_s=$(dpkg-query -W -f='${{db:Status-Abbrev}}${{Version}}\\n' {q} 2>/dev/null | head -1)\necho \"KK_DPKG $kk_s\"\napt-cache{release} policy {q} 2>/dev/null\n"
                ));
                continue;
            }
            script.push_str(&format!("kk_get {q}\necho \"KK_DPKG $kk_s\"\n"));
            if always(i) {
                script.push_str(&format!("kk_pol=\"$kk_pol {n}\"\n"));
            } else {
                script.push_str(&format!(
                    "case \"$kk_s\" in ?i*) ;; *) kk_pol=\"$kk_pol {n}\" ;; esac\n"
                ));
            }
        }
        script.push_str(&format!(
            "echo KK_POLICY\n[ -z \"$kk_pol\" ] || apt-cache{release} policy $kk_pol 2>/dev/null\n"
        ));
        if auto {
            script.push_str(&format!(
                "echo {AUTO_MARK}\nawk -v want={} 'BEGIN {{ RS = \"\"; n = split(want, w, \" \"); for (i = 1; i <= n; i++) k[w[i]] = 1 }} /\\nAuto-Installed: 1/ && ($2 in k) {{ print $2 }}' /var/lib/apt/extended_states 2>/dev/null\n",
                shell_quote(&names.join(" ")),
            ));
        }
        let out = self.sh(&script).await?;
        let t = text(&out.stdout);
        let (probe, marked) = match t.split_once(&format!("\n{AUTO_MARK}\n")) {
            Some((p, m)) => (p.to_string(), m.lines().map(str::to_string).collect()),
            None => (t, Vec::new()),
        };
        Ok((parse_known(&probe), marked))
    }

    /// Ansible's `remove`.
    pub(super) async fn remove(&self, specs: &[String]) -> Result<ModuleResult> {
        let a = self.a;
        let specs = match self.expand(specs).await? {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        let names: Vec<String> = specs.iter().map(|s| package_split(s).0).collect();
        let known = self.probe(&names).await?;
        let mut list = Vec::new();
        for spec in &specs {
            let (name, cmp, version) = package_split(spec);
            let Some((_, k)) = known.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            let version_ok = k.installed
                && match (cmp.as_deref(), version.as_deref()) {
                    (Some("="), Some(v)) => fnmatch(v, &k.installed_version),
                    (Some(_), Some(v)) => version_cmp(&k.installed_version, v) != Ordering::Less,
                    _ => true,
                };
            if version_ok || (k.has_files && a.purge.0) {
                list.push(format!("'{}'", spec));
            }
        }
        if list.is_empty() {
            return Ok(ModuleResult::changed(false));
        }
        let packages = list.join(" ");
        let flag = |b: bool, s: &'static str| if b { s } else { "" };
        let cmd = spaced(&[
            APT_GET,
            "-q -y",
            &self.dpkg_options,
            flag(a.purge.0, "--purge"),
            flag(a.force.0, "--force-yes"),
            flag(a.autoremove.0, "--auto-remove"),
            flag(self.check, "--simulate"),
            flag(
                a.allow_change_held_packages.0,
                "--allow-change-held-packages",
            ),
            "remove",
            &packages,
        ]);
        let out = self.act(&cmd).await?;
        let (so, se) = (text(&out.stdout), text(&out.stderr));
        if out.rc != 0 {
            let r = ModuleResult::failed(format!("'apt-get remove {}' failed: {}", packages, se))
                .with("rc", out.rc);
            return Ok(with_out(r, &so, &se));
        }
        Ok(with_out(ModuleResult::changed(true), &so, &se).with("diff", self.diff_of(&so)))
    }

    /// Ansible's `cleanup` (`autoremove` or `autoclean` alone).
    pub(super) async fn cleanup(&self, operation: &str) -> Result<ModuleResult> {
        let a = self.a;
        let flag = |b: bool, s: &'static str| if b { s } else { "" };
        let cmd = spaced(&[
            APT_GET,
            "-y",
            &self.dpkg_options,
            flag(a.purge.0, "--purge"),
            flag(a.force.0, "--force-yes"),
            operation,
            flag(self.check, "--simulate"),
        ]);
        let out = self.act(&cmd).await?;
        let (so, se) = (text(&out.stdout), text(&out.stderr));
        if out.rc != 0 {
            let r = ModuleResult::failed(format!("'apt-get {}' failed: {}", operation, se))
                .with("rc", out.rc);
            return Ok(with_out(r, &so, &se));
        }
        let marker = if operation == "autoremove" {
            "The following packages will be REMOVED"
        } else {
            "Del "
        };
        Ok(
            with_out(ModuleResult::changed(so.contains(marker)), &so, &se)
                .with("diff", self.diff_of(&so)),
        )
    }

    /// Ansible's `upgrade` with apt-get (`force_apt_get`, or no aptitude on the host).
    pub(super) async fn upgrade(&self, mode: Upgrade) -> Result<ModuleResult> {
        let a = self.a;
        let flag = |b: bool, s: &'static str| if b { s } else { "" };
        let command = match mode {
            Upgrade::Dist | Upgrade::Full => {
                format!("dist-upgrade {}", flag(a.autoremove.0, "--auto-remove"))
            }
            _ => format!(
                "upgrade --with-new-pkgs {}",
                flag(a.autoremove.0, "--auto-remove")
            ),
        };
        let mut cmd = spaced(&[
            APT_GET,
            "-y",
            &self.dpkg_options,
            flag(a.force.0, "--force-yes"),
            flag(a.fail_on_autoremove.0, "--no-remove"),
            flag(a.allow_unauthenticated.0, "--allow-unauthenticated"),
            flag(a.allow_downgrade.0, "--allow-downgrades"),
            flag(self.check, "--simulate"),
            &command,
        ]);
        if let Some(r) = &a.default_release {
            cmd.push_str(&format!(" -t '{}'", r.as_str()));
        }
        let out = self.act(&cmd).await?;
        let (so, se) = (text(&out.stdout), text(&out.stderr));
        if out.rc != 0 {
            let mut r = ModuleResult::failed(format!("'apt-get {}' failed: {}", command, se))
                .with("rc", out.rc);
            r.data.insert("stdout".into(), so.clone().into());
            r.data.insert("stdout_lines".into(), py_splitlines(&so));
            return Ok(r);
        }
        let changed = !so.contains(APT_GET_ZERO);
        let mut r = with_out(ModuleResult::changed(changed).msg(so.clone()), &so, &se);
        if changed {
            r = r.with("diff", self.diff_of(&so));
        }
        Ok(r)
    }

    /// Ansible's `install_deb` for local files (`deb:`), with their dependencies through apt.
    pub(super) async fn install_deb(&self, debs: &str) -> Result<ModuleResult> {
        let a = self.a;
        let files: Vec<&str> = debs.split(',').collect();
        let mut script = String::new();
        for f in &files {
            let q = shell_quote(f);
            script.push_str(&format!(
                "echo 'KK_DEB '{q}\ndpkg --field {q} Package Version Depends Recommends 2>&1 | sed 's/^/KK_F /'\n"
            ));
        }
        let out = self.sh(&script).await?;
        let mut to_install: Vec<String> = Vec::new();
        let mut deps: Vec<String> = Vec::new();
        let info = text(&out.stdout);
        for (idx, chunk) in info.split("KK_DEB ").skip(1).enumerate() {
            let field = |name: &str| {
                chunk
                    .lines()
                    .filter_map(|l| l.strip_prefix("KK_F "))
                    .find_map(|l| l.strip_prefix(&format!("{}: ", name)))
                    .map(str::to_string)
            };
            let (Some(pkg), Some(version)) = (field("Package"), field("Version")) else {
                let err: Vec<&str> = chunk
                    .lines()
                    .filter_map(|l| l.strip_prefix("KK_F "))
                    .collect();
                return Ok(ModuleResult::failed(format!(
                    "Unable to install package: {}",
                    err.join("\n")
                )));
            };
            let known = self.probe(std::slice::from_ref(&pkg)).await?;
            let k = known.first().map(|(_, k)| k);
            if let Some(k) = k.filter(|k| k.installed) {
                match version_cmp(&version, &k.installed_version) {
                    Ordering::Equal => continue,
                    Ordering::Less if !(a.force.0 || a.allow_downgrade.0) => {
                        return Ok(ModuleResult::failed("A later version is already installed"));
                    }
                    _ => {}
                }
            }
            // Dependencies not yet installed (the first alternative of each).
            if let Some(d) = field("Depends") {
                let names: Vec<String> = d
                    .split(',')
                    .filter_map(|alt| alt.split('|').next())
                    .map(|x| x.split_whitespace().next().unwrap_or("").to_string())
                    .filter(|x| !x.is_empty())
                    .collect();
                let known = self.probe(&names).await?;
                deps.extend(
                    known
                        .into_iter()
                        .filter(|(_, k)| !k.installed)
                        .map(|(n, _)| n),
                );
            }
            if a.install_recommends.is_some_and(|f| f.0) {
                if let Some(r) = field("Recommends") {
                    deps.extend(r.split_whitespace().map(str::to_string));
                }
            }
            to_install.push(files[idx].to_string());
        }
        let mut stdout = String::new();
        let mut stderr = String::new();
        let mut diff: Option<Value> = None;
        let mut changed = false;
        if !deps.is_empty() {
            let opts = super::dpkg_options(a);
            let r = self.install(&deps, State::Present, &opts).await?;
            if r.failed {
                return Ok(r);
            }
            changed = r.changed;
            stdout = r
                .data
                .get("stdout")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            stderr = r
                .data
                .get("stderr")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            diff = r.data.get("diff").cloned();
        }
        if to_install.is_empty() {
            let r = with_out(ModuleResult::changed(changed), &stdout, &stderr);
            return Ok(r.with("diff", diff.unwrap_or_else(|| json!(""))));
        }
        let mut options: Vec<String> = a
            .dpkg_options
            .as_ref()
            .map(|t| t.as_str())
            .unwrap_or("force-confdef,force-confold")
            .split(',')
            .map(|o| format!("--{}", o))
            .collect();
        if self.check {
            options.push("--simulate".into());
        }
        if a.force.0 {
            options.push("--force-all".into());
        }
        let quoted: Vec<String> = to_install.iter().map(|f| shell_quote(f)).collect();
        let cmd = format!("dpkg {} -i {}", options.join(" "), quoted.join(" "));
        let out = self.act(&cmd).await?;
        let (so, se) = (text(&out.stdout), text(&out.stderr));
        stdout.push_str(&so);
        stderr.push_str(&se);
        let diff = match diff {
            Some(Value::Object(mut d)) if d.contains_key("prepared") => {
                let p = d
                    .get("prepared")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                d.insert("prepared".into(), format!("{}\n\n{}", p, so).into());
                Value::Object(d)
            }
            Some(d) => d,
            None => parse_diff(&so),
        };
        if out.rc == 0 {
            Ok(with_out(ModuleResult::changed(true), &stdout, &stderr).with("diff", diff))
        } else {
            let display = format!("dpkg {} -i {}", options.join(" "), to_install.join(" "));
            let mut r = ModuleResult::failed(format!("{} failed", display));
            r.data.insert("stdout".into(), stdout.clone().into());
            r.data.insert("stderr".into(), stderr.clone().into());
            Ok(with_out(r, &stdout, &stderr))
        }
    }

    /// `update_cache`/`cache_valid_time`: Ansible's cache age check and update, and the
    /// fields it reports. Returns a failed result when the update failed.
    pub(super) async fn update_cache(&self) -> Result<Option<ModuleResult>> {
        let a = self.a;
        let want =
            a.update_cache.is_some_and(|f| f.0) || a.cache_valid_time.is_some_and(|t| t.0 != 0);
        let valid = a.cache_valid_time.map(|t| t.0).unwrap_or(0);
        let retries = a.update_cache_retries.map(|t| t.0).unwrap_or(5).max(1);
        let max_delay = a.update_cache_retry_max_delay.map(|t| t.0).unwrap_or(12);
        if !want {
            self.age_pending.store(true, AtomicOrdering::Relaxed);
            return Ok(None);
        }
        let mut script = format!("kk_before=$({MTIME})\necho \"KK_BEFORE $kk_before\"\n");
        // Without cache_valid_time the cache is always updated, as Ansible's (whose
        // sub-second times never match); whole seconds would skip a second run within one.
        let stale = if valid == 0 {
            "true".to_string()
        } else {
            format!("[ $((kk_before + {valid})) -lt $(date +%s) ]")
        };
        script.push_str(&format!("if {stale}; then\n  echo KK_STALE\n"));
        if !self.check {
            script.push_str(&format!(
                "  kk_r=0; kk_ok=0\n  while [ $kk_r -lt {retries} ]; do\n    if apt-get update -q >/tmp/kk-apt-update.$$ 2>&1; then kk_ok=1; break; fi\n    kk_r=$((kk_r + 1)); kk_d=$((1 << kk_r)); [ $kk_d -gt {max_delay} ] && kk_d={max_delay}\n    [ $kk_r -lt {retries} ] && sleep $kk_d\n  done\n  if [ $kk_ok = 0 ]; then grep '^E: ' /tmp/kk-apt-update.$$ | head -1 | sed 's/^/KK_ERR /'; rm -f /tmp/kk-apt-update.$$; exit 1; fi\n  rm -f /tmp/kk-apt-update.$$\n"
            ));
        }
        script.push_str(&format!("  echo \"KK_AFTER $({MTIME})\"\nfi\n"));
        let out = self.sh(&script).await?;
        let t = text(&out.stdout);
        let num = |tag: &str| {
            t.lines()
                .find_map(|l| l.strip_prefix(tag))
                .and_then(|v| v.trim().parse::<i64>().ok())
        };
        if out.rc != 0 {
            let err = t
                .lines()
                .find_map(|l| l.strip_prefix("KK_ERR E: "))
                .unwrap_or("unknown reason")
                .to_string();
            return Ok(Some(ModuleResult::failed(format!(
                "Failed to update apt cache after {} retries: {}",
                retries, err
            ))));
        }
        let before = num("KK_BEFORE ").unwrap_or(0);
        let mut updated = false;
        let mut time = before;
        if let Some(after) = num("KK_AFTER ") {
            updated = self.check || after != before;
            time = after;
        }
        *self.cache_fields.lock().unwrap() = Some((updated, time));
        if want && a.package.is_none() && a.upgrade.is_none() && a.deb.is_none() {
            return Ok(Some(
                ModuleResult::changed(updated)
                    .with("cache_updated", updated)
                    .with("cache_update_time", time),
            ));
        }
        Ok(None)
    }
}
