//! `file`: a path's state (file, directory, link, hard link, touched, absent) and its
//! mode/owner/group/times. Planning reads the state in one round trip (and, with
//! `recurse`, whether anything below differs); applying runs a second script, only when
//! something may change, which acts and reports what really changed by comparing before
//! and after on the host.
//!
//! [`scripts`] holds the shell both round trips send, [`time`] the times.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{parse_with_file_attrs, Flag, Text};
use super::plan::{Plan, PlanApply};
use super::remote::{
    self, add_stat_keys, parent_dir, qpath, stat_script_mixed, stat_var_script, Attrs, FileKind,
    RemoteStat, StatOptions,
};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

mod scripts;

/// Round trip 1 of `file`, before it runs: the checked arguments and the script that
/// reads the path (as is and followed), the link source and, with `recurse`, whether
/// anything below differs.
struct Probe {
    a: Checked,
    /// The paths the script stats, and whether each is followed.
    items: Vec<(String, bool)>,
    /// `recurse` on a directory.
    recursive: bool,
    script: String,
}

fn probe(raw: VarMap) -> Result<Probe> {
    let a = parse(raw)?;
    let src_abs = a.src.as_ref().map(|s| {
        if s.starts_with('/') || s.starts_with('~') || a.explicit != Some(State::Link) {
            s.clone()
        } else {
            format!("{}/{}", parent_dir(&a.path), s)
        }
    });
    let mut items: Vec<(String, bool)> = vec![(a.path.clone(), false), (a.path.clone(), true)];
    if let Some(s) = src_abs {
        items.push((s, true));
    }
    let refs: Vec<(&str, bool)> = items.iter().map(|(p, f)| (p.as_str(), *f)).collect();
    let mut script = stat_script_mixed(
        &refs,
        StatOptions {
            follow: false,
            checksum: None,
            content: false,
            max_content: None,
        },
    );
    // `recurse` implies state=directory when no state is given.
    let recursive = a.recurse && matches!(a.explicit, None | Some(State::Directory));
    if recursive {
        script.push_str(&recurse_probe(&a.path, &a.attrs));
    }
    Ok(Probe {
        a,
        items,
        recursive,
        script,
    })
}

/// Marks each item's part of a batched probe's output: `<mark><index>` before it,
/// `<mark>rc <code>` after it.
const BATCH_MARK: &str = "==kk-file-item==";

/// Splits a batched probe's output into each item's stdout and exit code.
fn split_batch(stdout: &[u8]) -> std::collections::HashMap<usize, (Vec<u8>, Option<i32>)> {
    let mut parts = std::collections::HashMap::new();
    let mut cur: Option<(usize, Vec<u8>)> = None;
    for line in stdout.split_inclusive(|b| *b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if let Some(rest) = text.trim_end().strip_prefix(BATCH_MARK) {
            if let Some(rc) = rest.strip_prefix("rc ") {
                if let Some((i, out)) = cur.take() {
                    parts.insert(i, (out, rc.trim().parse().ok()));
                }
            } else if let Ok(i) = rest.parse() {
                cur = Some((i, Vec::new()));
            }
            continue;
        }
        if let Some((_, out)) = cur.as_mut() {
            out.extend_from_slice(line);
        }
    }
    parts
}

