//! `hostname`: sets the host's name, now and across reboots, the way Ansible's
//! `hostname.py` does on Linux: with `hostnamectl` where systemd runs (`use: systemd`, or
//! `debian`, which Ansible maps to the same strategy), else in `/etc/hostname` (written
//! through a temp file and rename). Reports Ansible's `ansible_facts` (hostname,
//! nodename, fqdn, domain) and a `--diff` of the name.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::Text;
use super::plan::{Plan, PlanApply};
use super::remote::{remote_error, write_script, WriteOptions};
use super::{parse_args, Effect, FileDiff, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostnameArgs {
    #[serde(default)]
    name: Option<Text>,
    #[serde(default, rename = "use")]
    use_: Option<Text>,
}

/// How the name is read and set.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Strategy {
    /// `hostnamectl` (transient and static names).
    Systemd,
    /// Chosen on the host: systemd when it runs, else `/etc/hostname` (Ansible's
    /// FileStrategy for Debian without systemd).
    Auto,
}

/// Ansible's `use` values kk does not implement (other operating systems' files).
const OTHER_STRATEGIES: &[&str] = &[
    "alpine", "freebsd", "generic", "macos", "macosx", "darwin", "openbsd", "openrc", "redhat",
    "sles", "solaris",
];

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("hostname: {}", msg.into()))
}

fn check(raw: VarMap) -> Result<(String, Strategy)> {
    let a: HostnameArgs = parse_args("hostname", raw, &["name", "use"])?;
    let name = a
        .name
        .map(|n| n.0)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| arg_err("`name` is required"))?;
    if name.contains(|c: char| c.is_whitespace() || c == '/' || c.is_control()) {
        return Err(arg_err(format!("{:?} is not a valid host name", name)));
    }
    let strategy = match a.use_.as_ref().map(Text::as_str) {
        None => Strategy::Auto,
        Some("systemd") | Some("debian") => Strategy::Systemd,
        Some(u) if OTHER_STRATEGIES.contains(&u) => {
            return Err(arg_err(format!("`use: {}` is not supported by kk", u))
                .help("kk sets the name with hostnamectl (use: systemd) or /etc/hostname"))
        }
        Some(u) => {
            return Err(arg_err(format!(
                "`use` must be one of {}, found {:?}",
                ["systemd", "debian"]
                    .iter()
                    .chain(OTHER_STRATEGIES)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
                u
            )))
        }
    };
    if name.len() > 64 {
        return Err(arg_err(
            "name cannot be longer than 64 characters on systemd servers, try a shorter name",
        ));
    }
    Ok((name, strategy))
}

/// The script printing the strategy, the current and the permanent name.
fn read_script(strategy: Strategy) -> String {
    let pick = match strategy {
        Strategy::Systemd => "s=systemd\n",
        Strategy::Auto => "if [ -d /run/systemd/system ] && command -v hostnamectl >/dev/null 2>&1; then s=systemd; else s=file; fi\n",
    };
    format!(
        r#"{pick}echo "strategy=$s"
if [ "$s" = systemd ]; then
  cur=$(hostnamectl --transient status) || {{ echo "hostnamectl --transient status failed" >&2; exit 3; }}
  perm=$(hostnamectl --static status) || {{ echo "hostnamectl --static status failed" >&2; exit 3; }}
else
  perm=''
  [ -f /etc/hostname ] && perm=$(cat /etc/hostname)
  cur=$perm
fi
printf 'current=%s\n' "$(printf %s "$cur" | tr -d '\n' | sed 's/^[[:space:]]*//;s/[[:space:]]*$//')"
printf 'permanent=%s\n' "$(printf %s "$perm" | tr -d '\n' | sed 's/^[[:space:]]*//;s/[[:space:]]*$//')"
"#
    )
}

/// Prints the host's fully qualified name as Python's `socket.getfqdn()` finds it: the
/// first of the name's reverse lookup (canonical name, then aliases) with a dot, else
/// the name.
const FQDN_SCRIPT: &str = r#"h=$(hostname)
f=$h
ip=$(getent ahosts "$h" 2>/dev/null | awk 'NR==1{print $1}')
if [ -n "$ip" ]; then
  for n in $(getent hosts "$ip" 2>/dev/null | head -1 | cut -d' ' -f2-); do
    case $n in *.*) f=$n; break ;; esac
  done
fi
printf 'fqdn=%s\n' "$f"
"#;

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// What apply does.
pub struct HostnameWork {
    name: String,
    systemd: bool,
    set_permanent: bool,
    set_current: bool,
}

/// Ansible's `hostname`.
pub struct Hostname;

