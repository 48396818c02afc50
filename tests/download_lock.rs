//! Role `download`'s lock file (download.lock_file, `<workdir>/artifacts.lock`) for
//! artifacts with no published digest, against the local artifact server of
//! tests/download.rs (controller only, no test hosts): the first download records and
//! prints the digest, later runs are checked against it, a file swapped on the server is
//! refused with both digests (and a published digest that contradicts the recorded one is
//! warned of), `download.require_digest` refuses an unpinned component before any fetch,
//! `--check` records nothing, a lock file kk cannot read is refused, an export that
//! fetches nothing cannot pack an unpinned artifact, and the offline package carries the
//! lock (`artifacts.lock`): `-a` records its digests in a fresh work dir and refuses a
//! package whose lock or file does not match the work dir's lock.
//!
//! Unpinned here: the calico chart (one file for every architecture) and calicoctl (amd64);
//! the test's manifest lists no digest for their version.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::artifacts::{
    assert_landed, build_server, changed, download_config, kk_json, manifest, repo, sha256_file,
    tar_gz,
};
use common::cluster::failures;
use common::{Project, Run};
use testbed::http::HttpServer;

/// `kk run playbooks/install.yaml` (roles defaults and download) in `workdir`.
fn install(p: &Project, workdir: &Path, extra: &[&str]) -> Run {
    let pb = p.path("playbooks/install.yaml").display().to_string();
    let mut args = vec!["run", pb.as_str(), "-c", "config.yaml"];
    args.extend_from_slice(extra);
    kk_json(p, &args, workdir)
}

/// `kk artifact export` in `workdir`.
fn export(p: &Project, workdir: &Path) -> Run {
    kk_json(p, &["artifact", "export", "-c", "config.yaml"], workdir)
}

