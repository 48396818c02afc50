//! What the file modules share: reading a path's state on the host and writing a file
//! atomically, each in one shell script through [`ModuleContext::exec`], so they work the
//! same over any [`crate::connect::Connection`].
//!
//! Nothing here touches the target with `std::fs`; checksums are computed on the host
//! with `sha256sum` & co. (no Python needed there).

//!
//! Split by concern: [`stat`] reads a path's state, [`attrs`] decides and applies mode
//! and owner, [`write`] writes a file atomically.

use sha1::Digest;

use crate::connect::{shell_quote, ExecOutput};
use crate::error::{Error, ErrorKind};

pub mod attrs;
pub mod stat;
#[cfg(test)]
mod tests;
pub mod write;

pub use attrs::{apply_mode, Attrs};
#[cfg(test)]
pub use stat::stat_path;
pub use stat::{
    add_stat_keys, parse_stats, stat_paths, stat_script_mixed, stat_var_script, Checksum, FileKind,
    RemoteStat, StatOptions,
};
pub use write::{file_diff, set_attrs, write_file, write_outcome, write_script, WriteOptions};

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
            no_log: false,
            become_: None,
            env: Vec::new(),
            timeout: None,
            templar: Arc::new(Templar::new()),
            vars: to_mj(&vars),
            search_dirs: vec![dir.to_path_buf()],
            span: None,
            progress: None,
            delegation: None,
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
