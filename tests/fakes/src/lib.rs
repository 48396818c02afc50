//! FAKE kubeadm, kubelet, kubectl, helm and calicoctl for kk's tests. NOT the real tools:
//! the test hosts cannot run an API server (nor Calico), so these stand in for them, one
//! multi-call binary (`kube-fake`) installed under each tool's name; argv[0]'s basename
//! picks the tool.
//!
//! What every fake does:
//! - reads its version (`v1.30.8`, `v3.18.5`, `v3.29.7`) from the `KK-FAKE-VERSION=`
//!   trailer line the test appended to the binary (`/proc/self/exe`);
//! - checks its arguments and every file it is given as strictly as the real tool would
//!   (kubeadm configs field by field against kubeadm's documented API: [`kubeadm_api`]);
//! - leaves only what kk's flow reads next (admin.conf, kubelet.conf, tokens, certificate
//!   keys, helm releases, node labels, Calico's released node data) under the real paths,
//!   and its state under `/var/lib/kk-fakes/`;
//! - appends one JSON line per call to `/var/lib/kk-fakes/journal.jsonl`:
//!   `{"tool", "args", "files": {path: content}, "exit", "error"}`;
//! - fails with exit 64 and `FAKE <tool>: unsupported: <args>` for any call outside the
//!   interface kk's roles are allowed to use, so a role cannot silently depend on more.
//!
//! `KK_FAKE_ROOT=<dir>` (for this crate's own tests) prefixes every absolute path and skips
//! `systemctl`.

pub mod calicoctl;
pub mod helm;
pub mod kubeadm;
pub mod kubeadm_api;
pub mod kubectl;
pub mod kubelet;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The trailer line the test appends to the binary: `KK-FAKE-VERSION=v1.30.8`.
pub const VERSION_TRAILER: &str = "KK-FAKE-VERSION=";
/// Where the fakes keep their journal and state on a host.
pub const STATE_DIR: &str = "/var/lib/kk-fakes";
/// The journal: one JSON line per call.
pub const JOURNAL: &str = "/var/lib/kk-fakes/journal.jsonl";

/// A failed call: exit code and message (printed as `FAKE <tool>: <msg>`).
#[derive(Debug)]
pub struct Fail {
    /// The exit code.
    pub code: i32,
    /// What is printed.
    pub msg: String,
}

/// A call's outcome: success, or the failure to report.
pub type Res = Result<(), Fail>;

/// Exit 1 with a message.
pub fn fail<T>(msg: impl Into<String>) -> Result<T, Fail> {
    Err(Fail {
        code: 1,
        msg: msg.into(),
    })
}

/// One invocation: the tool, its arguments, its version, and the files it was given.
pub struct Call {
    /// The tool played (argv[0]'s name).
    pub tool: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The release it plays (from the binary's version trailer).
    pub version: String,
    /// The files it was given (path → content), journaled with the call.
    pub files: BTreeMap<String, String>,
}

impl Call {
    /// Exit 64: a call outside the fake's interface.
    pub fn unsupported<T>(&self) -> Result<T, Fail> {
        Err(Fail {
            code: 64,
            msg: format!("unsupported: {}", self.args.join(" ")),
        })
    }

    /// Reads a file the call was given (recorded in the journal); `-` is stdin.
    pub fn read_input(&mut self, path: &str) -> Result<String, Fail> {
        let text = if path == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|e| Fail {
                code: 1,
                msg: format!("reading stdin: {}", e),
            })?;
            s
        } else {
            match std::fs::read_to_string(host_path(path)) {
                Ok(s) => s,
                Err(e) => return fail(format!("{}: {}", path, e)),
            }
        };
        self.files.insert(path.to_string(), text.clone());
        Ok(text)
    }

    /// The version's (major, minor): `v1.30.8` → (1, 30).
    pub fn minor(&self) -> (u32, u32) {
        parse_minor(&self.version)
    }
}

/// `v1.30.8` → (1, 30); (0, 0) when it does not parse.
pub fn parse_minor(version: &str) -> (u32, u32) {
    let mut it = version.trim_start_matches('v').split('.');
    let major = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let minor = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (major, minor)
}

