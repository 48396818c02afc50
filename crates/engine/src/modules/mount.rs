//! `mount` (`ansible.posix.mount`): a mount point in an fstab (written through a temp file
//! and rename) and in the running system (`mount`, `umount`, `mount -o remount`). The
//! decisions are the collection's on Linux, ported: which fstab lines count as the same
//! mount point, when a line is rewritten, how "is mounted" is read (`ismount` or
//! `/proc/self/mountinfo`), remount falling back to umount + mount, and the result keys
//! (`name`, `src`, `fstype`, `opts`, `dump`, `passno`, `fstab`, `boot`, `backup_file`).

use std::collections::HashMap;

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Text};
use super::plan::{Plan, PlanApply};
use super::remote::{parent_dir, qpath, remote_error, write_file, WriteOptions};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// What should be true of the mount point.
    enum State for "state" {
        Mounted = "mounted", Unmounted = "unmounted", Present = "present",
        Absent = "absent", AbsentFromFstab = "absent_from_fstab",
        Remounted = "remounted", Ephemeral = "ephemeral"
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MountArgs {
    #[serde(default, alias = "name")]
    path: Option<Text>,
    #[serde(default)]
    src: Option<Text>,
    #[serde(default)]
    fstype: Option<Text>,
    #[serde(default)]
    opts: Option<Text>,
    /// Accepted; kk does not mask `opts` in the result as Ansible's no_log does.
    #[serde(default)]
    #[allow(dead_code)]
    opts_no_log: Flag,
    #[serde(default)]
    dump: Option<Text>,
    #[serde(default)]
    passno: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    fstab: Option<Text>,
    #[serde(default)]
    backup: Flag,
    #[serde(default = "Flag::on")]
    boot: Flag,
}

const VALID: &[&str] = &[
    "path",
    "name",
    "src",
    "fstype",
    "opts",
    "opts_no_log",
    "dump",
    "passno",
    "state",
    "fstab",
    "backup",
    "boot",
];

/// The collection's `args`: what the fstab line says, and the result's keys.
#[derive(Debug, Clone)]
struct Spec {
    state: State,
    name: String,
    src: Option<String>,
    fstype: Option<String>,
    opts: String,
    dump: String,
    passno: String,
    fstab: String,
    boot: bool,
    backup: bool,
}

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("mount: {}", msg.into()))
}

/// Types and names of the arguments; `Ok(Err(msg))` for what Ansible reports as a
/// failed task (a missing required argument), so `ignore_errors` applies as there.
fn check(raw: VarMap) -> Result<std::result::Result<Spec, String>> {
    let a: MountArgs = parse_args("mount", raw, VALID)?;
    let Some(state) = a.state else {
        return Ok(Err("missing required arguments: state".into()));
    };
    let Some(name) = a.path.map(|p| p.0).filter(|p| !p.is_empty()) else {
        return Ok(Err("missing required arguments: path".into()));
    };
    if matches!(state, State::Mounted | State::Present | State::Ephemeral) {
        let missing: Vec<&str> = [("src", &a.src), ("fstype", &a.fstype)]
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .collect();
        if !missing.is_empty() {
            return Ok(Err(format!(
                "state is {} but all of the following are missing: {}",
                state.as_str(),
                missing.join(", ")
            )));
        }
    }
    for (k, v) in [("src", &a.src), ("fstype", &a.fstype), ("opts", &a.opts)] {
        if v.as_ref().is_some_and(|v| v.0.contains('\n')) {
            return Err(arg_err(format!("`{k}` cannot span lines")));
        }
    }
    let mut opts = a.opts.map(|o| o.0).unwrap_or_else(|| "defaults".into());
    let boot = a.boot.0;
    if !boot {
        opts.push_str(",noauto");
    }
    Ok(Ok(Spec {
        state,
        name,
        src: a.src.map(|s| s.0),
        fstype: a.fstype.map(|s| s.0),
        opts,
        dump: a.dump.map(|s| s.0).unwrap_or_else(|| "0".into()),
        passno: a.passno.map(|s| s.0).unwrap_or_else(|| "0".into()),
        fstab: a.fstab.map(|s| s.0).unwrap_or_else(|| "/etc/fstab".into()),
        boot,
        backup: a.backup.0,
    }))
}

