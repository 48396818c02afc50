//! Reading a path's state on the host: one shell function prints `key=value` records
//! for each path (type, mode, owner, checksum, content …), parsed into [`RemoteStat`].

use super::super::{ModuleContext, ModuleResult};
use super::{qpath, remote_error};
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
    /// The path asked about, as given (shown by `Debug`, in test failures).
    #[allow(dead_code)]
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
pub fn stat_script(paths: &[&str], opts: StatOptions) -> String {
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
    let mut prev: Option<(&str, bool)> = None;
    for &(p, follow) in items {
        let q = qpath(p);
        if prev == Some((p, false)) && follow {
            // The same path followed: only a link reads differently (one stat fewer).
            s.push_str(&format!(
                "echo '==kk-record=='\nif [ -L {q} ]; then KK_L=-L; kk_stat {q}; else echo {SAME}; fi\n"
            ));
        } else {
            s.push_str(&format!(
                "KK_L={}\necho '==kk-record=='\nkk_stat {q}\n",
                if follow { "-L" } else { "" },
            ));
        }
        prev = Some((p, follow));
    }
    s
}

/// A record that reads as the one before it (the same path, not a link).
const SAME: &str = "same_as_previous=1";

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
        if line == SAME && records.len() >= 2 {
            let before = records[records.len() - 2].clone();
            if let Some(last) = records.last_mut() {
                *last = RemoteStat {
                    path: std::mem::take(&mut last.path),
                    ..before
                };
            }
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
#[cfg(test)]
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

/// Adds Ansible's attribute keys (`mode`, `owner`, `group`, `uid`, `gid`, `size`, `state`)
/// describing `st` to a result.
pub fn add_stat_keys(res: &mut ModuleResult, st: &RemoteStat) {
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
