//! `gen_cert` end to end on the controller: files, policies, CAs made by openssl, and
//! what the openssl CLI says of the results.

use super::super::remote::testutil::{args, ctx, mode_of};
use super::*;
use serde_json::json;
use std::process::Command;

fn openssl(a: &[&str]) -> (bool, String) {
    let out = Command::new("openssl")
        .args(a)
        .output()
        .expect("the openssl CLI is needed for these tests");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

async fn run(c: &ModuleContext, a: Value) -> Result<ModuleResult> {
    GenCert.run(c, args(a)).await
}

/// A CA in `dir` as ca.key/ca.crt.
async fn make_ca(c: &ModuleContext, dir: &Path, key_type: &str) -> ModuleResult {
    run(
        c,
        json!({"out_key": p(dir, "ca.key"), "out_cert": p(dir, "ca.crt"), "cn": "kk-root-ca",
               "organization": "kubekey", "key_type": key_type, "policy": "IfNotPresent"}),
    )
    .await
    .unwrap()
}

fn leaf_args(dir: &Path, name: &str, sans: Value) -> Value {
    json!({"root_key": p(dir, "ca.key"), "root_cert": p(dir, "ca.crt"),
           "out_key": p(dir, &format!("{}.key", name)), "out_cert": p(dir, &format!("{}.crt", name)),
           "cn": name, "sans": sans, "key_type": "ecdsa", "policy": "if_not_present"})
}

#[tokio::test]
async fn ca_and_signed_cert_pass_openssl() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("pki");
    let c = ctx(d.path(), json!({}));
    let ca = make_ca(&c, &dir, "ecdsa").await;
    assert!(ca.changed);
    assert_eq!(ca.data["is_ca"], json!(true));
    assert_eq!(ca.data["reason"], json!("certificate absent"));
    assert_eq!(ca.data["subject"], json!("CN=kk-root-ca, O=kubekey"));
    let r = run(
        &c,
        leaf_args(
            &dir,
            "etcd-1",
            json!(["etcd-1", "10.0.0.5", "Node1.Example.com", "fd00::5"]),
        ),
    )
    .await
    .unwrap();
    assert!(r.changed);
    assert_eq!(r.data["is_ca"], json!(false));
    assert_eq!(
        r.data["sans"],
        json!([
            "etcd-1",
            "10.0.0.5",
            "node1.example.com",
            "fd00::5",
            "localhost",
            "127.0.0.1",
            "::1"
        ])
    );
    let na = r.data["not_after"].as_str().unwrap();
    assert!(na.ends_with('Z') && na.len() == 20, "{}", na);
    assert!(!r.data["serial"].as_str().unwrap().is_empty());
    assert_eq!(mode_of(&dir.join("etcd-1.key")), 0o600);
    assert_eq!(mode_of(&dir.join("etcd-1.crt")), 0o644);
    assert_eq!(mode_of(&dir.join("ca.key")), 0o600);

    let (ok, out) = openssl(&[
        "verify",
        "-CAfile",
        &p(&dir, "ca.crt"),
        &p(&dir, "etcd-1.crt"),
    ]);
    assert!(ok, "{}", out);
    for purpose in ["sslserver", "sslclient"] {
        let (ok, out) = openssl(&[
            "verify",
            "-purpose",
            purpose,
            "-CAfile",
            &p(&dir, "ca.crt"),
            &p(&dir, "etcd-1.crt"),
        ]);
        assert!(ok, "{}: {}", purpose, out);
    }
    let (ok, text) = openssl(&["x509", "-in", &p(&dir, "etcd-1.crt"), "-text", "-noout"]);
    assert!(ok, "{}", text);
    for want in [
        "DNS:etcd-1",
        "IP Address:10.0.0.5",
        "DNS:node1.example.com",
        "IP Address:FD00:0:0:0:0:0:0:5",
        "DNS:localhost",
        "IP Address:127.0.0.1",
        "IP Address:0:0:0:0:0:0:0:1",
        "TLS Web Server Authentication, TLS Web Client Authentication",
        "Digital Signature",
        "CA:FALSE",
        "Subject: CN = etcd-1",
        "Issuer: CN = kk-root-ca, O = kubekey",
        "X509v3 Authority Key Identifier",
        "prime256v1",
    ] {
        assert!(text.contains(want), "missing {:?} in\n{}", want, text);
    }
    let (ok, text) = openssl(&["x509", "-in", &p(&dir, "ca.crt"), "-text", "-noout"]);
    assert!(ok);
    for want in [
        "CA:TRUE",
        "Certificate Sign, CRL Sign",
        "Subject: CN = kk-root-ca, O = kubekey",
    ] {
        assert!(text.contains(want), "missing {:?} in\n{}", want, text);
    }
    assert!(!text.contains("TLS Web"), "{}", text);
    // 10 years by default: valid in 9 years, not in 11.
    let (ok, _) = openssl(&[
        "x509",
        "-in",
        &p(&dir, "etcd-1.crt"),
        "-noout",
        "-checkend",
        &(9 * 365 * 86400).to_string(),
    ]);
    assert!(ok);
    let (ok, _) = openssl(&[
        "x509",
        "-in",
        &p(&dir, "etcd-1.crt"),
        "-noout",
        "-checkend",
        &(11 * 365 * 86400).to_string(),
    ]);
    assert!(!ok);
    // The key is the certificate's key, in a form openssl reads.
    let (ok1, k) = openssl(&["pkey", "-in", &p(&dir, "etcd-1.key"), "-pubout"]);
    let (ok2, c2) = openssl(&["x509", "-in", &p(&dir, "etcd-1.crt"), "-noout", "-pubkey"]);
    assert!(ok1 && ok2 && k == c2, "{}\n{}", k, c2);
}

