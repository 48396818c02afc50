//! cloud-config (what CABPK writes) mapped to steps, in cloud-init's module order:
//! `bootcmd`, `write_files`, `mounts`, `groups`, `users`, `ntp`, deferred `write_files`,
//! `runcmd`.

use super::error::{clip, kind_of_yaml};
use super::users::{self, check_line, check_name, User};
use super::{check_path, jinja, Metadata, ProvisioningError, Step};
use base64::Engine as _;
use serde_yaml::{Mapping, Value};
use std::io::Read;

pub(crate) const DOC: &str = "cloud-config";

/// The top-level keys CAPKK applies (the rest are refused).
const SUPPORTED_KEYS: &str =
    "bootcmd, write_files, mounts, groups, users, ntp, runcmd (disk_setup/fs_setup only when empty)";

/// Largest decompressed document or file accepted (a gzip bomb stops here).
const MAX_SIZE: u64 = 256 << 20;

fn err(
    path: impl Into<String>,
    expected: impl Into<String>,
    found: impl Into<String>,
    fix: impl Into<String>,
) -> ProvisioningError {
    ProvisioningError::new(DOC, path, expected, found, fix)
}

pub(crate) fn parse(value: &[u8], meta: Option<&Metadata>) -> Result<Vec<Step>, ProvisioningError> {
    let raw;
    let value = if value.starts_with(&[0x1f, 0x8b]) {
        raw = gunzip(value).map_err(|found| {
            err(
                "",
                "gzip-compressed user data",
                found,
                "compress the whole document with gzip, or send it uncompressed",
            )
        })?;
        &raw[..]
    } else {
        value
    };
    let text = std::str::from_utf8(value).map_err(|e| {
        err(
            "",
            "UTF-8 text",
            format!("bytes that are not UTF-8 at byte {}", e.valid_up_to()),
            "encode the document as UTF-8",
        )
    })?;
    let templated = jinja::is_template(text);
    let header = text
        .lines()
        .nth(usize::from(templated))
        .unwrap_or("")
        .trim_end();
    if !header.starts_with("#cloud-config") {
        let found = if header.starts_with("#!") {
            "a shell script (`#!`)".to_string()
        } else if header.to_ascii_lowercase().starts_with("content-type:") {
            "a MIME multipart document".to_string()
        } else if header.is_empty() {
            "an empty first line".to_string()
        } else {
            "a first line that is not `#cloud-config`".to_string()
        };
        return Err(err(
            "",
            "a `#cloud-config` document (after an optional `## template: jinja` line)",
            found,
            "give CAPKK the cloud-config that the bootstrap provider wrote (format cloud-config)",
        )
        .at_line(1 + usize::from(templated), 1));
    }
    let rendered;
    let text = if templated {
        rendered = jinja::render(text, meta)?;
        &rendered[..]
    } else {
        text
    };
    let doc: Value = serde_yaml::from_str(text).map_err(|e| {
        // serde_yaml's syntax messages name the problem, not the document's values.
        let msg = e.to_string();
        let what = msg.split(" at line ").next().unwrap_or("").to_string();
        let mut error = err(
            "",
            "valid YAML",
            format!("invalid YAML ({})", clip(&what)),
            "fix the YAML syntax at that place",
        );
        if let Some(loc) = e.location() {
            error = error.at_line(loc.line(), loc.column());
        }
        error
    })?;
    let map = match doc {
        Value::Null => return Ok(Vec::new()),
        Value::Mapping(m) => m,
        other => {
            return Err(err(
                "",
                "a mapping of cloud-init modules",
                kind_of_yaml(&other),
                "write the document as `key: value` pairs",
            ));
        }
    };
    let mut doc = Doc::default();
    for (key, v) in &map {
        let Some(key) = key.as_str() else {
            return Err(err(
                "",
                "module names as keys",
                format!("{} as a key", kind_of_yaml(key)),
                "use cloud-init module names as keys",
            ));
        };
        match key {
            "bootcmd" => doc.bootcmd = commands(key, v)?,
            "runcmd" => doc.runcmd = commands(key, v)?,
            "write_files" => write_files(v, &mut doc)?,
            "users" => doc.users = parse_users(v)?,
            "groups" => doc.groups = parse_groups(v)?,
            "ntp" => doc.ntp = super::cloud_system::ntp(v)?,
            "mounts" => doc.mounts = super::cloud_system::mounts(v)?,
            "disk_setup" | "fs_setup" => super::cloud_system::refuse_disks(key, v)?,
            other => {
                return Err(err(
                    format!("`{}`", clip(other)),
                    format!("a module CAPKK applies on an existing machine: {SUPPORTED_KEYS}"),
                    format!("the key `{}`", clip(other)),
                    "remove it from the bootstrap configuration, or apply it in the machine's image",
                ));
            }
        }
    }
    let mut steps = doc.bootcmd;
    steps.extend(doc.files);
    steps.extend(doc.mounts);
    steps.extend(users::group_steps(&doc.groups));
    steps.extend(users::steps(&doc.users));
    steps.extend(doc.ntp);
    steps.extend(doc.deferred);
    steps.extend(doc.runcmd);
    Ok(steps)
}

