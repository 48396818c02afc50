//! Who commands run as (issue 16): `-K` on a real terminal (a pty) asks without echo, as
//! `--ask-vault-pass` does (one hidden prompt); `remote_user` and `become_method: su` with
//! a password over SSH give the same users as ansible-playbook on a test-bed host, and the
//! password appears nowhere in kk's output or run records.

use std::process::Command;

use crate::common::{Project, Run};

/// `-K` under a pty: the prompt is Ansible's, the typed password is not echoed, the run
/// goes on (it becomes root, which needs no sudo for root itself).
#[test]
fn ask_become_pass_prompts_on_the_terminal_without_echo() {
    let p = Project::new();
    p.file("inv.ini", "h1 ansible_connection=local\n").file(
        "pb.yml",
        "- hosts: h1\n  gather_facts: false\n  tasks:\n    - name: who\n      command: id -un\n      become: true\n      changed_when: false\n",
    );
    let r = crate::common::run_on_pty(
        &p,
        &["run", "-i", "inv.ini", "pb.yml", "-K", "--workdir", "wd"],
        "BECOME password: ",
        "typed secret 42",
        "PLAY RECAP",
    );
    r.code(0);
    assert!(r.stdout.contains("BECOME password: "), "{}", r.describe());
    assert!(r.stdout.contains("ok=1"), "{}", r.describe());
    crate::common::assert_secret_hidden(&p, &r, "typed secret 42");
}

/// The users a playbook's tasks run as over SSH (login by key as `kk` or root, `su` to
/// root with root's password), written by each tool to its own file on the host and
/// compared; kk's run must not show the password anywhere.
#[test]
fn remote_user_and_su_match_ansible_over_ssh() {
    let bed = testbed::TestBed::start(1).expect("boot a test host");
    let h = &bed.hosts()[0];
    crate::common::sh(&bed, 0, "echo 'root:Root pw 7' | chpasswd");
    let p = Project::new();
    p.file(
        "inv.yml",
        &format!(
            "all:\n  hosts:\n    t1:\n      ansible_host: {}\n      ansible_port: {}\n      ansible_ssh_private_key_file: {}\n      ansible_ssh_common_args: \"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\"\n      ansible_python_interpreter: /usr/bin/python3\n",
            h.ip,
            h.port,
            h.root_key_path.display()
        ),
    )
    .file(
        "pb.yml",
        r#"
- hosts: all
  gather_facts: false
  remote_user: kk
  tasks:
    - {name: play's remote_user, command: id -un, register: a}
    - {name: task's remote_user, command: id -un, remote_user: root, register: b}
    - name: ansible_user beats remote_user
      command: id -un
      remote_user: root
      vars: {ansible_user: kk}
      register: c
    - name: su to root
      command: id -un
      become: true
      become_method: su
      vars: {ansible_become_password: Root pw 7}
      register: d
    - name: su with stdin
      shell: cat
      args: {stdin: piped in}
      become: true
      vars: {ansible_become_method: su, ansible_become_pass: Root pw 7}
      register: e
    - name: record
      copy:
        content: "{{ [a.stdout, b.stdout, c.stdout, d.stdout, e.stdout] | to_json }}\n"
        dest: "/tmp/users-{{ tool }}.json"
"#,
    );
    let k = p.kk(&[
        "run",
        "-i",
        "inv.yml",
        "pb.yml",
        "-u",
        "nobody",
        "-e",
        "tool=kk",
        "--workdir",
        "wd",
    ]);
    k.code(0);
    crate::common::assert_secret_hidden(&p, &k, "Root pw 7");
    let want = r#"["kk", "root", "kk", "root", "piped in"]"#;
    assert_eq!(crate::common::sh(&bed, 0, "cat /tmp/users-kk.json"), want);
    let a = Command::new(crate::common::oracle_venv_bin().join("ansible-playbook"))
        .args([
            "-i",
            "inv.yml",
            "pb.yml",
            "-u",
            "nobody",
            "-e",
            "tool=ansible",
        ])
        .current_dir(p.dir())
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect("ansible-playbook");
    let a = Run::from_output(a);
    a.code(0);
    assert_eq!(
        crate::common::sh(&bed, 0, "cat /tmp/users-ansible.json"),
        want
    );
}