#[tokio::test]
async fn rsa_keys_and_usages() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    make_ca(&c, dir, "rsa").await;
    let mut a = leaf_args(dir, "client", json!("admin"));
    a["key_type"] = json!("rsa");
    a["organization"] = json!(["system:masters"]);
    a["ext_key_usages"] = json!(["clientAuth"]);
    a["localhost_sans"] = json!(false);
    a["date"] = json!(365);
    let r = run(&c, a).await.unwrap();
    assert!(r.changed);
    assert_eq!(r.data["sans"], json!(["admin"]));
    assert_eq!(r.data["subject"], json!("CN=client, O=system:masters"));
    let (ok, out) = openssl(&[
        "verify",
        "-purpose",
        "sslclient",
        "-CAfile",
        &p(dir, "ca.crt"),
        &p(dir, "client.crt"),
    ]);
    assert!(ok, "{}", out);
    let (ok, _) = openssl(&[
        "verify",
        "-purpose",
        "sslserver",
        "-CAfile",
        &p(dir, "ca.crt"),
        &p(dir, "client.crt"),
    ]);
    assert!(!ok, "a client-only certificate must not pass as a server");
    let (_, text) = openssl(&["x509", "-in", &p(dir, "client.crt"), "-text", "-noout"]);
    for want in [
        "Public-Key: (2048 bit)",
        "Digital Signature, Key Encipherment",
        "TLS Web Client Authentication",
        "sha256WithRSAEncryption",
    ] {
        assert!(text.contains(want), "missing {:?} in\n{}", want, text);
    }
    assert!(!text.contains("TLS Web Server"));
    let (ok, _) = openssl(&[
        "x509",
        "-in",
        &p(dir, "client.crt"),
        "-noout",
        "-checkend",
        &(364 * 86400).to_string(),
    ]);
    assert!(ok);
    let (ok, _) = openssl(&[
        "x509",
        "-in",
        &p(dir, "client.crt"),
        "-noout",
        "-checkend",
        &(366 * 86400).to_string(),
    ]);
    assert!(!ok);
}

