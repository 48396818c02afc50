//! `kk vault` against the real ansible-vault (ansible-core 2.19 in the oracle venv): each
//! tool encrypts, the other decrypts — files, standard input/output, labels (1.2 headers),
//! encrypt_string with names; edit/create through $EDITOR, rekey; and the vault options of
//! `kk run` (password files, scripts, several ids, no terminal for --ask-vault-pass).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::{assert_secret_hidden, Project, Run};

/// Runs a command in the project with `stdin` as its input.
fn run_in(p: &Project, program: PathBuf, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(p.dir())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    Run::from_output(child.wait_with_output().unwrap())
}

fn kk(p: &Project, args: &[&str], stdin: &[u8]) -> Run {
    run_in(p, PathBuf::from(env!("CARGO_BIN_EXE_kk")), args, stdin, &[])
}

fn av(p: &Project, args: &[&str], stdin: &[u8]) -> Run {
    run_in(
        p,
        crate::common::oracle_venv_bin().join("ansible-vault"),
        args,
        stdin,
        &[],
    )
}

fn project() -> Project {
    let p = Project::new();
    p.file("pw", "correct horse\n")
        .file("pw2", "battery staple\n");
    p
}

#[test]
fn files_both_ways_with_labels_and_stdio() {
    let p = project();
    let plain = "a: 1\nb: [x, y]\n";
    // kk encrypts (default id, then a label) → ansible-vault decrypts.
    p.file("k.yml", plain);
    kk(
        &p,
        &["vault", "encrypt", "--vault-password-file", "pw", "k.yml"],
        b"",
    )
    .code(0);
    let text = p.read("k.yml");
    assert!(text.starts_with("$ANSIBLE_VAULT;1.1;AES256\n"), "{}", text);
    assert!(text.lines().skip(1).all(|l| l.len() <= 80) && text.ends_with('\n'));
    let mode = std::fs::metadata(p.path("k.yml"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "ansible-vault's mode for the file it writes");
    let r = av(&p, &["view", "--vault-password-file", "pw", "k.yml"], b"");
    assert_eq!(r.code(0).stdout, plain);
    let r = kk(
        &p,
        &[
            "vault",
            "encrypt",
            "--vault-id",
            "prod@pw2",
            "--output",
            "-",
        ],
        plain.as_bytes(),
    );
    assert!(
        r.code(0)
            .stdout
            .starts_with("$ANSIBLE_VAULT;1.2;AES256;prod\n"),
        "{}",
        r.stdout
    );
    let r = av(
        &p,
        &["decrypt", "--vault-id", "prod@pw2", "--output", "-"],
        r.stdout.as_bytes(),
    );
    assert_eq!(r.code(0).stdout, plain);
    // ansible-vault encrypts → kk decrypts and views.
    p.file("a.yml", plain);
    av(&p, &["encrypt", "--vault-id", "dev@pw", "a.yml"], b"").code(0);
    assert!(p
        .read("a.yml")
        .starts_with("$ANSIBLE_VAULT;1.2;AES256;dev\n"));
    let r = kk(
        &p,
        &[
            "vault",
            "view",
            "--vault-id",
            "other@pw2",
            "--vault-id",
            "dev@pw",
            "a.yml",
        ],
        b"",
    );
    assert_eq!(r.code(0).stdout, plain);
    kk(
        &p,
        &[
            "vault",
            "decrypt",
            "--vault-password-file",
            "pw",
            "a.yml",
            "--output",
            "a.out",
        ],
        b"",
    )
    .code(0);
    assert_eq!(p.read("a.out"), plain);
    // A wrong password: exit 1, the file named, the password nowhere.
    let r = kk(
        &p,
        &["vault", "view", "--vault-password-file", "pw2", "a.yml"],
        b"",
    );
    r.code(1);
    assert!(
        r.stderr.contains("Decryption failed") && r.stderr.contains("a.yml"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("battery") && !r.stderr.contains("horse"));
    // rekey with kk → ansible-vault opens it with the new password only.
    kk(
        &p,
        &[
            "vault",
            "rekey",
            "--vault-password-file",
            "pw",
            "--new-vault-password-file",
            "pw2",
            "k.yml",
        ],
        b"",
    )
    .code(0);
    assert_eq!(
        av(&p, &["view", "--vault-password-file", "pw2", "k.yml"], b"")
            .code(0)
            .stdout,
        plain
    );
    av(&p, &["view", "--vault-password-file", "pw", "k.yml"], b"").code(1);
}

/// The `!vault |` block of one variable in encrypt_string's output, dedented.
fn block_of(yaml: &str, name: &str) -> String {
    let mut lines = yaml
        .lines()
        .skip_while(|l| *l != format!("{}: !vault |", name));
    assert!(lines.next().is_some(), "no {} in\n{}", name, yaml);
    let mut out = String::new();
    for l in lines.take_while(|l| l.starts_with("          ")) {
        out.push_str(&l[10..]);
        out.push('\n');
    }
    out
}

#[test]
fn encrypt_string_both_ways() {
    let p = project();
    // kk's output has ansible-vault's shape: the same lines, prefixes and header.
    let k = kk(
        &p,
        &[
            "vault",
            "encrypt_string",
            "--vault-id",
            "app@pw",
            "--name",
            "one",
            "--name",
            "two",
            "v1",
            "second value",
        ],
        b"",
    );
    let a = av(
        &p,
        &[
            "encrypt_string",
            "--vault-id",
            "app@pw",
            "--name",
            "one",
            "--name",
            "two",
            "v1",
            "second value",
        ],
        b"",
    );
    let shape = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| {
                l.chars()
                    .map(|c| if c.is_ascii_hexdigit() { 'h' } else { c })
                    .collect()
            })
            .collect()
    };
    assert_eq!(shape(&k.code(0).stdout), shape(&a.code(0).stdout));
    assert_eq!(
        k.stderr
            .lines()
            .filter(|l| l.starts_with("# The encrypted"))
            .count(),
        2
    );
    for (name, want) in [("one", "v1"), ("two", "second value")] {
        let r = av(
            &p,
            &["decrypt", "--vault-password-file", "pw", "--output", "-"],
            block_of(&k.stdout, name).as_bytes(),
        );
        assert_eq!(r.code(0).stdout, want);
    }
    // ansible-vault's --stdin-name value, used by a kk playbook (newline kept, as Ansible).
    let a = av(
        &p,
        &[
            "encrypt_string",
            "--vault-password-file",
            "pw2",
            "--stdin-name",
            "from_stdin",
        ],
        b"typed\n",
    );
    p.file("vars.yml", &a.code(0).stdout);
    p.file(
        "play.yml",
        "- hosts: localhost\n  gather_facts: false\n  vars_files: [vars.yml]\n  tasks:\n    - debug: {msg: \"[{{ from_stdin }}]\"}\n    - copy: {content: \"[{{ from_stdin }}]\", dest: \"{{ playbook_dir }}/out.txt\"}\n",
    );
    let r = p.kk(&[
        "run",
        "play.yml",
        "--vault-password-file",
        "pw2",
        "--workdir",
        "wd",
        "-o",
        "json",
    ]);
    r.code(0);
    assert_eq!(p.read("out.txt"), "[typed\n]");
    // What kk prints masks the vaulted value (Ansible would show it).
    assert!(r.stdout.contains("[********"), "{}", r.describe());
    assert!(!r.stdout.contains("typed"), "{}", r.describe());
    // kk's --stdin-name into the same playbook.
    let k = kk(
        &p,
        &[
            "vault",
            "encrypt_string",
            "--vault-password-file",
            "pw2",
            "--stdin-name",
            "from_stdin",
            "-",
        ],
        b"piped",
    );
    p.file("vars.yml", &k.code(0).stdout);
    let r = p.kk(&[
        "run",
        "play.yml",
        "--vault-password-file",
        "pw2",
        "--workdir",
        "wd",
        "-o",
        "json",
    ]);
    r.code(0);
    assert_eq!(p.read("out.txt"), "[piped]");
    assert!(!r.stdout.contains("piped"), "{}", r.describe());
}

