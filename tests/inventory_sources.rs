//! Inventory sources as Ansible users give them (issue 16): INI files, directories, host
//! lists, repeated `-i`, and group_vars/host_vars files — the cases the oracle fixtures
//! (100_inventory_ini, 101_inventory_sources) cannot express: errors and their exit codes,
//! compared with ansible-playbook where it is installed (target/oracle-venv).

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Project, Run};

const PLAY: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ greeting | default('hi') }}\"}\n";

/// ansible-playbook of the oracle venv, if it is there.
fn ansible_playbook() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let venv = std::env::var_os("KK_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/oracle-venv"));
    let venv = if venv.is_absolute() {
        venv
    } else {
        root.join(venv)
    };
    let exe = venv.join("bin/ansible-playbook");
    exe.exists().then_some(exe)
}

/// ansible-playbook's exit code and output for `args` in the project, if installed.
fn ansible(p: &Project, args: &[&str]) -> Option<(i32, String)> {
    let exe = ansible_playbook()?;
    let out = Command::new(exe)
        .args(args)
        .current_dir(p.dir())
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_LOCALHOST_WARNING", "False")
        .output()
        .ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.code().unwrap_or(-1), text))
}

fn all_output(r: &Run) -> String {
    format!("{}{}", r.stdout, r.stderr)
}

#[test]
fn bad_ini_line_is_located_and_stops_the_run() {
    let p = Project::new();
    p.file("site.yaml", PLAY).file(
        "hosts",
        "# comment\n[web]\nh1 ansible_connection=local\nh2 novalue\n",
    );
    let r = p.kk(&["run", "site.yaml", "-i", "hosts"]);
    r.code(4);
    let out = all_output(&r);
    assert!(out.contains("hosts:4:1"), "{}", r.describe());
    assert!(
        out.contains("with the ini plugin") && out.contains("`novalue`"),
        "{}",
        r.describe()
    );
    // Ansible says the same but only warns, and runs with no hosts (exit 0): kk refuses
    // to run a playbook against an inventory it could not read.
    if let Some((_code, text)) = ansible(&p, &["site.yaml", "-i", "hosts"]) {
        assert!(
            text.contains("Failed to parse inventory with 'ini' plugin"),
            "{text}"
        );
    }
}

#[test]
fn ini_errors_name_their_line() {
    for (text, want) in [
        ("[web:vars]\nx=1\n", "hosts:1:1"),
        ("[p:children]\nnope\n", "hosts:2:1"),
        ("[web:bogus]\n", "unknown type"),
        ("h1 x='unclosed\n", "closing quotation"),
    ] {
        let p = Project::new();
        p.file("site.yaml", PLAY).file("hosts", text);
        let r = p.kk(&["run", "site.yaml", "-i", "hosts"]);
        r.code(4);
        assert!(all_output(&r).contains(want), "{text:?}: {}", r.describe());
    }
}

#[test]
fn broken_group_vars_file_is_located_exit_4_as_ansible() {
    for dir in ["", "pb/"] {
        let p = Project::new();
        p.file(&format!("{dir}site.yaml"), PLAY)
            .file("hosts", "[web]\nh1 ansible_connection=local\n")
            .file(&format!("{dir}group_vars/web.yml"), "greeting: [1\n");
        let play = format!("{dir}site.yaml");
        let r = p.kk(&["run", &play, "-i", "hosts"]);
        r.code(4);
        assert!(
            all_output(&r).contains(&format!("{dir}group_vars/web.yml:")),
            "{}",
            r.describe()
        );
        if let Some((code, text)) = ansible(&p, &[&play, "-i", "hosts"]) {
            assert_eq!(code, 4, "{text}");
        }
    }
}

#[test]
fn group_vars_that_are_not_a_mapping_are_refused() {
    let p = Project::new();
    p.file("site.yaml", PLAY)
        .file(
            "inv/hosts.yml",
            "all:\n  hosts:\n    h1: {ansible_connection: local}\n",
        )
        .file("inv/group_vars/all.yml", "- a\n- b\n");
    let r = p.kk(&["run", "site.yaml", "-i", "inv/hosts.yml"]);
    r.code(4);
    assert!(
        all_output(&r).contains("group_vars/all.yml:1"),
        "{}",
        r.describe()
    );
}

#[test]
fn sources_that_do_not_exist_are_option_errors() {
    let p = Project::new();
    p.file("site.yaml", PLAY);
    let r = p.kk(&["run", "site.yaml", "-i", "nosuch.ini"]);
    r.code(5);
    assert!(all_output(&r).contains("nosuch.ini"), "{}", r.describe());
}

#[test]
fn host_list_directory_and_kubekey_file_together() {
    let p = Project::new();
    p.file("site.yaml", PLAY)
        .file(
            "inv/a-kubekey.yaml",
            "kind: Inventory\nspec:\n  hosts:\n    k1: {connector: {type: local}}\n  groups:\n    kube: {hosts: [k1]}\n",
        )
        .file("inv/b.ini", "[web]\nw1 ansible_connection=local\n[web:vars]\ngreeting=from_ini\n")
        .file("inv/group_vars/kube.yml", "greeting: from_group_vars\n");
    let r = p.kk(&[
        "run",
        "site.yaml",
        "-i",
        "inv",
        "-i",
        "l1,",
        "-e",
        "ansible_connection=local",
        "--output",
        "json",
    ]);
    r.code(0);
    assert_eq!(r.msg("debug", "k1"), "from_group_vars");
    assert_eq!(r.msg("debug", "w1"), "from_ini");
    assert_eq!(r.msg("debug", "l1"), "hi");
}
