//! The built-in commands: they run the playbooks compiled into `kk`, from any directory,
//! and `kk create config|inventory` write the bundled starting files.

use crate::common;

use common::Project;
use testbed::TestBed;

#[test]
fn create_config_writes_the_starting_file_of_each_supported_minor() {
    let p = Project::new();
    for v in [
        "v1.23.17", "v1.26.15", "v1.28.15", "v1.30.2", "v1.33.1", "v1.34.3",
    ] {
        let out = format!("config-{}.yaml", v);
        p.kk(&["create", "config", "--with-kubernetes", v, "-o", &out])
            .code(0);
        let text = p.read(&out);
        assert!(text.contains("kind: Config"), "{}", text);
        assert!(
            text.contains(&format!("kube_version: {}", v)),
            "the version is filled in:\n{}",
            text
        );
        assert!(!text.contains("KUBE_VERSION"), "{}", text);
        assert!(text.contains("\n#") || text.starts_with('#'), "commented");
    }
    // Without -o it prints; the default is upstream's v1.34.3.
    let run = p.kk(&["create", "config"]);
    run.code(0);
    assert!(
        run.stdout.contains("kube_version: v1.34.3"),
        "{}",
        run.stdout
    );

    // An existing file is never overwritten.
    let run = p.kk(&["create", "config", "-o", "config-v1.30.2.yaml"]);
    run.code(5);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    // Unsupported or malformed versions say what is supported.
    let run = p.kk(&["create", "config", "--with-kubernetes", "v1.12.0"]);
    run.code(5);
    assert!(
        run.stderr.contains("v1.23, v1.24") && run.stderr.contains("v1.34"),
        "{}",
        run.stderr
    );
    let run = p.kk(&["create", "config", "--with-kubernetes", "latest"]);
    run.code(5);
    assert!(run.stderr.contains("v1.34.3"), "{}", run.stderr);
}

#[test]
fn create_inventory_writes_a_loadable_inventory() {
    let p = Project::new();
    p.kk(&["create", "inventory", "-o", "inventory.yaml"])
        .code(0);
    let text = p.read("inventory.yaml");
    for group in ["k8s_cluster", "kube_control_plane", "kube_worker", "etcd"] {
        assert!(text.contains(group), "{}", text);
    }
    // kk itself loads it.
    p.file(
        "site.yaml",
        "- hosts: k8s_cluster\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ groups.etcd }}\"}\n",
    );
    p.kk(&["run", "site.yaml", "-i", "inventory.yaml"]).code(0);
}

/// `kk precheck os` on a real test host, from a directory holding nothing but the
/// inventory: the bundled playbook runs, and only the os checks run.
#[test]
fn precheck_runs_the_bundled_playbook_from_any_directory() {
    let bed = TestBed::start(1).expect("test bed");
    let h = &bed.hosts()[0];
    let p = Project::new();
    p.file(
        "inventory.yaml",
        &format!(
            r#"kind: Inventory
spec:
  hosts:
    node1:
      connector: {{host: {ip}, port: {port}, user: root, private_key: {key}}}
  groups:
    k8s_cluster: {{groups: [kube_control_plane, kube_worker]}}
    kube_control_plane: {{hosts: [node1]}}
    kube_worker: {{hosts: [node1]}}
    etcd: {{hosts: [node1]}}
"#,
            ip = h.ip,
            port = h.port,
            key = h.root_key_path.display()
        ),
    );
    let run = p.kk(&[
        "precheck",
        "os",
        "-i",
        "inventory.yaml",
        "--with-kubernetes",
        "v1.33.1",
        "--output",
        "json",
    ]);
    run.code(0);
    let tasks: Vec<String> = run
        .events()
        .iter()
        .filter(|e| e["event"] == "host_result" && e["host"] == "node1")
        .filter_map(|e| e["task"].as_str().map(str::to_string))
        .collect();
    assert!(
        tasks.iter().any(|t| t.starts_with("os | ")),
        "the os checks ran: {:?}",
        tasks
    );
    let others = [
        "kubernetes | ",
        "network | ",
        "etcd | ",
        "cri | ",
        "nfs | ",
        "image_registry | ",
    ];
    assert!(
        !tasks
            .iter()
            .any(|t| others.iter().any(|o| t.starts_with(o))),
        "no check of another area ran: {:?}",
        tasks
    );
    // The bundle was written under the default work dir, once.
    let bundles: Vec<_> = std::fs::read_dir(p.path("kubekey/bundle"))
        .expect("bundle dir")
        .collect();
    assert_eq!(bundles.len(), 1);
    // -a with a missing file is refused before anything runs.
    let run = p.kk(&["precheck", "-i", "inventory.yaml", "-a", "nope.tar.gz"]);
    run.code(5);
    assert!(run.stderr.contains("nope.tar.gz"), "{}", run.stderr);
}
