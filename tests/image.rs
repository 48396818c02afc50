//! The `image` module against a real registry (Debian's `docker-registry`, started by
//! the test on loopback) and real OCI image layouts the test builds.

use crate::common;

use common::registry::{layout, registry, registry_with_auth, registry_with_tls};
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

#[test]
fn tls_registry_is_trusted_through_ca_file() {
    let p = Project::new();
    p.file(
        "inventory.yaml",
        "all:\n  hosts:\n    localhost: {ansible_connection: local}\n",
    )
    // The registry's certificate comes from a CA made by kk's gen_cert (as certs/init
    // makes pki_dir/root.crt and image_registry.crt); another CA did not sign it.
    .file(
        "certs.yaml",
        r#"
- hosts: localhost
  gather_facts: false
  tasks:
    - gen_cert: {cn: test-ca, is_ca: true, out_key: pki/ca.key, out_cert: pki/ca.crt}
    - gen_cert: {cn: other-ca, is_ca: true, out_key: pki/other.key, out_cert: pki/other.crt}
    - gen_cert:
        root_key: pki/ca.key
        root_cert: pki/ca.crt
        cn: registry
        sans: [127.0.0.1]
        out_key: pki/registry.key
        out_cert: pki/registry.crt
"#,
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
        auths: [{registry: "{{ reg }}", ca_file: "{{ ca }}"}]
"#,
    );
    p.kk(&["run", "certs.yaml", "-i", "inventory.yaml"]).code(0);
    let reg = registry_with_tls(&p.path("pki/registry.crt"), &p.path("pki/registry.key"));
    let reg_addr = format!("127.0.0.1:{}", reg.port);
    let name = format!("{}/kk/tls:v1", reg_addr);
    layout(&p.path("src"), &name);
    let push = |ca: &str, check: bool| {
        let mut args = vec![
            "-e".to_string(),
            format!("image={}", name),
            "-e".to_string(),
            format!("reg={}", reg_addr),
            "-e".to_string(),
            format!("ca={}", ca),
        ];
        if check {
            args.push("--check".to_string());
        }
        p.run_json(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let msg = |r: &common::Run| {
        r.result("push", "localhost")["result"]["msg"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    // Without the CA (an empty ca_file is none): the certificate is not trusted, and the
    // error says so and what to set.
    let r = push("", false);
    r.code(2);
    let m = msg(&r);
    assert!(m.contains("certificate"), "{}", r.describe());
    assert!(m.contains("UnknownIssuer"), "{}", m);
    assert!(m.contains("set ca_file"), "{}", m);

    // A CA that did not sign it is refused as well.
    let other = p.path("pki/other.crt").display().to_string();
    let r = push(&other, false);
    r.code(2);
    let m = msg(&r);
    assert!(m.contains("UnknownIssuer"), "{}", m);
    assert!(m.contains(&format!("ca_file {}", other)), "{}", m);

    // A missing ca_file: an error naming the argument and the path, before any request.
    let missing = p.path("pki/missing.crt").display().to_string();
    let r = push(&missing, false);
    r.code(2);
    let m = msg(&r);
    assert!(
        m.contains(&format!("ca_file {}", missing)) && m.contains("cannot be read"),
        "{}",
        m
    );

    // With the CA: --check says it would push and pushes nothing; the run pushes; again,
    // nothing changes. A relative ca_file is taken from the playbook directory.
    let r = push("pki/ca.crt", true);
    r.code(0);
    assert_eq!(r.status("push", "localhost"), "changed", "{}", r.describe());
    let r = push("pki/ca.crt", false);
    r.code(0);
    assert_eq!(r.status("push", "localhost"), "changed", "{}", r.describe());
    let again = push(&p.path("pki/ca.crt").display().to_string(), false);
    again.code(0);
    assert_eq!(
        again.status("push", "localhost"),
        "ok",
        "{}",
        again.describe()
    );
}
