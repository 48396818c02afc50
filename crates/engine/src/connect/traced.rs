//! `-vvv` diagnostics at the connection boundary: every command a host is sent, who runs
//! it, how long it took and what it returned, as `tracing` events (shown only when the
//! binary's subscriber asks for debug level).
//!
//! The script text and its input and output are never recorded: a connection cannot
//! tell a `no_log` task's command from another, and become passwords travel on stdin.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::{Become, Connection, ExecOutput, ExecRequest, Transport};
use crate::error::Result;

/// A connection that reports what passes through it, and counts it ([`Transport`]).
pub struct Traced {
    host: String,
    kind: &'static str,
    inner: Arc<dyn Connection>,
    commands: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

impl Traced {
    /// Wraps `inner`, the `kind` (`local`, `ssh`) connection of `host`.
    pub fn wrap(host: &str, kind: &'static str, inner: Arc<dyn Connection>) -> Arc<dyn Connection> {
        Arc::new(Traced {
            host: host.to_string(),
            kind,
            inner,
            commands: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
        })
    }
}

#[async_trait]
impl Connection for Traced {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput> {
        let t0 = Instant::now();
        let out = self.inner.exec(req).await;
        let ms = t0.elapsed().as_millis() as u64;
        self.count(
            req.script.len() as u64 + req.stdin.as_ref().map_or(0, super::Input::len),
            out.as_ref()
                .map_or(0, |o| (o.stdout.len() + o.stderr.len()) as u64),
        );
        let become_user = req.become_.as_ref().map(|b| b.user.as_str());
        match &out {
            Ok(o) => tracing::debug!(
                host = %self.host,
                connection = self.kind,
                become_user,
                script_bytes = req.script.len(),
                stdin_bytes = req.stdin.as_ref().map_or(0, super::Input::len),
                rc = o.rc,
                stdout_bytes = o.stdout.len(),
                stderr_bytes = o.stderr.len(),
                ms,
                "command"
            ),
            Err(e) => tracing::debug!(
                host = %self.host,
                connection = self.kind,
                become_user,
                ms,
                error = %e.message,
                "command failed to run"
            ),
        }
        out
    }

    async fn fetch(&self, path: &str, become_: Option<&Become>) -> Result<Vec<u8>> {
        let t0 = Instant::now();
        let out = self.inner.fetch(path, become_).await;
        self.count(
            path.len() as u64,
            out.as_ref().map_or(0, |d| d.len() as u64),
        );
        tracing::debug!(
            host = %self.host,
            path,
            bytes = out.as_ref().map_or(0, Vec::len),
            ok = out.is_ok(),
            ms = t0.elapsed().as_millis() as u64,
            "fetch"
        );
        out
    }

    async fn tunnel(&self) -> Result<Option<super::Tunnel>> {
        self.inner.tunnel().await
    }

    fn is_remote(&self) -> bool {
        self.inner.is_remote()
    }

    async fn close(&self) {
        self.inner.close().await;
        tracing::debug!(host = %self.host, connection = self.kind, "closed");
    }

    fn transport(&self) -> Transport {
        Transport {
            commands: self.commands.load(Ordering::Relaxed),
            bytes_sent: self.sent.load(Ordering::Relaxed),
            bytes_received: self.received.load(Ordering::Relaxed),
            logins: self.inner.transport().logins,
        }
    }
}

impl Traced {
    /// Counts one round trip of `sent` and `received` bytes.
    fn count(&self, sent: u64, received: u64) {
        self.commands.fetch_add(1, Ordering::Relaxed);
        self.sent.fetch_add(sent, Ordering::Relaxed);
        self.received.fetch_add(received, Ordering::Relaxed);
    }
}
