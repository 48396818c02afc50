//! `unarchive`: unpacks a tar (gz, xz, bz2 or plain) or zip archive into a directory on
//! the host, in one round trip.
//!
//! Idempotence by content, not by marker: the archive is unpacked into a temp directory
//! beside `dest` (with `extra_opts`, `include`, `exclude`, and `owner`/`group`/`mode`
//! applied), every entry is compared with `dest` (content with `cmp`, mode, owner, link
//! target), and only the entries that differ are moved into place (a rename each). So
//! the task is `changed` exactly when `dest` did not already hold what the archive
//! holds, whoever put it there, and nothing is rewritten when it did. A controller `src`
//! goes over stdin once per run; `remote_src` reads a file already on the host.
//!
//! Tools on the host: GNU tar (auto-detects gzip/bzip2/xz), `xz` for .xz (else python3's
//! lzma), `unzip` for zip (else python3's zipfile, without `extra_opts`).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{parse_with_file_attrs, FileAttrs, Flag, List, Text};
use super::lineinfile::attrs_of;
use super::plan::OneScript;
use super::remote::{self, qpath};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::connect::{shell_quote, Input};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnarchiveArgs {
    #[serde(default)]
    src: Option<Text>,
    #[serde(default)]
    dest: Option<Text>,
    #[serde(default)]
    remote_src: Flag,
    #[serde(default)]
    copy: Option<Flag>,
    #[serde(default)]
    extra_opts: List,
    #[serde(default)]
    creates: Option<Text>,
    #[serde(default)]
    include: List,
    #[serde(default)]
    exclude: List,
    #[serde(default)]
    list_files: Flag,
    // Accepted for compatibility; they change nothing here.
    #[serde(default)]
    keep_newer: Option<Flag>,
    #[serde(default)]
    validate_certs: Option<Flag>,
    #[serde(default)]
    decrypt: Option<Flag>,
    #[serde(default)]
    io_buffer_size: Option<Value>,
}

const VALID: &[&str] = &[
    "src",
    "dest",
    "remote_src",
    "copy",
    "extra_opts",
    "creates",
    "include",
    "exclude",
    "list_files",
    "keep_newer",
    "validate_certs",
    "decrypt",
    "io_buffer_size",
];

/// The arguments, parsed and checked without the host.
struct Checked {
    src: String,
    dest: String,
    remote_src: bool,
    args: UnarchiveArgs,
    attrs: FileAttrs,
}

fn check(raw: VarMap) -> Result<Checked> {
    let (a, attrs): (UnarchiveArgs, FileAttrs) = parse_with_file_attrs("unarchive", raw, VALID)?;
    let _ = (a.keep_newer, a.validate_certs, a.decrypt, &a.io_buffer_size);
    let required = |v: &Option<Text>, name: &str| {
        v.as_ref()
            .map(|t| t.as_str().to_string())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::ModuleArgs,
                    format!("unarchive: `{}` is required", name),
                )
            })
    };
    let src = required(&a.src, "src")?;
    let dest = required(&a.dest, "dest")?;
    if src.contains("://") {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("unarchive: a URL as `src` is not supported ({})", src),
        )
        .help("download it first with `get_url` (checksum-verified), then unarchive with `remote_src: true`"));
    }
    Ok(Checked {
        src,
        dest,
        remote_src: a.remote_src.0 || a.copy == Some(Flag(false)),
        args: a,
        attrs,
    })
}

/// Unpacks archives.
pub struct Unarchive;

/// The archive format, from the name or the first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Anything GNU tar reads (it detects gzip/bzip2 by itself).
    Tar,
    /// tar.xz: needs `xz` (or python3) on the host.
    TarXz,
    /// zip.
    Zip,
}

impl Format {
    fn handler(self) -> &'static str {
        match self {
            Format::Tar => "TgzArchive",
            Format::TarXz => "TarXzArchive",
            Format::Zip => "ZipArchive",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Format::Tar => "tar",
            Format::TarXz => "txz",
            Format::Zip => "zip",
        }
    }
}

