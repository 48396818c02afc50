//! The lifecycle commands' command line (no test hosts): every command's help, `kk version`,
//! the input errors refused before any host is touched (Ansible's exit codes: 5 for options,
//! 4 for files that do not load), the confirmation question (skipped without a terminal,
//! asked on a pseudo-terminal through `script`), and `--override` leaving the inventory
//! alone when the run fails. The inventory editor itself is unit-tested
//! (src/inventory_edit_tests.rs); the successful runs are in the end-to-end tests.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{Project, Run};

/// Two hosts that refuse SSH at once (port 1 on the loopback): a run that reaches a host
/// fails fast and visibly, and nothing is ever changed.
const INVENTORY: &str = "kind: Inventory
spec:
  hosts:
    node1: {connector: {host: 127.0.0.1, port: 1, user: root}}
    node2: {connector: {host: 127.0.0.1, port: 1, user: root}}
    node3: {connector: {host: 127.0.0.1, port: 1, user: root}}
  groups:
    k8s_cluster: {groups: [kube_control_plane, kube_worker]}
    # the control plane
    kube_control_plane: {hosts: [node1]}
    kube_worker:
      hosts:
        - node1
        - node2
    etcd: {hosts: [node1]}
";

/// Whether this build has the playbook (the bundle is the source tree's playbooks/).
fn bundled(playbook: &str) -> bool {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("playbooks")
        .join(format!("{}.yaml", playbook))
        .is_file()
}

/// An input error: the exit code, a message with every `want` in it, one screen, and no
/// work dir written (nothing ran).
fn refused(p: &Project, args: &[&str], code: i32, want: &[&str]) {
    let r = p.kk(args);
    assert_eq!(r.code, code, "{:?}\n{}", args, r.stderr);
    for w in want {
        assert!(
            r.stderr.contains(w),
            "{:?}: `{}` missing in\n{}",
            args,
            w,
            r.stderr
        );
    }
    assert!(r.stderr.lines().count() <= 20, "one screen:\n{}", r.stderr);
    assert!(!p.path("kubekey").exists(), "{:?} started a run", args);
}

#[test]
fn help_of_every_command_is_complete() {
    let p = Project::new();
    let common = [
        "--inventory",
        "--config",
        "--set",
        "--tags",
        "--workdir",
        "--with-kubernetes",
        "--artifact",
    ];
    let commands: [(&[&str], &str, &[&str]); 9] = [
        (
            &["add", "nodes"],
            "add_nodes",
            &["--control-plane", "--worker", "--etcd", "--override"],
        ),
        (
            &["delete", "nodes"],
            "delete_nodes",
            &["[NODE]...", "--all", "--with-data", "--override", "--yes"],
        ),
        (
            &["delete", "cluster"],
            "delete_cluster",
            &["--all", "--with-data", "--yes"],
        ),
        (
            &["delete", "registry"],
            "delete_registry",
            &["--all", "--with-data", "--yes"],
        ),
        (&["certs", "renew"], "certs_renew", &[]),
        (&["init", "registry"], "init_registry", &[]),
        (
            &["artifact", "images"],
            "artifact_images",
            &["--pull", "--push"],
        ),
        (&["create", "cluster"], "create_cluster", &["--yes"]),
        (
            &["precheck"],
            "precheck",
            &["storageclass", "artifact", "storage"],
        ),
    ];
    for (cmd, playbook, flags) in commands {
        let mut args = cmd.to_vec();
        args.push("--help");
        let r = p.kk(&args);
        if !bundled(playbook) {
            // Not in this build: an unknown command, not one that fails later.
            assert_eq!(r.code, 5, "{:?}\n{}", cmd, r.stderr);
            assert!(
                r.stderr.contains("unrecognized subcommand")
                    || r.stderr.contains("unexpected argument"),
                "{}",
                r.stderr
            );
            continue;
        }
        assert_eq!(r.code, 0, "{:?}\n{}", cmd, r.stderr);
        let text = r.stdout.replace('\n', " ");
        for f in common.iter().chain(flags.iter()) {
            assert!(
                text.contains(f),
                "{:?}: {} missing in\n{}",
                cmd,
                f,
                r.stdout
            );
        }
        if playbook != "precheck" {
            assert!(text.contains(&format!("{}.yaml", playbook)), "{}", r.stdout);
        }
        if playbook != "precheck" && playbook != "create_cluster" {
            let example = format!("Example:   kk {}", cmd.join(" "));
            assert!(
                text.contains(&example),
                "{:?}: no example\n{}",
                cmd,
                r.stdout
            );
        }
    }
    // `node` is an alias of `nodes`, as upstream.
    if bundled("delete_nodes") {
        p.kk(&["delete", "node", "--help"]).code(0);
    }
    let r = p.kk(&["version", "--help"]);
    r.code(0);
    assert!(r.stdout.contains("--short"), "{}", r.stdout);
}

