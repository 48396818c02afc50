//! The shell the `file` module sends: making directories, links' attributes, the
//! measured act of round trip 2, the recursive probe of round trip 1, and the result
//! helpers that go with them.

use serde_json::json;

use super::super::remote::{apply_mode, qpath, Attrs, RemoteStat};
use super::super::{FileDiff, ModuleResult};
use super::State;
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

/// Every prefix of a path that names a directory (`a/b/c` → `a`, `a/b`, `a/b/c`).
pub(super) fn ancestors(path: &str) -> Vec<String> {
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

pub(super) fn indent(s: &str, pad: &str) -> String {
    s.lines().map(|l| format!("{}{}\n", pad, l)).collect()
}

pub(super) fn refuse(path: &str, what: &str, state: State) -> Error {
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
pub(super) fn state_after(state: State) -> &'static str {
    match state {
        State::Touch => "file",
        s => s.name(),
    }
}

pub(super) fn add_link_src(res: &mut ModuleResult, st: &RemoteStat, state: State) {
    if state == State::Link {
        if let Some(t) = &st.link_target {
            res.data.insert("src".into(), t.clone().into());
        }
    }
}

/// For links only owner and group can be set (with `-h`: on the link itself).
pub(super) fn link_attrs_script(attrs: &Attrs, state: State) -> String {
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

pub(super) fn link_attrs_differ(attrs: &Attrs, st: &RemoteStat, state: State) -> Result<bool> {
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
pub(super) fn act_script(act: &str, times: &str, recursive: bool, follow_target: bool) -> String {
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
pub(super) fn recurse_probe(path: &str, attrs: &Attrs) -> String {
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
pub(super) fn recurse_differs(text: &str, attrs: &Attrs) -> Result<bool> {
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
pub(super) fn state_diff(path: &str, before: &str, after: &str) -> FileDiff {
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
