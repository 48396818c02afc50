//! Writing a file atomically on the host in one round trip (temp file beside it, mode
//! and owner, `validate`, backup, rename), and setting attributes of an existing path.

use super::super::{FileDiff, ModuleContext};
use super::attrs::normalize_mode;
use super::{parent_dir, parse_stats, qpath, remote_error, stat_var_script, Attrs, RemoteStat};
use crate::connect::{shell_quote, ExecOutput, Input};
use crate::error::Result;

/// How to write one file.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Attributes for the new file; unset ones are kept from the file it replaces
    /// (or the umask's defaults for a new file).
    pub attrs: Attrs,
    /// Keep a timestamped copy of the old file (`path.PID.YYYY-MM-DD@HH:MM:SS~`).
    pub backup: bool,
    /// A command with `%s` checked against the temp file before it replaces `path`.
    pub validate: Option<String>,
    /// Create missing parent directories first (with this mode when given).
    pub make_parents: bool,
    /// Mode for parent directories created by `make_parents`.
    pub directory_mode: Option<String>,
    /// Copy this file on the host instead of the bytes sent (`remote_src`).
    pub remote_src: Option<String>,
}

/// What writing a file did.
#[derive(Debug, Clone, Default)]
pub struct WriteOutcome {
    /// The backup made, if any.
    pub backup_file: Option<String>,
    /// The file's state after the write.
    pub stat: RemoteStat,
}

/// Writes `data` to `path` atomically in one round trip: the bytes go over stdin into a
/// temp file beside `path`, get their mode/owner/group (and pass `validate`), then are
/// renamed over `path`.
pub async fn write_file(
    ctx: &ModuleContext,
    path: &str,
    data: impl Into<Input>,
    opts: &WriteOptions,
) -> Result<WriteOutcome> {
    let data = data.into();
    let s = write_script(path, opts, Some(data.len()));
    let out = ctx.exec_input(s, Some(data)).await?;
    write_outcome(path, &out)
}