/// The collection's `_escape_fstab`.
fn escape(v: &str) -> String {
    v.replace('\\', "\\134")
        .replace(' ', "\\040")
        .replace('&', "\\046")
}

/// The collection's `_set_mount_save_old` on Linux: the new fstab text and whether it
/// changed. Lines with 4–6 fields (comments cut) are entries; a missing dump or passno
/// never equals the argument, so such a line is rewritten in full.
fn set_lines(text: &str, s: &Spec) -> (String, bool) {
    let want = [
        escape(s.src.as_deref().unwrap_or_default()),
        escape(&s.name),
        escape(s.fstype.as_deref().unwrap_or_default()),
        escape(&s.opts),
        escape(&s.dump),
        escape(&s.passno),
    ];
    let mut out = String::new();
    let (mut exists, mut changed) = (false, false);
    for line in text.split_inclusive('\n') {
        let mut line = line.to_string();
        if !line.ends_with('\n') {
            line.push('\n');
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            out.push_str(&line);
            continue;
        }
        let fields: Vec<&str> = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if !(4..=6).contains(&fields.len()) {
            out.push_str(&line);
            continue;
        }
        // src name fstype opts dump passno; a missing dump/passno is the integer 0.
        let mut ld: Vec<Option<String>> = (0..6)
            .map(|i| fields.get(i).map(|f| f.to_string()))
            .collect();
        let swap_other = s.src.is_some()
            && ld[1].as_deref() == Some("none")
            && ld[2].as_deref() == Some("swap")
            && ld[0].as_deref() != s.src.as_deref();
        if ld[1].as_deref() != Some(want[1].as_str()) || swap_other {
            out.push_str(&line);
            continue;
        }
        exists = true;
        for i in [0, 2, 3, 4, 5] {
            if ld[i].as_deref() != Some(want[i].as_str()) {
                ld[i] = Some(want[i].clone());
                changed = true;
            }
        }
        if changed {
            let f = |i: usize| ld[i].clone().unwrap_or_else(|| "0".into());
            out.push_str(&format!(
                "{} {} {} {} {} {}\n",
                f(0),
                f(1),
                f(2),
                f(3),
                f(4),
                f(5)
            ));
        } else {
            out.push_str(&line);
        }
    }
    if !exists {
        out.push_str(&want.join(" "));
        out.push('\n');
        changed = true;
    }
    (out, changed)
}

/// The collection's `unset_mount`: lines of exactly six fields naming the mount point go.
fn unset_lines(text: &str, s: &Spec) -> (String, bool) {
    let name = escape(&s.name);
    let mut out = String::new();
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        let fields: Vec<&str> = line.split_whitespace().collect();
        if trimmed.is_empty() || trimmed.starts_with('#') || fields.len() != 6 {
            out.push_str(line);
            continue;
        }
        let swap_other = s
            .src
            .as_deref()
            .is_some_and(|src| fields[1] == "none" && fields[2] == "swap" && fields[0] != src);
        if fields[1] != name || swap_other {
            out.push_str(line);
            continue;
        }
        changed = true;
    }
    (out, changed)
}

/// The collection's `get_linux_mounts`: mount point → source, where the source of a
/// mount whose parent is known is its root path below the parent's mount point (how bind
/// mounts are recognised). Records are reworked in file order, as the collection does.
fn linux_mounts(mountinfo: &str) -> HashMap<String, String> {
    struct Rec {
        id: i64,
        parent: i64,
        root: String,
        dst: String,
        src: String,
    }
    let mut recs: Vec<Rec> = Vec::new();
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 7 {
            continue;
        }
        let (Ok(id), Ok(parent)) = (f[0].parse(), f[1].parse()) else {
            continue;
        };
        let rec = Rec {
            id,
            parent,
            root: f[3].into(),
            dst: f[4].into(),
            src: f[f.len() - 2].into(),
        };
        // A dict keyed by id: a repeated id replaces the record in its first place.
        match recs.iter_mut().find(|r| r.id == id) {
            Some(r) => *r = rec,
            None => recs.push(rec),
        }
    }
    let mut mounts = HashMap::new();
    for i in 0..recs.len() {
        let parent = recs[i].parent;
        let src = match recs.iter().position(|r| r.id == parent) {
            Some(p) if parent != 1 => {
                let (proot, pdst) = (recs[p].root.clone(), recs[p].dst.clone());
                if proot.len() > 1 && recs[i].root.starts_with(&format!("{proot}/")) {
                    recs[i].root = recs[i].root[proot.len()..].to_string();
                }
                if pdst != "/" {
                    recs[i].root = format!("{}{}", pdst, recs[i].root);
                }
                recs[i].root.clone()
            }
            _ => recs[i].src.clone(),
        };
        mounts.insert(recs[i].dst.clone(), src);
    }
    mounts
}

