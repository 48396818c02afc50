//! Keywords and argument forms Ansible refuses when it loads a playbook (issue 16), which
//! the oracle fixtures cannot express (a load error ends the run before any event):
//! compared with ansible-playbook's exit code where it is installed (target/oracle-venv).

use std::path::PathBuf;
use std::process::Command;

use crate::common::Project;

const INVENTORY: &str = "all:\n  hosts:\n    h1:\n      ansible_connection: local\n";

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

/// ansible-playbook's exit code and output for the project's site.yaml, if installed.
fn ansible(p: &Project) -> Option<(i32, String)> {
    let out = Command::new(ansible_playbook()?)
        .args(["-i", "hosts.yaml", "site.yaml"])
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

/// Each case: a playbook both tools refuse when they load it (exit 4), and what kk says.
const REFUSED: &[(&str, &str, &[&str])] = &[
    (
        "notify on include_role",
        "- hosts: h1\n  gather_facts: false\n  tasks:\n    - include_role: {name: r}\n      notify: h\n  handlers:\n    - name: h\n      debug: {msg: x}\n",
        &["'notify' is not a valid attribute for a IncludeRole", "site.yaml:5:15"],
    ),
    (
        "become on include_tasks",
        "- hosts: h1\n  gather_facts: false\n  tasks:\n    - include_tasks: t.yaml\n      become: true\n",
        &["'become' is not a valid attribute for a TaskInclude", "site.yaml:5:15"],
    ),
    (
        "templated module key",
        "- hosts: h1\n  gather_facts: false\n  vars: {m: debug}\n  tasks:\n    - \"{{ m }}\": msg=hi\n",
        &["cannot be templated here", "site.yaml:5:18"],
    ),
];

#[test]
fn refused_at_load_as_ansible_refuses() {
    for (name, play, expect) in REFUSED {
        let p = Project::new();
        p.file("site.yaml", play)
            .file("hosts.yaml", INVENTORY)
            .file("t.yaml", "- debug: {msg: t}\n")
            .file("roles/r/tasks/main.yaml", "- debug: {msg: r}\n");
        let r = p.kk(&["run", "site.yaml", "-i", "hosts.yaml"]);
        let out = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code, 4, "{}: {}", name, r.describe());
        for e in *expect {
            assert!(out.contains(e), "{}: missing {:?} in {}", name, e, out);
        }
        if let Some((code, text)) = ansible(&p) {
            assert_eq!(code, 4, "{}: ansible-playbook: {}", name, text);
        }
    }
}

/// Where Ansible accepts what kk used to refuse: a module chosen by `action:`'s template,
/// an import_tasks name built from a play variable.
#[test]
fn templated_action_and_import_names_load() {
    let p = Project::new();
    p.file(
        "site.yaml",
        "- hosts: h1\n  gather_facts: false\n  vars: {m: debug, f: t.yaml}\n  tasks:\n    - action: \"{{ m }} msg=chosen\"\n    - import_tasks: \"{{ f }}\"\n",
    )
    .file("hosts.yaml", INVENTORY)
    .file("t.yaml", "- debug: {msg: imported}\n");
    let r = p.kk(&["run", "site.yaml", "-i", "hosts.yaml", "-o", "json"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(
        r.stdout.contains("chosen") && r.stdout.contains("imported"),
        "{}",
        r.describe()
    );
    if let Some((code, text)) = ansible(&p) {
        assert_eq!(code, 0, "ansible-playbook: {}", text);
    }
}