#[tokio::test]
async fn if_not_present_keeps_then_regenerates_for_reasons() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    make_ca(&c, dir, "ecdsa").await;
    let again = make_ca(&c, dir, "ecdsa").await;
    assert!(!again.changed, "{:?}", again.data);
    assert!(again.data["reason"].as_str().unwrap().starts_with("kept"));

    let a = leaf_args(dir, "server", json!("10.0.0.1,server.local"));
    let first = run(&c, a.clone()).await.unwrap();
    assert!(first.changed);
    let crt = std::fs::read(dir.join("server.crt")).unwrap();
    let second = run(&c, a.clone()).await.unwrap();
    assert!(!second.changed, "{:?}", second.data);
    assert_eq!(second.data["serial"], first.data["serial"]);
    assert_eq!(second.data["sans"], first.data["sans"]);
    assert_eq!(std::fs::read(dir.join("server.crt")).unwrap(), crt);

    // A SAN added: regenerated, and the reason names it.
    let more = leaf_args(dir, "server", json!("10.0.0.1,server.local,10.0.0.2"));
    let r = run(&c, more.clone()).await.unwrap();
    assert!(r.changed);
    assert_eq!(r.data["reason"], json!("SAN 10.0.0.2 missing"));
    assert!(!run(&c, more.clone()).await.unwrap().changed);
    // Fewer SANs than the certificate has: still covered, kept.
    assert!(!run(&c, a.clone()).await.unwrap().changed);

    // CN changed.
    let mut cn = more.clone();
    cn["cn"] = json!("other");
    let r = run(&c, cn).await.unwrap();
    assert!(r.changed);
    assert!(
        r.data["reason"].as_str().unwrap().contains("common name"),
        "{:?}",
        r.data
    );

    // `always` regenerates a valid one.
    let mut always = more.clone();
    always["policy"] = json!("Always");
    let r = run(&c, always).await.unwrap();
    assert!(r.changed);
    assert_eq!(r.data["reason"], json!("policy is always"));

    // The key replaced by another one.
    std::fs::copy(dir.join("ca.key"), dir.join("server.key")).unwrap();
    let r = run(&c, more.clone()).await.unwrap();
    assert!(r.changed);
    assert_eq!(
        r.data["reason"],
        json!("key does not match the certificate")
    );

    // Garbage in the certificate file.
    std::fs::write(dir.join("server.crt"), "garbage").unwrap();
    let r = run(&c, more.clone()).await.unwrap();
    assert!(r.changed);
    assert!(r.data["reason"]
        .as_str()
        .unwrap()
        .starts_with("certificate does not parse"));
    let (ok, out) = openssl(&[
        "verify",
        "-CAfile",
        &p(dir, "ca.crt"),
        &p(dir, "server.crt"),
    ]);
    assert!(ok, "{}", out);
}

#[tokio::test]
async fn expiring_cert_is_renewed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    make_ca(&c, dir, "ecdsa").await;
    let mut a = leaf_args(dir, "short", json!(["short.local"]));
    a["date"] = json!("240h");
    assert!(run(&c, a.clone()).await.unwrap().changed);
    let (ok, _) = openssl(&[
        "x509",
        "-in",
        &p(dir, "short.crt"),
        "-noout",
        "-checkend",
        &(11 * 86400).to_string(),
    ]);
    assert!(!ok, "a 10-day certificate");
    let r = run(&c, a.clone()).await.unwrap();
    assert!(r.changed);
    let reason = r.data["reason"].as_str().unwrap();
    // 10 days minus the seconds the test has run.
    assert!(
        (reason.starts_with("certificate expires in 9 days")
            || reason.starts_with("certificate expires in 10 days"))
            && reason.ends_with("within 30 days"),
        "{}",
        reason
    );
    // With a long validity the renewed one is then kept.
    a["date"] = json!("365d");
    assert!(run(&c, a.clone()).await.unwrap().changed);
    assert!(!run(&c, a).await.unwrap().changed);
}

