//! How commands reach a host. The executor and modules talk only to [`Connection`];
//! `local` runs on the controller, `ssh` (a later addition) over one multiplexed master.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::ansible::{split_words, to_bool};
use crate::error::Result;

pub use input::Input;

/// kk's shell quoting, for modules that build scripts (it lives in [`crate::ansible`]).
pub use crate::ansible::shell_quote;

pub mod bounded;
#[cfg(test)]
pub mod fake;
pub mod input;
pub mod local;
mod reaper;
pub mod ssh;
pub mod su;
pub mod traced;

/// Privilege escalation for one command.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Become {
    /// The user to become (`root` when not given).
    pub user: String,
    /// The become password, if sudo or su asks for one. Never logged.
    pub password: Option<String>,
    /// How: sudo (the default) or su.
    pub method: BecomeMethod,
    /// `become_flags`: sudo's or su's options as written (`None`: the method's default,
    /// sudo's `-H -S -n`, none for su). They replace the default, as in Ansible.
    pub flags: Option<String>,
}

/// Ansible's default `become_flags` for sudo.
pub const SUDO_DEFAULT_FLAGS: &str = "-H -S -n";

/// sudo's options for a become, as Ansible builds them from `become_flags` (default
/// `-H -S -n`): with a password, `-n` goes (alone, or out of a cluster such as `-Hn`) and
/// kk adds `-S` if missing (the password comes on standard input, never on a command
/// line) and `-p ''` (no prompt in the output); without one, kk adds `-n` if missing, so
/// sudo never waits for a password nobody will type (or reads the command's input as one).
pub fn sudo_flags(b: &Become) -> Vec<String> {
    let words = split_words(b.flags.as_deref().unwrap_or(SUDO_DEFAULT_FLAGS));
    let short_has = |words: &[String], c: char| {
        words
            .iter()
            .any(|w| w.starts_with('-') && !w.starts_with("--") && w[1..].contains(c))
    };
    if b.password.is_none() {
        let mut out = words;
        if !short_has(&out, 'n') && !out.iter().any(|w| w == "--non-interactive") {
            out.push("-n".into());
        }
        return out;
    }
    let mut out: Vec<String> = Vec::new();
    for w in words {
        if w == "-n" || w == "--non-interactive" {
            continue;
        }
        if w.starts_with('-') && !w.starts_with("--") {
            // Ansible's `re.sub(r'^(-\w*)n(\w*.*)', r'\1\2', flag)`: the last `n` of the
            // leading word characters goes.
            let body: Vec<char> = w[1..].chars().collect();
            let run = body
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .count();
            if let Some(at) = body[..run].iter().rposition(|c| *c == 'n') {
                let mut s = String::from("-");
                s.extend(body[..at].iter());
                s.extend(body[at + 1..].iter());
                out.push(s);
                continue;
            }
        }
        out.push(w);
    }
    if !short_has(&out, 'S') && !out.iter().any(|w| w == "--stdin") {
        out.push("-S".into());
    }
    out.push("-p".into());
    out.push(String::new());
    out
}

/// su's options for a become: `become_flags` as written (Ansible's default is none).
pub fn su_flags(b: &Become) -> Vec<String> {
    b.flags.as_deref().map(split_words).unwrap_or_default()
}

impl std::fmt::Debug for Become {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Become")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .field("method", &self.method)
            .field("flags", &self.flags)
            .finish()
    }
}

/// The become methods kk drives (`become_method`, `--become-method`,
/// `ansible_become_method`): Ansible's `sudo` and `su`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BecomeMethod {
    /// `sudo -u USER`, the password (if asked) on standard input.
    #[default]
    Sudo,
    /// `su USER -c …`, the password answered without a terminal ([`su`]).
    Su,
}