/// Picks the format from magic bytes when known, else from the file name.
fn detect(name: &str, head: Option<&[u8]>) -> Option<Format> {
    if let Some(h) = head {
        if h.starts_with(b"PK\x03\x04") || h.starts_with(b"PK\x05\x06") {
            return Some(Format::Zip);
        }
        if h.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            return Some(Format::TarXz);
        }
        if h.starts_with(&[0x1f, 0x8b]) || h.starts_with(b"BZh") {
            return Some(Format::Tar);
        }
        if h.len() > 262 && &h[257..262] == b"ustar" {
            return Some(Format::Tar);
        }
    }
    let n = name.to_ascii_lowercase();
    if n.ends_with(".zip") {
        Some(Format::Zip)
    } else if n.ends_with(".tar.xz") || n.ends_with(".txz") {
        Some(Format::TarXz)
    } else if [".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz2", ".tbz"]
        .iter()
        .any(|e| n.ends_with(e))
    {
        Some(Format::Tar)
    } else {
        None
    }
}

#[async_trait]
impl OneScript for Unarchive {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    /// Runs the unpack script (one round trip): unpack aside, compare, move what differs; with `report_only` nothing is moved.
    async fn script(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let (src, dest, remote_src, a) = (c.src, c.dest, c.remote_src, c.args);
        let (data, format, label) = if remote_src {
            (None, detect(&src, None), src.clone())
        } else {
            if let Some(pending) = ctx.check_mode_pending_source("unarchive", &src, &dest) {
                return Ok(pending);
            }
            let path = ctx.find_file("files", &src)?;
            let cannot_read = |e: std::io::Error| {
                Error::new(
                    ErrorKind::Io,
                    format!("unarchive: cannot read {}: {}", path.display(), e),
                )
                .at_opt(ctx.span.as_ref())
            };
            // The archive is streamed to the host; only its start is read here, to tell
            // its format.
            let mut head = Vec::with_capacity(512);
            let len = {
                use std::io::Read;
                let f = std::fs::File::open(&path).map_err(cannot_read)?;
                let len = f.metadata().map_err(cannot_read)?.len();
                f.take(512).read_to_end(&mut head).map_err(cannot_read)?;
                len
            };
            let f = detect(&src, Some(&head));
            if f.is_none() {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!(
                        "unarchive: {} is not a tar (gz, xz, bz2) or zip archive",
                        path.display()
                    ),
                )
                .at_opt(ctx.span.as_ref()));
            }
            let data = Input::File {
                path: std::sync::Arc::new(path.clone()),
                len,
            };
            (Some(data), f, path.display().to_string())
        };
        let attrs = attrs_of(&c.attrs);
        let mut s = String::new();
        s.push_str(&format!(
            "dest={}\nfmt={}\ncheck={}\nlist={}\n",
            qpath(dest.trim_end_matches('/')),
            format.map(Format::name).unwrap_or(""),
            if report_only { "1" } else { "" },
            if a.list_files.0 { "1" } else { "" },
        ));
        if let Some(c) = &a.creates {
            s.push_str(&format!(
                "if [ -e {} ]; then echo result=creates; exit 0; fi\n",
                qpath(c.as_str())
            ));
        }
        s.push_str(&PREPARE.replace("#kk-sweep\n", &remote::write::sweep_stale("parent")));
        match &data {
            // A short archive (kk stopped mid-send) is refused, never unpacked.
            Some(d) => s.push_str(&format!(
                "cat > \"$arch\" || exit 71\n[ \"$(wc -c < \"$arch\")\" -eq {} ] || {{ echo 'the archive did not all arrive (the sender stopped)' >&2; exit 71; }}\n",
                d.len()
            )),
            None => s.push_str(&format!(
                "src={}\n[ -f \"$src\" ] || {{ echo \"source $src does not exist on the host\" >&2; exit 91; }}\nln -s -- \"$(readlink -f -- \"$src\")\" \"$arch.l\" 2>/dev/null || exit 71\narch=\"$arch.l\"\n",
                qpath(&src)
            )),
        }
        if format.is_none() {
            s.push_str(DETECT);
        }
        let extra: String = a
            .extra_opts
            .0
            .iter()
            .map(|o| format!(" {}", shell_quote(o)))
            .collect();
        let mut members = String::new();
        for m in &a.include.0 {
            members.push_str(&format!(" {}", shell_quote(m)));
        }
        let mut tar_ex = String::new();
        let mut zip_ex = String::new();
        if !a.exclude.0.is_empty() {
            zip_ex.push_str(" -x");
        }
        for e in &a.exclude.0 {
            tar_ex.push_str(&format!(" --exclude={}", shell_quote(e)));
            zip_ex.push_str(&format!(" {}", shell_quote(e)));
        }
        s.push_str(&format!(
            r#"case "$fmt" in
  tar) tar -x -f "$arch" -C "$work"{extra}{tar_ex} --{members} || exit 92 ;;
  txz)
    if command -v xz >/dev/null 2>&1; then xz -dc < "$arch"
    else python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$arch"
    fi | tar -x -f - -C "$work"{extra}{tar_ex} --{members} || exit 92 ;;
  zip)
    if command -v unzip >/dev/null 2>&1; then unzip -q -o{extra} "$arch"{members}{zip_ex} -d "$work" || exit 92
    else python3 -m zipfile -e "$arch" "$work" || exit 92
    fi ;;
  *) echo "cannot tell the archive format of $arch" >&2; exit 93 ;;