/// Decides from round trip 1's output what would change.
fn decide(
    ctx: &ModuleContext,
    p: Probe,
    out: &crate::connect::ExecOutput,
) -> Result<Plan<FileWork>> {
    let Probe {
        a,
        items,
        recursive,
        ..
    } = p;
    let path = a.path.clone();
    let attrs = a.attrs.clone();
    let explicit = a.explicit;
    if out.rc != 0 {
        return Err(remote::remote_error(&format!("cannot stat {}", path), out));
    }
    let sts = remote::parse_stats(
        &items.iter().map(|i| i.0.as_str()).collect::<Vec<_>>(),
        &out.stdout,
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    let recurse_differs = recursive && recurse_differs(&text, &attrs)?;
    let lst = &sts[0]; // the path itself
    let fst = if a.follow { &sts[1] } else { lst }; // what it points to, when following
    let src_st = sts.get(2);

    let prev = if !lst.exists {
        State::Absent
    } else if lst.kind == FileKind::Dir
        || (a.follow && lst.kind == FileKind::Link && fst.kind == FileKind::Dir)
    {
        State::Directory
    } else if lst.kind == FileKind::Link && !(a.follow && fst.exists) {
        State::Link
    } else if lst.kind != FileKind::Link && lst.nlink > 1 {
        State::Hard
    } else {
        State::File
    };
    let state = match explicit {
        Some(s) => s,
        None if a.recurse => State::Directory,
        None if prev == State::Absent => State::File,
        None if prev == State::Hard => State::File,
        None => prev,
    };
    let mtime = parse_time(
        &a.modification_time,
        &a.modification_time_format,
        if state == State::Touch {
            Time::Now
        } else {
            Time::Preserve
        },
        "modification_time",
    )?;
    let atime = parse_time(
        &a.access_time,
        &a.access_time_format,
        if state == State::Touch {
            Time::Now
        } else {
            Time::Preserve
        },
        "access_time",
    )?;
    let times_given = mtime != Time::Preserve || atime != Time::Preserve;
    // Setting a time to `now` is a change (as Ansible's `update_timestamp_for_file`).
    let times_now = mtime == Time::Now || atime == Time::Now;

    // Decide: `force_changed` for creations/removals, `maybe` for attribute work whose
    // effect the act script measures.
    let mut force_changed = false;
    let mut maybe = false;
    let mut act = String::new();
    // Time changes, run after `act` is measured (see round trip 2).
    let mut times = String::new();
    let target_st: &RemoteStat = match state {
        State::Link | State::Absent => lst,
        _ => fst,
    };
    match state {
        State::Absent => {
            if lst.exists {
                force_changed = true;
                act.push_str("rm -rf -- \"$p\" || exit 79\n");
            }
        }
        State::File => {
            if !fst.exists {
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!("file ({}) is absent, cannot continue", path),
                )
                .help(
                    "use `state: touch` to create an empty file, or `copy`/`template` to write one",
                )
                .at_opt(ctx.span.as_ref()));
            }
            if fst.kind == FileKind::Dir {
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!("file ({}) is directory, cannot continue", path),
                )
                .help("use `state: directory` for directories")
                .at_opt(ctx.span.as_ref()));
            }
            maybe = attrs.differ(fst)? || times_given;
            force_changed = times_now;
            act.push_str(&attrs.script("p", false));
            times.push_str(&time_script(&mtime, &atime));
        }
        State::Directory => {
            if fst.exists && fst.kind != FileKind::Dir {
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!("{} already exists as a {}", path, fst.kind.state_name()),
                )
                .help("remove it first (`state: absent`) or choose another path")
                .at_opt(ctx.span.as_ref()));
            }
            if !fst.exists {
                force_changed = true;
                act.push_str("for d in");
                for anc in ancestors(&path) {
                    act.push(' ');
                    act.push_str(&qpath(&anc));
                }
                act.push_str(
                    "; do\n  if [ ! -d \"$d\" ]; then\n    kk_err=$(mkdir -- \"$d\" 2>&1) || [ -d \"$d\" ] || { echo \"$kk_err\" >&2; exit 70; }\n",
                );
                act.push_str(&indent(&attrs.script("d", false), "    "));
                act.push_str("  fi\ndone\n");
            } else {
                maybe = attrs.differ(fst)? || times_given || recurse_differs;
                force_changed = times_now;
            }
            act.push_str(&attrs.script("p", a.recurse));
            times.push_str(&time_script(&mtime, &atime));
        }
        State::Touch => {
            if !fst.exists {
                force_changed = true;
                act.push_str("touch -- \"$p\" || exit 78\n");
            } else {
                maybe = attrs.differ(fst)?;
                force_changed = times_given;
            }
            act.push_str(&attrs.script("p", false));
            times.push_str(&time_script(&mtime, &atime));
        }
        State::Link | State::Hard => {
            let src = match (&a.src, state, lst.kind) {
                (Some(s), _, _) => s.clone(),
                (None, State::Link, FileKind::Link) => lst.link_target.clone().unwrap_or_default(),
                (None, _, _) => {
                    return Err(Error::new(
                        ErrorKind::ModuleArgs,
                        format!("file: `src` is required for state={}", state.name()),
                    )
                    .help("`src` is the path the link points to"))
                }
            };
            let src_exists = src_st.is_none_or(|s| s.exists);
            let same = if state == State::Link {
                lst.kind == FileKind::Link && lst.link_target.as_deref() == Some(src.as_str())
            } else {
                let s = src_st
                    .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "file: `src` is required"))?;
                lst.exists && s.exists && lst.inode == s.inode && lst.dev == s.dev
            };
            if !src_exists && (state == State::Hard || !a.force) {
                if state == State::Hard {
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        format!("src {} does not exist", src),
                    )
                    .at_opt(ctx.span.as_ref()));
                }
                if !same {
                    // In check mode too, as ansible-core (its words).
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        format!("src file does not exist, use 'force=yes' if you really want to create the link: {}", src),
                    )
                    .at_opt(ctx.span.as_ref()));
                }
            }
            if !same {
                force_changed = true;
                match lst.kind {
                    FileKind::Missing | FileKind::Link => {}
                    FileKind::Dir if state == State::Link => {
                        if !a.force {
                            return Err(refuse(&path, "directory", state));
                        }
                        act.push_str(&format!(
                            "rmdir -- \"$p\" || {{ echo 'the directory {} is not empty, refusing to convert it' >&2; exit 79; }}\n",
                            path.replace('\'', "")
                        ));
                    }
                    FileKind::Dir => return Err(refuse(&path, "directory", state)),
                    _ if !a.force => {
                        return Err(refuse(&path, "file", state));
                    }
                    _ => {}
                }
                if state == State::Link {
                    act.push_str(&format!(
                        "ln -sfn -- {} \"$p\" || exit 80\n",
                        shell_quote(&src)
                    ));
                } else {
                    act.push_str(&format!("ln -f -- {} \"$p\" || exit 80\n", qpath(&src)));
                }
            } else {
                maybe = link_attrs_differ(&attrs, lst, state)?;
            }
            act.push_str(&link_attrs_script(&attrs, state));
        }
    }

    let mut res = ModuleResult::default();
    let before_state = if lst.exists { prev.name() } else { "absent" };
    let after_state = state_after(state);
    res.data.insert("path".into(), path.clone().into());
    add_stat_keys(&mut res, target_st);
    res.data.insert("state".into(), after_state.into());
    if !force_changed && !maybe {
        add_link_src(&mut res, lst, state);
        return Ok(Plan::Done(res));
    }
    if ctx.diff {
        res.diffs.push(state_diff(&path, before_state, after_state));
    }
    let mut s = format!("p={}\n", qpath(&path));
    s.push_str(&act_script(
        &act,
        &times,
        recursive && state == State::Directory,
        !matches!(state, State::Link | State::Absent),
    ));
    let follow_after = a.follow && !matches!(state, State::Link | State::Absent);
    s.push_str(&stat_var_script("p", follow_after));
    let work = FileWork {
        path,
        script: s,
        state,
        force_changed,
        before_state,
    };
    Ok(Plan::change(res, work))
}

