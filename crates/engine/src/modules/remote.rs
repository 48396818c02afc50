//! What the file modules share: reading a path's state on the host and writing a file
//! atomically, each in one shell script through [`ModuleContext::exec`], so they work the
//! same over any [`crate::connect::Connection`].
//!
//! Nothing here touches the target with `std::fs`; checksums are computed on the host
//! with `sha256sum` & co. (no Python needed there).

use sha1::Digest;

use super::ModuleContext;
use crate::connect::{shell_quote, ExecOutput};
use crate::error::{Error, ErrorKind, Result};

/// The type of a filesystem entry, from the `S_IFMT` bits of its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileKind {
    /// Nothing is there.
    #[default]
    Missing,
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (only when links are not followed).
    Link,
    /// A socket, fifo or device.
    Other,
}

impl FileKind {
    /// Ansible's name for the state of a path (`file`, `directory`, `link`, `absent`).
    pub fn state_name(self) -> &'static str {
        match self {
            FileKind::Missing => "absent",
            FileKind::File => "file",
            FileKind::Dir => "directory",
            FileKind::Link => "link",
            FileKind::Other => "file",
        }
    }
}

/// A path's state on the host as one stat script reported it.
#[derive(Debug, Clone, Default)]
pub struct RemoteStat {
    /// The path asked about, as given.
    pub path: String,
    /// Whether anything (even a dangling link) is there.
    pub exists: bool,
    /// What it is.
    pub kind: FileKind,
    /// Raw `st_mode` (type and permission bits).
    pub raw_mode: u32,
    /// Permission bits, including setuid/setgid/sticky (`0o7777`).
    pub mode: u32,
    /// Owner id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// Owner name (`UNKNOWN` when the id has no name).
    pub owner: String,
    /// Group name.
    pub group: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// Access time, seconds since the epoch.
    pub atime: i64,
    /// Status change time, seconds since the epoch.
    pub ctime: i64,
    /// Inode number.
    pub inode: u64,
    /// Device number.
    pub dev: u64,
    /// Hard link count.
    pub nlink: u64,
    /// For a link: what it points to, as written (`readlink`).
    pub link_target: Option<String>,
    /// For a link: the resolved absolute path (`readlink -f`).
    pub link_source: Option<String>,
    /// Readable by the connecting (or become) user.
    pub readable: bool,
    /// Writable by that user.
    pub writeable: bool,
    /// Executable by that user.
    pub executable: bool,
    /// Hex checksum of a regular file's content, when asked for and readable.
    pub checksum: Option<String>,
    /// A regular file's content, when asked for and readable.
    pub content: Option<Vec<u8>>,
}

impl RemoteStat {
    /// The mode as Ansible prints it: four octal digits (`"0644"`).
    pub fn mode_str(&self) -> String {
        format!("{:04o}", self.mode)
    }

    /// True when `owner` (a name or a numeric id) is this file's owner.
    pub fn owner_is(&self, owner: &str) -> bool {
        owner == self.owner || owner.parse::<u32>().ok() == Some(self.uid)
    }

    /// True when `group` (a name or a numeric id) is this file's group.
    pub fn group_is(&self, group: &str) -> bool {
        group == self.group || group.parse::<u32>().ok() == Some(self.gid)
    }

    /// The content as text (lossy), empty when not read.
    pub fn text(&self) -> String {
        self.content
            .as_deref()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .unwrap_or_default()
    }
}

/// Which checksum the host computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    /// `md5sum`.
    Md5,
    /// `sha1sum` (Ansible's default for `stat` and result `checksum`).
    Sha1,
    /// `sha224sum`.
    Sha224,
    /// `sha256sum` (what the file modules compare by).
    Sha256,
    /// `sha384sum`.
    Sha384,
    /// `sha512sum`.
    Sha512,
}