esac
"#
        ));
        s.push_str("p=\"$work\"\n");
        s.push_str(&attrs.script("p", true));
        s.push_str(COMPARE);
        let out = ctx.exec_input(s, data).await?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.rc != 0 {
            let what = match out.rc {
                90 => format!(
                    "unarchive: destination {} is not an existing directory",
                    dest
                ),
                91 => format!("unarchive: source {} does not exist on the host", src),
                92 => format!("unarchive: extracting {} failed", label),
                93 => format!("unarchive: {} is not a tar or zip archive", label),
                _ => format!("unarchive: cannot unpack {} into {}", label, dest),
            };
            return Err(remote::remote_error(&what, &out).at_opt(ctx.span.as_ref()));
        }
        let mut res = ModuleResult::default();
        if text.lines().any(|l| l == "result=creates") {
            res.skipped = true;
            res.msg = Some(format!(
                "skipped, since {} exists",
                a.creates.clone().unwrap_or_default().0
            ));
            return Ok(res);
        }
        let changed_files: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("changed="))
            .map(|f| Value::String(f.to_string()))
            .collect();
        res.changed = !changed_files.is_empty();
        let fmt = text
            .lines()
            .find_map(|l| l.strip_prefix("fmt="))
            .and_then(|f| match f {
                "tar" => Some(Format::Tar),
                "txz" => Some(Format::TarXz),
                "zip" => Some(Format::Zip),
                _ => None,
            })
            .or(format);
        res.data.insert("dest".into(), dest.clone().into());
        res.data.insert("src".into(), label.into());
        if let Some(f) = fmt {
            res.data.insert("handler".into(), f.handler().into());
        }
        res.data
            .insert("changed_files".into(), Value::Array(changed_files));
        if a.list_files.0 {
            let files: Vec<Value> = text
                .lines()
                .filter_map(|l| l.strip_prefix("file="))
                .map(|f| Value::String(f.to_string()))
                .collect();
            res.data.insert("files".into(), Value::Array(files));
        }
        Ok(res)
    }
}

/// Checks `dest`, makes the work directory and the archive's temp name beside it (on the
/// same file system, so entries are renamed into place). In check mode nothing is moved, so
/// the work directory goes to the system's temp directory and `dest`'s parent is untouched.
const PREPARE: &str = r#"[ -d "$dest" ] || { echo "destination $dest is not an existing directory" >&2; exit 90; }
parent=$(dirname -- "$dest")
if [ -n "$check" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/.kk_unarchive-$$-XXXXXXXX") || exit 70
else
#kk-sweep
  work=$(mktemp -d "$parent/.kk_unarchive-$$-XXXXXXXX" 2>/dev/null || mktemp -d "$dest/../.kk_unarchive-$$-XXXXXXXX") || exit 70
fi
arch="$work.archive"
trap 'rm -rf "$work" "$arch" "$arch.l" "$arch.list"' EXIT
trap '' PIPE
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
"#;

/// Tells the format of a host-side archive from its first bytes.
const DETECT: &str = r#"magic=$(od -An -tx1 -N6 "$arch" | tr -d ' \n')
case "$magic" in
  504b0304*|504b0506*) fmt=zip ;;
  fd377a585a00) fmt=txz ;;
  *) fmt=tar ;;
esac
echo "fmt=$fmt"
"#;

