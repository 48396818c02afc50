//! Role `download` and `kk artifact export` (playbooks/artifact_export.yaml) against a
//! real local HTTP artifact server, on the controller only (no test hosts needed).
//!
//! The server holds real binaries repackaged in upstream's archive layouts from the
//! Debian packages installed on this machine (scripts/test installs them): etcd and
//! etcdctl (etcd-server, etcd-client) in an `etcd-vX-linux-amd64/` tar.gz, containerd
//! (`bin/` tar.gz), runc (raw), containernetworking-plugins (flat tgz) and kubectl
//! (kubernetes-client, raw). kubelet, kubeadm, helm, crictl, calicoctl and the calico
//! chart have no Debian package: the server holds clearly named FAKE stand-ins for them
//! (shell scripts printing "FAKE …"), which is all a download test needs.
//! The test writes its own artifact manifest with the real sha256 of every file.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::artifacts::{
    assert_landed, build_server, changed, download_config, kk_json, manifest, repo, sha256_file,
    tar_gz,
};
use common::{Project, Run};
use testbed::http::HttpServer;

/// `kk run <playbook> -c config.yaml --workdir <wd> --output json` plus extra arguments.
fn kk(p: &Project, playbook: &Path, workdir: &Path, extra: &[&str]) -> Run {
    let pb = playbook.display().to_string();
    kk_cmd(p, &["run", &pb], workdir, extra)
}

/// `kk <command…> -c config.yaml --workdir <wd> --output json` plus extra arguments.
fn kk_cmd(p: &Project, command: &[&str], workdir: &Path, extra: &[&str]) -> Run {
    let mut args: Vec<&str> = command.to_vec();
    args.extend(["-c", "config.yaml"]);
    args.extend_from_slice(extra);
    kk_json(p, &args, workdir)
}