impl Checksum {
    /// Parses Ansible's `checksum_algorithm` names.
    pub fn parse(name: &str) -> Option<Checksum> {
        Some(match name.to_ascii_lowercase().as_str() {
            "md5" => Checksum::Md5,
            "sha1" => Checksum::Sha1,
            "sha224" => Checksum::Sha224,
            "sha256" => Checksum::Sha256,
            "sha384" => Checksum::Sha384,
            "sha512" => Checksum::Sha512,
            _ => return None,
        })
    }

    fn command(self) -> &'static str {
        match self {
            Checksum::Md5 => "md5sum",
            Checksum::Sha1 => "sha1sum",
            Checksum::Sha224 => "sha224sum",
            Checksum::Sha256 => "sha256sum",
            Checksum::Sha384 => "sha384sum",
            Checksum::Sha512 => "sha512sum",
        }
    }
}

/// What one stat script should report for each path.
#[derive(Debug, Clone, Copy)]
pub struct StatOptions {
    /// Follow a final symlink (`stat -L`).
    pub follow: bool,
    /// Checksum of regular files.
    pub checksum: Option<Checksum>,
    /// Content of regular files (for diffs and text edits).
    pub content: bool,
    /// Send content only for files up to this size (bigger ones need a separate read).
    pub max_content: Option<u64>,
}

/// sha256 of bytes, hex, as `sha256sum` prints it.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(data))
}

/// sha1 of bytes, hex: Ansible's `checksum` result key.
pub fn sha1_hex(data: &[u8]) -> String {
    hex::encode(sha1::Sha1::digest(data))
}

/// md5 of bytes, hex: Ansible's `md5sum` result key.
pub fn md5_hex(data: &[u8]) -> String {
    hex::encode(md5::Md5::digest(data))
}

/// Quotes a host path for the shell, keeping a leading `~` meaning the home directory
/// (Ansible expands `~` in path arguments).
pub fn qpath(path: &str) -> String {
    if path == "~" {
        "\"$HOME\"".to_string()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("\"$HOME\"/{}", shell_quote(rest))
    } else {
        shell_quote(path)
    }
}

/// The parent directory of a host path (`.` for a bare name), as the host would see it.
pub fn parent_dir(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(0) => "/".to_string(),
        Some(i) => trimmed[..i].to_string(),
        None => ".".to_string(),
    }
}

/// The last component of a path (`/a/b/` → `b`).
pub fn base_name(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// An error for a host command that failed, with everything it printed.
pub fn remote_error(what: &str, out: &ExecOutput) -> Error {
    let mut e = Error::new(ErrorKind::Runtime, format!("{} (rc {})", what, out.rc));
    let stdout = out.stdout_text();
    let stderr = out.stderr_text();
    if !stderr.is_empty() {
        e = e.note(format!("stderr: {}", stderr));
    }
    if !stdout.is_empty() {
        e = e.note(format!("stdout: {}", stdout));
    }
    e
}

/// The shell function the stat scripts use: prints `key=value` lines for one path.
const STAT_FN: &str = r#"kk_stat() {
  p=$1
  if [ -e "$p" ] || { [ -z "$KK_L" ] && [ -L "$p" ]; }; then
    echo exists=1
    stat $KK_L -c 'raw=%f %a %u %g %s %Y %X %Z %i %d %h
owner=%U
group=%G' -- "$p" || echo stat_failed=1
    if [ -L "$p" ]; then
      echo "lnk_target=$(readlink -- "$p")"
      echo "lnk_source=$(readlink -f -- "$p")"
    fi
    [ -r "$p" ] && echo readable=1
    [ -w "$p" ] && echo writeable=1
    [ -x "$p" ] && echo executable=1
    if [ -n "$KK_SUM" ] && [ -f "$p" ] && [ -r "$p" ]; then
      s=$($KK_SUM < "$p") && echo "checksum=${s%% *}"
    fi
    if [ -n "$KK_CONTENT" ] && [ -f "$p" ] && [ -r "$p" ] && { [ -z "$KK_MAX" ] || [ "$(stat -L -c %s -- "$p")" -le "$KK_MAX" ]; }; then
      echo content_begin
      base64 < "$p"
      echo content_end
    fi
  else
    echo exists=0
  fi
}
"#;

