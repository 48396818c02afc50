//! `systemd_service` (also `systemd`, `service`): a unit's run state, enablement and
//! mask, in one round trip.
//!
//! The script runs `daemon-reload` when asked, reads the unit's properties with one
//! `systemctl show`, acts only where the state differs from the one wanted (restart and
//! reload always act, as in Ansible), and reports the properties again afterwards as
//! Ansible's `status` dictionary. Check mode prints the actions without running them.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::args::{Flag, Int, Text};
use super::plan::OneScript;
use super::remote;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// The run state wanted (`restarted` and `reloaded` always act).
    enum RunState for "state" {
        Started = "started",
        Stopped = "stopped",
        Restarted = "restarted",
        Reloaded = "reloaded",
    }
}

crate::closed_set! {
    /// Which systemd instance manages the unit.
    enum Scope for "scope" { System = "system", User = "user", Global = "global" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SystemdArgs {
    #[serde(default, alias = "service", alias = "unit")]
    name: Option<Text>,
    #[serde(default)]
    state: Option<Text>,
    #[serde(default)]
    enabled: Option<Flag>,
    #[serde(default)]
    masked: Option<Flag>,
    #[serde(default, alias = "daemon-reload")]
    daemon_reload: Flag,
    #[serde(default, alias = "daemon-reexec")]
    daemon_reexec: Flag,
    #[serde(default)]
    scope: Option<Scope>,
    #[serde(default)]
    no_block: Flag,
    #[serde(default)]
    force: Option<Flag>,
    // `service` module arguments accepted for compatibility.
    #[serde(default)]
    pattern: Option<Text>,
    #[serde(default)]
    sleep: Option<Int>,
    #[serde(default, rename = "use")]
    use_: Option<Text>,
}

const VALID: &[&str] = &[
    "name",
    "state",
    "enabled",
    "masked",
    "daemon_reload",
    "daemon_reexec",
    "scope",
    "no_block",
    "force",
    "pattern",
    "sleep",
    "use",
];

/// Properties reported in `status` (the ones playbooks test), from one `systemctl show`.
const PROPS: &str = "Id,Names,Description,LoadState,ActiveState,SubState,UnitFileState,UnitFilePreset,MainPID,ExecMainPID,ExecMainStatus,ActiveEnterTimestamp,InactiveEnterTimestamp,FragmentPath,Result,NRestarts";

/// Shell function `readstates`: sets `$load`, `$active` and `$ufs` from `$props` (the
/// `show` output) with builtins only, no sed per property.
const READ_STATES: &str = "readstates() {\nload=; active=; ufs=\nwhile IFS='=' read -r k v; do case \"$k\" in LoadState) load=$v ;; ActiveState) active=$v ;; UnitFileState) ufs=$v ;; esac; done <<KK_PROPS\n$props\nKK_PROPS\n}\n";

/// The arguments, parsed and checked without the host.
struct Checked {
    args: SystemdArgs,
    state: Option<RunState>,
    /// `None` for a daemon-reload alone.
    name: Option<String>,
}

fn check(raw: VarMap) -> Result<Checked> {
    let a: SystemdArgs = parse_args("systemd_service", raw, VALID)?;
    let _ = (&a.pattern, a.sleep, &a.use_);
    // An empty state (a templated `state: "{{ x | default('') }}"`) asks for none.
    let state = match a.state.as_ref().map(|s| s.as_str().trim()) {
        None | Some("") => None,
        Some(s) => Some(
            serde_json::from_value::<RunState>(Value::String(s.to_string())).map_err(|e| {
                Error::new(ErrorKind::ModuleArgs, format!("systemd_service: {}", e))
            })?,
        ),
    };
    let name = a
        .name
        .as_ref()
        .map(|n| n.as_str().to_string())
        .filter(|n| !n.is_empty());
    if name.is_none() && (state.is_some() || a.enabled.is_some() || a.masked.is_some()) {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "systemd_service: `name` is required with state, enabled or masked",
        ));
    }
    if name.is_none() && !a.daemon_reload.0 && !a.daemon_reexec.0 {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "systemd_service: give `name` (with state, enabled or masked) or daemon_reload",
        ));
    }
    Ok(Checked {
        args: a,
        state,
        name,
    })
}

