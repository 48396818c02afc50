//! The container runtime (playbooks/install/cri.yaml: roles cri/crictl and cri/containerd)
//! on two real test hosts, with real software:
//! - containerd 1.7.24 from Debian trixie and runc 1.1.5 from Debian bookworm, repacked in
//!   upstream's archive layouts and fetched by role `download` from the test's artifact
//!   server; crictl is a clearly named FAKE (no Debian release packages cri-tools);
//! - a private registry: Debian's `docker-registry` on the test bed's bridge, with TLS (the
//!   `image_registry.crt` certs/init signs with the cluster's root CA) and htpasswd auth; an
//!   OCI image holding Debian's static busybox, built by the test and pushed with kk's own
//!   `image` module; each host pulls it through the registry configuration kk wrote
//!   (/etc/containerd/certs.d: the cluster's CA and the credentials) and runs it.
//!
//! Also: `--check` on fresh hosts changes no file and reports what it would change; a
//! second run and a `--check` after it report changed=0; an unknown cri.container_manager
//! is refused before any host is touched; an artifact whose sha256 does not match is
//! refused and the hosts keep their containerd.
//!
//! Two things of the test hosts (network namespaces sharing this machine's kernel, root
//! file system an overlay) shape the config, both found by running containerd in them:
//! - containerd's overlayfs snapshotter cannot put its layers on an overlay root ("failed to
//!   mount rootfs component: invalid argument" at `ctr run`), so cri.containerd.data_root is
//!   on the hosts' tmpfs /tmp — the knob a user with such a root would turn too;
//! - when this machine gives the hosts' cgroup no controllers (a hybrid cgroup setup), runc
//!   cannot apply `ctr run`'s default CPU shares (cpu.weight does not exist), so the test
//!   shows that exact failure and runs the container with `--cpu-shares 0`.

use crate::common;

use std::collections::BTreeMap;

use common::artifacts::{build_server, manifest, repo, sha256_file};
use common::cri::{
    busybox_layout, containerd_artifact, containerd_artifact_version, free_port, tls_registry,
};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::http::HttpServer;
use testbed::TestBed;

const NAMES: [&str; 2] = ["kk-cri1", "kk-cri2"];
const REG_USER: &str = "kkpush";
const REG_PASSWORD: &str = "s3cret-Registry-pw";
const IMAGE_REPO: &str = "kk/busybox:test";

/// Both hosts in k8s_cluster; with `registry_group` node 1 also forms the image_registry
/// group (only for certs/init, which makes the registry certificate when that group has hosts).
fn inventory(bed: &TestBed, registry_group: bool) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [{a}]\n    kube_worker:\n      hosts: [{b}]\n",
        a = NAMES[0],
        b = NAMES[1]
    ));
    if registry_group {
        s.push_str(&format!(
            "    image_registry:\n      hosts: [{}]\n",
            NAMES[0]
        ));
    }
    s
}

/// The config: the served versions, the private registry (with the cluster's root CA) and
/// containerd's data root on tmpfs (see the module comment).
fn config(p: &Project, mirror: &str, sums: &BTreeMap<&str, String>, registry: &str) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  kubernetes: {{kube_version: v1.20.2, helm_version: v3.18.5, sandbox_image: {{tag: "3.10"}}}}
  etcd: {{deployment_type: internal}}
  cri:
    container_manager: containerd
    containerd_version: v1.7.24
    runc_version: v1.1.5
    crictl_version: v1.34.0
    containerd:
      data_root: /tmp/kk-containerd
  cni: {{type: none, multi_cni: none, cni_plugins_version: v1.1.1}}
  storage_class: {{local: {{enabled: false}}, nfs: {{enabled: false}}}}
  image_registry:
    auth:
      registry: "{registry}"
      username: {user}
      password: {password}
      skip_tls_verify: false
      ca_file: "{ca}"
  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url:
      runc: "{mirror}mirror/runc/{{version}}/runc.{{arch}}"
    sha256:
      kubectl: "{kubectl}"
      containerd: "{containerd}"
"#,
        registry = registry,
        user = REG_USER,
        password = REG_PASSWORD,
        ca = p.path("wd/pki/root.crt").display(),
        manifest = p.path("artifacts.yaml").display(),
        mirror = mirror,
        kubectl = sums["kubectl"],
        containerd = sums["containerd17"],
    )
}

