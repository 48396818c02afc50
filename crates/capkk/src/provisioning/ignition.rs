//! Ignition (v3.x, and the v2.x that CABPK's Container Linux Config produces) mapped to
//! steps, in the order of Ignition's files stage: users, directories, files, links, then
//! systemd units, which are enabled and started (`enable --now`) since an existing machine
//! does not reboot into them: that is how CABPK's `kubeadm.service` runs `kubeadm`.

use super::cloud_init::gunzip;
use super::error::{clip, kind_of_json};
use super::users::{self, check_line, check_name, User};
use super::{check_path, shell_quote, Mkdir, ProvisioningError, Step};
use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256, Sha512};

const DOC: &str = "ignition";

fn err(
    path: impl Into<String>,
    expected: impl Into<String>,
    found: impl Into<String>,
    fix: impl Into<String>,
) -> ProvisioningError {
    ProvisioningError::new(DOC, path, expected, found, fix)
}

pub(crate) fn parse(value: &[u8]) -> Result<Vec<Step>, ProvisioningError> {
    let doc: Value = serde_json::from_slice(value).map_err(|e| {
        let msg = e.to_string();
        let what = msg.split(" at line ").next().unwrap_or("").to_string();
        let line = e.line().max(1);
        err(
            "",
            "a JSON document",
            format!("invalid JSON ({})", clip(&what)),
            "fix the JSON syntax at that place",
        )
        .at_line(line, e.column().max(1))
    })?;
    let Value::Object(root) = &doc else {
        return Err(err(
            "",
            "a JSON object",
            kind_of_json(&doc),
            "give the Ignition config as a JSON object",
        ));
    };
    known(
        root,
        "",
        &[
            "ignition",
            "storage",
            "systemd",
            "passwd",
            "networkd",
            "kernelArguments",
        ],
    )?;
    let ign = obj(root, "ignition", "")?.ok_or_else(|| {
        err(
            "ignition",
            "an `ignition` object with `version`",
            "none",
            "add `\"ignition\": {\"version\": \"3.4.0\"}`",
        )
    })?;
    known(
        ign,
        "ignition",
        &["version", "config", "security", "timeouts", "proxy"],
    )?;
    let version = ign.get("version").and_then(Value::as_str).unwrap_or("");
    let v2 = match version.split('.').next() {
        Some("2") => true,
        Some("3") => false,
        _ => {
            return Err(err(
                "ignition.version",
                "an Ignition spec version 2.x or 3.x",
                format!("`{}`", clip(version)),
                "set ignition.version, e.g. 3.4.0",
            ));
        }
    };
    for key in ["config", "security"] {
        if let Some(v) = ign.get(key) {
            if has_content(v) {
                return Err(err(
                    format!("ignition.{key}"),
                    "no remote configs or certificate authorities",
                    format!("a non-empty `{key}`"),
                    "CAPKK applies one self-contained document and fetches nothing: merge the configs into it",
                ));
            }
        }
    }
    for key in ["networkd", "kernelArguments"] {
        if root.get(key).is_some_and(has_content) {
            return Err(err(key, "nothing (CAPKK does not change a running machine's network or kernel command line)", format!("a non-empty `{key}`"), "configure it in the machine's image"));
        }
    }
    let mut steps = Vec::new();
    if let Some(passwd) = obj(root, "passwd", "")? {
        known(passwd, "passwd", &["users", "groups"])?;
        steps.extend(users::group_steps(&groups(passwd)?));
        steps.extend(users::steps(&parse_users(passwd)?));
    }
    if let Some(storage) = obj(root, "storage", "")? {
        known(
            storage,
            "storage",
            &[
                "files",
                "directories",
                "links",
                "disks",
                "raid",
                "filesystems",
                "luks",
            ],
        )?;
        for key in ["disks", "raid", "filesystems", "luks"] {
            if storage.get(key).is_some_and(has_content) {
                return Err(err(
                    format!("storage.{key}"),
                    "no disk partitioning, RAID, filesystems or LUKS (CAPKK provisions existing machines)",
                    format!("a non-empty `{key}`"),
                    "prepare disks in the machine's image, and remove them from the config",
                ));
            }
        }
        for (i, d) in list(storage, "directories", "storage")?.iter().enumerate() {
            let at = format!("storage.directories[{i}]");
            let d = as_obj(d, &at)?;
            known(
                d,
                &at,
                &["path", "mode", "user", "group", "overwrite", "filesystem"],
            )?;
            let path = node_path(d, &at, v2)?;
            steps.push(Step::Mkdir(Mkdir {
                path,
                mode: format!("{:04o}", mode(d, &at, 0o755)?),
                owner: owner(d, &at)?,
            }));
        }
        for (i, f) in list(storage, "files", "storage")?.iter().enumerate() {
            file(f, &format!("storage.files[{i}]"), v2, &mut steps)?;
        }
        for (i, l) in list(storage, "links", "storage")?.iter().enumerate() {
            let at = format!("storage.links[{i}]");
            let l = as_obj(l, &at)?;
            known(
                l,
                &at,
                &[
                    "path",
                    "target",
                    "hard",
                    "overwrite",
                    "user",
                    "group",
                    "filesystem",
                ],
            )?;
            let path = node_path(l, &at, v2)?;
            let target = str_of(l, "target", &at)?.ok_or_else(|| {
                err(
                    format!("{at}.target"),
                    "the link's target",
                    "none",
                    "add `target`",
                )
            })?;
            check_line(DOC, &format!("{at}.target"), "a path", &target)?;
            let hard = bool_of(l, "hard", &at)?.unwrap_or(false);
            let parent = path
                .rsplit_once('/')
                .map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
            steps.push(Step::Shell(format!(
                "set -e\nmkdir -p {}\nln -f{} {} {}\n",
                shell_quote(parent),
                if hard { "" } else { "sn" },
                shell_quote(&target),
                shell_quote(&path)
            )));
        }
    }
    if let Some(systemd) = obj(root, "systemd", "")? {
        known(systemd, "systemd", &["units"])?;
        units(list(systemd, "units", "systemd")?, &mut steps)?;
    }
    Ok(steps)
}

