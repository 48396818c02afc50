//! OS packages offline: the export side (role download/repository on this controller, a
//! Debian 12 machine like the test hosts, builds an apt repository of the packages
//! native/repository installs, with their whole dependency closure, under
//! binary_dir/repository/debian-12-debs-amd64/) and the host side (native/repository
//! installs what is missing from it alone), through tests/fixtures/offline_packages.yaml:
//! from the work dir, from the offline package (download/package, then `-a` in another work
//! dir) and from the same repository as a loop-mounted image (upstream's ISO way).
//!
//! The test host has no route to any mirror: the test shows `apt-get update` failing there
//! first. ipvsadm, its only user of libnl-genl-3-200, and socat are removed from it, so the
//! install needs a dependency that only the repository's closure carries. Time sync is off
//! (chrony's postinst would start chronyd, which could step this machine's clock: the hosts
//! share its kernel).
//!
//! The controller does reach Debian's mirrors: the repository's apt state (lists, .debs) is
//! kept in target/kk-offline-apt (repository.apt_dir), so a re-run downloads nothing.
//!
//! tests/capkk_machine.rs builds its repository and checks its host the same way (the
//! `pub(crate)` items here).

use crate::common;

use std::path::{Path, PathBuf};

use common::{bed_inventory_hosts, sh, Project, Run};
use testbed::http::HttpServer;
use testbed::TestBed;

/// The packages taken off the host: ipvsadm needs libnl-genl-3-200 back.
pub(crate) const REMOVED: [&str; 3] = ["ipvsadm", "libnl-genl-3-200", "socat"];

/// Every file under /etc/apt and the apt lists with its sha256: what must not change.
pub(crate) const APT_STATE: &str =
    "find /etc/apt /var/lib/apt/lists -type f -print0 | sort -z | xargs -0 sha256sum";

/// Runs `cmd` on this machine (the controller); it must succeed. Its stdout.
fn sh_local(cmd: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", cmd])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The controller's apt state for the repository (lists, .debs), kept between runs.
pub(crate) fn apt_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kk-offline-apt")
}

/// No route to any mirror: apt-get update fails on host 0 (any fetch error is fatal).
pub(crate) fn assert_no_mirror(bed: &TestBed) {
    let upd = bed.ssh(0, "apt-get -o APT::Update::Error-Mode=any update 2>&1");
    let upd_out = String::from_utf8_lossy(&upd.stdout).into_owned();
    assert!(
        !upd.status.success() && upd_out.contains("deb.debian.org"),
        "the test host reaches a mirror: {upd_out}"
    );
}

/// Takes [`REMOVED`] off host 0.
pub(crate) fn purge(bed: &TestBed) {
    sh(
        bed,
        0,
        &format!("dpkg --purge {} >/dev/null", REMOVED.join(" ")),
    );
}

/// Builds the repository of this controller's release with role download/repository
/// (the fixture's first play; `bed`'s host is in no group, so the second play has no
/// host): `<project>/wd/kubekey/repository/debian-12-debs-amd64`.
pub(crate) fn export_repository(bed: &TestBed) -> Project {
    let p = Project::new();
    p.file("inventory.yaml", &bed_inventory_hosts(bed, &["node1"]))
        .file("config.yaml", &config(&apt_dir()));
    let r = run(&p, &[]);
    r.code(0);
    assert!(
        p.path("wd/kubekey/repository/debian-12-debs-amd64/Packages.gz")
            .is_file(),
        "{}",
        r.describe()
    );
    p
}

/// `dir` as an ext4 image at `image` (`mke2fs -d`: e2fsprogs is on every Debian, xorriso
/// is not); the role mounts whatever the kernel recognises.
pub(crate) fn ext4_image(dir: &Path, image: &Path) {
    let mk = std::process::Command::new("mke2fs")
        .args(["-q", "-F", "-t", "ext4", "-d"])
        .arg(dir)
        .arg(image)
        .arg("48M")
        .output()
        .expect("run mke2fs");
    assert!(
        mk.status.success(),
        "mke2fs: {}",
        String::from_utf8_lossy(&mk.stderr)
    );
}

fn config(apt_dir: &Path) -> String {
    format!(
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  native:\n    ntp:\n      enabled: false\n  repository:\n    build: true\n    apt_dir: {}\n",
        serde_json::to_string(&apt_dir.to_string_lossy()).unwrap()
    )
}

fn run(p: &Project, extra: &[&str]) -> Run {
    let playbook =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/offline_packages.yaml");
    p.kk_flow(&["run", playbook.to_str().unwrap()], extra)
}

/// A project on the bed's one host (node1, a control plane node) with [`config`].
fn project(bed: &TestBed, apt_dir: &Path, build: bool) -> Project {
    let p = Project::new();
    let mut inv = bed_inventory_hosts(bed, &["node1"]);
    inv.push_str("  groups:\n    kube_control_plane:\n      hosts: [node1]\n    etcd:\n      hosts: [node1]\n    k8s_cluster:\n      groups: [kube_control_plane]\n");
    p.file("inventory.yaml", &inv).file(
        "config.yaml",
        &config(apt_dir).replace("build: true", &format!("build: {build}")),
    );
    p
}

/// The run installed [`REMOVED`] from the repository, left the host's apt files as they
/// were, and left no copy, mount or loop device behind.
fn assert_installed(bed: &TestBed, r: &Run, apt_before: &str) {
    r.code(0);
    assert_eq!(
        r.status("Repository | Install the missing packages from it", "node1"),
        "changed",
        "{}",
        r.describe()
    );
    assert_host_installed(bed, apt_before);
}