/// A path on the host (under `KK_FAKE_ROOT` when set).
pub fn host_path(p: &str) -> PathBuf {
    match std::env::var_os("KK_FAKE_ROOT") {
        Some(root) if p.starts_with('/') => Path::new(&root).join(&p[1..]),
        _ => PathBuf::from(p),
    }
}

/// Writes a file on the host atomically (parents created).
pub fn write_file(p: &str, content: &str) -> Res {
    let path = host_path(p);
    let io = |e: std::io::Error| Fail {
        code: 1,
        msg: format!("writing {}: {}", p, e),
    };
    std::fs::create_dir_all(path.parent().unwrap()).map_err(io)?;
    let tmp = path.with_extension("kk-fake-tmp");
    std::fs::write(&tmp, content).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)
}

/// Whether a path of the host (as the fake sees it) exists.
pub fn exists(p: &str) -> bool {
    host_path(p).exists()
}

/// `systemctl <args>` (skipped under `KK_FAKE_ROOT`).
pub fn systemctl(args: &[&str]) -> Res {
    if std::env::var_os("KK_FAKE_ROOT").is_some() {
        return Ok(());
    }
    let out = std::process::Command::new("systemctl")
        .args(args)
        .output()
        .map_err(|e| Fail {
            code: 1,
            msg: format!("systemctl: {}", e),
        })?;
    if !out.status.success() {
        return fail(format!(
            "systemctl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// `n` random bytes as hex.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut buf);
    }
    hex::encode(buf)
}

/// `n` random characters of `[a-z0-9]`.
pub fn random_token_part(n: usize) -> String {
    const A: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut buf = vec![0u8; n];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut buf);
    }
    buf.iter()
        .map(|b| A[*b as usize % A.len()] as char)
        .collect()
}

/// The version trailer of a binary's bytes: the text after the last `KK-FAKE-VERSION=`.
pub fn version_of(bytes: &[u8]) -> Option<String> {
    let needle = VERSION_TRAILER.as_bytes();
    let pos = bytes.windows(needle.len()).rposition(|w| w == needle)?;
    let rest = &bytes[pos + needle.len()..];
    let v = String::from_utf8_lossy(rest).trim().to_string();
    (!v.is_empty() && !v.contains('\n')).then_some(v)
}

/// A command-line flag's value: `--name=v`, `--name v` (and `-n v` when `short` is given).
/// Removes it from `args`. `Ok(None)` when absent.
pub fn take_flag(
    args: &mut Vec<String>,
    long: &str,
    short: Option<&str>,
) -> Result<Option<String>, Fail> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let eq = format!("{}=", long);
        if let Some(v) = a.strip_prefix(&eq) {
            found = Some(v.to_string());
            args.remove(i);
            continue;
        }
        if a == long || short == Some(a.as_str()) {
            if i + 1 >= args.len() {
                return fail(format!("flag needs an argument: {}", a));
            }
            found = Some(args.remove(i + 1));
            args.remove(i);
            continue;
        }
        if let Some(s) = short {
            if let Some(v) = a.strip_prefix(&format!("{}=", s)) {
                found = Some(v.to_string());
                args.remove(i);
                continue;
            }
        }
        i += 1;
    }
    Ok(found)
}

/// Every value of a repeatable flag, in order (removed from `args`).
pub fn take_all(
    args: &mut Vec<String>,
    long: &str,
    short: Option<&str>,
) -> Result<Vec<String>, Fail> {
    let mut out = Vec::new();
    while let Some(v) = take_flag_once(args, long, short)? {
        out.push(v);
    }
    Ok(out)
}

