//! Cluster API bootstrap data (cloud-init, ignition) mapped to files and commands.
//!
//! A bootstrap provider (CABPK) writes what a machine must do to join the cluster as a
//! cloud-config or an Ignition document, meant for a fresh VM that runs cloud-init or
//! Ignition on first boot. CAPKK's machines already run; so instead of a boot-time agent,
//! the provisioning playbook applies the same effects over SSH. This module is the
//! translation: an ordered list of [`Step`]s (files to write, directories to make, commands
//! to run), in the order cloud-init or Ignition would apply them. What has no meaning on an
//! existing machine (partitioning disks, remote config sources) is refused with a
//! [`ProvisioningError`] that says where, what and how to fix it, never silently dropped.
//!
//! Bootstrap data carries join tokens, certificates and private keys: neither a step's
//! `Debug` nor an error ever shows file contents.

mod cloud_init;
mod cloud_system;
mod error;
mod ignition;
mod jinja;
mod step;
mod users;

#[cfg(test)]
mod tests;

pub use error::{ErrorDetail, ProvisioningError};
pub use jinja::Metadata;
pub use step::{redact_command, Mkdir, Step, WriteFile};

/// The bootstrap Secret's `format` for cloud-init documents (also the default when the
/// Secret has no `format` key).
pub const FORMAT_CLOUD_CONFIG: &str = "cloud-config";
/// The bootstrap Secret's `format` for Ignition documents.
pub const FORMAT_IGNITION: &str = "ignition";

/// Maps bootstrap data to steps, for documents that need no per-machine values.
///
/// `format` is the bootstrap Secret's `format` key (`cloud-config`, or `ignition`; empty
/// means cloud-config as in Cluster API). A Jinja-templated cloud-config that uses
/// `ds.meta_data` variables needs the machine's name: use [`parse_with`] for those (this
/// function refuses them with an error saying so).
pub fn parse(value: &[u8], format: &str) -> Result<Vec<Step>, ProvisioningError> {
    parse_inner(value, format, None)
}

/// Maps bootstrap data to steps, rendering the Jinja variables of a templated cloud-config
/// (`{{ ds.meta_data.local_hostname }}`, …) from `meta`.
pub fn parse_with(
    value: &[u8],
    format: &str,
    meta: &Metadata,
) -> Result<Vec<Step>, ProvisioningError> {
    parse_inner(value, format, Some(meta))
}

fn parse_inner(
    value: &[u8],
    format: &str,
    meta: Option<&Metadata>,
) -> Result<Vec<Step>, ProvisioningError> {
    match format.trim() {
        "" | FORMAT_CLOUD_CONFIG => cloud_init::parse(value, meta),
        FORMAT_IGNITION => ignition::parse(value),
        other => Err(ProvisioningError::new(
            "bootstrap data",
            "format",
            "`cloud-config` or `ignition` (the bootstrap Secret's `format` key)",
            format!("`{}`", error::clip(other)),
            "use a bootstrap provider that writes cloud-config or Ignition (CABPK does both)",
        )),
    }
}

/// Quotes a string for a POSIX shell command line (single quotes, `'` as `'\''`), so file
/// names and user names from the document cannot change a generated command's meaning.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@,%".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Checks a path the document names for a file, directory or unit: absolute, no `..`, no
/// NUL or newline (which would break the playbook's commands), not `/` itself.
pub(crate) fn check_path(doc: &'static str, at: &str, path: &str) -> Result<(), ProvisioningError> {
    let bad = if !path.starts_with('/') {
        Some("a relative path")
    } else if path.split('/').any(|c| c == "..") {
        Some("a path with a `..` component")
    } else if path.contains(['\0', '\n', '\r']) {
        Some("a path with a NUL or line break")
    } else if path.trim_end_matches('/').is_empty() {
        Some("the root directory `/`")
    } else {
        None
    };
    match bad {
        None => Ok(()),
        Some(found) => Err(ProvisioningError::new(
            doc,
            at,
            "an absolute path such as /etc/kubernetes/pki/ca.crt",
            found,
            "write the full path from `/`, without `..`",
        )),
    }
}
