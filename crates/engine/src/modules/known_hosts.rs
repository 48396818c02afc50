//! `known_hosts`: adds or removes a host's key in an SSH known_hosts file. As Ansible's
//! module, the host's own `ssh-keygen -F` finds the host's lines (it knows hashed names
//! and patterns); the edit is made on the controller with Ansible's rules and written
//! through the shared text-edit plan (temp file and rename, only when it changes).

use async_trait::async_trait;
use base64::Engine as _;
use hmac::Mac;
use serde::Deserialize;

use super::args::{Flag, Text};
use super::lineinfile::{apply_edit, plan_edit, read_for_edit, EditFinish, EditWork};
use super::plan::{Plan, PlanApply};
use super::remote::{add_stat_keys, qpath, remote_error, Attrs};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the key should be in the file.
    enum State for "state" { Present = "present", Absent = "absent" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownArgs {
    #[serde(default, alias = "host")]
    name: Option<Text>,
    #[serde(default)]
    key: Option<Text>,
    #[serde(default)]
    path: Option<Text>,
    #[serde(default)]
    hash_host: Flag,
    #[serde(default)]
    state: Option<State>,
}

const VALID: &[&str] = &["name", "key", "path", "hash_host", "state"];

struct Checked {
    host: String,
    key: Option<String>,
    path: String,
    hash_host: bool,
    state: State,
}

fn check(raw: VarMap) -> Result<Checked> {
    let a: KnownArgs = parse_args("known_hosts", raw, VALID)?;
    let host = a
        .name
        .map(|n| n.0)
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "known_hosts: `name` is required"))?;
    Ok(Checked {
        host,
        key: a.key.map(|k| k.0).filter(|k| !k.is_empty()),
        path: a
            .path
            .map(|p| p.0)
            .unwrap_or_else(|| "~/.ssh/known_hosts".into()),
        hash_host: a.hash_host.0,
        state: a.state.unwrap_or(State::Present),
    })
}

/// A key line split as Ansible's `normalize_known_hosts_key` does.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyLine {
    options: Option<String>,
    host: String,
    kind: String,
    key: String,
}

fn normalize(line: &str) -> Option<KeyLine> {
    let k: Vec<&str> = line.split_whitespace().collect();
    let (options, rest) = match k.first() {
        Some(f) if f.starts_with('@') => (Some(f.to_string()), &k[1..]),
        _ => (None, &k[..]),
    };
    Some(KeyLine {
        options,
        host: rest.first()?.to_string(),
        kind: rest.get(1)?.to_string(),
        key: rest.get(2)?.to_string(),
    })
}

/// Ansible's hashed host name: `|1|base64(salt)|base64(HMAC-SHA1(salt, host))`.
fn hash_host_key(host: &str, key: &str) -> String {
    let mut salt = [0u8; 20];
    let _ = getrandom::getrandom(&mut salt);
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt).expect("any key length");
    mac.update(host.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD;
    let hashed = format!(
        "|1|{}|{}",
        b64.encode(salt),
        b64.encode(mac.finalize().into_bytes())
    );
    let mut parts: Vec<String> = key.split_whitespace().map(str::to_string).collect();
    let i = usize::from(parts.first().is_some_and(|p| p.starts_with('@')));
    if i < parts.len() {
        parts[i] = hashed;
    }
    parts.join(" ")
}

/// What `ssh-keygen -F` said about the host, on the host.
struct Lookup {
    /// The key given names the host (Ansible's sanity check).
    key_names_host: bool,
    /// The file exists.
    exists: bool,
    /// `ssh-keygen -F` output and status for the file.
    out: String,
    rc: i32,
    err: String,
}

