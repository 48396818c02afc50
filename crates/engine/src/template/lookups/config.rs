//! `lookup('config', NAME, ..., on_missing='error'|'warn'|'skip')`: ansible-core's
//! settings by their config names, as ansible-playbook would see them — the `ANSIBLE_*`
//! environment variable, else `ansible.cfg` (`ANSIBLE_CONFIG`, `./ansible.cfg`,
//! `~/.ansible.cfg`, `/etc/ansible/ansible.cfg`, the first that exists), else the
//! documented default, converted to the setting's type. The settings are those users
//! read back in playbooks (roles path, become, remote user, forks, timeouts…); another
//! real setting kk does not know is an error naming it, never a guess.

use std::path::{Path, PathBuf};

use minijinja::value::Kwargs;
use minijinja::{Error, Value};

use super::{fail, py_type};

/// How a setting's text becomes a value (ansible-core's config types).
#[derive(Clone, Copy)]
enum Kind {
    Str,
    Bool,
    Int,
    /// A path, `~` expanded, relative to where it was written.
    Path,
    /// Comma-separated paths.
    PathList,
    /// Colon-separated paths.
    PathSpec,
    /// A comma-separated list.
    List,
}

/// `(name, environment variables, ini (section, key)s, kind, default)`. A default of
/// `None` is Python's None; `~/.ansible` in a default is `ANSIBLE_HOME`.
type Setting = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    Kind,
    Option<&'static str>,
);

