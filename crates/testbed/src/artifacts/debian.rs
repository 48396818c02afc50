//! Where the real binaries come from: Debian packages installed on this machine (bookworm),
//! or unpacked, not installed, by `scripts/unpack-debs` (newer releases from trixie).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The file of an installed Debian package whose path ends with `suffix`.
pub fn debian_file(package: &str, suffix: &str) -> PathBuf {
    let out = Command::new("dpkg").args(["-L", package]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .find(|p| p.to_string_lossy().ends_with(suffix) && p.is_file());
    if let Some(p) = listed {
        return p;
    }
    // scripts/test unpacks kubernetes-client here when /usr/bin/kubectl belongs to
    // another package on this machine.
    let unpacked = Path::new("/usr/local/lib/kk-test")
        .join(package)
        .join("usr")
        .join(suffix.trim_start_matches('/'));
    if unpacked.is_file() {
        return unpacked;
    }
    panic!(
        "{} from the Debian package {} is needed: install the package (scripts/test does)",
        suffix, package
    );
}

/// A file of a Debian package that `scripts/unpack-debs` unpacked (not installed) for
/// the tests: `unpacked("trixie", "etcd-server", "usr/bin/etcd")`. The root is `$KK_DEBS`,
/// by default /usr/local/lib/kk-test/debs.
pub fn unpacked(suite: &str, package: &str, path: &str) -> PathBuf {
    let root = std::env::var_os("KK_DEBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/local/lib/kk-test/debs"));
    let p = root.join(suite).join(package).join(path);
    assert!(
        p.is_file(),
        "{} of Debian {}'s {} is needed: run `scripts/unpack-debs {} {}` (scripts/test does)",
        path,
        suite,
        package,
        suite,
        package
    );
    p
}

/// The CNI plugins as upstream packs them (a flat tgz, one file per plugin) at `out`, from
/// the plugin directory of bookworm's containernetworking-plugins.
pub fn cni_plugins_tgz(out: &Path) {
    let bridge = debian_file("containernetworking-plugins", "/cni/bridge");
    let dir = bridge.parent().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    super::files::tar_gz(out, dir, &names);
}