/// What a [`write_script`] run says: its error, or the backup made and the final state.
pub fn write_outcome(path: &str, out: &ExecOutput) -> Result<WriteOutcome> {
    if out.rc != 0 {
        let what = match out.rc {
            75 => format!("validation of the new {} failed", path),
            78 => format!("{} was not written: its data did not all arrive", path),
            _ => format!("cannot write {}", path),
        };
        return Err(remote_error(&what, out));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let backup_file = text
        .lines()
        .find_map(|l| l.strip_prefix("backup_file="))
        .map(str::to_string);
    // The last record is the state after the write (a script may stat before, too).
    let n = text
        .lines()
        .filter(|l| *l == "==kk-record==")
        .count()
        .max(1);
    let paths = vec![path; n];
    let stat = parse_stats(&paths, &out.stdout)?.pop().unwrap_or_default();
    Ok(WriteOutcome { backup_file, stat })
}

/// Removes what an earlier kk left in directory `$dir_var` when it was killed mid-write
/// (SIGKILL, a host reboot): kk's temp names carry their writer's pid
/// (`.kk_tmp-PID-XXXXXXXX`, `.kk_get_url-PID-…`, `.kk_unarchive-PID-…` and its
/// `.archive*`); those whose writer no longer runs are deleted. A live writer's (another
/// kk at work) are left alone.
pub fn sweep_stale(dir_var: &str) -> String {
    format!(
        r#"for kk_f in "${dir}"/.kk_tmp-*-* "${dir}"/.kk_get_url-*-* "${dir}"/.kk_unarchive-*-*; do
  [ -e "$kk_f" ] || [ -L "$kk_f" ] || continue
  kk_p=${{kk_f##*/}}; kk_p=${{kk_p#.kk_*-}}; kk_p=${{kk_p%%-*}}
  case $kk_p in ''|*[!0-9]*) continue ;; esac
  [ -d "/proc/$kk_p" ] || rm -rf -- "$kk_f"
done
"#,
        dir = dir_var
    )
}

/// Makes the shell remove its temp file when it is stopped by a signal too (`EXIT` alone
/// does not run when `sh` dies of one), e.g. when kk is interrupted and stops its commands.
/// SIGPIPE is ignored: once kk is gone the script's stdout/stderr are closed pipes, and
/// the shell would die of the first message it writes there before its trap ran.
pub const TRAP_SIGNALS: &str =
    "trap '' PIPE\ntrap 'exit 129' HUP\ntrap 'exit 130' INT\ntrap 'exit 143' TERM\n";

/// The script of [`write_file`] (data on stdin), ending with one stat record of `path`.
///
/// `size`: the bytes that must arrive on stdin. Fewer means the sender stopped (kk was
/// interrupted, the connection dropped): the temp file is removed and `path` is left as
/// it was (exit 78), never replaced by a truncated copy. The data is flushed to disk
/// (`sync FILE`) before the rename, so a crash right after it cannot leave an empty file.
pub fn write_script(path: &str, opts: &WriteOptions, size: Option<u64>) -> String {
    let dir = parent_dir(path);
    let mut s = String::new();
    s.push_str(&format!("d={}\n", qpath(path)));
    if opts.make_parents {
        s.push_str(&format!("dir={}\n", qpath(&dir)));
        s.push_str("if [ ! -d \"$dir\" ]; then\n  mkdir -p -- \"$dir\" || exit 70\n");
        if let Some(m) = &opts.directory_mode {
            s.push_str(&format!(
                "  chmod {} \"$dir\" || exit 72\n",
                shell_quote(&normalize_mode(m))
            ));
        }
        s.push_str("fi\n");
    }
    s.push_str(&format!("kk_dir={}\n", qpath(&dir)));
    s.push_str(&sweep_stale("kk_dir"));
    s.push_str(&format!(
        "tmp=$(mktemp \"$kk_dir/.kk_tmp-$$-XXXXXXXX\") || {{ echo 'destination directory {} does not exist or is not writable' >&2; exit 70; }}\n",
        dir.replace('\'', "")
    ));
    s.push_str("trap 'rm -f \"$tmp\"' EXIT\n");
    s.push_str(TRAP_SIGNALS);
    match &opts.remote_src {
        Some(src) => s.push_str(&format!("cat -- {} > \"$tmp\" || exit 71\n", qpath(src))),
        None => s.push_str("cat > \"$tmp\" || exit 71\n"),
    }
    if let (Some(n), None) = (size, &opts.remote_src) {
        s.push_str(&format!(
            "kk_n=$(wc -c < \"$tmp\")\n[ \"$kk_n\" -eq {n} ] || {{ echo \"only $kk_n of {n} bytes arrived (the sender stopped): {} left as it was\" >&2; exit 78; }}\n",
            path.replace(['\'', '"', '$', '`', '\\'], "")
        ));
    }
    s.push_str("sync -- \"$tmp\" 2>/dev/null\n");
    // Keep what the replaced file had (Ansible's atomic_move does the same), else the umask default.
    s.push_str(
        "if [ -e \"$d\" ]; then\n  chmod \"$(stat -L -c %a -- \"$d\")\" \"$tmp\" 2>/dev/null\n  chown \"$(stat -L -c %u:%g -- \"$d\")\" \"$tmp\" 2>/dev/null\nelse\n  chmod \"$(printf %o $((0666 & ~$(umask))))\" \"$tmp\"\nfi\n",
    );
    s.push_str(&opts.attrs.script("tmp", false));
    if let Some(v) = &opts.validate {
        let cmd = v.replace("%s", "\"$tmp\"");
        s.push_str(&format!(
            "( {} ) >&2 || {{ rc=$?; echo \"validation command failed with rc $rc\" >&2; exit 75; }}\n",
            cmd
        ));
    }
    if opts.backup {
        s.push_str(
            "if [ -f \"$d\" ]; then\n  b=\"$d.$$.$(date +%Y-%m-%d@%H:%M:%S)~\"\n  cp -p -- \"$d\" \"$b\" || exit 76\n  echo \"backup_file=$b\"\nfi\n",
        );
    }
    s.push_str("mv -f -- \"$tmp\" \"$d\" || exit 77\ntrap - EXIT\n");
    s.push_str(&stat_var_script("d", true));
    s
}

/// Applies mode/owner/group to an existing path in one round trip, returning its new state.
pub async fn set_attrs(
    ctx: &ModuleContext,
    path: &str,
    attrs: &Attrs,
    recurse: bool,
) -> Result<RemoteStat> {
    let mut s = format!("p={}\n", qpath(path));
    s.push_str(&attrs.script("p", recurse));
    s.push_str(&stat_var_script("p", true));
    let out = ctx.exec(s, None).await?;
    if out.rc != 0 {
        return Err(remote_error(
            &format!("cannot set attributes of {}", path),
            &out,
        ));
    }
    Ok(parse_stats(&[path], &out.stdout)?.remove(0))
}

/// A diff entry for `--diff` between two texts of one path.
pub fn file_diff(path: &str, before: &str, after: &str) -> FileDiff {
    FileDiff {
        before_header: path.to_string(),
        after_header: path.to_string(),
        before: before.to_string(),
        after: after.to_string(),
    }
}