#[cfg(test)]
mod tests;
mod time;

use scripts::{
    act_script, add_link_src, ancestors, indent, link_attrs_differ, link_attrs_script,
    recurse_differs, recurse_probe, refuse, state_after, state_diff,
};
use time::{parse_time, time_script, Time};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileArgs {
    #[serde(default, alias = "dest", alias = "name")]
    path: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    src: Option<Text>,
    #[serde(default)]
    recurse: Flag,
    #[serde(default)]
    force: Flag,
    #[serde(default = "Flag::on")]
    follow: Flag,
    #[serde(default)]
    modification_time: Option<Text>,
    #[serde(default)]
    modification_time_format: Option<Text>,
    #[serde(default)]
    access_time: Option<Text>,
    #[serde(default)]
    access_time_format: Option<Text>,
    // Accepted for compatibility; it does not change what we do.
    #[serde(default, rename = "_diff_peek")]
    diff_peek: Option<serde_json::Value>,
}

const VALID: &[&str] = &[
    "path",
    "dest",
    "name",
    "state",
    "src",
    "recurse",
    "force",
    "follow",
    "modification_time",
    "modification_time_format",
    "access_time",
    "access_time_format",
];

crate::closed_set! {
    /// The states `file` knows.
    enum State for "state" {
        File = "file",
        Directory = "directory",
        Link = "link",
        Hard = "hard",
        Touch = "touch",
        Absent = "absent",
    }
}

