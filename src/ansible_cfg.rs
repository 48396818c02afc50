//! `ansible.cfg` and the `ANSIBLE_*` environment variables: the settings Ansible users keep
//! there (inventory, roles_path, forks, remote_user, private_key_file, host_key_checking,
//! timeout, become, ssh_args), found and ranked as Ansible does: the command line over the
//! environment over the file over the default. Unknown sections and keys are ignored, as
//! Ansible ignores them; a file that does not parse is an options error (exit 5, as
//! Ansible's "Error reading config file").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kk_engine::error::{SourceFile, Span};
use kk_engine::{Error, ErrorKind};

/// The settings kk takes from `ansible.cfg` and `ANSIBLE_*`, already ranked (environment
/// over file). Relative paths from the file are resolved against its directory, those from
/// the environment against the working directory, as Ansible does.
#[derive(Debug, Default, Clone)]
pub(crate) struct AnsibleCfg {
    /// The file that was read, if any.
    pub(crate) file: Option<PathBuf>,
    /// `inventory` / `ANSIBLE_INVENTORY` (comma-separated).
    pub(crate) inventory: Vec<PathBuf>,
    /// `roles_path` / `ANSIBLE_ROLES_PATH` (colon-separated).
    pub(crate) roles_path: Vec<PathBuf>,
    /// `library` / `ANSIBLE_LIBRARY`: directories of Python modules (colon-separated).
    pub(crate) library: Vec<PathBuf>,
    /// `collections_path` / `ANSIBLE_COLLECTIONS_PATH`: roots of `ansible_collections/`.
    pub(crate) collections_path: Vec<PathBuf>,
    /// `allow_broken_conditionals` / `ANSIBLE_ALLOW_BROKEN_CONDITIONALS`: conditions may
    /// give non-boolean results, judged by their truth (ansible-core before 2.19).
    pub(crate) allow_broken_conditionals: bool,
    /// `forks` / `ANSIBLE_FORKS`.
    pub(crate) forks: Option<usize>,
    /// `remote_user` / `ANSIBLE_REMOTE_USER`.
    pub(crate) remote_user: Option<String>,
    /// `private_key_file` / `ANSIBLE_PRIVATE_KEY_FILE`.
    pub(crate) private_key_file: Option<PathBuf>,
    /// `host_key_checking` / `ANSIBLE_HOST_KEY_CHECKING`.
    pub(crate) host_key_checking: Option<bool>,
    /// `timeout` / `ANSIBLE_TIMEOUT` (connect timeout, seconds).
    pub(crate) timeout: Option<u64>,
    /// `ask_pass` / `ANSIBLE_ASK_PASS`.
    pub(crate) ask_pass: Option<bool>,
    /// `[privilege_escalation] become` / `ANSIBLE_BECOME`.
    pub(crate) become_: Option<bool>,
    /// `become_method` / `ANSIBLE_BECOME_METHOD`.
    pub(crate) become_method: Option<String>,
    /// `become_flags` / `ANSIBLE_BECOME_FLAGS`: sudo's or su's options.
    pub(crate) become_flags: Option<String>,
    /// `become_user` / `ANSIBLE_BECOME_USER`.
    pub(crate) become_user: Option<String>,
    /// `become_ask_pass` / `ANSIBLE_BECOME_ASK_PASS`.
    pub(crate) become_ask_pass: Option<bool>,
    /// `gathering` / `ANSIBLE_GATHERING`: `implicit`, `explicit` or `smart`.
    pub(crate) gathering: Option<String>,
    /// `[ssh_connection] ssh_args` / `ANSIBLE_SSH_ARGS`.
    pub(crate) ssh_args: Option<String>,
    /// `[inventory] enable_plugins` / `ANSIBLE_INVENTORY_ENABLED`.
    pub(crate) inventory_enabled: Option<Vec<String>>,
    /// `[inventory] ignore_extensions` / `ANSIBLE_INVENTORY_IGNORE`.
    pub(crate) inventory_ignore_exts: Option<Vec<String>>,
    /// `[inventory] ignore_patterns` / `ANSIBLE_INVENTORY_IGNORE_REGEX`.
    pub(crate) inventory_ignore_patterns: Option<Vec<String>>,
}