async fn lookup(ctx: &ModuleContext, c: &Checked, key: Option<&str>) -> Result<Lookup> {
    let script = format!(
        "command -v ssh-keygen >/dev/null || {{ echo 'Failed to find required executable \"ssh-keygen\"' >&2; exit 127; }}\n\
         h={h}\np={p}\nif [ -n \"$KK_KEY\" ]; then\n  t=$(mktemp) || exit 1\n  cat > \"$t\"\n  \
         if [ -n \"$(ssh-keygen -F \"$h\" -f \"$t\" 2>/dev/null)\" ]; then echo sane; fi\n  rm -f \"$t\"\nfi\n\
         echo ==kk-F==\n[ -e \"$p\" ] || {{ echo absent; exit 0; }}\necho present\n\
         ssh-keygen -F \"$h\" -f \"$p\" 2>\"${{TMPDIR:-/tmp}}/.kk_kh_err$$\"\necho \"==kk-rc=$?\"\n\
         cat \"${{TMPDIR:-/tmp}}/.kk_kh_err$$\" >&2; rm -f \"${{TMPDIR:-/tmp}}/.kk_kh_err$$\"\n",
        h = shell_quote(&c.host),
        p = qpath(&c.path),
    );
    let script = format!(
        "KK_KEY={}\n{script}",
        if key.is_some() { "1" } else { "''" }
    );
    let out = ctx.exec(script, key.map(|k| k.as_bytes().to_vec())).await?;
    if out.rc != 0 {
        return Err(remote_error("known_hosts: cannot run ssh-keygen", &out));
    }
    let text = out.stdout_text();
    let (pre, post) = text.split_once("==kk-F==").unwrap_or((&text, ""));
    let post = post.trim_start_matches('\n');
    let exists = post.starts_with("present");
    let body = post.strip_prefix("present\n").unwrap_or("");
    let (found, rc) = match body.rsplit_once("==kk-rc=") {
        Some((f, rc)) => (f.to_string(), rc.trim().parse().unwrap_or(1)),
        None => (String::new(), 0),
    };
    Ok(Lookup {
        key_names_host: pre.lines().any(|l| l == "sane"),
        exists,
        out: found,
        rc,
        err: out.stderr_text(),
    })
}

/// Ansible's `search_for_host_key`: (found, replace_or_add, found_line).
fn search(
    l: &Lookup,
    key: Option<&str>,
) -> std::result::Result<(bool, bool, Option<usize>), String> {
    if !l.exists || (l.out.is_empty() && l.err.is_empty() && (l.rc == 0 || l.rc == 1)) {
        return Ok((false, false, None));
    }
    if l.rc != 0 {
        return Err(format!(
            "ssh-keygen failed (rc={}, stdout='{}',stderr='{}')",
            l.rc, l.out, l.err
        ));
    }
    let Some(key) = key else {
        return Ok((true, false, None));
    };
    let Some(mut new_key) = normalize(key) else {
        return Err(format!("the key {key:?} is not a known_hosts line"));
    };
    let mut found_line = None;
    for line in l.out.split('\n') {
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            found_line = line
                .split("found: line ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse::<usize>().ok());
            continue;
        }
        let Some(found) = normalize(line) else {
            continue;
        };
        let special = found
            .options
            .as_deref()
            .is_some_and(|o| o.starts_with("@cert-authority") || o.starts_with("@revoke"));
        if special {
            if new_key == found {
                return Ok((true, false, found_line));
            }
            continue;
        }
        if new_key.host.starts_with("|1|") && found.host.starts_with("|1|") {
            new_key.host = found.host.clone();
        }
        if new_key == found {
            return Ok((true, false, found_line));
        } else if new_key.kind == found.kind {
            return Ok((true, true, found_line));
        }
    }
    Ok((true, true, None))
}

/// Adds or removes a host key.
pub struct KnownHosts;

/// What apply does: the text edit, or `ssh-keygen -R` (every key of the host).
pub enum KnownWork {
    /// Write the edited file.
    Edit(EditWork),
    /// Remove all the host's keys with ssh-keygen (keeps `path.old`, as Ansible's).
    RemoveAll { host: String, path: String },
}