#[derive(Default)]
struct Doc {
    bootcmd: Vec<Step>,
    files: Vec<Step>,
    mounts: Vec<Step>,
    groups: Vec<(String, Vec<String>)>,
    users: Vec<User>,
    ntp: Vec<Step>,
    deferred: Vec<Step>,
    runcmd: Vec<Step>,
}

/// `runcmd`/`bootcmd`: a string item runs in a shell, a list item is an argv.
fn commands(key: &str, v: &Value) -> Result<Vec<Step>, ProvisioningError> {
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Sequence(items) => items,
        other => {
            return Err(err(
                key,
                "a list of commands",
                kind_of_yaml(other),
                format!("write `{key}:` as a YAML list"),
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(Step::Shell(s.clone())),
            Value::Sequence(words) if !words.is_empty() => words
                .iter()
                .enumerate()
                .map(|(j, w)| {
                    scalar(w).ok_or_else(|| {
                        err(
                            format!("{key}[{i}][{j}]"),
                            "a string argument",
                            kind_of_yaml(w),
                            "write each argument as a string",
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Step::Argv),
            other => Err(err(
                format!("{key}[{i}]"),
                "a command line (string) or an argument list",
                if matches!(other, Value::Sequence(_)) {
                    "an empty list"
                } else {
                    kind_of_yaml(other)
                },
                "write the command as a string, or as a list of arguments",
            )),
        })
        .collect()
}

/// A string, number or boolean as text (cloud-init stringifies argv items).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn opt_str(m: &Mapping, key: &str, at: &str) -> Result<Option<String>, ProvisioningError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(err(
            format!("{at}.{key}"),
            "a string",
            kind_of_yaml(other),
            format!("quote the value of `{key}`"),
        )),
    }
}

fn opt_bool(m: &Mapping, key: &str, at: &str) -> Result<Option<bool>, ProvisioningError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Ok(Some(true)),
            "false" | "no" | "off" | "0" => Ok(Some(false)),
            _ => Err(err(
                format!("{at}.{key}"),
                "true or false",
                "another string",
                format!("write `{key}: true` or `{key}: false`"),
            )),
        },
        Some(other) => Err(err(
            format!("{at}.{key}"),
            "true or false",
            kind_of_yaml(other),
            format!("write `{key}: true` or `{key}: false`"),
        )),
    }
}

/// The item's keys must all be known: a typo (`permission:`) would otherwise be dropped.
fn known_keys(m: &Mapping, at: &str, known: &[&str]) -> Result<(), ProvisioningError> {
    for k in m.keys() {
        let name = k.as_str().unwrap_or("");
        if !known.contains(&name) {
            return Err(err(
                at,
                format!("only the keys {}", known.join(", ")),
                format!("the key `{}`", clip(name)),
                "remove the key or correct its spelling",
            ));
        }
    }
    Ok(())
}

