//! `kk create config` and `kk create inventory`: write the bundled, commented starting files.

use std::io::Write;
use std::path::Path;

use kk_engine::{Error, ErrorKind};

use crate::bundle;

/// The Kubernetes version `kk create config` writes when none is given (upstream's default).
pub const DEFAULT_KUBE_VERSION: &str = "v1.34.3";

/// The placeholder in `builtin/config/v1.XX.yaml` that becomes the full version.
const PLACEHOLDER: &str = "KUBE_VERSION";

/// Checks a `--with-kubernetes` value and gives it the `v` prefix (`1.33.1` → `v1.33.1`).
pub fn kube_version(v: &str) -> Result<String, Error> {
    let bare = v.strip_prefix('v').unwrap_or(v);
    let parts: Vec<&str> = bare.split('.').collect();
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != 3 || !parts.iter().all(|p| numeric(p)) {
        return Err(Error::new(
            ErrorKind::Options,
            format!("`{}` is not a Kubernetes version", v),
        )
        .help("give a full version such as v1.34.3 (major.minor.patch)"));
    }
    Ok(format!("v{}", bare))
}

/// The minors the bundled configs cover, e.g. `["v1.23", …, "v1.34"]`.
fn supported_minors() -> Vec<String> {
    let mut minors: Vec<(u32, u32, String)> = bundle::list("builtin/config")
        .into_iter()
        .filter_map(|f| {
            let m = f.strip_suffix(".yaml")?.to_string();
            let (maj, min) = m.strip_prefix('v')?.split_once('.')?;
            Some((maj.parse().ok()?, min.parse().ok()?, m))
        })
        .collect();
    minors.sort();
    minors.into_iter().map(|(_, _, m)| m).collect()
}

/// The starting config for a Kubernetes version, as text.
pub fn config_text(version: &str) -> Result<String, Error> {
    let version = kube_version(version)?;
    let minor = version.rsplit_once('.').map(|(m, _)| m).unwrap_or(&version);
    match bundle::file(&format!("builtin/config/{}.yaml", minor)) {
        Some(text) => Ok(text.replace(PLACEHOLDER, &version)),
        None => Err(Error::new(
            ErrorKind::Options,
            format!("Kubernetes {} is not supported by this kk", version),
        )
        .help(format!(
            "choose a version of one of these minors: {}",
            supported_minors().join(", ")
        ))),
    }
}

/// `kk create config`.
pub fn config(version: &str, output: Option<&Path>) -> Result<(), Error> {
    write_out(&config_text(version)?, output)
}

/// `kk create inventory`.
pub fn inventory(output: Option<&Path>) -> Result<(), Error> {
    let text = bundle::file("builtin/inventory/localhost.yaml").ok_or_else(|| {
        Error::new(
            ErrorKind::Io,
            "this kk was built without builtin/inventory/localhost.yaml",
        )
    })?;
    write_out(text, output)
}

/// Writes to a new file (never over an existing one) or to standard output.
fn write_out(text: &str, output: Option<&Path>) -> Result<(), Error> {
    let Some(path) = output else {
        let _ = std::io::stdout().write_all(text.as_bytes());
        return Ok(());
    };
    let io = |e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("cannot write {}: {}", path.display(), e),
        )
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::new(
                    ErrorKind::Options,
                    format!(
                        "{} already exists; kk does not overwrite it",
                        path.display()
                    ),
                )
                .help("remove it first, or give another file with -o")
            } else {
                io(e)
            }
        })?;
    file.write_all(text.as_bytes()).map_err(io)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_normalised_or_refused() {
        assert_eq!(kube_version("1.33.1").unwrap(), "v1.33.1");
        assert_eq!(kube_version("v1.34.3").unwrap(), "v1.34.3");
        for bad in ["v1.34", "latest", "v1.x.3", "", "v1.34.3.4"] {
            assert!(kube_version(bad).is_err(), "{}", bad);
        }
    }

    #[test]
    fn minors_are_listed_in_version_order_from_v1_23() {
        let minors = supported_minors();
        // Every minor from upstream's oldest (v1.23) on, none left out, in order.
        let want: Vec<String> = (23..23 + minors.len())
            .map(|m| format!("v1.{}", m))
            .collect();
        assert_eq!(minors, want);
        assert!(minors.contains(&"v1.34".to_string()), "{:?}", minors);
        let text = config_text("v1.23.17").unwrap();
        assert!(text.contains("kube_version: v1.23.17"), "{}", text);
    }
}