/// One shell script to run on a host.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    /// POSIX shell script, run by `/bin/sh`.
    pub script: String,
    /// What the script reads on its standard input (bytes, or a streamed file).
    pub stdin: Option<Input>,
    /// Extra environment variables for the script.
    pub env: Vec<(String, String)>,
    /// Run as another user (sudo or su).
    pub become_: Option<Become>,
    /// Kill the command and fail when it runs longer.
    pub timeout: Option<Duration>,
    /// Keep only the first and last this many bytes of stdout and of stderr, with a marker
    /// between ([`bounded`]); `None` keeps all (kk's own reads of file contents).
    pub keep: Option<usize>,
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

    /// How a program on the controller (`synchronize`'s rsync) reaches this host over
    /// this connection's own SSH master, so it needs no login of its own; `None` for
    /// connections that are not SSH.
    async fn tunnel(&self) -> Result<Option<Tunnel>> {
        Ok(None)
    }

    /// Whether the host is reached over the network (SSH), not the controller itself.
    fn is_remote(&self) -> bool {
        false
    }

    /// Closes the connection at the end of the run.
    async fn close(&self) {}

    /// What the connection has carried so far (the recap's per-host transport figures).
    fn transport(&self) -> Transport {
        Transport::default()
    }
}

/// A way for a controller program to reach a host through its connection's open master
/// (see [`Connection::tunnel`]).
#[derive(Debug)]
pub struct Tunnel {
    /// `ssh` and its options as a client of the master (`-S <control socket>` …),
    /// without the destination: what rsync gets as `--rsh`.
    pub ssh: Vec<String>,
    /// The address the host is reached at (`ansible_host`).
    pub host: String,
    /// The login user, when set.
    pub user: Option<String>,
    /// The port the master connected to.
    pub port: u16,
    /// The private key the master logged in with.
    pub private_key: Option<std::path::PathBuf>,
    /// One of the host's channels, held while the program runs (sshd limits them).
    pub permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// What one host's connection carried during a run, reported in the JSON recap so the
/// cost of a flow per host (round trips, bytes, logins) is visible without a profiler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Transport {
    /// Remote commands run (each one round trip; file reads included).
    pub commands: u64,
    /// Bytes sent to the host: scripts and their standard input.
    pub bytes_sent: u64,
    /// Bytes received: standard output and error, files read.
    pub bytes_received: u64,
    /// SSH logins (masters opened; 0 for a local connection).
    pub logins: u64,
}

impl std::ops::AddAssign for Transport {
    fn add_assign(&mut self, o: Transport) {
        self.commands += o.commands;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.logins += o.logins;
    }
}

/// Where a run keeps connection state.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// `<workdir>/known_hosts` is the trust-on-first-use store.
    pub workdir: std::path::PathBuf,
    /// Refuse hosts whose key is not already known.
    pub strict_host_keys: bool,
    /// The command line's and `ansible.cfg`'s connection settings, below host variables.
    pub defaults: ConnectDefaults,
}

/// Connection settings from `-u`, `--private-key`, `-k`, `ansible.cfg` and `ANSIBLE_*`:
/// Ansible's play-context defaults, used when a host's variables do not set them.
#[derive(Clone, Default)]
pub struct ConnectDefaults {
    /// `-u` / `remote_user`: the login user, below `ansible_user`.
    pub user: Option<String>,
    /// `--private-key` / `private_key_file`: below `ansible_ssh_private_key_file`.
    pub private_key: Option<std::path::PathBuf>,
    /// `-k`: the login password, below `ansible_password`. Never logged.
    pub password: Option<String>,
    /// `-T` / `timeout`: the connect timeout in seconds, below `ansible_timeout`.
    pub timeout: Option<u64>,
    /// `ssh_args` of `[ssh_connection]`: extra `ssh` arguments, below `ansible_ssh_args`.
    pub ssh_args: Option<String>,
    /// `host_key_checking`: `Some(false)` accepts any host key (Ansible's
    /// `StrictHostKeyChecking=no`).
    pub host_key_checking: Option<bool>,
}

