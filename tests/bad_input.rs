//! Bad input gets a clear error — file, line and column, what was expected, how to
//! fix it — and an exit code, never a panic. One row per kind of mistake.

use crate::common;

use common::{Project, LOCAL_INVENTORY};

struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    /// Exit code: 4 for files kk cannot load, 5 for options, 2 when a task fails on a host.
    code: i32,
    /// Every one of these must appear in the output.
    expect: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "malformed YAML",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - debug: {msg: [unclosed\n")],
        code: 4,
        expect: &["invalid YAML", "site.yaml:4:"],
    },
    Case {
        name: "unknown module",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - comand: echo hi\n")],
        code: 4,
        expect: &["unknown module or keyword `comand`", "site.yaml:3:15", "did you mean `command`?"],
    },
    Case {
        name: "unknown play keyword",
        files: &[("site.yaml", "- hosts: all\n  taks: []\n")],
        code: 4,
        expect: &["unknown play keyword `taks`", "site.yaml:2:9", "did you mean `tasks`?"],
    },
    Case {
        name: "unknown argument",
        files: &[("site.yaml", "- hosts: h1\n  gather_facts: false\n  tasks:\n    - name: t\n      debug: {mgs: hi}\n")],
        code: 4,
        expect: &["unknown field `mgs`", "site.yaml:4:7", "valid arguments of `debug` are: msg, var, verbosity"],
    },
    Case {
        name: "wrong type",
        files: &[("site.yaml", "- hosts: h1\n  gather_facts: false\n  tasks:\n    - name: t\n      pause: {seconds: soon}\n")],
        code: 4,
        expect: &["expected an integer", "soon", "site.yaml:4:7"],
    },
    Case {
        name: "undefined variable",
        files: &[("site.yaml", "- hosts: h1\n  gather_facts: false\n  tasks:\n    - name: greet\n      debug: msg=\"{{ nobody }}\"\n")],
        code: 2,
        expect: &["`nobody` is undefined", "site.yaml:4:7", "in the arguments of task `greet`", "default"],
    },
    Case {
        name: "missing role",
        files: &[("site.yaml", "- hosts: all\n  roles:\n    - nosuchrole\n")],
        code: 4,
        expect: &["role `nosuchrole` not found", "site.yaml:3:7", "searched:"],
    },
    Case {
        name: "include cycle",
        files: &[
            ("site.yaml", "- hosts: all\n  tasks:\n    - import_tasks: a.yaml\n"),
            ("a.yaml", "- import_tasks: b.yaml\n"),
            ("b.yaml", "- import_tasks: a.yaml\n"),
        ],
        code: 4,
        expect: &["import cycle", "a.yaml -> ", "b.yaml:1:"],
    },
    Case {
        name: "bad host pattern",
        files: &[("site.yaml", "- hosts: \"h[1:x]\"\n  tasks: []\n")],
        code: 4,
        expect: &["site.yaml:1:"],
    },
    Case {
        name: "play without hosts",
        files: &[("site.yaml", "- name: nothing\n  tasks: []\n")],
        code: 4,
        expect: &["play has no `hosts:`", "site.yaml:1:3", "hosts: all"],
    },
    Case {
        name: "two modules in a task",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - command: a\n      shell: b\n")],
        code: 4,
        expect: &["two actions", "site.yaml:4:14"],
    },
    Case {
        name: "retries not a number",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - command: 'true'\n      register: r\n      until: r.rc == 0\n      retries: many\n")],
        code: 4,
        expect: &["retries expects an integer, found `many`", "site.yaml:6:16"],
    },
    Case {
        name: "negative delay",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - command: 'true'\n      delay: -1\n")],
        code: 4,
        expect: &["delay expects a non-negative number, found `-1`", "site.yaml:4:14"],
    },
    Case {
        name: "timeout not a number",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - command: sleep 1\n      timeout: soon\n")],
        code: 4,
        expect: &["timeout expects an integer, found `soon`", "site.yaml:4:16"],
    },
    Case {
        name: "throttle not a number",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - command: 'true'\n      throttle: x\n")],
        code: 4,
        expect: &["throttle expects an integer, found `x`", "site.yaml:4:17"],
    },
    Case {
        name: "serial not a size",
        files: &[("site.yaml", "- hosts: all\n  serial: \"abc\"\n  tasks: []\n")],
        code: 4,
        expect: &["serial expects a number of hosts", "found `abc`", "site.yaml:2:11"],
    },
    Case {
        name: "any_errors_fatal not a boolean",
        files: &[("site.yaml", "- hosts: all\n  any_errors_fatal: maybe\n  tasks: []\n")],
        code: 4,
        expect: &["any_errors_fatal expects a boolean, found `maybe`", "site.yaml:2:21"],
    },
    Case {
        name: "templated register",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - command: 'true'\n      register: \"{{ name }}\"\n")],
        code: 4,
        expect: &["`register` cannot be templated", "Ansible does not template", "site.yaml:4:17"],
    },
    Case {
        name: "templated module name",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - \"{{ m }}\": msg=hi\n")],
        code: 4,
        expect: &["cannot be templated here", "Ansible resolves a task's module key", "site.yaml:3:18"],
    },
    Case {
        name: "templated retries not a number",
        files: &[("site.yaml", "- hosts: h1\n  gather_facts: false\n  vars: {n: many}\n  tasks:\n    - command: 'true'\n      register: r\n      until: r.rc == 0\n      retries: \"{{ n }}\"\n")],
        code: 2,
        expect: &["retries expects an integer, found `many`", "site.yaml:8:16", "rendered to `many`"],
    },
    Case {
        name: "loop_control pause not a number",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - debug: {msg: x}\n      loop: [1]\n      loop_control:\n        pause: soon\n")],
        code: 4,
        expect: &["loop_control.pause expects", "found `soon`", "site.yaml:6:16"],
    },
    Case {
        name: "unknown loop_control option",
        files: &[("site.yaml", "- hosts: all\n  tasks:\n    - debug: {msg: x}\n      loop: [1]\n      loop_control:\n        loop_vr: x\n")],
        code: 4,
        expect: &["`loop_vr` is not a loop_control option", "did you mean `loop_var`?", "site.yaml:6:18"],
    },
    Case {
        name: "duplicate key",
        files: &[("site.yaml", "- hosts: all\n  hosts: none\n")],
        code: 4,
        expect: &["duplicate key `hosts`", "site.yaml:2:3"],
    },
];