/// Every debug message of a run, one per line.
fn messages(r: &Run) -> String {
    r.events()
        .into_iter()
        .filter(|e| e["event"] == "host_result")
        .filter_map(|e| e["result"]["msg"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lock file's line for one artifact.
fn lock_line(component: &str, version: &str, arch: &str, url: &str, sha: &str) -> String {
    format!(
        r#"  - {{component: "{component}", version: "{version}", arch: "{arch}", url: "{url}", sha256: "{sha}"}}"#
    )
}

/// A member of a tar.gz.
fn member(pkg: &Path, name: &str) -> String {
    let out = Command::new("tar")
        .arg("-xzOf")
        .arg(pkg)
        .arg(name)
        .output()
        .unwrap();
    assert!(out.status.success(), "{} in {}", name, pkg.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn lock_file_records_first_downloads_and_refuses_changes() {
    let p = Project::new();
    let root = p.path("srv");
    let served = build_server(&root, &p.path("scratch"));
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let base = srv.url("cn/");
    let mut sums = BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    // The manifest has no digest for calico's chart and calicoctl v3.31.3.
    let text = manifest(&base, &sums, "")
        .replace(
            &format!(r#"v3.31.3: "{}""#, sums["calico"]),
            &format!(r#"v3.0.0: "{}""#, "1".repeat(64)),
        )
        .replace(
            &format!(r#"v3.31.3: {{amd64: "{}"}}"#, sums["calicoctl"]),
            &format!(r#"v3.0.0: {{amd64: "{}"}}"#, "1".repeat(64)),
        );
    assert!(!text.contains(&sums["calico"]) && !text.contains(&sums["calicoctl"]));
    p.file("artifacts.yaml", &text);
    p.file(
        "config.yaml",
        &download_config(&p, &srv.url(""), &sums["kubectl"]),
    );
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    p.file(
        "playbooks/install.yaml",
        "- hosts: localhost\n  gather_facts: false\n  roles: [defaults, download]\n",
    );
    let chart_url = srv.url("cn/calico/v3.31.3/tigera-operator-v3.31.3.tgz");
    let ctl_url = srv.url("cn/calico/v3.31.3/calicoctl-linux-amd64");
    let chart_line = lock_line("calico", "v3.31.3", "all", &chart_url, &sums["calico"]);
    let ctl_line = lock_line(
        "calicoctl",
        "v3.31.3",
        "amd64",
        &ctl_url,
        &sums["calicoctl"],
    );
    let w1 = p.path("work1");
    let lock1 = w1.join("artifacts.lock");

    // 1. --check fetches and records nothing.
    let wc = p.path("work-check");
    let r = install(&p, &wc, &["--check"]);
    r.code(0);
    assert!(!wc.join("artifacts.lock").exists(), "{}", r.describe());
    assert!(srv.requests().is_empty(), "{:?}", srv.requests());

    // 2. The first download records both digests in the lock file and prints them.
    let r = install(&p, &w1, &[]);
    r.code(0);
    assert_landed(&served, &w1.join("kubekey"), &sums);
    let lock = std::fs::read_to_string(&lock1).unwrap();
    assert!(
        lock.contains(&chart_line) && lock.contains(&ctl_line),
        "{}",
        lock
    );
    let msgs = messages(&r);
    for (c, v, a, u, s) in [
        ("calico", "v3.31.3", "all", &chart_url, &sums["calico"]),
        (
            "calicoctl",
            "v3.31.3",
            "amd64",
            &ctl_url,
            &sums["calicoctl"],
        ),
    ] {
        let want = format!(
            "recorded in {}: {} {} ({}) {} sha256 {}",
            lock1.display(),
            c,
            v,
            a,
            u,
            s
        );
        assert!(msgs.contains(&want), "{} in\n{}", want, msgs);
    }
    assert_eq!(srv.requests().len(), served.len(), "{:?}", srv.requests());

    // 3. A second run fetches nothing, changes nothing, keeps the lock file's bytes.
    let r = install(&p, &w1, &[]);
    r.code(0);
    assert_eq!(changed(&r), 0, "{}", r.describe());
    assert_eq!(srv.requests().len(), served.len(), "{:?}", srv.requests());
    assert_eq!(std::fs::read_to_string(&lock1).unwrap(), lock);
    assert!(
        messages(&r).contains(&format!(
            "verified against {}: calicoctl, calico",
            lock1.display()
        )),
        "{}",
        r.describe()
    );

    // 4. download.require_digest refuses the unpinned components before any fetch, even
    //    with their digests recorded, naming the knob that pins them.
    for wd in [p.path("work-strict"), w1.clone()] {
        let r = install(&p, &wd, &["--set", "download.require_digest=true"]);
        assert_ne!(r.code, 0, "{}", r.describe());
        let msg = failures(&r).join("\n");
        for want in [
            "calico v3.31.3 (all): no published sha256",
            "calicoctl v3.31.3 (amd64): no published sha256",
            "download.require_digest is true",
            "set download.sha256.calico ",
            "set download.sha256.calicoctl ",
        ] {
            assert!(msg.contains(want), "{} in\n{}", want, msg);
        }
        assert_eq!(
            msg.contains(&sums["calico"]),
            wd == w1,
            "the recorded digest is shown where there is one:\n{}",
            msg
        );
        assert_eq!(srv.requests().len(), served.len(), "{:?}", srv.requests());
    }
    assert!(!p.path("work-strict/artifacts.lock").exists());

    // 4b. A lock file kk cannot read is refused, not silently replaced; an export that
    //     fetches nothing (download.fetch false) cannot pack what has no digest.
    for (name, text, want) in [
        (
            "work-badlock1",
            "- calico\n",
            "is not a mapping with an `artifacts` list",
        ),
        (
            "work-badlock2",
            "artifacts:\n  - {component: calico, version: v3.31.3, arch: all, sha256: nothex}\n",
            "needs component, version, arch and a sha256 of 64 hex digits",
        ),
    ] {
        let wd = p.path(name);
        std::fs::create_dir_all(&wd).unwrap();
        std::fs::write(wd.join("artifacts.lock"), text).unwrap();
        let r = install(&p, &wd, &[]);
        assert_ne!(r.code, 0, "{}", r.describe());
        let msg = failures(&r).join("\n");
        assert!(
            msg.contains(want) && msg.contains(&wd.join("artifacts.lock").display().to_string()),
            "{} in\n{}",
            want,
            msg
        );
        assert_eq!(
            std::fs::read_to_string(wd.join("artifacts.lock")).unwrap(),
            text
        );
    }
    let wd = p.path("work-nofetch");
    let r = kk_json(
        &p,
        &[
            "artifact",
            "export",
            "-c",
            "config.yaml",
            "--set",
            "download.fetch=false",
        ],
        &wd,
    );
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failures(&r).join("\n");
    assert!(
        msg.contains("no sha256 is published or recorded") && msg.contains("calicoctl, calico"),
        "{}",
        msg
    );
    assert!(!wd.join("artifact/kubekey-artifact.tar.gz").exists());
    assert_eq!(srv.requests().len(), served.len(), "{:?}", srv.requests());

    // 5. The offline package carries the lock entries, first, and checks them.
    let r = export(&p, &w1);
    r.code(0);
    let pkg_a = w1.join("artifact/kubekey-artifact.tar.gz");
    let list = Command::new("tar")
        .arg("-tzf")
        .arg(&pkg_a)
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert_eq!(list.lines().next(), Some("artifacts.lock"), "{}", list);
    let pkg_lock = member(&pkg_a, "artifacts.lock");
    assert!(
        pkg_lock.contains(&chart_line) && pkg_lock.contains(&ctl_line),
        "{}",
        pkg_lock
    );
    assert!(
        member(&pkg_a, "kubekey-artifact.sha256")
            .lines()
            .any(|l| l.ends_with("  artifacts.lock")),
        "the checksums cover the lock"
    );
    assert_eq!(std::fs::read_to_string(&lock1).unwrap(), lock);

    // 6. The server's chart swapped: refused with both digests and the way to accept it.
    let chart_srv = root.join("cn/calico/v3.31.3/tigera-operator-v3.31.3.tgz");
    let chart_local = w1.join("kubekey/cni/calico/tigera-operator-v3.31.3.tgz");
    let scratch = p.path("chart2");
    std::fs::create_dir_all(scratch.join("tigera-operator")).unwrap();
    std::fs::write(
        scratch.join("tigera-operator/Chart.yaml"),
        "name: tigera-operator\nversion: v3.31.3\n# re-published\n",
    )
    .unwrap();
    tar_gz(&chart_srv, &scratch, &["tigera-operator"]);
    let new_sha = sha256_file(&chart_srv);
    std::fs::remove_file(&chart_local).unwrap();
    let r = install(&p, &w1, &[]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failures(&r).join("\n");
    for want in [
        "calico v3.31.3 (all)",
        &sums["calico"],
        &format!("the server now serves {}", new_sha),
        &lock1.display().to_string(),
        "delete the entry `calico v3.31.3 all`",
    ] {
        assert!(msg.contains(want), "{} in\n{}", want, msg);
    }
    assert!(
        !chart_local.exists(),
        "the changed chart must not be stored"
    );
    assert_eq!(
        std::fs::read_to_string(&lock1).unwrap(),
        lock,
        "never re-recorded"
    );

    // 6b. A digest published (here: configured) later that contradicts the recorded one is
    //     used, with a warning naming both; the lock entry stays until the user drops it.
    let set = format!("download.sha256.calico={}", new_sha);
    let r = install(&p, &w1, &["--set", &set]);
    r.code(0);
    let warning = r.msg(
        "Download | WARNING: a published digest differs from the one recorded on first download",
        "localhost",
    )
    .to_string();
    for want in [
        "calico v3.31.3 (all)",
        &format!("recorded {} on its first download", sums["calico"]),
        &format!("download.sha256.calico says {}", new_sha),
    ] {
        assert!(warning.contains(want), "{} in\n{}", want, warning);
    }
    assert_eq!(sha256_file(&chart_local), new_sha);
    assert_eq!(std::fs::read_to_string(&lock1).unwrap(), lock);

    // 7. A fresh work dir records the new chart; its package holds the new digest.
    let w3 = p.path("work3");
    export(&p, &w3).code(0);
    let pkg_b = w3.join("artifact/kubekey-artifact.tar.gz");
    assert!(
        member(&pkg_b, "artifacts.lock")
            .contains(&lock_line("calico", "v3.31.3", "all", &chart_url, &new_sha)),
        "{}",
        member(&pkg_b, "artifacts.lock")
    );
    drop(srv);

    // 8. Offline, a fresh work dir installs package A and records its digests (printed).
    let w2 = p.path("work2");
    let set_a = format!("download.artifact_file={}", pkg_a.display());
    let r = install(&p, &w2, &["--set", &set_a]);
    r.code(0);
    assert_landed(&served, &w2.join("kubekey"), &sums);
    let lock2 = w2.join("artifacts.lock");
    let recorded = std::fs::read_to_string(&lock2).unwrap();
    assert_eq!(
        recorded, lock,
        "the package's entries, as recorded in work1"
    );
    assert!(
        messages(&r).contains(&format!(
            "recorded in {}: calico v3.31.3 (all) {} sha256 {}",
            lock2.display(),
            chart_url,
            sums["calico"]
        )),
        "{}",
        r.describe()
    );
    let r = install(&p, &w2, &["--set", &set_a]);
    r.code(0);
    assert_eq!(changed(&r), 0, "{}", r.describe());

    // 9. Package B's chart does not match work2's lock: refused before anything is unpacked.
    let set_b = format!("download.artifact_file={}", pkg_b.display());
    let r = install(&p, &w2, &["--set", &set_b]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failures(&r).join("\n");
    for want in [
        "calico v3.31.3 (all): the offline package holds a file with sha256",
        &new_sha,
        &sums["calico"],
        &lock2.display().to_string(),
    ] {
        assert!(msg.contains(want), "{} in\n{}", want, msg);
    }
    let chart2 = w2.join("kubekey/cni/calico/tigera-operator-v3.31.3.tgz");
    assert_eq!(sha256_file(&chart2), sums["calico"]);

    // 10. Package B without its artifacts.lock (internally consistent): its chart is
    //     still refused, against work2's lock, before anything moves into binary_dir.
    let unpacked = p.path("pkg-b");
    std::fs::create_dir_all(&unpacked).unwrap();
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(&pkg_b)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_file(unpacked.join("artifacts.lock")).unwrap();
    let sums_file = unpacked.join("kubekey-artifact.sha256");
    let kept: String = std::fs::read_to_string(&sums_file)
        .unwrap()
        .lines()
        .filter(|l| !l.ends_with("  artifacts.lock"))
        .map(|l| format!("{}\n", l))
        .collect();
    std::fs::write(&sums_file, kept).unwrap();
    let names: Vec<String> = std::fs::read_dir(&unpacked)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let pkg_c = p.path("no-lock.tar.gz");
    tar_gz(&pkg_c, &unpacked, &names);
    let set_c = format!("download.artifact_file={}", pkg_c.display());
    let r = install(&p, &w2, &["--set", &set_c]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failures(&r).join("\n");
    for want in [
        "calico v3.31.3 (all), recorded in",
        &format!("the package has sha256 {}", new_sha),
        &format!("this configuration expects {}", sums["calico"]),
        "Nothing was installed from it",
    ] {
        assert!(msg.contains(want), "{} in\n{}", want, msg);
    }
    assert_eq!(sha256_file(&chart2), sums["calico"]);
    assert_eq!(std::fs::read_to_string(&lock2).unwrap(), recorded);
}