/// Host 0 has [`REMOVED`] installed, its apt files as `apt_before`, and no copy of the
/// repository, mount or loop device left.
pub(crate) fn assert_host_installed(bed: &TestBed, apt_before: &str) {
    for pkg in REMOVED {
        sh(
            bed,
            0,
            &format!("dpkg -s {pkg} | grep -qx 'Status: install ok installed'"),
        );
    }
    assert_eq!(
        sh(bed, 0, APT_STATE),
        apt_before,
        "the host's apt files changed"
    );
    assert_eq!(
        sh(bed, 0, "ls /tmp/kubekey/repository 2>&1 || true; grep -c ' /tmp/' /proc/mounts || true; losetup -a | grep -c kubekey || true"),
        "ls: cannot access '/tmp/kubekey/repository': No such file or directory\n0\n0",
        "the repository's copy, a mount or a loop device is left on the host"
    );
}

#[test]
fn a_host_without_mirrors_installs_the_missing_packages_from_the_exported_repository() {
    let bed = TestBed::start(1).expect("boot test host");
    let apt_dir = apt_dir();

    assert_no_mirror(&bed);
    purge(&bed);
    let apt_before = sh(&bed, 0, APT_STATE);

    // 1. Export: the repository is built for this controller's release and packed; the
    // host installs from the work dir's copy.
    let a = project(&bed, &apt_dir, true);
    let r = run(&a, &[]);
    r.code(0);
    let built = a.path("wd/kubekey/repository/debian-12-debs-amd64");
    assert!(built.join("Packages.gz").is_file(), "{}", r.describe());
    let meta = std::fs::read_to_string(built.join("kubekey-repository.yaml")).unwrap();
    assert!(
        meta.contains("os: {id: \"debian\", version_id: \"12\"")
            && meta.contains("arch: amd64")
            && meta.contains("\"libnl-genl-3-200="),
        "{meta}"
    );
    let pkg = a.path("wd/artifact/kubekey-artifact.tar.gz");
    let list = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(&pkg)
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(
        list.lines()
            .any(|l| l == "repository/debian-12-debs-amd64/Packages.gz")
            && list
                .lines()
                .any(|l| l.starts_with("repository/debian-12-debs-amd64/ipvsadm_")),
        "the package lacks the repository: {list}"
    );
    assert_installed(&bed, &r, &apt_before);

    // A second run: the repository is the same, every package is there — no change.
    let r = run(&a, &[]);
    r.code(0);
    assert_eq!(r.recap("node1")["changed"], 0, "{}", r.describe());
    assert_eq!(r.recap("localhost")["changed"], 0, "{}", r.describe());

    // 2. `-a`: another work dir, no build, the package alone.
    let b = project(&bed, &apt_dir, false);
    purge(&bed);
    let set = format!("download.artifact_file={}", pkg.display());
    let r = run(&b, &["--set", &set]);
    assert_installed(&bed, &r, &apt_before);

    // 3. Upstream's way: the same repository as an image `<ID>-<VERSION_ID>-debs-<arch>.iso`
    // fetched by the export (repository.iso, sha256 required; here from a test server), then
    // loop-mounted on the host. The image is ext4 (`mke2fs -d`: e2fsprogs is on every
    // Debian, xorriso is not); the role mounts whatever the kernel recognises.
    let dir = b.path("wd/kubekey/repository/debian-12-debs-amd64");
    let served = tempfile::tempdir().unwrap();
    let image = served.path().join("debian-12-debs-amd64.iso");
    ext4_image(&dir, &image);
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), served.path()).unwrap();
    let sum = sh_local(&format!("sha256sum < {}", image.display()));
    let sum = sum.split_whitespace().next().unwrap();
    let iso_config = |sha: &str| {
        format!(
            "{}    iso:\n      - name: debian-12-debs\n        url: {}\n        sha256: {{amd64: \"{sha}\"}}\n",
            config(&apt_dir).replace("build: true", "build: false"),
            srv.url("/{name}-{arch}.iso"),
        )
    };
    std::fs::remove_dir_all(&dir).unwrap();
    // A wrong sha256 is refused, and nothing is kept.
    b.file("config.yaml", &iso_config(&"0".repeat(64)));
    let r = run(&b, &[]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let iso = b.path("wd/kubekey/repository/debian-12-debs-amd64.iso");
    assert!(!iso.exists());
    b.file("config.yaml", &iso_config(sum));
    purge(&bed);
    let r = run(&b, &[]);
    assert!(iso.is_file(), "{}", r.describe());
    assert_installed(&bed, &r, &apt_before);

    // 4. Only a repository of another release: said, and with every package present
    // nothing is done.
    std::fs::rename(
        &iso,
        b.path("wd/kubekey/repository/debian-11-debs-amd64.iso"),
    )
    .unwrap();
    b.file(
        "config.yaml",
        &config(&apt_dir).replace("build: true", "build: false"),
    );
    let r = run(&b, &[]);
    r.code(0);
    assert_eq!(r.recap("node1")["changed"], 0, "{}", r.describe());
    let note = r.msg(
        "Repository | Say that no offline repository fits this host",
        "node1",
    );
    assert!(
        note.as_str()
            .unwrap_or_default()
            .contains("(there: debian-11-debs-amd64.iso)"),
        "{note}"
    );
}
