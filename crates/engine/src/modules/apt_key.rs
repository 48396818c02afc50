//! `apt_key`: an OpenPGP key in APT's keyring (or `keyring`), through `apt-key` as
//! ansible-core's module does it: the key's id comes from `id` or from `gpg --with-colons`
//! on the key (`file`, `data`, `url` downloaded on the host); the keys listed by
//! `apt-key adv --list-public-keys --keyid-format=long` decide (`changed` when the 16-digit
//! fingerprint, or the 8-digit short id, is missing or present); then `apt-key add`/`del`
//! and a second listing confirm it. Plan is one script (the id and the listing), apply
//! another (the change and the listing).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::args::{Flag, Text};
use super::plan::{Plan, PlanApply};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::{shell_quote, ExecOutput};
use crate::error::Result;

crate::closed_set! {
    /// Whether the key should be in the keyring.
    enum State for "state" { Absent = "absent", Present = "present" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
// validate_certs is accepted, not read: the host's downloader checks certificates.
#[allow(dead_code)]
struct AptKeyArgs {
    #[serde(default)]
    id: Option<Text>,
    #[serde(default)]
    url: Option<Text>,
    #[serde(default)]
    data: Option<Text>,
    #[serde(default)]
    file: Option<Text>,
    #[serde(default)]
    keyring: Option<Text>,
    #[serde(default)]
    validate_certs: Option<Flag>,
    #[serde(default)]
    keyserver: Option<Text>,
    #[serde(default)]
    state: Option<State>,
}

const VALID: &[&str] = &[
    "id",
    "url",
    "data",
    "file",
    "keyring",
    "validate_certs",
    "keyserver",
    "state",
];

/// The module's `parse_key_id`: (short id, fingerprint, key id), or `None` when invalid.
fn parse_key_id(id: &str) -> Option<(String, String, String)> {
    let t = id.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t)
        .trim_start_matches('+');
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit() || c == '_') {
        return None;
    }
    let mut key = id.to_uppercase();
    if let Some(rest) = key.strip_prefix("0X") {
        key = rest.to_string();
    }
    let n = key.len();
    if n != 8 && n != 16 && n <= 16 {
        return None;
    }
    let short = key[n.saturating_sub(8)..].to_string();
    let fp = if n > 16 {
        key[n - 16..].to_string()
    } else {
        key.clone()
    };
    Some((short, fp, key))
}

/// The module's `parse_output_for_keys`.
fn parse_keys(out: &str, short: bool) -> Vec<String> {
    let mut found = Vec::new();
    for line in out.split('\n') {
        if !(line.starts_with("pub") || line.starts_with("sub")) || line.contains("expired") {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let code = match tokens.get(1).and_then(|c| c.split_once('/')) {
            Some((_, real)) if !real.contains('/') => real.to_string(),
            _ => match line.split(':').nth(4) {
                Some(c) => c.to_string(),
                None => continue,
            },
        };
        found.push(code);
    }
    if short {
        found = found
            .into_iter()
            .map(|k| k[k.len().saturating_sub(8)..].to_string())
            .collect();
    }
    found
}

/// The checked arguments.
#[derive(Clone)]
struct Checked {
    id: Option<String>,
    url: Option<String>,
    data: Option<String>,
    file: Option<String>,
    keyring: Option<String>,
    keyserver: Option<String>,
    state: State,
}

fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let a: AptKeyArgs = parse_args("apt_key", raw, VALID)?;
    let given: Vec<&str> = [
        ("data", a.data.is_some()),
        ("file", a.file.is_some()),
        ("keyserver", a.keyserver.is_some()),
        ("url", a.url.is_some()),
    ]
    .iter()
    .filter(|(_, g)| *g)
    .map(|(n, _)| *n)
    .collect();
    if given.len() > 1 {
        return Ok(Err(
            "parameters are mutually exclusive: data|file|keyserver|url".into(),
        ));
    }
    Ok(Ok(Checked {
        id: a.id.map(|t| t.0),
        url: a.url.map(|t| t.0),
        data: a.data.map(|t| t.0),
        file: a.file.map(|t| t.0),
        keyring: a.keyring.map(|t| t.0),
        keyserver: a.keyserver.map(|t| t.0),
        state: a.state.unwrap_or(State::Present),
    }))
}

/// `apt-key [--keyring K]` as the module writes it.
fn apt_key(keyring: &Option<String>) -> String {
    match keyring {
        Some(k) => format!("apt-key --keyring {}", shell_quote(k)),
        None => "apt-key".into(),
    }
}

/// The module's command text for messages (`/usr/bin/apt-key …`).
fn cmd_text(keyring: &Option<String>, rest: &str) -> String {
    match keyring {
        Some(k) => format!("/usr/bin/apt-key --keyring {} {}", k, rest),
        None => format!("/usr/bin/apt-key {}", rest),
    }
}

