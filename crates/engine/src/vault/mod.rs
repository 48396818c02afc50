//! Ansible Vault: files and `!vault` values encrypted with a password, readable by
//! ansible-vault and kk alike (format 1.1 and 1.2, cipher AES256).
//!
//! The passwords of a run form one [`Keyring`], installed once by the command line before
//! anything is loaded ([`install`]), as ansible-core's `VaultSecretsContext`: every file kk
//! reads ([`crate::error::read_file`]) and every `!vault` scalar the YAML loader meets are
//! decrypted with it, so inventories, vars files, group_vars, `-e @file`, role vars and
//! templates all take vaulted content without each knowing about it.

mod crypto;
mod format;
mod prompt;
pub mod redact;
mod secrets;

use std::path::Path;
use std::sync::{Arc, RwLock};

use crate::error::{Error, ErrorKind, Result, Span};

pub use format::{is_encrypted, DEFAULT_LABEL, HEADER};
pub use prompt::prompt_hidden;
pub use secrets::{load_secrets, Sources};

/// One vault password and the vault id (label) it was given for.
#[derive(Clone)]
pub struct Secret {
    /// The vault id: `default` unless given as `--vault-id label@source`.
    pub label: String,
    password: Vec<u8>,
}

impl Secret {
    /// A password for a label.
    pub fn new(label: impl Into<String>, password: impl Into<Vec<u8>>) -> Secret {
        Secret {
            label: label.into(),
            password: password.into(),
        }
    }

    /// The password itself, for encrypting with it (never for printing).
    pub fn password_bytes(&self) -> &[u8] {
        &self.password
    }
}

/// Makes the files this process creates from now on private to its user (umask 077), as
/// ansible-vault does before writing plaintext or vaulted files.
pub fn private_umask() {
    // SAFETY: umask only changes this process's file creation mask.
    unsafe { libc::umask(0o077) };
}

/// Splits a command line (`$EDITOR`) into words as Python's `shlex.split`.
pub fn split_command(line: &str) -> Vec<String> {
    crate::ansible::split_words(line)
}

// Never print the password, whatever formats a Secret.
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({})", self.label)
    }
}

/// The passwords of a run, in the order they are tried.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    /// In order of precedence.
    pub secrets: Vec<Secret>,
}

/// Why vaulted text did not decrypt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VaultError {
    /// No password was given at all.
    NoSecrets,
    /// The text is not a vault envelope kk can read.
    Format(String),
    /// No password decrypted it.
    Failed,
}

impl std::fmt::Display for VaultError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // ansible-core's words, so users find them in its docs and forums.
            VaultError::NoSecrets => {
                f.write_str("Attempting to decrypt but no vault secrets found")
            }
            VaultError::Format(m) if m.starts_with("Input is not") => f.write_str(m),
            VaultError::Format(m) => write!(f, "Vault format error: {}", m),
            VaultError::Failed => {
                f.write_str("Decryption failed (no vault secrets were found that could decrypt)")
            }
        }
    }
}

impl Keyring {
    /// A keyring of these secrets.
    pub fn new(secrets: Vec<Secret>) -> Keyring {
        Keyring { secrets }
    }

    /// Decrypts vaulted text: the secrets whose label is the envelope's are tried first,
    /// then all the others in order (ansible-core's default, `vault_id_match = False`).
    /// Returns the plaintext and the secret that opened it.
    pub fn decrypt(&self, data: &[u8]) -> Result<(Vec<u8>, &Secret), VaultError> {
        if !is_encrypted(data) {
            return Err(VaultError::Format(
                "Input is not vault encrypted data".into(),
            ));
        }
        let env = format::parse(data).map_err(|m| VaultError::Format(m.to_string()))?;
        if env.cipher != "AES256" {
            return Err(VaultError::Format(format!(
                "cipher {:?} is not known (only AES256 is)",
                env.cipher
            )));
        }
        if self.secrets.is_empty() {
            return Err(VaultError::NoSecrets);
        }
        let label = env.label.as_deref().unwrap_or(DEFAULT_LABEL);
        let first = self.secrets.iter().filter(|s| s.label == label);
        let rest = self.secrets.iter().filter(|s| s.label != label);
        for secret in first.chain(rest) {
            match crypto::decrypt(&env.payload, &secret.password) {
                Ok(plain) => return Ok((plain, secret)),
                Err(crypto::CryptoError::Format(m)) => {
                    return Err(VaultError::Format(m.to_string()))
                }
                Err(_) => continue,
            }
        }
        Err(VaultError::Failed)
    }
}