const SETTINGS: &[Setting] = &[
    (
        "DEFAULT_ROLES_PATH",
        &["ANSIBLE_ROLES_PATH"],
        &[("defaults", "roles_path")],
        Kind::PathSpec,
        Some("~/.ansible/roles:/usr/share/ansible/roles:/etc/ansible/roles"),
    ),
    (
        "COLLECTIONS_PATHS",
        &["ANSIBLE_COLLECTIONS_PATH"],
        &[("defaults", "collections_path")],
        Kind::PathSpec,
        Some("~/.ansible/collections:/usr/share/ansible/collections"),
    ),
    (
        "DEFAULT_HOST_LIST",
        &["ANSIBLE_INVENTORY"],
        &[("defaults", "inventory")],
        Kind::PathList,
        Some("/etc/ansible/hosts"),
    ),
    (
        "DEFAULT_BECOME",
        &["ANSIBLE_BECOME"],
        &[("privilege_escalation", "become")],
        Kind::Bool,
        Some("False"),
    ),
    (
        "DEFAULT_BECOME_USER",
        &["ANSIBLE_BECOME_USER"],
        &[("privilege_escalation", "become_user")],
        Kind::Str,
        Some("root"),
    ),
    (
        "DEFAULT_BECOME_METHOD",
        &["ANSIBLE_BECOME_METHOD"],
        &[("privilege_escalation", "become_method")],
        Kind::Str,
        Some("sudo"),
    ),
    (
        "DEFAULT_BECOME_ASK_PASS",
        &["ANSIBLE_BECOME_ASK_PASS"],
        &[("privilege_escalation", "become_ask_pass")],
        Kind::Bool,
        Some("False"),
    ),
    (
        "DEFAULT_BECOME_EXE",
        &["ANSIBLE_BECOME_EXE"],
        &[("privilege_escalation", "become_exe")],
        Kind::Str,
        None,
    ),
    (
        "DEFAULT_BECOME_FLAGS",
        &["ANSIBLE_BECOME_FLAGS"],
        &[("privilege_escalation", "become_flags")],
        Kind::Str,
        Some(""),
    ),
    (
        "DEFAULT_ASK_PASS",
        &["ANSIBLE_ASK_PASS"],
        &[("defaults", "ask_pass")],
        Kind::Bool,
        Some("False"),
    ),
    (
        "DEFAULT_FORKS",
        &["ANSIBLE_FORKS"],
        &[("defaults", "forks")],
        Kind::Int,
        Some("5"),
    ),
    (
        "DEFAULT_TIMEOUT",
        &["ANSIBLE_TIMEOUT"],
        &[("defaults", "timeout")],
        Kind::Int,
        Some("10"),
    ),
    (
        "DEFAULT_REMOTE_USER",
        &["ANSIBLE_REMOTE_USER"],
        &[("defaults", "remote_user")],
        Kind::Str,
        None,
    ),
    (
        "DEFAULT_REMOTE_PORT",
        &["ANSIBLE_REMOTE_PORT"],
        &[("defaults", "remote_port")],
        Kind::Int,
        None,
    ),
    (
        "DEFAULT_PRIVATE_KEY_FILE",
        &["ANSIBLE_PRIVATE_KEY_FILE"],
        &[("defaults", "private_key_file")],
        Kind::Path,
        None,
    ),
    (
        "DEFAULT_TRANSPORT",
        &["ANSIBLE_TRANSPORT"],
        &[("defaults", "transport")],
        Kind::Str,
        Some("ssh"),
    ),
    (
        "HOST_KEY_CHECKING",
        &["ANSIBLE_HOST_KEY_CHECKING"],
        &[("defaults", "host_key_checking")],
        Kind::Bool,
        Some("True"),
    ),
    (
        "DEFAULT_GATHERING",
        &["ANSIBLE_GATHERING"],
        &[("defaults", "gathering")],
        Kind::Str,
        Some("implicit"),
    ),
    (
        "DEFAULT_VAULT_PASSWORD_FILE",
        &["ANSIBLE_VAULT_PASSWORD_FILE"],
        &[("defaults", "vault_password_file")],
        Kind::Path,
        None,
    ),
    (
        "DEFAULT_VAULT_IDENTITY_LIST",
        &["ANSIBLE_VAULT_IDENTITY_LIST"],
        &[("defaults", "vault_identity_list")],
        Kind::List,
        Some(""),
    ),
    (
        "DEFAULT_MODULE_NAME",
        &[],
        &[("defaults", "module_name")],
        Kind::Str,
        Some("command"),
    ),
    (
        "DEFAULT_MANAGED_STR",
        &[],
        &[("defaults", "ansible_managed")],
        Kind::Str,
        Some("Ansible managed"),
    ),
    (
        "DEFAULT_HASH_BEHAVIOUR",
        &["ANSIBLE_HASH_BEHAVIOUR"],
        &[("defaults", "hash_behaviour")],
        Kind::Str,
        Some("replace"),
    ),
    (
        "DEFAULT_POLL_INTERVAL",
        &["ANSIBLE_POLL_INTERVAL"],
        &[("defaults", "poll_interval")],
        Kind::Int,
        Some("15"),
    ),
    (
        "DEFAULT_STRATEGY",
        &["ANSIBLE_STRATEGY"],
        &[("defaults", "strategy")],
        Kind::Str,
        Some("linear"),
    ),
    (
        "DEFAULT_EXECUTABLE",
        &["ANSIBLE_EXECUTABLE"],
        &[("defaults", "executable")],
        Kind::Str,
        Some("/bin/sh"),
    ),
    (
        "DEFAULT_NO_LOG",
        &["ANSIBLE_NO_LOG"],
        &[("defaults", "no_log")],
        Kind::Bool,
        Some("False"),
    ),
    (
        "DEFAULT_LOG_PATH",
        &["ANSIBLE_LOG_PATH"],
        &[("defaults", "log_path")],
        Kind::Path,
        None,
    ),
    (
        "DEFAULT_KEEP_REMOTE_FILES",
        &["ANSIBLE_KEEP_REMOTE_FILES"],
        &[("defaults", "keep_remote_files")],
        Kind::Bool,
        Some("False"),
    ),
    (
        "ANSIBLE_PIPELINING",
        &["ANSIBLE_PIPELINING"],
        &[("defaults", "pipelining"), ("connection", "pipelining")],
        Kind::Bool,
        Some("False"),
    ),
    (
        "RETRY_FILES_ENABLED",
        &["ANSIBLE_RETRY_FILES_ENABLED"],
        &[("defaults", "retry_files_enabled")],
        Kind::Bool,
        Some("False"),
    ),
    (
        "DISPLAY_SKIPPED_HOSTS",
        &["ANSIBLE_DISPLAY_SKIPPED_HOSTS"],
        &[("defaults", "display_skipped_hosts")],
        Kind::Bool,
        Some("True"),
    ),
];

/// The lookup.
pub(super) fn config(terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let on_missing = kwargs
        .get::<Option<String>>("on_missing")?
        .unwrap_or_else(|| "error".into());
    if !["error", "warn", "skip"].contains(&on_missing.as_str()) {
        return Err(fail(format!(
            "\"on_missing\" must be a string and one of \"error\", \"warn\" or \"skip\", not {}",
            on_missing
        )));
    }
    for plugin in ["plugin_type", "plugin_name"] {
        if kwargs.get::<Option<Value>>(plugin)?.is_some() {
            return Err(fail(format!(
                "lookup('config'): '{}' is not supported: kk answers ansible-core's own settings only",
                plugin
            )));
        }
    }
    let file = CfgFile::find();
    let mut out = Vec::new();
    for t in terms {
        let Some(name) = t.as_str() else {
            return Err(fail(format!(
                "Invalid setting identifier, \"{}\" is not a string, it is a {}",
                t,
                py_type(t)
            )));
        };
        match SETTINGS.iter().find(|s| s.0 == name) {
            Some(setting) => out.push(resolve(setting, &file)?),
            None if on_missing == "error" => {
                return Err(fail(format!("No config definition exists for '{}'.", name)))
            }
            None => {}
        }
    }
    Ok(out)
}

