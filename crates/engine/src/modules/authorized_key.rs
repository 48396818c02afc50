//! `authorized_key` (`ansible.posix.authorized_key`): SSH public keys in a user's
//! `authorized_keys` (written through a temp file and rename). The collection's decisions
//! are ported: a file line is keyed by its key blob (so a key whose options or comment
//! change moves to the end), keys are written back in file order as
//! `[options ]type blob comment`, `exclusive` drops every other line, the `.ssh`
//! directory is made 0700 and the file 0600 owned by the user (`manage_dir`). The result
//! is the module's parameters plus `keyfile`, as Ansible's is.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Flag, Text};
use super::plan::{Plan, PlanApply};
use super::remote::{parent_dir, qpath, remote_error, write_file, WriteOptions};
use super::{parse_args, FileDiff, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::Result;

crate::closed_set! {
    /// Whether the keys should be in the file.
    enum State for "state" { Present = "present", Absent = "absent" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyArgs {
    #[serde(default)]
    user: Option<Text>,
    #[serde(default)]
    key: Option<Text>,
    #[serde(default)]
    path: Option<Text>,
    #[serde(default = "Flag::on")]
    manage_dir: Flag,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    key_options: Option<Text>,
    #[serde(default)]
    exclusive: Flag,
    #[serde(default)]
    comment: Option<Text>,
    #[serde(default = "Flag::on")]
    validate_certs: Flag,
    #[serde(default)]
    follow: Flag,
}

const VALID: &[&str] = &[
    "user",
    "key",
    "path",
    "manage_dir",
    "state",
    "key_options",
    "exclusive",
    "comment",
    "validate_certs",
    "follow",
];

/// Key types the collection recognises in a line.
const KEY_TYPES: &[&str] = &[
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "webauthn-sk-ecdsa-sha2-nistp256@openssh.com",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ssh-ed25519@openssh.com",
    "sk-ssh-ed25519-cert-v01@openssh.com",
    "ssh-ed25519",
    "ssh-ed25519-cert-v01@openssh.com",
    "ssh-dss",
    "ssh-rsa",
    "ssh-xmss@openssh.com",
    "ssh-xmss-cert-v01@openssh.com",
    "rsa-sha2-256",
    "rsa-sha2-512",
    "ssh-rsa-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "rsa-sha2-512-cert-v01@openssh.com",
    "ssh-dss-cert-v01@openssh.com",
];

/// Options as the collection keeps them: in order, a name may repeat.
type Options = Vec<(String, Option<String>)>;

/// One line of the file, or a key to have: `hash` is the key blob (or the raw line for
/// lines that are not keys, `kind` then empty).
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    hash: String,
    kind: Option<String>,
    options: Options,
    comment: String,
    rank: usize,
}

impl Entry {
    /// The collection compares options as a dict of lists: order across names is free.
    fn same(&self, o: &Entry) -> bool {
        fn norm(opts: &Options) -> std::collections::BTreeMap<&str, Vec<&Option<String>>> {
            let mut m: std::collections::BTreeMap<&str, Vec<&Option<String>>> = Default::default();
            for (k, v) in opts {
                m.entry(k.as_str()).or_default().push(v);
            }
            m
        }
        self.hash == o.hash
            && self.kind == o.kind
            && self.comment == o.comment
            && norm(&self.options) == norm(&o.options)
    }
}

/// The collection's `parseoptions`: comma-separated, quotes keep commas.
fn parse_options(s: &str) -> Options {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut push = |cur: &mut String| {
        if !cur.is_empty() {
            let part = std::mem::take(cur);
            match part.split_once('=') {
                Some((k, v)) => out.push((k.to_string(), Some(v.to_string()))),
                None => out.push((part, None)),
            }
        }
    };
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == q {
                    quote = None;
                }
            }
            None if c == ',' => push(&mut cur),
            None if (c == '"' || c == '\'') && chars[i + 1..].contains(&c) => {
                quote = Some(c);
                cur.push(c);
            }
            None => cur.push(c),
        }
    }
    push(&mut cur);
    out
}

