//! The provisioning steps: Cluster API's bootstrap data as the ordered list the
//! provisioning playbook applies (`capkk_provision_steps`). Each item is exactly one of
//!
//! - `{"write_file": {"path", "content_base64", "mode", "owner", "append"}}`
//! - `{"mkdir": {"path", "mode", "owner"}}`
//! - `{"shell": "cmd"}`
//! - `{"argv": ["kubeadm", "init", …]}`
//!
//! They are checked here, before anything runs, so bad bootstrap data fails with a clear
//! message and touches no machine; the playbook then only applies them.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{BootstrapData, Job, MachineError};

/// The bootstrap data format that is already this list as JSON (tests, and callers that
/// map the data themselves).
pub const STEPS_FORMAT: &str = "capkk-steps+json";

fn bad(message: String) -> MachineError {
    MachineError {
        message,
        retryable: false,
    }
}

/// The checked steps of `job`'s bootstrap data, defaults filled in.
pub fn from_job(job: &Job) -> Result<Value, MachineError> {
    let data = job.bootstrap_data.as_ref().ok_or_else(|| {
        bad("the provisioning phase needs the Machine's bootstrap data; the Job has none (is the bootstrap Secret ready?)".into())
    })?;
    let raw = to_steps(data, &job.instance.name)?;
    check(&raw)
}

/// Bootstrap data → steps: data already in the steps form (`capkk-steps+json`, for tests
/// and tools), or Cluster API's cloud-config / ignition mapped by [`crate::provisioning`]
/// (a templated cloud-config's `ds.meta_data` names are the instance's name).
fn to_steps(data: &BootstrapData, machine: &str) -> Result<Value, MachineError> {
    match data.format.as_str() {
        STEPS_FORMAT => serde_json::from_slice(&data.value).map_err(|e| {
            bad(format!(
                "the bootstrap data ({}) is not JSON: {}",
                STEPS_FORMAT, e
            ))
        }),
        format => {
            let format = if format.is_empty() {
                "cloud-config"
            } else {
                format
            };
            let meta = crate::provisioning::Metadata::for_machine(machine);
            let steps = crate::provisioning::parse_with(&data.value, format, &meta)
                .map_err(|e| bad(format!("the bootstrap data cannot be applied: {}", e)))?;
            serde_json::to_value(&steps)
                .map_err(|e| bad(format!("the provisioning steps do not serialize: {}", e)))
        }
    }
}

/// Checks each step's shape and fills the defaults (mode 0644 / 0755, owner root:root,
/// append false); the result is what the playbook gets.
pub fn check(raw: &Value) -> Result<Value, MachineError> {
    let items = raw.as_array().ok_or_else(|| {
        bad(format!(
            "the provisioning steps must be a list, found {}",
            kind(raw)
        ))
    })?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |msg: String| bad(format!("provisioning step {}: {}", i + 1, msg));
        let obj = item.as_object().filter(|o| o.len() == 1).ok_or_else(|| {
            at(format!(
                "expected a mapping with exactly one of write_file, mkdir, shell, argv; found {}",
                kind(item)
            ))
        })?;
        let (key, v) = obj.iter().next().expect("one entry");
        let step = match key.as_str() {
            "write_file" => {
                let f = fields(v, &["path", "content_base64", "mode", "owner", "append"])
                    .map_err(&at)?;
                let path = abs_path(&f).map_err(&at)?;
                let content = f
                    .get("content_base64")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                base64::engine::general_purpose::STANDARD
                    .decode(content)
                    .map_err(|e| {
                        at(format!(
                            "write_file {}: content_base64 is not base64: {}",
                            path, e
                        ))
                    })?;
                json!({"write_file": {
                    "path": path,
                    "content_base64": content,
                    "mode": mode(&f, "0644").map_err(&at)?,
                    "owner": owner(&f).map_err(&at)?,
                    "append": f.get("append").and_then(Value::as_bool).unwrap_or(false),
                }})
            }
            "mkdir" => {
                let f = fields(v, &["path", "mode", "owner"]).map_err(&at)?;
                json!({"mkdir": {
                    "path": abs_path(&f).map_err(&at)?,
                    "mode": mode(&f, "0755").map_err(&at)?,
                    "owner": owner(&f).map_err(&at)?,
                }})
            }
            "shell" => match v.as_str() {
                Some(cmd) if !cmd.trim().is_empty() => json!({"shell": cmd}),
                _ => {
                    return Err(at(format!(
                        "shell must be a non-empty command, found {}",
                        v
                    )))
                }
            },
            "argv" => match v.as_array() {
                Some(a) if !a.is_empty() && a.iter().all(Value::is_string) => json!({"argv": a}),
                _ => {
                    return Err(at(format!(
                        "argv must be a non-empty list of strings, found {}",
                        v
                    )))
                }
            },
            other => {
                return Err(at(format!(
                    "unknown step `{}`; expected write_file, mkdir, shell or argv",
                    other
                )))
            }
        };
        out.push(step);
    }
    Ok(Value::Array(out))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The mapping `v`, refusing keys other than `allowed` (a typo would be ignored silently).
