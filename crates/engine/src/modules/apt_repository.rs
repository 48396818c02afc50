//! `apt_repository`: a one-line APT source (`deb …`/`deb-src …`) present in or absent
//! from `/etc/apt/sources.list` and `/etc/apt/sources.list.d/*.list`. The decisions are
//! ansible-core's, ported: every sources file is read and normalised line by line
//! (comments after `# `, words single-spaced); a present source is enabled where it is
//! (any file) or appended to its file (`filename`, else a name derived from the URL);
//! an absent one is removed from every file. `changed` compares the normalised files,
//! and a change rewrites each file whose text differs (temp file and rename), removes
//! emptied ones, then runs `apt-get update` when `update_cache` (retried as Ansible
//! retries, the files put back if it keeps failing). `ppa:` sources need Launchpad,
//! which kk does not query: they are refused with a clear error.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::args::{Flag, Int, Mode, Text};
use super::plan::{Plan, PlanApply};
use super::remote::{qpath, remote_error, write_file, Attrs, WriteOptions};
use super::{parse_args, FileDiff, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the source should be there.
    enum State for "state" { Absent = "absent", Present = "present" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
// install_python_apt, validate_certs and codename are accepted, not read: kk needs no
// python3-apt, fetches nothing, and refuses the PPAs the codename is for.
#[allow(dead_code)]
struct AptRepositoryArgs {
    #[serde(default)]
    repo: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default = "Flag::on", alias = "update-cache")]
    update_cache: Flag,
    #[serde(default)]
    update_cache_retries: Option<Int>,
    #[serde(default)]
    update_cache_retry_max_delay: Option<Int>,
    #[serde(default)]
    filename: Option<Text>,
    #[serde(default)]
    install_python_apt: Option<Flag>,
    #[serde(default)]
    validate_certs: Option<Flag>,
    #[serde(default)]
    codename: Option<Text>,
}

const VALID: &[&str] = &[
    "repo",
    "state",
    "mode",
    "update_cache",
    "update-cache",
    "update_cache_retries",
    "update_cache_retry_max_delay",
    "filename",
    "install_python_apt",
    "validate_certs",
    "codename",
];

const SOURCES_DIR: &str = "/etc/apt/sources.list.d";

/// The checked arguments.
struct Checked {
    repo: String,
    state: State,
    mode: Option<String>,
    update_cache: bool,
    retries: i64,
    max_delay: i64,
    filename: Option<String>,
}

fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let a: AptRepositoryArgs = parse_args("apt_repository", raw, VALID)?;
    let Some(repo) = a.repo.map(|r| r.0) else {
        return Ok(Err("missing required arguments: repo".into()));
    };
    if repo.starts_with("ppa:") {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("apt_repository: {:?}: kk does not add Launchpad PPAs (they need the Launchpad API and a key server)", repo),
        )
        .help("write the PPA's `deb https://ppa.launchpadcontent.net/OWNER/NAME/ubuntu CODENAME main` line, and add its key with apt_key or get_url"));
    }
    Ok(Ok(Checked {
        repo,
        state: a.state.unwrap_or(State::Present),
        mode: a.mode.map(|m| m.0),
        update_cache: a.update_cache.0,
        retries: a.update_cache_retries.map_or(5, |i| i.0),
        max_delay: a.update_cache_retry_max_delay.map_or(12, |i| i.0),
        filename: a.filename.map(|f| f.0),
    }))
}

/// One line of a sources file as the module holds it.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    valid: bool,
    enabled: bool,
    source: String,
    comment: String,
}

/// The module's `_parse` of one line.
fn parse_line(line: &str) -> Entry {
    let mut line = line.trim();
    let mut enabled = true;
    if let Some(rest) = line.strip_prefix('#') {
        enabled = false;
        line = rest;
    }
    let mut comment = String::new();
    if let Some(i) = line.find('#').filter(|i| *i > 0) {
        comment = line[i + 1..].trim().to_string();
        line = &line[..i];
    }
    let mut source = line.trim().to_string();
    let mut valid = false;
    let chunks: Vec<&str> = source.split_whitespace().collect();
    if chunks
        .first()
        .is_some_and(|c| *c == "deb" || *c == "deb-src")
    {
        valid = true;
        source = chunks.join(" ");
    }
    Entry {
        valid,
        enabled,
        source,
        comment,
    }
}

