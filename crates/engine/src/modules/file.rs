//! `file`: a path's state (file, directory, link, hard link, touched, absent) and its
//! mode/owner/group/times. One round trip reads the state (and, with `recurse`, whether
//! anything below differs); a second script, only when something may change, acts and
//! reports what really changed by comparing before and after on the host.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::remote::{
    self, add_stat_keys, apply_mode, parent_dir, qpath, stat_script_mixed, stat_var_script, Attrs,
    FileKind, RemoteStat, StatOptions,
};
use super::{args, parse_args, FileDiff, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileArgs {
    #[serde(
        default,
        alias = "dest",
        alias = "name",
        deserialize_with = "args::opt_string_like"
    )]
    path: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    state: Option<String>,
    #[serde(default, deserialize_with = "args::opt_mode")]
    mode: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    owner: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    group: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    src: Option<String>,
    #[serde(default, deserialize_with = "args::bool_like")]
    recurse: bool,
    #[serde(default, deserialize_with = "args::bool_like")]
    force: bool,
    #[serde(default = "args::yes", deserialize_with = "args::bool_like")]
    follow: bool,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    modification_time: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    modification_time_format: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    access_time: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    access_time_format: Option<String>,
    // Accepted for compatibility; they do not change what we do.
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    unsafe_writes: Option<bool>,
    #[serde(default, rename = "_diff_peek")]
    diff_peek: Option<serde_json::Value>,
}

const VALID: &[&str] = &[
    "path",
    "dest",
    "name",
    "state",
    "mode",
    "owner",
    "group",
    "src",
    "recurse",
    "force",
    "follow",
    "modification_time",
    "modification_time_format",
    "access_time",
    "access_time_format",
    "unsafe_writes",
];

/// The states `file` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    File,
    Directory,
    Link,
    Hard,
    Touch,
    Absent,
}

impl State {
    fn parse(s: &str) -> Result<State> {
        Ok(match s {
            "file" => State::File,
            "directory" => State::Directory,
            "link" => State::Link,
            "hard" => State::Hard,
            "touch" => State::Touch,
            "absent" => State::Absent,
            other => {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!("file: unknown state {:?}", other),
                )
                .help("state must be one of: file, directory, link, hard, touch, absent"))
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            State::File => "file",
            State::Directory => "directory",
            State::Link => "link",
            State::Hard => "hard",
            State::Touch => "touch",
            State::Absent => "absent",
        }
    }
}

/// A requested time: keep it, set it to now, or set it to a `touch -t` stamp.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Time {
    Preserve,
    Now,
    At(String),
}

fn parse_time(
    v: &Option<String>,
    format: &Option<String>,
    default: Time,
    what: &str,
) -> Result<Time> {
    let Some(v) = v else { return Ok(default) };
    match v.as_str() {
        "preserve" => Ok(Time::Preserve),
        "now" => Ok(Time::Now),
        stamp => {
            let fmt = format.as_deref().unwrap_or("%Y%m%d%H%M.%S");
            if fmt != "%Y%m%d%H%M.%S" {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!("file: {}_format {:?} is not supported", what, fmt),
                )
                .help("use the default format %Y%m%d%H%M.%S, e.g. 202401311530.00"));
            }
            let ok = stamp.len() == 15
                && stamp.as_bytes()[12] == b'.'
                && stamp
                    .chars()
                    .enumerate()
                    .all(|(i, c)| i == 12 || c.is_ascii_digit());
            if !ok {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!("file: {} {:?} is not a time", what, stamp),
                )
                .help(
                    "give `now`, `preserve` or a time as YYYYMMDDHHMM.SS, e.g. 202401311530.00",
                ));
            }
            Ok(Time::At(stamp.to_string()))
        }
    }
}

/// Shell lines setting times on `"$p"` (`-c`: never create).
fn time_script(mtime: &Time, atime: &Time) -> String {
    let mut s = String::new();
    for (flag, t) in [("-m", mtime), ("-a", atime)] {
        match t {
            Time::Preserve => {}
            Time::Now => s.push_str(&format!("touch -c {} -- \"$p\" || exit 78\n", flag)),
            Time::At(stamp) => s.push_str(&format!(
                "touch -c {} -t {} -- \"$p\" || exit 78\n",
                flag, stamp
            )),
        }
    }
    s
}

