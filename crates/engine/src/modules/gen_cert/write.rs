//! `gen_cert`'s file writing: keys and certificates replaced atomically, with their mode
//! from the start.

use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// Writes `data` to `path` through a temp file in the same directory and a rename,
/// with `mode` from the start (a key is never readable by others, not even briefly).
pub(super) fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |what: &str, e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("gen_cert: cannot {} {}: {}", what, path.display(), e),
        )
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{}.kk_tmp{}", name, std::process::id()));
    let res = (|| {
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        // The umask may have cleared bits of 0644; set the mode exactly.
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        std::fs::rename(&tmp, path)
    })();
    res.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail("write", e)
    })
}