impl State {
    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// Checked arguments.
struct Checked {
    /// The path, without a trailing `/`.
    path: String,
    /// `state` as given.
    explicit: Option<State>,
    attrs: Attrs,
    src: Option<String>,
    recurse: bool,
    force: bool,
    follow: bool,
    modification_time: Option<String>,
    modification_time_format: Option<String>,
    access_time: Option<String>,
    access_time_format: Option<String>,
}

/// Parses and checks the arguments without touching a host (also at load time).
fn parse(raw: VarMap) -> Result<Checked> {
    let (a, fa): (FileArgs, _) = parse_with_file_attrs("file", raw, VALID)?;
    let _ = &a.diff_peek;
    let path = a
        .path
        .map(|p| p.0)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "file: `path` is required"))?;
    let path = if path.len() > 1 {
        path.trim_end_matches('/').to_string()
    } else {
        path
    };
    let text = |t: Option<Text>| t.map(|t| t.0);
    let a = Checked {
        path,
        explicit: a.state,
        attrs: Attrs::from(&fa),
        src: text(a.src),
        recurse: a.recurse.0,
        force: a.force.0,
        follow: a.follow.0,
        modification_time: text(a.modification_time),
        modification_time_format: text(a.modification_time_format),
        access_time: text(a.access_time),
        access_time_format: text(a.access_time_format),
    };
    a.attrs.check("file")?;
    // The times' spelling is known now; which default applies waits for the state.
    parse_time(
        &a.modification_time,
        &a.modification_time_format,
        Time::Preserve,
        "modification_time",
    )?;
    parse_time(
        &a.access_time,
        &a.access_time_format,
        Time::Preserve,
        "access_time",
    )?;
    Ok(a)
}

/// What applying `file` does: round trip 2.
pub struct FileWork {
    path: String,
    /// The act, measured, then the final stat.
    script: String,
    state: State,
    /// A creation or removal: changed whatever the measure says.
    force_changed: bool,
    before_state: &'static str,
}

/// Manages a path's state and attributes.
pub struct File;

#[async_trait]
impl PlanApply for File {
    type Work = FileWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<FileWork>> {
        let p = probe(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let out = ctx.exec(p.script.clone(), None).await?;
        decide(ctx, p, &out)
    }

    fn batches(&self) -> bool {
        true
    }

    fn batchable(&self, args: &VarMap) -> bool {
        parse(args.clone()).is_ok()
    }

    /// The probes of all the items in one round trip: each runs in its own subshell, its
    /// output and exit code framed by markers no stat output contains.
    async fn plan_batch(
        &self,
        ctx: &ModuleContext,
        items: Vec<VarMap>,
    ) -> Result<Vec<Result<Plan<FileWork>>>> {
        let probes: Vec<Result<Probe>> = items
            .into_iter()
            .map(|raw| probe(raw).map_err(|e| e.at_opt(ctx.span.as_ref())))
            .collect();
        let mut script = String::new();
        for (i, p) in probes.iter().enumerate() {
            if let Ok(p) = p {
                script.push_str(&format!(
                    "echo '{BATCH_MARK}{i}'\n(\n{}\n)\necho \"{BATCH_MARK}rc $?\"\n",
                    p.script
                ));
            }
        }
        let out = ctx.exec(script, None).await?;
        let mut parts = split_batch(&out.stdout);
        Ok(probes
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let p = p?;
                let (stdout, rc) = parts.remove(&i).unwrap_or_default();
                let one = crate::connect::ExecOutput {
                    rc: rc.unwrap_or(out.rc),
                    stdout,
                    stderr: out.stderr.clone(),
                };
                decide(ctx, p, &one)
            })
            .collect())
    }
    /// Round trip 2: act, measure, report the final state.
    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: FileWork,
        _planned: ModuleResult,
    ) -> Result<ModuleResult> {
        let (path, state) = (&work.path, work.state);
        let out = ctx.exec(work.script, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(
                &format!("cannot bring {} to state {}", path, state.name()),
                &out,
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let attr_changed = text.lines().any(|l| l == "attr_changed=1");
        let fin = remote::parse_stats(&[path], &out.stdout)?.remove(0);
        let after_state = state_after(state);
        let mut res = ModuleResult::changed(work.force_changed || attr_changed);
        res.data.insert("path".into(), path.clone().into());
        add_stat_keys(&mut res, &fin);
        res.data.insert("state".into(), after_state.into());
        add_link_src(&mut res, &fin, state);
        if ctx.diff && res.changed {
            res.diffs
                .push(state_diff(path, work.before_state, after_state));
        }
        Ok(res)
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        parse(raw.clone()).map(|_| ())
    }
}
