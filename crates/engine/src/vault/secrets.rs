//! Where vault passwords come from, as ansible-core builds its list: `--vault-id
//! [label@]source` in order (source: a file, an executable script whose stdout is the
//! password, or `prompt`), then `--vault-password-file`s (label `default`), then
//! `ANSIBLE_VAULT_PASSWORD_FILE`, then a prompt for `--ask-vault-pass`.
//! `ANSIBLE_VAULT_IDENTITY_LIST` (comma-separated ids) comes before the command line's.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Keyring, Secret, DEFAULT_LABEL};
use crate::error::{Error, ErrorKind, Result};

/// The vault options of a command line.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `--vault-id` values, in order.
    pub vault_ids: Vec<String>,
    /// `--vault-password-file` values, in order.
    pub password_files: Vec<PathBuf>,
    /// `--ask-vault-pass`.
    pub ask: bool,
}

fn options(msg: String) -> Error {
    Error::new(ErrorKind::Options, msg).with_code("kk::vault::password")
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Loads the passwords `sources` (and the `ANSIBLE_VAULT_*` environment) name.
/// `new_password` asks twice and confirms (encrypting commands); `auto_prompt` asks once
/// when nothing else gives a password (ansible-vault does, ansible-playbook does not).
/// A source that fails is a warning when another one gave a password, else the error.
pub fn load_secrets(sources: &Sources, new_password: bool, auto_prompt: bool) -> Result<Keyring> {
    let mut ids: Vec<String> = env_nonempty("ANSIBLE_VAULT_IDENTITY_LIST")
        .map(|l| {
            l.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    ids.extend(sources.vault_ids.iter().cloned());
    let mut files = sources.password_files.clone();
    if let Some(f) = env_nonempty("ANSIBLE_VAULT_PASSWORD_FILE") {
        files.push(PathBuf::from(f));
    }
    for f in files {
        ids.push(format!("{}@{}", DEFAULT_LABEL, f.display()));
    }
    let ask = sources.ask
        || env_nonempty("ANSIBLE_ASK_VAULT_PASS")
            .is_some_and(|v| crate::ansible::to_bool(&v.into()) == Some(true));
    if ask || (ids.is_empty() && auto_prompt) {
        ids.push(format!("{}@prompt_ask_vault_pass", DEFAULT_LABEL));
    }
    let mut ring = Keyring::default();
    let mut last_error = None;
    for id in ids {
        if id.contains(';') {
            return Err(options(format!(
                "'{}' is not a valid vault id: the character ';' is not allowed in vault ids",
                id
            )));
        }
        let (label, source) = match id.split_once('@') {
            Some((l, s)) => (Some(l.to_string()), s.to_string()),
            None => (None, id.clone()),
        };
        if source == "prompt" || source == "prompt_ask_vault_pass" {
            let label = label.unwrap_or_else(|| DEFAULT_LABEL.to_string());
            let password = ask_password(&label, source == "prompt", new_password)?;
            ring.secrets.push(Secret::new(label, password));
            continue;
        }
        match password_from(Path::new(&source), label.as_deref(), &ring) {
            Ok(password) => ring.secrets.push(Secret::new(
                label.unwrap_or_else(|| DEFAULT_LABEL.to_string()),
                password,
            )),
            Err(e) => {
                eprintln!(
                    "[WARNING]: Error getting vault password file ({}): {}",
                    label.as_deref().unwrap_or(DEFAULT_LABEL),
                    e.message
                );
                last_error = Some(e);
            }
        }
    }
    match last_error {
        Some(e) if ring.secrets.is_empty() => Err(e),
        _ => Ok(ring),
    }
}

/// Asks on the terminal: `--vault-id label@prompt` names its label, `--ask-vault-pass`
/// keeps ansible-core's older words (scripts that drive the prompt expect them).
fn ask_password(label: &str, with_label: bool, new_password: bool) -> Result<Vec<u8>> {
    let prompts: Vec<String> = match (with_label, new_password) {
        (true, false) => vec![format!("Vault password ({}): ", label)],
        (true, true) => vec![
            format!("New vault password ({}): ", label),
            format!("Confirm new vault password ({}): ", label),
        ],
        (false, false) => vec!["Vault password: ".into()],
        (false, true) => vec![
            "New Vault password: ".into(),
            "Confirm New Vault password: ".into(),
        ],
    };
    let mut answers = Vec::new();
    for p in &prompts {
        let answer = super::prompt_hidden(p).map_err(|e| {
            options(format!(
                "cannot ask for the vault password ({}): {}",
                label,
                match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => e.to_string(),
                    _ => format!("no terminal to ask on ({})", e),
                }
            ))
            .help("give the password with --vault-password-file FILE or --vault-id LABEL@FILE when there is no terminal")
        })?;
        let answer = answer.trim().as_bytes().to_vec();
        if answer.is_empty() {
            return Err(options("Invalid vault password was provided".into()));
        }
        answers.push(answer);
    }
    if answers.iter().any(|a| *a != answers[0]) {
        return Err(options("Passwords do not match".into()));
    }
    Ok(answers.swap_remove(0))
}

/// The password a file holds (stripped), or an executable's output.
fn password_from(path: &Path, label: Option<&str>, ring: &Keyring) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|_| {
        options(format!(
            "The vault password file {} was not found",
            path.display()
        ))
    })?;
    if meta.is_dir() {
        return Err(options(format!(
            "The vault password file provided '{}' can not be a directory",
            path.display()
        )));
    }
    if meta.permissions().mode() & 0o111 != 0 {
        return password_from_script(path, label);
    }
    let data = std::fs::read(path).map_err(|e| {
        options(format!(
            "Could not read vault password file '{}': {}",
            path.display(),
            e
        ))
    })?;
    let mut data = data.trim_ascii().to_vec();
    // A password file may itself be vaulted with a password given before it.
    if super::is_encrypted(&data) {
        data = ring
            .decrypt(&data)
            .map_err(|e| options(format!("{} for {}", e, path.display())))?
            .0;
    }
    let data = trim_newlines(&data).to_vec();
    if data.is_empty() {
        return Err(options(format!(
            "Invalid vault password was provided from file ({})",
            path.display()
        )));
    }
    Ok(data)
}