/// Python's `OSError` text for an error `rmdir` printed (`[Errno 39] Directory not
/// empty: '/x'`), as the collection's message shows it.
fn os_error(why: &str, path: &str) -> String {
    let errno = match why {
        "Operation not permitted" => 1,
        "No such file or directory" => 2,
        "Permission denied" => 13,
        "Device or resource busy" => 16,
        "Not a directory" => 20,
        "Read-only file system" => 30,
        "Directory not empty" => 39,
        _ => return why.to_string(),
    };
    format!("[Errno {errno}] {why}: '{path}'")
}

/// What the host said about the mount point.
struct Seen {
    mounts: HashMap<String, String>,
    ismount: bool,
    exists: bool,
    fstab: String,
    /// `mount -v` lines as (source, mount point), read for `ephemeral` only.
    listed: Vec<(String, String)>,
}

impl Seen {
    /// `ismount(name) or is_bind_mounted(name, src)`.
    fn mounted(&self, name: &str, src: Option<&str>) -> bool {
        self.ismount
            || match src {
                None => self.mounts.contains_key(name),
                Some(src) => self.mounts.get(name).is_some_and(|s| s == src),
            }
    }

    /// The collection's `_is_same_mount_src`.
    fn same_src(&self, name: &str, src: &str) -> bool {
        if !self.mounted(name, None) {
            return false;
        }
        if self.mounts.get(name).is_some_and(|s| s == src) {
            return true;
        }
        self.listed.iter().any(|(s, d)| s == src && d == name)
    }
}

fn section<'a>(text: &'a str, name: &str) -> &'a str {
    let start = format!("==kk-{name}==\n");
    let Some(i) = text.find(&start) else {
        return "";
    };
    let rest = &text[i + start.len()..];
    match rest.find("\n==kk-") {
        Some(j) => &rest[..=j],
        None => rest,
    }
}

/// One round trip: mountinfo, `ismount` (as Python's: not a symlink, and another device
/// than the parent or the same inode), whether the path exists, and the fstab, created
/// empty when missing (as the collection does, in check mode too) unless `ephemeral`.
async fn look(ctx: &ModuleContext, s: &Spec) -> Result<Seen> {
    let make_fstab = if s.state == State::Ephemeral {
        String::new()
    } else {
        format!(
            "if [ ! -e \"$f\" ]; then mkdir -p -- {} && : >> \"$f\" || {{ echo \"Failed to open $f\" >&2; exit 3; }}; fi\n",
            qpath(&parent_dir(&s.fstab))
        )
    };
    let listed = if s.state == State::Ephemeral {
        "echo ==kk-listed==; mount -v 2>/dev/null\n"
    } else {
        ""
    };
    let script = format!(
        "export LANG=C LC_ALL=C\np={p}\nf={f}\n{make_fstab}\
         echo ==kk-mountinfo==; cat /proc/self/mountinfo 2>/dev/null\n\
         echo ==kk-ismount==\n\
         if [ -L \"$p\" ]; then echo exists no\n\
         elif [ -e \"$p\" ]; then a=$(stat -L -c '%d %i' -- \"$p\"); b=$(stat -L -c '%d %i' -- \"$p/..\")\n\
         if [ \"${{a% *}}\" != \"${{b% *}}\" ] || [ \"${{a#* }}\" = \"${{b#* }}\" ]; then echo exists yes; else echo exists no; fi\n\
         else echo missing no; fi\n\
         {listed}echo ==kk-fstab==\n[ ! -f \"$f\" ] || cat -- \"$f\"\n",
        p = qpath(&s.name),
        f = qpath(&s.fstab),
    );
    let out = ctx.exec(script, None).await?;
    if out.rc != 0 {
        return Err(remote_error(&format!("cannot read {}", s.fstab), &out));
    }
    let text = out.stdout_text();
    let is = section(&text, "ismount");
    Ok(Seen {
        mounts: linux_mounts(section(&text, "mountinfo")),
        ismount: is.contains(" yes"),
        exists: is.starts_with("exists"),
        fstab: text
            .find("==kk-fstab==\n")
            .map(|i| text[i + "==kk-fstab==\n".len()..].to_string())
            .unwrap_or_default(),
        listed: section(&text, "listed")
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() > 2).then(|| (f[0].to_string(), f[2].to_string()))
            })
            .collect(),
    })
}

