//! Rebuilds `kk` when the bundled playbooks, roles or builtin data change: they are
//! compiled in with `include_dir!`, which cargo does not track by itself.
//!
//! Also records what `kk version` prints: the git commit and tree state, the build date and
//! the compiler. No network; without git (a source tarball) the values are `unknown`, and the
//! date is SOURCE_DATE_EPOCH or the commit's date, never the clock, so builds are reproducible.
use std::process::Command;

fn main() {
    for dir in ["builtin", "playbooks", "roles"] {
        println!("cargo:rerun-if-changed={}", dir);
    }
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // A new commit (HEAD moves or the branch's ref changes) refreshes the values; other edits
    // to the work tree do not trigger a rebuild, so the tree state is as of the last commit
    // or checkout that rebuilt kk.
    // Only files that exist: cargo counts a missing one as changed on every build, which
    // relinked kk under running tests (no packed-refs yet, or a worktree's refs, which
    // live in the common git dir: `--git-path` finds them).
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={}", path);
            }
        }
    }
    let commit = git(&["rev-parse", "HEAD"]);
    let state = match (
        &commit,
        git(&["status", "--porcelain", "--untracked-files=no"]),
    ) {
        (None, _) => "unknown".to_string(),
        (Some(_), Some(s)) if !s.is_empty() => "dirty".to_string(),
        (Some(_), Some(_)) => "clean".to_string(),
        (Some(_), None) => "unknown".to_string(),
    };
    let date = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .or_else(|| git(&["log", "-1", "--format=%ct"]).and_then(|s| s.parse().ok()))
        .and_then(rfc3339)
        .unwrap_or_else(|| "unknown".into());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!(
        "cargo:rustc-env=KK_GIT_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );
    println!("cargo:rustc-env=KK_GIT_TREE_STATE={}", state);
    println!("cargo:rustc-env=KK_BUILD_DATE={}", date);
    println!("cargo:rustc-env=KK_RUSTC_VERSION={}", rustc_version);
    println!(
        "cargo:rustc-env=KK_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
}

/// Runs git in the package directory; None when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Seconds since the epoch as RFC 3339 in UTC (`2026-11-24T04:52:10Z`); None when out of range.
fn rfc3339(secs: i64) -> Option<String> {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()?
        .format(&time::format_description::well_known::Rfc3339)
        .ok()
}
