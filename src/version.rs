//! `kk version`: what this binary is, as JSON (upstream's fields, with the Rust compiler in
//! place of Go's), or just the version with `--short`. The values are fixed at build time by
//! build.rs.

use serde_json::json;

/// The version as upstream prints it (`gitVersion`): `v` and the package version.
pub fn git_version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// `os/arch` in Go's spelling (upstream prints `linux/amd64`).
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64",
        a => a,
    };
    format!("{}/{}", std::env::consts::OS, arch)
}

/// The full version information.
pub fn info() -> serde_json::Value {
    json!({
        "major": env!("CARGO_PKG_VERSION_MAJOR"),
        "minor": env!("CARGO_PKG_VERSION_MINOR"),
        "gitVersion": git_version(),
        "gitCommit": env!("KK_GIT_COMMIT"),
        "gitTreeState": env!("KK_GIT_TREE_STATE"),
        "buildDate": env!("KK_BUILD_DATE"),
        "rustcVersion": env!("KK_RUSTC_VERSION"),
        "compiler": "rustc",
        "target": env!("KK_TARGET"),
        "platform": platform(),
    })
}

/// Prints the version: JSON, or the bare version with `short`.
pub fn print(short: bool) {
    if short {
        println!("{}", git_version());
    } else {
        println!(
            "{}",
            serde_json::to_string_pretty(&info()).unwrap_or_default()
        );
    }
}