impl std::fmt::Debug for ConnectDefaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectDefaults")
            .field("user", &self.user)
            .field("private_key", &self.private_key)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .field("timeout", &self.timeout)
            .field("ssh_args", &self.ssh_args)
            .field("host_key_checking", &self.host_key_checking)
            .finish()
    }
}

/// Options of `ssh_args` that would fight kk's own master (it keeps one per host for the
/// run): dropped, with their values.
const MASTER_OPTIONS: [&str; 3] = ["controlmaster", "controlpersist", "controlpath"];

/// `ssh_args` as words, without the options that choose the control master.
fn ssh_args_words(args: &str) -> Vec<String> {
    let words = split_words(args);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let opt = if w == "-o" {
            words.get(i + 1).map(|v| (v.clone(), 2))
        } else {
            w.strip_prefix("-o").map(|v| (v.to_string(), 1))
        };
        if let Some((v, n)) = opt {
            let key = v
                .split(['=', ' '])
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            if MASTER_OPTIONS.contains(&key.as_str()) {
                i += n;
                continue;
            }
        }
        out.push(w.clone());
        i += 1;
    }
    out
}

/// Where this run keeps control sockets and secret files (inline keys, askpass files).
pub fn runtime_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("kk-{}", std::process::id()))
}

/// Removes this run's secret files and sockets; called when the run ends, however it ends.
pub fn remove_runtime_dir() {
    let _ = std::fs::remove_dir_all(runtime_dir());
}

/// How many engine runs of this process are going on: they share [`runtime_dir`] (each
/// connection has its own directory inside), so only the last one to end removes it.
/// kk runs one playbook at a time; kk-capkk runs one per machine at once.
static RUNS_IN_RUNTIME_DIR: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// Held by a run while its connections may use [`runtime_dir`]; dropping the last one
/// removes the directory (its sockets and secret files), however the run ended.
pub(crate) struct RuntimeDirUse(());

impl RuntimeDirUse {
    /// Counts a run in.
    pub(crate) fn enter() -> RuntimeDirUse {
        *RUNS_IN_RUNTIME_DIR
            .lock()
            .unwrap_or_else(|e| e.into_inner()) += 1;
        RuntimeDirUse(())
    }
}

impl Drop for RuntimeDirUse {
    fn drop(&mut self) {
        let mut runs = RUNS_IN_RUNTIME_DIR
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *runs -= 1;
        if *runs == 0 {
            remove_runtime_dir();
        }
    }
}