/// Manages systemd units. One script ([`OneScript`]) looks at the unit and acts where its
/// state differs, in one round trip; in check mode the same script only reports
/// (`check=1`), which is the plan.
pub struct SystemdService;

#[async_trait]
impl OneScript for SystemdService {
    async fn script(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        unit_script(ctx, raw, report_only).await
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

/// Runs the unit's script; with `report_only`, it says what it would do and does nothing.
async fn unit_script(ctx: &ModuleContext, raw: VarMap, report_only: bool) -> Result<ModuleResult> {
    let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
    let (a, state, name) = (c.args, c.state, c.name);
    let scope = match a.scope {
        None | Some(Scope::System) => "",
        Some(Scope::User) => " --user",
        Some(Scope::Global) => " --global",
    };
    let mut s = format!(
        "sc() {{ systemctl{}{} \"$@\"; }}\ncheck={}\n",
        scope,
        if a.no_block.0 { " --no-block" } else { "" },
        if report_only { "1" } else { "" }
    );
    s.push_str("act() { echo \"action=$*\"; [ -n \"$check\" ] && return 0; acted=1; sc \"$@\" >&2 || { echo \"systemctl $* failed\" >&2; exit 95; }; }\nacted=\n");
    if a.daemon_reexec.0 && !report_only {
        s.push_str("sc daemon-reexec >&2 || exit 96\n");
    }
    if a.daemon_reload.0 && !report_only {
        s.push_str("sc daemon-reload >&2 || exit 96\n");
    }
    let Some(name) = name else {
        let out = ctx.exec(s, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(
                "systemd_service: daemon-reload failed",
                &out,
            ));
        }
        return Ok(ModuleResult::changed(false));
    };
    let force = if a.force == Some(Flag(true)) {
        " --force"
    } else {
        ""
    };
    s.push_str(&format!(
            "n={}\nshow() {{ sc show -p {} -- \"$n\"; }}\nprops=$(show) || {{ echo \"$props\"; exit 97; }}\n{}readstates\n",
            shell_quote(&name),
            PROPS,
            READ_STATES
        ));
    if let Some(Flag(m)) = a.masked {
        if m {
            s.push_str(&format!(
                    "if [ \"$ufs\" != masked ] && [ \"$ufs\" != masked-runtime ]; then act mask{} -- \"$n\"; ufs=masked; fi\n",
                    force
                ));
        } else {
            s.push_str("if [ \"$ufs\" = masked ] || [ \"$ufs\" = masked-runtime ]; then act unmask -- \"$n\"; [ -z \"$check\" ] && props=$(show) && readstates; fi\n");
        }
    }
    // A unit that is not there (and not merely masked) is an error, as in Ansible.
    s.push_str("if [ \"$load\" = not-found ] && [ \"$ufs\" != masked ]; then echo \"Could not find the requested service $n\" >&2; exit 98; fi\n");
    if let Some(Flag(e)) = a.enabled {
        if e {
            // UnitFileState answers without another systemctl where it is one of the
            // states `is-enabled` exits 0 for; anything else asks is-enabled (SysV
            // scripts and the like).
            s.push_str(&format!(
                    "case \"$ufs\" in enabled|enabled-runtime|static|alias|indirect|generated|transient) ;; *) if ! sc is-enabled --quiet -- \"$n\" 2>/dev/null; then act enable{} -- \"$n\"; fi ;; esac\n",
                    force
                ));
        } else {
            s.push_str("if [ \"$ufs\" != disabled ] && sc is-enabled --quiet -- \"$n\" 2>/dev/null; then case \"$(sc is-enabled -- \"$n\" 2>/dev/null)\" in static|indirect|generated|transient|alias) ;; *) act disable -- \"$n\" ;; esac; fi\n");
        }
    }
    match state {
            Some(RunState::Started) => s.push_str(
                "case \"$active\" in active|activating|reloading) ;; *) act start -- \"$n\" ;; esac\n",
            ),
            Some(RunState::Stopped) => s.push_str(
                "case \"$active\" in active|activating|reloading|deactivating) act stop -- \"$n\" ;; esac\n",
            ),
            Some(RunState::Restarted) => s.push_str("act restart -- \"$n\"\n"),
            Some(RunState::Reloaded) => s.push_str(
                "case \"$active\" in active|activating|reloading) act reload -- \"$n\" ;; *) act start -- \"$n\" ;; esac\n",
            ),
            None => {}
        }
    // The status after the actions; with none, the state read at the start is still it.
    s.push_str("echo '==kk-status=='\nif [ -n \"$acted\" ]; then show; else printf '%s\\n' \"$props\"; fi\n");
    let out = ctx.exec(s, None).await?;
    if out.rc != 0 {
        let what = match out.rc {
            98 => format!(
                "systemd_service: could not find the requested service {}",
                name
            ),
            95 => format!("systemd_service: a systemctl command on {} failed", name),
            96 => "systemd_service: daemon-reload failed".to_string(),
            97 => format!("systemd_service: systemctl show {} failed", name),
            _ => format!("systemd_service: cannot manage {}", name),
        };
        return Err(remote::remote_error(&what, &out).at_opt(ctx.span.as_ref()));
    }
    let text = out.stdout_text();
    let (head, tail) = text.split_once("==kk-status==").unwrap_or((&text, ""));
    let actions: Vec<String> = head
        .lines()
        .filter_map(|l| l.strip_prefix("action="))
        .map(str::to_string)
        .collect();
    let status = parse_show(tail);
    let mut res = ModuleResult::changed(!actions.is_empty());
    res.data.insert("name".into(), name.clone().into());
    if let Some(st) = state {
        res.data.insert("state".into(), st.as_str().into());
    }
    if let Some(Flag(e)) = a.enabled {
        res.data.insert("enabled".into(), e.into());
    }
    if let Some(Flag(m)) = a.masked {
        res.data.insert("masked".into(), m.into());
    }
    res.data.insert(
        "actions".into(),
        Value::Array(actions.into_iter().map(Value::String).collect()),
    );
    res.data.insert("status".into(), Value::Object(status));
    Ok(res)
}

/// `Key=Value` lines of `systemctl show`, in their order.
fn parse_show(text: &str) -> Map<String, Value> {
    let mut m = Map::new();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            if !k.is_empty() && !k.contains(' ') {
                m.insert(k.to_string(), Value::String(v.to_string()));
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn show_output() {
        let m = parse_show("Id=etcd.service\nActiveState=active\nDescription=a=b\n\n");
        assert_eq!(m["Id"], "etcd.service");
        assert_eq!(m["Description"], "a=b");
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn validate_at_load() {
        let check = |a: Value| SystemdService.validate(a.as_object().unwrap());
        assert!(check(json!({"name": "etcd", "state": "started", "enabled": "yes"})).is_ok());
        assert!(check(json!({"daemon_reload": true})).is_ok());
        let e = check(json!({"name": "etcd", "state": "running"})).unwrap_err();
        assert!(
            e.message.contains("systemd_service")
                && e.message.contains("`state`")
                && e.message.contains("started, stopped, restarted, reloaded"),
            "{}",
            e.message
        );
        let e = check(json!({"name": "etcd", "scope": "session"})).unwrap_err();
        assert!(e.message.contains("`scope`") && e.message.contains("system, user, global"));
        let e = check(json!({"name": "etcd", "enable": true})).unwrap_err();
        assert!(e.message.contains("systemd_service") && e.message.contains("enable"));
        let e = check(json!({"state": "started"})).unwrap_err();
        assert!(e.message.contains("`name` is required"));
    }
}