fn trim_newlines(mut b: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = b {
        b = rest;
    }
    b
}

/// Runs a password script: its stdout is the password. A script named `*-client[.ext]` is
/// given `--vault-id <label>` and may answer exit 2 for "no such id" (ansible-core's rule).
fn password_from_script(path: &Path, label: Option<&str>) -> Result<Vec<u8>> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let client = stem.ends_with("-client");
    // By its path, never looked up in $PATH (`pass.sh` is the file in the working dir).
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let path = path.as_path();
    let mut cmd = Command::new(path);
    cmd.stdin(Stdio::inherit()).stdout(Stdio::piped());
    if client {
        cmd.stderr(Stdio::piped());
        if let Some(l) = label {
            cmd.args(["--vault-id", l]);
        }
    }
    let out = cmd.output().map_err(|e| {
        options(format!(
            "Problem running vault password script {} ({}). If this is not a script, remove the executable bit from the file.",
            path.display(),
            e
        ))
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code().unwrap_or(-1);
        return Err(options(if client && code == 2 {
            format!(
                "Vault password client script {} did not find a secret for vault-id={}: {}",
                path.display(),
                label.unwrap_or(""),
                stderr.trim()
            )
        } else {
            format!(
                "Vault password script {} returned non-zero ({}): {}",
                path.display(),
                code,
                stderr.trim()
            )
        }));
    }
    let password = trim_newlines(&out.stdout).to_vec();
    if password.is_empty() {
        return Err(options(format!(
            "Invalid vault password was provided from script ({})",
            path.display()
        )));
    }
    Ok(password)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_scripts_and_labels() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pass");
        std::fs::write(&file, "  hunter2 \n").unwrap();
        let script = dir.path().join("pass.sh");
        std::fs::write(&script, "#!/bin/sh\necho fromscript\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let sources = Sources {
            vault_ids: vec![format!("prod@{}", script.display())],
            password_files: vec![file.clone()],
            ask: false,
        };
        let ring = load_secrets(&sources, false, false).unwrap();
        let got: Vec<(&str, &[u8])> = ring
            .secrets
            .iter()
            .map(|s| (s.label.as_str(), s.password.as_slice()))
            .collect();
        assert_eq!(
            got,
            vec![("prod", &b"fromscript"[..]), ("default", &b"hunter2"[..])]
        );
        // One missing file among good ones is a warning; alone it is the error.
        let missing = dir.path().join("none");
        let sources = Sources {
            password_files: vec![missing.clone(), file],
            ..Default::default()
        };
        assert_eq!(
            load_secrets(&sources, false, false).unwrap().secrets.len(),
            1
        );
        let sources = Sources {
            password_files: vec![missing],
            ..Default::default()
        };
        let e = load_secrets(&sources, false, false).unwrap_err();
        assert!(e.message.contains("was not found"), "{}", e.message);
        assert_eq!(e.exit_code(), 5);
    }
}
