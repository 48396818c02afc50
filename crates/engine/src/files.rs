//! Files on the controller written whole or not at all.
//!
//! One place for the temp-file-and-rename dance (`tempfile` does the naming and the cleanup),
//! so modules and the CLI replace files the same way.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Replaces `path` with `data` through a temporary file in the same directory and a rename,
/// so readers (and a crash) never see half a file; the directory must exist.
///
/// `mode`: the file's exact mode, in force from the file's creation (a key is never readable
/// by others, not even briefly); `None` creates it as `std::fs::write` does (0666 less the
/// umask). `sync`: flush the data to disk before the rename.
pub fn write_atomic(
    path: &Path,
    data: &[u8],
    mode: Option<u32>,
    sync: bool,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".kk_tmp.")
        .permissions(std::fs::Permissions::from_mode(mode.unwrap_or(0o666)))
        .tempfile_in(dir)?;
    tmp.write_all(data)?;
    if let Some(mode) = mode {
        // The umask may have cleared bits of the mode: set it exactly.
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes a tree of files (paths relative to its root) once, as `<parent>/<digest>/`
/// where the digest covers every path and content, and returns that directory; a tree
/// already there (marked complete) is reused. Written into a temporary directory, then
/// renamed, so a concurrent or interrupted writer never leaves half a tree where readers
/// look. A failure names the path it failed on.
///
/// Why: the binaries carry their playbooks and roles (`include_dir`) and the engine reads
/// projects from disk, where error messages can point at real files.
pub fn write_tree_once(
    parent: &Path,
    files: &[(std::path::PathBuf, &[u8])],
) -> Result<std::path::PathBuf, (std::path::PathBuf, std::io::Error)> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (path, contents) in files {
        hasher.update(path.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((contents.len() as u64).to_le_bytes());
        hasher.update(contents);
    }
    let digest = hex::encode(&hasher.finalize()[..8]);
    let root = parent.join(&digest);
    if root.join(".complete").is_file() {
        return Ok(root);
    }
    fn at(p: &Path) -> impl FnOnce(std::io::Error) -> (std::path::PathBuf, std::io::Error) {
        let p = p.to_path_buf();
        move |e| (p, e)
    }
    std::fs::create_dir_all(parent).map_err(at(parent))?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{}-", digest))
        // As `create_dir_all` makes it (0777 less the umask), not tempfile's private 0700.
        .permissions(std::fs::Permissions::from_mode(0o777))
        .tempdir_in(parent)
        .map_err(at(parent))?;
    for (path, contents) in files {
        let dst = tmp.path().join(path);
        if let Some(dir) = dst.parent() {
            std::fs::create_dir_all(dir).map_err(at(dir))?;
        }
        std::fs::write(&dst, contents).map_err(at(&dst))?;
    }
    std::fs::write(tmp.path().join(".complete"), b"").map_err(at(tmp.path()))?;
    match std::fs::rename(tmp.path(), &root) {
        Ok(()) => {
            // Renamed away: nothing is left to clean up.
            let _ = tmp.keep();
            Ok(root)
        }
        // Another writer finished the same tree first: use it.
        Err(_) if root.join(".complete").is_file() => Ok(root),
        Err(e) => Err((root, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn replaces_whole_with_mode_and_leaves_nothing_behind() {
        let d = tempfile::tempdir().unwrap();
        let key = d.path().join("a.key");
        write_atomic(&key, b"one", Some(0o600), true).unwrap();
        assert_eq!(std::fs::read(&key).unwrap(), b"one");
        assert_eq!(mode_of(&key), 0o600);
        write_atomic(&key, b"two", Some(0o644), false).unwrap();
        assert_eq!(std::fs::read(&key).unwrap(), b"two");
        assert_eq!(mode_of(&key), 0o644);
        let plain = d.path().join("b");
        write_atomic(&plain, b"x", None, false).unwrap();
        let std_written = d.path().join("c");
        std::fs::write(&std_written, b"x").unwrap();
        assert_eq!(mode_of(&plain), mode_of(&std_written));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 3);
        let e = write_atomic(&d.path().join("no/such/dir/f"), b"x", None, false).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