/// One setting's value: environment, then the file, then the default.
fn resolve(s: &Setting, file: &CfgFile) -> Result<Value, Error> {
    let (name, envs, inis, kind, default) = *s;
    let cwd = std::env::current_dir().unwrap_or_default();
    for e in envs {
        if let Ok(v) = std::env::var(e) {
            return convert(name, &v, kind, &cwd);
        }
    }
    for (section, key) in inis {
        if let Some(v) = file.get(section, key) {
            return convert(name, v, kind, &file.dir);
        }
    }
    match default {
        None => Ok(Value::from(())),
        Some(d) => convert(name, d, kind, &cwd),
    }
}

fn convert(name: &str, text: &str, kind: Kind, base: &Path) -> Result<Value, Error> {
    let path = |p: &str| -> String {
        let p = p.trim();
        let home_relative = p
            .strip_prefix("~/.ansible")
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .map(|rest| format!("{}{}", ansible_home(), rest));
        let expanded = home_relative.unwrap_or_else(|| super::expand_user(p));
        let pb = PathBuf::from(&expanded);
        if pb.is_absolute() {
            expanded
        } else {
            base.join(pb).display().to_string()
        }
    };
    Ok(match kind {
        Kind::Str => Value::from(text),
        Kind::Bool => Value::from(matches!(
            text.trim().to_ascii_lowercase().as_str(),
            "y" | "yes" | "on" | "1" | "true" | "t"
        )),
        Kind::Int => match text.trim().parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => {
                return Err(fail(format!(
                    "Invalid type for configuration option {}: '{}' is not an integer",
                    name, text
                )))
            }
        },
        Kind::Path => Value::from(path(text)),
        Kind::PathList => Value::from(
            text.split(',')
                .filter(|p| !p.trim().is_empty())
                .map(path)
                .collect::<Vec<_>>(),
        ),
        Kind::PathSpec => Value::from(
            text.split(':')
                .filter(|p| !p.trim().is_empty())
                .map(path)
                .collect::<Vec<_>>(),
        ),
        Kind::List => Value::from(
            text.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>(),
        ),
    })
}

/// `ANSIBLE_HOME`, `~/.ansible` by default, `~` expanded.
fn ansible_home() -> String {
    let home = std::env::var("ANSIBLE_HOME").unwrap_or_else(|_| "~/.ansible".into());
    super::expand_user(&home)
}

/// The `ansible.cfg` Ansible would read, parsed as `section -> key -> value`.
struct CfgFile {
    dir: PathBuf,
    entries: Vec<(String, String, String)>,
}

impl CfgFile {
    fn find() -> CfgFile {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Ok(c) = std::env::var("ANSIBLE_CONFIG") {
            let p = PathBuf::from(super::expand_user(&c));
            candidates.push(if p.is_dir() { p.join("ansible.cfg") } else { p });
        }
        candidates.push(PathBuf::from("ansible.cfg"));
        candidates.push(PathBuf::from(super::expand_user("~/.ansible.cfg")));
        candidates.push(PathBuf::from("/etc/ansible/ansible.cfg"));
        for c in candidates {
            if let Ok(text) = std::fs::read_to_string(&c) {
                let dir = std::path::absolute(&c)
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf))
                    .unwrap_or_default();
                return CfgFile {
                    dir,
                    entries: parse_ini(&text),
                };
            }
        }
        CfgFile {
            dir: PathBuf::new(),
            entries: Vec::new(),
        }
    }

    fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(s, k, _)| s == section && k == key)
            .map(|(_, _, v)| v.as_str())
    }
}

/// Python configparser's reading, enough for ansible.cfg: `[section]`, `key = value` or
/// `key: value` (keys lower-cased), `#`/`;` comment lines, indented continuation lines.
fn parse_ini(text: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.2.push('\n');
                last.2.push_str(trimmed);
            }
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        let cut = trimmed.find(['=', ':']).unwrap_or(trimmed.len());
        let key = trimmed[..cut].trim().to_ascii_lowercase();
        let value = trimmed.get(cut + 1..).unwrap_or("").trim().to_string();
        out.push((section.clone(), key, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ini_and_types() {
        let e = parse_ini(
            "[defaults]\nroles_path = a:b\n# c\nForks: 7\n[privilege_escalation]\nbecome=yes\n",
        );
        assert_eq!(e[1], ("defaults".into(), "forks".into(), "7".into()));
        let base = Path::new("/cfg");
        assert_eq!(
            convert("X", "a:/b", Kind::PathSpec, base)
                .unwrap()
                .to_string(),
            "['/cfg/a', '/b']"
        );
        assert!(convert("X", "yes", Kind::Bool, base).unwrap().is_true());
        assert!(convert("X", "x", Kind::Int, base).is_err());
    }
}
