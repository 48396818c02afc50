//! `service_facts`: `ansible_facts.services` as ansible-core 2.19's module builds it, from
//! one remote script (no Python on the host).
//!
//! The script runs the commands Ansible runs, under the same conditions: `service
//! --status-all` when `service` exists and neither `chkconfig` nor `rc-status` does
//! (sysv entries); on a systemd host `systemctl list-units`, `systemctl list-unit-files` and
//! `systemctl show NAME --property=ActiveState` for each unit file that list-units did not
//! name. The parsing happens here, rule by rule from `SystemctlScanService` and
//! `ServiceScanService._list_sysvinit`. Upstart, chkconfig and OpenRC listings are not
//! read (kk's targets are systemd hosts): such hosts get their sysv and systemd entries.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{parse_args, Effect, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::Result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// The remote script: every listing under a `==kk:` header line.
const SCRIPT: &str = r#"LC_ALL=C; LANG=C; export LC_ALL LANG
PATH="$PATH:/sbin:/usr/sbin:/usr/local/sbin:/usr/bin:/usr/local/bin"
have() { command -v "$1" >/dev/null 2>&1; }
if have service && ! have chkconfig && ! have rc-status; then
  echo '==kk:sysv'; service --status-all 2>/dev/null
fi
if have systemctl; then
  sd=
  for c in /run/systemd/system/ /dev/.run/systemd/ /dev/.systemd/; do [ -e "$c" ] && sd=1; done
  if [ -z "$sd" ]; then i=; read -r i </proc/1/comm 2>/dev/null; [ "$i" = systemd ] && sd=1; fi
  if [ -n "$sd" ]; then
    u=$(systemctl list-units --no-pager --type service --all --plain 2>/dev/null)
    echo '==kk:units'; printf '%s\n' "$u"
    known=$(printf '%s\n' "$u" | while read -r n rest; do case $n in *.service*) echo "$n";; esac; done)
    f=$(systemctl list-unit-files --no-pager --type service --all 2>/dev/null)
    echo '==kk:files'; printf '%s\n' "$f"
    echo '==kk:show'
    printf '%s\n' "$f" | while read -r n rest; do
      case $n in *.service*) ;; *) continue;; esac
      case "
$known
" in *"
$n
"*) continue;; esac
      s=$(systemctl show "$n" --property=ActiveState 2>/dev/null) && r=0 || r=$?
      printf '%s %s %s\n' "$n" "$r" "$s"
    done
  fi
fi
echo '==kk:end'
"#;

/// The states `SystemctlScanService` keeps as a unit's status whatever the unit files say.
const BAD_STATES: &[&str] = &["not-found", "masked", "failed"];

/// Gathers the host's services.
pub struct ServiceFacts;

#[async_trait]
impl Module for ServiceFacts {
    fn validate(&self, args: &VarMap) -> Result<()> {
        parse_args::<NoArgs>("service_facts", args.clone(), &[]).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        parse_args::<NoArgs>("service_facts", raw, &[])?;
        let out = ctx.exec(SCRIPT, None).await?;
        let text = out.stdout_text();
        if !text.contains("==kk:end") {
            return Ok(ModuleResult::failed(format!(
                "service_facts: the listing script stopped early (rc {})",
                out.rc
            ))
            .with_output(&out));
        }
        let services = parse(&text);
        if services.is_empty() {
            let mut r = ModuleResult::ok().msg(
                "Failed to find any services. This can be due to privileges or some other configuration issue.",
            );
            r.skipped = true;
            return Ok(r);
        }
        Ok(ModuleResult::ok().with_facts(
            fact_vars("services", Value::Object(services)),
            Effect::GatheredFacts,
        ))
    }
}

/// A module's facts as the host's facts layer holds them: under `ansible_facts` and, as
/// Ansible injects them, as top-level variables of the same name.
pub(crate) fn fact_vars(name: &str, value: Value) -> VarMap {
    let mut m = VarMap::new();
    m.insert(name.into(), value.clone());
    m.insert("ansible_facts".into(), json!({ name: value }));
    m
}

/// The sections of the script's output, by header name.
fn sections(text: &str) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut cur = "";
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("==kk:") {
            cur = h;
            out.entry(h).or_default();
        } else if let Some(v) = out.get_mut(cur) {
            v.push(line);
        }
    }
    out
}