#[test]
fn version_prints_json_or_the_short_version() {
    let p = Project::new();
    let r = p.kk(&["version"]);
    r.code(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let want = format!("v{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(v["gitVersion"], want.as_str());
    for key in [
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "rustcVersion",
        "platform",
    ] {
        let s = v[key].as_str().unwrap_or_default();
        assert!(!s.is_empty(), "{} in {}", key, r.stdout);
    }
    assert!(v["rustcVersion"].as_str().unwrap().starts_with("rustc "));
    assert!(v["platform"].as_str().unwrap().starts_with("linux/"));
    let commit = v["gitCommit"].as_str().unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{}",
        commit
    );
    let date = v["buildDate"].as_str().unwrap();
    assert!(
        date == "unknown" || (date.len() == 20 && date.ends_with('Z')),
        "{}",
        date
    );
    for short in ["-s", "--short"] {
        let r = p.kk(&["version", short]);
        r.code(0);
        assert_eq!(r.stdout, format!("{}\n", want));
    }
}

#[test]
fn input_errors_are_refused_before_any_host_is_touched() {
    let p = Project::new();
    p.file("inventory.yaml", INVENTORY);
    let inv = ["-i", "inventory.yaml"];
    let with =
        |a: &[&'static str]| -> Vec<&'static str> { a.iter().chain(inv.iter()).copied().collect() };
    if bundled("add_nodes") {
        refused(
            &p,
            &["add", "nodes", "--worker", "node3"],
            5,
            &["needs the cluster's inventory", "-i"],
        );
        refused(
            &p,
            &with(&["add", "nodes", "--worker", "nodee2"]),
            5,
            &[
                "`nodee2` is not a host of inventory.yaml",
                "did you mean `node2`",
            ],
        );
        refused(
            &p,
            &with(&["add", "nodes", "--etcd", "gpu-worker-7"]),
            5,
            &["gpu-worker-7", "spec.hosts", "node1, node2, node3"],
        );
        refused(
            &p,
            &with(&["add", "nodes", "--worker", "node2,,node3"]),
            5,
            &["empty node name"],
        );
        // --override on an inventory the editor cannot change: refused before the run.
        p.file(
            "ansible.yaml",
            "all:\n  hosts:\n    node1: {ansible_host: 127.0.0.1, ansible_port: 1}\n",
        );
        refused(
            &p,
            &[
                "add",
                "nodes",
                "--etcd",
                "node1",
                "--override",
                "-i",
                "ansible.yaml",
            ],
            5,
            &[
                "--override cannot edit ansible.yaml",
                "no block `all: children:`",
            ],
        );
        // --override records what the run did: a node outside --limit is refused.
        refused(
            &p,
            &with(&[
                "add",
                "nodes",
                "--worker",
                "node3",
                "--override",
                "-l",
                "node1",
            ]),
            5,
            &["--override with --limit node1: node3 is outside the limit"],
        );
        // A file that does not load: 4.
        p.file("broken.yaml", "kind: Inventory\nspec: [\n");
        refused(
            &p,
            &["add", "nodes", "-i", "broken.yaml"],
            4,
            &["broken.yaml"],
        );
    }
    if bundled("delete_nodes") {
        refused(
            &p,
            &with(&["delete", "nodes"]),
            5,
            &["needs the names of the nodes"],
        );
        refused(
            &p,
            &["delete", "nodes", "node2"],
            5,
            &["needs the cluster's inventory"],
        );
        refused(
            &p,
            &with(&["delete", "nodes", "node9"]),
            5,
            &["`node9` is not a host"],
        );
        refused(
            &p,
            &with(&["delete", "nodes", "node1", "--yes"]),
            5,
            &["no control plane node", "kube_control_plane: node1"],
        );
        p.file(
            "two.yaml",
            &INVENTORY.replace(
                "kube_control_plane: {hosts: [node1]}",
                "kube_control_plane: {hosts: [node1, node2]}",
            ),
        );
        // With --all the etcd members go too: the last one is refused.
        refused(
            &p,
            &["delete", "nodes", "node1", "--all", "-i", "two.yaml"],
            5,
            &["every etcd member (node1)"],
        );
    }
    if bundled("delete_registry") {
        refused(
            &p,
            &with(&["delete", "registry", "--yes"]),
            5,
            &["no host in group image_registry"],
        );
    }
    // A precheck name that does not exist is a usage error (exit 5, bad options).
    let r = p.kk(&["precheck", "storagex"]);
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(r.stderr.contains("storageclass"), "{}", r.stderr);
}

/// Runs kk under `script`, on a pseudo-terminal, answering `answer`.
fn on_a_terminal(p: &Project, args: &str, answer: &str) -> Run {
    let mut child = Command::new("script")
        .args([
            "-qec",
            &format!("{} {}", env!("CARGO_BIN_EXE_kk"), args),
            "/dev/null",
        ])
        .current_dir(p.dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    Run::from_output(child.wait_with_output().unwrap())
}

#[test]
fn confirmation_is_asked_on_a_terminal_only() {
    let p = Project::new();
    p.file("inventory.yaml", INVENTORY);
    // Without a terminal (a test, a pipe) nothing is asked: the run starts and reaches
    // the (refusing) hosts.
    let r = p.kk(&[
        "create",
        "cluster",
        "-i",
        "inventory.yaml",
        "--workdir",
        "wd",
    ]);
    assert!(
        !r.stderr.contains("Type yes") && !r.stdout.contains("Type yes"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("unreachable") || r.stderr.contains("unreachable"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    // On a terminal the question names the hosts; anything but `yes` cancels before the run.
    let r = on_a_terminal(&p, "create cluster -i inventory.yaml --workdir wd2", "no\n");
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout
            .contains("kk will install Kubernetes on the hosts of inventory.yaml: node1 ("),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("Type yes") && r.stdout.contains("cancelled: nothing was changed"),
        "{}",
        r.stdout
    );
    assert!(!p.path("wd2").exists(), "nothing ran");
    if bundled("delete_cluster") {
        let r = on_a_terminal(
            &p,
            "delete cluster --all -i inventory.yaml --workdir wd3",
            "\n",
        );
        assert_eq!(r.code, 1, "{}", r.stdout);
        assert!(
            r.stdout
                .contains("kk will delete the Kubernetes cluster of inventory.yaml"),
            "{}",
            r.stdout
        );
        assert!(!p.path("wd3").exists(), "nothing ran");
        // `yes` runs it; --yes does not ask.
        let r = on_a_terminal(
            &p,
            "delete cluster -i inventory.yaml --workdir wd4",
            "yes\n",
        );
        assert!(
            r.stdout.contains("Type yes") && r.stdout.contains("unreachable"),
            "{}",
            r.stdout
        );
        let r = on_a_terminal(
            &p,
            "delete cluster --yes -i inventory.yaml --workdir wd5",
            "",
        );
        assert!(
            !r.stdout.contains("Type yes") && r.stdout.contains("unreachable"),
            "{}",
            r.stdout
        );
    }
    if bundled("delete_nodes") {
        let r = on_a_terminal(
            &p,
            "delete nodes node2 -i inventory.yaml --workdir wd6",
            "nope\n",
        );
        assert_eq!(r.code, 1, "{}", r.stdout);
        assert!(
            r.stdout
                .contains("kk will delete node2 (k8s_cluster, kube_worker)"),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn override_leaves_the_inventory_alone_after_a_failed_or_check_run() {
    let p = Project::new();
    p.file("inventory.yaml", INVENTORY);
    for (cmd, playbook) in [
        (
            &["add", "nodes", "--worker", "node3", "--override"][..],
            "add_nodes",
        ),
        (
            &["delete", "nodes", "node2", "--override"][..],
            "delete_nodes",
        ),
    ] {
        if !bundled(playbook) {
            continue;
        }
        let mut args = cmd.to_vec();
        args.extend(["-i", "inventory.yaml"]);
        let r = p.kk(&args);
        assert_ne!(r.code, 0, "{:?}", args);
        assert!(
            r.stderr
                .contains("--override: the run failed; inventory.yaml was not changed"),
            "{}",
            r.stderr
        );
        assert_eq!(p.read("inventory.yaml"), INVENTORY);
        // A --check run never edits it either.
        args.push("--check");
        let r = p.kk(&args);
        assert!(
            r.stderr
                .contains("--override: a --check run; inventory.yaml was not changed"),
            "{}",
            r.stderr
        );
        assert_eq!(p.read("inventory.yaml"), INVENTORY);
    }
}