/// The collection's `parsekey`: `None` when the line holds no known key type.
fn parse_key(raw: &str, rank: usize) -> Option<Entry> {
    let raw = raw.replace("\\#", "#");
    let parts: Vec<&str> = raw
        .split([' ', '\t', '\r', '\n'])
        .filter(|p| !p.is_empty())
        .collect();
    if parts.first() == Some(&"#") {
        return Some(Entry {
            hash: raw.clone(),
            kind: None,
            options: Vec::new(),
            comment: String::new(),
            rank,
        });
    }
    let i = parts.iter().position(|p| KEY_TYPES.contains(p))?;
    let hash = parts.get(i + 1)?.to_string();
    Some(Entry {
        hash,
        kind: Some(parts[i].to_string()),
        options: if i > 0 {
            parse_options(&parts[..i].join(" "))
        } else {
            Vec::new()
        },
        comment: parts[(i + 2).min(parts.len())..].join(" "),
        rank,
    })
}

/// The file's lines keyed as the collection's dict: a repeated key keeps its first
/// place and takes the later line's value.
fn parse_file(text: &str) -> Vec<Entry> {
    let mut keys: Vec<Entry> = Vec::new();
    for (rank, line) in text.split_inclusive('\n').enumerate() {
        let e = parse_key(line, rank).unwrap_or(Entry {
            hash: line.to_string(),
            kind: None,
            options: Vec::new(),
            comment: String::new(),
            rank,
        });
        match keys.iter_mut().find(|k| k.hash == e.hash) {
            Some(k) => *k = e,
            None => keys.push(e),
        }
    }
    keys
}

/// The collection's `serialize`: by rank, each key as `[options ]type blob comment`.
fn serialize(keys: &[Entry]) -> String {
    let mut sorted: Vec<&Entry> = keys.iter().collect();
    sorted.sort_by_key(|e| e.rank);
    let mut out = String::new();
    for e in sorted {
        let Some(kind) = &e.kind else {
            out.push_str(&e.hash);
            continue;
        };
        if !e.options.is_empty() {
            let opts: Vec<String> = e
                .options
                .iter()
                .map(|(k, v)| match v {
                    Some(v) => format!("{k}={v}"),
                    None => k.clone(),
                })
                .collect();
            out.push_str(&opts.join(","));
            out.push(' ');
        }
        out.push_str(&format!("{} {} {}\n", kind, e.hash, e.comment));
    }
    out
}

struct Checked {
    user: String,
    key: String,
    path: Option<String>,
    manage_dir: bool,
    state: State,
    key_options: Option<String>,
    exclusive: bool,
    comment: Option<String>,
    validate_certs: bool,
    follow: bool,
}

fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let a: KeyArgs = parse_args("authorized_key", raw, VALID)?;
    let missing: Vec<&str> = [("key", a.key.is_none()), ("user", a.user.is_none())]
        .iter()
        .filter(|(_, m)| *m)
        .map(|(k, _)| *k)
        .collect();
    if !missing.is_empty() {
        return Ok(Err(format!(
            "missing required arguments: {}",
            missing.join(", ")
        )));
    }
    Ok(Ok(Checked {
        user: a.user.map(|u| u.0).unwrap_or_default(),
        key: a.key.map(|k| k.0).unwrap_or_default(),
        path: a.path.map(|p| p.0),
        manage_dir: a.manage_dir.0,
        state: a.state.unwrap_or(State::Present),
        key_options: a.key_options.map(|o| o.0),
        exclusive: a.exclusive.0,
        comment: a.comment.map(|c| c.0),
        validate_certs: a.validate_certs.0,
        follow: a.follow.0,
    }))
}

