//! The output of the mapping: the steps the provisioning playbook applies in order.
//!
//! The JSON shape is a contract with the playbook (`{"write_file": {...}}`, `{"mkdir":
//! {...}}`, `{"shell": "..."}`, `{"argv": [...]}`): change it only together with the
//! playbook.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One thing to do on the machine. Exactly one key per step when serialized.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Write (or append to) a file. The playbook creates missing parent directories as
    /// `0755 root:root` (as cloud-init and Ignition do) and leaves existing ones alone.
    WriteFile(WriteFile),
    /// Create a directory (and its parents) and set its mode and owner.
    Mkdir(Mkdir),
    /// A command line for `/bin/sh -c` (cloud-init's string `runcmd` items).
    Shell(String),
    /// A command run without a shell (cloud-init's list `runcmd` items, `systemctl`).
    Argv(Vec<String>),
}

/// A file to write; `content` is raw bytes (already decoded from base64/gzip).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    /// Absolute path on the machine.
    pub path: String,
    /// The bytes to write, base64 in JSON so binary content survives.
    #[serde(
        rename = "content_base64",
        serialize_with = "ser_b64",
        deserialize_with = "de_b64"
    )]
    pub content: Vec<u8>,
    /// Octal mode with four digits, e.g. `0640`.
    pub mode: String,
    /// `user:group` (names or numeric ids), or `user` alone.
    pub owner: String,
    /// Append to an existing file instead of replacing it.
    pub append: bool,
}

/// A directory to make.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mkdir {
    /// Absolute path on the machine.
    pub path: String,
    /// Octal mode with four digits, e.g. `0755`.
    pub mode: String,
    /// `user:group` (names or numeric ids).
    pub owner: String,
}

fn ser_b64<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&STANDARD.encode(bytes))
}

fn de_b64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = String::deserialize(d)?;
    STANDARD
        .decode(s.as_bytes())
        .map_err(|_| serde::de::Error::custom("content_base64 is not valid base64"))
}

/// Flags whose next argument (or `=value`) is a secret in kubeadm command lines.
const SECRET_FLAGS: [&str; 4] = [
    "--token",
    "--certificate-key",
    "--tls-bootstrap-token",
    "--discovery-token",
];

/// A command line with the values of kubeadm's secret flags replaced by `<redacted>`, for
/// logs and `Debug`.
pub fn redact_command(line: &str) -> String {
    let mut out = Vec::new();
    let mut hide_next = false;
    for word in line.split(' ') {
        if hide_next && !word.is_empty() {
            out.push("<redacted>".to_string());
            hide_next = false;
            continue;
        }
        match SECRET_FLAGS
            .iter()
            .find(|f| word == **f || word.starts_with(&format!("{f}=")))
        {
            Some(flag) if word.len() > flag.len() => out.push(format!("{flag}=<redacted>")),
            Some(_) => {
                hide_next = true;
                out.push(word.to_string());
            }
            None => out.push(word.to_string()),
        }
    }
    out.join(" ")
}

impl fmt::Debug for WriteFile {
    /// Path, size, mode and owner only: the content may be a private key or a token.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteFile")
            .field("path", &self.path)
            .field("size", &self.content.len())
            .field("mode", &self.mode)
            .field("owner", &self.owner)
            .field("append", &self.append)
            .finish()
    }
}

impl fmt::Debug for Step {
    /// File contents never shown; kubeadm secret flags redacted in commands.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::WriteFile(w) => w.fmt(f),
            Step::Mkdir(m) => m.fmt(f),
            Step::Shell(line) => f.debug_tuple("Shell").field(&redact_command(line)).finish(),
            Step::Argv(argv) => f
                .debug_tuple("Argv")
                .field(&redact_command(&argv.join(" ")))
                .finish(),
        }
    }
}

impl Step {
    /// A file write with cloud-init's and Ignition's defaults for owner.
    pub(crate) fn write(
        path: &str,
        content: Vec<u8>,
        mode: u32,
        owner: &str,
        append: bool,
    ) -> Step {
        Step::WriteFile(WriteFile {
            path: path.to_string(),
            content,
            mode: format!("{mode:04o}"),
            owner: owner.to_string(),
            append,
        })
    }

    /// A command without a shell.
    pub(crate) fn argv<const N: usize>(words: [&str; N]) -> Step {
        Step::Argv(words.iter().map(|w| w.to_string()).collect())
    }
}