#[tokio::test]
async fn new_ca_means_new_certs() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    make_ca(&c, dir, "ecdsa").await;
    let a = leaf_args(dir, "peer", json!(["peer.local"]));
    assert!(run(&c, a.clone()).await.unwrap().changed);
    assert!(!run(&c, a.clone()).await.unwrap().changed);
    // Same CN, new key: the old leaf no longer chains.
    let r = run(
        &c,
        json!({"out_key": p(dir, "ca.key"), "out_cert": p(dir, "ca.crt"), "cn": "kk-root-ca",
               "organization": "kubekey", "key_type": "ecdsa", "policy": "always"}),
    )
    .await
    .unwrap();
    assert!(r.changed);
    let (ok, _) = openssl(&["verify", "-CAfile", &p(dir, "ca.crt"), &p(dir, "peer.crt")]);
    assert!(!ok);
    let r = run(&c, a.clone()).await.unwrap();
    assert!(r.changed);
    let reason = r.data["reason"].as_str().unwrap();
    assert!(reason.contains("not signed by the CA"), "{}", reason);
    let (ok, out) = openssl(&["verify", "-CAfile", &p(dir, "ca.crt"), &p(dir, "peer.crt")]);
    assert!(ok, "{}", out);
}

#[tokio::test]
async fn never_and_check_mode() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let mut c = ctx(dir, json!({}));
    let ca = json!({"out_key": p(dir, "ca.key"), "out_cert": p(dir, "ca.crt"), "cn": "ca", "key_type": "ecdsa", "policy": "never"});
    let e = run(&c, ca.clone()).await.unwrap_err();
    assert!(
        e.message.contains("policy is never") && e.message.contains("certificate absent"),
        "{}",
        e.message
    );

    c.check_mode = true;
    let mut ca_inp = ca.clone();
    ca_inp["policy"] = json!("if_not_present");
    let r = run(&c, ca_inp.clone()).await.unwrap();
    assert!(r.changed);
    assert_eq!(r.data["reason"], json!("certificate absent"));
    assert_eq!(r.data["subject"], json!("CN=ca"));
    assert!(!dir.join("ca.key").exists() && !dir.join("ca.crt").exists());

    // A certificate signed by that CA, still absent in check mode: would be generated.
    let leaf = json!({"root_key": p(dir, "ca.key"), "root_cert": p(dir, "ca.crt"),
        "out_key": p(dir, "leaf.key"), "out_cert": p(dir, "leaf.crt"), "cn": "leaf"});
    let r = run(&c, leaf).await.unwrap();
    assert!(r.changed);
    assert_eq!(r.data["reason"], json!("its CA does not exist yet"));
    assert!(!dir.join("leaf.crt").exists());

    c.check_mode = false;
    assert!(run(&c, ca_inp.clone()).await.unwrap().changed);
    let r = run(&c, ca.clone()).await.unwrap();
    assert!(!r.changed);
    // Check mode with everything in place: no change.
    c.check_mode = true;
    assert!(!run(&c, ca_inp.clone()).await.unwrap().changed);
    let mut always = ca_inp.clone();
    always["policy"] = json!("always");
    let before = std::fs::read(dir.join("ca.crt")).unwrap();
    assert!(run(&c, always).await.unwrap().changed);
    assert_eq!(std::fs::read(dir.join("ca.crt")).unwrap(), before);
    // `None` is KubeKey's name for never.
    c.check_mode = false;
    std::fs::write(dir.join("ca.crt"), "x").unwrap();
    let mut none = ca_inp.clone();
    none["policy"] = json!("None");
    let e = run(&c, none).await.unwrap_err();
    assert!(e.message.contains("does not parse"), "{}", e.message);
}