impl Checked {
    /// The module's parameters, as Ansible returns them.
    fn result(&self, changed: bool, keyfile: &str) -> ModuleResult {
        let opt = |v: &Option<String>| v.clone().map(Value::String).unwrap_or(Value::Null);
        ModuleResult::changed(changed)
            .with("user", self.user.clone())
            .with("key", self.key.clone())
            .with("path", opt(&self.path))
            .with("manage_dir", self.manage_dir)
            .with("state", self.state.as_str())
            .with("key_options", opt(&self.key_options))
            .with("exclusive", self.exclusive)
            .with("comment", opt(&self.comment))
            .with("validate_certs", self.validate_certs)
            .with("follow", self.follow)
            .with("keyfile", keyfile.to_string())
    }
}

fn section<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = format!("==kk-{name}==\n");
    let i = text.find(&start)?;
    let rest = &text[i + start.len()..];
    Some(match rest.find("==kk-") {
        Some(j) => &rest[..j],
        None => rest,
    })
}

/// The path of a `file:` URL, as Python's `urlparse(key).path`.
fn url_path(key: &str) -> String {
    let rest = key.split_once(':').map(|(_, r)| r).unwrap_or("");
    let rest = match rest.strip_prefix("//") {
        Some(r) => r.find('/').map(|i| &r[i..]).unwrap_or(""),
        None => rest,
    };
    rest.split(['?', '#']).next().unwrap_or("").to_string()
}

/// `stat` of the `path` argument (not followed), for [`path_info`].
fn path_info_script(path: &str) -> String {
    format!(
        "echo ==kk-pathinfo==; stat -c '%u %g %U %G %a %h %s %F' -- {} 2>/dev/null; echo ==kk-end==\n",
        qpath(path)
    )
}

/// AnsibleModule's `add_path_info`: a result with a `path` that exists gets its owner,
/// mode, size and kind (`state` becomes `file`, `link`, `directory` or `hard`).
fn path_info(mut r: ModuleResult, text: &str) -> ModuleResult {
    let Some(line) = section(text, "pathinfo").and_then(|s| s.lines().next()) else {
        return r;
    };
    let f: Vec<&str> = line.splitn(8, ' ').collect();
    if f.len() < 8 {
        return r;
    }
    let num = |s: &str| s.parse::<u64>().map(Value::from).unwrap_or(Value::Null);
    let mode = u32::from_str_radix(f[4], 8).unwrap_or(0);
    let state = match f[7] {
        "symbolic link" => "link",
        "directory" => "directory",
        _ if f[5] != "1" => "hard",
        _ => "file",
    };
    r = r
        .with("uid", num(f[0]))
        .with("gid", num(f[1]))
        .with("owner", f[2])
        .with("group", f[3])
        .with("mode", format!("0{:03o}", mode))
        .with("state", state)
        .with("size", num(f[6]));
    r
}

/// What apply does: prepare the directory and file as the user's, then write.
pub struct KeyWork {
    uid: String,
    gid: String,
    sshdir: String,
    filename: String,
    manage_dir: bool,
    content: String,
    /// The `path` argument, whose state the result reports.
    path: Option<String>,
}

/// `ansible.posix.authorized_key`.
pub struct AuthorizedKey;

