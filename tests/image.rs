//! The `image` module against a real registry (Debian's `docker-registry`, started by
//! the test on loopback) and real OCI image layouts the test builds.

mod common;

use common::registry::{layout, registry, registry_with_auth};
use common::Project;
use serde_json::{json, Value};
use std::path::Path;

fn index_entry(dir: &Path) -> Value {
    let idx: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    idx["manifests"][0].clone()
}

#[test]
fn push_pull_keep_lists_and_filter_platforms() {
    let reg = registry();
    let p = Project::new();
    let name = format!("127.0.0.1:{}/kk/app:v1", reg.port);
    let src = p.path("src");
    let digest = layout(&src, &name);
    p.file("inventory.yaml", "all:\n  hosts:\n    localhost: {ansible_connection: local}\n").file(
        "site.yaml",
        r#"
- hosts: localhost
  gather_facts: false
  vars:
    auths: [{registry: "{{ reg }}", plain_http: true}]
  tasks:
    - name: push
      image: {src: "local://{{ playbook_dir }}/src", dest: "oci://{{ image }}", auths: "{{ auths }}"}
    - name: pull
      image: {src: "oci://{{ image }}", dest: "local://{{ playbook_dir }}/back", auths: "{{ auths }}"}
    - name: pull arm64
      image:
        manifests: ["{{ image }}"]
        src: "oci://{{ module.image.reference.registry }}/{{ module.image.reference.repository }}:{{ module.image.reference.reference }}"
        dest: "local://{{ playbook_dir }}/arm"
        platform: linux/arm64
        auths: "{{ auths }}"
"#,
    );
    let reg_addr = format!("127.0.0.1:{}", reg.port);
    let r = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
    ]);
    r.code(0);
    assert_eq!(r.status("push", "localhost"), "changed", "{}", r.describe());
    // The pulled layout holds the same list, digest for digest.
    let back = index_entry(&p.path("back"));
    assert_eq!(back["digest"], json!(digest));
    let list: Value = serde_json::from_slice(
        &std::fs::read(p.path("back/blobs/sha256").join(&digest[7..])).unwrap(),
    )
    .unwrap();
    assert_eq!(
        list["manifests"].as_array().unwrap().len(),
        2,
        "a manifest list stays a list"
    );
    // The platform filter keeps one.
    let arm = index_entry(&p.path("arm"));
    let arm_list: Value = serde_json::from_slice(
        &std::fs::read(
            p.path("arm/blobs/sha256")
                .join(&arm["digest"].as_str().unwrap()[7..]),
        )
        .unwrap(),
    )
    .unwrap();
    let plats: Vec<&str> = arm_list["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(plats, ["arm64"]);
    // Copying again changes nothing.
    let again = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
    ]);
    again.code(0);
    assert_eq!(
        again.recap("localhost")["changed"],
        0,
        "{}",
        again.describe()
    );
    // A tampered blob is refused.
    let first_layer = {
        let m: Value = serde_json::from_slice(
            &std::fs::read(
                p.path("back/blobs/sha256")
                    .join(&list["manifests"][0]["digest"].as_str().unwrap()[7..]),
            )
            .unwrap(),
        )
        .unwrap();
        m["layers"][0]["digest"].as_str().unwrap().to_string()
    };
    std::fs::write(
        src.join("blobs/sha256").join(&first_layer[7..]),
        b"tampered",
    )
    .unwrap();
    let p2 = format!("127.0.0.1:{}/kk/other:v1", reg.port);
    let mut idx: Value =
        serde_json::from_slice(&std::fs::read(src.join("index.json")).unwrap()).unwrap();
    idx["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] = json!(p2);
    std::fs::write(src.join("index.json"), serde_json::to_vec(&idx).unwrap()).unwrap();
    let bad = p.run_json(&[
        "-e",
        &format!("image={}", p2),
        "-e",
        &format!("reg={}", reg_addr),
    ]);
    bad.code(2);
    assert!(
        bad.result("push", "localhost")["result"]["msg"]
            .as_str()
            .unwrap()
            .contains("refusing a corrupted or tampered blob"),
        "{}",
        bad.describe()
    );
}

#[test]
fn registry_credentials_are_used_and_wrong_ones_refused() {
    let reg = registry_with_auth(Some(("kk", "s3cret-pw")));
    let p = Project::new();
    let name = format!("127.0.0.1:{}/kk/private:v1", reg.port);
    layout(&p.path("src"), &name);
    p.file(
        "inventory.yaml",
        "all:\n  hosts:\n    localhost: {ansible_connection: local}\n",
    )
    .file(
        "site.yaml",
        r#"
- hosts: localhost
  gather_facts: false
  tasks:
    - name: push
      image:
        src: "local://{{ playbook_dir }}/src"
        dest: "oci://{{ image }}"
        auths: [{registry: "{{ reg }}", plain_http: true, username: kk, password: "{{ pw }}"}]
"#,
    );
    let reg_addr = format!("127.0.0.1:{}", reg.port);
    let ok = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
        "-e",
        "pw=s3cret-pw",
    ]);
    ok.code(0);
    assert_eq!(
        ok.status("push", "localhost"),
        "changed",
        "{}",
        ok.describe()
    );
    assert!(!ok.stdout.contains("s3cret-pw"), "the password leaked");
    let bad = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
        "-e",
        "pw=wrong",
    ]);
    bad.code(2);
    let msg = bad.result("push", "localhost")["result"]["msg"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("refused the credentials") || msg.contains("401"),
        "{}",
        msg
    );
}