/// Builds the script that stats several paths, one record each.
fn stat_script(paths: &[&str], opts: StatOptions) -> String {
    let items: Vec<(&str, bool)> = paths.iter().map(|p| (*p, opts.follow)).collect();
    stat_script_mixed(&items, opts)
}

/// A stat script where each path says whether its final link is followed (`opts.follow`
/// is ignored). Modules may append lines of their own `key=value` output after it; the
/// parser ignores keys it does not know.
pub fn stat_script_mixed(items: &[(&str, bool)], opts: StatOptions) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "KK_SUM={}\n",
        opts.checksum.map(|c| c.command()).unwrap_or("")
    ));
    s.push_str(&format!(
        "KK_CONTENT={}\n",
        if opts.content { "1" } else { "" }
    ));
    s.push_str(&format!(
        "KK_MAX={}\n",
        opts.max_content.map(|m| m.to_string()).unwrap_or_default()
    ));
    s.push_str(STAT_FN);
    for (p, follow) in items {
        s.push_str(&format!(
            "KK_L={}\necho '==kk-record=='\nkk_stat {}\n",
            if *follow { "-L" } else { "" },
            qpath(p)
        ));
    }
    s
}

/// A stat script for the path held in a shell variable of the surrounding script
/// (`var` without `$`), one record; for reporting the state after acting.
pub fn stat_var_script(var: &str, follow: bool) -> String {
    format!(
        "KK_SUM=\nKK_CONTENT=\nKK_MAX=\n{}KK_L={}\necho '==kk-record=='\nkk_stat \"${}\"\n",
        STAT_FN,
        if follow { "-L" } else { "" },
        var
    )
}

/// Parses the output of a stat script into one [`RemoteStat`] per path; lines before
/// the first record (a script's own output) are ignored.
pub fn parse_stats(paths: &[&str], stdout: &[u8]) -> Result<Vec<RemoteStat>> {
    let text = String::from_utf8_lossy(stdout);
    let mut records: Vec<RemoteStat> = Vec::new();
    let mut in_content = false;
    let mut b64 = String::new();
    for line in text.lines() {
        if line == "==kk-record==" {
            let path = paths.get(records.len()).copied().unwrap_or_default();
            records.push(RemoteStat {
                path: path.to_string(),
                ..Default::default()
            });
            continue;
        }
        let Some(st) = records.last_mut() else {
            continue;
        };
        if in_content {
            if line == "content_end" {
                in_content = false;
                let data = base64_decode(&b64)?;
                st.content = Some(data);
                b64.clear();
            } else {
                b64.push_str(line.trim());
            }
            continue;
        }
        if line == "content_begin" {
            in_content = true;
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k {
            "exists" => st.exists = v == "1",
            "raw" => parse_raw(st, v)?,
            "owner" => st.owner = v.to_string(),
            "group" => st.group = v.to_string(),
            "lnk_target" => st.link_target = Some(v.to_string()),
            "lnk_source" => st.link_source = Some(v.to_string()),
            "readable" => st.readable = true,
            "writeable" => st.writeable = true,
            "executable" => st.executable = true,
            "checksum" => st.checksum = Some(v.to_string()),
            _ => {}
        }
    }
    if records.len() != paths.len() {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "the stat script reported {} paths, expected {}",
                records.len(),
                paths.len()
            ),
        )
        .note(format!("output: {}", text)));
    }
    Ok(records)
}

fn base64_decode(s: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| {
            Error::new(
                ErrorKind::Runtime,
                format!("cannot decode file content sent by the host: {}", e),
            )
        })
}