fn failure_text(r: &Run) -> String {
    r.events()
        .into_iter()
        .filter(|e| e["event"] == "host_result" && e["status"] == "failed")
        .map(|e| e["result"]["msg"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn download_verify_export_and_install_offline() {
    let p = Project::new();
    let root = p.path("srv");
    let served = build_server(&root, &p.path("scratch"));
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let base = srv.url("cn/");
    let mirror_base = srv.url("");
    let mut sums = BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    p.file("artifacts.yaml", &manifest(&base, &sums, ""));
    p.file(
        "config.yaml",
        &download_config(&p, &mirror_base, &sums["kubectl"]),
    );
    // An install playbook beside the repository's roles (what create_cluster's download step does).
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    p.file(
        "playbooks/install.yaml",
        "- hosts: localhost\n  gather_facts: false\n  roles: [defaults, download]\n",
    );
    let install = p.path("playbooks/install.yaml");
    let w1 = p.path("work1");
    let bin1 = w1.join("kubekey");

    // 1. Everything lands where the install roles look, with the right digests; each file
    //    is fetched once (zone cn, the runc URL override, the kubectl sha256 override).
    let r = kk(&p, &install, &w1, &[]);
    r.code(0);
    assert_landed(&served, &bin1, &sums);
    for s in &served {
        assert_eq!(
            srv.count(&format!("/{}", s.server_path)),
            1,
            "{} fetched once\n{}",
            s.server_path,
            r.describe()
        );
    }
    assert_eq!(srv.requests().len(), served.len(), "{:?}", srv.requests());

    // 2. A second run downloads nothing and changes nothing.
    let r = kk(&p, &install, &w1, &[]);
    r.code(0);
    assert_eq!(
        srv.requests().len(),
        served.len(),
        "second run fetched again: {:?}",
        srv.requests()
    );
    assert_eq!(changed(&r), 0, "{}", r.describe());

    // 3. A tampered file on the server is refused, and nothing is stored for it.
    let runc_srv = root.join("mirror/runc/v1.1.5/runc.amd64");
    let good = std::fs::read(&runc_srv).unwrap();
    std::fs::write(&runc_srv, b"#!/bin/sh\necho tampered\n").unwrap();
    let runc_local = bin1.join("runc/v1.1.5/amd64/runc.amd64");
    std::fs::remove_file(&runc_local).unwrap();
    let r = kk(&p, &install, &w1, &[]);
    assert_ne!(
        r.code,
        0,
        "a tampered file must be refused\n{}",
        r.describe()
    );
    let msg = failure_text(&r);
    assert!(
        msg.contains("runc v1.1.5 (amd64)")
            && msg.contains("sha256")
            && msg.contains(&sums["runc"]),
        "the refusal names the artifact and the expected digest:\n{}",
        msg
    );
    assert!(msg.contains("download.sha256.<component>"), "{}", msg);
    assert!(!runc_local.exists(), "the tampered runc must not be stored");
    // A damaged local copy is replaced by the server's good one.
    std::fs::write(&runc_srv, &good).unwrap();
    let etcd_local = bin1.join(&served[0].dest);
    std::fs::write(&etcd_local, b"truncated").unwrap();
    let before = srv.requests().len();
    let r = kk(&p, &install, &w1, &[]);
    r.code(0);
    assert_landed(&served, &bin1, &sums);
    assert_eq!(
        srv.requests().len() - before,
        2,
        "only runc and etcd are fetched again"
    );

    // 4. A component with no published digest, with download.require_digest, fails before
    //    anything is fetched, naming both knobs (without it, its first download would be
    //    recorded in the lock file: tests/download_lock.rs).
    let before = srv.requests().len();
    let r = kk(
        &p,
        &install,
        &p.path("work-nosum"),
        &[
            "--set",
            "etcd.etcd_version=v3.4.99",
            "--set",
            "download.require_digest=true",
        ],
    );
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failure_text(&r);
    assert!(
        msg.contains("etcd v3.4.99 (amd64)")
            && msg.contains("download.sha256.etcd")
            && msg.contains("download.artifact_url.etcd"),
        "{}",
        msg
    );
    assert_eq!(srv.requests().len(), before);

    // 5. `kk artifact export`: the package holds the tree, its manifest and checksums.
    let r = kk_cmd(&p, &["artifact", "export"], &w1, &[]);
    r.code(0);
    assert_eq!(
        srv.requests().len(),
        before,
        "export fetches nothing already present"
    );
    let pkg = w1.join("artifact/kubekey-artifact.tar.gz");
    assert!(pkg.is_file(), "{}", r.describe());
    let list = Command::new("tar").arg("-tzf").arg(&pkg).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    for s in &served {
        assert!(
            list.lines().any(|l| l == s.dest),
            "{} missing from the package:\n{}",
            s.dest,
            list
        );
    }
    assert!(
        list.lines().any(|l| l == "kubekey-artifact.yaml"),
        "{}",
        list
    );
    assert!(
        list.lines().any(|l| l == "kubekey-artifact.sha256"),
        "{}",
        list
    );
    let inside = std::fs::read_to_string(w1.join("artifact/kubekey-artifact.yaml")).unwrap();
    assert!(
        inside.contains(r#"component: "containerd", version: "v1.6.20", arch: "amd64", path: "containerd/v1.6.20/amd64/containerd-1.6.20-linux-amd64.tar.gz""#),
        "{}",
        inside
    );
    assert!(
        inside.contains(r#"component: "calico", version: "v3.31.3", arch: "all""#),
        "{}",
        inside
    );
    let checks = std::fs::read_to_string(w1.join("artifact/kubekey-artifact.sha256")).unwrap();
    assert!(
        checks.contains(&format!("{}  runc/v1.1.5/amd64/runc.amd64", sums["runc"])),
        "{}",
        checks
    );
    let pkg_sum =
        std::fs::read_to_string(w1.join("artifact/kubekey-artifact.tar.gz.sha256")).unwrap();
    assert!(pkg_sum.starts_with(&sha256_file(&pkg)), "{}", pkg_sum);
    // A second export gives the same bytes and reports no change.
    let first = sha256_file(&pkg);
    let r = kk_cmd(&p, &["artifact", "export"], &w1, &[]);
    r.code(0);
    assert_eq!(sha256_file(&pkg), first, "the package is reproducible");
    assert_eq!(changed(&r), 0, "{}", r.describe());

    // 6. With the server gone, a fresh work dir installs everything from the package.
    let requests = srv.requests().len();
    drop(srv);
    let w2 = p.path("work2");
    let set = format!("download.artifact_file={}", pkg.display());
    let r = kk(&p, &install, &w2, &["--set", &set]);
    r.code(0);
    assert_landed(&served, &w2.join("kubekey"), &sums);
    assert!(w2.join("kubekey/kubekey-artifact.yaml").is_file());
    assert_eq!(
        requests,
        served.len() + 3,
        "one refused runc, then runc and etcd again"
    );
    // Installing again changes nothing.
    let r = kk(&p, &install, &w2, &["--set", &set]);
    r.code(0);
    assert_eq!(changed(&r), 0, "{}", r.describe());
    // `-a` on a built-in command: exporting again from the package, still offline, gives
    // the very same package (it is reproducible).
    let pkg_str = pkg.display().to_string();
    let r = kk_cmd(&p, &["artifact", "export", "-a", &pkg_str], &w2, &[]);
    r.code(0);
    assert_eq!(
        sha256_file(&w2.join("artifact/kubekey-artifact.tar.gz")),
        first,
        "a package rebuilt from the same artifacts has the same bytes"
    );

    // 7. A package whose files do not match its checksums file is refused.
    let bad = p.path("bad");
    std::fs::create_dir_all(bad.join("kube/v1.20.2/amd64")).unwrap();
    std::fs::write(bad.join("kube/v1.20.2/amd64/kubectl"), b"not kubectl\n").unwrap();
    std::fs::write(
        bad.join("kubekey-artifact.sha256"),
        format!("{}  kube/v1.20.2/amd64/kubectl\n", sums["kubectl"]),
    )
    .unwrap();
    let bad_pkg = p.path("bad.tar.gz");
    tar_gz(&bad_pkg, &bad, &["kube", "kubekey-artifact.sha256"]);
    let set = format!("download.artifact_file={}", bad_pkg.display());
    let r = kk(&p, &install, &p.path("work3"), &["--set", &set]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failure_text(&r);
    assert!(
        msg.contains("damaged") && msg.contains("kube/v1.20.2/amd64/kubectl"),
        "{}",
        msg
    );
    assert!(!p.path("work3/kubekey/kube/v1.20.2/amd64/kubectl").exists());
}