/// Every prefix of a path that names a directory (`a/b/c` → `a`, `a/b`, `a/b/c`).
fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let abs = path.starts_with('/');
    let mut cur = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if cur.is_empty() {
            cur = if abs {
                format!("/{}", part)
            } else {
                part.to_string()
            };
        } else {
            cur = format!("{}/{}", cur, part);
        }
        out.push(cur.clone());
    }
    out
}

/// Manages a path's state and attributes.
pub struct File;

#[async_trait]
impl Module for File {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: FileArgs = parse_args("file", raw, VALID)?;
        let _ = (a.unsafe_writes, &a.diff_peek);
        let path = a.path.clone().filter(|p| !p.is_empty()).ok_or_else(|| {
            Error::new(ErrorKind::ModuleArgs, "file: `path` is required").at_opt(ctx.span.as_ref())
        })?;
        let path = if path.len() > 1 {
            path.trim_end_matches('/').to_string()
        } else {
            path
        };
        let attrs = Attrs {
            mode: a.mode.clone(),
            owner: a.owner.clone(),
            group: a.group.clone(),
        };
        let explicit = a.state.as_deref().map(State::parse).transpose()?;

        // Round trip 1: the path (as is and followed), the link source, recursive differences.
        let src_abs = a.src.as_ref().map(|s| {
            if s.starts_with('/') || s.starts_with('~') || explicit != Some(State::Link) {
                s.clone()
            } else {
                format!("{}/{}", parent_dir(&path), s)
            }
        });
        let mut items: Vec<(&str, bool)> = vec![(&path, false), (&path, true)];
        if let Some(s) = &src_abs {
            items.push((s, true));
        }
        let mut script = stat_script_mixed(
            &items,
            StatOptions {
                follow: false,
                checksum: None,
                content: false,
                max_content: None,
            },
        );
        // `recurse` implies state=directory when no state is given.
        let recursive = a.recurse && matches!(explicit, None | Some(State::Directory));
        if recursive {
            script.push_str(&recurse_probe(&path, &attrs));
        }
        let out = ctx.exec(script, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(&format!("cannot stat {}", path), &out));
        }
        let sts = remote::parse_stats(&items.iter().map(|i| i.0).collect::<Vec<_>>(), &out.stdout)?;
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
                    return Err(Error::new(ErrorKind::Runtime, format!("file ({}) is absent, cannot continue", path))
                        .help("use `state: touch` to create an empty file, or `copy`/`template` to write one")
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
                    (None, State::Link, FileKind::Link) => {
                        lst.link_target.clone().unwrap_or_default()
                    }
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
                    let s = src_st.ok_or_else(|| {
                        Error::new(ErrorKind::ModuleArgs, "file: `src` is required")
                    })?;
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
                    if !same && !ctx.check_mode {
                        return Err(Error::new(
                            ErrorKind::Runtime,
                            format!("src file does not exist, use \"force=yes\" if you really want to create the link: {}", src),
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
        if !force_changed && !maybe {
            res.data.insert("path".into(), path.clone().into());
            add_stat_keys(&mut res, target_st);
            res.data.insert("state".into(), after_state.into());
            add_link_src(&mut res, lst, state);
            return Ok(res);
        }
        if ctx.check_mode {
            res.changed = true;
            res.data.insert("path".into(), path.clone().into());
            add_stat_keys(&mut res, target_st);
            res.data.insert("state".into(), after_state.into());
            if ctx.diff {
                res.diffs.push(state_diff(&path, before_state, after_state));
            }
            return Ok(res);
        }

        // Round trip 2: act, measure, report the final state.
        let mut s = format!("p={}\n", qpath(&path));
        s.push_str(&act_script(
            &act,
            &times,
            recursive && state == State::Directory,
            !matches!(state, State::Link | State::Absent),
        ));
        let follow_after = a.follow && !matches!(state, State::Link | State::Absent);
        s.push_str(&stat_var_script("p", follow_after));
        let out = ctx.exec(s, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(
                &format!("cannot bring {} to state {}", path, state.name()),
                &out,
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let attr_changed = text.lines().any(|l| l == "attr_changed=1");
        let fin = remote::parse_stats(&[&path], &out.stdout)?.remove(0);
        res.changed = force_changed || attr_changed;
        res.data.insert("path".into(), path.clone().into());
        add_stat_keys(&mut res, &fin);
        res.data.insert("state".into(), after_state.into());
        add_link_src(&mut res, &fin, state);
        if ctx.diff && res.changed {
            res.diffs.push(state_diff(&path, before_state, after_state));
        }
        Ok(res)
    }
}

fn indent(s: &str, pad: &str) -> String {
    s.lines().map(|l| format!("{}{}\n", pad, l)).collect()
}

fn refuse(path: &str, what: &str, state: State) -> Error {
    Error::new(
        ErrorKind::Runtime,
        format!(
            "refusing to convert from {} to {} for {}",
            what,
            if state == State::Link {
                "symlink"
            } else {
                "hard link"
            },
            path
        ),
    )
    .help("set `force: true` to replace it")
}

/// Ansible reports `touch` as `file` afterwards and `hard` as `hard`.
fn state_after(state: State) -> &'static str {
    match state {
        State::Touch => "file",
        s => s.name(),
    }
}

fn add_link_src(res: &mut ModuleResult, st: &RemoteStat, state: State) {
    if state == State::Link {
        if let Some(t) = &st.link_target {
            res.data.insert("src".into(), t.clone().into());
        }
    }
}

/// For links only owner and group can be set (with `-h`: on the link itself).
fn link_attrs_script(attrs: &Attrs, state: State) -> String {
    if state == State::Hard {
        return attrs.script("p", false);
    }
    let mut s = String::new();
    if let Some(o) = &attrs.owner {
        s.push_str(&format!("chown -h {} \"$p\" || exit 73\n", shell_quote(o)));
    }
    if let Some(g) = &attrs.group {
        s.push_str(&format!("chgrp -h {} \"$p\" || exit 74\n", shell_quote(g)));
    }
    s
}

fn link_attrs_differ(attrs: &Attrs, st: &RemoteStat, state: State) -> Result<bool> {
    if state == State::Hard {
        return attrs.differ(st);
    }
    Ok(attrs.owner.as_deref().is_some_and(|o| !st.owner_is(o))
        || attrs.group.as_deref().is_some_and(|g| !st.group_is(g)))
}

/// The acting part of round trip 2 (after `p=<path>`): `act`, then `times`, each
/// measured by a before/after signature on the host; prints `attr_changed=1` when a
/// signature moved.
///
/// The attribute signature covers only what `act` sets: mode, owner, group, type (and
/// for one path its inode and link target) — never access/change/modification times,
/// which reading the tree (`find` updates directories' atime) or `chmod` (ctime) move on
/// their own. With `follow_target` it reads what the path points to, which is what
/// `chmod`/`chown` without `-h` change. Times are set and measured only after the
/// attribute signature, so its `find` cannot bump an access time just set.
fn act_script(act: &str, times: &str, recursive: bool, follow_target: bool) -> String {
    let mut s = String::new();
    if recursive {
        // `-H`: like `chmod -R`, go through the path itself when it is a link.
        s.push_str(
            "kk_sig() { find -H \"$p\" -exec stat -c '%a %u %g %F %n' {} + 2>/dev/null | cksum; }\n",
        );
    } else {
        s.push_str(&format!(
            "kk_sig() {{ stat {}-c '%a %u %g %F %i' -- \"$p\" 2>/dev/null; [ -L \"$p\" ] && readlink -- \"$p\"; }}\n",
            if follow_target { "-L " } else { "" }
        ));
    }
    let measured = |s: &mut String, sig: &str, body: &str| {
        s.push_str(&format!("kk_before=$({sig})\n"));
        s.push_str(body);
        s.push_str(&format!(
            "kk_after=$({sig})\nif [ \"$kk_before\" != \"$kk_after\" ]; then echo attr_changed=1; fi\n"
        ));
    };
    measured(&mut s, "kk_sig", act);
    if !times.is_empty() {
        s.push_str("kk_tsig() { stat -L -c '%Y %X' -- \"$p\" 2>/dev/null; }\n");
        measured(&mut s, "kk_tsig", times);
    }
    s
}

/// Script lines reporting, for a recursive `state: directory`, what under `path` may
/// differ from the wanted attributes: `recurse_change=1` when something has another
/// owner or group (links included: `chown -R` changes links themselves), and one
/// `kk_recmode=<raw mode in hex>` line per distinct mode of what is not a link (whose
/// mode `chmod -R` leaves alone), for [`recurse_differs`] to apply the mode to — octal
/// and symbolic alike, so check mode sees what a run would change.
fn recurse_probe(path: &str, attrs: &Attrs) -> String {
    let p = qpath(path);
    let mut s = String::new();
    let mut tests = Vec::new();
    if let Some(o) = &attrs.owner {
        tests.push(format!("! -user {}", shell_quote(o)));
    }
    if let Some(g) = &attrs.group {
        tests.push(format!("! -group {}", shell_quote(g)));
    }
    if !tests.is_empty() {
        // An unknown user or group makes find complain: counted as a difference, so the
        // act script runs and fails with chown's own message.
        s.push_str(&format!(
            "  r=$(find -H {p} \\( {t} \\) -print -quit 2>&1); if [ -n \"$r\" ]; then echo recurse_change=1; fi\n",
            t = tests.join(" -o ")
        ));
    }
    if attrs.mode.is_some() {
        s.push_str(&format!(
            "  find -H {p} ! -type l -exec stat -c 'kk_recmode=%f' {{}} + 2>/dev/null | sort -u\n"
        ));
    }
    if s.is_empty() {
        return s;
    }
    format!("if [ -d {p} ]; then\n{s}fi\n")
}

/// Whether the output of [`recurse_probe`] shows anything that applying `attrs`
/// recursively would change.
fn recurse_differs(text: &str, attrs: &Attrs) -> Result<bool> {
    if text.lines().any(|l| l == "recurse_change=1") {
        return Ok(true);
    }
    let Some(m) = &attrs.mode else {
        return Ok(false);
    };
    for line in text.lines() {
        let Some(raw) = line.strip_prefix("kk_recmode=") else {
            continue;
        };
        let Ok(raw) = u32::from_str_radix(raw.trim(), 16) else {
            return Ok(true); // unreadable: let the host act and measure
        };
        let cur = raw & 0o7777;
        if apply_mode(cur, m, raw & 0o170000 == 0o040000)? != cur {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A before/after of the path's state, for `--diff`.
fn state_diff(path: &str, before: &str, after: &str) -> FileDiff {
    let show = |state: &str| {
        serde_json::to_string_pretty(&json!({"path": path, "state": state})).unwrap_or_default()
            + "\n"
    };
    FileDiff {
        before_header: path.to_string(),
        after_header: path.to_string(),
        before: show(before),
        after: show(after),
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx, mode_of};
    use super::*;
    use serde_json::json;

    #[test]
    fn ancestors_of_paths() {
        assert_eq!(ancestors("/a/b"), vec!["/a", "/a/b"]);
        assert_eq!(ancestors("a/b"), vec!["a", "a/b"]);
    }

    #[tokio::test]
    async fn directory_touch_absent() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(dir.path(), json!({}));
        let d = dir.path().join("x/y/z");
        let ds = d.to_str().unwrap();
        c.check_mode = true;
        c.diff = true;
        let r = File
            .run(
                &c,
                args(json!({"path": ds, "state": "directory", "mode": "0750"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert!(r.diffs[0].before.contains("absent") && r.diffs[0].after.contains("directory"));
        assert!(!d.exists());
        c.check_mode = false;
        let r = File
            .run(
                &c,
                args(json!({"path": ds, "state": "directory", "mode": "0750"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(mode_of(&d), 0o750);
        assert_eq!(mode_of(&dir.path().join("x")), 0o750);
        assert_eq!(r.data["mode"], json!("0750"));
        let r = File
            .run(
                &c,
                args(json!({"path": ds, "state": "directory", "mode": "0750"})),
            )
            .await
            .unwrap();
        assert!(!r.changed);
        let r = File
            .run(
                &c,
                args(json!({"path": ds, "state": "directory", "mode": "u=rwx,g=rx,o=rx"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(mode_of(&d), 0o755);
        // Recursive mode: detects files below with another mode.
        let f = d.join("f");
        std::fs::write(&f, "").unwrap();
        let top = dir.path().join("x");
        let r = File
            .run(&c, args(json!({"path": top.to_str().unwrap(), "state": "directory", "mode": "0700", "recurse": true})))
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(mode_of(&f), 0o700);
        let r = File
            .run(&c, args(json!({"path": top.to_str().unwrap(), "state": "directory", "mode": "0700", "recurse": true})))
            .await
            .unwrap();
        assert!(!r.changed);
        // touch: always changed; preserve/preserve on an existing file is not.
        let t = dir.path().join("t");
        let ts = t.to_str().unwrap();
        assert!(
            File.run(&c, args(json!({"path": ts, "state": "touch", "mode": 384})))
                .await
                .unwrap()
                .changed
        );
        assert_eq!(mode_of(&t), 0o600);
        assert!(
            File.run(&c, args(json!({"path": ts, "state": "touch"})))
                .await
                .unwrap()
                .changed
        );
        let r = File
            .run(
                &c,
                args(json!({"path": ts, "state": "touch", "modification_time": "preserve", "access_time": "preserve"})),
            )
            .await
            .unwrap();
        assert!(!r.changed);
        let r = File
            .run(
                &c,
                args(json!({"path": ts, "state": "file", "modification_time": "202001020304.05"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        let r = File
            .run(
                &c,
                args(json!({"path": ts, "state": "file", "modification_time": "202001020304.05"})),
            )
            .await
            .unwrap();
        assert!(!r.changed, "same time again changes nothing");
        // absent
        assert!(
            File.run(
                &c,
                args(json!({"path": top.to_str().unwrap(), "state": "absent"}))
            )
            .await
            .unwrap()
            .changed
        );
        assert!(!top.exists());
        assert!(
            !File
                .run(
                    &c,
                    args(json!({"path": top.to_str().unwrap(), "state": "absent"}))
                )
                .await
                .unwrap()
                .changed
        );
    }

    #[test]
    fn recurse_probe_output_is_judged_by_the_mode() {
        let sym = Attrs {
            mode: Some("u=rwX,g=rX,o=".into()),
            ..Default::default()
        };
        // 0750 directory and 0640 file: nothing to do; a 0644 file: o loses r.
        let ok = "kk_recmode=41e8\nkk_recmode=81a0\n";
        assert!(!recurse_differs(ok, &sym).unwrap());
        assert!(recurse_differs("kk_recmode=41e8\nkk_recmode=81a4\n", &sym).unwrap());
        // X: a directory gets x, a file without any x does not.
        assert!(recurse_differs("kk_recmode=41a0\n", &sym).unwrap());
        let oct = Attrs {
            mode: Some("0750".into()),
            ..Default::default()
        };
        assert!(!recurse_differs("kk_recmode=41e8\nkk_recmode=81e8\n", &oct).unwrap());
        assert!(recurse_differs("kk_recmode=81a0\n", &oct).unwrap());
        // Owner/group differences come as a flag; without a mode, mode lines are ignored.
        let own = Attrs {
            owner: Some("root".into()),
            ..Default::default()
        };
        assert!(!recurse_differs("kk_recmode=81ff\n", &own).unwrap());
        assert!(recurse_differs("recurse_change=1\n", &own).unwrap());
    }

    /// Regression: a recursive `file` reported `changed` when only access times below
    /// had moved (its own `find` moves them), and check mode always reported `changed`
    /// for a symbolic mode or a tree holding a symlink.
    #[tokio::test]
    async fn recurse_reports_changed_only_when_something_changed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let top = dir.path().join("r");
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::write(top.join("a/b/f"), "").unwrap();
        std::os::unix::fs::symlink("f", top.join("a/b/l")).unwrap();
        let ts = top.to_str().unwrap();
        let old_atimes = format!("touch -a -d '2 days ago' {ts} {ts}/a {ts}/a/b");
        for mode in ["u=rwX,g=rX,o=", "0750"] {
            let a = json!({"path": ts, "recurse": true, "mode": mode});
            let run = |check: bool| {
                let mut c2 = ctx(dir.path(), json!({}));
                c2.check_mode = check;
                let a = a.clone();
                async move { File.run(&c2, args(a)).await.unwrap().changed }
            };
            std::fs::set_permissions(top.join("a/b/f"), std::fs::Permissions::from_mode(0o644))
                .unwrap();
            assert!(run(true).await, "{mode}: check sees the file below");
            assert_eq!(mode_of(&top.join("a/b/f")), 0o644, "check changes nothing");
            assert!(run(false).await, "{mode}");
            let want = if mode == "0750" { 0o750 } else { 0o640 };
            assert_eq!(mode_of(&top.join("a/b/f")), want);
            assert_eq!(mode_of(&top.join("a/b")), 0o750);
            for _ in 0..2 {
                c.exec(old_atimes.clone(), None).await.unwrap();
                assert!(!run(true).await, "{mode}: check, nothing to change");
                assert!(!run(false).await, "{mode}: nothing changed");
            }
        }
    }

    /// Following a link (the default), the mode is set on its target: that is a change.
    #[tokio::test]
    async fn mode_through_a_link_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let t = dir.path().join("t");
        std::fs::write(&t, "").unwrap();
        std::os::unix::fs::symlink("t", dir.path().join("l")).unwrap();
        let l = dir.path().join("l");
        let a = json!({"path": l.to_str().unwrap(), "mode": "0600"});
        assert!(File.run(&c, args(a.clone())).await.unwrap().changed);
        assert_eq!(mode_of(&t), 0o600);
        assert!(!File.run(&c, args(a)).await.unwrap().changed);
    }

    #[tokio::test]
    async fn recursive_owner() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        if c.exec("id -u", None).await.unwrap().stdout_text() != "0" {
            return; // changing owners needs root
        }
        let top = dir.path().join("r");
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::write(top.join("a/b/f"), "").unwrap();
        let a = json!({"path": top.to_str().unwrap(), "state": "directory", "owner": "nobody", "recurse": true});
        let r = File.run(&c, args(a.clone())).await.unwrap();
        assert!(r.changed);
        assert_eq!(r.data["owner"], json!("nobody"));
        let out = c
            .exec(format!("stat -c %U {}/a/b/f", top.display()), None)
            .await
            .unwrap();
        assert_eq!(out.stdout_text(), "nobody");
        assert!(!File.run(&c, args(a)).await.unwrap().changed);
        std::fs::write(top.join("a/new"), "").unwrap();
        let a = json!({"path": top.to_str().unwrap(), "state": "directory", "owner": "nobody", "recurse": true});
        assert!(
            File.run(&c, args(a)).await.unwrap().changed,
            "a new root-owned file below is found"
        );
    }

    #[tokio::test]
    async fn links_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let target = dir.path().join("target");
        std::fs::write(&target, "t").unwrap();
        let l = dir.path().join("l");
        let ls = l.to_str().unwrap();
        let r = File
            .run(
                &c,
                args(json!({"path": ls, "src": "target", "state": "link"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(std::fs::read_link(&l).unwrap().to_str().unwrap(), "target");
        assert_eq!(r.data["src"], json!("target"));
        let r = File
            .run(
                &c,
                args(json!({"dest": ls, "src": "target", "state": "link"})),
            )
            .await
            .unwrap();
        assert!(!r.changed);
        // Dangling without force is refused; with force it is made.
        let e = File
            .run(
                &c,
                args(json!({"path": ls, "src": "nowhere", "state": "link"})),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("force"), "{e:?}");
        assert!(
            File.run(
                &c,
                args(json!({"path": ls, "src": "nowhere", "state": "link", "force": true}))
            )
            .await
            .unwrap()
            .changed
        );
        // Hard link.
        let h = dir.path().join("h");
        let hs = h.to_str().unwrap();
        let ts = target.to_str().unwrap();
        assert!(
            File.run(&c, args(json!({"path": hs, "src": ts, "state": "hard"})))
                .await
                .unwrap()
                .changed
        );
        assert!(
            !File
                .run(&c, args(json!({"path": hs, "src": ts, "state": "hard"})))
                .await
                .unwrap()
                .changed
        );
        // A directory under a regular file cannot be made; mkdir's own words are shown.
        let under = target.join("sub");
        let e = File
            .run(
                &c,
                args(json!({"path": under.to_str().unwrap(), "state": "directory"})),
            )
            .await
            .unwrap_err();
        assert!(e.notes.iter().any(|n| n.contains("mkdir")), "{e:?}");
        // state=file on a missing path, unknown state, unknown argument.
        let e = File
            .run(
                &c,
                args(json!({"path": "/nonexistent/kk", "state": "file"})),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("absent"), "{e:?}");
        let e = File
            .run(&c, args(json!({"path": ls, "state": "dir"})))
            .await
            .unwrap_err();
        assert!(e.help.unwrap().contains("directory"));
        let e = File
            .run(&c, args(json!({"path": ls, "stat": "file"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("stat"), "{e:?}");
        assert!(e.help.unwrap().contains("modification_time"));
    }
}