#[test]
fn edit_and_create_through_editor() {
    let p = project();
    p.file(
        "editor.sh",
        "#!/bin/sh\necho 'added: by editor' >> \"$1\"\n",
    );
    std::fs::set_permissions(p.path("editor.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let editor = p.path("editor.sh").display().to_string();
    p.file("e.yml", "kept: 1\n");
    av(&p, &["encrypt", "--vault-id", "ops@pw", "e.yml"], b"").code(0);
    let r = run_in(
        &p,
        env!("CARGO_BIN_EXE_kk").into(),
        &["vault", "edit", "--vault-id", "ops@pw", "e.yml"],
        b"",
        &[("EDITOR", &editor)],
    );
    r.code(0);
    assert!(
        p.read("e.yml")
            .starts_with("$ANSIBLE_VAULT;1.2;AES256;ops\n"),
        "the label is kept"
    );
    let r = av(&p, &["view", "--vault-id", "ops@pw", "e.yml"], b"");
    assert_eq!(r.code(0).stdout, "kept: 1\nadded: by editor\n");
    let r = run_in(
        &p,
        env!("CARGO_BIN_EXE_kk").into(),
        &[
            "vault",
            "create",
            "--skip-tty-check",
            "--vault-password-file",
            "pw",
            "sub/new.yml",
        ],
        b"",
        &[("EDITOR", &editor)],
    );
    r.code(0);
    assert_eq!(
        av(
            &p,
            &["view", "--vault-password-file", "pw", "sub/new.yml"],
            b""
        )
        .code(0)
        .stdout,
        "added: by editor\n"
    );
    // create refuses an existing file.
    kk(
        &p,
        &[
            "vault",
            "create",
            "--skip-tty-check",
            "--vault-password-file",
            "pw",
            "e.yml",
        ],
        b"",
    )
    .code(1);
}

#[test]
fn run_takes_scripts_several_ids_and_refuses_a_prompt_without_terminal() {
    let p = project();
    p.file("pass.sh", "#!/bin/sh\necho 'battery staple'\n");
    std::fs::set_permissions(p.path("pass.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    p.file("secret.yml", "token: s3cr3t-token\n");
    av(
        &p,
        &["encrypt", "--vault-id", "prod@pw2", "secret.yml"],
        b"",
    )
    .code(0);
    p.file(
        "play.yml",
        "- hosts: localhost\n  gather_facts: false\n  vars_files: [secret.yml]\n  tasks:\n    - debug: {msg: \"{{ token | length }}\"}\n",
    );
    // The script's output is the password; the first id (wrong) is tried, then the next.
    let r = p.kk(&[
        "run",
        "play.yml",
        "--vault-id",
        "dev@pw",
        "--vault-id",
        "prod@pass.sh",
        "--workdir",
        "wd",
        "-o",
        "json",
        "-vvv",
    ]);
    r.code(0);
    assert_eq!(
        r.msg("debug", "localhost"),
        serde_json::json!(12),
        "{}",
        r.describe()
    );
    assert_secret_hidden(&p, &r, "battery staple");
    assert_secret_hidden(&p, &r, "s3cr3t-token");
    // A wrong password: exit 1 naming the file; no password: the same, saying so.
    let r = p.kk(&[
        "run",
        "play.yml",
        "--vault-password-file",
        "pw",
        "--workdir",
        "wd",
    ]);
    assert!(
        r.code(1).stderr.contains("Decryption failed") && r.stderr.contains("secret.yml"),
        "{}",
        r.describe()
    );
    assert_secret_hidden(&p, &r, "correct horse");
    let r = p.kk(&["run", "play.yml", "--workdir", "wd"]);
    assert!(
        r.code(1).stderr.contains("no vault secrets found"),
        "{}",
        r.describe()
    );
    // --ask-vault-pass with no terminal (a new session has none): exit 5, not a hang.
    let out = Command::new("setsid")
        .args([
            "-w",
            env!("CARGO_BIN_EXE_kk"),
            "run",
            "play.yml",
            "--ask-vault-pass",
            "--workdir",
            "wd",
        ])
        .current_dir(p.dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let r = Run::from_output(out);
    assert!(r.code(5).stderr.contains("terminal"), "{}", r.describe());
    // A missing password file is an options error.
    p.kk(&[
        "run",
        "play.yml",
        "--vault-password-file",
        "nope",
        "--workdir",
        "wd",
    ])
    .code(5);
}

/// `--ask-vault-pass` on a real terminal (a pty driven by Python's `pty`): the prompt is
/// ansible-vault's, the typed password is not echoed, and the file opens.
#[test]
fn ask_vault_pass_prompts_on_the_terminal_without_echo() {
    let p = project();
    p.file("s.yml", "shown: yes\n");
    av(
        &p,
        &["encrypt", "--vault-password-file", "pw", "s.yml"],
        b"",
    )
    .code(0);
    let r = crate::common::run_on_pty(
        &p,
        &["vault", "view", "--ask-vault-pass", "s.yml"],
        "Vault password: ",
        "correct horse",
        "shown",
    );
    r.code(0);
    assert!(r.stdout.contains("Vault password: "), "{}", r.describe());
    assert!(r.stdout.contains("shown: yes"), "{}", r.describe());
    assert!(
        !r.stdout.contains("correct horse"),
        "the password was echoed: {}",
        r.describe()
    );
}
