//! Bounded command output: a command that prints without end must cost bounded memory.
//! Of each stream kk keeps the first and the last `keep` bytes and puts a marker saying
//! how many bytes were dropped in between (`KK_OUTPUT_KEEP` sets `keep`; 1 MiB by
//! default). Only commands run for the user (command, shell, raw, script) are bounded;
//! kk's own reads of file contents (fetch, stat, slurp) keep everything.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes kept at each end of a stream when `KK_OUTPUT_KEEP` is not set.
pub const DEFAULT_KEEP: usize = 1 << 20;

/// The environment variable that sets how many bytes are kept at each end of a command's
/// stdout and stderr: a number of bytes, optionally with a `K`, `M` or `G` suffix (powers
/// of 1024), e.g. `KK_OUTPUT_KEEP=4M`.
pub const KEEP_ENV: &str = "KK_OUTPUT_KEEP";

/// How many bytes of each end of a command's output are kept (read once per run).
pub fn keep() -> usize {
    static KEEP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *KEEP.get_or_init(|| {
        std::env::var(KEEP_ENV)
            .ok()
            .and_then(|v| parse_size(&v))
            .unwrap_or(DEFAULT_KEEP)
    })
}

/// `123`, `64K`, `4M`, `1G` (case-insensitive, an optional `iB`/`B`) as bytes; at least 1.
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let lower = s.to_ascii_lowercase();
    let lower = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (num, mult) = match lower.chars().last()? {
        'k' => (&lower[..lower.len() - 1], 1usize << 10),
        'm' => (&lower[..lower.len() - 1], 1 << 20),
        'g' => (&lower[..lower.len() - 1], 1 << 30),
        _ => (lower, 1),
    };
    num.trim()
        .parse::<usize>()
        .ok()?
        .checked_mul(mult)
        .filter(|n| *n > 0)
}

/// A stream's first and last `keep` bytes, and how many were dropped between them.
#[derive(Debug)]
pub struct Bounded {
    keep: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Bounded {
    /// An empty buffer keeping `keep` bytes at each end.
    pub fn new(keep: usize) -> Bounded {
        Bounded {
            keep,
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped: 0,
        }
    }

    /// Takes more of the stream.
    pub fn push(&mut self, mut data: &[u8]) {
        if self.head.len() < self.keep {
            let n = data.len().min(self.keep - self.head.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        if data.len() >= self.keep {
            self.dropped += (self.tail.len() + data.len() - self.keep) as u64;
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.keep..]);
            return;
        }
        let over = (self.tail.len() + data.len()).saturating_sub(self.keep);
        self.tail.drain(..over);
        self.dropped += over as u64;
        self.tail.extend(data);
    }

    /// The kept bytes: the head, the marker (when something was dropped), the tail.
    pub fn finish(self) -> Vec<u8> {
        let mut out = self.head;
        if self.dropped > 0 {
            out.extend_from_slice(marker(self.dropped, self.keep).as_bytes());
        }
        out.extend(self.tail);
        out
    }
}

/// What stands where output was dropped (`dropped` is a count, or a `printf` `%s` where
/// a script on the host trims output itself: command loop batches).
pub fn marker(dropped: impl std::fmt::Display, keep: usize) -> String {
    format!(
        "\n[kk: {} bytes of output dropped here; the first and last {} bytes are kept ({} sets how many)]\n",
        dropped, keep, KEEP_ENV
    )
}

/// Reads a stream to its end, keeping everything (`keep` is `None`) or its two ends.
pub async fn read_to_end<R: AsyncRead + Unpin>(
    r: &mut R,
    keep: Option<usize>,
) -> std::io::Result<Vec<u8>> {
    let Some(keep) = keep else {
        let mut buf = Vec::new();
        r.read_to_end(&mut buf).await?;
        return Ok(buf);
    };
    let mut b = Bounded::new(keep);
    // Small: one per stream of every running command (most print little).
    let mut chunk = vec![0u8; 8 * 1024];
    loop {
        let n = r.read(&mut chunk).await?;
        if n == 0 {
            return Ok(b.finish());
        }
        b.push(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounded(keep: usize, chunks: &[&[u8]]) -> Vec<u8> {
        let mut b = Bounded::new(keep);
        for c in chunks {
            b.push(c);
        }
        b.finish()
    }

    #[test]
    fn short_output_is_kept_whole() {
        assert_eq!(bounded(4, &[b"ab", b"cd"]), b"abcd");
        assert_eq!(bounded(4, &[b"abcdefgh"]), b"abcdefgh");
        assert_eq!(bounded(4, &[b""]), b"");
    }

    #[test]
    fn long_output_keeps_both_ends_and_counts_the_rest() {
        let want = |dropped: u64| {
            let mut w = b"abcd".to_vec();
            w.extend(marker(dropped, 4).as_bytes());
            w.extend(b"wxyz");
            w
        };
        assert_eq!(bounded(4, &[b"abcdefghwxyz"]), want(4));
        assert_eq!(bounded(4, &[b"abc", b"defgh", b"w", b"xyz"]), want(4));
        assert_eq!(
            bounded(4, &[b"abcd", b"0123456789", b"wx", b"yz"]),
            want(10)
        );
        let mut b = Bounded::new(4);
        for _ in 0..1000 {
            b.push(b"0123456789");
        }
        let out = b.finish();
        assert!(out.starts_with(b"0123\n[kk: 9992 bytes"), "{:?}", out);
        assert!(out.ends_with(b"6789"));
    }

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("4m"), Some(4 << 20));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("2MB"), Some(2 << 20));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }
}