fn has_content(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => o.values().any(has_content),
        _ => true,
    }
}

fn known(m: &Map<String, Value>, at: &str, keys: &[&str]) -> Result<(), ProvisioningError> {
    match m.keys().find(|k| !keys.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(err(
            if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{}", clip(k))
            },
            format!("only the keys {}", keys.join(", ")),
            format!("the key `{}`", clip(k)),
            "remove the key or correct its spelling (CAPKK applies only these)",
        )),
    }
}

fn as_obj<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, ProvisioningError> {
    v.as_object().ok_or_else(|| {
        err(
            at,
            "an object",
            kind_of_json(v),
            "write it as a JSON object",
        )
    })
}

fn obj<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<&'a Map<String, Value>>, ProvisioningError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => as_obj(v, &join(at, key)).map(Some),
    }
}

fn list<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<&'a [Value], ProvisioningError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(err(
            join(at, key),
            "an array",
            kind_of_json(v),
            "write it as a JSON array",
        )),
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

fn str_of(
    m: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<String>, ProvisioningError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(err(
            join(at, key),
            "a string",
            kind_of_json(v),
            "write it as a JSON string",
        )),
    }
}

fn bool_of(m: &Map<String, Value>, key: &str, at: &str) -> Result<Option<bool>, ProvisioningError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(err(
            join(at, key),
            "true or false",
            kind_of_json(v),
            "write it as a JSON boolean",
        )),
    }
}

/// `path` checked; in v2 only the `root` filesystem exists on a running machine.
fn node_path(m: &Map<String, Value>, at: &str, v2: bool) -> Result<String, ProvisioningError> {
    if let Some(fs) = str_of(m, "filesystem", at)? {
        if fs != "root" {
            return Err(err(
                format!("{at}.filesystem"),
                "`root`",
                format!("`{}`", clip(&fs)),
                "write the node on the root filesystem",
            ));
        }
    } else if v2 {
        // Ignition v2 requires it; a missing one is read as root, as CAPD does.
    }
    let path = str_of(m, "path", at)?
        .ok_or_else(|| err(format!("{at}.path"), "a path", "none", "add `path`"))?;
    check_path(DOC, &format!("{at}.path"), &path)?;
    Ok(path)
}

/// A decimal mode (`420` is `0644`), Ignition's way of writing it.
fn mode(m: &Map<String, Value>, at: &str, default: u32) -> Result<u32, ProvisioningError> {
    match m.get("mode") {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v <= 0o7777 => Ok(v as u32),
            _ => Err(err(
                format!("{at}.mode"),
                "a decimal mode from 0 to 4095 (e.g. 420 for 0644)",
                "a number out of range",
                "write the mode in decimal",
            )),
        },
        Some(v) => Err(err(
            format!("{at}.mode"),
            "a decimal number (e.g. 420 for 0644)",
            kind_of_json(v),
            "write the mode as a JSON number",
        )),
    }
}

