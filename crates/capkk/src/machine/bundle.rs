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
use sha2::{Digest, Sha256};

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
    let files = files();
    let mut hasher = Sha256::new();
    for (path, contents) in &files {
        hasher.update(path.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((contents.len() as u64).to_le_bytes());
        hasher.update(contents);
    }
    let digest = hex::encode(&hasher.finalize()[..8]);
    let parent = workdir.join("bundle");
    let root = parent.join(&digest);
    if !root.join(".complete").is_file() {
        std::fs::create_dir_all(&parent)?;
        // Written into a temporary directory, then renamed: a concurrent or interrupted
        // writer never leaves half a bundle where the engine reads.
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}-", digest))
            .tempdir_in(&parent)?;
        for (path, contents) in &files {
            let dst = tmp.path().join(path);
            if let Some(dir) = dst.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&dst, contents)?;
        }
        std::fs::write(tmp.path().join(".complete"), b"")?;
        match std::fs::rename(tmp.path(), &root) {
            Ok(()) => {
                let _ = tmp.keep();
            }
            Err(_) if root.join(".complete").is_file() => {}
            Err(e) => return Err(e),
        }
    }
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