#[async_trait]
impl PlanApply for AuthorizedKey {
    type Work = KeyWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<KeyWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        // One round trip: the user, the key source when it is a URL or a file, the file
        // and where it really is.
        let fetch = if c.key.starts_with("http") {
            format!(
                "echo ==kk-fetched==; curl -fsSL {}--max-time 30 {} || echo ==kk-fetch-failed==\n",
                if c.validate_certs { "" } else { "-k " },
                shell_quote(&c.key)
            )
        } else if c.key.starts_with("file") {
            let kp = url_path(&c.key);
            format!(
                "k={}\nif [ ! -e \"$k\" ]; then echo ==kk-keyfile-missing==\n\
                 elif [ ! -f \"$k\" ]; then echo ==kk-keyfile-dir==\n\
                 else echo ==kk-fetched==; cat -- \"$k\"; fi\n",
                shell_quote(&kp)
            )
        } else {
            String::new()
        };
        let kf = match &c.path {
            Some(p) => qpath(p),
            None => "\"$home/.ssh/authorized_keys\"".into(),
        };
        let script = format!(
            "export LANG=C LC_ALL=C\nu=$(getent passwd {user}) && printf '==kk-user==\\n%s\\n' \"$u\"\n\
             home=$(printf '%s' \"$u\" | cut -d: -f6)\n{fetch}\
             f={kf}\necho ==kk-path==; printf '%s\\n' \"$f\"; readlink -m -- \"$f\"\n\
             {info}if [ -f \"$f\" ]; then echo ==kk-content==; cat -- \"$f\"; fi\n",
            user = shell_quote(&c.user),
            info = c.path.as_deref().map(path_info_script).unwrap_or_default(),
        );
        let out = ctx.exec(script, None).await?;
        if out.rc != 0 {
            return Err(remote_error("cannot read the authorized keys", &out));
        }
        let text = out.stdout_text();
        if text.contains("==kk-fetch-failed==") {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Error getting key from: {}",
                c.key
            ))));
        }
        let key_text =
            if text.contains("==kk-keyfile-missing==") || text.contains("==kk-keyfile-dir==") {
                let kp = url_path(&c.key);
                return Ok(Plan::Done(ModuleResult::failed(
                    if text.contains("==kk-keyfile-missing==") {
                        format!("Path to a key file not found: {kp}")
                    } else {
                        format!("Path to a key is a directory and must be a file: {kp}")
                    },
                )));
            } else if let Some(k) = section(&text, "fetched") {
                k.to_string()
            } else {
                c.key.clone()
            };
        let passwd = section(&text, "user").map(|u| u.trim().to_string());
        let fields: Vec<String> = passwd
            .as_deref()
            .unwrap_or_default()
            .split(':')
            .map(str::to_string)
            .collect();
        let paths: Vec<&str> = section(&text, "path").unwrap_or_default().lines().collect();
        let (as_given, real) = (
            paths.first().copied().unwrap_or_default().to_string(),
            paths.get(1).copied().unwrap_or_default().to_string(),
        );
        if passwd.is_none() && !(ctx.check_mode && c.path.is_some()) {
            let msg = if ctx.check_mode {
                "Either user must exist or you must provide full path to key file in check mode"
                    .to_string()
            } else {
                format!(
                    "Failed to lookup user {}: \"getpwnam(): name not found: '{}'\"",
                    c.user, c.user
                )
            };
            return Ok(Plan::Done(ModuleResult::failed(msg)));
        }
        let keyfile = as_given.clone();
        let existing = section(&text, "content").unwrap_or_default().to_string();
        let mut keys = parse_file(&existing);
        let max_rank = keys.len();
        let new_keys: Vec<&str> = key_text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        let mut keys_to_exist: Vec<String> = Vec::new();
        let mut do_write = false;
        for (rank, nk) in new_keys.iter().enumerate() {
            let Some(mut parsed) = parse_key(nk, rank) else {
                return Ok(Plan::Done(ModuleResult::failed(format!(
                    "invalid key specified: {nk}"
                ))));
            };
            if let Some(o) = &c.key_options {
                parsed.options = parse_options(o);
            }
            if let Some(cm) = &c.comment {
                parsed.comment = cm.clone();
            }
            let mut matched = false;
            if let Some(pos) = keys.iter().position(|k| k.hash == parsed.hash) {
                if !keys[pos].same(&parsed) && c.state == State::Present {
                    keys.remove(pos);
                    do_write = true;
                } else {
                    matched = true;
                }
            }
            match c.state {
                State::Present => {
                    keys_to_exist.push(parsed.hash.clone());
                    if !matched {
                        parsed.rank += max_rank;
                        match keys.iter_mut().find(|k| k.hash == parsed.hash) {
                            Some(k) => *k = parsed,
                            None => keys.push(parsed),
                        }
                        do_write = true;
                    }
                }
                State::Absent => {
                    if matched {
                        keys.retain(|k| k.hash != parsed.hash);
                        do_write = true;
                    }
                }
            }
        }
        if c.state == State::Present && c.exclusive {
            let before = keys.len();
            keys.retain(|k| keys_to_exist.contains(&k.hash));
            do_write |= keys.len() != before;
        }
        if !do_write {
            return Ok(Plan::Done(path_info(c.result(false, &keyfile), &text)));
        }
        let filename = if c.follow { real } else { as_given };
        let content = serialize(&keys);
        // In check mode nothing changes: the path as it is now.
        let mut result = path_info(c.result(true, &keyfile), &text);
        if ctx.diff {
            result.diffs.push(FileDiff {
                before_header: keyfile.clone(),
                after_header: filename.clone(),
                before: existing,
                after: content.clone(),
            });
        }
        let sshdir = match &c.path {
            Some(p) => parent_dir(p),
            None => format!("{}/.ssh", fields.get(5).cloned().unwrap_or_default()),
        };
        Ok(Plan::change(
            result,
            KeyWork {
                uid: fields.get(2).cloned().unwrap_or_default(),
                gid: fields.get(3).cloned().unwrap_or_default(),
                sshdir,
                filename,
                manage_dir: c.manage_dir,
                content,
                path: c.path.clone(),
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: KeyWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let manage = if w.manage_dir {
            format!(
                "if [ ! -e \"$d\" ]; then mkdir -m 0700 -- \"$d\" || {{ echo \"Failed to create directory $d\" >&2; exit 3; }}; fi\n\
                 chown {o} -- \"$d\" && chmod 0700 -- \"$d\" || exit 3\n",
                o = shell_quote(&format!("{}:{}", w.uid, w.gid))
            )
        } else {
            String::new()
        };
        let script = format!(
            "d={d}\nf={f}\n{manage}\
             if [ ! -e \"$f\" ]; then mkdir -p -- \"$(dirname -- \"$f\")\" && : > \"$f\" || exit 3; fi\n\
             chown {o} -- \"$f\" 2>/dev/null; chmod 0600 -- \"$f\" 2>/dev/null; exit 0\n",
            d = qpath(&w.sshdir),
            f = qpath(&w.filename),
            o = shell_quote(&format!("{}:{}", w.uid, w.gid)),
        );
        let out = ctx.exec(script, None).await?;
        if out.rc != 0 {
            return Ok(ModuleResult::failed(out.stderr_text().trim().to_string()));
        }
        write_file(
            ctx,
            &w.filename,
            w.content.into_bytes(),
            &WriteOptions::default(),
        )
        .await?;
        match &w.path {
            Some(p) => {
                let out = ctx.exec(path_info_script(p), None).await?;
                Ok(path_info(result, &out.stdout_text()))
            }
            None => Ok(result),
        }
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_as_the_collection_reads_and_writes_them() {
        let text = "# mine\nssh-ed25519 AAAA1 one@x\nno-pty,command=\"a,b\" ssh-rsa BBBB two\n\nssh-ed25519 AAAA1 dup\n";
        let keys = parse_file(text);
        assert_eq!(keys.len(), 4);
        let k = keys.iter().find(|k| k.hash == "BBBB").unwrap();
        assert_eq!(
            k.options,
            vec![
                ("no-pty".to_string(), None),
                ("command".to_string(), Some("\"a,b\"".to_string()))
            ]
        );
        assert_eq!(
            serialize(&keys),
            "# mine\nno-pty,command=\"a,b\" ssh-rsa BBBB two\n\nssh-ed25519 AAAA1 dup\n"
        );
        let bare = parse_key("ssh-ed25519 CCCC", 0).unwrap();
        assert_eq!(serialize(&[bare]), "ssh-ed25519 CCCC \n");
        assert!(parse_key("nonsense here", 0).is_none());
    }
}
