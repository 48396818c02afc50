//! A host over SSH: the system OpenSSH client opens one multiplexed master per host
//! for the whole run, and every command is a new channel on it (the `openssh` crate's
//! native mux: no process and no handshake per command).
//!
//! kk starts the master itself (rather than `openssh::SessionBuilder`) so it can choose
//! the known-hosts file, strictness, and password login through an askpass helper.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use openssh::{Session, Stdio};
use tokio::sync::Mutex;

use super::reaper::{REAPER, REAPER_START};
use super::{shell_quote, Become, BecomeMethod, Connection, ExecOutput, ExecRequest};
use crate::error::{Error, ErrorKind, Result};

/// Environment variable that turns the `kk` binary into an askpass helper printing the
/// content of the (0600) file it names.
pub const ASKPASS_ENV: &str = "KK_ASKPASS_FILE";

/// Key exchanges kk offers for its masters, most preferred first (those the local `ssh`
/// does not know are left out). OpenSSH 9 prefers a hybrid post-quantum exchange
/// (sntrup761x25519 / mlkem768x25519) that costs about ten times the CPU of
/// curve25519 on both ends (~70 ms against ~7 ms per login here), which at 32 hosts was
/// nearly all of a run's controller CPU. kk puts the classical curve25519 first and keeps
/// the post-quantum ones as fallbacks for servers that insist on them. A user who wants
/// them first sets `-o KexAlgorithms=…` in `ansible_ssh_common_args` (or
/// `ansible_ssh_extra_args`): those come first on the command line, and ssh keeps the
/// first value it sees, so theirs wins.
const KEX_PREFERENCE: &[&str] = &[
    "curve25519-sha256",
    "curve25519-sha256@libssh.org",
    "ecdh-sha2-nistp256",
    "ecdh-sha2-nistp384",
    "ecdh-sha2-nistp521",
    "mlkem768x25519-sha256",
    "sntrup761x25519-sha512",
    "sntrup761x25519-sha512@openssh.com",
    "diffie-hellman-group-exchange-sha256",
    "diffie-hellman-group16-sha512",
    "diffie-hellman-group18-sha512",
    "diffie-hellman-group14-sha256",
];

/// The `KexAlgorithms=` value for this machine's `ssh` (asked once per run with
/// `ssh -Q kex`), or `None` when it cannot tell (then ssh's own default applies).
async fn kex_algorithms() -> Option<&'static str> {
    static KEX: tokio::sync::OnceCell<Option<String>> = tokio::sync::OnceCell::const_new();
    KEX.get_or_init(|| async {
        let out = tokio::process::Command::new("ssh")
            .args(["-Q", "kex"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .await
            .ok()?;
        let known = String::from_utf8_lossy(&out.stdout).into_owned();
        kex_list(&known)
    })
    .await
    .as_deref()
}

/// [`KEX_PREFERENCE`] restricted to what `ssh -Q kex` listed; `None` unless curve25519 is
/// among them (nothing to gain otherwise).
fn kex_list(known: &str) -> Option<String> {
    let known: std::collections::HashSet<&str> = known.lines().map(str::trim).collect();
    if !known.contains("curve25519-sha256") {
        return None;
    }
    let list: Vec<&str> = KEX_PREFERENCE
        .iter()
        .copied()
        .filter(|k| known.contains(k))
        .collect();
    Some(list.join(","))
}

/// How to reach a host.
#[derive(Debug, Clone, Default)]
pub struct SshSettings {
    /// Inventory name (for messages).
    pub name: String,
    /// Address or name to connect to.
    pub host: String,
    /// Port (22 when not given).
    pub port: Option<u16>,
    /// Login user (ssh's default when not given).
    pub user: Option<String>,
    /// Private key file.
    pub private_key: Option<PathBuf>,
    /// Login password (askpass); never on argv or in the environment.
    pub password: Option<String>,
    /// Known-hosts file kk keeps under the work dir.
    pub known_hosts: PathBuf,
    /// Refuse unknown host keys instead of trusting them on first use.
    pub strict: bool,
    /// Accept any host key, even one that changed (`host_key_checking = False`).
    pub accept_any_key: bool,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Extra `ssh` arguments (`ansible_ssh_common_args`, `ansible_ssh_extra_args`).
    pub extra_args: Vec<String>,
    /// Where control sockets and secret files go (0700).
    pub runtime_dir: PathBuf,
}

/// Channels kk keeps open at once on one master. sshd refuses channels beyond its
/// `MaxSessions` (10 by default) on one connection, and a refused channel looks like a
/// lost connection; a host that many others delegate to (the first control plane node
/// labelling 30 workers) would see 30 at once. Two below the default leave room for a
/// channel sshd has not yet counted as closed.
pub const CHANNELS_PER_HOST: usize = 8;

/// One host's SSH connection: the master, opened lazily, re-opened once if it drops.
pub struct SshConnection {
    settings: SshSettings,
    /// At most [`CHANNELS_PER_HOST`] commands at once; the others wait their turn.
    channels: Arc<tokio::sync::Semaphore>,
    session: Mutex<Option<Arc<Session>>>,
    /// Per become user: does sudo run without a password? Probed once, so a password
    /// is only fed to sudo when it will read it (otherwise it would reach the command).
    sudo_nopasswd: Mutex<std::collections::HashMap<String, bool>>,
    dir: tempfile::TempDir,
    /// Whether the current master's connection has its [`REAPER`](super::reaper::REAPER) (started by the first
    /// command on it); cleared when the master is opened again.
    reaper_started: std::sync::atomic::AtomicBool,
    /// Masters opened so far (the recap's `logins`).
    logins: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for SshConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SshConnection({})", self.settings.name)
    }
}