const LIST: &str = "adv --list-public-keys --keyid-format=long";

/// The shell part that downloads `$url` into stdout with what the host has.
const DOWNLOAD: &str = r#"if command -v curl >/dev/null 2>&1; then curl -fsSL -- "$url"
elif command -v wget >/dev/null 2>&1; then wget -qO- -- "$url"
else python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())' "$url"; fi"#;

/// A section of the script's output: `==kk-NAME==` … up to the next marker.
fn section<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let m = format!("==kk-{}==\n", name);
    let start = text.find(&m)? + m.len();
    let rest = &text[start..];
    Some(rest.find("==kk-").map_or(rest, |e| &rest[..e]))
}

/// What apply does.
pub struct AptKeyWork {
    c: Checked,
    key_id: String,
    short: String,
    fp: String,
    short_format: bool,
}

/// `ansible.builtin.apt_key`.
pub struct AptKey;

fn failed_cmd(msg: String, cmd: String, out: &ExecOutput, rc: i64) -> ModuleResult {
    let so = String::from_utf8_lossy(&out.stdout).into_owned();
    let se = String::from_utf8_lossy(&out.stderr).into_owned();
    ModuleResult::failed(msg)
        .with("cmd", cmd)
        .with("rc", rc)
        .with("stdout_lines", super::py_splitlines(&so))
        .with("stdout", so)
        .with("stderr_lines", super::py_splitlines(&se))
        .with("stderr", se)
}