/// The source of a `repo` argument, or Ansible's "invalid" message.
fn parse_repo(repo: &str) -> std::result::Result<String, String> {
    let e = parse_line(repo);
    if !e.valid || !e.enabled {
        // The exception carries the line after its comment was cut, unstripped.
        let mut line = repo.trim();
        line = line.strip_prefix('#').unwrap_or(line);
        if let Some(i) = line.find('#').filter(|i| *i > 0) {
            line = &line[..i];
        }
        return Err(format!("Invalid repository string: {}", line));
    }
    Ok(e.source)
}

/// The module's `_suggest_filename`: the first word of the URL's host and path.
fn suggest_filename(source: &str, filename: Option<&str>) -> String {
    if let Some(f) = filename {
        return format!("{}.list", f);
    }
    let no_opts = regex::Regex::new(r"\[[^\]]+\]").expect("valid");
    let scheme = regex::Regex::new(r"\w+://").expect("valid");
    let line = no_opts.replace_all(source, "");
    let line = scheme.replace_all(&line, "");
    let first = line
        .split_whitespace()
        .find(|p| *p != "deb" && *p != "deb-src")
        .unwrap_or_default();
    let first = first.split_once('@').map_or(first, |(_, host)| host);
    let cleaned: String = first
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' })
        .collect();
    format!(
        "{}.list",
        cleaned.split_whitespace().collect::<Vec<_>>().join("_")
    )
}

/// The sources files, in the module's order (sources.list, then the directory's).
#[derive(Debug, Clone, Default)]
struct Sources {
    files: Vec<(String, Vec<Entry>)>,
}

impl Sources {
    fn entries(&mut self, file: &str) -> &mut Vec<Entry> {
        if let Some(i) = self.files.iter().position(|(f, _)| f == file) {
            return &mut self.files[i].1;
        }
        self.files.push((file.to_string(), Vec::new()));
        &mut self.files.last_mut().expect("pushed").1
    }

    /// The module's `dump`: each file with lines, normalised.
    fn dump(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .filter(|(_, e)| !e.is_empty())
            .map(|(f, entries)| {
                let text: String = entries
                    .iter()
                    .map(|e| {
                        let mut l = String::new();
                        if !e.enabled {
                            l.push_str("# ");
                        }
                        l.push_str(&e.source);
                        if !e.comment.is_empty() {
                            l.push_str(" # ");
                            l.push_str(&e.comment);
                        }
                        l.push('\n');
                        l
                    })
                    .collect();
                (f.clone(), text)
            })
            .collect()
    }

    /// `_add_valid_source`: enables the source wherever it is, else appends it to `file`;
    /// returns the file appended to.
    fn add(&mut self, source: &str, file: &str) -> Option<String> {
        let mut found = false;
        for (_, entries) in &mut self.files {
            for e in entries.iter_mut().filter(|e| e.valid && e.source == source) {
                e.enabled = true;
                found = true;
            }
        }
        if found {
            return None;
        }
        self.entries(file).push(Entry {
            valid: true,
            enabled: true,
            source: source.to_string(),
            comment: String::new(),
        });
        Some(file.to_string())
    }

    /// `_remove_valid_source`, with its quirk kept: the list is popped while Python
    /// iterates over it, so the line right after a removed one is not looked at.
    fn remove(&mut self, source: &str) {
        for (_, entries) in &mut self.files {
            let mut numbered: Vec<(usize, Entry)> = entries.drain(..).enumerate().collect();
            let mut i = 0;
            while i < numbered.len() {
                let (n, e) = &numbered[i];
                if e.valid && e.enabled && e.source == source {
                    let n = *n;
                    if n < numbered.len() {
                        numbered.remove(n);
                    }
                }
                i += 1;
            }
            *entries = numbered.into_iter().map(|(_, e)| e).collect();
        }
    }
}

/// A sources file read from the host.
#[derive(Debug, Clone)]
struct HostFile {
    path: String,
    /// Where a symlink points (the module writes there).
    target: Option<String>,
    text: String,
}

const READ_SCRIPT: &str = r#"for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  t=; [ -L "$f" ] && t=$(readlink -f -- "$f")
  printf '==kk-file==%s\t%s\n' "$f" "$t"
  cat -- "$f" || exit 1
  printf '\n==kk-end==\n'
