//! The mapping checked step by step on CABPK-shaped samples (tests/data/provisioning), the
//! refusals, the secrecy of `Debug` and errors, and "never panic" on damaged documents.

use super::*;
use sha2::{Digest, Sha256};

fn sample(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/provisioning/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn file(step: &Step) -> &WriteFile {
    match step {
        Step::WriteFile(w) => w,
        other => panic!("expected a write_file, got {other:?}"),
    }
}

fn text(step: &Step) -> String {
    String::from_utf8(file(step).content.clone()).unwrap()
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn shell(step: &Step) -> &str {
    match step {
        Step::Shell(s) => s,
        other => panic!("expected a shell step, got {other:?}"),
    }
}

fn argv(step: &Step) -> Vec<&str> {
    match step {
        Step::Argv(a) => a.iter().map(String::as_str).collect(),
        other => panic!("expected an argv step, got {other:?}"),
    }
}

const SENTINEL: &str = "echo success > /run/cluster-api/bootstrap-success.complete";

#[test]
fn controlplane_init_maps_files_then_runcmd() {
    let doc = sample("cloud-config-controlplane-init.yaml");
    let steps = parse_with(&doc, "cloud-config", &Metadata::for_machine("cp-0")).unwrap();
    let paths: Vec<&str> = steps[..12].iter().map(|s| file(s).path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/etc/kubernetes/pki/ca.crt",
            "/etc/kubernetes/pki/ca.key",
            "/etc/kubernetes/pki/etcd/ca.crt",
            "/etc/kubernetes/pki/etcd/ca.key",
            "/etc/kubernetes/pki/front-proxy-ca.crt",
            "/etc/kubernetes/pki/front-proxy-ca.key",
            "/etc/kubernetes/pki/sa.pub",
            "/etc/kubernetes/pki/sa.key",
            "/etc/modules-load.d/k8s.conf",
            "/etc/sysctl.d/99-kubernetes.conf",
            "/run/kubeadm/kubeadm.yaml",
            "/run/cluster-api/placeholder",
        ]
    );
    assert_eq!(steps.len(), 16);
    // Plain PEM, as CABPK writes the cluster's certificates.
    let ca = file(&steps[0]);
    assert_eq!(
        (ca.mode.as_str(), ca.owner.as_str(), ca.append),
        ("0640", "root:root", false)
    );
    assert!(text(&steps[0]).starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(text(&steps[0]).ends_with("-----END CERTIFICATE-----\n"));
    assert_eq!(file(&steps[1]).mode, "0600");
    // base64 (wrapped at 76 columns), b64, gzip+base64: decoded to the original bytes.
    assert_eq!(
        sha(&file(&steps[2]).content),
        "6ffda8b36f1c49dd568adf5de66f620ac0085e2c05260cb04d45cd3577e1d7f8"
    );
    assert_eq!(
        sha(&file(&steps[3]).content),
        "a75a031646e331ea5e902882eed8982ed4dd3deea2bbdff6ad9503d9ec75b7db"
    );
    assert_eq!(
        sha(&file(&steps[5]).content),
        "f0373ac7744738e09f738ab00e18290c76da62830256b86ab8b3bac4c0dbb08e"
    );
    assert_eq!(text(&steps[8]), "overlay\nbr_netfilter\n");
    assert_eq!(file(&steps[8]).mode, "0644");
    assert!(file(&steps[9]).append);
    // The kubeadm config: both documents, node name rendered from the Machine.
    let kubeadm = text(&steps[10]);
    assert!(kubeadm.starts_with("---\napiServer:\n"));
    assert!(kubeadm.contains("kind: ClusterConfiguration\n"));
    assert!(kubeadm.contains("---\napiVersion: kubeadm.k8s.io/v1beta4\nbootstrapTokens:"));
    assert!(kubeadm.contains("  name: 'cp-0'\n"));
    assert!(!kubeadm.contains("{{"));
    assert_eq!(file(&steps[10]).mode, "0640");
    assert!(text(&steps[11]).starts_with("This placeholder file"));
    assert_eq!(
        shell(&steps[12]),
        "modprobe overlay && modprobe br_netfilter"
    );
    assert_eq!(shell(&steps[13]), "sysctl --system");
    assert_eq!(
        shell(&steps[14]),
        format!("kubeadm init --config /run/kubeadm/kubeadm.yaml  && {SENTINEL}")
    );
    assert_eq!(
        shell(&steps[15]),
        "mkdir -p /root/.kube && cp /etc/kubernetes/admin.conf /root/.kube/config"
    );
}

#[test]
fn steps_serialize_in_the_playbook_shape() {
    let doc = sample("cloud-config-worker-join.yaml");
    let steps = parse_with(&doc, "cloud-config", &Metadata::for_machine("w-0")).unwrap();
    let json = serde_json::to_value(&steps).unwrap();
    assert_eq!(
        json[0],
        serde_json::json!({"shell": "echo boot > /run/capkk-bootcmd"})
    );
    assert_eq!(
        json[1],
        serde_json::json!({"argv": ["mkdir", "-p", "/var/lib/kubelet"]})
    );
    let w = &json[2]["write_file"];
    let keys: Vec<&str> = w.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["path", "content_base64", "mode", "owner", "append"]);
    assert_eq!(w["mode"], "0644");
    assert_eq!(w["owner"], "root:root");
    assert_eq!(w["append"], false);
    let mkdir = Step::Mkdir(Mkdir {
        path: "/etc/kubernetes".into(),
        mode: "0755".into(),
        owner: "root:root".into(),
    });
    assert_eq!(
        serde_json::to_value(&mkdir).unwrap(),
        serde_json::json!({"mkdir": {"path": "/etc/kubernetes", "mode": "0755", "owner": "root:root"}})
    );
    let back: Vec<Step> = serde_json::from_value(json).unwrap();
    assert_eq!(back, steps);
}

#[test]
fn worker_join_runs_in_cloud_init_module_order() {
    let doc = sample("cloud-config-worker-join.yaml");
    let steps = parse_with(&doc, "", &Metadata::for_machine("worker-0")).unwrap();
    // bootcmd first, though the document lists it after write_files.
    assert_eq!(shell(&steps[0]), "echo boot > /run/capkk-bootcmd");
    assert_eq!(argv(&steps[1]), ["mkdir", "-p", "/var/lib/kubelet"]);
    assert_eq!(file(&steps[2]).path, "/etc/containerd/conf.d/registry.toml");
    let join = file(&steps[3]);
    assert_eq!(join.path, "/run/kubeadm/kubeadm-join-config.yaml");
    let join = text(&steps[3]);
    assert!(join.contains("  name: 'worker-0'\n"));
    assert!(join.contains("token: fake02.fedcba9876543210\n"));
    assert_eq!(file(&steps[4]).path, "/run/cluster-api/placeholder");
    // mounts: fstab line (cloud-init's default fields) and a mount.
    let mount = shell(&steps[5]);
    assert!(mount.contains(
        "printf '%s\\n' 'LABEL=etcd_disk /var/lib/etcddisk auto defaults,nofail 0 2' >> /etc/fstab"
    ));
    assert!(mount.contains("mountpoint -q /var/lib/etcddisk || mount /var/lib/etcddisk"));
    // users: the sudoers file, then the account script.
    let sudo = file(&steps[6]);
    assert_eq!(sudo.path, "/etc/sudoers.d/90-cluster-api-capk");
    assert_eq!(sudo.mode, "0440");
    assert_eq!(
        text(&steps[6]),
        "# Cluster API user rules for capk\ncapk ALL=(ALL) NOPASSWD:ALL\n"
    );
    let user = shell(&steps[7]);
    assert!(user.contains("if ! getent passwd capk >/dev/null; then\n  useradd -s /bin/bash -G docker,adm -m capk\n  passwd -l capk >/dev/null\nfi\n"));
    assert!(user.contains(
        "getent group docker >/dev/null || getent passwd capk >/dev/null || groupadd docker\n"
    ));
    assert!(user.contains("visudo -cq -f /etc/sudoers.d/90-cluster-api-capk"));
    assert!(user.contains("grep -qxF -- 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE capk@example' \"$keys\""));
    // ntp: timesyncd or chrony, whichever the machine has.
    let ntp = shell(&steps[8]);
    assert!(ntp.contains("NTP=0.pool.ntp.org 10.0.0.1"));
    assert!(ntp.contains("server 0.pool.ntp.org iburst\nserver 10.0.0.1 iburst"));
    assert_eq!(shell(&steps[9]), "systemctl restart containerd");
    assert_eq!(
        shell(&steps[10]),
        format!("kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml  && {SENTINEL}")
    );
    assert_eq!(argv(&steps[11]), ["systemctl", "enable", "kubelet"]);
    assert_eq!(steps.len(), 12);
}

#[test]
fn jinja_variables_render_from_the_machine() {
    let doc = sample("cloud-config-controlplane-join-jinja.yaml");
    let meta = Metadata {
        local_hostname: "cp-1".into(),
        hostname: "cp-1.example".into(),
        instance_id: "kk-0001".into(),
    };
    let steps = parse_with(&doc, "cloud-config", &meta).unwrap();
    let ca_key = steps
        .iter()
        .map(file)
        .find(|f| f.path == "/etc/kubernetes/pki/ca.key");
    assert_eq!(
        sha(&ca_key.unwrap().content),
        "b2f8325f10d9c8cb61152e9956c6f4bb815b4dc42074f0e30f1fc15a205cbd84"
    );
    let instance = steps
        .iter()
        .position(|s| matches!(s, Step::WriteFile(w) if w.path == "/etc/capkk/instance"));
    assert_eq!(text(&steps[instance.unwrap()]), "id=kk-0001 literal={{\n");
    let join = steps.iter().position(
        |s| matches!(s, Step::WriteFile(w) if w.path.ends_with("kubeadm-join-config.yaml")),
    );
    let join = text(&steps[join.unwrap()]);
    assert!(join.contains("advertiseAddress: 'cp-1'\n"));
    assert!(join.contains("  name: 'cp-1'\n"));
    let n = steps.len();
    assert_eq!(shell(&steps[n - 3]), "hostname \"cp-1.example\"");
    assert_eq!(shell(&steps[n - 2]), "echo \"cp-1.example\" >/etc/hostname");
}

#[test]
fn jinja_without_a_machine_name_or_unknown_variable_is_an_error() {
    let doc = sample("cloud-config-controlplane-init.yaml");
    let e = parse(&doc, "cloud-config").unwrap_err();
    assert_eq!(e.path, "Jinja template");
    let (line, _) = e.line_column.unwrap();
    let text = String::from_utf8(doc).unwrap();
    assert!(text
        .lines()
        .nth(line - 1)
        .unwrap()
        .contains("ds.meta_data.local_hostname"));
    assert!(e.to_string().contains("parse_with"), "{e}");
    let doc = b"## template: jinja\n#cloud-config\nruncmd:\n  - echo {{ ds.meta_data.region }}\n";
    let e = parse_with(doc, "cloud-config", &Metadata::for_machine("m")).unwrap_err();
    assert_eq!(e.line_column, Some((4, 10)));
    assert!(e.found.contains("ds.meta_data.region"), "{e}");
    let doc = b"## template: jinja\n#cloud-config\n{% if true %}\nruncmd: []\n{% endif %}\n";
    let e = parse_with(doc, "cloud-config", &Metadata::for_machine("m")).unwrap_err();
    assert!(e.found.contains("{% … %}"), "{e}");
    // Without the template header, braces are plain text (as cloud-init leaves them).
    let doc = b"#cloud-config\nruncmd:\n  - echo '{{ x }}'\n";
    assert_eq!(
        parse(doc, "cloud-config").unwrap(),
        [Step::Shell("echo '{{ x }}'".into())]
    );
}

#[test]
fn ignition_v3_maps_users_storage_and_units() {
    let doc = sample("ignition-v3-worker-join.json");
    let steps = parse(&doc, "ignition").unwrap();
    let user = shell(&steps[0]);
    assert!(user.contains("useradd -G sudo -m capk"));
    assert!(
        !user.contains("passwd -l"),
        "Ignition does not lock passwords"
    );
    assert_eq!(
        steps[1],
        Step::Mkdir(Mkdir {
            path: "/etc/kubernetes/pki".into(),
            mode: "0755".into(),
            owner: "root:root".into()
        })
    );
    assert_eq!(file(&steps[2]).path, "/etc/sudoers.d/capk");
    assert_eq!(file(&steps[2]).mode, "0600");
    assert_eq!(text(&steps[2]), "capk ALL=(ALL) NOPASSWD:ALL\n");
    let ca = file(&steps[3]);
    assert_eq!((ca.mode.as_str(), ca.owner.as_str()), ("0640", "root:root"));
    assert_eq!(
        sha(&ca.content),
        "91fa3130b16c03805203848540ebff796b6e07d659ec815ccb8ba9bc54bfb428"
    );
    assert_eq!(
        sha(&file(&steps[4]).content),
        "b2f8325f10d9c8cb61152e9956c6f4bb815b4dc42074f0e30f1fc15a205cbd84"
    );
    assert_eq!(file(&steps[5]).path, "/etc/kubeadm.sh");
    assert_eq!(file(&steps[5]).mode, "0700");
    assert!(text(&steps[5]).contains(
        "\nkubeadm join --config /etc/kubeadm.yml\nmkdir -p /run/cluster-api && echo success"
    ));
    assert_eq!(
        sha(&file(&steps[6]).content),
        "6e8ab916c672e3048cfbd751bf692720a3f44bb138e438b9e44bcd2dcc0ea4a6"
    );
    assert_eq!(text(&steps[7]), "net.ipv4.ip_forward = 1\n");
    assert!(!file(&steps[7]).append);
    assert_eq!(text(&steps[8]), "net.bridge.bridge-nf-call-iptables = 1\n");
    assert!(file(&steps[8]).append);
    assert_eq!(
        shell(&steps[9]),
        "set -e\nmkdir -p /usr/local/bin\nln -fsn /etc/kubeadm.sh /usr/local/bin/kubeadm-sh\n"
    );
    assert_eq!(file(&steps[10]).path, "/etc/systemd/system/kubeadm.service");
    assert!(text(&steps[10]).contains("ExecStart=/bin/bash /etc/kubeadm.sh\n"));
    assert_eq!(
        file(&steps[11]).path,
        "/etc/systemd/system/containerd.service.d/10-capkk.conf"
    );
    assert_eq!(argv(&steps[12]), ["systemctl", "daemon-reload"]);
    assert_eq!(
        argv(&steps[13]),
        ["systemctl", "enable", "--now", "kubeadm.service"]
    );
    assert_eq!(steps.len(), 14);
}

#[test]
fn ignition_v2_as_cabpk_writes_it() {
    let doc = sample("ignition-v2-cabpk.json");
    let steps = parse(&doc, "ignition").unwrap();
    assert_eq!(file(&steps[0]).path, "/etc/kubeadm.sh");
    assert_eq!(file(&steps[0]).mode, "0700");
    assert_eq!(file(&steps[1]).path, "/etc/kubeadm.yml");
    assert_eq!(file(&steps[1]).mode, "0600");
    assert!(text(&steps[1]).contains("  name: worker-0\n"));
    assert_eq!(file(&steps[2]).path, "/etc/systemd/system/kubeadm.service");
    assert_eq!(argv(&steps[3]), ["systemctl", "daemon-reload"]);
    assert_eq!(
        argv(&steps[4]),
        ["systemctl", "enable", "--now", "kubeadm.service"]
    );
    assert_eq!(steps.len(), 5);
}

/// Each case: document, format, the error's path, a word its message must contain.
#[test]
fn unsupported_input_is_refused_with_where_what_and_fix() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("#cloud-config\ndisk_setup:\n  /dev/sdb:\n    table_type: gpt\n    layout: true\n", "cloud-config", "disk_setup", "partition"),
        ("#cloud-config\nfs_setup:\n  - label: etcd_disk\n    filesystem: ext4\n    device: /dev/sdb\n", "cloud-config", "fs_setup", "disks"),
        ("#cloud-config\npackages: [vim]\n", "cloud-config", "`packages`", "runcmd"),
        ("#cloud-config\nwrite_files:\n- path: /etc/x\n  source:\n    uri: https://example.com/x\n", "cloud-config", "write_files[0].source", "download"),
        ("#cloud-config\nwrite_files:\n- path: /etc/x\n  encoding: zstd\n  content: abc\n", "cloud-config", "write_files[0].encoding", "gzip+base64"),
        ("#cloud-config\nwrite_files:\n- path: /etc/x\n  permissions: 416\n", "cloud-config", "write_files[0].permissions", "quote"),
        ("#cloud-config\nwrite_files:\n- path: etc/x\n", "cloud-config", "write_files[0].path", "absolute"),
        ("#cloud-config\nwrite_files:\n- path: /etc/x\n  permission: '0600'\n", "cloud-config", "write_files[0]", "permission"),
        ("#cloud-config\nusers:\n  - default\n", "cloud-config", "users[0]", "default"),
        ("#cloud-config\nusers:\n  - name: 'bad name'\n", "cloud-config", "users[0].name", "user or group name"),
        ("#cloud-config\nusers:\n  - name: capk\n    inactive: true\n", "cloud-config", "users[0].inactive", "no effect"),
        ("#cloud-config\nmounts:\n  - [ ephemeral0, /mnt ]\n", "cloud-config", "mounts[0]", "cloud-specific"),
        ("#cloud-config\nntp:\n  ntp_client: ntpd\n  servers: [a]\n", "cloud-config", "ntp.ntp_client", "chrony"),
        ("#cloud-config\nruncmd: echo hi\n", "cloud-config", "runcmd", "list"),
        ("#!/bin/bash\necho hi\n", "cloud-config", "", "shell script"),
        ("#cloud-config\nruncmd:\n  - [a, b\n", "cloud-config", "", "YAML"),
        ("{}", "butane", "format", "cloud-config"),
        (r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","contents":{"source":"https://example.com/x"}}]}}"#, "ignition", "storage.files[0].contents.source", "https://"),
        (r#"{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/sdb"}]}}"#, "ignition", "storage.disks", "partitioning"),
        (r#"{"ignition":{"version":"1.0.0"}}"#, "ignition", "ignition.version", "3.x"),
        (r#"{"ignition":{"version":"3.4.0","config":{"merge":[{"source":"http://x"}]}}}"#, "ignition", "ignition.config", "remote"),
        (r#"{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"../evil"}]}}"#, "ignition", "systemd.units[0].name", "unit file name"),
        (r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","contents":{"source":"data:,abc","verification":{"hash":"sha256-00"}}}]}}"#, "ignition", "storage.files[0].contents.verification.hash", "different hash"),
        (r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","mode":"0644"}]}}"#, "ignition", "storage.files[0].mode", "decimal"),
        ("{\"ignition\": ", "ignition", "", "JSON"),
    ];
    for (doc, format, path, word) in cases {
        let e = parse(doc.as_bytes(), format).expect_err(doc);
        assert_eq!(&e.path, path, "{doc}: {e}");
        assert!(e.to_string().contains(word), "{doc}: `{word}` not in: {e}");
        assert!(!e.fix.is_empty() && !e.expected.is_empty());
    }
    let e = parse(b"#cloud-config\nruncmd:\n  - [a, b\n", "cloud-config").unwrap_err();
    assert!(e.line_column.is_some(), "{e}");
    let e = parse(b"{\n\"ignition\": }", "ignition").unwrap_err();
    assert_eq!(e.line_column.map(|l| l.0), Some(2));
}

#[test]
fn errors_and_debug_never_show_secret_content() {
    let doc = b"#cloud-config\nwrite_files:\n- path: /etc/kubernetes/pki/ca.key\n  encoding: b64\n  content: TOPSECRETKEY!!!\n";
    let e = parse(doc, "cloud-config").unwrap_err();
    assert_eq!(e.path, "write_files[0].content");
    assert!(!format!("{e} {e:?}").contains("TOPSECRET"), "{e}");
    let doc = br#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/x","contents":{"source":"data:;base64,TOPSECRET!!"}}]}}"#;
    let e = parse(doc, "ignition").unwrap_err();
    assert!(!format!("{e} {e:?}").contains("TOPSECRET"), "{e}");

    let init = sample("cloud-config-controlplane-init.yaml");
    let steps = parse_with(&init, "cloud-config", &Metadata::for_machine("cp-0")).unwrap();
    let debug = format!("{steps:?}");
    assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    assert!(!debug.contains("fake01"), "{debug}");
    assert!(
        debug.contains("path: \"/etc/kubernetes/pki/ca.key\", size: "),
        "{debug}"
    );

    let cmd = Step::Shell(
        "kubeadm join 10.0.0.10:6443 --token fake02.fedcba9876543210 --certificate-key=abc123"
            .into(),
    );
    let debug = format!("{cmd:?}");
    assert!(
        !debug.contains("fedcba") && !debug.contains("abc123"),
        "{debug}"
    );
    assert_eq!(
        redact_command("kubeadm join x --token t.s --discovery-token-ca-cert-hash sha256:1"),
        "kubeadm join x --token <redacted> --discovery-token-ca-cert-hash sha256:1"
    );
}

/// Deterministic damage: every truncation of every sample, and single-byte edits at
/// pseudo-random places, must give Ok or Err, never a panic.
#[test]
fn damaged_documents_never_panic() {
    let meta = Metadata::for_machine("m-0");
    let samples = [
        ("cloud-config-controlplane-init.yaml", "cloud-config"),
        ("cloud-config-worker-join.yaml", "cloud-config"),
        ("cloud-config-controlplane-join-jinja.yaml", "cloud-config"),
        ("ignition-v3-worker-join.json", "ignition"),
        ("ignition-v2-cabpk.json", "ignition"),
    ];
    let junk: &[&[u8]] = &[
        b"{{",
        b"}}",
        b"{%",
        b":",
        b"- ",
        b"\n",
        b"\0",
        b"\xff",
        b"\"",
        b"'",
        b"[",
        b"%",
        b"-1",
        b"!!binary ",
        b"\t",
    ];
    let mut errors = 0usize;
    let mut seed = 19u64;
    for (name, format) in samples {
        let doc = sample(name);
        let stride = (doc.len() / 1500).max(1);
        for len in (0..doc.len()).step_by(stride) {
            errors += usize::from(parse_with(&doc[..len], format, &meta).is_err());
        }
        for _ in 0..600 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = (seed >> 33) as usize % doc.len();
            let piece = junk[(seed >> 17) as usize % junk.len()];
            let mut bad = doc[..at].to_vec();
            bad.extend_from_slice(piece);
            bad.extend_from_slice(&doc[at + usize::from(seed & 1 == 1).min(doc.len() - at)..]);
            errors += usize::from(parse_with(&bad, format, &meta).is_err());
            let _ = parse(&bad, format);
        }
    }
    assert!(
        errors > 1000,
        "only {errors} damaged documents were refused"
    );
}

#[test]
fn permissions_read_as_cloud_init_reads_them() {
    // Unquoted 0640 is octal to YAML 1.1 (cloud-init); serde_yaml keeps it as text, and
    // it is read as octal here too.
    for (perm, mode) in [
        ("'0640'", "0640"),
        ("0640", "0640"),
        ("'600'", "0600"),
        ("'0o755'", "0755"),
    ] {
        let doc = format!("#cloud-config\nwrite_files:\n- path: /etc/x\n  permissions: {perm}\n");
        let steps = parse(doc.as_bytes(), "cloud-config").unwrap();
        assert_eq!(file(&steps[0]).mode, mode, "{perm}");
    }
}

/// Every generated shell step is valid POSIX sh (`sh -n`), on the samples and on a
/// document that uses the rarer user, group and mount options.
#[test]
fn generated_shell_steps_are_valid_sh() {
    let extra = br#"#cloud-config
groups:
  - admingroup: [root, sys]
  - cloud-users
users:
  - name: obrien.x
    gecos: "O'Brien, ops"
    homedir: /home/obrien
    primary_group: ops
    groups: [adm, "wheel"]
    uid: "1500"
    inactive: 30
    passwd: $6$fake$FAKEHASH
    hashed_passwd: $6$fake$OTHERFAKEHASH
    lock_passwd: false
    sudo: ["ALL=(ALL) NOPASSWD:/usr/bin/kubectl", "ALL=(ALL) ALL"]
    ssh_authorized_keys: ["ssh-rsa AAAAB3Nza'quote fake"]
mounts:
  - [ sdb1, /var/lib/etcd data, ext4 ]
"#;
    // The space in the mount point is refused; the rest must map.
    let e = parse(extra, "cloud-config").unwrap_err();
    assert_eq!(e.path, "mounts[0][1]");
    let extra = String::from_utf8_lossy(extra).replace("/var/lib/etcd data", "/var/lib/etcd");
    let steps = parse(extra.as_bytes(), "cloud-config").unwrap();
    let hash_file = file(&steps[3]);
    assert_eq!(hash_file.path, "/run/cluster-api/users/obrien.x.passwd");
    assert_eq!(hash_file.mode, "0600");
    let user = shell(&steps[5]);
    assert!(
        !user.contains("FAKEHASH"),
        "password hashes stay out of command lines"
    );
    assert!(user.contains("usermod -p \"$(cat /run/cluster-api/users/obrien.x.passwd)\" obrien.x"));
    assert!(!user.contains("passwd -l"));
    assert_eq!(
        file(&steps[4]).path,
        "/etc/sudoers.d/90-cluster-api-obrien_x"
    );
    assert!(shell(&steps[0]).contains("/dev/sdb1 /var/lib/etcd ext4 defaults,nofail 0 2"));
    let mut all = steps;
    let meta = Metadata::for_machine("m-0");
    for (name, format) in [
        ("cloud-config-controlplane-init.yaml", "cloud-config"),
        ("cloud-config-worker-join.yaml", "cloud-config"),
        ("cloud-config-controlplane-join-jinja.yaml", "cloud-config"),
        ("ignition-v3-worker-join.json", "ignition"),
    ] {
        all.extend(parse_with(&sample(name), format, &meta).unwrap());
    }
    let mut checked = 0;
    for step in &all {
        if let Step::Shell(script) = step {
            let out = std::process::Command::new("sh")
                .args(["-n", "-c", script])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{script}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked}");
}
