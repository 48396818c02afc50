//! The controller itself as a host: `/bin/sh` as a child process, sudo or su only when
//! becoming a user other than the current one.

use std::process::Stdio;

use async_trait::async_trait;
use tokio::process::Command;

use super::{shell_quote, BecomeMethod, Connection, ExecOutput, ExecRequest};
use crate::error::{Error, ErrorKind, Result};

/// Runs commands on the controller.
#[derive(Debug, Default)]
pub struct LocalConnection {
    current_user: String,
}

impl LocalConnection {
    /// A local connection; remembers who we are so `become` to ourselves needs no sudo.
    pub fn new() -> LocalConnection {
        let current_user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| {
                if is_root() {
                    "root".into()
                } else {
                    String::new()
                }
            });
        LocalConnection { current_user }
    }
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid() == 0
        })
        .unwrap_or(false)
}

#[async_trait]
impl Connection for LocalConnection {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput> {
        let mut cmd = match &req.become_ {
            Some(b) if b.user != self.current_user && b.method == BecomeMethod::Su => {
                // The environment travels inside su's command, as over SSH.
                let mut inner = String::from("env");
                for (k, v) in &req.env {
                    inner.push(' ');
                    inner.push_str(&shell_quote(&format!("{}={}", k, v)));
                }
                inner.push_str(" /bin/sh -c ");
                inner.push_str(&shell_quote(&req.script));
                let mut c = Command::new("/bin/sh");
                c.args(["-c", &super::su::line(b, &inner)]);
                c
            }
            Some(b) if b.user != self.current_user => {
                let mut c = Command::new("sudo");
                c.args(super::sudo_flags(b));
                c.args(["-u", &b.user, "--", "/bin/sh", "-c", &req.script]);
                c
            }
            _ => {
                let mut c = Command::new("/bin/sh");
                c.args(["-c", &req.script]);
                c
            }
        };
        for (k, v) in &req.env {
            cmd.env(k, v);
        }
        let become_ = req.become_.as_ref().filter(|b| b.user != self.current_user);
        let prefix = super::input::become_prefix(become_);
        let direct = super::input::direct_file(req.stdin.as_ref(), &prefix);
        cmd.stdin(match direct {
            Some(f) => Stdio::from(f),
            None => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            Error::new(
                ErrorKind::Connection,
                format!("cannot start /bin/sh on the controller: {e}"),
            )
        })?;
        let stdin = child.stdin.take();
        let data = req.stdin.clone();
        let writer = tokio::spawn(async move {
            if let Some(mut stdin) = stdin {
                let _ = super::input::feed(&mut stdin, &prefix, data.as_ref()).await;
            }
        });
        // Both streams read at once (a full pipe would block the command), each kept
        // whole or bounded as the request says, then the exit status.
        let (mut out_pipe, mut err_pipe) = (child.stdout.take(), child.stderr.take());
        // The command runs in its own process group; if the run stops waiting for it
        // (timeout, Ctrl-C), the whole group is stopped, not only the shell. Declared after
        // the pipes so it is dropped before them: a shell whose stderr is already closed
        // dies of SIGPIPE (printing "Terminated") before its TERM trap can clean up.
        let mut group = child.id().map(|pid| GroupGuard(pid as i32));
        let keep = req.keep;
        let wait = async {
            let read_out = async {
                match out_pipe.as_mut() {
                    Some(p) => super::bounded::read_to_end(p, keep).await,
                    None => Ok(Vec::new()),
                }
            };
            let read_err = async {
                match err_pipe.as_mut() {
                    Some(p) => super::bounded::read_to_end(p, keep).await,
                    None => Ok(Vec::new()),
                }
            };
            let (stdout, stderr) = tokio::try_join!(read_out, read_err)?;
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((status, stdout, stderr))
        };
        let output = match req.timeout {
            Some(t) => match tokio::time::timeout(t, wait).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        format!(
                            "command timed out after {} seconds and was killed",
                            t.as_secs()
                        ),
                    ))
                }
            },
            None => wait.await,
        }
        .map_err(|e| {
            Error::new(
                ErrorKind::Connection,
                format!("waiting for /bin/sh failed: {e}"),
            )
        })?;
        let _ = writer.await;
        if let Some(g) = group.as_mut() {
            g.disarm();
        }
        let (status, stdout, stderr) = output;
        let out = ExecOutput {
            rc: status.code().unwrap_or(-1),
            stdout,
            stderr,
        };
        // Becoming ourselves ran the command as it is: no sudo or su to check.
        match &req.become_ {
            Some(b) if b.user != self.current_user => super::check_sudo(out, req, "localhost"),
            _ => Ok(out),
        }
    }
}

/// Stops a command's process group when dropped before the command finished.
struct GroupGuard(i32);

impl GroupGuard {
    /// The command finished on its own: nothing to kill.
    fn disarm(&mut self) {
        self.0 = 0;
    }
}

impl Drop for GroupGuard {
    /// TERM first, so the command's shell can remove its temp files (kk's write scripts
    /// trap it), then KILL whatever is left once nothing of the group runs (at most ~0.5 s).
    fn drop(&mut self) {
        if self.0 <= 0 {
            return;
        }
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-self.0, libc::SIGTERM);
        }
        // Until no process of the group runs any more (zombies aside), at most ~0.5 s.
        for _ in 0..50 {
            if !group_running(self.0) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-self.0, libc::SIGKILL);
        }
    }
}

/// Whether a process of process group `pgid` still runs (is not a zombie), from /proc.
fn group_running(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // After the command name: state, ppid, pgrp, …
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            return false;
        };
        let mut f = rest.split(' ');
        let state = f.next().unwrap_or("Z");
        let pgrp = f.nth(1).and_then(|g| g.parse::<i32>().ok());
        state != "Z" && pgrp == Some(pgid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command stopped before it ends gets TERM first: its shell's traps run (kk's write
    /// scripts remove their temp file there), then what is left is killed.
    #[tokio::test]
    async fn a_dropped_command_is_terminated_so_its_traps_run() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tmp");
        let log = dir.path().join("log");
        let script = format!(
            "(trap 'rm -f {f}; echo exit >> {log}' EXIT; trap 'exit 143' TERM; touch {f}; sleep 30; true)",
            f = f.display(),
            log = log.display()
        );
        let c = LocalConnection::new();
        let req = ExecRequest::script(script);
        let run = c.exec(&req);
        let stopped = tokio::time::timeout(std::time::Duration::from_millis(500), run).await;
        assert!(stopped.is_err());
        assert!(!f.exists(), "the temp file is left");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "exit\n");
        // And the group helper sees a running group.
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .process_group(0)
            .spawn()
            .unwrap();
        assert!(group_running(child.id() as i32));
        let _ = child.kill();
        let _ = child.wait();
    }
}