fn write_files(v: &Value, doc: &mut Doc) -> Result<(), ProvisioningError> {
    let items = match v {
        Value::Null => return Ok(()),
        Value::Sequence(items) => items,
        other => {
            return Err(err(
                "write_files",
                "a list of files",
                kind_of_yaml(other),
                "write `write_files:` as a YAML list",
            ))
        }
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("write_files[{i}]");
        let Value::Mapping(m) = item else {
            return Err(err(
                &at,
                "a mapping with path, content, …",
                kind_of_yaml(item),
                "write each file as a mapping",
            ));
        };
        if m.contains_key("source") {
            return Err(err(
                format!("{at}.source"),
                "inline `content`",
                "a remote `source`",
                "CAPKK does not download files during provisioning: inline the content",
            ));
        }
        known_keys(
            m,
            &at,
            &[
                "path",
                "content",
                "encoding",
                "owner",
                "permissions",
                "append",
                "defer",
            ],
        )?;
        let path = opt_str(m, "path", &at)?.ok_or_else(|| {
            err(
                format!("{at}.path"),
                "the file's path",
                "no `path`",
                "add `path:`",
            )
        })?;
        let path = path.trim().to_string();
        check_path(DOC, &format!("{at}.path"), &path)?;
        let content = match m.get("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(err(
                    format!("{at}.content"),
                    "a string",
                    kind_of_yaml(other),
                    "write the content as a (block) string",
                ));
            }
        };
        let encoding = opt_str(m, "encoding", &at)?.unwrap_or_default();
        let content = decode(&content, &encoding, &at)?;
        let owner = opt_str(m, "owner", &at)?
            .map(|o| o.trim().to_string())
            .unwrap_or_default();
        let owner = if owner.is_empty() {
            "root:root".to_string()
        } else {
            owner
        };
        for (j, part) in owner.split(':').enumerate() {
            if j > 1 || (j == 0 && part.is_empty()) {
                return Err(err(
                    format!("{at}.owner"),
                    "`user:group` or `user`",
                    format!("`{}`", clip(&owner)),
                    "write the owner as user:group",
                ));
            }
            if !part.is_empty() {
                check_name(DOC, &format!("{at}.owner"), part)?;
            }
        }
        let mode = match m.get("permissions") {
            None | Some(Value::Null) => 0o644,
            Some(Value::String(s)) => parse_octal(s.trim()).ok_or_else(|| {
                err(
                    format!("{at}.permissions"),
                    "an octal mode such as '0640'",
                    format!("`{}`", clip(s)),
                    "write the mode as an octal string",
                )
            })?,
            Some(other) => {
                return Err(err(
                    format!("{at}.permissions"),
                    "an octal mode as a quoted string, such as '0640'",
                    kind_of_yaml(other),
                    "write the mode as a quoted octal string such as '0640': a bare number like 416 could mean decimal or octal",
                ));
            }
        };
        let append = opt_bool(m, "append", &at)?.unwrap_or(false);
        let step = Step::write(&path, content, mode, &owner, append);
        if opt_bool(m, "defer", &at)?.unwrap_or(false) {
            doc.deferred.push(step);
        } else {
            doc.files.push(step);
        }
    }
    Ok(())
}

/// `0640`, `640` or `0o640`, at most `07777`.
fn parse_octal(s: &str) -> Option<u32> {
    let digits = s.strip_prefix("0o").unwrap_or(s);
    if digits.is_empty() || digits.len() > 5 {
        return None;
    }
    u32::from_str_radix(digits, 8).ok().filter(|m| *m <= 0o7777)
}

/// A file's content decoded per cloud-init's `encoding` names.
fn decode(content: &str, encoding: &str, at: &str) -> Result<Vec<u8>, ProvisioningError> {
    let enc = encoding.trim().to_ascii_lowercase();
    let (b64, gz) = match enc.as_str() {
        "" | "none" | "text/plain" => (false, false),
        "b64" | "base64" => (true, false),
        "gz" | "gzip" => (false, true),
        "gz+b64" | "gzip+b64" | "gz+base64" | "gzip+base64" => (true, true),
        _ => {
            return Err(err(
                format!("{at}.encoding"),
                "one of b64, base64, gz, gzip, gz+b64, gz+base64, gzip+b64, gzip+base64 (or none)",
                format!("`{}`", clip(encoding)),
                "use one of cloud-init's encodings",
            ));
        }
    };
    let mut bytes = content.as_bytes().to_vec();
    if b64 {
        // Python's b64decode (cloud-init) skips line breaks and spaces; so do we.
        let compact: Vec<u8> = bytes
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        bytes = base64::engine::general_purpose::STANDARD
            .decode(&compact)
            .map_err(|_| {
                err(
                    format!("{at}.content"),
                    format!("base64 (encoding `{encoding}`)"),
                    format!("content that is not valid base64 ({} bytes)", compact.len()),
                    "encode the content with base64, or fix `encoding`",
                )
            })?;
    }
    if gz {
        bytes = gunzip(&bytes).map_err(|found| {
            err(
                format!("{at}.content"),
                format!("gzip data (encoding `{encoding}`)"),
                found,
                "compress the content with gzip, or fix `encoding`",
            )
        })?;
    }
    Ok(bytes)
}

