//! What a command reads on its standard input: bytes kk holds, or a controller file sent
//! as the command takes it. An artifact of 100 MB going to 100 hosts is then read from
//! the page cache in small chunks per host, never held whole per host.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Chunk size for streaming a file to a command.
const CHUNK: usize = 256 * 1024;

/// A command's standard input.
#[derive(Debug, Clone)]
pub enum Input {
    /// Bytes held in memory: rendered templates, `content`, module data.
    Bytes(Vec<u8>),
    /// A controller file of `len` bytes, streamed. Exactly `len` bytes are sent: a file
    /// that grew meanwhile is cut there, one that shrank sends less (the host's write
    /// script then refuses the short copy).
    File {
        /// The file on the controller.
        path: Arc<PathBuf>,
        /// How many bytes to send.
        len: u64,
    },
}

impl From<Vec<u8>> for Input {
    fn from(b: Vec<u8>) -> Input {
        Input::Bytes(b)
    }
}

impl Input {
    /// How many bytes the command will be sent.
    pub fn len(&self) -> u64 {
        match self {
            Input::Bytes(b) => b.len() as u64,
            Input::File { len, .. } => *len,
        }
    }

    /// Whether nothing is sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Writes `prefix` (a become password or su's answers), then `input`, then closes `w`.
/// A reader that goes away early (the command exited without reading everything) is not
/// an error here: the command's exit status tells what happened.
pub async fn feed<W: AsyncWrite + Unpin>(
    w: &mut W,
    prefix: &[u8],
    input: Option<&Input>,
) -> std::io::Result<()> {
    if !prefix.is_empty() {
        w.write_all(prefix).await?;
    }
    match input {
        None => {}
        Some(Input::Bytes(b)) => w.write_all(b).await?,
        Some(Input::File { path, len }) => {
            let f = tokio::fs::File::open(path.as_path()).await?;
            tokio::io::copy_buf(&mut BufReader::with_capacity(CHUNK, f.take(*len)), w).await?;
        }
    }
    w.shutdown().await
}

/// What goes before a command's own input: the become password for sudo (when it will
/// ask), or su's answers.
pub fn become_prefix(b: Option<&super::Become>) -> Vec<u8> {
    match b {
        Some(b) if b.method == super::BecomeMethod::Su => super::su::input_prefix(b),
        Some(super::Become {
            password: Some(pw), ..
        }) => {
            let mut v = pw.as_bytes().to_vec();
            v.push(b'\n');
            v
        }
        _ => Vec::new(),
    }
}

/// The file a command can read as its standard input as it is (no prefix before it, and
/// it still has exactly its length): `None` means feed it through a pipe.
pub fn direct_file(input: Option<&Input>, prefix: &[u8]) -> Option<std::fs::File> {
    match input {
        Some(Input::File { path, len }) if prefix.is_empty() => open_exact(path, *len),
        _ => None,
    }
}

/// The file at `path` opened for reading, if it still has exactly `len` bytes: then it
/// can be a command's standard input as it is (the reader sees exactly those bytes).
/// `None` when it changed or cannot be opened (the caller streams it, cut at `len`).
fn open_exact(path: &std::path::Path, len: u64) -> Option<std::fs::File> {
    let f = std::fs::File::open(path).ok()?;
    (f.metadata().ok()?.len() == len).then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_is_sent_whole_after_the_prefix_and_cut_at_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..(CHUNK * 2 + 17)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let mut out = Vec::new();
        let input = Input::File {
            path: Arc::new(p.clone()),
            len: data.len() as u64,
        };
        feed(&mut out, b"pw\n", Some(&input)).await.unwrap();
        assert_eq!(&out[..3], b"pw\n");
        assert_eq!(&out[3..], &data[..]);
        let mut cut = Vec::new();
        let input = Input::File {
            path: Arc::new(p),
            len: 5,
        };
        feed(&mut cut, b"", Some(&input)).await.unwrap();
        assert_eq!(cut, &data[..5]);
    }
}