/// Parses the `raw=` line: `%f %a %u %g %s %Y %X %Z %i %d %h`.
fn parse_raw(st: &mut RemoteStat, v: &str) -> Result<()> {
    let f: Vec<&str> = v.split(' ').collect();
    let bad = || {
        Error::new(
            ErrorKind::Runtime,
            format!("unexpected output from stat on the host: {:?}", v),
        )
    };
    if f.len() < 11 {
        return Err(bad());
    }
    st.raw_mode = u32::from_str_radix(f[0], 16).map_err(|_| bad())?;
    st.mode = st.raw_mode & 0o7777;
    st.uid = f[2].parse().map_err(|_| bad())?;
    st.gid = f[3].parse().map_err(|_| bad())?;
    st.size = f[4].parse().map_err(|_| bad())?;
    st.mtime = f[5].parse().map_err(|_| bad())?;
    st.atime = f[6].parse().map_err(|_| bad())?;
    st.ctime = f[7].parse().map_err(|_| bad())?;
    st.inode = f[8].parse().map_err(|_| bad())?;
    st.dev = f[9].parse().map_err(|_| bad())?;
    st.nlink = f[10].parse().map_err(|_| bad())?;
    st.kind = match st.raw_mode & 0o170000 {
        0o040000 => FileKind::Dir,
        0o100000 => FileKind::File,
        0o120000 => FileKind::Link,
        _ => FileKind::Other,
    };
    Ok(())
}

/// Stats several paths in one round trip.
pub async fn stat_paths(
    ctx: &ModuleContext,
    paths: &[&str],
    opts: StatOptions,
) -> Result<Vec<RemoteStat>> {
    let out = ctx.exec(stat_script(paths, opts), None).await?;
    if out.rc != 0 {
        return Err(remote_error(
            &format!("cannot stat {}", paths.join(", ")),
            &out,
        ));
    }
    parse_stats(paths, &out.stdout)
}

/// Stats one path (following links), with its sha256 and, if asked, its content.
pub async fn stat_path(
    ctx: &ModuleContext,
    path: &str,
    with_checksum: bool,
    with_content: bool,
) -> Result<RemoteStat> {
    let opts = StatOptions {
        follow: true,
        checksum: with_checksum.then_some(Checksum::Sha256),
        content: with_content,
        max_content: None,
    };
    let mut v = stat_paths(ctx, &[path], opts).await?;
    Ok(v.remove(0))
}

/// Mode, owner and group wanted for a path; `None` leaves that attribute alone.
#[derive(Debug, Clone, Default)]
pub struct Attrs {
    /// An octal (`"0644"`) or symbolic (`"u+x,g-w"`) mode.
    pub mode: Option<String>,
    /// Owner name or id.
    pub owner: Option<String>,
    /// Group name or id.
    pub group: Option<String>,
}