#[tokio::test]
async fn ca_errors_are_clear() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    make_ca(&c, dir, "ecdsa").await;
    let a = leaf_args(dir, "x", json!([]));

    // Garbled CA certificate.
    std::fs::write(
        dir.join("bad.crt"),
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let mut b = a.clone();
    b["root_cert"] = json!(p(dir, "bad.crt"));
    let e = run(&c, b).await.unwrap_err();
    assert!(
        e.message.contains("root_cert") && e.message.contains("bad.crt"),
        "{}",
        e.message
    );

    // Not PEM at all.
    std::fs::write(dir.join("bad.key"), "hello").unwrap();
    let mut b = a.clone();
    b["root_key"] = json!(p(dir, "bad.key"));
    let e = run(&c, b).await.unwrap_err();
    assert!(
        e.message.contains("root_key") && e.message.contains("not PEM"),
        "{}",
        e.message
    );

    // Missing CA file.
    let mut b = a.clone();
    b["root_key"] = json!(p(dir, "nope.key"));
    let e = run(&c, b).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(e.message.contains("nope.key"), "{}", e.message);

    // A CA key that is not the CA certificate's.
    run(&c, json!({"out_key": p(dir, "other.key"), "out_cert": p(dir, "other.crt"), "cn": "other", "key_type": "ecdsa"}))
        .await
        .unwrap();
    let mut b = a.clone();
    b["root_key"] = json!(p(dir, "other.key"));
    let e = run(&c, b).await.unwrap_err();
    assert!(
        e.message.contains("does not match root_cert"),
        "{}",
        e.message
    );

    // A leaf as CA.
    run(&c, leaf_args(dir, "leaf", json!([]))).await.unwrap();
    let mut b = a.clone();
    b["root_key"] = json!(p(dir, "leaf.key"));
    b["root_cert"] = json!(p(dir, "leaf.crt"));
    let e = run(&c, b).await.unwrap_err();
    assert!(e.message.contains("not a CA certificate"), "{}", e.message);

    // Argument errors.
    let mut b = a.clone();
    b["sans"] = json!(["good.example", "bad_name!", "10.0.0.300"]);
    let e = run(&c, b).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ModuleArgs);
    assert!(
        e.message.contains("\"bad_name!\"") && e.message.contains("\"10.0.0.300\""),
        "{}",
        e.message
    );
    assert!(!e.message.contains("good.example"));
    let mut b = a.clone();
    b.as_object_mut().unwrap().remove("root_cert");
    assert!(run(&c, b)
        .await
        .unwrap_err()
        .message
        .contains("both `root_key` and `root_cert`"));
    let mut b = a.clone();
    b["policy"] = json!("sometimes");
    assert!(run(&c, b).await.unwrap_err().message.contains("policy"));
    let mut b = a.clone();
    b["date"] = json!("10 parsecs");
    assert!(run(&c, b).await.unwrap_err().message.contains("date"));
    let mut b = a.clone();
    b["usages"] = json!(["fly"]);
    assert!(run(&c, b).await.unwrap_err().message.contains("\"fly\""));
    let mut b = a.clone();
    b["key_size"] = json!(1024);
    b["key_type"] = json!("rsa");
    assert!(run(&c, b).await.unwrap_err().message.contains("1024"));
    let mut b = a.clone();
    b["bogus"] = json!(1);
    assert!(run(&c, b).await.is_err());
}

/// CA files made by openssl itself (PKCS#1 RSA and SEC1 P-384/P-256 keys) sign our
/// certificates.
#[tokio::test]
async fn openssl_made_ca_is_usable() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    for (name, keygen) in [
        (
            "ec",
            vec!["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out"],
        ),
        (
            "ec256",
            vec![
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
            ],
        ),
        ("rsa", vec!["genrsa", "-traditional", "-out"]),
    ] {
        let key = p(dir, &format!("{}-ca.key", name));
        let crt = p(dir, &format!("{}-ca.crt", name));
        let mut kg = keygen.clone();
        kg.push(&key);
        if name == "rsa" {
            kg.push("2048");
        }
        let (ok, out) = openssl(&kg);
        assert!(ok, "{}", out);
        let head = std::fs::read_to_string(&key).unwrap();
        assert!(
            head.contains(if name == "rsa" {
                "RSA PRIVATE KEY"
            } else {
                "EC PRIVATE KEY"
            }),
            "{}",
            head
        );
        let (ok, out) = openssl(&[
            "req",
            "-x509",
            "-new",
            "-key",
            &key,
            "-subj",
            "/CN=openssl-ca",
            "-days",
            "30",
            "-out",
            &crt,
        ]);
        assert!(ok, "{}", out);
        let a = json!({"root_key": key, "root_cert": crt, "out_key": p(dir, &format!("{}-leaf.key", name)),
                       "out_cert": p(dir, &format!("{}-leaf.crt", name)), "cn": "leaf", "sans": "leaf.local", "key_type": "ecdsa"});
        assert!(run(&c, a.clone()).await.unwrap().changed);
        let (ok, out) = openssl(&[
            "verify",
            "-CAfile",
            &crt,
            &p(dir, &format!("{}-leaf.crt", name)),
        ]);
        assert!(ok, "{}: {}", name, out);
        assert!(!run(&c, a).await.unwrap().changed);
    }
}