/// What apply does, in order.
pub struct MountWork {
    spec: Spec,
    /// Directories to create first (mounted, ephemeral).
    mkdir: bool,
    /// The new fstab and the old one (restored when mounting fails).
    fstab: Option<(String, String)>,
    action: Action,
}

enum Action {
    None,
    Mount,
    Umount,
    Remount,
    /// absent: unmount when mounted, then remove the directory.
    UmountRmdir {
        mounted: bool,
        exists: bool,
    },
}

/// `ansible.posix.mount`.
pub struct Mount;

impl Spec {
    fn result(&self, changed: bool, backup_file: &str) -> ModuleResult {
        let mut r = ModuleResult::changed(changed)
            .with("name", self.name.clone())
            .with("opts", self.opts.clone())
            .with("dump", self.dump.clone())
            .with("passno", self.passno.clone())
            .with("fstab", self.fstab.clone())
            .with("boot", if self.boot { "yes" } else { "no" })
            .with("backup_file", backup_file);
        if let Some(src) = &self.src {
            r = r.with("src", src.clone());
        }
        if let Some(t) = &self.fstype {
            r = r.with("fstype", t.clone());
        }
        r
    }

    /// `mount [-T fstab] name`, or for ephemeral `mount -t fstype [-o opts] src name`.
    fn mount_cmd(&self, remount: Option<&str>) -> String {
        let mut cmd = vec!["mount".to_string()];
        if let Some(o) = remount {
            cmd.extend(["-o".into(), o.into()]);
        }
        if self.state == State::Ephemeral {
            cmd.extend(["-t".into(), self.fstype.clone().unwrap_or_default()]);
            if self.opts != "defaults" {
                cmd.extend(["-o".into(), self.opts.clone()]);
            }
            cmd.push(self.src.clone().unwrap_or_default());
        } else if self.fstab != "/etc/fstab" {
            cmd.extend(["-T".into(), self.fstab.clone()]);
        }
        cmd.push(self.name.clone());
        cmd.iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[async_trait]
impl PlanApply for Mount {
    type Work = MountWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<MountWork>> {
        let s = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(s) => s,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let seen = look(ctx, &s).await?;
        let name = s.name.clone();
        let (fstab, changed, action, mkdir) = match s.state {
            State::AbsentFromFstab | State::Absent => {
                let (text, changed) = unset_lines(&seen.fstab, &s);
                let action = if s.state == State::Absent {
                    Action::UmountRmdir {
                        mounted: seen.mounted(&name, None),
                        exists: seen.exists,
                    }
                } else {
                    Action::None
                };
                let fstab = changed.then(|| (text, seen.fstab.clone()));
                (fstab, changed, action, false)
            }
            State::Unmounted => {
                let m = seen.mounted(&name, None);
                (
                    None,
                    m,
                    if m { Action::Umount } else { Action::None },
                    false,
                )
            }
            State::Present => {
                let (text, changed) = set_lines(&seen.fstab, &s);
                (
                    changed.then(|| (text, seen.fstab.clone())),
                    changed,
                    Action::None,
                    false,
                )
            }
            State::Remounted => (None, true, Action::Remount, false),
            State::Mounted | State::Ephemeral => {
                let (text, changed) = if s.state == State::Ephemeral {
                    (String::new(), false)
                } else {
                    set_lines(&seen.fstab, &s)
                };
                let fstab = changed.then(|| (text, seen.fstab.clone()));
                let src = s.src.as_deref().unwrap_or_default();
                if seen.mounted(&name, Some(src)) {
                    if s.state == State::Ephemeral {
                        if !seen.same_src(&name, src) {
                            return Ok(Plan::Done(ModuleResult::failed(
                                "Ephemeral mount point is already mounted with a different source than the specified one. Failing in order to prevent an unwanted unmount or override operation. Try replacing this command with a \"state: unmounted\" followed by a \"state: ephemeral\", or use a different destination path.",
                            )));
                        }
                        (fstab, true, Action::Remount, !seen.exists)
                    } else if changed {
                        (fstab, true, Action::Remount, !seen.exists)
                    } else {
                        (fstab, false, Action::None, !seen.exists)
                    }
                } else {
                    (fstab, true, Action::Mount, !seen.exists)
                }
            }
        };
        if !changed {
            return Ok(Plan::Done(s.result(false, "")));
        }
        let result = s.result(true, "");
        Ok(Plan::change(
            result,
            MountWork {
                spec: s,
                mkdir,
                fstab,
                action,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: MountWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let s = &w.spec;
        let name = qpath(&s.name);
        // The directories made here, deepest last, to remove again if mounting fails.
        let mut created: Vec<String> = Vec::new();
        if w.mkdir {
            let out = ctx
                .exec(
                    format!(
                        "p={name}\ncase \"$p\" in /*) c= ;; *) c=. ;; esac\n\
                         IFS=/; set -f; for d in $p; do [ -n \"$d\" ] || continue; c=\"$c/$d\"\n\
                         if [ ! -e \"$c\" ]; then mkdir -- \"$c\" || exit 1; printf '%s\\n' \"$c\"; fi; done\n"
                    ),
                    None,
                )
                .await?;
            if out.rc != 0 {
                return Ok(ModuleResult::failed(format!(
                    "Error making dir {}: {}",
                    s.name,
                    out.stderr_text().trim()
                )));
            }
            created = out.stdout_text().lines().map(str::to_string).collect();
        }
        let mut backup_file = String::new();
        if let Some((text, _)) = &w.fstab {
            let opts = WriteOptions {
                backup: s.backup,
                ..WriteOptions::default()
            };
            let done = write_file(ctx, &s.fstab, text.clone().into_bytes(), &opts).await?;
            backup_file = done.backup_file.unwrap_or_default();
        }
        let run = |cmd: String| async move {
            let out = ctx
                .exec(format!("export LANG=C LC_ALL=C\n{cmd}\n"), None)
                .await?;
            Ok::<_, Error>((
                out.rc,
                format!("{}{}", out.stdout_text(), out.stderr_text()),
            ))
        };
        let umount = format!("umount {name}");
        let failure = match w.action {
            Action::None => None,
            Action::Umount => match run(umount).await? {
                (0, _) => None,
                (_, msg) => Some(format!("Error unmounting {}: {}", s.name, msg)),
            },
            Action::UmountRmdir { mounted, exists } => {
                let mut fail = None;
                if mounted {
                    let (rc, msg) = run(umount).await?;
                    if rc != 0 {
                        fail = Some(format!("Error unmounting {}: {}", s.name, msg));
                    }
                }
                if fail.is_none() && exists {
                    let (rc, msg) = run(format!("rmdir -- {name}")).await?;
                    if rc != 0 {
                        let why = msg.trim().rsplit(": ").next().unwrap_or("");
                        fail = Some(format!(
                            "Error rmdir {}: {}",
                            s.name,
                            os_error(why, &s.name)
                        ));
                    }
                }
                fail
            }
            Action::Mount | Action::Remount => {
                let (rc, msg) = if matches!(w.action, Action::Mount) {
                    run(s.mount_cmd(None)).await?
                } else {
                    let o = if s.state == State::Remounted && s.opts != "defaults" {
                        format!("remount,{}", s.opts)
                    } else {
                        "remount".into()
                    };
                    match run(s.mount_cmd(Some(&o))).await? {
                        (0, m) => (0, m),
                        _ if s.state == State::Remounted && s.opts != "defaults" => {
                            return Ok(ModuleResult::failed("Options were specified with remounted, but the remount command failed. Failing in order to prevent an unexpected mount result. Try replacing this command with a \"state: unmounted\" followed by a \"state: mounted\" using the full desired mount options instead."));
                        }
                        _ => match run(umount).await? {
                            (0, _) => run(s.mount_cmd(None)).await?,
                            other => other,
                        },
                    }
                };
                if rc == 0 {
                    None
                } else if s.state == State::Remounted {
                    Some(format!("Error remounting {}: {}", s.name, msg))
                } else {
                    // Undo: the old fstab back, the directories made removed.
                    if let Some((_, old)) = &w.fstab {
                        let _ = write_file(
                            ctx,
                            &s.fstab,
                            old.clone().into_bytes(),
                            &WriteOptions::default(),
                        )
                        .await;
                    }
                    if !created.is_empty() {
                        let dirs: Vec<String> = created.iter().rev().map(|d| qpath(d)).collect();
                        let _ = run(format!("rmdir -- {} 2>/dev/null", dirs.join(" "))).await;
                    }
                    Some(format!("Error mounting {}: {}", s.name, msg))
                }
            }
        };
        if let Some(msg) = failure {
            return Ok(ModuleResult::failed(msg));
        }
        Ok(ModuleResult {
            data: s.result(true, &backup_file).data,
            ..result
        })
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn spec(v: Value) -> Spec {
        check(v.as_object().unwrap().clone()).unwrap().unwrap()
    }

    #[test]
    fn fstab_lines_as_the_collection_writes_them() {
        let s = spec(json!({"src": "tmpfs", "path": "/m 1", "fstype": "tmpfs",
            "opts": "size=1m", "state": "present"}));
        let text = "# c\n\ntmpfs /m\\0401 tmpfs size=1m 0 0\nother /x ext4 defaults 0 0";
        assert_eq!(set_lines(text, &s), (format!("{text}\n"), false));
        let short = "tmpfs /m\\0401 tmpfs size=1m # four\n";
        assert_eq!(
            set_lines(short, &s),
            ("tmpfs /m\\0401 tmpfs size=1m 0 0\n".to_string(), true)
        );
        assert_eq!(
            set_lines("", &s),
            ("tmpfs /m\\0401 tmpfs size=1m 0 0\n".to_string(), true)
        );
        assert_eq!(
            unset_lines(text, &s),
            ("# c\n\nother /x ext4 defaults 0 0".to_string(), true)
        );
        let s2 = spec(
            json!({"src": "/d", "path": "/b", "fstype": "none", "opts": "bind",
            "boot": false, "state": "present"}),
        );
        assert_eq!(s2.opts, "bind,noauto");
        assert!(check(
            json!({"path": "/x", "state": "mounted", "src": "a"})
                .as_object()
                .unwrap()
                .clone()
        )
        .unwrap()
        .unwrap_err()
        .contains("missing: fstype"));
        assert!(check(
            json!({"path": "/x", "state": "up"})
                .as_object()
                .unwrap()
                .clone()
        )
        .is_err());
    }

    #[test]
    fn rmdir_errors_as_python_prints_them() {
        assert_eq!(
            os_error("Directory not empty", "/x"),
            "[Errno 39] Directory not empty: '/x'"
        );
        assert_eq!(os_error("odd", "/x"), "odd");
    }

    #[test]
    fn mountinfo_sources() {
        let info = "22 1 0:20 / / rw - overlay overlay rw\n\
                    30 22 0:30 / /mnt/t rw - tmpfs tmpfs rw\n\
                    31 22 8:1 /data /mnt/b rw - ext4 /dev/sda1 rw\n\
                    32 30 0:30 /sub /mnt/t/x rw - tmpfs tmpfs rw\n";
        let m = linux_mounts(info);
        assert_eq!(m["/"], "overlay");
        assert_eq!(m["/mnt/t"], "/");
        assert_eq!(m["/mnt/b"], "/data");
        assert_eq!(m["/mnt/t/x"], "/mnt/t/sub");
    }
}