/// Compares the unpacked tree with `dest` and moves the differing entries into place.
const COMPARE: &str = r#"cd "$work" || exit 70
find . -mindepth 1 | sed 's|^\./||' | sort > "$arch.list"
while IFS= read -r f; do
  [ -n "$list" ] && echo "file=$f"
  t="$dest/$f"
  if [ -L "$f" ]; then
    [ -L "$t" ] && [ "$(readlink -- "$f")" = "$(readlink -- "$t")" ] && continue
  elif [ -d "$f" ]; then
    [ -d "$t" ] && [ ! -L "$t" ] && [ "$(stat -c %a:%u:%g -- "$f")" = "$(stat -c %a:%u:%g -- "$t")" ] && continue
  else
    [ -f "$t" ] && [ ! -L "$t" ] && [ "$(stat -c %a:%u:%g -- "$f")" = "$(stat -c %a:%u:%g -- "$t")" ] && cmp -s -- "$f" "$t" && continue
  fi
  echo "changed=$f"
  [ -n "$check" ] && continue
  if [ -d "$f" ] && [ ! -L "$f" ]; then
    if [ -d "$t" ] && [ ! -L "$t" ]; then
      chmod "$(stat -c %a -- "$f")" "$t" && chown "$(stat -c %u:%g -- "$f")" "$t" || exit 94
    else
      rm -f -- "$t"; mkdir -p -- "$t" && chmod "$(stat -c %a -- "$f")" "$t" && chown "$(stat -c %u:%g -- "$f")" "$t" || exit 94
    fi
  else
    mkdir -p -- "$(dirname -- "$t")" || exit 94
    [ -d "$t" ] && [ ! -L "$t" ] && { rm -rf -- "$t" || exit 94; }
    mv -f -- "$f" "$t" || exit 94
  fi