#[async_trait]
impl PlanApply for AptKey {
    type Work = AptKeyWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<AptKeyWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let mut s = String::from("export LANG=C LC_ALL=C LC_MESSAGES=C LANGUAGE=C\ncommand -v apt-key >/dev/null 2>&1 || { echo '==kk-nobin==apt-key'; exit 0; }\ncommand -v gpg >/dev/null 2>&1 || { echo '==kk-nobin==gpg'; exit 0; }\n");
        let mut stdin = None;
        if c.id.is_none() {
            if c.keyserver.is_some() {
                return Ok(Plan::Done(ModuleResult::failed(
                    "Missing key_id, required with keyserver.",
                )));
            }
            if let Some(f) = &c.file {
                s.push_str(&format!(
                    "echo '==kk-colons=='\ngpg --with-colons {} 2>/dev/null || echo '==kk-gpgfail=='\n",
                    shell_quote(f)
                ));
            } else if let Some(url) = &c.url {
                s.push_str(&format!(
                    "url={}\nkey=$({}) || {{ echo '==kk-dlfail=='; exit 0; }}\necho '==kk-colons=='\nprintf '%s\\n' \"$key\" | gpg --with-colons - 2>/dev/null || echo '==kk-gpgfail=='\n",
                    shell_quote(url),
                    DOWNLOAD
                ));
            } else if let Some(d) = &c.data {
                stdin = Some(d.clone().into_bytes());
                s.push_str("echo '==kk-colons=='\ngpg --with-colons - 2>/dev/null || echo '==kk-gpgfail=='\n");
            }
        }
        s.push_str(&format!(
            "echo '==kk-list=='\n{} {} 2>/dev/null || echo \"==kk-listfail==$?\"\n",
            apt_key(&c.keyring),
            LIST
        ));
        let out = ctx.exec(s, stdin).await?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some(b) = text.lines().find_map(|l| l.strip_prefix("==kk-nobin==")) {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Failed to find required executable \"{}\" in paths: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                b
            ))));
        }
        if text.contains("==kk-dlfail==") {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Error getting key id from url: {}",
                c.url.as_deref().unwrap_or_default()
            ))));
        }
        let mut id = c.id.clone();
        if id.is_none() {
            if let Some(colons) = section(&text, "colons") {
                if text.contains("==kk-gpgfail==") {
                    let what = if c.file.is_some() && c.data.is_none() {
                        c.file.clone().unwrap_or_default()
                    } else {
                        "inline data".into()
                    };
                    return Ok(Plan::Done(ModuleResult::failed(format!(
                        "Unable to extract key from '{}'",
                        what
                    ))));
                }
                id = parse_keys(colons, false).into_iter().next();
            }
        }
        let id_value = id.clone().map_or(Value::Null, Value::String);
        let Some((short, fp, key_id)) = id.as_deref().and_then(parse_key_id) else {
            return Ok(Plan::Done(
                ModuleResult::failed("Invalid key_id").with("id", id_value),
            ));
        };
        let short_format = key_id.len() == 8;
        let list = section(&text, "list").unwrap_or_default();
        if let Some(rc) = text.lines().find_map(|l| l.strip_prefix("==kk-listfail==")) {
            return Ok(Plan::Done(failed_cmd(
                "Unable to list public keys".into(),
                cmd_text(&c.keyring, LIST),
                &out,
                rc.parse().unwrap_or(1),
            )));
        }
        let keys = parse_keys(list, short_format);
        let res = ModuleResult::changed(false)
            .with("id", id_value)
            .with("short_id", short.clone())
            .with("fp", fp.clone())
            .with("key_id", key_id.clone())
            .with("before", json!(keys));
        let wanted = if short_format { &short } else { &fp };
        let change = match c.state {
            State::Present => !keys.contains(wanted),
            State::Absent => keys.contains(&fp),
        };
        if !change {
            return Ok(Plan::Done(res));
        }
        Ok(Plan::change(
            res,
            AptKeyWork {
                c,
                key_id,
                short,
                fp,
                short_format,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: AptKeyWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let ak = apt_key(&w.c.keyring);
        let mut stdin = None;
        let (cmd, rest, msg) = match w.c.state {
            State::Absent => (
                format!("{} del {}", ak, shell_quote(&w.short)),
                format!("del {}", w.short),
                format!("Unable to remove a key with id {}", w.short),
            ),
            State::Present => {
                if let Some(f) = &w.c.file {
                    (
                        format!("{} add {}", ak, shell_quote(f)),
                        format!("add {}", f),
                        format!("Unable to add a key from file {}", f),
                    )
                } else if let Some(ks) = &w.c.keyserver {
                    (
                        format!(
                            "n=0; until {ak} adv --no-tty --keyserver {} --recv {}; do n=$((n+1)); [ $n -ge 5 ] && break; done",
                            shell_quote(ks),
                            shell_quote(&w.key_id)
                        ),
                        format!("adv --no-tty --keyserver {} --recv {}", ks, w.key_id),
                        format!("Error fetching key {} from keyserver: {}", w.key_id, ks),
                    )
                } else if let Some(url) = &w.c.url {
                    (
                        format!(
                            "url={}\nkey=$({}) || {{ echo \"Failed to download key at $url\" >&2; exit 1; }}\nprintf '%s\\n' \"$key\" | {} add -",
                            shell_quote(url),
                            DOWNLOAD,
                            ak
                        ),
                        "add -".into(),
                        "Unable to add a key from binary data".into(),
                    )
                } else if let Some(d) = &w.c.data {
                    stdin = Some(d.clone().into_bytes());
                    (
                        format!("{} add -", ak),
                        "add -".into(),
                        "Unable to add a key from binary data".into(),
                    )
                } else {
                    return Ok(ModuleResult::failed(
                        "No key to add ... how did i get here?!?!",
                    ));
                }
            }
        };
        let script = format!(
            "export LANG=C LC_ALL=C LC_MESSAGES=C LANGUAGE=C\n{cmd} || exit $?\necho '==kk-list=='\n{ak} {LIST} 2>/dev/null\n"
        );
        let out = ctx.exec(script, stdin).await?;
        if out.rc != 0 {
            let mut r = failed_cmd(msg, cmd_text(&w.c.keyring, &rest), &out, out.rc.into());
            r.data.extend(result.data);
            return Ok(r.failed_too());
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let keys = parse_keys(section(&text, "list").unwrap_or_default(), w.short_format);
        let mut res = result.with("after", json!(keys));
        let wanted = if w.short_format { &w.short } else { &w.fp };
        match w.c.state {
            State::Present if !keys.contains(wanted) => {
                res = res.failed_too().msg("apt-key did not return an error, but failed to add the key (check that the id is correct and *not* a subkey)");
            }
            State::Absent if keys.contains(&w.fp) => {
                res = res.failed_too().msg("apt-key did not return an error, but the key was not removed (check that the id is correct and *not* a subkey)");
            }
            _ => {}
        }
        Ok(res)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_listings() {
        assert_eq!(
            parse_key_id("0x9DC858229FC7DD38854AE2D88D81803C0EBFCD88"),
            Some((
                "0EBFCD88".into(),
                "8D81803C0EBFCD88".into(),
                "9DC858229FC7DD38854AE2D88D81803C0EBFCD88".into()
            ))
        );
        assert_eq!(
            parse_key_id("0ebfcd88"),
            Some(("0EBFCD88".into(), "0EBFCD88".into(), "0EBFCD88".into()))
        );
        assert_eq!(parse_key_id("123"), None);
        assert_eq!(parse_key_id("xyz12345"), None);
        let out = "/etc/apt/trusted.gpg.d/x.asc\n---\npub   rsa4096/0E98404D386FA1D9 2021-01-17 [SC] [expires: 2029-01-15]\nuid  x\nsub   rsa4096/6ED0E7B82643E131 2021-01-17 [S] [expired: 2020-01-15]\npub:-:4096:1:AAAABBBBCCCCDDDD:1:::\n";
        assert_eq!(
            parse_keys(out, false),
            vec!["0E98404D386FA1D9", "AAAABBBBCCCCDDDD"]
        );
        assert_eq!(parse_keys(out, true), vec!["386FA1D9", "CCCCDDDD"]);
    }
}