/// The services map from the script's output (keys sorted, values in Ansible's shape).
fn parse(text: &str) -> VarMap {
    let s = sections(text);
    let mut services: BTreeMap<String, Value> = BTreeMap::new();
    // `_list_sysvinit`: `^\s*\[ (\+|\-) \]\s+(.+)$`.
    for line in s.get("sysv").into_iter().flatten() {
        let l = line.trim_start();
        let state = match l.get(..5) {
            Some("[ + ]") => "running",
            Some("[ - ]") => "stopped",
            _ => continue,
        };
        let rest = &l[5..];
        let name = rest.trim_start();
        if name.len() == rest.len() || name.is_empty() {
            continue;
        }
        services.insert(
            name.to_string(),
            json!({"name": name, "state": state, "source": "sysv"}),
        );
    }
    let mut systemd: BTreeMap<String, Value> = BTreeMap::new();
    for line in s.get("units").into_iter().flatten() {
        if !line.contains(".service") {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 {
            continue;
        }
        let head = &fields[..fields.len() - 1];
        let status = BAD_STATES
            .iter()
            .find(|b| head.contains(b))
            .copied()
            .unwrap_or(fields[2]);
        let state = if fields[3] == "running" {
            "running"
        } else {
            "stopped"
        };
        systemd.insert(
            fields[0].to_string(),
            json!({"name": fields[0], "state": state, "status": status, "source": "systemd"}),
        );
    }
    let shown: BTreeMap<&str, String> = s
        .get("show")
        .into_iter()
        .flatten()
        .filter_map(|l| {
            let mut p = l.splitn(3, ' ');
            let (n, rc, out) = (p.next()?, p.next()?, p.next().unwrap_or(""));
            let state = if rc == "0" && !out.is_empty() {
                out.replace("ActiveState=", "").trim_end().to_string()
            } else {
                "unknown".to_string()
            };
            Some((n, state))
        })
        .collect();
    for line in s.get("files").into_iter().flatten() {
        if !line.contains(".service") {
            continue;
        }
        let mut f = line.split_whitespace();
        let (Some(name), Some(status)) = (f.next(), f.next()) else {
            continue;
        };
        match systemd.get_mut(name) {
            None => {
                let state = shown.get(name).map_or("unknown", String::as_str);
                systemd.insert(
                    name.to_string(),
                    json!({"name": name, "state": state, "status": status, "source": "systemd"}),
                );
            }
            Some(v) => {
                if !BAD_STATES.contains(&v["status"].as_str().unwrap_or("")) {
                    v["status"] = status.into();
                }
            }
        }
    }
    services.extend(systemd);
    services.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_ansible() {
        let out = "==kk:sysv\n [ + ]  ssh\n [ - ]  procps\n [ ? ]  hwclock.sh\n==kk:units\n\
  UNIT LOAD ACTIVE SUB DESCRIPTION\n\
ssh.service loaded active running OpenBSD Secure Shell server\n\
cron.service loaded inactive dead Regular background program processing daemon\n\
x.service not-found inactive dead x.service\n\
==kk:files\nUNIT FILE STATE VENDOR PRESET\nssh.service enabled enabled\n\
cron.service disabled enabled\nx.service masked enabled\ngetty@.service enabled enabled\n\
rsync.service disabled enabled\n\n5 unit files listed.\n\
==kk:show\ngetty@.service 1 \nrsync.service 0 ActiveState=inactive\n==kk:end\n";
        let s = Value::Object(parse(out));
        assert_eq!(
            s["ssh"],
            json!({"name": "ssh", "state": "running", "source": "sysv"})
        );
        assert_eq!(s["procps"]["state"], "stopped");
        assert!(s.get("hwclock.sh").is_none());
        assert_eq!(
            s["ssh.service"],
            json!({"name": "ssh.service", "state": "running", "status": "enabled", "source": "systemd"})
        );
        assert_eq!(s["cron.service"]["status"], "disabled");
        assert_eq!(s["x.service"]["status"], "not-found");
        assert_eq!(s["getty@.service"]["state"], "unknown");
        assert_eq!(s["rsync.service"]["state"], "inactive");
        assert_eq!(s["rsync.service"]["status"], "disabled");
    }
}