/// `user`/`group` as `{"id": 0}` or `{"name": "root"}`, joined as `user:group`.
fn owner(m: &Map<String, Value>, at: &str) -> Result<String, ProvisioningError> {
    let mut parts = Vec::new();
    for key in ["user", "group"] {
        let at = join(at, key);
        let part = match obj(m, key, "")? {
            None => "root".to_string(),
            Some(o) => {
                known(o, &at, &["id", "name"])?;
                match (o.get("id").and_then(Value::as_u64), str_of(o, "name", &at)?) {
                    (_, Some(name)) => {
                        check_name(DOC, &format!("{at}.name"), &name)?;
                        name
                    }
                    (Some(id), None) => id.to_string(),
                    (None, None) => "root".to_string(),
                }
            }
        };
        parts.push(part);
    }
    Ok(parts.join(":"))
}

fn file(f: &Value, at: &str, v2: bool, steps: &mut Vec<Step>) -> Result<(), ProvisioningError> {
    let f = as_obj(f, at)?;
    known(
        f,
        at,
        &[
            "path",
            "contents",
            "mode",
            "user",
            "group",
            "overwrite",
            "append",
            "filesystem",
        ],
    )?;
    let path = node_path(f, at, v2)?;
    let mode = mode(f, at, 0o644)?;
    let owner = owner(f, at)?;
    // overwrite (v3): CAPKK re-applies a document to the same machine, so replacing the
    // file is how a second run matches the first; no content means "keep what is there".
    bool_of(f, "overwrite", at)?;
    let (content, append) = match obj(f, "contents", at)? {
        Some(c) if c.get("source").is_some_and(|s| !s.is_null()) => {
            (resource(c, &format!("{at}.contents"))?, false)
        }
        _ => (Vec::new(), true),
    };
    let v2_append = match f.get("append") {
        Some(Value::Bool(b)) => *b,
        _ => false,
    };
    steps.push(Step::write(
        &path,
        content,
        mode,
        &owner,
        append || v2_append,
    ));
    if let Some(Value::Array(extra)) = f.get("append") {
        for (i, r) in extra.iter().enumerate() {
            let rat = format!("{at}.append[{i}]");
            let r = as_obj(r, &rat)?;
            steps.push(Step::write(&path, resource(r, &rat)?, mode, &owner, true));
        }
    } else if let Some(v) = f.get("append").filter(|v| !v.is_boolean() && !v.is_null()) {
        return Err(err(
            format!("{at}.append"),
            "a list of resources (v3) or a boolean (v2)",
            kind_of_json(v),
            "fix `append`",
        ));
    }
    Ok(())
}

/// A resource's bytes: a `data:` URL, gunzipped if `compression` is `gzip`, checked
/// against `verification.hash` (of the decompressed bytes) when given.
fn resource(r: &Map<String, Value>, at: &str) -> Result<Vec<u8>, ProvisioningError> {
    known(
        r,
        at,
        &["source", "compression", "verification", "httpHeaders"],
    )?;
    if r.get("httpHeaders").is_some_and(has_content) {
        return Err(err(
            format!("{at}.httpHeaders"),
            "no HTTP headers (no downloads)",
            "headers for a download",
            "inline the content as a data: URL",
        ));
    }
    let source = str_of(r, "source", at)?.unwrap_or_default();
    let mut bytes = data_url(source.trim()).map_err(|(expected, found)| {
        err(
            format!("{at}.source"),
            expected,
            found,
            "inline the content as a data: URL (`data:;base64,…` or percent-encoded `data:,…`)",
        )
    })?;
    match str_of(r, "compression", at)?.as_deref() {
        None | Some("") => {}
        Some("gzip") => {
            bytes = gunzip(&bytes).map_err(|found| {
                err(
                    format!("{at}.compression"),
                    "gzip data",
                    found,
                    "compress the content with gzip, or remove `compression`",
                )
            })?;
        }
        Some(other) => {
            return Err(err(
                format!("{at}.compression"),
                "`gzip` or nothing",
                format!("`{}`", clip(other)),
                "use gzip",
            ))
        }
    }
    if let Some(ver) = obj(r, "verification", at)? {
        if let Some(hash) = str_of(ver, "hash", &format!("{at}.verification"))? {
            let hat = format!("{at}.verification.hash");
            let (kind, want) = hash.split_once('-').unwrap_or(("", ""));
            let got = match kind {
                "sha256" => hex::encode(Sha256::digest(&bytes)),
                "sha512" => hex::encode(Sha512::digest(&bytes)),
                _ => {
                    return Err(err(
                        hat,
                        "`sha256-<hex>` or `sha512-<hex>`",
                        format!("`{}`", clip(&hash)),
                        "fix the hash",
                    ))
                }
            };
            if !got.eq_ignore_ascii_case(want) {
                return Err(err(
                    hat,
                    format!("the {kind} of the (decompressed) content"),
                    "a different hash",
                    "recompute the hash, or fix the content",
                ));
            }
        }
    }
    Ok(bytes)
}

