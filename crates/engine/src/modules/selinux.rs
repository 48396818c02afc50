//! `selinux` (`ansible.posix.selinux`): SELinux's mode and policy, at run time and in
//! its config file. The collection needs libselinux's Python bindings on the host and
//! fails without them (Debian's usual case); kk does the same: one script looks for a
//! system Python that imports `selinux` (the interpreters the collection would respawn
//! into), and without one the task fails with the collection's message (naming the
//! host and its Python). With one, that Python reads the run-time state, the config
//! file is rewritten through a temp file and rename, and `setenforce` runs as the
//! collection decides. `update_kernel_param` (grubby) is not supported.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Text};
use super::plan::{Plan, PlanApply};
use super::remote::{qpath, remote_error, write_file, WriteOptions};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SelinuxArgs {
    #[serde(default)]
    policy: Option<Text>,
    #[serde(default)]
    state: Option<Text>,
    #[serde(default, alias = "conf", alias = "file")]
    configfile: Option<Text>,
    #[serde(default)]
    update_kernel_param: Flag,
}

const STATES: &[&str] = &["enforcing", "permissive", "disabled"];

/// The system interpreters the collection probes for the `selinux` module.
const SYSTEM_PYTHONS: &[&str] = &[
    "/usr/bin/libexec/platform-python",
    "/usr/bin/python3",
    "/usr/bin/python2",
    "/usr/bin/python",
];

#[derive(Debug)]
struct Checked {
    policy: Option<String>,
    state: String,
    configfile: String,
}

/// Checked arguments; `Ok(Err(msg))` for the collection's failed-task messages.
fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let a: SelinuxArgs = parse_args(
        "selinux",
        raw,
        &["policy", "state", "configfile", "update_kernel_param"],
    )?;
    let Some(state) = a.state.map(|s| s.0) else {
        return Ok(Err("missing required arguments: state".into()));
    };
    if !STATES.contains(&state.as_str()) {
        return Ok(Err(format!(
            "value of state must be one of: {}, got: {}",
            STATES.join(", "),
            state
        )));
    }
    if a.update_kernel_param.0 {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "selinux: `update_kernel_param` (the kernel command line through grubby) is not supported by kk",
        )
        .help("drop update_kernel_param, and set the kernel parameter with the boot loader's own configuration"));
    }
    let policy = a.policy.map(|p| p.0).filter(|p| !p.is_empty());
    if let Some(p) = &policy {
        if p.contains(['/', '\n', '\'', '"']) {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("selinux: {:?} is not a policy name", p),
            ));
        }
    }
    Ok(Ok(Checked {
        policy,
        state,
        configfile: a
            .configfile
            .map(|c| c.0)
            .unwrap_or_else(|| "/etc/selinux/config".into()),
    }))
}

/// The look: the host's name, the Python with the bindings (if any), the run-time state,
/// and the config file.
fn look_script(primary: &str, c: &Checked) -> String {
    let mut pys = vec![primary];
    pys.extend(SYSTEM_PYTHONS.iter().filter(|p| **p != primary));
    let pys: Vec<String> = pys.iter().map(|p| shell_quote(p)).collect();
    format!(
        r#"echo "node=$(uname -n)"
py=
for p in {pys}; do
  if [ -x "$p" ] && "$p" -c 'import selinux' >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || exit 0
echo "py=$py"
"$py" -c 'import selinux; e = selinux.is_selinux_enabled(); print("enabled=%d" % e); print("policy=%s" % selinux.selinux_getpolicytype()[1]); print("enforce=%d" % (selinux.security_getenforce() if e else 0))' || exit 1
[ -z {pol} ] || [ -e /etc/selinux/{pol}/policy ] && echo "policy_dir=1"
f={conf}
if [ -f "$f" ]; then echo "==config=="; cat -- "$f"; fi
"#,
        pys = pys.join(" "),
        pol = shell_quote(c.policy.as_deref().unwrap_or_default()),
        conf = qpath(&c.configfile),
    )
}