/// Cleans up after earlier runs that could not (killed with SIGKILL, or the machine went
/// down): each `kk-<pid>` runtime dir whose process is gone has its SSH masters stopped
/// (`ssh -O exit`; the hosts then stop what those runs had started there, see
/// [`ssh`]'s reaper) and is removed with its secret files. Called once when kk starts.
pub fn sweep_stale_runtime_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("kk-").and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let dir = e.path();
        // Only a directory of ours (not someone else's `kk-123` file), of a dead process.
        let mine = std::fs::symlink_metadata(&dir)
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                m.is_dir() && m.uid() == own_uid()
            })
            .unwrap_or(false);
        if !mine
            || pid == std::process::id()
            || std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            continue;
        }
        for sub in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let ctl = sub.path().join("master");
            if ctl.exists() {
                let _ = std::process::Command::new("ssh")
                    .arg("-S")
                    .arg(&ctl)
                    .args(["-O", "exit", "kk-stale"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// This process's uid, read from `/proc/self` (no unsafe call).
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}

/// Chooses and prepares the connection for a host from its variables (`get` reads a
/// templated variable): KubeKey's `connector:` map or Ansible's `ansible_*` names.
/// Nothing is opened here; SSH connects on the first command.
pub fn for_host(
    name: &str,
    get: &dyn Fn(&str) -> Result<Option<serde_json::Value>>,
    opts: &ConnectOptions,
) -> Result<Arc<dyn Connection>> {
    use serde_json::Value;
    let connector = get("connector")?.unwrap_or(Value::Null);
    let conn = |k: &str| connector.get(k).filter(|v| !v.is_null()).cloned();
    let text = |v: Value| match v {
        Value::String(s) => s,
        other => other.to_string(),
    };
    let pick = |ansible: &[&str], kk: &str| -> Result<Option<String>> {
        for a in ansible {
            if let Some(v) = get(a)? {
                if !v.is_null() {
                    return Ok(Some(text(v)));
                }
            }
        }
        Ok(conn(kk).map(text))
    };
    let d = &opts.defaults;
    // The inventory checked literal values when it loaded; a templated one is checked
    // here, once rendered: a bad value fails the host's task, it is not "unreachable".
    let bad_value = |msg: String| {
        crate::error::Error::new(
            crate::error::ErrorKind::Runtime,
            format!("host {}: {}", name, msg),
        )
    };
    let kind = pick(&["ansible_connection"], "type")?;
    if let Some(k) = kind.as_deref().filter(|k| !k.is_empty()) {
        check_connection_type(k).map_err(|m| bad_value(m).help("use `local` or `ssh`"))?;
    }
    let local = match kind.as_deref() {
        Some("local") => true,
        Some("") | None => matches!(name, "localhost" | "127.0.0.1" | "::1"),
        _ => false,
    };
    #[cfg(test)]
    if kind.as_deref() == Some("fake") {
        if let Some(c) = conn("fake").and_then(|id| fake::connection(&text(id), name)) {
            return Ok(NulGuard::wrap(c));
        }
    }
    if local {
        let c: Arc<dyn Connection> = Arc::new(local::LocalConnection::new());
        return Ok(NulGuard::wrap(traced::Traced::wrap(name, "local", c)));
    }
    let port = match pick(&["ansible_port", "ansible_ssh_port"], "port")? {
        None => None,
        Some(p) => Some(parse_port(&Value::String(p)).map_err(bad_value)?),
    };
    let runtime_dir = runtime_dir();
    let mut private_key = pick(
        &["ansible_ssh_private_key_file", "ansible_private_key_file"],
        "private_key",
    )?
    .map(std::path::PathBuf::from)
    .or_else(|| d.private_key.clone());
    if let Some(content) = conn("private_key_content").map(text) {
        // Inline keys are written 0600 where only this run finds them; removed with the run.
        std::fs::create_dir_all(&runtime_dir)?;
        let path = runtime_dir.join(format!("key-{}", name.replace('/', "_")));
        let _ = std::fs::remove_file(&path);
        let mut content = content;
        if !content.ends_with('\n') {
            content.push('\n');
        }
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            f.write_all(content.as_bytes())?;
        }
        private_key = Some(path);
    }
    let mut extra_args = match get("ansible_ssh_args")? {
        Some(v) if !v.is_null() => ssh_args_words(&text(v)),
        _ => d
            .ssh_args
            .as_deref()
            .map(ssh_args_words)
            .unwrap_or_default(),
    };
    for k in ["ansible_ssh_common_args", "ansible_ssh_extra_args"] {
        if let Some(v) = get(k)? {
            extra_args.extend(split_words(&text(v)));
        }
    }
    let settings = ssh::SshSettings {
        name: name.to_string(),
        host: pick(&["ansible_host", "ansible_ssh_host"], "host")?
            .unwrap_or_else(|| name.to_string()),
        port,
        user: login_user(get, d.user.as_deref())?,
        private_key,
        password: pick(&["ansible_password", "ansible_ssh_pass"], "password")?
            .or_else(|| d.password.clone()),
        known_hosts: opts.workdir.join("known_hosts"),
        strict: opts.strict_host_keys
            || get("ssh_strict_host_keys")?
                .and_then(|v| to_bool(&v))
                .unwrap_or(false),
        connect_timeout: Duration::from_secs(
            pick(&["ansible_ssh_timeout", "ansible_timeout"], "timeout")?
                .and_then(|t| t.parse().ok())
                .or(d.timeout)
                .unwrap_or(10),
        ),
        accept_any_key: d.host_key_checking == Some(false),
        extra_args,
        runtime_dir,
    };
    let c: Arc<dyn Connection> = Arc::new(ssh::SshConnection::new(settings)?);
    Ok(NulGuard::wrap(traced::Traced::wrap(name, "ssh", c)))
}

/// The login user of a host: its `ansible_user` (or `ansible_ssh_user`, or KubeKey's
/// `connector.user`), else `default` (the `remote_user` keyword, `-u`, `ansible.cfg`).
pub fn login_user(
    get: &dyn Fn(&str) -> Result<Option<serde_json::Value>>,
    default: Option<&str>,
) -> Result<Option<String>> {
    use serde_json::Value;
    let text = |v: Value| match v {
        Value::String(s) => s,
        other => other.to_string(),
    };
    for k in ["ansible_user", "ansible_ssh_user"] {
        if let Some(v) = get(k)?.filter(|v| !v.is_null()) {
            return Ok(Some(text(v)));
        }
    }
    let connector = get("connector")?.unwrap_or(Value::Null);
    if let Some(v) = connector.get("user").filter(|v| !v.is_null()) {
        return Ok(Some(text(v.clone())));
    }
    Ok(default.map(str::to_string))
}

/// The connection types kk drives (`ansible_connection`, `connector.type`): `local`, and
/// `ssh` under Ansible's other names for it.
pub const CONNECTION_TYPES: [&str; 4] = ["local", "ssh", "smart", "paramiko"];

/// Checks a connection type (the inventory's literal ones when it loads, templated ones
/// when rendered).
pub fn check_connection_type(kind: &str) -> std::result::Result<(), String> {
    #[cfg(test)]
    if kind == "fake" {
        return Ok(());
    }
    if CONNECTION_TYPES.contains(&kind) {
        return Ok(());
    }
    Err(format!(
        "unknown connection type `{}`: kk connects with {}",
        kind,
        CONNECTION_TYPES.join(", ")
    ))
}

/// A port (`ansible_port`, `ansible_ssh_port`, `connector.port`): a whole number from 1 to
/// 65535, written as a number or as digits in a string.
pub fn parse_port(value: &serde_json::Value) -> std::result::Result<u16, String> {
    use serde_json::Value;
    let port = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    match port {
        Some(p @ 1..=65535) => Ok(p as u16),
        _ => Err(format!(
            "port {} is not a port number (a whole number from 1 to 65535)",
            value
        )),
    }
}

/// Where commands and paths enter a host's connection. A NUL byte cannot travel in a
/// script, an environment variable or a path (the OS cuts or refuses it): it is the
/// task's bad argument, said so, not a connection that broke.
struct NulGuard {
    inner: Arc<dyn Connection>,
}

impl NulGuard {
    fn wrap(inner: Arc<dyn Connection>) -> Arc<dyn Connection> {
        Arc::new(NulGuard { inner })
    }
}

/// An error when `text` holds a NUL byte: `what` names it, and for a script the word that
/// holds it is quoted (with the NUL as `\0`), so the argument can be found.
fn refuse_nul(what: &str, text: &str, quote: bool) -> Result<()> {
    let Some(at) = text.find('\0') else {
        return Ok(());
    };
    let mut msg = format!("{} holds a NUL byte", what);
    if quote {
        let start = text[..at]
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let end = text[at..]
            .find(char::is_whitespace)
            .map_or(text.len(), |i| at + i);
        let word: String = text[start..end]
            .replace('\0', "\\0")
            .chars()
            .take(60)
            .collect();
        msg.push_str(&format!(" (in `{}`)", word));
    }
    Err(crate::error::Error::new(crate::error::ErrorKind::ModuleArgs, msg)
        .with_code("kk::module::nul_byte")
        .help("a command, path or argument cannot contain a NUL byte (`\\0`, `\\x00`); remove it from the task's arguments"))
}

#[async_trait]
impl Connection for NulGuard {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput> {
        refuse_nul("the command", &req.script, true)?;
        for (k, v) in &req.env {
            refuse_nul(
                &format!("environment variable `{}`", k.replace('\0', "\\0")),
                &format!("{k}{v}"),
                false,
            )?;
        }
        if let Some(b) = &req.become_ {
            refuse_nul("the become user", &b.user, false)?;
            refuse_nul(
                "the become password",
                b.password.as_deref().unwrap_or(""),
                false,
            )?;
        }
        self.inner.exec(req).await
    }

    async fn fetch(&self, path: &str, become_: Option<&Become>) -> Result<Vec<u8>> {
        refuse_nul(
            &format!("the path `{}`", path.replace('\0', "\\0")),
            path,
            false,
        )?;
        self.inner.fetch(path, become_).await
    }

    async fn tunnel(&self) -> Result<Option<Tunnel>> {
        self.inner.tunnel().await
    }

    fn is_remote(&self) -> bool {
        self.inner.is_remote()
    }

    async fn close(&self) {
        self.inner.close().await
    }

    fn transport(&self) -> Transport {
        self.inner.transport()
    }
}

/// The code of an error that says become (sudo, su) refused to run the command: the task
/// fails on it whatever its `failed_when`, as in Ansible, where the connection raises it.
pub const BECOME_FAILED: &str = "kk::become";

/// Turns sudo's refusal into a clear error instead of a failed command (so a wrong or
/// missing become password is reported as such, on any connection); with su, removes su's
/// prompt from the output or says why su did not run the command ([`su::check`]).
pub fn check_sudo(out: ExecOutput, req: &ExecRequest, host: &str) -> Result<ExecOutput> {
    let Some(b) = &req.become_ else {
        return Ok(out);
    };
    if b.method == BecomeMethod::Su {
        return su::check(out, b, host);
    }
    if out.rc != 1 {
        return Ok(out);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let (msg, help) = if err.contains("incorrect password attempt") {
        (
            format!(
                "sudo on {} rejected the become password (to become {})",
                host, b.user
            ),
            "check `ansible_become_password` (or the connector password) for this host",
        )
    } else if err.contains("a password is required") {
        (
            format!(
                "sudo on {} asks for a password to become {}, and none was given",
                host, b.user
            ),
            "set `ansible_become_password`, or allow NOPASSWD in sudoers",
        )
    } else if err.contains("is not in the sudoers file")
        || err.contains("is not allowed to execute")
    {
        (
            format!(
                "the login user on {} may not use sudo to become {}",
                host, b.user
            ),
            "allow the user in /etc/sudoers(.d)",
        )
    } else {
        return Ok(out);
    };
    Err(
        crate::error::Error::new(crate::error::ErrorKind::Runtime, msg)
            .with_code(BECOME_FAILED)
            .note(format!("sudo said: {}", err.trim()))
            .help(help),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Ansible's sudo command lines: `become_flags` replace `-H -S -n`; with a password
    /// `-n` goes (kk then adds `-S -p ''`); without one kk keeps sudo non-interactive.
    #[test]
    fn sudo_and_su_flags_as_ansible_builds_them() {
        let b = |flags: Option<&str>, pw: bool| Become {
            user: "root".into(),
            password: pw.then(|| "s3cret".to_string()),
            method: BecomeMethod::Sudo,
            flags: flags.map(str::to_string),
        };
        let j = |v: Vec<String>| v.join(" ");
        assert_eq!(j(sudo_flags(&b(None, false))), "-H -S -n");
        assert_eq!(j(sudo_flags(&b(None, true))), "-H -S -p ");
        assert_eq!(j(sudo_flags(&b(Some("-E"), false))), "-E -n");
        assert_eq!(j(sudo_flags(&b(Some("-E"), true))), "-E -S -p ");
        assert_eq!(j(sudo_flags(&b(Some("-HSn -i"), true))), "-HS -i -p ");
        assert_eq!(
            j(sudo_flags(&b(Some("-H --non-interactive"), false))),
            "-H --non-interactive"
        );
        assert!(!sudo_flags(&b(Some("-E"), true))
            .iter()
            .any(|f| f.contains("s3cret")));
        let su = Become {
            method: BecomeMethod::Su,
            ..b(Some("-m  -s /bin/sh"), true)
        };
        assert_eq!(su_flags(&su), vec!["-m", "-s", "/bin/sh"]);
        assert!(su_flags(&Become { flags: None, ..su }).is_empty());
    }

    fn host(vars: serde_json::Value) -> Result<Arc<dyn Connection>> {
        let opts = ConnectOptions {
            workdir: std::env::temp_dir(),
            strict_host_keys: false,
            defaults: ConnectDefaults::default(),
        };
        for_host("h1", &|k| Ok(vars.get(k).cloned()), &opts)
    }

    #[test]
    fn ports_and_connection_types() {
        assert_eq!(parse_port(&json!(22)), Ok(22));
        assert_eq!(parse_port(&json!(" 2222 ")), Ok(2222));
        for bad in [
            json!(0),
            json!(65536),
            json!(-1),
            json!("ssh"),
            json!(2.5),
            json!(true),
        ] {
            let e = parse_port(&bad).unwrap_err();
            assert!(e.contains("from 1 to 65535"), "{e}");
        }
        assert!(check_connection_type("smart").is_ok());
        assert!(check_connection_type("winrm")
            .unwrap_err()
            .contains("`winrm`"));
        // A value that was templated fails the host's task, it does not make it unreachable.
        let e = host(json!({"ansible_connection": "docker"})).err().unwrap();
        assert_eq!(e.kind, crate::error::ErrorKind::Runtime);
        assert!(
            e.message
                .contains("host h1: unknown connection type `docker`"),
            "{}",
            e.message
        );
        let e = host(json!({"ansible_connection": "ssh", "ansible_port": "abc"}))
            .err()
            .unwrap();
        assert_eq!(e.kind, crate::error::ErrorKind::Runtime);
        assert!(
            e.message.contains("port \"abc\" is not a port number"),
            "{}",
            e.message
        );
    }

    #[test]
    fn ssh_args_lose_the_control_master_options() {
        assert_eq!(
            ssh_args_words(
                "-C -o ControlMaster=auto -o ControlPersist=60s -oControlPath=/x -o 'ServerAliveInterval 9'"
            ),
            vec!["-C", "-o", "ServerAliveInterval 9"]
        );
    }

    #[tokio::test]
    async fn a_nul_byte_is_an_argument_error() {
        let c = host(json!({"ansible_connection": "local"})).unwrap();
        let e = c
            .exec(&ExecRequest::script("echo 'a\0b' done"))
            .await
            .unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::ModuleArgs);
        assert!(
            e.message
                .contains("the command holds a NUL byte (in `'a\\0b'`)"),
            "{}",
            e.message
        );
        let mut req = ExecRequest::script("true");
        req.env.push(("X".into(), "a\0".into()));
        let e = c.exec(&req).await.unwrap_err();
        assert!(
            e.message
                .contains("environment variable `X` holds a NUL byte"),
            "{}",
            e.message
        );
        let e = c.fetch("/etc/\0passwd", None).await.unwrap_err();
        assert!(
            e.message
                .contains("the path `/etc/\\0passwd` holds a NUL byte"),
            "{}",
            e.message
        );
        let ok = c.exec(&ExecRequest::script("printf x")).await.unwrap();
        assert_eq!(ok.stdout, b"x");
    }
}