done < "$arch.list"
rm -f "$arch.list"
cd / || true
"#;

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::*;
    use super::*;
    use crate::modules::plan::{Planned, Scripted};
    use crate::modules::Module;
    use std::process::Command;

    #[test]
    fn formats() {
        assert_eq!(detect("a.tgz", None), Some(Format::Tar));
        assert_eq!(detect("a.tar.xz", None), Some(Format::TarXz));
        assert_eq!(detect("a.zip", None), Some(Format::Zip));
        assert_eq!(detect("a.bin", None), None);
        assert_eq!(detect("a.bin", Some(b"PK\x03\x04rest")), Some(Format::Zip));
        assert_eq!(detect("x.zip", Some(&[0x1f, 0x8b, 8])), Some(Format::Tar));
    }

    #[tokio::test]
    async fn unpacks_idempotently_with_strip_components() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src/pkg-1.0");
        std::fs::create_dir_all(src.join("bin")).unwrap();
        std::fs::write(src.join("bin/tool"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::write(src.join("README"), "read me\n").unwrap();
        let tgz = dir.path().join("files/pkg.tar.gz");
        std::fs::create_dir_all(tgz.parent().unwrap()).unwrap();
        let st = Command::new("tar")
            .arg("-czf")
            .arg(&tgz)
            .arg("-C")
            .arg(dir.path().join("src"))
            .arg("pkg-1.0")
            .status()
            .unwrap();
        assert!(st.success());
        let dest = dir.path().join("dest");
        std::fs::create_dir_all(&dest).unwrap();
        let c = ctx(dir.path(), serde_json::json!({}));
        let a = || {
            args(serde_json::json!({
                "src": "pkg.tar.gz",
                "dest": dest.to_str().unwrap(),
                "extra_opts": ["--strip-components=1"],
            }))
        };
        // Check mode reports the change and touches neither dest nor its parent (no work
        // directory beside dest: the parent's mtime stays).
        let mut check = ctx(dir.path(), serde_json::json!({}));
        check.check_mode = true;
        let parent_mtime = || std::fs::metadata(dir.path()).unwrap().modified().unwrap();
        let before = parent_mtime();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let r = Planned(Scripted(Unarchive)).run(&check, a()).await.unwrap();
        assert!(r.changed, "{:?}", r);
        assert_eq!(parent_mtime(), before, "check mode wrote beside dest");
        assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 0);
        let r = Planned(Scripted(Unarchive)).run(&c, a()).await.unwrap();
        assert!(r.changed, "{:?}", r);
        assert_eq!(
            std::fs::read_to_string(dest.join("bin/tool")).unwrap(),
            "#!/bin/sh\necho hi\n"
        );
        let r = Planned(Scripted(Unarchive)).run(&c, a()).await.unwrap();
        assert!(!r.changed, "second run must not change: {:?}", r);
        // A changed file is put back, and only it.
        std::fs::write(dest.join("README"), "edited\n").unwrap();
        let r = Planned(Scripted(Unarchive)).run(&c, a()).await.unwrap();
        assert!(r.changed);
        assert_eq!(r.data["changed_files"], serde_json::json!(["README"]));
        assert_eq!(
            std::fs::read_to_string(dest.join("README")).unwrap(),
            "read me\n"
        );
        // No temp directories left beside dest.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".kk_"))
            .collect();
        assert!(left.is_empty(), "{:?}", left);
        // A controller file an earlier task would make (absolute path, missing): check mode
        // reports the change, a real run fails naming it.
        let missing = dir.path().join("not-downloaded-yet.tgz");
        let m = || {
            args(serde_json::json!({
                "src": missing.to_str().unwrap(),
                "dest": dest.to_str().unwrap(),
            }))
        };
        let r = Planned(Scripted(Unarchive)).run(&check, m()).await.unwrap();
        assert!(
            r.changed
                && r.msg
                    .as_deref()
                    .unwrap_or("")
                    .contains("not on the controller yet"),
            "{r:?}"
        );
        let err = Planned(Scripted(Unarchive)).run(&c, m()).await.unwrap_err();
        assert!(err.message.contains("not-downloaded-yet.tgz"), "{err:?}");
        // A missing dest is an error that says so.
        let err = Planned(Scripted(Unarchive))
            .run(
                &c,
                args(serde_json::json!({"src": "pkg.tar.gz", "dest": "/nonexistent/x"})),
            )
            .await
            .unwrap_err();
        assert!(err.message.contains("not an existing directory"), "{err:?}");
    }

    #[tokio::test]
    async fn unpacks_zip_with_include_and_creates() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("d")).unwrap();
        std::fs::write(src.join("d/a.txt"), "a\n").unwrap();
        std::fs::write(src.join("b.txt"), "b\n").unwrap();
        std::fs::create_dir_all(dir.path().join("files")).unwrap();
        let zip = dir.path().join("files/x.zip");
        let st = Command::new("python3")
            .args(["-m", "zipfile", "-c"])
            .arg(&zip)
            .arg("d")
            .arg("b.txt")
            .current_dir(&src)
            .status()
            .unwrap();
        assert!(st.success());
        let dest = dir.path().join("dest");
        std::fs::create_dir_all(&dest).unwrap();
        let c = ctx(dir.path(), serde_json::json!({}));
        let d = dest.to_str().unwrap();
        let r = Planned(Scripted(Unarchive))
            .run(
                &c,
                args(serde_json::json!({"src": "x.zip", "dest": d, "include": ["b.txt"]})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(r.data["handler"], "ZipArchive");
        assert!(dest.join("b.txt").exists() && !dest.join("d").exists());
        let r = Planned(Scripted(Unarchive))
            .run(
                &c,
                args(serde_json::json!({"src": "x.zip", "dest": d, "list_files": true})),
            )
            .await
            .unwrap();
        assert_eq!(r.data["changed_files"], serde_json::json!(["d", "d/a.txt"]));
        assert_eq!(
            r.data["files"],
            serde_json::json!(["b.txt", "d", "d/a.txt"])
        );
        let creates = dest.join("b.txt");
        let r = Planned(Scripted(Unarchive))
            .run(
                &c,
                args(serde_json::json!({"src": "x.zip", "dest": d, "creates": creates.to_str().unwrap()})),
            )
            .await
            .unwrap();
        assert!(r.skipped && !r.changed);
    }

    #[test]
    fn validate_at_load() {
        let check = |a: Value| Unarchive.validate(a.as_object().unwrap());
        let ok = serde_json::json!({"src": "/tmp/a.tgz", "dest": "/opt", "remote_src": "yes",
            "mode": "0755", "extra_opts": "--strip-components=1"});
        assert!(check(ok).is_ok());
        let e = check(serde_json::json!({"src": "a.tgz", "dest": "/opt", "rmote_src": true}))
            .unwrap_err();
        assert!(e.message.contains("unarchive") && e.message.contains("rmote_src"));
        assert!(e.help.unwrap().contains("src, dest"));
        let e = check(serde_json::json!({"src": "a.tgz"})).unwrap_err();
        assert!(e.message.contains("unarchive: `dest` is required"));
        let e = check(serde_json::json!({"src": "https://x/a.tgz", "dest": "/opt"})).unwrap_err();
        assert!(e.message.contains("URL"));
    }
}