#[test]
fn every_bad_input_gets_a_clear_error() {
    let mut failures = Vec::new();
    for case in CASES {
        let p = Project::new();
        p.file("inventory.yaml", LOCAL_INVENTORY);
        for (name, content) in case.files {
            p.file(name, content);
        }
        let r = p.kk(&["run", "site.yaml", "-i", "inventory.yaml"]);
        let all = format!("{}{}", r.stdout, r.stderr);
        let mut problems = Vec::new();
        if r.code != case.code {
            problems.push(format!("exit code {} (want {})", r.code, case.code));
        }
        for e in case.expect {
            if !all.contains(e) {
                problems.push(format!("missing {:?}", e));
            }
        }
        if all.contains("panicked") {
            problems.push("panicked".into());
        }
        if !problems.is_empty() {
            failures.push(format!(
                "== {}: {}\n{}",
                case.name,
                problems.join("; "),
                all
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What a user sees for each bad input, whole, as a snapshot (tests/snapshots/): a change to
/// the rendering of errors shows up as a reviewed diff (`cargo insta review`, or
/// INSTA_UPDATE=always to rewrite), not as a substring that silently stops matching. The
/// project's directory and run times are replaced by placeholders.
#[test]
fn rendered_errors_match_their_snapshots() {
    for case in CASES {
        let p = Project::new();
        p.file("inventory.yaml", LOCAL_INVENTORY);
        for (name, content) in case.files {
            p.file(name, content);
        }
        let r = p.kk(&["run", "site.yaml", "-i", "inventory.yaml"]);
        let dir = p.dir().display().to_string();
        let text = without_times(&format!(
            "exit code {}\n--- stdout\n{}--- stderr\n{}",
            r.code, r.stdout, r.stderr
        ))
        .replace(&dir, "<project>");
        let name = case.name.replace(' ', "_");
        insta::assert_snapshot!(name, text);
    }
}

/// `elapsed: 0.12s` (the run's time) as `elapsed: <time>`.
fn without_times(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("elapsed: ") {
            Some(i) => format!("{}elapsed: <time>", &l[..i]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn missing_playbook_is_an_options_error() {
    let p = Project::new();
    let r = p.kk(&["run", "nope.yaml"]);
    assert_eq!(r.code, 5, "{}", r.describe());
    assert!(
        r.stderr.contains("playbook nope.yaml not found"),
        "{}",
        r.describe()
    );
}