/// gzip data decompressed, or a description of why not (without the data).
pub(crate) fn gunzip(data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut reader = flate2::read::GzDecoder::new(data).take(MAX_SIZE + 1);
    reader
        .read_to_end(&mut out)
        .map_err(|_| format!("content that is not valid gzip data ({} bytes)", data.len()))?;
    if out.len() as u64 > MAX_SIZE {
        return Err(format!(
            "gzip data larger than {} MiB once decompressed",
            MAX_SIZE >> 20
        ));
    }
    Ok(out)
}

/// A comma-separated string or a list of strings.
fn name_list(v: &Value, at: &str) -> Result<Vec<String>, ProvisioningError> {
    let names: Vec<String> = match v {
        Value::Null => Vec::new(),
        Value::String(s) => s
            .split(',')
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty())
            .collect(),
        Value::Sequence(items) => items
            .iter()
            .map(|g| match g {
                Value::String(s) => Ok(s.trim().to_string()),
                other => Err(err(
                    at,
                    "group names",
                    kind_of_yaml(other),
                    "write names as strings",
                )),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(err(
                at,
                "a comma-separated string or a list of names",
                kind_of_yaml(other),
                "list the names",
            ))
        }
    };
    for n in &names {
        check_name(DOC, at, n)?;
    }
    Ok(names)
}

fn parse_groups(v: &Value) -> Result<Vec<(String, Vec<String>)>, ProvisioningError> {
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Sequence(items) => items.clone(),
        Value::String(_) => vec![v.clone()],
        Value::Mapping(_) => vec![v.clone()],
        other => {
            return Err(err(
                "groups",
                "a list of groups",
                kind_of_yaml(other),
                "list the groups",
            ))
        }
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("groups[{i}]");
        match item {
            Value::String(_) => {
                for g in name_list(item, &at)? {
                    out.push((g, Vec::new()));
                }
            }
            Value::Mapping(m) => {
                for (g, members) in m {
                    let g = g.as_str().unwrap_or("");
                    check_name(DOC, &at, g)?;
                    out.push((g.to_string(), name_list(members, &format!("{at}.{g}"))?));
                }
            }
            other => {
                return Err(err(
                    at,
                    "a group name or `group: [members]`",
                    kind_of_yaml(other),
                    "list the groups",
                ))
            }
        }
    }
    Ok(out)
}

const USER_KEYS: [&str; 15] = [
    "name",
    "gecos",
    "homedir",
    "shell",
    "primary_group",
    "groups",
    "uid",
    "system",
    "no_create_home",
    "no_user_group",
    "inactive",
    "passwd",
    "hashed_passwd",
    "lock_passwd",
    "sudo",
];