/// Encrypts `plaintext` with `password` under `label` (1.2 header unless the label is
/// `default` or empty): the text ansible-vault writes, newline-terminated.
pub fn encrypt(plaintext: &[u8], password: &[u8], label: Option<&str>) -> std::io::Result<Vec<u8>> {
    let salt = crypto::random_salt()?;
    Ok(format::format(
        &crypto::encrypt(plaintext, password, &salt),
        label,
    ))
}

/// [`encrypt`] with a given salt (the `vault` filter's `salt=`, which makes the output
/// repeatable), or a random one when `None`.
pub fn encrypt_salted(
    plaintext: &[u8],
    password: &[u8],
    salt: Option<&[u8]>,
    label: Option<&str>,
) -> std::io::Result<Vec<u8>> {
    match salt {
        None => encrypt(plaintext, password, label),
        Some(salt) => Ok(format::format(
            &crypto::encrypt(plaintext, password, salt),
            label,
        )),
    }
}

/// The plaintexts `!vault` scalars gave this process: the `vault_encrypted` test asks
/// whether a value is one (kk decrypts `!vault` values as they load).
static SCALARS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// True when `text` is what a `!vault` scalar decrypted to.
pub fn is_vault_scalar(text: &str) -> bool {
    SCALARS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|s| s == text)
}

static KEYRING: RwLock<Option<Arc<Keyring>>> = RwLock::new(None);

/// Makes `keyring` the one every later load decrypts with (replacing any earlier one).
pub fn install(keyring: Keyring) {
    *KEYRING.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(keyring));
}

/// The installed keyring (empty when none was installed).
pub fn installed() -> Arc<Keyring> {
    KEYRING
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

fn help_for(e: &VaultError) -> &'static str {
    match e {
        VaultError::NoSecrets => {
            "give the vault password: --vault-password-file FILE, --vault-id LABEL@FILE or --ask-vault-pass"
        }
        VaultError::Failed => {
            "the password given does not open this vault: check --vault-password-file / --vault-id"
        }
        VaultError::Format(_) => "the vaulted text is damaged: encrypt it again with `kk vault encrypt`",
    }
}

/// A file's bytes, decrypted when they are vaulted (the whole file), else as they are.
pub fn decrypt_file(path: &Path, data: Vec<u8>) -> Result<Vec<u8>> {
    if !is_encrypted(&data) {
        return Ok(data);
    }
    installed()
        .decrypt(&data)
        .map(|(plain, _)| {
            redact::remember_file(&String::from_utf8_lossy(&plain));
            plain
        })
        .map_err(|e| {
            Error::new(ErrorKind::Runtime, format!("{} for {}", e, path.display()))
                .with_code("kk::vault::decrypt")
                .help(help_for(&e))
        })
}

/// The plaintext of a `!vault` scalar at `span`, as UTF-8 text.
pub fn decrypt_scalar(text: &str, span: &Span) -> Result<String> {
    let err = |msg: String, help: &str| {
        Error::new(ErrorKind::Runtime, msg)
            .at(span)
            .with_code("kk::vault::decrypt")
            .help(help.to_string())
    };
    if !is_encrypted(text.trim_start().as_bytes()) {
        return Err(err(
            "a `!vault` value must be vaulted text starting with `$ANSIBLE_VAULT;`".into(),
            "paste the whole output of `kk vault encrypt_string` (or ansible-vault's)",
        ));
    }
    let (plain, _) = installed()
        .decrypt(text.trim_start().as_bytes())
        .map_err(|e| err(e.to_string(), help_for(&e)))?;
    let plain = String::from_utf8(plain).map_err(|_| {
        err(
            "the decrypted `!vault` value is not UTF-8 text".into(),
            "vault a text value",
        )
    })?;
    redact::remember(&plain);
    let mut scalars = SCALARS.write().unwrap_or_else(|e| e.into_inner());
    if !scalars.contains(&plain) {
        scalars.push(plain.clone());
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_tried_first_then_the_rest() {
        let text = encrypt(b"v", b"p2", Some("two")).unwrap();
        let ring = Keyring::new(vec![Secret::new("one", "p1"), Secret::new("two", "p2")]);
        let (plain, used) = ring.decrypt(&text).unwrap();
        assert_eq!((plain.as_slice(), used.label.as_str()), (&b"v"[..], "two"));
        // A label no secret has: every secret is tried.
        let text = encrypt(b"v", b"p1", Some("other")).unwrap();
        assert_eq!(ring.decrypt(&text).unwrap().1.label, "one");
        assert_eq!(
            Keyring::default().decrypt(&text).unwrap_err(),
            VaultError::NoSecrets
        );
        let bad = Keyring::new(vec![Secret::new("default", "nope")]);
        assert_eq!(bad.decrypt(&text).unwrap_err(), VaultError::Failed);
        assert!(format!("{:?}", bad).contains("default") && !format!("{:?}", bad).contains("nope"));
    }
}