fn fields(v: &Value, allowed: &[&str]) -> Result<Map<String, Value>, String> {
    let m = v
        .as_object()
        .ok_or_else(|| format!("expected a mapping, found {}", kind(v)))?;
    if let Some(k) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "unknown field `{}`; expected {}",
            k,
            allowed.join(", ")
        ));
    }
    Ok(m.clone())
}

fn abs_path(f: &Map<String, Value>) -> Result<String, String> {
    match f.get("path").and_then(Value::as_str) {
        Some(p) if p.starts_with('/') && !p.split('/').any(|c| c == "..") => Ok(p.to_string()),
        other => Err(format!(
            "path must be absolute without `..`, found {}",
            other
                .map(|s| format!("`{}`", s))
                .unwrap_or_else(|| "none".into())
        )),
    }
}

/// An octal mode as a string (`0644`); numbers are read as written in YAML (`644` → 0644).
fn mode(f: &Map<String, Value>, default: &str) -> Result<String, String> {
    let m = match f.get("mode") {
        None | Some(Value::Null) => return Ok(default.to_string()),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(v) => {
            return Err(format!(
                "mode must be octal text such as \"0644\", found {}",
                v
            ))
        }
    };
    let digits = m.trim_start_matches("0o");
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return Err(format!(
            "mode `{}` is not an octal file mode such as 0644",
            m
        ));
    }
    Ok(format!("{:0>4}", digits))
}

fn owner(f: &Map<String, Value>) -> Result<String, String> {
    match f.get("owner") {
        None | Some(Value::Null) => Ok("root:root".into()),
        Some(Value::String(s)) if !s.is_empty() && !s.contains(char::is_whitespace) => {
            Ok(if s.contains(':') {
                s.clone()
            } else {
                format!("{}:{}", s, s)
            })
        }
        Some(v) => Err(format!("owner must be `user` or `user:group`, found {}", v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_filled_and_order_kept() {
        let steps = check(&json!([
            {"mkdir": {"path": "/etc/kubernetes"}},
            {"write_file": {"path": "/etc/a", "content_base64": "aGk=", "mode": 600, "owner": "kube"}},
            {"shell": "echo hi"},
            {"argv": ["kubeadm", "init"]},
        ]))
        .unwrap();
        assert_eq!(steps[0]["mkdir"]["mode"], "0755");
        assert_eq!(steps[1]["write_file"]["mode"], "0600");
        assert_eq!(steps[1]["write_file"]["owner"], "kube:kube");
        assert_eq!(steps[1]["write_file"]["append"], false);
        assert_eq!(steps[3]["argv"][1], "init");
    }

    #[test]
    fn bad_steps_say_which_and_why() {
        for (bad, want) in [
            (json!({"shell": "x"}), "must be a list"),
            (
                json!([{"shell": "x", "argv": ["y"]}]),
                "step 1: expected a mapping with exactly one",
            ),
            (json!([{"run": "x"}]), "unknown step `run`"),
            (json!([{"mkdir": {"path": "etc"}}]), "absolute"),
            (json!([{"mkdir": {"path": "/a/../b"}}]), "absolute"),
            (
                json!([{"write_file": {"path": "/a", "content_base64": "!!"}}]),
                "not base64",
            ),
            (
                json!([{"write_file": {"path": "/a", "mode": "rw"}}]),
                "not an octal",
            ),
            (
                json!([{"write_file": {"path": "/a", "contents": "x"}}]),
                "unknown field `contents`",
            ),
            (json!([{"argv": []}]), "non-empty list"),
            (json!([{"argv": ["a", 1]}]), "non-empty list"),
            (json!([{"shell": " "}]), "non-empty command"),
        ] {
            let e = check(&bad).unwrap_err();
            assert!(!e.retryable);
            assert!(e.message.contains(want), "{} → {}", bad, e.message);
        }
    }

    #[test]
    fn steps_json_and_cloud_config_are_read_and_bad_data_is_refused() {
        let job = |format: &str, value: &str| Job {
            bootstrap_data: Some(BootstrapData {
                value: value.as_bytes().to_vec(),
                format: format.into(),
            }),
            ..Default::default()
        };
        assert!(from_job(&job(STEPS_FORMAT, r#"[{"shell": "true"}]"#)).is_ok());
        assert!(from_job(&job(STEPS_FORMAT, "not json"))
            .unwrap_err()
            .message
            .contains("not JSON"));
        let mapped = from_job(&job(
            "cloud-config",
            "#cloud-config\nruncmd:\n  - kubeadm join --token abcdef.0123456789abcdef 10.0.0.1:6443\n",
        ))
        .unwrap();
        assert_eq!(mapped.as_array().map(Vec::len), Some(1), "{mapped}");
        let e = from_job(&job("cloud-config", "#cloud-config\nruncmd: {}\n")).unwrap_err();
        assert!(e.message.contains("runcmd"), "{}", e.message);
        assert!(!e.retryable);
        let secret = from_job(&job(STEPS_FORMAT, r#"[["hunter2-token"]]"#)).unwrap_err();
        assert!(!secret.message.contains("hunter2"), "{}", secret.message);
        assert!(from_job(&Job::default())
            .unwrap_err()
            .message
            .contains("bootstrap data"));
    }
}