#[async_trait]
impl PlanApply for KnownHosts {
    type Work = KnownWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<KnownWork>> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let host = c.host.to_lowercase();
        let c = Checked { host, ..c };
        let mut res = ModuleResult::ok()
            .with("name", c.host.clone())
            .with("path", c.path.clone())
            .with("hash_host", c.hash_host)
            .with("state", c.state.as_str());
        res.data.insert(
            "key".into(),
            c.key
                .clone()
                .map(Into::into)
                .unwrap_or(serde_json::Value::Null),
        );
        if c.key.is_none() && c.state == State::Present {
            return Ok(Plan::Done(
                res.msg("No key specified when adding a host").failed_too(),
            ));
        }
        let mut key = c.key.clone();
        if let (Some(k), true) = (&key, c.hash_host) {
            key = Some(hash_host_key(&c.host, k));
        }
        if let Some(k) = key.as_mut() {
            if !k.ends_with('\n') {
                k.push('\n');
            }
        }
        if key.is_some() {
            let re = regex::Regex::new(r"\S+(\s+)?,(\s+)?").expect("valid");
            if re.is_match(&c.host) {
                return Ok(Plan::Done(res.msg("Comma separated list of names is not supported. Please pass a single name to lookup in the known_hosts file.").failed_too()));
            }
        }
        let l = lookup(ctx, &c, key.as_deref()).await?;
        if key.is_some() && !l.key_names_host {
            return Ok(Plan::Done(
                res.msg("Host parameter does not match hashed host field in supplied key")
                    .failed_too(),
            ));
        }
        // Ansible's result describes the file too (`state` becomes its type).
        let st = read_for_edit(ctx, &c.path).await?;
        add_stat_keys(&mut res, &st);
        let (found, replace_or_add, found_line) = match search(&l, key.as_deref()) {
            Ok(s) => s,
            Err(msg) => return Ok(Plan::Done(res.msg(msg).failed_too())),
        };
        let present = c.state == State::Present;
        if !present && found_line.is_none() && key.is_some() {
            return Ok(Plan::Done(res));
        }
        if found && key.is_none() && !present {
            return Ok(Plan::change(
                res,
                KnownWork::RemoveAll {
                    host: c.host.clone(),
                    path: c.path.clone(),
                },
            ));
        }
        if !(replace_or_add || found != present) {
            return Ok(Plan::Done(res));
        }
        let before =
            String::from_utf8_lossy(st.content.as_deref().unwrap_or_default()).into_owned();
        let mut lines: Vec<&str> = before.split_inclusive('\n').collect();
        if let Some(n) = found_line.filter(|n| (1..=lines.len()).contains(n)) {
            if replace_or_add || !present {
                lines.remove(n - 1);
            }
        }
        let mut after: String = lines.concat();
        if present {
            after.push_str(key.as_deref().unwrap_or_default());
        }
        match plan_edit(
            ctx,
            EditFinish {
                path: &c.path,
                st: &st,
                new: after.into_bytes(),
                attrs: Attrs::default(),
                backup: false,
                validate: None,
                msg: "changed".into(),
            },
        )? {
            Plan::Done(r) => Ok(Plan::Done(ModuleResult {
                diffs: r.diffs,
                ..res
            })),
            Plan::Change { result, work } => Ok(Plan::change(
                ModuleResult {
                    diffs: result.diffs,
                    ..res
                },
                KnownWork::Edit(work),
            )),
        }
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: KnownWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let path = result
            .data
            .get("path")
            .and_then(|p| p.as_str())
            .unwrap_or_default()
            .to_string();
        let mut r = match work {
            KnownWork::Edit(w) => {
                let msg = result.msg.clone();
                let mut r = apply_edit(ctx, w, result).await?;
                r.msg = msg;
                r
            }
            KnownWork::RemoveAll { host, path } => {
                let out = ctx
                    .exec(
                        format!("ssh-keygen -R {} -f {}", shell_quote(&host), qpath(&path)),
                        None,
                    )
                    .await?;
                if out.rc != 0 {
                    return Err(remote_error(&format!("ssh-keygen -R {host} failed"), &out));
                }
                result
            }
        };
        let st = read_for_edit(ctx, &path).await?;
        add_stat_keys(&mut r, &st);
        Ok(r)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_names_and_lines() {
        let k = hash_host_key("example.org", "example.org ssh-ed25519 AAAA");
        assert!(
            k.starts_with("|1|") && k.ends_with(" ssh-ed25519 AAAA"),
            "{k}"
        );
        let n = normalize("@cert-authority *.x ssh-rsa BBB comment").unwrap();
        assert_eq!(n.options.as_deref(), Some("@cert-authority"));
        assert_eq!((n.host.as_str(), n.kind.as_str()), ("*.x", "ssh-rsa"));
        let l = Lookup {
            key_names_host: true,
            exists: true,
            out: "# Host h found: line 2 \nh ssh-ed25519 OLD\n".into(),
            rc: 0,
            err: String::new(),
        };
        assert_eq!(
            search(&l, Some("h ssh-ed25519 NEW\n")),
            Ok((true, true, Some(2)))
        );
        assert_eq!(
            search(&l, Some("h ssh-ed25519 OLD\n")),
            Ok((true, false, Some(2)))
        );
        assert_eq!(search(&l, Some("h ssh-rsa X\n")), Ok((true, true, None)));
    }
}