impl Attrs {
    /// Whether applying these to a path in state `st` would change anything.
    pub fn differ(&self, st: &RemoteStat) -> Result<bool> {
        if !st.exists {
            return Ok(self.mode.is_some() || self.owner.is_some() || self.group.is_some());
        }
        if let Some(m) = &self.mode {
            if apply_mode(st.mode, m, st.kind == FileKind::Dir)? != st.mode {
                return Ok(true);
            }
        }
        if let Some(o) = &self.owner {
            if !st.owner_is(o) {
                return Ok(true);
            }
        }
        if let Some(g) = &self.group {
            if !st.group_is(g) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Shell lines applying the attributes to the path in the shell variable `var`;
    /// each failure exits with a message naming what failed.
    pub fn script(&self, var: &str, recurse: bool) -> String {
        let r = if recurse { "-R " } else { "" };
        let mut s = String::new();
        if let Some(o) = &self.owner {
            s.push_str(&format!(
                "chown {r}{} \"${var}\" || {{ echo 'cannot set owner {}' >&2; exit 73; }}\n",
                shell_quote(o),
                o.replace('\'', "")
            ));
        }
        if let Some(g) = &self.group {
            s.push_str(&format!(
                "chgrp {r}{} \"${var}\" || {{ echo 'cannot set group {}' >&2; exit 74; }}\n",
                shell_quote(g),
                g.replace('\'', "")
            ));
        }
        if let Some(m) = &self.mode {
            s.push_str(&format!(
                "chmod {r}{} \"${var}\" || {{ echo 'cannot set mode {}' >&2; exit 72; }}\n",
                shell_quote(&normalize_mode(m)),
                m.replace('\'', "")
            ));
        }
        s
    }
}

/// Makes a symbolic mode mean what Ansible means: a clause without `u`/`g`/`o`/`a`
/// applies to all, not filtered by the umask as `chmod` would.
pub fn normalize_mode(mode: &str) -> String {
    if mode.chars().all(|c| c.is_ascii_digit()) {
        return mode.to_string();
    }
    mode.split(',')
        .map(|c| {
            if c.starts_with(['+', '-', '=']) {
                format!("a{}", c)
            } else {
                c.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Computes the mode `chmod` would give a path now at `cur`, for change detection
/// before anything runs. Accepts octal (`"0644"`) and symbolic (`"u=rw,g+r,o-rwx"`).
pub fn apply_mode(cur: u32, spec: &str, is_dir: bool) -> Result<u32> {
    let spec = spec.trim();
    let bad = |why: &str| {
        Error::new(
            ErrorKind::ModuleArgs,
            format!("invalid mode {:?}: {}", spec, why),
        )
        .help(
            "give an octal mode as a quoted string (\"0644\") or a symbolic one (\"u=rw,g=r,o=r\")",
        )
    };
    if !spec.is_empty() && spec.chars().all(|c| c.is_ascii_digit()) {
        return u32::from_str_radix(spec, 8)
            .ok()
            .filter(|m| *m <= 0o7777)
            .ok_or_else(|| bad("not an octal mode"));
    }
    let mut mode = cur & 0o7777;
    for clause in spec.split(',') {
        let who_end = clause
            .find(['+', '-', '='])
            .ok_or_else(|| bad("expected +, - or ="))?;
        let who_s = &clause[..who_end];
        let mut who = 0u32; // bits of u, g, o classes: 4, 2, 1
        for c in who_s.chars() {
            who |= match c {
                'u' => 4,
                'g' => 2,
                'o' => 1,
                'a' => 7,
                _ => return Err(bad(&format!("unknown user class `{}`", c))),
            };
        }
        if who == 0 {
            who = 7;
        }
        let mut rest = &clause[who_end..];
        while let Some(op) = rest.chars().next() {
            if !matches!(op, '+' | '-' | '=') {
                return Err(bad(&format!("unexpected `{}`", op)));
            }
            rest = &rest[1..];
            let end = rest.find(['+', '-', '=']).unwrap_or(rest.len());
            let perms = &rest[..end];
            rest = &rest[end..];
            let mut bits = 0u32;
            for p in perms.chars() {
                bits |= match p {
                    'r' => class_bits(who, 4),
                    'w' => class_bits(who, 2),
                    'x' => class_bits(who, 1),
                    'X' if is_dir || mode & 0o111 != 0 => class_bits(who, 1),
                    'X' => 0,
                    's' => {
                        (if who & 4 != 0 { 0o4000 } else { 0 })
                            | (if who & 2 != 0 { 0o2000 } else { 0 })
                    }
                    't' => {
                        if who & 1 != 0 {
                            0o1000
                        } else {
                            0
                        }
                    }
                    'u' => class_bits(who, (mode >> 6) & 7),
                    'g' => class_bits(who, (mode >> 3) & 7),
                    'o' => class_bits(who, mode & 7),
                    _ => return Err(bad(&format!("unknown permission `{}`", p))),
                };
            }
            match op {
                '+' => mode |= bits,
                '-' => mode &= !bits,
                _ => {
                    let mut clear = class_bits(who, 7);
                    if who & 4 != 0 {
                        clear |= 0o4000;
                    }
                    if who & 2 != 0 {
                        clear |= 0o2000;
                    }
                    if who & 1 != 0 {
                        clear |= 0o1000;
                    }
                    // Like chmod: `=` keeps setuid/setgid on directories unless named.
                    if is_dir {
                        clear &= !0o6000;
                    }
                    mode = (mode & !clear) | bits;
                }
            }
        }
    }
    Ok(mode)
}

/// Spreads a 3-bit rwx value over the user classes in `who`.
fn class_bits(who: u32, rwx: u32) -> u32 {
    let mut b = 0;
    if who & 4 != 0 {
        b |= rwx << 6;
    }
    if who & 2 != 0 {
        b |= rwx << 3;
    }
    if who & 1 != 0 {
        b |= rwx;
    }
    b
}

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
    data: Vec<u8>,
    opts: &WriteOptions,
) -> Result<WriteOutcome> {
    let s = write_script(path, opts);
    let out = ctx.exec(s, Some(data)).await?;
    write_outcome(path, &out)
}

/// What a [`write_script`] run says: its error, or the backup made and the final state.
pub fn write_outcome(path: &str, out: &ExecOutput) -> Result<WriteOutcome> {
    if out.rc != 0 {
        let what = match out.rc {
            75 => format!("validation of the new {} failed", path),
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

/// The script of [`write_file`] (data on stdin), ending with one stat record of `path`.
pub fn write_script(path: &str, opts: &WriteOptions) -> String {
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
    s.push_str(&format!(
        "tmp=$(mktemp {}/.kk_tmp.XXXXXXXX) || {{ echo 'destination directory {} does not exist or is not writable' >&2; exit 70; }}\n",
        qpath(&dir),
        dir.replace('\'', "")
    ));
    s.push_str("trap 'rm -f \"$tmp\"' EXIT\n");
    match &opts.remote_src {
        Some(src) => s.push_str(&format!("cat -- {} > \"$tmp\" || exit 71\n", qpath(src))),
        None => s.push_str("cat > \"$tmp\" || exit 71\n"),
    }
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
pub fn file_diff(path: &str, before: &str, after: &str) -> super::FileDiff {
    super::FileDiff {
        before_header: path.to_string(),
        after_header: path.to_string(),
        before: before.to_string(),
        after: after.to_string(),
    }
}

/// Adds Ansible's attribute keys (`mode`, `owner`, `group`, `uid`, `gid`, `size`, `state`)
/// describing `st` to a result.
pub fn add_stat_keys(res: &mut super::ModuleResult, st: &RemoteStat) {
    if !st.exists {
        res.data.insert("state".into(), "absent".into());
        return;
    }
    res.data.insert("mode".into(), st.mode_str().into());
    res.data.insert("owner".into(), st.owner.clone().into());
    res.data.insert("group".into(), st.group.clone().into());
    res.data.insert("uid".into(), st.uid.into());
    res.data.insert("gid".into(), st.gid.into());
    res.data.insert("size".into(), st.size.into());
    res.data.insert("state".into(), st.kind.state_name().into());
}

/// Helpers shared by the file modules' tests: a context over the local connection.
#[cfg(test)]
pub(crate) mod testutil {
    use std::path::Path;
    use std::sync::Arc;

    use super::super::{ModuleContext, VarMap};
    use crate::connect::local::LocalConnection;
    use crate::template::{to_mj, Templar};

    /// A context on the local host, searching `dir` for controller files.
    pub fn ctx(dir: &Path, vars: serde_json::Value) -> ModuleContext {
        ModuleContext {
            host: "testhost".into(),
            conn: Arc::new(LocalConnection::new()),
            check_mode: false,
            diff: false,
            become_: None,
            env: Vec::new(),
            timeout: None,
            templar: Arc::new(Templar::new()),
            vars: to_mj(&vars),
            search_dirs: vec![dir.to_path_buf()],
            span: None,
            progress: None,
        }
    }

    /// Module arguments from a JSON object.
    pub fn args(v: serde_json::Value) -> VarMap {
        match v {
            serde_json::Value::Object(m) => m,
            other => panic!("test arguments must be an object, got {}", other),
        }
    }

    /// The permission bits of a local file.
    pub fn mode_of(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn symbolic_modes() {
        assert_eq!(apply_mode(0o644, "0755", false).unwrap(), 0o755);
        assert_eq!(apply_mode(0o644, "u+x", false).unwrap(), 0o744);
        assert_eq!(apply_mode(0o644, "a+x", false).unwrap(), 0o755);
        assert_eq!(apply_mode(0o777, "go-w", false).unwrap(), 0o755);
        assert_eq!(apply_mode(0o777, "u=rw,g=r,o=", false).unwrap(), 0o640);
        assert_eq!(apply_mode(0o644, "a+X", false).unwrap(), 0o644);
        assert_eq!(apply_mode(0o644, "a+X", true).unwrap(), 0o755);
        assert_eq!(apply_mode(0o600, "g=u", false).unwrap(), 0o660);
        assert_eq!(apply_mode(0o755, "u+s", false).unwrap(), 0o4755);
        assert_eq!(apply_mode(0o755, "+t", true).unwrap(), 0o1755);
        assert!(apply_mode(0o644, "q+x", false).is_err());
        assert!(apply_mode(0o644, "0999", false).is_err());
        assert_eq!(normalize_mode("+x,g-w"), "a+x,g-w");
    }

    #[test]
    fn paths() {
        assert_eq!(parent_dir("/etc/hosts"), "/etc");
        assert_eq!(parent_dir("/hosts"), "/");
        assert_eq!(parent_dir("hosts"), ".");
        assert_eq!(base_name("/a/b/"), "b");
        assert_eq!(qpath("~/x y"), "\"$HOME\"/'x y'");
    }

    #[tokio::test]
    async fn stat_and_write_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), serde_json::json!({}));
        let p = dir.path().join("f.txt");
        let ps = p.to_str().unwrap();
        let st = stat_path(&c, ps, true, true).await.unwrap();
        assert!(!st.exists);
        let opts = WriteOptions {
            attrs: Attrs {
                mode: Some("0640".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let w = write_file(&c, ps, b"hello\n".to_vec(), &opts)
            .await
            .unwrap();
        assert_eq!(w.stat.mode, 0o640);
        assert_eq!(w.stat.size, 6);
        let st = stat_path(&c, ps, true, true).await.unwrap();
        assert!(st.exists);
        assert_eq!(st.kind, FileKind::File);
        assert_eq!(
            st.checksum.as_deref(),
            Some(sha256_hex(b"hello\n").as_str())
        );
        assert_eq!(st.content.as_deref(), Some(&b"hello\n"[..]));
        assert_eq!(mode_of(&p), 0o640);
        // A rewrite without a mode keeps the old one; backup keeps the old content.
        let w = write_file(
            &c,
            ps,
            b"bye\n".to_vec(),
            &WriteOptions {
                backup: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(mode_of(&p), 0o640);
        let b = w.backup_file.expect("a backup");
        assert_eq!(std::fs::read(&b).unwrap(), b"hello\n");
        // A failing validation leaves the file alone and shows the command's output.
        let err = write_file(
            &c,
            ps,
            b"x".to_vec(),
            &WriteOptions {
                validate: Some("echo checking %s; false".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
        assert!(err.message.contains("validation"), "{err:?}");
        assert!(err.notes.iter().any(|n| n.contains("checking")), "{err:?}");
        assert_eq!(std::fs::read(&p).unwrap(), b"bye\n");
        // No temp files left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".kk_tmp"))
            .collect();
        assert!(left.is_empty());
    }
}
