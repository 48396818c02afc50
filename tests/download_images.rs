//! Container images in role `download` and `kk artifact export`: an image pushed into a
//! real local registry (Debian's `docker-registry`, started by the test on loopback) is
//! pulled into `<binary_dir>/images` (an OCI layout), packed into the offline package
//! with its checksums, and restored from the package in a fresh work dir with the
//! registry stopped. The only other artifact (kubectl) is a FAKE stand-in served by a
//! real local HTTP server; every other component has its version unset, and
//! `download.images.cluster: false` keeps the cluster's own images (tests/image_list.rs)
//! out of the export: only the listed image is pulled.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::artifacts::{changed, kk_json as kk, repo};
use common::registry::{layout, registry, sha};
use common::Project;
use serde_json::{json, Value};
use testbed::http::HttpServer;

fn config(p: &Project, srv: &HttpServer, kubectl_sha: &str, image: &str, reg: &str) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  kubernetes: {{kube_version: v1.20.2, helm_version: ""}}
  etcd: {{deployment_type: external, etcd_version: ""}}
  cri: {{container_manager: containerd, containerd_version: "", runc_version: "", crictl_version: ""}}
  cni: {{type: calico, multi_cni: none, cni_plugins_version: "", calico_version: ""}}
  storage_class: {{local: {{enabled: false}}, nfs: {{enabled: false}}}}
  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url:
      kubelet: "{url}"
      kubeadm: "{url}"
      kubectl: "{url}"
    sha256: {{kubelet: "{sha}", kubeadm: "{sha}", kubectl: "{sha}"}}
    images:
      cluster: false
      manifests: ["{image}"]
      auths: [{{registry: "{reg}", plain_http: true}}]
"#,
        manifest = p.path("artifacts.yaml").display(),
        url = srv.url("fake-kube"),
        sha = kubectl_sha,
        image = image,
        reg = reg,
    )
}

/// The manifest digest the layout's index.json names `name` with.
fn ref_digest(layout: &Path, name: &str) -> Option<String> {
    let idx: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).ok()?).ok()?;
    idx["manifests"]
        .as_array()?
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == json!(name))
        .map(|m| m["digest"].as_str().unwrap().to_string())
}

/// Every blob the image `name` needs is in the layout, with its digest, for amd64 only.
fn assert_image(layout: &Path, name: &str) {
    let d = ref_digest(layout, name)
        .unwrap_or_else(|| panic!("{} is not in {}/index.json", name, layout.display()));
    let blob = |d: &str| {
        let data = std::fs::read(layout.join("blobs/sha256").join(&d[7..]))
            .unwrap_or_else(|e| panic!("blob {} in {}: {}", d, layout.display(), e));
        assert_eq!(sha(&data), d, "blob digest");
        data
    };
    let index: Value = serde_json::from_slice(&blob(&d)).unwrap();
    let plats: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(plats, ["amd64"], "only download.arch is pulled");
    let m: Value =
        serde_json::from_slice(&blob(index["manifests"][0]["digest"].as_str().unwrap())).unwrap();
    blob(m["config"]["digest"].as_str().unwrap());
    blob(m["layers"][0]["digest"].as_str().unwrap());
}