/// Python's `str.splitlines()` of the config file, as `get_file_lines` reads it.
fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// The collection's `get_config_*`: the value of the first `KEY=` line.
fn config_value(text: &str, key: &str) -> Option<String> {
    let prefix = format!("{}=", key);
    lines(text)
        .into_iter()
        .find(|l| l.starts_with(&prefix))
        .map(|l| l.split('=').nth(1).unwrap_or("").trim().to_string())
}

/// The collection's `set_config_*`: `KEY=` lines rewritten (appended when missing),
/// every line ending in a newline.
fn set_config(text: &str, key: &str, value: &str) -> String {
    let prefix = format!("{}=", key);
    let mut out = String::new();
    let mut found = false;
    for l in lines(text) {
        if l.starts_with(&prefix) {
            found = true;
            out.push_str(&format!("{}={}\n", key, value));
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    if !found {
        out.push_str(&format!("{}={}\n", key, value));
    }
    out
}

/// What apply changes.
pub struct SelinuxWork {
    configfile: String,
    config: Option<String>,
    setenforce: Option<u8>,
    py: String,
}

/// `ansible.posix.selinux`.
pub struct Selinux;

#[async_trait]
impl PlanApply for Selinux {
    type Work = SelinuxWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<SelinuxWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let primary = ctx
            .vars
            .get_attr("ansible_python_interpreter")
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_none())
            .map(|v| v.to_string())
            .filter(|s| !s.is_empty() && !s.starts_with("auto"))
            .unwrap_or_else(|| "/usr/bin/python3".into());
        let out = ctx.exec(look_script(&primary, &c), None).await?;
        if out.rc != 0 {
            return Err(remote_error("cannot read the SELinux state", &out));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (head, config) = match text.split_once("==config==\n") {
            Some((h, f)) => (h.to_string(), Some(f.to_string())),
            None => (text, None),
        };
        let field = |k: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(&format!("{}=", k)))
                .map(str::to_string)
        };
        let Some(py) = field("py") else {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Failed to import the required Python library (libselinux-python) on {}'s Python {}. Please read the module documentation and install it in the appropriate location. If the required library is installed, but Ansible is using the wrong Python interpreter, please consult the documentation on ansible_python_interpreter",
                field("node").unwrap_or_default(),
                primary
            ))));
        };
        let enabled = field("enabled").as_deref() == Some("1");
        let runtime_policy = field("policy").unwrap_or_default();
        let runtime_state = match (enabled, field("enforce").as_deref()) {
            (false, _) => "disabled",
            (true, Some("1")) => "enforcing",
            (true, _) => "permissive",
        };
        let Some(config) = config else {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Unable to find file {}",
                c.configfile
            ))
            .with(
                "details",
                "Please install SELinux-policy package, if this package is not installed previously.",
            )));
        };
        let config_policy = config_value(&config, "SELINUXTYPE");
        let config_state = config_value(&config, "SELINUX");
        let policy = match (&c.policy, c.state.as_str()) {
            (Some(p), _) => Some(p.clone()),
            (None, "disabled") => config_policy.clone(),
            (None, _) => {
                return Ok(Plan::Done(ModuleResult::failed(
                    "Policy is required if state is not 'disabled'",
                )))
            }
        };
        let pol = policy.clone().unwrap_or_else(|| "None".into());
        let mut msgs = Vec::new();
        let mut warnings: Vec<String> = Vec::new();
        let mut changed = false;
        let mut reboot_required = false;
        let mut new_config = config.clone();
        let mut setenforce = None;
        if policy.as_deref() != Some(runtime_policy.as_str()) {
            if ctx.check_mode {
                return Ok(Plan::Done(ModuleResult::changed(true)));
            }
            msgs.push(format!(
                "Running SELinux policy changed from '{}' to '{}'",
                runtime_policy, pol
            ));
            changed = true;
        }
        if policy != config_policy {
            if ctx.check_mode {
                return Ok(Plan::Done(ModuleResult::changed(true)));
            }
            if field("policy_dir").is_none() {
                return Ok(Plan::Done(ModuleResult::failed(format!(
                    "Policy {} does not exist in /etc/selinux/",
                    pol
                ))));
            }
            new_config = set_config(&new_config, "SELINUXTYPE", &pol);
            msgs.push(format!(
                "SELinux policy configuration in '{}' changed from '{}' to '{}'",
                c.configfile,
                config_policy.as_deref().unwrap_or("None"),
                pol
            ));
            changed = true;
        }
        if c.state != runtime_state {
            if enabled {
                if c.state == "disabled" {
                    if runtime_state != "permissive" {
                        setenforce = Some(0);
                        warnings.push(format!("SELinux state temporarily changed from '{}' to 'permissive'. State change will take effect next reboot.", runtime_state));
                        changed = true;
                    } else {
                        warnings.push("SELinux state change will take effect next reboot".into());
                    }
                    reboot_required = true;
                } else {
                    setenforce = Some(u8::from(c.state == "enforcing"));
                    msgs.push(format!(
                        "SELinux state changed from '{}' to '{}'",
                        runtime_state, c.state
                    ));
                    changed = true;
                }
            } else {
                warnings.push(format!(
                    "Reboot is required to set SELinux state to '{}'",
                    c.state
                ));
                reboot_required = true;
            }
        }
        if Some(c.state.as_str()) != config_state.as_deref() {
            new_config = set_config(&new_config, "SELINUX", &c.state);
            msgs.push(format!(
                "Config SELinux state changed from '{}' to '{}'",
                config_state.as_deref().unwrap_or("None"),
                c.state
            ));
            changed = true;
        }
        let mut res = ModuleResult::changed(false)
            .msg(msgs.join(", "))
            .with("configfile", c.configfile.clone())
            .with(
                "policy",
                policy.clone().map_or(serde_json::Value::Null, Into::into),
            )
            .with("state", c.state.clone())
            .with("reboot_required", reboot_required);
        if !warnings.is_empty() {
            res = res.with("warnings", warnings);
        }
        if !changed {
            return Ok(Plan::Done(res));
        }
        Ok(Plan::change(
            res,
            SelinuxWork {
                configfile: c.configfile,
                config: (new_config != config).then_some(new_config),
                setenforce,
                py,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: SelinuxWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        if let Some(v) = w.setenforce {
            let out = ctx
                .exec(
                    format!(
                        "{} -c 'import selinux; selinux.security_setenforce({})'\n",
                        shell_quote(&w.py),
                        v
                    ),
                    None,
                )
                .await?;
            if out.rc != 0 {
                return Err(remote_error("cannot set the SELinux mode", &out));
            }
        }
        if let Some(text) = w.config {
            write_file(
                ctx,
                &w.configfile,
                text.into_bytes(),
                &WriteOptions::default(),
            )
            .await?;
        }
        Ok(result)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn config_file_as_the_collection_edits_it() {
        let f = "# c\nSELINUX=enforcing\nSELINUXTYPE=targeted \n";
        assert_eq!(config_value(f, "SELINUX").as_deref(), Some("enforcing"));
        assert_eq!(config_value(f, "SELINUXTYPE").as_deref(), Some("targeted"));
        assert_eq!(
            set_config(f, "SELINUX", "permissive"),
            "# c\nSELINUX=permissive\nSELINUXTYPE=targeted \n"
        );
        assert_eq!(
            set_config("x", "SELINUX", "disabled"),
            "x\nSELINUX=disabled\n"
        );
    }

    #[test]
    fn arguments() {
        let c = |v: Value| check(v.as_object().unwrap().clone());
        assert_eq!(
            c(json!({})).unwrap().unwrap_err(),
            "missing required arguments: state"
        );
        assert_eq!(
            c(json!({"state": "relaxed"})).unwrap().unwrap_err(),
            "value of state must be one of: enforcing, permissive, disabled, got: relaxed"
        );
        assert!(c(json!({"state": "disabled", "update_kernel_param": true})).is_err());
        assert_eq!(
            c(json!({"state": "disabled", "conf": "/x"}))
                .unwrap()
                .unwrap()
                .configfile,
            "/x"
        );
        let s = look_script(
            "/usr/bin/python3",
            &c(json!({"state": "disabled"})).unwrap().unwrap(),
        );
        assert_eq!(s.matches("/usr/bin/python3").count(), 1);
    }
}