fn facts(name: &str, fqdn: &str) -> VarMap {
    let mut f = VarMap::new();
    f.insert(
        "ansible_hostname".into(),
        name.split('.').next().unwrap_or(name).into(),
    );
    f.insert("ansible_nodename".into(), name.into());
    f.insert("ansible_fqdn".into(), fqdn.into());
    let domain = fqdn.split('.').skip(1).collect::<Vec<_>>().join(".");
    f.insert("ansible_domain".into(), Value::String(domain));
    f
}

async fn fqdn(ctx: &ModuleContext) -> Result<String> {
    let out = ctx.exec(FQDN_SCRIPT, None).await?;
    Ok(field(&out.stdout_text(), "fqdn")
        .unwrap_or_default()
        .to_string())
}

#[async_trait]
impl PlanApply for Hostname {
    type Work = HostnameWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<HostnameWork>> {
        let (name, strategy) = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let out = ctx.exec(read_script(strategy), None).await?;
        if out.rc != 0 {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Command failed rc={}, out={}, err={}",
                out.rc,
                out.stdout_text(),
                out.stderr_text()
            ))));
        }
        let text = out.stdout_text();
        let systemd = field(&text, "strategy") == Some("systemd");
        let current = field(&text, "current").unwrap_or_default().to_string();
        let permanent = field(&text, "permanent").unwrap_or_default().to_string();
        let set_permanent = permanent != name;
        let set_current = systemd && current != name;
        if !set_permanent && !set_current {
            let fq = fqdn(ctx).await?;
            return Ok(Plan::Done(
                ModuleResult::ok()
                    .with("name", name.clone())
                    .with_facts(facts(&name, &fq), Effect::GatheredFacts),
            ));
        }
        let before = if name != current {
            &current
        } else {
            &permanent
        };
        let mut r = ModuleResult::ok().with("name", name.clone());
        if ctx.diff {
            r.diffs.push(FileDiff {
                before_header: String::new(),
                after_header: String::new(),
                before: format!("hostname = {}\n", before),
                after: format!("hostname = {}\n", name),
            });
        }
        if ctx.check_mode {
            // Nothing changes: the facts are the ones Ansible reports for the name asked.
            let fq = fqdn(ctx).await?;
            r = r.with_facts(facts(&name, &fq), Effect::GatheredFacts);
        }
        Ok(Plan::change(
            r,
            HostnameWork {
                name,
                systemd,
                set_permanent,
                set_current,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: HostnameWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let q = shell_quote(&w.name);
        if w.systemd {
            // The permanent name first (NetworkManager complains otherwise), as Ansible.
            let mut s = String::new();
            if w.set_permanent {
                s.push_str(&format!(
                    "hostnamectl --pretty --static set-hostname {} || exit $?\n",
                    q
                ));
            }
            if w.set_current {
                s.push_str(&format!(
                    "hostnamectl --transient set-hostname {} || exit $?\n",
                    q
                ));
            }
            let out = ctx.exec(s, None).await?;
            if out.rc != 0 {
                return Ok(ModuleResult::failed(format!(
                    "Command failed rc={}, out={}, err={}",
                    out.rc,
                    out.stdout_text(),
                    out.stderr_text()
                )));
            }
        } else {
            let script = write_script("/etc/hostname", &WriteOptions::default(), None);
            let data = format!("{}\n", w.name).into_bytes();
            let out = ctx.exec(script, Some(data)).await?;
            if out.rc != 0 {
                return Err(remote_error("failed to update hostname", &out));
            }
        }
        let fq = fqdn(ctx).await?;
        Ok(result.with_facts(facts(&w.name, &fq), Effect::GatheredFacts))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_and_facts() {
        let c = |v: Value| check(v.as_object().unwrap().clone());
        assert_eq!(c(json!({"name": "a.b"})).unwrap().1, Strategy::Auto);
        assert_eq!(
            c(json!({"name": "a", "use": "debian"})).unwrap().1,
            Strategy::Systemd
        );
        assert!(c(json!({"name": "a", "use": "redhat"}))
            .unwrap_err()
            .message
            .contains("not supported"));
        assert!(c(json!({"name": "a", "use": "nope"}))
            .unwrap_err()
            .message
            .contains("one of"));
        assert!(c(json!({"name": "a b"})).is_err());
        assert!(c(json!({"name": "x".repeat(65)}))
            .unwrap_err()
            .message
            .contains("64"));
        let f = facts("web1.example.com", "web1.example.com");
        assert_eq!(f["ansible_hostname"], "web1");
        assert_eq!(f["ansible_domain"], "example.com");
        assert_eq!(field("a=1\nfqdn=x.y\n", "fqdn"), Some("x.y"));
    }
}