fn take_flag_once(
    args: &mut Vec<String>,
    long: &str,
    short: Option<&str>,
) -> Result<Option<String>, Fail> {
    let eq = format!("{}=", long);
    for i in 0..args.len() {
        let a = args[i].clone();
        if let Some(v) = a.strip_prefix(&eq) {
            args.remove(i);
            return Ok(Some(v.to_string()));
        }
        if a == long || short == Some(a.as_str()) {
            if i + 1 >= args.len() {
                return fail(format!("flag needs an argument: {}", a));
            }
            let v = args.remove(i + 1);
            args.remove(i);
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// Removes a boolean flag (`--name` or `--name=true`); whether it was there.
pub fn take_bool(args: &mut Vec<String>, long: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != long && *a != format!("{}=true", long));
    args.len() != before
}

/// The fake's state on this host (`/var/lib/kk-fakes/<name>.json`), `{}` when absent.
pub fn load_state(name: &str) -> Value {
    std::fs::read_to_string(host_path(&format!("{}/{}.json", STATE_DIR, name)))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_else(|| json!({}))
}

/// Keeps the fake cluster's state `name` for later calls (what the real cluster would hold).
pub fn save_state(name: &str, v: &Value) -> Res {
    write_file(
        &format!("{}/{}.json", STATE_DIR, name),
        &serde_json::to_string_pretty(v).unwrap(),
    )
}

/// A kubeconfig's `server` (checks it is a kubeconfig: `kind: Config` with a cluster).
pub fn kubeconfig_server(text: &str, path: &str) -> Result<String, Fail> {
    let v: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| Fail {
        code: 1,
        msg: format!("{}: not YAML: {}", path, e),
    })?;
    if v["kind"].as_str() != Some("Config") {
        return fail(format!("{}: not a kubeconfig (kind is not Config)", path));
    }
    match v["clusters"][0]["cluster"]["server"].as_str() {
        Some(s) => Ok(s.to_string()),
        None => fail(format!(
            "{}: not a kubeconfig (no clusters[0].cluster.server)",
            path
        )),
    }
}

/// The entry point: runs the tool named by argv[0] and journals the call; the exit code.
pub fn main_with(argv: Vec<String>) -> i32 {
    let tool = argv
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    let exe = std::fs::read("/proc/self/exe").unwrap_or_default();
    let version = version_of(&exe).unwrap_or_default();
    let mut call = Call {
        tool: tool.clone(),
        args: argv.into_iter().skip(1).collect(),
        version,
        files: BTreeMap::new(),
    };
    let result = if call.version.is_empty() {
        fail("no KK-FAKE-VERSION= trailer at the end of the binary (the test appends it)")
    } else {
        // Calls that read and write the host's state run one at a time, as kk may run several
        // kubectl calls on one host at once (tasks delegated to the init node for every node):
        // the real tools get that from the API server. The long-running kubelet takes no lock.
        let _lock = if tool == "kubelet" {
            None
        } else {
            state_lock()
        };
        match tool.as_str() {
            "kubeadm" => kubeadm::run(&mut call),
            "kubelet" => kubelet::run(&mut call),
            "kubectl" => kubectl::run(&mut call),
            "helm" => helm::run(&mut call),
            "calicoctl" => calicoctl::run(&mut call),
            _ => call.unsupported(),
        }
    };
    let (code, error) = match &result {
        Ok(()) => (0, None),
        Err(f) => (f.code, Some(f.msg.clone())),
    };
    if let Some(e) = &error {
        eprintln!("FAKE {}: {}", tool, e);
    }
    journal(&call, code, error.as_deref());
    code
}

/// An exclusive lock on `/var/lib/kk-fakes/.lock`, held until the returned file is dropped
/// (None when the directory cannot be made: the call then runs unlocked).
fn state_lock() -> Option<std::fs::File> {
    let path = host_path(&format!("{}/.lock", STATE_DIR));
    std::fs::create_dir_all(path.parent()?).ok()?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()?;
    f.lock().ok()?;
    Some(f)
}

/// Appends the call's line to the journal (best effort: a journal that cannot be written
/// is reported on stderr, the call's outcome stands).
pub fn journal(call: &Call, code: i32, error: Option<&str>) {
    let line = json!({
        "tool": call.tool,
        "version": call.version,
        "args": call.args,
        "files": call.files,
        "exit": code,
        "error": error,
    });
    let path = host_path(JOURNAL);
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    let r = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{}\n", line).as_bytes()));
    if let Err(e) = r {
        eprintln!(
            "FAKE {}: cannot write the journal {}: {}",
            call.tool,
            path.display(),
            e
        );
    }
}