fn parse_users(v: &Value) -> Result<Vec<User>, ProvisioningError> {
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Sequence(items) => items.clone(),
        Value::String(s) => s
            .split(',')
            .map(|n| Value::String(n.trim().to_string()))
            .collect(),
        other => {
            return Err(err(
                "users",
                "a list of users",
                kind_of_yaml(other),
                "list the users",
            ))
        }
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("users[{i}]");
        let m = match item {
            Value::String(s) if s == "default" => {
                return Err(err(
                    at,
                    "a named user",
                    "`default` (the cloud image's default user)",
                    "an existing machine has no cloud image default user: remove `default` from users",
                ));
            }
            Value::String(s) => {
                let mut m = Mapping::new();
                m.insert("name".into(), Value::String(s.clone()));
                m
            }
            Value::Mapping(m) => m.clone(),
            other => {
                return Err(err(
                    at,
                    "a user mapping",
                    kind_of_yaml(other),
                    "write each user as a mapping with `name:`",
                ))
            }
        };
        let mut known: Vec<&str> = USER_KEYS.to_vec();
        known.push("ssh_authorized_keys");
        known_keys(&m, &at, &known)?;
        let name = opt_str(&m, "name", &at)?.ok_or_else(|| {
            err(
                format!("{at}.name"),
                "the user's name",
                "no `name`",
                "add `name:`",
            )
        })?;
        check_name(DOC, &format!("{at}.name"), &name)?;
        let mut user = User {
            name,
            lock_passwd: opt_bool(&m, "lock_passwd", &at)?.unwrap_or(true),
            ..User::default()
        };
        user.gecos = opt_str(&m, "gecos", &at)?;
        for (key, field) in [("homedir", &mut user.homedir), ("shell", &mut user.shell)] {
            *field = opt_str(&m, key, &at)?;
            if let Some(p) = field {
                check_path(DOC, &format!("{at}.{key}"), p)?;
            }
        }
        if let Some(g) = opt_str(&m, "primary_group", &at)? {
            check_name(DOC, &format!("{at}.primary_group"), &g)?;
            user.primary_group = Some(g);
        }
        if let Some(g) = m.get("groups") {
            user.groups = name_list(g, &format!("{at}.groups"))?;
        }
        user.uid = opt_u64(&m, "uid", &at)?;
        if let Some(Value::Bool(_)) = m.get("inactive") {
            // CABPK's `inactive: true`: cloud-init passes only strings to useradd, so it
            // has no effect there; refusing says so instead of guessing a meaning.
            return Err(err(
                format!("{at}.inactive"),
                "a number of days after password expiry until the account is disabled",
                "a boolean",
                "remove `inactive` (a boolean has no effect under cloud-init either) or give days",
            ));
        }
        user.inactive = opt_u64(&m, "inactive", &at)?;
        user.system = opt_bool(&m, "system", &at)?.unwrap_or(false);
        user.no_create_home = opt_bool(&m, "no_create_home", &at)?.unwrap_or(false);
        user.no_user_group = opt_bool(&m, "no_user_group", &at)?.unwrap_or(false);
        user.hash_on_create = opt_str(&m, "passwd", &at)?;
        user.hash_always = opt_str(&m, "hashed_passwd", &at)?;
        for (key, h) in [
            ("passwd", &user.hash_on_create),
            ("hashed_passwd", &user.hash_always),
        ] {
            if let Some(h) = h {
                check_line(DOC, &format!("{at}.{key}"), "a crypt(3) password hash", h)?;
            }
        }
        if let Some(g) = &user.gecos {
            check_line(DOC, &format!("{at}.gecos"), "a comment", g)?;
        }
        user.sudo = match m.get("sudo") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Sequence(rules)) => rules
                .iter()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect(),
            Some(other) => {
                return Err(err(
                    format!("{at}.sudo"),
                    "a sudoers rule such as `ALL=(ALL) NOPASSWD:ALL`, a list of rules, or false",
                    kind_of_yaml(other),
                    "write the sudo rule as a string",
                ));
            }
        };
        for rule in &user.sudo {
            check_line(DOC, &format!("{at}.sudo"), "a sudoers rule", rule)?;
        }
        if let Some(keys) = m.get("ssh_authorized_keys") {
            let Value::Sequence(keys) = keys else {
                return Err(err(
                    format!("{at}.ssh_authorized_keys"),
                    "a list of public keys",
                    kind_of_yaml(keys),
                    "list the keys",
                ));
            };
            for key in keys {
                let key = key.as_str().ok_or_else(|| {
                    err(
                        format!("{at}.ssh_authorized_keys"),
                        "public keys as strings",
                        kind_of_yaml(key),
                        "quote each key",
                    )
                })?;
                check_line(
                    DOC,
                    &format!("{at}.ssh_authorized_keys"),
                    "an SSH public key",
                    key,
                )?;
                user.ssh_authorized_keys.push(key.trim().to_string());
            }
        }
        out.push(user);
    }
    Ok(out)
}

fn opt_u64(m: &Mapping, key: &str, at: &str) -> Result<Option<u64>, ProvisioningError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(Value::String(s)) if s.trim().parse::<u64>().is_ok() => Ok(s.trim().parse().ok()),
        Some(other) => Err(err(
            format!("{at}.{key}"),
            "a non-negative whole number",
            kind_of_yaml(other),
            format!("write `{key}` as a number"),
        )),
    }
}