/// What kind of value a setting takes.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Path,
    PathList,
    ColonPaths,
    Int,
    Bool,
    /// Ansible's `list`: comma-separated, each item trimmed.
    List,
}

/// `(section, key, environment variable, kind)` of every setting kk reads.
const SETTINGS: [(&str, &str, &str, Kind); 25] = [
    ("defaults", "inventory", "ANSIBLE_INVENTORY", Kind::PathList),
    (
        "defaults",
        "roles_path",
        "ANSIBLE_ROLES_PATH",
        Kind::ColonPaths,
    ),
    ("defaults", "library", "ANSIBLE_LIBRARY", Kind::ColonPaths),
    // `collections_paths` is the older name; the newer wins when both are set.
    (
        "defaults",
        "collections_paths",
        "ANSIBLE_COLLECTIONS_PATHS",
        Kind::ColonPaths,
    ),
    (
        "defaults",
        "collections_path",
        "ANSIBLE_COLLECTIONS_PATH",
        Kind::ColonPaths,
    ),
    (
        "defaults",
        "allow_broken_conditionals",
        "ANSIBLE_ALLOW_BROKEN_CONDITIONALS",
        Kind::Bool,
    ),
    ("defaults", "forks", "ANSIBLE_FORKS", Kind::Int),
    ("defaults", "remote_user", "ANSIBLE_REMOTE_USER", Kind::Text),
    (
        "defaults",
        "private_key_file",
        "ANSIBLE_PRIVATE_KEY_FILE",
        Kind::Path,
    ),
    (
        "defaults",
        "host_key_checking",
        "ANSIBLE_HOST_KEY_CHECKING",
        Kind::Bool,
    ),
    ("defaults", "timeout", "ANSIBLE_TIMEOUT", Kind::Int),
    ("defaults", "ask_pass", "ANSIBLE_ASK_PASS", Kind::Bool),
    ("defaults", "gathering", "ANSIBLE_GATHERING", Kind::Text),
    (
        "privilege_escalation",
        "become",
        "ANSIBLE_BECOME",
        Kind::Bool,
    ),
    (
        "privilege_escalation",
        "become_method",
        "ANSIBLE_BECOME_METHOD",
        Kind::Text,
    ),
    (
        "privilege_escalation",
        "become_flags",
        "ANSIBLE_BECOME_FLAGS",
        Kind::Text,
    ),
    (
        "privilege_escalation",
        "become_user",
        "ANSIBLE_BECOME_USER",
        Kind::Text,
    ),
    (
        "privilege_escalation",
        "become_ask_pass",
        "ANSIBLE_BECOME_ASK_PASS",
        Kind::Bool,
    ),
    ("ssh_connection", "ssh_args", "ANSIBLE_SSH_ARGS", Kind::Text),
    // Ansible's older name for `inventory`, still read.
    ("defaults", "hostfile", "ANSIBLE_HOSTS", Kind::PathList),
    // Inventory plugins and directory skips; of two keys for one setting, the later wins
    // (Ansible reads its `ini` entries in order).
    (
        "inventory",
        "enable_plugins",
        "ANSIBLE_INVENTORY_ENABLED",
        Kind::List,
    ),
    (
        "defaults",
        "inventory_ignore_extensions",
        "ANSIBLE_INVENTORY_IGNORE",
        Kind::List,
    ),
    (
        "inventory",
        "ignore_extensions",
        "ANSIBLE_INVENTORY_IGNORE",
        Kind::List,
    ),
    (
        "defaults",
        "inventory_ignore_patterns",
        "ANSIBLE_INVENTORY_IGNORE_REGEX",
        Kind::List,
    ),
    (
        "inventory",
        "ignore_patterns",
        "ANSIBLE_INVENTORY_IGNORE_REGEX",
        Kind::List,
    ),
];

/// A parsed value.
enum Value {
    Text(String),
    List(Vec<String>),
    Paths(Vec<PathBuf>),
    Int(u64),
    Bool(bool),
}

/// One INI file as Python's configparser reads it (Ansible's reader): `[section]`
/// headers, `key = value` or `key: value`, `#`/`;` comment lines, `;` comments after a
/// space, indented continuation lines; keys are case-insensitive.
#[derive(Debug, Default)]
pub(crate) struct Ini {
    /// `(section, key) -> (value, line)`.
    values: Vec<(String, String, String, usize)>,
}