#[test]
fn images_pulled_packed_and_restored_offline() {
    let mut reg = registry();
    let reg_addr = format!("127.0.0.1:{}", reg.port);
    let name = format!("{}/kk/pause:3.10", reg_addr);
    let p = Project::new();
    // The image, pushed into the registry with the image module.
    layout(&p.path("src"), &name);
    p.file(
        "push.yaml",
        r#"
- hosts: localhost
  gather_facts: false
  tasks:
    - name: push
      image: {src: "local://{{ playbook_dir }}/src", dest: "oci://{{ image }}", auths: [{registry: "{{ reg }}", plain_http: true}]}
"#,
    );
    let r = p.kk(&[
        "run",
        "push.yaml",
        "--output",
        "json",
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
    ]);
    r.code(0);

    // The one binary artifact: a FAKE kubelet/kubeadm/kubectl stand-in.
    let root = p.path("srv");
    std::fs::create_dir_all(&root).unwrap();
    let fake = b"#!/bin/sh\necho 'FAKE kube binary (a kk test stand-in)'\n";
    std::fs::write(root.join("fake-kube"), fake).unwrap();
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    p.file(
        "artifacts.yaml",
        "zones:\n  global: \"http://127.0.0.1:9/\"\ncomponents: {}\n",
    );
    p.file(
        "config.yaml",
        &config(&p, &srv, &sha(fake)[7..], &name, &reg_addr),
    );
    let export = repo()
        .join("playbooks/artifact_export.yaml")
        .display()
        .to_string();

    // 1. Export: the image lands in binary_dir/images, and in the package.
    let w1 = p.path("work1");
    let r = kk(&p, &["run", &export, "-c", "config.yaml"], &w1);
    r.code(0);
    let images = w1.join("kubekey/images");
    assert_image(&images, &name);
    let pkg = w1.join("artifact/kubekey-artifact.tar.gz");
    let listing = Command::new("tar").arg("-tzf").arg(&pkg).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).to_string();
    assert!(
        listing.lines().any(|l| l == "images/index.json"),
        "{}",
        listing
    );
    assert!(
        listing.lines().any(|l| l == "images/oci-layout"),
        "{}",
        listing
    );
    let sums = std::fs::read_to_string(w1.join("artifact/kubekey-artifact.sha256")).unwrap();
    let d = ref_digest(&images, &name).unwrap();
    for want in [
        format!("{}  images/blobs/sha256/{}", &d[7..], &d[7..]),
        "  images/index.json".to_string(),
    ] {
        assert!(sums.contains(&want), "checksums lack {:?}:\n{}", want, sums);
    }
    for l in sums.lines().filter(|l| l.contains("images/")) {
        let path = l.split_once("  ").unwrap().1;
        assert!(listing.lines().any(|x| x == path), "{} not packed", path);
    }
    let pkg_sum = std::fs::read(&pkg).unwrap();

    // 2. A second export pulls nothing and rewrites nothing.
    let r = kk(&p, &["run", &export, "-c", "config.yaml"], &w1);
    r.code(0);
    assert_eq!(changed(&r), 0, "{}", r.describe());
    assert_eq!(std::fs::read(&pkg).unwrap(), pkg_sum, "package rebuilt");

    // 3. A fresh work dir installs from the package with the registry and server gone.
    reg.stop();
    drop(srv);
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    p.file(
        "playbooks/install.yaml",
        "- hosts: localhost\n  gather_facts: false\n  roles: [defaults, download]\n",
    );
    let pkg_arg = format!("download.artifact_file={}", pkg.display());
    let w2 = p.path("work2");
    let r = kk(
        &p,
        &[
            "run",
            "playbooks/install.yaml",
            "-c",
            "config.yaml",
            "--set",
            &pkg_arg,
        ],
        &w2,
    );
    r.code(0);
    assert_image(&w2.join("kubekey/images"), &name);
    let r = kk(
        &p,
        &[
            "run",
            "playbooks/install.yaml",
            "-c",
            "config.yaml",
            "--set",
            &pkg_arg,
        ],
        &w2,
    );
    r.code(0);
    assert_eq!(changed(&r), 0, "{}", r.describe());

    // 4. A package without the image a configuration asks for is refused, naming it.
    let other = format!("{}/kk/other:v1", reg_addr);
    let w3 = p.path("work3");
    let r = kk(
        &p,
        &[
            "run",
            "playbooks/install.yaml",
            "-c",
            "config.yaml",
            "--set",
            &pkg_arg,
            "-e",
            &format!(
                "{{\"download\": {{\"images\": {{\"manifests\": [\"{}\"]}}}}}}",
                other
            ),
        ],
        &w3,
    );
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(
        r.stdout
            .contains("does not hold every image of download.images.manifests")
            && r.stdout.contains("kk/other"),
        "{}",
        r.describe()
    );
}