/// `kk run <playbook> -i <inventory> -c config.yaml --workdir wd --output json <extra…>`.
fn kk(p: &Project, playbook: &str, inventory: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "run",
        playbook,
        "-i",
        inventory,
        "-c",
        "config.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    p.kk(&args)
}

/// What could change on a host: every file under the places the roles write (and the
/// scratch dirs), with size, mode and mtime. systemd's own state is left out.
fn listing(bed: &TestBed, i: usize) -> String {
    sh(
        bed,
        i,
        "find /etc /usr/local /opt /var/lib /tmp -xdev -not -path '/var/lib/systemd/*' -not -path '/tmp/systemd-private-*' -printf '%p %s %m %T@\\n' 2>/dev/null | LC_ALL=C sort",
    )
}

/// Host results (`task`, `host`, `status`) of a run, in order.
fn results(r: &Run) -> Vec<Value> {
    r.events()
        .into_iter()
        .filter(|e| e["event"] == "host_result")
        .collect()
}

fn changed_tasks(r: &Run) -> Vec<String> {
    results(r)
        .iter()
        .filter(|e| e["changed"] == true)
        .map(|e| {
            format!(
                "{} on {}",
                e["task"].as_str().unwrap_or_default(),
                e["host"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// The failure messages of a run.
fn failures(r: &Run) -> String {
    results(r)
        .iter()
        .filter(|e| e["status"] == "failed")
        .map(|e| {
            format!(
                "{}: {}",
                e["host"],
                e["result"]["msg"].as_str().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn containerd_from_artifacts_pulls_from_the_private_registry_and_runs() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let p = Project::new();

    // The artifact server: the shared tree (runc, the FAKE crictl, and every other
    // component the download plan needs) plus containerd 1.7.24, on loopback (the
    // controller downloads).
    let root = p.path("srv");
    let served = build_server(&root, &p.path("scratch"));
    let containerd_srv = containerd_artifact(&root, &p.path("scratch"));
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let mut sums = BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    sums.insert("containerd17", sha256_file(&containerd_srv));

    // The registry listens on the bridge; its name goes into the config first, because
    // certs/init puts it into the certificate's SANs.
    let bridge: std::net::IpAddr = bed.bridge_ip().into();
    let port = free_port(bridge);
    let reg_name = format!("{}:{}", bridge, port);
    p.file("artifacts.yaml", &manifest(&srv.url("cn/"), &sums, ""))
        .file("config.yaml", &config(&p, &srv.url(""), &sums, &reg_name))
        .file("inventory.yaml", &inventory(&bed, false))
        .file("inventory-certs.yaml", &inventory(&bed, true));
    // The site: the controller's downloads, then the repository's install playbook (as
    // create_cluster runs them).
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    p.file(
        "site.yaml",
        &format!(
            "- name: Downloads\n  hosts: localhost\n  gather_facts: false\n  roles: [defaults, download]\n\n- import_playbook: {}\n",
            repo().join("playbooks/install/cri.yaml").display()
        ),
    );
    let certs_pb = repo().join("playbooks/certs_init.yaml");
    let certs_pb = certs_pb.to_str().unwrap();

    eprintln!("cri test: 1. The controller");
    // 1. The controller: certificates (the registry's, signed by the root CA), downloads.
    kk(&p, certs_pb, "inventory-certs.yaml", &[]).code(0);
    for f in ["root.crt", "image_registry.crt", "image_registry.key"] {
        assert!(p.path("wd/pki").join(f).is_file(), "{} from certs/init", f);
    }
    let r = kk(&p, "site.yaml", "inventory.yaml", &["-l", "localhost"]);
    r.code(0);
    let archive =
        p.path("wd/kubekey/containerd/v1.7.24/amd64/containerd-1.7.24-linux-amd64.tar.gz");
    assert_eq!(sha256_file(&archive), sums["containerd17"]);

    // The registry with the certs/init certificate, and the test image pushed to it with
    // kk's image module, which checks the registry's certificate against the cluster's root CA.
    let _reg = tls_registry(
        bridge,
        port,
        &p.path("wd/pki/image_registry.crt"),
        &p.path("wd/pki/image_registry.key"),
        REG_USER,
        REG_PASSWORD,
    );
    assert_eq!(_reg.addr, reg_name);
    let image = format!("{}/{}", reg_name, IMAGE_REPO);
    let digest = busybox_layout(&p.path("image"), &image);
    p.file(
        "push.yaml",
        &format!(
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: push\n      image:\n        src: \"local://{dir}\"\n        dest: \"oci://{image}\"\n        auths: [{{registry: \"{reg}\", username: {u}, password: {pw}, ca_file: \"{ca}\"}}]\n",
            dir = p.path("image").display(),
            image = image,
            reg = reg_name,
            u = REG_USER,
            pw = REG_PASSWORD,
            ca = p.path("wd/pki/root.crt").display()
        ),
    );
    let r = p.kk(&[
        "run",
        "push.yaml",
        "-i",
        "inventory.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ]);
    r.code(0);
    assert_eq!(r.status("push", "localhost"), "changed", "{}", r.describe());

    eprintln!("cri test: 2. --check on fresh");
    // 2. --check on fresh hosts: no file changes, and it says what it would change.
    let before: Vec<String> = (0..2).map(|i| listing(&bed, i)).collect();
    let r = kk(&p, "site.yaml", "inventory.yaml", &["--check", "--diff"]);
    r.code(0);
    // The credentials are in hosts.toml and config.toml: never in the output, not even in
    // the diffs of --diff.
    assert!(
        !r.stdout.contains(REG_PASSWORD)
            && !r.stderr.contains(REG_PASSWORD)
            && !r.stdout.contains("Authorization"),
        "the registry password is in the --check --diff output"
    );
    let after: Vec<String> = (0..2).map(|i| listing(&bed, i)).collect();
    for i in 0..2 {
        assert_eq!(before[i], after[i], "--check changed files on {}", NAMES[i]);
    }
    let would = changed_tasks(&r);
    for name in NAMES {
        for task in [
            "Crictl | Put crictl into /usr/local/bin",
            "Crictl | Write /etc/crictl.yaml",
            "Containerd | Install runc v1.1.5",
            "Containerd | Put the changed binaries into /usr/local/bin",
            "Containerd | Write /etc/containerd/config.toml (config_policy \"override\")",
            "Containerd | Write the containerd.service unit",
        ] {
            assert!(
                would.contains(&format!("{} on {}", task, name)),
                "--check should report {:?} on {}: {:#?}\n{}",
                task,
                name,
                would,
                r.describe()
            );
        }
    }
    assert_eq!(
        sh(
            &bed,
            0,
            "test -e /usr/local/bin/containerd && echo present || echo absent"
        ),
        "absent"
    );

    eprintln!("cri test: 3. The real run.");
    // 3. The real run.
    let r = kk(&p, "site.yaml", "inventory.yaml", &[]);
    r.code(0);
    assert!(
        !r.stdout.contains(REG_PASSWORD),
        "the registry password is in the output"
    );
    let want_version = containerd_artifact_version();
    assert!(want_version.starts_with("1.7.24"), "{}", want_version);
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(
            sh(&bed, i, "systemctl is-active containerd"),
            "active",
            "{}",
            name
        );
        assert_eq!(
            sh(&bed, i, "systemctl is-enabled containerd"),
            "enabled",
            "{}",
            name
        );
        // "Server:\n  Version:  1.7.24~ds1\n  Revision: …"
        let out = sh(&bed, i, "ctr version");
        let server = out
            .split("Server:")
            .nth(1)
            .and_then(|s| s.lines().find_map(|l| l.trim().strip_prefix("Version:")))
            .map(str::trim)
            .unwrap_or_default()
            .to_string();
        assert!(
            server == want_version,
            "ctr version on {} should show the artifact's {}: {}",
            name,
            want_version,
            server
        );
        assert_eq!(
            sh(&bed, i, "sha256sum /usr/local/bin/runc | cut -d' ' -f1"),
            sums["runc"],
            "runc on {}",
            name
        );
        assert!(sh(&bed, i, "/usr/local/bin/crictl").contains("FAKE crictl"));
        assert_eq!(
            sh(&bed, i, "grep '^[a-z]*-endpoint' /etc/crictl.yaml"),
            "runtime-endpoint: unix:///var/run/containerd/containerd.sock\nimage-endpoint: unix:///var/run/containerd/containerd.sock"
        );
        // The registry's CA is the cluster's root CA, and hosts.toml points at it.
        assert_eq!(
            sh(
                &bed,
                i,
                &format!(
                    "sha256sum /etc/containerd/certs.d/{}/ca.crt | cut -d' ' -f1",
                    reg_name
                )
            ),
            sha256_file(&p.path("wd/pki/root.crt"))
        );
        // This machine (the controller) has no such file: upstream's check (`fileExists`,
        // run on the controller) would have left `ca` out; kk checks on the host.
        assert!(
            !std::path::Path::new(&format!("/etc/containerd/certs.d/{}/ca.crt", reg_name)).exists()
        );
        let hosts = sh(
            &bed,
            i,
            &format!("cat /etc/containerd/certs.d/{}/hosts.toml", reg_name),
        );
        assert!(
            hosts.contains(&format!(
                "ca = \"/etc/containerd/certs.d/{}/ca.crt\"",
                reg_name
            )) && hosts.contains("skip_verify = false")
                && hosts.contains("Authorization = \"Basic "),
            "hosts.toml on {}:\n{}",
            name,
            hosts
        );
        assert_eq!(
            sh(
                &bed,
                i,
                &format!(
                    "stat -c %a /etc/containerd/certs.d/{}/hosts.toml /etc/containerd/config.toml",
                    reg_name
                )
            ),
            "600\n600"
        );
        let cfg = sh(&bed, i, "cat /etc/containerd/config.toml");
        for want in [
            "root = \"/tmp/kk-containerd\"",
            "config_path = \"/etc/containerd/certs.d\"",
            "SystemdCgroup = true",
            &format!("sandbox_image = \"{}/kubernetes/pause:3.10\"", reg_name),
            &format!(
                "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"{}\".auth]",
                reg_name
            ),
        ] {
            assert!(
                cfg.contains(want),
                "config.toml on {} lacks {:?}:\n{}",
                name,
                want,
                cfg
            );
        }
    }

    eprintln!("cri test: The pull");
    // The pull: through /etc/containerd/certs.d (the cluster's CA, the credentials of
    // hosts.toml), no flag of the test's own. Without that directory the certificate is
    // not trusted: the CA really is what makes it work.
    for (i, name) in NAMES.iter().enumerate() {
        let no_ca = bed.ssh(i, &format!("ctr -n k8s.io images pull {} 2>&1", image));
        let no_ca_text = String::from_utf8_lossy(&no_ca.stdout);
        assert!(
            !no_ca.status.success() && no_ca_text.contains("x509"),
            "a pull without the hosts dir should fail on the certificate on {}: {}",
            name,
            no_ca_text
        );
        let pulled = sh(
            &bed,
            i,
            &format!("ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d {} 2>&1 | tail -3; ctr -n k8s.io images ls -q", image),
        );
        assert!(
            pulled.lines().any(|l| l == image),
            "pull on {}: {}",
            name,
            pulled
        );
        let have = sh(
            &bed,
            i,
            &format!(
                "ctr -n k8s.io images ls | grep -F '{}' | awk '{{print $3}}'",
                image
            ),
        );
        assert_eq!(
            have, digest,
            "the pulled image on {} is the pushed one",
            name
        );
    }
    // The registry refuses a request without credentials (so the pull's came from
    // hosts.toml), asked from a host with the CA kk put there.
    let anon = sh(
        &bed,
        0,
        &format!(
            "curl -s -o /dev/null -w '%{{http_code}}' --cacert /etc/containerd/certs.d/{r}/ca.crt https://{r}/v2/",
            r = reg_name
        ),
    );
    assert_eq!(anon, "401");

    eprintln!("cri test: Run it. Where");
    // Run it. Where the hosts' cgroup has no cpu controller, ctr's default CPU shares
    // cannot be applied: that exact failure, then the run without them.
    for (i, name) in NAMES.iter().enumerate() {
        let controllers = sh(&bed, i, "cat /sys/fs/cgroup/cgroup.controllers");
        let mut flags = "";
        if !controllers.split_whitespace().any(|c| c == "cpu") {
            let out = bed.ssh(
                i,
                &format!(
                    "ctr -n k8s.io run --rm {} t0 /bin/busybox echo ok 2>&1",
                    image
                ),
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                !out.status.success() && text.contains("cpu.weight: no such file or directory"),
                "without a cpu controller ({:?}) the default run should fail on cpu.weight on {}: {}",
                controllers,
                name,
                text
            );
            eprintln!(
                "cri test: {}: no cpu controller in the host's cgroup ({:?}); `ctr run` failed on cpu.weight as expected, running with --cpu-shares 0",
                name, controllers
            );
            flags = "--cpu-shares 0";
        }
        let ran = sh(
            &bed,
            i,
            &format!(
                "ctr -n k8s.io run --rm {} {} t1 /bin/busybox echo ok",
                flags, image
            ),
        );
        assert_eq!(ran, "ok", "the container's output on {}", name);
        eprintln!("cri test: {}: ctr run {} printed {:?}", name, flags, ran);
    }

    eprintln!("cri test: 4. Again");
    // 4. Again: nothing changes (not even on the controller); then --check agrees.
    let r = kk(&p, "site.yaml", "inventory.yaml", &[]);
    r.code(0);
    assert!(
        changed_tasks(&r).is_empty(),
        "second run changed: {:#?}",
        changed_tasks(&r)
    );
    for h in ["localhost", NAMES[0], NAMES[1]] {
        assert_eq!(r.recap(h)["changed"], 0, "{}", r.describe());
    }
    let listed: Vec<String> = (0..2).map(|i| listing(&bed, i)).collect();
    let r = kk(&p, "site.yaml", "inventory.yaml", &["--check"]);
    r.code(0);
    assert!(
        changed_tasks(&r).is_empty(),
        "--check after a run: {:#?}",
        changed_tasks(&r)
    );
    for i in 0..2 {
        assert_eq!(
            listed[i],
            listing(&bed, i),
            "--check changed files on {}",
            NAMES[i]
        );
    }

    // 4b. config_policy. merge: what the host's config.toml sets by hand stays (upstream's
    //     order) and kk's values fill in what it lacks; "" leaves an existing file alone;
    //     override (the default) writes kk's again. containerd restarts only where the file
    //     changed.
    eprintln!("cri test: 4b. config_policy");
    sh(
        &bed,
        0,
        "sed -i -e 's|^sandbox_image = .*|sandbox_image = \"example.test/pause:hand\"|' -e '/^SystemdCgroup = /d' /etc/containerd/config.toml && printf '\\n[debug]\\nlevel = \"debug\"\\n' >> /etc/containerd/config.toml",
    );
    let policy = |value: &str| {
        let set = format!("cri.containerd.config_policy={}", value);
        let r = kk(&p, "site.yaml", "inventory.yaml", &["--set", &set]);
        r.code(0);
        r
    };
    let config_task = |value: &str| {
        format!(
            "Containerd | Write /etc/containerd/config.toml (config_policy \"{}\") on {}",
            value, NAMES[0]
        )
    };
    let r = policy("merge");
    assert_eq!(
        changed_tasks(&r),
        vec![
            config_task("merge"),
            format!("Containerd | restart on {}", NAMES[0])
        ],
        "{}",
        r.describe()
    );
    let cfg = sh(&bed, 0, "cat /etc/containerd/config.toml");
    for want in [
        "sandbox_image = \"example.test/pause:hand\"",
        "level = \"debug\"",
        "SystemdCgroup = true",
        "root = \"/tmp/kk-containerd\"",
    ] {
        assert!(
            cfg.contains(want),
            "merged config.toml lacks {:?}:\n{}",
            want,
            cfg
        );
    }
    assert_eq!(sh(&bed, 0, "systemctl is-active containerd"), "active");
    assert!(changed_tasks(&policy("merge")).is_empty(), "merge again");
    sh(&bed, 0, "sed -i 's|^sandbox_image = .*|sandbox_image = \"example.test/pause:hand2\"|' /etc/containerd/config.toml");
    let r = policy("");
    assert!(changed_tasks(&r).is_empty(), "{:#?}", changed_tasks(&r));
    assert!(sh(&bed, 0, "cat /etc/containerd/config.toml").contains("pause:hand2"));
    let r = policy("override");
    assert_eq!(
        changed_tasks(&r),
        vec![
            config_task("override"),
            format!("Containerd | restart on {}", NAMES[0])
        ]
    );
    assert_eq!(
        sh(&bed, 0, "cat /etc/containerd/config.toml"),
        sh(&bed, 1, "cat /etc/containerd/config.toml"),
        "override writes kk's config again"
    );
    let listed: Vec<String> = (0..2).map(|i| listing(&bed, i)).collect();

    eprintln!("cri test: 5. An unknown");
    // 5. An unknown container manager: refused on every host before anything is touched,
    //    by the install playbook and by precheck/cri.
    let containerd_sum = sh(
        &bed,
        0,
        "sha256sum /usr/local/bin/containerd | cut -d' ' -f1",
    );
    let r = kk(
        &p,
        "site.yaml",
        "inventory.yaml",
        &["--set", "cri.container_manager=podman"],
    );
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failures(&r);
    for name in NAMES {
        let line = msg
            .lines()
            .find(|l| l.starts_with(&format!("\"{}\"", name)))
            .unwrap_or_else(|| panic!("no failure on {}: {}\n{}", name, msg, r.describe()));
        for want in [
            &format!("{}: cri.container_manager is \"podman\"", name) as &str,
            "cluster_require.require_container_manager (docker, containerd)",
        ] {
            assert!(line.contains(want), "{:?} lacks {:?}", line, want);
        }
    }
    assert!(changed_tasks(&r).is_empty(), "{:#?}", changed_tasks(&r));
    for i in 0..2 {
        assert_eq!(
            listed[i],
            listing(&bed, i),
            "the refused run touched {}",
            NAMES[i]
        );
    }
    let r = kk(
        &p,
        repo().join("playbooks/precheck.yaml").to_str().unwrap(),
        "inventory.yaml",
        &["--tags", "cri", "--set", "cri.container_manager=podman"],
    );
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failures(&r);
    assert!(
        msg.contains("cri.container_manager is \"podman\"; expected one of cluster_require.require_container_manager (docker, containerd)")
            && NAMES.iter().any(|n| msg.contains(&format!("{}: cri.container_manager", n))),
        "precheck: {}\n{}",
        msg,
        r.describe()
    );
    assert!(changed_tasks(&r).is_empty(), "{:#?}", changed_tasks(&r));

    eprintln!("cri test: 6. A tampered");
    // 6. A tampered containerd on the server (another binary in the same archive name):
    //    download refuses it and stores nothing; with the controller's only play failed the
    //    run ends there (Ansible's rule), so no install task runs and the hosts keep their
    //    containerd, running.
    std::fs::write(
        p.path("scratch/containerd-1.7/bin/containerd"),
        "#!/bin/sh\necho tampered\n",
    )
    .unwrap();
    common::artifacts::tar_gz(&containerd_srv, &p.path("scratch/containerd-1.7"), &["bin"]);
    std::fs::remove_file(&archive).unwrap();
    let r = kk(&p, "site.yaml", "inventory.yaml", &[]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failures(&r);
    assert!(
        msg.contains("containerd v1.7.24 (amd64)") && msg.to_lowercase().contains("sha256"),
        "download should refuse the tampered containerd: {}\n{}",
        msg,
        r.describe()
    );
    assert!(!archive.exists(), "the tampered archive was stored");
    let on_hosts: Vec<String> = results(&r)
        .iter()
        .filter(|e| {
            e["task"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Containerd |")
                || e["task"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("Crictl |")
        })
        .map(|e| format!("{} on {}", e["task"], e["host"]))
        .collect();
    assert!(
        on_hosts.is_empty(),
        "no install task may run after the refused download: {:#?}",
        on_hosts
    );
    assert_eq!(
        sh(
            &bed,
            0,
            "sha256sum /usr/local/bin/containerd | cut -d' ' -f1"
        ),
        containerd_sum,
        "the old containerd stays"
    );
    for i in 0..2 {
        assert_eq!(sh(&bed, i, "systemctl is-active containerd"), "active");
    }
}

/// The cri meta role lists cri/docker with `when: cri.container_manager == 'docker'`; an
/// `include_tasks` inside such a role must not evaluate its own condition once the role's is
/// false (the engine used to, and failed on variables only the docker path defines).
#[test]
fn include_tasks_in_a_skipped_role_does_not_evaluate_its_own_condition() {
    let p = Project::new();
    p.file(
        "inventory.yaml",
        "all:\n  hosts:\n    localhost: {ansible_connection: local}\n",
    )
    .file(
        "roles/outer/meta/main.yaml",
        "dependencies:\n  - role: inner\n    when: manager == 'docker'\n",
    )
    .file(
        "roles/inner/tasks/main.yaml",
        "- name: inner include\n  include_tasks: more.yaml\n  when: only_docker_defines_this | bool\n",
    )
    .file(
        "roles/inner/tasks/more.yaml",
        "- name: inner more\n  debug: {msg: should not run}\n",
    )
    .file(
        "site.yaml",
        "- hosts: localhost\n  gather_facts: false\n  vars: {manager: containerd}\n  roles: [outer]\n",
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(
        r.status("inner include", "localhost"),
        "skipped",
        "{}",
        r.describe()
    );
}