impl Ini {
    /// Parses `text` (the file `path`); an error names the line.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Ini, Error> {
        let file = SourceFile::new(path, text);
        let fail = |line: usize, msg: String, help: &str| {
            Error::new(ErrorKind::Options, msg)
                .at(&Span {
                    file: file.clone(),
                    line,
                    col: 1,
                })
                .help(help.to_string())
        };
        let mut ini = Ini::default();
        let mut section: Option<String> = None;
        let mut sections: Vec<String> = Vec::new();
        // The entry a continuation line extends, and whether the last line was blank.
        let mut last: Option<usize> = None;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                last = None;
                continue;
            }
            if trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            let line = strip_inline_comment(raw);
            let indented = raw.starts_with([' ', '\t']);
            if indented {
                if let Some(idx) = last {
                    let v = &mut ini.values[idx].2;
                    if !v.is_empty() {
                        v.push('\n');
                    }
                    v.push_str(line.trim());
                    continue;
                }
            }
            let t = line.trim();
            if let Some(rest) = t.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(fail(
                        n,
                        format!("ansible config: `{}` is not a section header", t),
                        "write a section as `[defaults]`",
                    ));
                };
                if sections.iter().any(|s| s == name) {
                    return Err(fail(
                        n,
                        format!("ansible config: section `{}` already exists", name),
                        "merge the two sections into one",
                    ));
                }
                sections.push(name.to_string());
                section = Some(name.to_string());
                last = None;
                continue;
            }
            let Some(sec) = &section else {
                return Err(fail(
                    n,
                    "ansible config: the file has no section header before its first setting"
                        .to_string(),
                    "put settings under a section, e.g. `[defaults]`",
                ));
            };
            let split = t.find(['=', ':']);
            let Some(at) = split else {
                return Err(fail(
                    n,
                    format!("ansible config: `{}` is not a `key = value` line", t),
                    "write settings as `key = value`",
                ));
            };
            let key = t[..at].trim().to_ascii_lowercase();
            let value = t[at + 1..].trim().to_string();
            if key.is_empty() {
                return Err(fail(
                    n,
                    format!("ansible config: `{}` has no key", t),
                    "write settings as `key = value`",
                ));
            }
            if ini.values.iter().any(|(s, k, _, _)| s == sec && *k == key) {
                return Err(fail(
                    n,
                    format!(
                        "ansible config: option `{}` in section `{}` already exists",
                        key, sec
                    ),
                    "keep one of the two lines",
                ));
            }
            ini.values.push((sec.clone(), key, value, n));
            last = Some(ini.values.len() - 1);
        }
        Ok(ini)
    }

    /// The value of `key` in `section`, with its line.
    fn get(&self, section: &str, key: &str) -> Option<(&str, usize)> {
        self.values
            .iter()
            .find(|(s, k, _, _)| s == section && k == key)
            .map(|(_, _, v, n)| (v.as_str(), *n))
    }
}

/// configparser's `inline_comment_prefixes=(';',)`: a `;` after whitespace starts a comment.
fn strip_inline_comment(line: &str) -> &str {
    let b = line.as_bytes();
    for i in 1..b.len() {
        if b[i] == b';' && (b[i - 1] == b' ' || b[i - 1] == b'\t') {
            return &line[..i];
        }
    }
    line
}

/// Ansible's `boolean(value, strict=False)`: its true words, anything else false.
fn boolean(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "y" | "yes" | "on" | "1" | "true" | "t" | "1.0"
    )
}

fn expand(p: &str, base: &Path) -> PathBuf {
    let p = p.trim();
    let p = match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ if p == "~" => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default(),
        _ => PathBuf::from(p),
    };
    if p.is_absolute() {
        p
    } else {
        base.join(p)
    }
}

fn convert(kind: Kind, raw: &str, base: &Path) -> Result<Value, String> {
    Ok(match kind {
        Kind::Text => Value::Text(raw.to_string()),
        Kind::Path => Value::Paths(vec![expand(raw, base)]),
        Kind::PathList | Kind::ColonPaths => {
            let sep = if matches!(kind, Kind::PathList) {
                ','
            } else {
                ':'
            };
            Value::Paths(
                raw.split(sep)
                    .filter(|p| !p.trim().is_empty())
                    .map(|p| expand(p, base))
                    .collect(),
            )
        }
        Kind::Int => Value::Int(
            raw.trim()
                .parse()
                .map_err(|_| format!("Invalid value provided for 'integer': '{}'", raw))?,
        ),
        Kind::Bool => Value::Bool(boolean(raw)),
        Kind::List => Value::List(
            raw.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect(),
        ),
    })
}