/// RFC 2397 `data:[<mediatype>][;base64],<data>`. Errors are (expected, found), without
/// the data.
fn data_url(src: &str) -> Result<Vec<u8>, (String, String)> {
    let Some(rest) = src.strip_prefix("data:") else {
        let scheme = src.split_once("://").map(|(s, _)| s).unwrap_or("");
        let found = if scheme.is_empty() {
            "a source that is not a URL".to_string()
        } else {
            format!("a remote `{}://` source", clip(scheme))
        };
        return Err((
            "an inline `data:` URL (CAPKK downloads nothing during provisioning)".into(),
            found,
        ));
    };
    let Some((meta, data)) = rest.split_once(',') else {
        return Err((
            "`data:[type][;base64],<data>`".into(),
            "a data URL without `,`".into(),
        ));
    };
    let decoded = percent_decode(data).ok_or_else(|| {
        (
            "percent-encoded data".to_string(),
            "a malformed `%` escape".to_string(),
        )
    })?;
    if meta.split(';').any(|p| p.trim() == "base64") {
        let compact: Vec<u8> = decoded
            .into_iter()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        base64::engine::general_purpose::STANDARD
            .decode(&compact)
            .map_err(|_| {
                (
                    "base64 data".to_string(),
                    format!("data that is not valid base64 ({} bytes)", compact.len()),
                )
            })
    } else {
        Ok(decoded)
    }
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

const UNIT_SUFFIXES: [&str; 11] = [
    ".service",
    ".socket",
    ".timer",
    ".mount",
    ".automount",
    ".path",
    ".target",
    ".slice",
    ".scope",
    ".swap",
    ".device",
];

fn unit_name(at: &str, name: &str, suffixes: &[&str]) -> Result<(), ProvisioningError> {
    let ok = !name.contains(['/', '\0', '\n'])
        && !name.starts_with('.')
        && suffixes
            .iter()
            .any(|s| name.len() > s.len() && name.ends_with(s));
    if ok {
        return Ok(());
    }
    Err(err(
        at,
        format!("a unit file name ending in one of {}", suffixes.join(" ")),
        format!("`{}`", clip(name)),
        "name the unit like `kubeadm.service`",
    ))
}

fn units(units: &[Value], steps: &mut Vec<Step>) -> Result<(), ProvisioningError> {
    let mut after = Vec::new();
    for (i, u) in units.iter().enumerate() {
        let at = format!("systemd.units[{i}]");
        let u = as_obj(u, &at)?;
        known(
            u,
            &at,
            &["name", "enabled", "enable", "mask", "contents", "dropins"],
        )?;
        let name = str_of(u, "name", &at)?.unwrap_or_default();
        unit_name(&format!("{at}.name"), &name, &UNIT_SUFFIXES)?;
        let dir = "/etc/systemd/system";
        if let Some(contents) = str_of(u, "contents", &at)? {
            steps.push(Step::write(
                &format!("{dir}/{name}"),
                contents.into_bytes(),
                0o644,
                "root:root",
                false,
            ));
        }
        for (j, d) in list(u, "dropins", &at)?.iter().enumerate() {
            let dat = format!("{at}.dropins[{j}]");
            let d = as_obj(d, &dat)?;
            known(d, &dat, &["name", "contents"])?;
            let dname = str_of(d, "name", &dat)?.unwrap_or_default();
            unit_name(&format!("{dat}.name"), &dname, &[".conf"])?;
            let contents = str_of(d, "contents", &dat)?.unwrap_or_default();
            steps.push(Step::write(
                &format!("{dir}/{name}.d/{dname}"),
                contents.into_bytes(),
                0o644,
                "root:root",
                false,
            ));
        }
        let enabled = match (bool_of(u, "enabled", &at)?, bool_of(u, "enable", &at)?) {
            (Some(e), _) => Some(e),
            (None, Some(true)) => Some(true),
            _ => None,
        };
        if bool_of(u, "mask", &at)?.unwrap_or(false) {
            after.push(Step::argv(["systemctl", "mask", &name]));
        } else if enabled == Some(true) {
            after.push(Step::argv(["systemctl", "enable", "--now", &name]));
        } else if enabled == Some(false) {
            after.push(Step::argv(["systemctl", "disable", &name]));
        }
    }
    if !units.is_empty() {
        steps.push(Step::argv(["systemctl", "daemon-reload"]));
    }
    steps.extend(after);
    Ok(())
}

fn groups(passwd: &Map<String, Value>) -> Result<Vec<(String, Vec<String>)>, ProvisioningError> {
    let mut out = Vec::new();
    for (i, g) in list(passwd, "groups", "passwd")?.iter().enumerate() {
        let at = format!("passwd.groups[{i}]");
        let g = as_obj(g, &at)?;
        known(g, &at, &["name", "system"])?;
        let name = str_of(g, "name", &at)?.unwrap_or_default();
        check_name(DOC, &format!("{at}.name"), &name)?;
        out.push((name, Vec::new()));
    }
    Ok(out)
}

fn parse_users(passwd: &Map<String, Value>) -> Result<Vec<User>, ProvisioningError> {
    let mut out = Vec::new();
    for (i, u) in list(passwd, "users", "passwd")?.iter().enumerate() {
        let at = format!("passwd.users[{i}]");
        let u = as_obj(u, &at)?;
        known(
            u,
            &at,
            &[
                "name",
                "passwordHash",
                "sshAuthorizedKeys",
                "uid",
                "gecos",
                "homeDir",
                "noCreateHome",
                "primaryGroup",
                "groups",
                "noUserGroup",
                "noLogInit",
                "shell",
                "system",
            ],
        )?;
        let name = str_of(u, "name", &at)?.unwrap_or_default();
        check_name(DOC, &format!("{at}.name"), &name)?;
        let mut user = User {
            name,
            ..User::default()
        };
        user.gecos = str_of(u, "gecos", &at)?;
        user.homedir = str_of(u, "homeDir", &at)?;
        user.shell = str_of(u, "shell", &at)?;
        for (key, p) in [("homeDir", &user.homedir), ("shell", &user.shell)] {
            if let Some(p) = p {
                check_path(DOC, &format!("{at}.{key}"), p)?;
            }
        }
        if let Some(g) = &user.gecos {
            check_line(DOC, &format!("{at}.gecos"), "a comment", g)?;
        }
        user.primary_group = str_of(u, "primaryGroup", &at)?;
        if let Some(g) = &user.primary_group {
            check_name(DOC, &format!("{at}.primaryGroup"), g)?;
        }
        for g in list(u, "groups", &at)? {
            let g = g.as_str().ok_or_else(|| {
                err(
                    format!("{at}.groups"),
                    "group names",
                    kind_of_json(g),
                    "write names as strings",
                )
            })?;
            check_name(DOC, &format!("{at}.groups"), g)?;
            user.groups.push(g.to_string());
        }
        user.uid = match u.get("uid") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                err(
                    format!("{at}.uid"),
                    "a non-negative whole number",
                    kind_of_json(v),
                    "write uid as a number",
                )
            })?),
        };
        user.system = bool_of(u, "system", &at)?.unwrap_or(false);
        user.no_create_home = bool_of(u, "noCreateHome", &at)?.unwrap_or(false);
        user.no_user_group = bool_of(u, "noUserGroup", &at)?.unwrap_or(false);
        user.hash_always = str_of(u, "passwordHash", &at)?;
        if let Some(h) = &user.hash_always {
            check_line(
                DOC,
                &format!("{at}.passwordHash"),
                "a crypt(3) password hash",
                h,
            )?;
        }
        for k in list(u, "sshAuthorizedKeys", &at)? {
            let k = k.as_str().ok_or_else(|| {
                err(
                    format!("{at}.sshAuthorizedKeys"),
                    "public keys as strings",
                    kind_of_json(k),
                    "quote each key",
                )
            })?;
            check_line(
                DOC,
                &format!("{at}.sshAuthorizedKeys"),
                "an SSH public key",
                k,
            )?;
            user.ssh_authorized_keys.push(k.trim().to_string());
        }
        out.push(user);
    }
    Ok(out)
}
