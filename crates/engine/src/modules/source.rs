//! What a module puts on a host: bytes it holds (a rendered template, `content`) or a
//! controller file. A file's length and digests are computed once per run and file (not
//! once per host: 32 hosts receiving the same 100 MB binary hash it once), and the file
//! itself is streamed to each host ([`crate::connect::Input::File`]), so the controller
//! never holds an artifact whole per host.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::Digest;

use crate::connect::Input;
use crate::error::{Error, ErrorKind, Result};

/// A controller file and its digests, as they were when first read in this run.
#[derive(Debug)]
pub struct SourceFile {
    /// The file.
    pub path: Arc<PathBuf>,
    /// Its length in bytes.
    pub len: u64,
    /// sha256, hex: what the host's copy is compared with.
    pub sha256: String,
    /// sha1, hex: Ansible's `checksum` result key.
    pub sha1: String,
    /// md5, hex: Ansible's `md5sum` result key.
    pub md5: String,
    /// The file is Ansible Vault text (then it is decrypted and sent as bytes).
    pub vaulted: bool,
}

/// Identifies one state of a file: a file replaced or rewritten during the run (an
/// earlier task regenerates it) is hashed again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    ino: u64,
    dev: u64,
    mtime_ns: i128,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: m.len(),
            ino: m.ino(),
            dev: m.dev(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        }
    }
}

type Slot = Arc<tokio::sync::OnceCell<Arc<SourceFile>>>;

/// The run's digests, by path and file state.
fn cache() -> &'static Mutex<HashMap<PathBuf, (Stamp, Slot)>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<PathBuf, (Stamp, Slot)>>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The controller file at `path` with its digests: computed on a blocking thread the
/// first time (hosts asking at the same time wait for that one computation), then
/// shared until the file changes.
pub async fn source_file(path: &Path) -> Result<Arc<SourceFile>> {
    let io_err = |e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read {}: {}", path.display(), e),
        )
    };
    let meta = std::fs::metadata(path).map_err(io_err)?;
    let stamp = Stamp::of(&meta);
    let slot: Slot = {
        let mut map = cache().lock().unwrap_or_else(|p| p.into_inner());
        match map.get(path) {
            Some((s, slot)) if *s == stamp => slot.clone(),
            _ => {
                let slot: Slot = Default::default();
                map.insert(path.to_path_buf(), (stamp, slot.clone()));
                slot
            }
        }
    };
    let owned = path.to_path_buf();
    slot.get_or_try_init(|| async move {
        tokio::task::spawn_blocking(move || hash_file(owned))
            .await
            .map_err(|e| Error::new(ErrorKind::Io, format!("hashing stopped: {}", e)))?
            .map_err(io_err)
    })
    .await
    .cloned()
}

/// Reads `path` once, feeding the three digests.
fn hash_file(path: PathBuf) -> std::io::Result<Arc<SourceFile>> {
    use std::io::Read;
    let mut f = std::fs::File::open(&path)?;
    let (mut s256, mut s1, mut m5) = (sha2::Sha256::new(), sha1::Sha1::new(), md5::Md5::new());
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    let mut head = Vec::new();
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if head.len() < 64 {
            head.extend_from_slice(&buf[..n.min(64)]);
        }
        s256.update(&buf[..n]);
        s1.update(&buf[..n]);
        m5.update(&buf[..n]);
        len += n as u64;
    }
    Ok(Arc::new(SourceFile {
        path: Arc::new(path),
        len,
        sha256: hex::encode(s256.finalize()),
        sha1: hex::encode(s1.finalize()),
        md5: hex::encode(m5.finalize()),
        vaulted: crate::vault::is_encrypted(&head),
    }))
}

/// What a put writes: bytes, or a controller file streamed to the host.
#[derive(Debug, Clone)]
pub enum Content {
    /// Held in memory (a rendered template, `content`, a decrypted vault file).
    Bytes(Arc<Vec<u8>>),
    /// A controller file, sent as it is read.
    File(Arc<SourceFile>),
}

impl Default for Content {
    fn default() -> Content {
        Content::Bytes(Arc::new(Vec::new()))
    }
}

impl From<Vec<u8>> for Content {
    fn from(b: Vec<u8>) -> Content {
        Content::Bytes(Arc::new(b))
    }
}

/// Files up to this size are shown in `--diff`; bigger ones are only said to differ (as
/// Ansible's `max_file_size_for_diff`, 100 KB by default).
const DIFF_MAX: u64 = 104_448;

impl Content {
    /// The controller file at `path` as content: streamed, or decrypted to bytes when it
    /// is Ansible Vault text (Ansible's `decrypt: true` default).
    pub async fn of_file(path: &Path) -> Result<Content> {
        let f = source_file(path).await?;
        if !f.vaulted {
            return Ok(Content::File(f));
        }
        let data = std::fs::read(path).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot read {}: {}", path.display(), e),
            )
        })?;
        Ok(crate::vault::decrypt_file(path, data)?.into())
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Content::Bytes(b) => b.len() as u64,
            Content::File(f) => f.len,
        }
    }

    /// sha256, hex.
    pub fn sha256(&self) -> String {
        match self {
            Content::Bytes(b) => super::remote::sha256_hex(b),
            Content::File(f) => f.sha256.clone(),
        }
    }

    /// sha1, hex.
    pub fn sha1(&self) -> String {
        match self {
            Content::Bytes(b) => super::remote::sha1_hex(b),
            Content::File(f) => f.sha1.clone(),
        }
    }

    /// md5, hex.
    pub fn md5(&self) -> String {
        match self {
            Content::Bytes(b) => super::remote::md5_hex(b),
            Content::File(f) => f.md5.clone(),
        }
    }

    /// What a command reading it on stdin is given (a file stays a file).
    pub fn input(&self) -> Input {
        match self {
            Content::Bytes(b) => Input::Bytes(b.as_ref().clone()),
            Content::File(f) => Input::File {
                path: f.path.clone(),
                len: f.len,
            },
        }
    }

    /// The text shown in a diff: the content itself, or a note for a big file.
    pub fn diff_text(&self) -> String {
        match self {
            Content::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Content::File(f) if f.len <= DIFF_MAX => std::fs::read(f.path.as_path())
                .map(|d| String::from_utf8_lossy(&d).into_owned())
                .unwrap_or_default(),
            Content::File(f) => format!(
                "<{} is {} bytes: too big to show>\n",
                f.path.display(),
                f.len
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn digests_are_computed_once_per_file_state() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        std::fs::write(&p, b"hello").unwrap();
        let a = source_file(&p).await.unwrap();
        let b = source_file(&p).await.unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the second ask reuses the first");
        assert_eq!(a.len, 5);
        assert_eq!(a.sha1, "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d");
        assert_eq!(a.md5, "5d41402abc4b2a76b9719d911017c592");
        assert_eq!(a.sha256, super::super::remote::sha256_hex(b"hello"));
        // Rewritten (new length): hashed again.
        std::fs::write(&p, b"hello again").unwrap();
        let c = source_file(&p).await.unwrap();
        assert_eq!(c.len, 11);
        assert_eq!(c.sha1, super::super::remote::sha1_hex(b"hello again"));
    }
}