/// The file Ansible would read: `ANSIBLE_CONFIG` (a file, or a directory holding
/// `ansible.cfg`), then `./ansible.cfg`, `~/.ansible.cfg`, `/etc/ansible/ansible.cfg`.
pub(crate) fn find() -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("ANSIBLE_CONFIG").filter(|p| !p.is_empty()) {
        let p = expand(&p.to_string_lossy(), &cwd);
        candidates.push(if p.is_dir() { p.join("ansible.cfg") } else { p });
    }
    candidates.push(cwd.join("ansible.cfg"));
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".ansible.cfg"));
    }
    candidates.push(PathBuf::from("/etc/ansible/ansible.cfg"));
    candidates.into_iter().find(|p| p.is_file())
}

/// Reads the settings: the file [`find`] picks (if any), then the environment over it.
pub(crate) fn load() -> Result<AnsibleCfg, Error> {
    let env = |k: &str| std::env::var(k).ok();
    load_from(find(), &env)
}

/// [`load`] with the file and the environment given (for tests).
fn load_from(
    file: Option<PathBuf>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AnsibleCfg, Error> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let ini = match &file {
        Some(p) => {
            let text = kk_engine::error::read_file(p).map_err(|e| {
                Error::new(
                    ErrorKind::Options,
                    format!(
                        "cannot read the ansible config {}: {}",
                        p.display(),
                        e.message
                    ),
                )
            })?;
            Some((Ini::parse(p, &text)?, Arc::new(text)))
        }
        None => None,
    };
    let file_dir = file
        .as_ref()
        .and_then(|p| p.parent())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| cwd.clone());
    let mut cfg = AnsibleCfg {
        file: file.clone(),
        ..AnsibleCfg::default()
    };
    for (section, key, var, kind) in SETTINGS {
        let from_env = env(var).map(|v| (v, None));
        let from_file = ini
            .as_ref()
            .and_then(|(ini, _)| ini.get(section, key))
            .map(|(v, n)| (v.to_string(), Some(n)));
        let Some((raw, line)) = from_env.or(from_file) else {
            continue;
        };
        let base = if line.is_some() { &file_dir } else { &cwd };
        let value = convert(kind, &raw, base).map_err(|why| {
            let origin = match (line, &file) {
                (Some(n), Some(p)) => format!("{}:{}", p.display(), n),
                _ => format!("environment variable {}", var),
            };
            Error::new(
                ErrorKind::Options,
                format!(
                    "ansible config `{}` from {} has an invalid value: {}",
                    key, origin, why
                ),
            )
            .help(format!("give `{}` a whole number", key))
        })?;
        cfg.set(key, value);
    }
    Ok(cfg)
}

impl AnsibleCfg {
    /// How `-i` sources are read: the inventory settings over Ansible's defaults.
    pub(crate) fn inventory_options(&self) -> kk_engine::inventory::SourceOptions {
        let mut o = kk_engine::inventory::SourceOptions::default();
        if let Some(l) = &self.inventory_enabled {
            o.enabled = l.clone();
        }
        if let Some(l) = &self.inventory_ignore_exts {
            o.ignore_exts = l.clone();
        }
        if let Some(l) = &self.inventory_ignore_patterns {
            o.ignore_patterns = l.clone();
        }
        o
    }

