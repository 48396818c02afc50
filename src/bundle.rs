//! The bundled flow: `builtin/`, `playbooks/` and `roles/` compiled into the binary, so the
//! built-in commands work from any directory.
//!
//! Before a run they are written out once under `<workdir>/bundle/<digest>/`, where the engine
//! reads them like any project on disk: error messages point at real files a user can open,
//! and `kk run <that dir>/playbooks/x.yaml` reproduces a built-in command exactly. The digest
//! covers every embedded file, so a different kk build never reuses a stale copy.

use std::path::{Path, PathBuf};

use include_dir::{include_dir, Dir, DirEntry};
use kk_engine::{Error, ErrorKind};

static BUILTIN: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/builtin");
static PLAYBOOKS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/playbooks");
static ROLES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/roles");

/// The three embedded trees with the directory name each is written to.
fn trees() -> [(&'static str, &'static Dir<'static>); 3] {
    [
        ("builtin", &BUILTIN),
        ("playbooks", &PLAYBOOKS),
        ("roles", &ROLES),
    ]
}

/// Every embedded file as (path under the bundle root, contents), in path order.
fn files() -> Vec<(PathBuf, &'static [u8])> {
    fn walk(dir: &'static Dir<'static>, top: &str, out: &mut Vec<(PathBuf, &'static [u8])>) {
        for entry in dir.entries() {
            match entry {
                DirEntry::Dir(d) => walk(d, top, out),
                DirEntry::File(f) => out.push((Path::new(top).join(f.path()), f.contents())),
            }
        }
    }
    let mut out = Vec::new();
    for (top, dir) in trees() {
        walk(dir, top, &mut out);
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// One embedded file by its path under the bundle root (e.g. `builtin/config/v1.34.yaml`).
pub fn file(path: &str) -> Option<&'static str> {
    let (top, rest) = path.split_once('/')?;
    let (_, dir) = trees().into_iter().find(|(name, _)| *name == top)?;
    dir.get_file(rest)?.contents_utf8()
}

/// The names of the embedded files directly in `dir` (e.g. `builtin/config`), sorted.
pub fn list(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = files()
        .into_iter()
        .filter_map(|(p, _)| {
            let parent = p.parent()?.to_str()?;
            (parent == dir).then(|| p.file_name()?.to_str().map(str::to_string))?
        })
        .collect();
    names.sort();
    names
}

/// Writes the bundle under `<workdir>/bundle/<digest>/` unless it is already there, and
/// returns that directory.
pub fn extract(workdir: &Path) -> Result<PathBuf, Error> {
    kk_engine::files::write_tree_once(&workdir.join("bundle"), &files()).map_err(|(what, e)| {
        Error::new(
            ErrorKind::Io,
            format!(
                "cannot write the bundled playbooks to {}: {}",
                what.display(),
                e
            ),
        )
        .help("check that --workdir points at a writable directory")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_once_and_reuses() {
        let dir = tempfile::tempdir().unwrap();
        let a = extract(dir.path()).unwrap();
        assert!(a.join("roles/defaults/tasks/main.yaml").is_file());
        let b = extract(dir.path()).unwrap();
        assert_eq!(a, b);
        let entries = std::fs::read_dir(dir.path().join("bundle"))
            .unwrap()
            .count();
        assert_eq!(entries, 1, "no temporary directory is left behind");
    }

    #[test]
    fn reads_single_files() {
        assert!(file("roles/defaults/tasks/main.yaml").is_some());
        assert!(file("roles/nope.yaml").is_none());
        assert!(file("nope").is_none());
    }
}