fn unreachable_error(settings: &SshSettings, why: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Connection,
        format!(
            "cannot reach {} ({}{}:{}): {}",
            settings.name,
            settings
                .user
                .as_deref()
                .map(|u| format!("{}@", u))
                .unwrap_or_default(),
            settings.host,
            settings.port.unwrap_or(22),
            why.into()
        ),
    )
}

impl SshConnection {
    /// Prepares a connection; nothing is opened until the first command.
    pub fn new(settings: SshSettings) -> Result<SshConnection> {
        std::fs::create_dir_all(&settings.runtime_dir)?;
        let dir = tempfile::Builder::new()
            .prefix("ssh-")
            .tempdir_in(&settings.runtime_dir)
            .map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("cannot create a control directory: {}", e),
                )
            })?;
        Ok(SshConnection {
            settings,
            channels: Arc::new(tokio::sync::Semaphore::new(CHANNELS_PER_HOST)),
            session: Mutex::new(None),
            sudo_nopasswd: Mutex::new(std::collections::HashMap::new()),
            dir,
            reaper_started: std::sync::atomic::AtomicBool::new(false),
            logins: std::sync::atomic::AtomicU64::new(0),
        })
    }

    fn ssh_args(&self) -> Vec<String> {
        let s = &self.settings;
        let mut a = vec![
            "-o".into(),
            format!("UserKnownHostsFile={}", s.known_hosts.display()),
            "-o".into(),
            format!(
                "StrictHostKeyChecking={}",
                if s.strict {
                    "yes"
                } else if s.accept_any_key {
                    "no"
                } else {
                    "accept-new"
                }
            ),
            "-o".into(),
            format!("ConnectTimeout={}", s.connect_timeout.as_secs().max(1)),
            "-o".into(),
            "ServerAliveInterval=5".into(),
            "-o".into(),
            "ServerAliveCountMax=3".into(),
            "-o".into(),
            "LogLevel=ERROR".into(),
        ];
        if let Some(p) = s.port {
            a.extend(["-p".into(), p.to_string()]);
        }
        if let Some(u) = &s.user {
            a.extend(["-l".into(), u.clone()]);
        }
        if let Some(k) = &s.private_key {
            a.extend([
                "-i".into(),
                k.display().to_string(),
                "-o".into(),
                "IdentitiesOnly=yes".into(),
            ]);
        }
        if s.password.is_some() {
            a.extend([
                "-o".into(),
                "BatchMode=no".into(),
                "-o".into(),
                "PreferredAuthentications=publickey,keyboard-interactive,password".into(),
                "-o".into(),
                "NumberOfPasswordPrompts=1".into(),
            ]);
        } else {
            a.extend(["-o".into(), "BatchMode=yes".into()]);
        }
        a.extend(s.extra_args.iter().cloned());
        a
    }

    /// Starts the master (`ssh -M -f -N`) and attaches to it through the native mux.
    async fn open(&self) -> Result<Session> {
        let ctl = self.dir.path().join("master");
        let log = self.dir.path().join("log");
        let _ = std::fs::remove_file(&ctl);
        let mut cmd = tokio::process::Command::new("ssh");
        cmd.arg("-M")
            .arg("-f")
            .arg("-N")
            .arg("-S")
            .arg(&ctl)
            .arg("-E")
            .arg(&log)
            .arg("-o")
            .arg("ControlPersist=yes")
            .args(self.ssh_args());
        let user_kex = self
            .settings
            .extra_args
            .iter()
            .any(|a| a.to_ascii_lowercase().contains("kexalgorithms"));
        if !user_kex {
            if let Some(kex) = kex_algorithms().await {
                cmd.arg("-o").arg(format!("KexAlgorithms={}", kex));
            }
        }
        cmd.arg(&self.settings.host)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // One master per host lives for the whole run: after a large file its channel
        // buffers (up to the 2 MB window) stayed in glibc's heap, 4-6 MB per master
        // instead of 1.4. A fixed mmap threshold gives buffers that large back when freed.
        if std::env::var_os("GLIBC_TUNABLES").is_none() {
            cmd.env("GLIBC_TUNABLES", MASTER_MALLOC);
        }
        let mut pwfile = None;
        if let Some(pw) = &self.settings.password {
            // The askpass helper is kk itself, reading the password from a 0600 file.
            let path = self.dir.path().join("askpass");
            write_secret(&path, pw)?;
            let exe =
                std::env::current_exe().map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
            cmd.env("SSH_ASKPASS", exe)
                .env("SSH_ASKPASS_REQUIRE", "force")
                .env("DISPLAY", "kk")
                .env(ASKPASS_ENV, &path);
            pwfile = Some(path);
        }
        let wait = self.settings.connect_timeout + Duration::from_secs(5);
        let out = tokio::time::timeout(wait, cmd.output()).await;
        if let Some(p) = pwfile {
            let _ = std::fs::remove_file(p);
        }
        let out = match out {
            Err(_) => {
                return Err(unreachable_error(
                    &self.settings,
                    format!("no answer within {} seconds", wait.as_secs()),
                ))
            }
            Ok(Err(e)) => {
                return Err(unreachable_error(
                    &self.settings,
                    format!("cannot run ssh: {}", e),
                ))
            }
            Ok(Ok(o)) => o,
        };
        if !out.status.success() {
            let mut why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            if why.is_empty() {
                why = std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .trim()
                    .to_string();
            }
            let kh = self.settings.known_hosts.display().to_string();
            let err = if why.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
                let offending = why
                    .lines()
                    .find(|l| l.starts_with("Offending"))
                    .unwrap_or("")
                    .to_string();
                let fix = why
                    .lines()
                    .find(|l| l.trim_start().starts_with("ssh-keygen"))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                unreachable_error(
                    &self.settings,
                    format!("its host key changed since it was recorded in {}", kh),
                )
                .note(offending)
                .help(format!(
                    "if the host was reinstalled, forget the old key: {}",
                    fix
                ))
            } else if why.contains("Host key verification failed") {
                unreachable_error(
                    &self.settings,
                    format!(
                        "its host key is not in {} and strict host key checking is on",
                        kh
                    ),
                )
                .help("connect once without --ssh-strict to record it, or add it to that file")
            } else if why.contains("Permission denied") {
                unreachable_error(&self.settings, why)
                    .help("check the user, key or password in the inventory")
            } else if why.is_empty() {
                unreachable_error(&self.settings, format!("ssh exited with {}", out.status))
            } else {
                unreachable_error(&self.settings, why)
            };
            return Err(err);
        }
        self.logins
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Session::resume_mux(
            ctl.into_boxed_path(),
            Some(log.into_boxed_path()),
        ))
    }

    /// Runs one command on the open master. `started` says whether the channel opened
    /// (then the command may have run, even when the connection is lost after).
    async fn run_once(
        &self,
        cmdline: &str,
        req: &ExecRequest,
        started: &mut bool,
    ) -> std::result::Result<ExecOutput, openssh::Error> {
        let session = self
            .session
            .lock()
            .await
            .clone()
            .expect("opened before use");
        let prefix = super::input::become_prefix(req.become_.as_ref());
        // A file alone on stdin is handed to the master as the channel's input: ssh reads
        // it itself, one copy less through kk (a fifth faster to 3 hosts at once).
        let direct = super::input::direct_file(req.stdin.as_ref(), &prefix);
        let mut command = Session::to_raw_command(session, cmdline);
        command
            .stdin(match direct {
                Some(f) => Stdio::from(f),
                None => Stdio::piped(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().await?;
        *started = true;
        let mut stdin = child.stdin().take();
        let write_in = async {
            if let Some(w) = stdin.as_mut() {
                let _ = super::input::feed(w, &prefix, req.stdin.as_ref()).await;
            }
            drop(stdin);
        };
        // Feed stdin and read both streams concurrently (a full pipe would block the
        // remote command, and a streamed file may be large), then wait. Not
        // `wait_with_output`: openssh turns a remote exit status 127 into an
        // error and drops the output, but 127 is the command's own status ("command not
        // found" from the remote shell), not a broken connection.
        let (mut out_pipe, mut err_pipe) = (child.stdout().take(), child.stderr().take());
        let keep = req.keep;
        let read_out = async {
            let mut buf = Vec::new();
            if let Some(p) = out_pipe.as_mut() {
                buf = super::bounded::read_to_end(p, keep)
                    .await
                    .map_err(openssh::Error::ChildIo)?;
            }
            Ok::<_, openssh::Error>(buf)
        };
        let read_err = async {
            let mut buf = Vec::new();
            if let Some(p) = err_pipe.as_mut() {
                buf = super::bounded::read_to_end(p, keep)
                    .await
                    .map_err(openssh::Error::ChildIo)?;
            }
            Ok::<_, openssh::Error>(buf)
        };
        let ((), read) = tokio::join!(write_in, async { tokio::try_join!(read_out, read_err) });
        let (stdout, stderr) = read?;
        let rc = match child.wait().await {
            Ok(status) => status.code().unwrap_or(-1),
            Err(openssh::Error::Remote(e)) if e.kind() == std::io::ErrorKind::NotFound => 127,
            Err(e) => return Err(e),
        };
        Ok(ExecOutput { rc, stdout, stderr })
    }

    /// True for exactly one command per connection: the one that starts its [`REAPER`](super::reaper::REAPER).
    fn take_reaper(&self) -> bool {
        !self
            .reaper_started
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether the current master still answers (`ssh -O check` through the mux).
    async fn master_alive(&self) -> bool {
        let session = self.session.lock().await.clone();
        match session {
            Some(s) => s.check().await.is_ok(),
            None => false,
        }
    }

    async fn ensure_open(&self, reopen: bool) -> Result<()> {
        let mut guard = self.session.lock().await;
        if reopen {
            if let Some(old) = guard.take() {
                if let Ok(old) = Arc::try_unwrap(old) {
                    let _ = old.close().await;
                }
            }
        }
        if guard.is_none() {
            let t0 = std::time::Instant::now();
            let opened = self.open().await;
            tracing::debug!(
                host = %self.settings.name,
                address = %self.settings.host,
                port = self.settings.port,
                user = self.settings.user.as_deref(),
                reopen,
                ok = opened.is_ok(),
                ms = t0.elapsed().as_millis() as u64,
                "ssh open"
            );
            *guard = Some(Arc::new(opened?));
            self.reaper_started
                .store(false, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }
}

impl Drop for SshConnection {
    /// Stops the master even when the run ends abruptly (Ctrl-C), so no `ssh -M`
    /// outlives kk; `close` is the orderly path.
    fn drop(&mut self) {
        let ctl = self.dir.path().join("master");
        if ctl.exists() {
            let _ = std::process::Command::new("ssh")
                .arg("-S")
                .arg(&ctl)
                .args(["-O", "exit", "kk-master"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// From this many bytes of input a command counts as a large transfer (an artifact, a
/// binary): see [`big_inputs`].
const BIG_INPUT: u64 = 1 << 20;

/// Large transfers run at most 16 at once over all hosts. While one runs, its master holds
/// up to the channel window (2 MB) in and out: with every host of a 100-host cluster
/// receiving at once that was 400 MB in the masters. The link or the cipher is the limit
/// either way; 16 streams still fill either, and each host's copy finishes sooner.
fn big_inputs() -> &'static tokio::sync::Semaphore {
    static SEM: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    SEM.get_or_init(|| tokio::sync::Semaphore::new(16))
}

/// glibc malloc settings of the ssh masters (see [`SshConnection::open`]): allocations
/// from 128 KiB are mmapped and unmapped when freed, and free heap above 128 KiB is trimmed.
const MASTER_MALLOC: &str = "glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072";

/// The remote command line for a request: env, optional sudo and a timeout around `sh -c`.
///
/// Every command is its own session on the host (sshd calls setsid for each channel), so
/// nothing per command is needed to stop it when kk goes away: the first command on a
/// connection (`reaper`) also starts [`REAPER`](super::reaper::REAPER), which stops the sessions still running
/// when the connection ends. The common command is then a single `exec`: the login shell
/// becomes `/bin/sh` running the script, no extra process. With sudo, a `/bin/sh` stays
/// in front as the session leader, because a setuid `sudo` leader's environment cannot
/// be read by a non-root login user (the reaper finds sessions by their environment).
fn command_line(req: &ExecRequest, reaper: bool) -> String {
    let line = match req
        .become_
        .as_ref()
        .filter(|b| b.method == BecomeMethod::Su)
    {
        // With su, env and timeout run inside su's command, so they reach the target
        // user's command and the timeout kills what su started.
        Some(b) => super::su::line(b, &plain_command(req)),
        None => sudo_command(req),
    };
    let keep_leader = req.become_.is_some();
    if !reaper && !keep_leader {
        return format!("exec {}", line);
    }
    let mut inner = String::new();
    if reaper {
        inner.push_str(REAPER_START);
    }
    if keep_leader {
        inner.push_str(&line);
        inner.push_str("\nexit $?");
    } else {
        inner.push_str("exec ");
        inner.push_str(&line);
    }
    if reaper {
        format!(
            "exec /bin/sh -c {} kk {}",
            shell_quote(&inner),
            shell_quote(REAPER)
        )
    } else {
        format!("exec /bin/sh -c {}", shell_quote(&inner))
    }
}

/// `env K=V … [timeout -s KILL N] /bin/sh -c SCRIPT`: the request without become.
fn plain_command(req: &ExecRequest) -> String {
    let mut line = env_prefix(req);
    push_timeout_and_script(&mut line, req);
    line
}

/// The request with sudo (or none) in front: `env K=V … [sudo …] [timeout …] /bin/sh -c SCRIPT`.
fn sudo_command(req: &ExecRequest) -> String {
    let mut line = env_prefix(req);
    if let Some(b) = &req.become_ {
        line.push_str("sudo ");
        for f in super::sudo_flags(b) {
            line.push_str(&shell_quote(&f));
            line.push(' ');
        }
        line.push_str(&format!("-u {} -- ", shell_quote(&b.user)));
    }
    // After sudo, so the timeout may kill what sudo started.
    push_timeout_and_script(&mut line, req);
    line
}

fn env_prefix(req: &ExecRequest) -> String {
    let mut line = String::new();
    if !req.env.is_empty() {
        line.push_str("env");
        for (k, v) in &req.env {
            line.push(' ');
            line.push_str(&shell_quote(&format!("{}={}", k, v)));
        }
        line.push(' ');
    }
    line
}

fn push_timeout_and_script(line: &mut String, req: &ExecRequest) {
    if let Some(t) = req.timeout {
        line.push_str(&format!("timeout -s KILL {} ", t.as_secs().max(1)));
    }
    line.push_str("/bin/sh -c ");
    line.push_str(&shell_quote(&req.script));
}

fn write_secret(path: &std::path::Path, content: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot write {}: {}", path.display(), e),
            )
        })?;
    f.write_all(content.as_bytes())?;
    Ok(())
}

#[async_trait]
impl Connection for SshConnection {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput> {
        // Held for the whole call: the sudo probe and a retry are channels too.
        let _channel = self.channels.acquire().await.map_err(|_| {
            unreachable_error(&self.settings, "the connection is closed".to_string())
        })?;
        let _big = match &req.stdin {
            Some(input) if input.len() >= BIG_INPUT => {
                Some(big_inputs().acquire().await.map_err(|_| {
                    unreachable_error(&self.settings, "the run is ending".to_string())
                })?)
            }
            _ => None,
        };
        self.ensure_open(false).await?;
        let mut owned;
        let mut req = req;
        // As Ansible (`become_allow_same_user` off): becoming the login user is no become.
        if req.become_.as_ref().map(|b| Some(&b.user)) == Some(self.settings.user.as_ref()) {
            owned = req.clone();
            owned.become_ = None;
            req = &owned;
        }
        if let Some(Become {
            user,
            password: Some(_),
            method: BecomeMethod::Sudo,
            ..
        }) = &req.become_
        {
            let known = self.sudo_nopasswd.lock().await.get(user).copied();
            let nopasswd = match known {
                Some(k) => k,
                None => {
                    let probe = ExecRequest::script(format!(
                        "sudo -n -u {} true 2>/dev/null",
                        shell_quote(user)
                    ));
                    let ok = self
                        .run_once(
                            &command_line(&probe, self.take_reaper()),
                            &probe,
                            &mut false,
                        )
                        .await
                        .map(|o| o.rc == 0)
                        .unwrap_or(false);
                    self.sudo_nopasswd.lock().await.insert(user.clone(), ok);
                    ok
                }
            };
            if nopasswd {
                owned = req.clone();
                if let Some(b) = owned.become_.as_mut() {
                    b.password = None;
                }
                req = &owned;
            }
        }
        let line = command_line(req, self.take_reaper());
        let mut started = false;
        let mut res = self.run_once(&line, req, &mut started).await;
        // A master that still answers refused only this session: sshd's `MaxSessions`
        // also counts channels still closing, more so on a loaded host. Try again on the
        // same master a few times before opening another one (a second login).
        let mut delays = [50u64, 200, 500].into_iter();
        while res.is_err() && !started && self.master_alive().await {
            let Some(ms) = delays.next() else { break };
            tokio::time::sleep(Duration::from_millis(ms)).await;
            res = self.run_once(&line, req, &mut started).await;
        }
        match res {
            // `timeout -s KILL` exits 137 when it had to kill the command.
            Ok(out) if out.rc == 137 && req.timeout.is_some() => Err(Error::new(
                ErrorKind::Runtime,
                format!(
                    "command timed out after {} seconds and was killed",
                    req.timeout.unwrap_or_default().as_secs()
                ),
            )),
            Ok(out) => super::check_sudo(out, req, &self.settings.name),
            // The connection was lost while the command ran: it may have done its work (a
            // script that installs and removes its archive), so it is not run again.
            Err(e) if started => Err(unreachable_error(
                &self.settings,
                format!("connection lost while the command ran ({})", e),
            )),
            Err(first) => {
                // The master dropped before the command started: open it again, once,
                // before calling the host unreachable.
                self.ensure_open(true).await?;
                let line = command_line(req, self.take_reaper());
                self.run_once(&line, req, &mut false).await.map_err(|e| {
                    unreachable_error(
                        &self.settings,
                        format!("connection lost ({}; then {})", first, e),
                    )
                })
            }
        }
    }

    fn is_remote(&self) -> bool {
        true
    }

    async fn tunnel(&self) -> Result<Option<super::Tunnel>> {
        let permit = self.channels.clone().acquire_owned().await.map_err(|_| {
            unreachable_error(&self.settings, "the connection is closed".to_string())
        })?;
        self.ensure_open(false).await?;
        if !self.master_alive().await {
            self.ensure_open(true).await?;
        }
        // The first command on a connection starts its reaper, which stops what the
        // connection left running when it ends: a tunnelled program's remote end too.
        if self.take_reaper() {
            let probe = ExecRequest::script("true");
            let line = command_line(&probe, true);
            if let Err(e) = self.run_once(&line, &probe, &mut false).await {
                return Err(unreachable_error(&self.settings, e.to_string()));
            }
        }
        let ctl = self.dir.path().join("master");
        let mut ssh = vec![
            "ssh".to_string(),
            "-S".into(),
            ctl.display().to_string(),
            "-o".into(),
            "ControlMaster=no".into(),
        ];
        ssh.extend(self.ssh_args());
        let s = &self.settings;
        Ok(Some(super::Tunnel {
            ssh,
            host: s.host.clone(),
            user: s.user.clone(),
            port: s.port.unwrap_or(22),
            private_key: s.private_key.clone(),
            permit: Some(permit),
        }))
    }

    async fn close(&self) {
        if let Some(s) = self.session.lock().await.take() {
            match Arc::try_unwrap(s) {
                Ok(s) => {
                    let _ = s.close().await;
                }
                Err(s) => {
                    // Still in use by a command being torn down: stop the master directly.
                    let _ = tokio::process::Command::new("ssh")
                        .arg("-S")
                        .arg(s.control_socket())
                        .args(["-O", "exit", "kk"])
                        .output()
                        .await;
                }
            }
        }
    }

    fn transport(&self) -> super::Transport {
        super::Transport {
            logins: self.logins.load(std::sync::atomic::Ordering::Relaxed),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_exchange_prefers_curve25519_and_keeps_what_ssh_knows() {
        let openssh_9_2 = "diffie-hellman-group1-sha1\ndiffie-hellman-group14-sha256\necdh-sha2-nistp256\ncurve25519-sha256\ncurve25519-sha256@libssh.org\nsntrup761x25519-sha512@openssh.com\n";
        assert_eq!(
            kex_list(openssh_9_2).as_deref(),
            Some("curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,sntrup761x25519-sha512@openssh.com,diffie-hellman-group14-sha256")
        );
        assert_eq!(kex_list("diffie-hellman-group14-sha1\n"), None);
        assert_eq!(kex_list(""), None);
    }

    #[test]
    fn command_lines_quote_everything() {
        let mut req = ExecRequest {
            script: "echo 'hi'".into(),
            env: vec![("A".into(), "x y".into())],
            become_: None,
            timeout: Some(Duration::from_secs(3)),
            stdin: None,
            keep: None,
        };
        let line = "env 'A=x y' timeout -s KILL 3 /bin/sh -c 'echo '\\''hi'\\'''";
        // The common command: the login shell becomes sh, nothing else runs.
        assert_eq!(command_line(&req, false), format!("exec {}", line));
        // The first command of a connection starts the reaper, then execs the same.
        let inner = format!("{}exec {}", REAPER_START, line);
        assert_eq!(
            command_line(&req, true),
            format!(
                "exec /bin/sh -c {} kk {}",
                shell_quote(&inner),
                shell_quote(REAPER)
            )
        );
        // With sudo, sh stays in front as the session leader.
        req.become_ = Some(Become {
            user: "root".into(),
            password: None,
            ..Default::default()
        });
        let inner = "env 'A=x y' sudo -H -S -n -u root -- timeout -s KILL 3 /bin/sh -c 'echo '\\''hi'\\'''\nexit $?";
        assert_eq!(
            command_line(&req, false),
            format!("exec /bin/sh -c {}", shell_quote(inner))
        );
    }

    /// The command lines really run (here, in sh) and keep exit codes and quoting.
    #[test]
    fn command_lines_run_in_sh() {
        let run = |line: &str| {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(line)
                .env("SSH_CONNECTION", "")
                .output()
                .unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let req = ExecRequest::script("printf '%s|' \"$0\" it\\'s; exit 3");
        for reaper in [false, true] {
            assert_eq!(
                run(&command_line(&req, reaper)),
                (Some(3), "/bin/sh|it's|".to_string())
            );
        }
    }
}