    fn set(&mut self, key: &str, value: Value) {
        match (key, value) {
            // `inventory` is read before its older name `hostfile`, and wins.
            ("inventory" | "hostfile", Value::Paths(p)) if self.inventory.is_empty() => {
                self.inventory = p
            }
            ("roles_path", Value::Paths(p)) => self.roles_path = p,
            ("library", Value::Paths(p)) => self.library = p,
            ("allow_broken_conditionals", Value::Bool(b)) => self.allow_broken_conditionals = b,
            ("collections_path" | "collections_paths", Value::Paths(p)) => {
                self.collections_path = p
            }
            ("forks", Value::Int(n)) => self.forks = Some(n as usize),
            ("remote_user", Value::Text(t)) => self.remote_user = Some(t),
            ("private_key_file", Value::Paths(p)) => self.private_key_file = p.into_iter().next(),
            ("host_key_checking", Value::Bool(b)) => self.host_key_checking = Some(b),
            ("timeout", Value::Int(n)) => self.timeout = Some(n),
            ("ask_pass", Value::Bool(b)) => self.ask_pass = Some(b),
            ("gathering", Value::Text(t)) => self.gathering = Some(t),
            ("become", Value::Bool(b)) => self.become_ = Some(b),
            ("become_method", Value::Text(t)) => self.become_method = Some(t),
            ("become_user", Value::Text(t)) => self.become_user = Some(t),
            ("become_flags", Value::Text(t)) => self.become_flags = Some(t),
            ("become_ask_pass", Value::Bool(b)) => self.become_ask_pass = Some(b),
            ("ssh_args", Value::Text(t)) => self.ssh_args = Some(t),
            ("enable_plugins", Value::List(l)) => self.inventory_enabled = Some(l),
            ("inventory_ignore_extensions" | "ignore_extensions", Value::List(l)) => {
                self.inventory_ignore_exts = Some(l)
            }
            ("inventory_ignore_patterns" | "ignore_patterns", Value::List(l)) => {
                self.inventory_ignore_patterns = Some(l)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Ini, Error> {
        Ini::parse(Path::new("/x/ansible.cfg"), text)
    }

    #[test]
    fn reads_what_configparser_reads() {
        let ini = parse(
            "# top\n[defaults]\nForks = 7 ; seven\nremote_user: deploy\nunknown = x\n\n[ssh_connection]\nssh_args = -o A=1\n  -o B=2\n[other]\nx=1\n",
        )
        .unwrap();
        assert_eq!(ini.get("defaults", "forks"), Some(("7", 3)));
        assert_eq!(ini.get("defaults", "remote_user"), Some(("deploy", 4)));
        assert_eq!(
            ini.get("ssh_connection", "ssh_args"),
            Some(("-o A=1\n-o B=2", 8))
        );
    }

    #[test]
    fn bad_files_name_the_line() {
        for (text, line, words) in [
            (
                "[defaults]\nforks = 7\nbogus line\n",
                3,
                "is not a `key = value` line",
            ),
            ("forks=7\n", 1, "no section header"),
            (
                "[defaults]\n[defaults]\n",
                2,
                "section `defaults` already exists",
            ),
            (
                "[defaults]\na=1\nA=2\n",
                3,
                "option `a` in section `defaults` already exists",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Options);
            assert_eq!(e.span.as_ref().map(|s| s.line), Some(line), "{text}");
            assert!(e.message.contains(words), "{}", e.message);
        }
    }

    #[test]
    fn environment_over_file_and_paths_from_the_file_dir() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ansible.cfg");
        std::fs::write(
            &p,
            "[defaults]\ninventory = hosts.ini,/abs/inv\nforks = 3\nroles_path = r1:r2\nhost_key_checking = False\n[privilege_escalation]\nbecome = yes\nbecome_user = admin\n",
        )
        .unwrap();
        let env = |k: &str| (k == "ANSIBLE_FORKS").then(|| "9".to_string());
        let cfg = load_from(Some(p.clone()), &env).unwrap();
        assert_eq!(cfg.forks, Some(9));
        assert_eq!(
            cfg.inventory,
            vec![dir.path().join("hosts.ini"), PathBuf::from("/abs/inv")]
        );
        assert_eq!(
            cfg.roles_path,
            vec![dir.path().join("r1"), dir.path().join("r2")]
        );
        assert_eq!(cfg.host_key_checking, Some(false));
        assert_eq!(cfg.become_, Some(true));
        assert_eq!(cfg.become_user.as_deref(), Some("admin"));
        let env = |k: &str| (k == "ANSIBLE_TIMEOUT").then(|| "soon".to_string());
        let e = load_from(Some(p), &env).unwrap_err();
        assert_eq!(e.exit_code(), 5);
        assert!(
            e.message.contains("environment variable ANSIBLE_TIMEOUT"),
            "{}",
            e.message
        );
    }
}
