//! Ansible users' command line (issue 16): `ansible.cfg` and `ANSIBLE_*`, `kk run`'s
//! inspection flags (`--syntax-check`, `--list-hosts`, `--list-tasks`, `--list-tags`),
//! password prompts, and `kk adhoc` — each compared with the real `ansible-playbook` /
//! `ansible` of the oracle venv where their output can be compared.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::{Project, Run};

/// Runs a program in the project with no terminal on stdin, with `env` set and any
/// `ANSIBLE_*` of the test's own environment removed (so only the test's settings count).
pub(crate) fn run_in(p: &Project, program: PathBuf, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(program);
    for (k, _) in std::env::vars() {
        if k.starts_with("ANSIBLE_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .args(args)
        .current_dir(p.dir())
        .envs(env.iter().copied())
        .env("ANSIBLE_NOCOLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("spawn");
    Run::from_output(out)
}

fn kk(p: &Project, args: &[&str], env: &[(&str, &str)]) -> Run {
    run_in(p, PathBuf::from(env!("CARGO_BIN_EXE_kk")), args, env)
}

fn ansible(p: &Project, tool: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    run_in(p, crate::common::oracle_venv_bin().join(tool), args, env)
}

/// Output lines sorted: Ansible prints a play's hosts, and ad-hoc results, in no fixed order.
fn sorted_lines(s: &str) -> Vec<String> {
    let mut l: Vec<String> = s.lines().map(str::to_string).collect();
    l.sort();
    l
}

fn assert_same(what: &str, k: &Run, a: &Run) {
    assert_eq!(
        k.code,
        a.code,
        "{what}: exit codes differ\nkk: {}\nansible: {}",
        k.describe(),
        a.describe()
    );
    assert_eq!(
        sorted_lines(&k.stdout),
        sorted_lines(&a.stdout),
        "{what}: output differs\n--- kk:\n{}\n--- ansible:\n{}",
        k.stdout,
        a.stdout
    );
}

/// An INI inventory of local hosts in groups web, db and prod, a role and a playbook
/// with tags on plays, roles, blocks and tasks.
fn project() -> Project {
    let p = Project::new();
    let python = crate::common::oracle_venv_bin().join("python3");
    p.file(
        "inv.ini",
        &format!(
            "[all:vars]\nansible_connection=local\nansible_python_interpreter={}\n\n[web]\nh1\nh2\n\n[db]\nh3\n\n[prod]\nh1\nh3\n",
            python.display()
        ),
    )
    .file("other.ini", "[other]\nh9 ansible_connection=local\n")
    .file(
        "roles/r1/tasks/main.yml",
        "- name: role task\n  debug: msg=hi\n  tags: [rt]\n",
    )
    .file("inc.yml", "- debug: msg=x\n")
    .file(
        "pb.yml",
        r#"- name: first play
  hosts: web
  gather_facts: false
  tags: [p1]
  roles: [r1]
  tasks:
    - name: one
      debug: msg=1
      tags: [a, b]
    - block:
        - name: two
          command: echo 2
      rescue:
        - name: not listed
          debug: msg=r
      tags: [blk]
    - debug: msg=3
    - include_tasks: inc.yml
    - name: never task
      debug: msg=n
      tags: [never, special]
- hosts: all:!db
  gather_facts: false
  tasks:
    - name: four
      shell: echo 4
"#,
    );
    p
}

#[test]
fn list_flags_print_what_ansible_playbook_prints() {
    let p = project();
    for flags in [
        &["--list-hosts"][..],
        &["--list-tasks"],
        &["--list-tags"],
        &["--list-tasks", "--list-hosts", "--list-tags"],
        &["--list-tasks", "--tags", "a,blk"],
        &["--list-tasks", "--tags", "special"],
        &["--list-tasks", "--skip-tags", "p1"],
        &["--list-hosts", "-l", "h1"],
    ] {
        let mut args = vec!["-i", "inv.ini", "pb.yml"];
        args.extend_from_slice(flags);
        let mut kk_args = vec!["run"];
        kk_args.extend_from_slice(&args);
        let k = kk(&p, &kk_args, &[]);
        let a = ansible(&p, "ansible-playbook", &args, &[]);
        assert_same(&flags.join(" "), &k, &a);
    }
    // kk lists a play's hosts in inventory order.
    let k = kk(&p, &["run", "-i", "inv.ini", "pb.yml", "--list-hosts"], &[]);
    assert!(
        k.stdout.contains("    hosts (2):\n      h1\n      h2\n"),
        "{}",
        k.stdout
    );
}

#[test]
fn syntax_check_loads_and_runs_nothing() {
    let p = project();
    p.file(
        "writes.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {content: x, dest: \"{{ playbook_dir }}/written\"}\n",
    )
    .file(
        "broken.yml",
        "- hosts: all\n  tasks:\n    - debug: msg=x\n     bad: indentation\n",
    );
    let k = kk(
        &p,
        &["run", "-i", "inv.ini", "writes.yml", "--syntax-check"],
        &[],
    );
    let a = ansible(
        &p,
        "ansible-playbook",
        &["-i", "inv.ini", "writes.yml", "--syntax-check"],
        &[],
    );
    assert_same("--syntax-check", &k, &a);
    assert_eq!(k.stdout, "\nplaybook: writes.yml\n");
    assert!(!p.path("written").exists(), "--syntax-check ran the play");
    let k = kk(
        &p,
        &["run", "-i", "inv.ini", "broken.yml", "--syntax-check"],
        &[],
    );
    let a = ansible(
        &p,
        "ansible-playbook",
        &["-i", "inv.ini", "broken.yml", "--syntax-check"],
        &[],
    );
    assert_eq!(
        (k.code, a.code),
        (4, 4),
        "{}\n{}",
        k.describe(),
        a.describe()
    );
    assert!(k.stderr.contains("broken.yml:4"), "{}", k.stderr);
}

#[test]
fn ansible_cfg_and_environment_as_ansible_reads_them() {
    let p = project();
    p.file(
        "ansible.cfg",
        "# a user's config\n[defaults]\ninventory = inv.ini\nforks = 3 ; inline comment\nunknown_setting = ignored\nhost_key_checking = False\n\n[privilege_escalation]\nbecome = True\nbecome_user = root\n\n[ssh_connection]\nssh_args = -o ControlMaster=auto -o ControlPersist=60s\n\n[some_plugin]\nx = 1\n",
    )
    .file(
        "sub/ansible.cfg",
        "[defaults]\ninventory = ../other.ini,../inv.ini,../missing.ini\n",
    );
    // ./ansible.cfg gives the inventory when -i is not given.
    let args = ["pb.yml", "--list-hosts"];
    let k = kk(&p, &["run", "pb.yml", "--list-hosts"], &[]);
    let a = ansible(&p, "ansible-playbook", &args, &[]);
    assert_same("./ansible.cfg", &k, &a);
    assert!(k.stdout.contains("hosts (2)"), "{}", k.stdout);
    // ANSIBLE_INVENTORY over the file; -i over both.
    let env = [("ANSIBLE_INVENTORY", "other.ini")];
    let k = kk(&p, &["run", "pb.yml", "--list-hosts"], &env);
    let a = ansible(&p, "ansible-playbook", &args, &env);
    assert_same("ANSIBLE_INVENTORY", &k, &a);
    assert!(k.stdout.contains("h9"), "{}", k.stdout);
    let k = kk(
        &p,
        &["run", "-i", "inv.ini", "pb.yml", "--list-hosts"],
        &env,
    );
    assert!(!k.stdout.contains("h9"), "{}", k.stdout);
    // ANSIBLE_CONFIG names another file; its relative paths are from its directory.
    let env = [("ANSIBLE_CONFIG", "sub/ansible.cfg")];
    let k = kk(&p, &["run", "pb.yml", "--list-hosts"], &env);
    let a = ansible(&p, "ansible-playbook", &args, &env);
    assert_same("ANSIBLE_CONFIG", &k, &a);
    // -v names the file, as Ansible.
    let k = kk(&p, &["run", "pb.yml", "--syntax-check", "-v"], &env);
    assert!(
        k.stdout.starts_with(&format!(
            "Using {} as config file",
            p.path("sub/ansible.cfg").display()
        )),
        "{}",
        k.stdout
    );
    // The file's become applies to a run (the task runs through sudo as root).
    p.file(
        "whoami.yml",
        "- hosts: h1\n  gather_facts: false\n  tasks:\n    - command: id -un\n      register: r\n    - debug: var=r.stdout\n",
    );
    let k = kk(&p, &["run", "whoami.yml", "-o", "json"], &[]);
    assert_eq!(k.code, 0, "{}", k.describe());
    // A file that does not parse: exit 5, naming the line, for both.
    p.file("bad/ansible.cfg", "[defaults]\nforks = 7\nbogus line\n");
    let env = [("ANSIBLE_CONFIG", "bad/ansible.cfg")];
    let k = kk(&p, &["run", "pb.yml", "--list-hosts"], &env);
    let a = ansible(&p, "ansible-playbook", &args, &env);
    assert_eq!(
        (k.code, a.code),
        (5, 5),
        "{}\n{}",
        k.describe(),
        a.describe()
    );
    assert!(k.stderr.contains("bad/ansible.cfg:3"), "{}", k.stderr);
    assert!(k.stderr.contains("bogus line"), "{}", k.stderr);
    // A bad value from the environment: exit 5 for both.
    let env = [("ANSIBLE_FORKS", "many")];
    let k = kk(&p, &["run", "pb.yml", "--list-hosts"], &env);
    let a = ansible(&p, "ansible-playbook", &args, &env);
    assert_eq!(
        (k.code, a.code),
        (5, 5),
        "{}\n{}",
        k.describe(),
        a.describe()
    );
    assert!(k.stderr.contains("ANSIBLE_FORKS"), "{}", k.stderr);
}

#[test]
fn password_prompts_need_a_terminal() {
    let p = project();
    for (args, flag) in [
        (
            &["run", "-i", "inv.ini", "pb.yml", "-K"][..],
            "-K/--ask-become-pass",
        ),
        (
            &["run", "-i", "inv.ini", "pb.yml", "--ask-pass"],
            "-k/--ask-pass",
        ),
        (
            &["adhoc", "all", "-i", "inv.ini", "-m", "ping", "-k"],
            "-k/--ask-pass",
        ),
    ] {
        let k = kk(&p, args, &[]);
        assert_eq!(k.code, 5, "{}", k.describe());
        assert!(
            k.stderr.contains(flag) && k.stderr.contains("not a terminal"),
            "{}",
            k.stderr
        );
    }
    // The inspections ask nothing, as ansible-playbook.
    let k = kk(
        &p,
        &["run", "-i", "inv.ini", "pb.yml", "-K", "--list-tasks"],
        &[],
    );
    assert_eq!(k.code, 0, "{}", k.describe());
    // An unknown become method is an options error.
    let k = kk(
        &p,
        &["run", "-i", "inv.ini", "pb.yml", "--become-method", "pbrun"],
        &[],
    );
    assert_eq!(k.code, 5, "{}", k.describe());
}

#[test]
fn adhoc_prints_and_exits_as_ansible() {
    let p = project();
    for args in [
        &["web:&prod", "-a", "echo hi"][..],
        &["web", "-m", "shell", "-a", "echo out; echo err >&2"],
        &["web", "-m", "shell", "-a", "echo hi; exit 3"],
        &["!db", "-m", "ping"],
        &["h1", "-m", "ping", "-o"],
        &["all:!db", "-a", "echo a", "-o"],
        &["h1", "-m", "debug", "-a", "msg=hello"],
        &["h1", "-m", "debug", "-a", "var=inventory_hostname"],
        &["h1", "-m", "debug", "-a", "msg={{ x }}", "-e", "x=from-e"],
        &["web", "-m", "debug", "-a", "msg=one", "-l", "h2"],
        &["nomatch", "-m", "ping"],
        &["all", "--list-hosts"],
        &["h1", "-m", "command", "-a", "false", "-o"],
    ] {
        let mut kk_args = vec!["adhoc", "-i", "inv.ini"];
        kk_args.extend_from_slice(args);
        let k = kk(&p, &kk_args, &[]);
        let mut a_args = vec!["-i", "inv.ini"];
        a_args.extend_from_slice(args);
        let a = ansible(&p, "ansible", &a_args, &[]);
        // A failed command's one-line JSON has timestamps: compare all but those lines.
        // Ansible 2.19 also prints its error block on stdout (`[ERROR]: Task failed: …`,
        // `Origin: <adhoc …>`, the task's Python repr); kk prints only the result lines.
        let strip = |r: &Run| Run {
            code: r.code,
            stdout: r
                .stdout
                .lines()
                .filter(|l| {
                    !l.contains("\"delta\"")
                        && !l.is_empty()
                        && !l.starts_with("[ERROR]: ")
                        && !l.starts_with("Origin: <adhoc")
                        && !l.starts_with("{'action': ")
                })
                .map(|l| format!("{l}\n"))
                .collect(),
            stderr: String::new(),
        };
        assert_same(&args.join(" "), &strip(&k), &strip(&a));
    }
    // An unreachable host: Ansible's words, kk's exit code 3.
    p.file(
        "down.ini",
        "h7 ansible_host=127.0.0.1 ansible_port=1 ansible_connection=ssh\n",
    );
    let k = kk(&p, &["adhoc", "-i", "down.ini", "h7", "-m", "ping"], &[]);
    assert_eq!(k.code, 3, "{}", k.describe());
    assert!(
        k.stdout.starts_with("h7 | UNREACHABLE! => {"),
        "{}",
        k.stdout
    );
}

/// The JSON results of ad-hoc output (`h1 | SUCCESS => {…}` blocks, indented or on one
/// line), by host, skipping everything else `-vvv` prints (Ansible's connection log).
fn adhoc_results(out: &str) -> Vec<(String, serde_json::Value)> {
    let mut found = Vec::new();
    let mut lines = out.lines();
    while let Some(l) = lines.next() {
        let Some((host, rest)) = l.split_once(" | ") else {
            continue;
        };
        let Some((_, json)) = rest.split_once(" => ") else {
            continue;
        };
        let mut text = json.to_string();
        if json == "{" {
            for more in lines.by_ref() {
                text.push('\n');
                text.push_str(more);
                if more == "}" {
                    break;
                }
            }
        }
        if let Ok(v) = serde_json::from_str(&text) {
            found.push((host.to_string(), v));
        }
    }
    found
}

/// `-vvv` results carry `invocation.module_args`: every parameter of the module's spec,
/// defaults filled, values converted to their types, aliases kept, no_log values masked;
/// compared with the real `ansible -vvv` for the common modules whose arguments reach
/// the module as written (not copy/template, whose action rewrites them).
#[test]
fn adhoc_vvv_shows_the_invocation_as_ansible() {
    let p = project();
    p.file("d/a.txt", "one\n").file("d/b.log", "two\n");
    let d = p.path("d");
    let d = d.display();
    let cases: Vec<Vec<String>> = vec![
        vec!["-m".into(), "ping".into()],
        vec!["-m".into(), "ping".into(), "-a".into(), "data=hi".into()],
        vec![
            "-m".into(),
            "file".into(),
            "-a".into(),
            format!("dest={d}/t state=touch mode=0644 follow=yes"),
        ],
        vec![
            "-m".into(),
            "stat".into(),
            "-a".into(),
            format!("path={d}/a.txt get_checksum=no"),
        ],
        vec![
            "-m".into(),
            "lineinfile".into(),
            "-a".into(),
            format!("path={d}/a.txt line=three"),
        ],
        vec![
            "-m".into(),
            "find".into(),
            "-a".into(),
            format!("paths={d} patterns=*.txt,*.log"),
        ],
        vec![
            "-m".into(),
            "wait_for".into(),
            "-a".into(),
            format!("path={d}/a.txt timeout=5"),
        ],
        vec![
            "-m".into(),
            "command".into(),
            "-a".into(),
            "false".into(),
            "-o".into(),
        ],
        vec![
            "-m".into(),
            "shell".into(),
            "-a".into(),
            "exit 3".into(),
            "-o".into(),
        ],
    ];
    for case in cases {
        let mut args: Vec<&str> = vec!["-i", "inv.ini", "h1", "-vvv"];
        args.extend(case.iter().map(String::as_str));
        let mut kk_args = vec!["adhoc"];
        kk_args.extend(args.iter().copied());
        let k = kk(&p, &kk_args, &[]);
        let a = ansible(&p, "ansible", &args, &[]);
        let what = case.join(" ");
        let (kr, ar) = (adhoc_results(&k.stdout), adhoc_results(&a.stdout));
        assert_eq!(kr.len(), 1, "{what}: kk printed\n{}", k.describe());
        assert_eq!(ar.len(), 1, "{what}: ansible printed\n{}", a.stdout);
        assert_eq!(
            kr[0].1.get("invocation"),
            ar[0].1.get("invocation"),
            "{what}: invocation differs\n--- kk:\n{}\n--- ansible:\n{}",
            kr[0].1,
            ar[0].1
        );
        assert!(kr[0].1.get("invocation").is_some(), "{what}: {}", k.stdout);
    }
    // Below -vvv neither shows it; a secret never shows (copy's content is no_log).
    let k = kk(
        &p,
        &["adhoc", "-i", "inv.ini", "h1", "-m", "ping", "-vv"],
        &[],
    );
    assert!(!k.stdout.contains("invocation"), "{}", k.stdout);
    let dest = format!("dest={d}/s.txt content=s3cret-value");
    let k = kk(
        &p,
        &[
            "adhoc", "-i", "inv.ini", "h1", "-vvv", "-m", "copy", "-a", &dest,
        ],
        &[],
    );
    assert_eq!(k.code, 0, "{}", k.describe());
    assert!(
        k.stdout.contains("VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"),
        "{}",
        k.stdout
    );
    assert!(!k.stdout.contains("s3cret-value"), "{}", k.stdout);
    assert!(!k.stderr.contains("s3cret-value"), "{}", k.stderr);
}

#[test]
fn step_asks_before_each_task_and_vvv_times_them() {
    let p = project();
    p.file(
        "steps.yml",
        "- hosts: h1\n  gather_facts: false\n  tasks:\n    - {name: first, command: echo 1}\n    - {name: second, command: echo 2}\n    - {name: third, command: echo 3}\n    - {name: fourth, command: echo 4}\n",
    );
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kk"))
        .args(["run", "-i", "inv.ini", "steps.yml", "--step"])
        .current_dir(p.dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // yes, no, then continue: the fourth is not asked.
    child.stdin.take().unwrap().write_all(b"y\nn\nc\n").unwrap();
    let r = Run::from_output(child.wait_with_output().unwrap());
    assert_eq!(r.code, 0, "{}", r.describe());
    for name in ["first", "second", "third"] {
        assert!(
            r.stdout.contains(&format!(
                "Perform task: TASK: {name} (N)o/(y)es/(c)ontinue: "
            )),
            "{}",
            r.stdout
        );
    }
    assert!(!r.stdout.contains("TASK: fourth (N)o"), "{}", r.stdout);
    assert!(!r.stdout.contains("TASK [second]"), "{}", r.stdout);
    for ran in ["TASK [first]", "TASK [third]", "TASK [fourth]"] {
        assert!(r.stdout.contains(ran), "{}", r.stdout);
    }
    // Without answers (end of input) nothing runs, and nothing hangs.
    let r = kk(&p, &["run", "-i", "inv.ini", "steps.yml", "--step"], &[]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(!r.stdout.contains("TASK [first]"), "{}", r.stdout);
    // -vvv: each host's result line says how long the task took there.
    let r = kk(&p, &["run", "-i", "inv.ini", "steps.yml", "-vvv"], &[]);
    assert_eq!(r.code, 0, "{}", r.describe());
    let timed = regex_like_timed(&r.stdout);
    assert_eq!(timed, 4, "{}", r.stdout);
}

/// Counts `changed: [h1] (0.12s)` lines.
fn regex_like_timed(out: &str) -> usize {
    out.lines()
        .filter(|l| {
            l.strip_prefix("changed: [h1] (")
                .and_then(|rest| rest.split_once("s)"))
                .is_some_and(|(n, _)| n.parse::<f64>().is_ok())
        })
        .count()
}