done
"#;

fn parse_host(stdout: &str) -> Vec<HostFile> {
    let mut out = Vec::new();
    for chunk in stdout.split("==kk-file==").skip(1) {
        let Some((head, rest)) = chunk.split_once('\n') else {
            continue;
        };
        let (path, target) = head.split_once('\t').unwrap_or((head, ""));
        let text = rest
            .strip_suffix("\n==kk-end==\n")
            .unwrap_or(rest)
            .to_string();
        out.push(HostFile {
            path: path.to_string(),
            target: (!target.is_empty()).then(|| target.to_string()),
            text,
        });
    }
    out
}

/// Python's text-mode lines (universal newlines), each without its end.
fn py_lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.split_inclusive('\n').collect();
    if v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

/// What apply does.
pub struct AptRepoWork {
    /// Files to write: (path as written to, content, mode to set).
    writes: Vec<(String, String, Option<String>)>,
    /// Files to remove.
    removes: Vec<String>,
    /// The files as they were, to put back when the cache update fails: (path, old text
    /// or `None` for a file the change added).
    revert: Vec<(String, Option<String>)>,
    update_cache: Option<(i64, i64)>,
}

/// `ansible.builtin.apt_repository`.
pub struct AptRepository;

#[async_trait]
impl PlanApply for AptRepository {
    type Work = AptRepoWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<AptRepoWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        if c.repo.is_empty() {
            return Ok(Plan::Done(ModuleResult::failed(
                "Please set argument 'repo' to a non-empty value",
            )));
        }
        let source = match parse_repo(&c.repo) {
            Ok(s) => s,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let out = ctx.exec(READ_SCRIPT, None).await?;
        if out.rc != 0 {
            return Err(remote_error("cannot read the APT sources files", &out));
        }
        let host = parse_host(&String::from_utf8_lossy(&out.stdout));
        let mut sources = Sources::default();
        for f in &host {
            *sources.entries(&f.path) = py_lines(&f.text).into_iter().map(parse_line).collect();
        }
        let before = sources.dump();
        let mut new_file = None;
        match c.state {
            State::Present => {
                let name = suggest_filename(&source, c.filename.as_deref());
                let file = if name.contains('/') {
                    name
                } else {
                    format!("{}/{}", SOURCES_DIR, name)
                };
                new_file = sources.add(&source, &file);
            }
            State::Absent => sources.remove(&source),
        }
        let after = sources.dump();
        let changed = before != after;
        let added: BTreeSet<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
        let removed: BTreeSet<&String> =
            before.keys().filter(|k| !after.contains_key(*k)).collect();
        let mut diff = Vec::new();
        let mut diffs = Vec::new();
        if changed && ctx.diff {
            for f in added.iter().chain(removed.iter()) {
                let b = before.get(*f).cloned().unwrap_or_default();
                let a = after.get(*f).cloned().unwrap_or_default();
                let bh = if before.contains_key(*f) {
                    f.as_str()
                } else {
                    "/dev/null"
                };
                let ah = if after.contains_key(*f) {
                    f.as_str()
                } else {
                    "/dev/null"
                };
                diff.push(
                    json!({"before": b, "after": a, "before_header": bh, "after_header": ah}),
                );
                diffs.push(FileDiff {
                    before_header: bh.into(),
                    after_header: ah.into(),
                    before: b,
                    after: a,
                });
            }
        }
        let state = match c.state {
            State::Present => "present",
            State::Absent => "absent",
        };
        let mut res = ModuleResult::changed(changed)
            .with("repo", c.repo.clone())
            .with("sources_added", json!(added))
            .with("sources_removed", json!(removed))
            .with("state", state)
            .with("diff", Value::Array(diff));
        res.diffs = diffs;
        if !changed {
            return Ok(Plan::Done(res));
        }
        // The module saves every file; those whose text stays are left as they are.
        let mut writes = Vec::new();
        let mut removes = Vec::new();
        let mut revert = Vec::new();
        for (path, _) in &sources.files {
            let old = host.iter().find(|h| h.path == *path);
            let dest = old
                .and_then(|h| h.target.clone())
                .unwrap_or_else(|| path.clone());
            match after.get(path) {
                Some(text) => {
                    let mode = c.mode.clone().filter(|_| new_file.as_deref() == Some(path));
                    if old.is_some_and(|h| h.text == *text) && mode.is_none() {
                        continue;
                    }
                    revert.push((dest.clone(), old.map(|h| h.text.clone())));
                    writes.push((dest, text.clone(), mode));
                }
                None if old.is_some() => {
                    revert.push((dest.clone(), old.map(|h| h.text.clone())));
                    removes.push(path.clone());
                }
                None => {}
            }
        }
        Ok(Plan::change(
            res,
            AptRepoWork {
                writes,
                removes,
                revert,
                update_cache: c.update_cache.then_some((c.retries, c.max_delay)),
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: AptRepoWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        for (path, text, mode) in &w.writes {
            let opts = WriteOptions {
                attrs: Attrs {
                    mode: mode.clone(),
                    ..Attrs::default()
                },
                make_parents: true,
                ..WriteOptions::default()
            };
            write_file(ctx, path, text.clone().into_bytes(), &opts).await?;
        }
        if !w.removes.is_empty() {
            let files: Vec<String> = w.removes.iter().map(|f| qpath(f)).collect();
            let out = ctx
                .exec(format!("rm -f -- {}\n", files.join(" ")), None)
                .await?;
            if out.rc != 0 {
                return Err(remote_error("cannot remove an emptied sources file", &out));
            }
        }
        let Some((retries, max_delay)) = w.update_cache else {
            return Ok(result);
        };
        // Ansible's retry loop: 2**n seconds (plus up to 1 s at random), at most max_delay.
        let script = format!(
            "export LANG=C LC_ALL=C\nn=0\nwhile [ $n -lt {retries} ]; do\n  err=$(apt-get update -q 2>&1 >/dev/null) && exit 0\n  d=$((1 << n)); [ $d -gt {max_delay} ] && d={max_delay}\n  n=$((n + 1))\n  [ $n -lt {retries} ] && sleep $d\ndone\nprintf '%s' \"$err\"\nexit 1\n"
        );
        let out = ctx.exec(script, None).await?;
        if out.rc == 0 {
            return Ok(result);
        }
        // Put the files back as they were, as the module does.
        for (path, old) in &w.revert {
            match old {
                Some(text) => {
                    write_file(
                        ctx,
                        path,
                        text.clone().into_bytes(),
                        &WriteOptions::default(),
                    )
                    .await?;
                }
                None => {
                    ctx.exec(format!("rm -f -- {}\n", qpath(path)), None)
                        .await?;
                }
            }
        }
        let err = out.stdout_text();
        Ok(ModuleResult::failed(format!(
            "Failed to update apt cache after {} retries: {}",
            retries,
            if err.trim().is_empty() {
                "unknown reason".to_string()
            } else {
                err.trim().to_string()
            }
        )))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_names_as_the_module_makes_them() {
        let e = parse_line("  #deb   http://x/ y main   # note ");
        assert_eq!(
            (e.valid, e.enabled, e.source.as_str(), e.comment.as_str()),
            (true, false, "deb http://x/ y main", "note")
        );
        assert!(!parse_line("# just a comment").valid);
        assert_eq!(
            suggest_filename(
                "deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/debian bookworm stable",
                None
            ),
            "download_docker_com_linux_debian.list"
        );
        assert_eq!(
            suggest_filename("deb http://user:pw@host.example.org/a b c", None),
            "host_example_org_a.list"
        );
        assert_eq!(
            suggest_filename("deb http://x y", Some("mine")),
            "mine.list"
        );
        assert_eq!(
            parse_repo("foo bar # c").unwrap_err(),
            "Invalid repository string: foo bar "
        );
    }

    #[test]
    fn add_and_remove() {
        let mut s = Sources::default();
        *s.entries("/a") = [
            "deb http://x y main",
            "deb http://x y main",
            "# deb http://z y main",
        ]
        .iter()
        .map(|l| parse_line(l))
        .collect();
        assert_eq!(s.add("deb http://z y main", "/b"), None);
        assert_eq!(s.add("deb http://w y main", "/b").as_deref(), Some("/b"));
        s.remove("deb http://x y main");
        // The second copy was right after the first: Python's loop skipped it.
        assert_eq!(
            s.dump().get("/a").unwrap(),
            "deb http://x y main\ndeb http://z y main\n"
        );
        s.remove("deb http://w y main");
        assert!(!s.dump().contains_key("/b"));
    }
}
