//! The phase playbooks (`crates/capkk/playbooks/`) and what they share with `kk create
//! cluster` — the repository's `roles/` and `builtin/` (the artifact manifest, the version
//! matrices) — compiled into the binary, so the controller needs no checkout on disk.
//!
//! They are written out once per process under `<workdir>/bundle/<digest>/` (a private
//! directory: the workdir is made 0700), where the engine reads them like any project:
//! error messages point at real files, and the digest covers every embedded file, so
//! another build never reuses a stale copy.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use include_dir::{include_dir, Dir, DirEntry};

static PLAYBOOKS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/playbooks");
static ROLES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../roles");
static BUILTIN: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../builtin");

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
    for (top, dir) in [
        ("playbooks", &PLAYBOOKS),
        ("roles", &ROLES),
        ("builtin", &BUILTIN),
    ] {
        walk(dir, top, &mut out);
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The bundle directories written by this process, by workdir: each is written once.
static EXTRACTED: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// The bundle under `workdir`, written on first use in this process (and reused when an
/// earlier process of the same build left it complete).
pub fn extract(workdir: &Path) -> std::io::Result<PathBuf> {
    let mut done = EXTRACTED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, root)) = done.iter().find(|(w, _)| w == workdir) {
        return Ok(root.clone());
    }
    let root = kk_engine::files::write_tree_once(&workdir.join("bundle"), &files())
        .map_err(|(what, e)| std::io::Error::new(e.kind(), format!("{}: {}", what.display(), e)))?;
    done.push((workdir.to_path_buf(), root.clone()));
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_every_phase_and_the_shared_roles() {
        let dir = tempfile::tempdir().unwrap();
        let root = extract(dir.path()).unwrap();
        for phase in crate::machine::Phase::BUILD
            .iter()
            .chain([crate::machine::Phase::Reset].iter())
        {
            let p = root.join(format!("playbooks/{}.yaml", phase.as_str()));
            assert!(p.is_file(), "{}", p.display());
        }
        assert!(root.join("roles/defaults/tasks/main.yaml").is_file());
        assert!(root.join("builtin/artifacts.yaml").is_file());
        assert_eq!(extract(dir.path()).unwrap(), root, "written once");
    }
}
