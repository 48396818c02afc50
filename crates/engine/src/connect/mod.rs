//! How commands reach a host. The executor and modules talk only to [`Connection`];
//! `local` runs on the controller, `ssh` (a later addition) over one multiplexed master.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;

pub mod local;

/// Privilege escalation for one command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Become {
    /// The user to become (`root` when not given).
    pub user: String,
    /// The sudo password, if sudo asks for one. Never logged.
    pub password: Option<String>,
}

/// One shell script to run on a host.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    /// POSIX shell script, run by `/bin/sh`.
    pub script: String,
    /// Bytes fed to the script's standard input.
    pub stdin: Option<Vec<u8>>,
    /// Extra environment variables for the script.
    pub env: Vec<(String, String)>,
    /// Run as another user (sudo).
    pub become_: Option<Become>,
    /// Kill the command and fail when it runs longer.
    pub timeout: Option<Duration>,
}

impl ExecRequest {
    /// A request for a script with nothing else set.
    pub fn script(script: impl Into<String>) -> ExecRequest {
        ExecRequest {
            script: script.into(),
            ..Default::default()
        }
    }
}

/// What a finished command left behind.
#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    /// Exit code (`-1` when killed by a signal).
    pub rc: i32,
    /// Standard output, raw.
    pub stdout: Vec<u8>,
    /// Standard error, raw.
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    /// Standard output as text (lossy), with the one trailing newline removed as Ansible does.
    pub fn stdout_text(&self) -> String {
        trim_newline(String::from_utf8_lossy(&self.stdout).into_owned())
    }

    /// Standard error as text (lossy), trailing newline removed.
    pub fn stderr_text(&self) -> String {
        trim_newline(String::from_utf8_lossy(&self.stderr).into_owned())
    }
}

fn trim_newline(mut s: String) -> String {
    if s.ends_with('\n') {
        s.pop();
        if s.ends_with('\r') {
            s.pop();
        }
    }
    s
}

/// A way to run commands and move files on one host.
///
/// Errors of kind [`crate::error::ErrorKind::Connection`] mean the host is unreachable;
/// a command that runs and exits non-zero is not an error but an [`ExecOutput`].
#[async_trait]
pub trait Connection: Send + Sync {
    /// Runs a script and waits for it.
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput>;

    /// Reads a whole file from the host.
    async fn fetch(&self, path: &str, become_: Option<&Become>) -> Result<Vec<u8>> {
        let out = self
            .exec(&ExecRequest {
                script: format!("cat -- {}", shell_quote(path)),
                become_: become_.cloned(),
                ..Default::default()
            })
            .await?;
        if out.rc != 0 {
            return Err(crate::error::Error::new(
                crate::error::ErrorKind::Runtime,
                format!("cannot read {}: {}", path, out.stderr_text()),
            ));
        }
        Ok(out.stdout)
    }

    /// Closes the connection at the end of the run.
    async fn close(&self) {}
}

/// Quotes a string for a POSIX shell (single quotes, `'` escaped).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/etc/hosts"), "/etc/hosts");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