/// A real TLS handshake with client certificates: openssl s_server and s_client.
#[tokio::test]
async fn mutual_tls_handshake() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    make_ca(&c, dir, "ecdsa").await;
    run(&c, leaf_args(dir, "server", json!(["server.local"])))
        .await
        .unwrap();
    run(&c, leaf_args(dir, "client", json!([]))).await.unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("openssl")
        .args([
            "s_server",
            "-accept",
            &format!("127.0.0.1:{}", port),
            "-naccept",
            "1",
            "-cert",
            &p(dir, "server.crt"),
            "-key",
            &p(dir, "server.key"),
            "-CAfile",
            &p(dir, "ca.crt"),
            "-Verify",
            "1",
            "-verify_return_error",
            "-quiet",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut last = String::new();
    let mut ok = false;
    for _ in 0..50 {
        let out = Command::new("openssl")
            .args([
                "s_client",
                "-connect",
                &format!("127.0.0.1:{}", port),
                "-CAfile",
                &p(dir, "ca.crt"),
                "-cert",
                &p(dir, "client.crt"),
                "-key",
                &p(dir, "client.key"),
                "-verify_return_error",
                "-verify_hostname",
                "server.local",
                "-brief",
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        if last.contains("CONNECTION ESTABLISHED") {
            ok = out.status.success();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(ok, "{}", last);
    assert!(last.contains("Verification: OK"), "{}", last);
}

#[tokio::test]
async fn ed25519_and_p384() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let c = ctx(dir, json!({}));
    make_ca(&c, dir, "ed25519").await;
    let mut a = leaf_args(dir, "ed", json!(["ed.local"]));
    a["key_size"] = json!(384);
    assert!(run(&c, a.clone()).await.unwrap().changed);
    assert!(!run(&c, a).await.unwrap().changed);
    let (ok, out) = openssl(&["verify", "-CAfile", &p(dir, "ca.crt"), &p(dir, "ed.crt")]);
    assert!(ok, "{}", out);
    let (_, text) = openssl(&["x509", "-in", &p(dir, "ed.crt"), "-text", "-noout"]);
    assert!(
        text.contains("secp384r1") && text.contains("ED25519"),
        "{}",
        text
    );
}

#[test]
fn validate_at_load() {
    let check = |a: Value| GenCert.validate(&args(a));
    assert!(check(json!({"out_key": "k", "out_cert": "c", "cn": "etcd",
        "sans": "10.0.0.1,node1", "key_size": "2048", "is_ca": "no"}))
    .is_ok());
    let e = check(json!({"out_key": "k", "out_cert": "c", "cn": "x", "sna": "a"})).unwrap_err();
    assert!(e.message.contains("gen_cert") && e.message.contains("sna"));
    let e = check(json!({"out_key": "k", "cn": "x"})).unwrap_err();
    assert!(e.message.contains("`out_key` and `out_cert` are required"));
    let e = check(json!({"out_key": "k", "out_cert": "c", "cn": "x", "policy": "sometimes"}))
        .unwrap_err();
    assert!(e.message.contains("policy"));
    assert!(
        check(json!({"out_key": "k", "out_cert": "c", "cn": "x", "sans": "bad name!"})).is_err()
    );
    assert!(
        check(json!({"out_key": "k", "out_cert": "c", "cn": "x", "root_key": "ca.key"})).is_err()
    );
}
