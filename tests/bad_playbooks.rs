//! Hostile playbooks (issue 15): include cycles, deep nesting, numbers at the edges of
//! keywords, values Ansible refuses, failures without a message, errors in template files,
//! empty playbooks. Each is refused with file:line:col and exit 4, or fails its task with
//! a message that says why; none panics, overflows its stack or hangs. Every run is bounded
//! (`Project::kk_bounded`: 1 GiB of address space, 60 s).

use crate::common;

use common::{Project, LOCAL_INVENTORY};

/// One hostile input: its files, the exit code it must give, and text its output must hold.
struct Case {
    name: String,
    files: Vec<(String, String)>,
    code: i32,
    expect: Vec<String>,
}

fn case(name: &str, files: &[(&str, &str)], code: i32, expect: &[&str]) -> Case {
    Case {
        name: name.to_string(),
        files: files
            .iter()
            .map(|(n, c)| (n.to_string(), c.to_string()))
            .collect(),
        code,
        expect: expect.iter().map(|e| e.to_string()).collect(),
    }
}

/// A play on h1 without facts, with these tasks (indented by the caller as list items).
fn play(tasks: &str) -> String {
    format!("- hosts: h1\n  gather_facts: false\n  tasks:\n{}", tasks)
}

/// Runs every case and reports all that went wrong at once.
fn check(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for case in &cases {
        let p = Project::new();
        p.file("inventory.yaml", LOCAL_INVENTORY);
        for (name, content) in &case.files {
            p.file(name, content);
        }
        let r = p.kk_bounded(&["run", "site.yaml", "-i", "inventory.yaml"], 60, 1024);
        let all = format!("{}{}", r.stdout, r.stderr);
        let mut problems = Vec::new();
        if r.code != case.code {
            problems.push(format!("exit code {} (want {})", r.code, case.code));
        }
        for e in &case.expect {
            if !all.contains(e.as_str()) {
                problems.push(format!("missing {:?}", e));
            }
        }
        for bad in ["panicked", "overflowed its stack", "RUST_BACKTRACE"] {
            if all.contains(bad) {
                problems.push(bad.to_string());
            }
        }
        if !problems.is_empty() {
            let tail: String = all
                .chars()
                .rev()
                .take(3000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            failures.push(format!(
                "== {}: {}\n{}",
                case.name,
                problems.join("; "),
                tail
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A chain of `n` files, each of whose one entry `line(i)` leads to the next, ending in a
/// debug task; `first` is the play's entry into the chain.
fn chain(
    n: usize,
    name: impl Fn(usize) -> String,
    line: impl Fn(usize) -> String,
) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = (0..n).map(|i| (name(i), line(i + 1))).collect();
    files.push((name(n), "- debug: msg=deep\n".to_string()));
    files
}

fn deep_case(
    name: &str,
    entry: &str,
    files: Vec<(String, String)>,
    code: i32,
    expect: &[&str],
) -> Case {
    let mut c = case(name, &[("site.yaml", entry)], code, expect);
    c.files.extend(files);
    c
}

#[test]
fn include_cycles_print_the_cycle() {
    check(vec![
        case(
            "include_tasks a -> b -> a",
            &[
                ("site.yaml", &play("    - include_tasks: a.yaml\n")),
                ("a.yaml", "- include_tasks: b.yaml\n"),
                ("b.yaml", "- debug: msg=b\n- include_tasks: a.yaml\n"),
            ],
            2,
            &["include cycle: a.yaml -> b.yaml -> a.yaml", "b.yaml:2:3", "add a condition"],
        ),
        case(
            "a file including itself",
            &[
                ("site.yaml", &play("    - include_tasks: a.yaml\n")),
                ("a.yaml", "- include_tasks: a.yaml\n"),
            ],
            2,
            &["include cycle: a.yaml -> a.yaml", "a.yaml:1:3"],
        ),
        case(
            // A templated name may change from lap to lap: it recurses to the limit, then
            // names the cycle it went round.
            "a file including itself through a templated name",
            &[
                ("site.yaml", &play("    - include_tasks: a.yaml\n      vars: {f: a.yaml}\n")),
                ("a.yaml", "- include_tasks: '{{ f }}'\n"),
            ],
            2,
            &["tasks nest too deeply: more than 100 levels", "the includes went round the cycle a.yaml -> a.yaml", "a.yaml:1:3"],
        ),
        case(
            "a conditional cycle stops at the nesting limit",
            &[
                ("site.yaml", &play("    - include_tasks: a.yaml\n")),
                ("a.yaml", "- include_tasks: b.yaml\n  when: true\n"),
                ("b.yaml", "- include_tasks: a.yaml\n"),
            ],
            2,
            &["tasks nest too deeply", "the includes went round the cycle a.yaml -> b.yaml -> a.yaml"],
        ),
        case(
            "include_role of itself",
            &[
                ("site.yaml", &play("    - include_role: {name: r}\n")),
                ("roles/r/tasks/main.yaml", "- include_role: {name: r}\n"),
            ],
            2,
            &["include cycle: r -> r", "roles/r/tasks/main.yaml:1:3"],
        ),
        case(
            // Ansible allows recursion that a condition ends; so does kk.
            "a recursion that counts down runs",
            &[
                ("site.yaml", &play("    - set_fact: {n: 0}\n    - include_tasks: a.yaml\n")),
                (
                    "a.yaml",
                    "- set_fact: {n: '{{ n | int + 1 }}'}\n- include_tasks: a.yaml\n  when: n | int < 40\n",
                ),
            ],
            0,
            &["ok=81"],
        ),
        case(
            "import cycle",
            &[
                ("site.yaml", &play("    - import_tasks: a.yaml\n")),
                ("a.yaml", "- import_tasks: b.yaml\n"),
                ("b.yaml", "- import_tasks: a.yaml\n"),
            ],
            4,
            &["import cycle", "a.yaml -> ", "b.yaml:1:"],
        ),
        case(
            "role dependency cycle",
            &[
                ("site.yaml", "- hosts: h1\n  gather_facts: false\n  roles: [a]\n"),
                ("roles/a/meta/main.yaml", "dependencies: [b]\n"),
                ("roles/b/meta/main.yaml", "dependencies: [a]\n"),
            ],
            4,
            &["role dependency cycle: b -> a -> b", "roles/b/meta/main.yaml:1:"],
        ),
    ]);
}

#[test]
fn deep_nesting_stops_at_the_limit_without_overflowing() {
    const TOO_DEEP: &str = "tasks nest too deeply: more than 100 levels";
    let blocks = |n: usize| {
        let mut s = String::new();
        for i in 0..n {
            s.push_str(&format!("{}- block:\n", "  ".repeat(i + 2)));
        }
        s.push_str(&format!("{}- debug: msg=deep\n", "  ".repeat(n + 2)));
        play(&s)
    };
    let task_file = |i: usize| format!("t{}.yaml", i);
    let role_tasks = |i: usize| format!("roles/r{}/tasks/main.yaml", i);
    let role_meta = |i: usize| format!("roles/r{}/meta/main.yaml", i);
    let playbooks = |i: usize| format!("p{}.yaml", i);
    let mut cases = vec![
        case(
            "90 nested blocks run",
            &[("site.yaml", &blocks(90))],
            0,
            &["deep"],
        ),
        case(
            "101 nested blocks",
            &[("site.yaml", &blocks(101))],
            4,
            &[TOO_DEEP, "site.yaml:104:"],
        ),
        case(
            "300 nested blocks",
            &[("site.yaml", &blocks(300))],
            4,
            &[TOO_DEEP, "site.yaml:104:"],
        ),
    ];
    for n in [90, 1000] {
        let (code, expect): (i32, &[&str]) = if n < 100 {
            (0, &["deep"])
        } else {
            (4, &[TOO_DEEP, "t99.yaml:1:3"])
        };
        cases.push(deep_case(
            &format!("{} chained import_tasks", n),
            &play("    - import_tasks: t0.yaml\n"),
            chain(n, task_file, |i| format!("- import_tasks: t{}.yaml\n", i)),
            code,
            expect,
        ));
    }
    cases.extend([
        deep_case(
            "1000 chained include_tasks",
            &play("    - include_tasks: t0.yaml\n"),
            chain(1000, task_file, |i| {
                format!("- include_tasks: t{}.yaml\n", i)
            }),
            2,
            &[TOO_DEEP, "t99.yaml:1:3"],
        ),
        deep_case(
            "1000 chained import_role",
            &play("    - import_role: {name: r0}\n"),
            chain(1000, role_tasks, |i| {
                format!("- import_role: {{name: r{}}}\n", i)
            }),
            4,
            &[TOO_DEEP, "roles/r99/tasks/main.yaml:1:"],
        ),
        deep_case(
            "1000 chained include_role",
            &play("    - include_role: {name: r0}\n"),
            chain(1000, role_tasks, |i| {
                format!("- include_role: {{name: r{}}}\n", i)
            }),
            2,
            &[TOO_DEEP, "roles/r99/tasks/main.yaml:1:3"],
        ),
        deep_case(
            "1000 chained role dependencies",
            "- hosts: h1\n  gather_facts: false\n  roles: [r0]\n",
            chain(1000, role_meta, |i| format!("dependencies: [r{}]\n", i)),
            4,
            &[TOO_DEEP, "roles/r99/meta/main.yaml:1:"],
        ),
        deep_case(
            "1000 chained import_playbook",
            "- import_playbook: p0.yaml\n",
            chain(1000, playbooks, |i| {
                format!("- import_playbook: p{}.yaml\n", i)
            }),
            4,
            &[TOO_DEEP, "p98.yaml:1:20"],
        ),
    ]);
    // The role chains end in a role whose tasks are the debug task (a role without meta).
    for c in cases
        .iter_mut()
        .filter(|c| c.name.contains("role dependencies"))
    {
        c.files.push((
            "roles/r1000/tasks/main.yaml".into(),
            "- debug: msg=deep\n".into(),
        ));
    }
    // The playbook chain ends in a play.
    for c in cases
        .iter_mut()
        .filter(|c| c.name.contains("import_playbook"))
    {
        c.files
            .push(("p1000.yaml".into(), play("    - debug: msg=deep\n")));
    }
    check(cases);
}

#[test]
fn numbers_at_the_edges_of_keywords() {
    let mut cases = Vec::new();
    for (keyword, task) in [
        (
            "delay",
            "    - command: 'true'\n      register: r\n      until: r.rc == 0\n      delay: {}\n",
        ),
        (
            "loop_control.pause",
            "    - debug: msg={{ item }}\n      loop: [1, 2]\n      loop_control: {pause: {}}\n",
        ),
        ("timeout", "    - command: 'true'\n      timeout: {}\n"),
        (
            "retries",
            "    - command: 'true'\n      register: r\n      until: r.rc == 0\n      retries: {}\n",
        ),
        ("throttle", "    - command: 'true'\n      throttle: {}\n"),
    ] {
        for v in ["-1", "1e30", ".nan", "-.inf", "2.5e400"] {
            cases.push(case(
                &format!("{} {}", keyword, v),
                &[("site.yaml", &play(&task.replace("{}", v)))],
                4,
                &[&format!("{} expects", keyword), "site.yaml:"],
            ));
        }
        for v in ["-1", "1e30", "\"nan\"", "-1e300"] {
            cases.push(case(
                &format!("{} templated {}", keyword, v),
                &[(
                    "site.yaml",
                    &play(&task.replace("{}", &format!("'{{{{ {} }}}}'", v))),
                )],
                2,
                &[&format!("{} expects", keyword), "rendered to"],
            ));
        }
    }
    for (kv, expect) in [
        ("serial: -1", "serial expects a non-negative integer"),
        ("serial: '1e30%'", "serial expects a number up to"),
        (
            "max_fail_percentage: -5",
            "max_fail_percentage expects a non-negative number",
        ),
        ("max_fail_percentage: .nan", "max_fail_percentage expects"),
    ] {
        cases.push(case(
            kv,
            &[(
                "site.yaml",
                &format!(
                    "- hosts: h1\n  gather_facts: false\n  {}\n  tasks:\n    - debug: msg=hi\n",
                    kv
                ),
            )],
            4,
            &[expect, "site.yaml:3:"],
        ));
    }
    for (args, code, expect) in [
        ("{minutes: 9223372036854775807}", 4, "too long"),
        ("{seconds: 9223372036854775807}", 4, "too long"),
        ("{seconds: \"{{ 1e30 }}\"}", 2, "too long"),
        ("{minutes: \"{{ 2 ** 62 }}\"}", 2, "too long"),
        (
            "{seconds: 1, minutes: 1}",
            4,
            "mutually exclusive: minutes|seconds",
        ),
        ("{seconds: -5}", 0, "Paused for 1 seconds"),
    ] {
        cases.push(case(
            &format!("pause {}", args),
            &[(
                "site.yaml",
                &play(&format!(
                    "    - pause: {}\n      register: p\n    - debug: var=p.stdout\n",
                    args
                )),
            )],
            code,
            &[expect],
        ));
    }
    check(cases);
}

#[test]
fn values_ansible_refuses_are_refused_at_load() {
    let handlers = "  handlers:\n    - name: restart web\n      debug: msg=restarted\n    - name: reload\n      debug: msg=reloaded\n      listen: web changed\n";
    let notify = |n: &str| {
        format!(
            "{}{}",
            play(&format!("    - command: 'true'\n      notify: {}\n", n)),
            handlers
        )
    };
    check(vec![
        case("task name a mapping", &[("site.yaml", &play("    - name: {a: 1}\n      debug: msg=hi\n"))], 4, &["expected a task name (a string), found a mapping", "site.yaml:4:13"]),
        case("task name a list", &[("site.yaml", &play("    - name: [a, b]\n      debug: msg=hi\n"))], 4, &["expected a task name (a string), found a list", "site.yaml:4:13"]),
        case("block name a mapping", &[("site.yaml", &play("    - name: {a: 1}\n      block: [{debug: msg=hi}]\n"))], 4, &["expected a task name"]),
        case("play name a list", &[("site.yaml", "- hosts: h1\n  name: [x]\n  tasks: []\n")], 4, &["expected a play name", "site.yaml:2:9"]),
        case("rescue without block", &[("site.yaml", &play("    - rescue:\n        - debug: msg=r\n"))], 4, &["`rescue` cannot be used without `block`", "site.yaml:5:"]),
        case("always without block", &[("site.yaml", &play("    - debug: msg=x\n      always:\n        - debug: msg=r\n"))], 4, &["`always` cannot be used without `block`", "site.yaml:6:"]),
        case("debug msg and var", &[("site.yaml", &play("    - debug: {msg: hi, var: x}\n"))], 4, &["mutually exclusive: msg|var", "site.yaml:4:7"]),
        case("not a boolean", &[("site.yaml", &play("    - debug: msg=hi\n      become: maybe\n"))], 4, &["become expects a boolean, found `maybe`", "site.yaml:5:15"]),
        case("retries not an integer", &[("site.yaml", &play("    - command: 'true'\n      retries: 2.5\n      until: true\n"))], 4, &["retries expects", "site.yaml:5:16"]),
        case("notify no such handler", &[("site.yaml", &notify("restart wbe"))], 4, &["notify: no handler is named `restart wbe`", "site.yaml:5:15", "did you mean `restart web`?"]),
        case("notify in a list", &[("site.yaml", &notify("[reload, nope]"))], 4, &["no handler is named `nope`"]),
        case("notify without handlers", &[("site.yaml", &play("    - command: 'true'\n      notify: x\n"))], 4, &["the play has no handlers"]),
        case("notify by name and by listen topic", &[("site.yaml", &notify("[restart web, web changed]"))], 0, &["restarted", "reloaded"]),
        case(
            "notify a role handler as role : name",
            &[
                ("site.yaml", "- hosts: h1\n  gather_facts: false\n  roles: [web]\n  tasks:\n    - command: 'true'\n      notify: 'web : bounce'\n"),
                ("roles/web/handlers/main.yaml", "- name: bounce\n  debug: msg=bounced\n"),
            ],
            0,
            &["bounced"],
        ),
        case(
            "notify a handler from an imported handlers file",
            &[
                ("site.yaml", &format!("{}  handlers:\n    - import_tasks: h.yaml\n", play("    - command: 'true'\n      notify: [hh, topic]\n"))),
                ("h.yaml", "- name: hh\n  debug: msg=from_import\n- name: hl\n  debug: msg=from_listen\n  listen: topic\n"),
            ],
            0,
            &["from_import", "from_listen"],
        ),
        case(
            "notify no such handler in an included file",
            &[("site.yaml", &format!("{}{}", play("    - include_tasks: inc.yaml\n"), handlers)), ("inc.yaml", "- command: 'true'\n  notify: nope\n")],
            2,
            &["no handler is named `nope`", "inc.yaml:2:11"],
        ),
        case(
            "templated notify that renders to no handler",
            &[("site.yaml", &notify("'restart {{ \"db\" }}'"))],
            2,
            &["no handler is named `restart db`", "site.yaml:5:15"],
        ),
        case("templated notify that renders to a handler", &[("site.yaml", &notify("'restart {{ \"web\" }}'"))], 0, &["restarted"]),
    ]);
}

#[test]
fn failures_always_say_why() {
    check(vec![
        case(
            "until exhausted",
            &[("site.yaml", &play("    - command: 'true'\n      register: r\n      until: r.rc == 5\n      retries: 2\n      delay: 0\n"))],
            2,
            &["until condition `r.rc == 5` still false after 2 attempts"],
        ),
        case(
            "until exhausted in a loop",
            &[("site.yaml", &play("    - command: 'true'\n      register: r\n      until: [r.rc == 0, false]\n      retries: 1\n      delay: 0\n      loop: [1]\n"))],
            2,
            &["until condition `r.rc == 0 and false` still false after 1 attempts"],
        ),
        case("failed_when without a message", &[("site.yaml", &play("    - shell: echo oops >&2\n      failed_when: true\n"))], 2, &["failed_when condition `true` is true (shell); rc 0; stderr: oops"]),
        case("fail with an empty message", &[("site.yaml", &play("    - fail: msg=''\n"))], 2, &["fail failed without a message"]),
    ]);
}

#[test]
fn template_file_errors_point_into_the_file() {
    let bad = "line1\nline2 {{ ok }}\nline3 {% if x %}\nline4 {{ 1 + }}\n";
    check(vec![
        case(
            "syntax error in a template module's src",
            &[
                (
                    "site.yaml",
                    &play("    - template: {src: bad.j2, dest: '{{ playbook_dir }}/out.txt'}\n"),
                ),
                ("templates/bad.j2", bad),
            ],
            2,
            &[
                "unexpected end of variable block",
                "templates/bad.j2:4:14",
                "for the task at site.yaml:4:7",
            ],
        ),
        case(
            "undefined variable in a template module's src",
            &[
                (
                    "site.yaml",
                    &play("    - template: {src: undef.j2, dest: '{{ playbook_dir }}/out.txt'}\n"),
                ),
                ("templates/undef.j2", "a\nb {{ nope }}\n"),
            ],
            2,
            &["`nope` is undefined", "templates/undef.j2:2:6"],
        ),
        case(
            "syntax error in a src rendered with trim_blocks: false",
            &[
                (
                    "site.yaml",
                    &play("    - template: {src: bad.j2, dest: '{{ playbook_dir }}/out.txt', trim_blocks: false}\n"),
                ),
                ("templates/bad.j2", bad),
            ],
            2,
            &["unexpected end of variable block", "templates/bad.j2:4:14"],
        ),
        case(
            // The other whitespace syntax renders through the same guards (it once bypassed
            // them: 20,000 operators overflowed the stack).
            "operator chain in a src rendered with lstrip_blocks: true",
            &[
                (
                    "site.yaml",
                    &play("    - template: {src: deep.j2, dest: '{{ playbook_dir }}/out.txt', lstrip_blocks: true}\n"),
                ),
                ("templates/deep.j2", &format!("{{{{ 1{} }}}}\n", " + 1".repeat(20_000))),
            ],
            2,
            &["operators, more than the"],
        ),
        case(
            "syntax error in lookup('template')",
            &[
                (
                    "site.yaml",
                    &play("    - debug: msg=\"{{ lookup('template', 'bad.j2') }}\"\n"),
                ),
                ("templates/bad.j2", bad),
            ],
            2,
            &[
                "lookup('template'):",
                "templates/bad.j2:4:14",
                "unexpected end of variable block",
            ],
        ),
    ]);
}

#[test]
fn empty_playbooks_have_nothing_to_do() {
    let mut cases: Vec<Case> = ["", "# only a comment\n", "~\n", "---\n", "\u{feff}\n"]
        .iter()
        .map(|text| {
            case(
                &format!("playbook {:?}", text),
                &[("site.yaml", text)],
                4,
                &["empty playbook, nothing to do", "site.yaml"],
            )
        })
        .collect();
    cases.push(case(
        "playbook []",
        &[("site.yaml", "[]\n")],
        4,
        &["a playbook must contain at least one play"],
    ));
    cases.push(case(
        "imported empty playbook",
        &[
            ("site.yaml", "- import_playbook: other.yaml\n"),
            ("other.yaml", "# nothing\n"),
        ],
        4,
        &["empty playbook, nothing to do", "other.yaml"],
    ));
    check(cases);
}

#[test]
fn keywords_that_do_not_resolve_fail_the_task() {
    check(vec![
        case(
            "any_errors_fatal undefined",
            &[("site.yaml", &play("    - command: 'true'\n      any_errors_fatal: '{{ nope }}'\n"))],
            2,
            &["`nope` is undefined", "site.yaml:5:25", "in `any_errors_fatal`"],
        ),
        case(
            "ignore_unreachable not a boolean",
            &[("site.yaml", &play("    - command: 'true'\n      ignore_unreachable: '{{ \"maybe\" }}'\n"))],
            2,
            &["ignore_unreachable expects a boolean, found `maybe`"],
        ),
        case(
            "omit falls back to the block's value",
            &[(
                "site.yaml",
                &play("    - block:\n        - command: 'false'\n          ignore_errors: '{{ omit }}'\n        - debug: msg=after\n      ignore_errors: true\n"),
            )],
            0,
            &["...ignoring", "after"],
        ),
    ]);
}

/// 99 levels (under the limit) and 1000 (over it) on a 1 MiB main-thread stack, an eighth
/// of the usual: the loader, the executor and cloning a block's tasks continue on heap
/// segments, so a small stack never aborts a run (tokio's workers have 2 MiB).
#[test]
fn deep_playbooks_fit_a_small_stack() {
    let blocks = |n: usize| {
        let mut s = String::new();
        for i in 0..n {
            s.push_str(&format!("{}- block:\n", "  ".repeat(i + 2)));
        }
        s.push_str(&format!("{}- debug: msg=deep\n", "  ".repeat(n + 2)));
        play(&s)
    };
    let includes = |n: usize| {
        chain(
            n,
            |i| format!("t{}.yaml", i),
            |i| format!("- include_tasks: t{}.yaml\n", i),
        )
    };
    let runs = vec![
        case("99 blocks", &[("site.yaml", &blocks(99))], 0, &["deep"]),
        deep_case(
            "99 includes",
            &play("    - include_tasks: t0.yaml\n"),
            includes(99),
            0,
            &["deep"],
        ),
        deep_case(
            "1000 includes",
            &play("    - include_tasks: t0.yaml\n"),
            includes(1000),
            2,
            &["tasks nest too deeply"],
        ),
    ];
    for case in runs {
        let p = Project::new();
        p.file("inventory.yaml", LOCAL_INVENTORY);
        for (f, c) in &case.files {
            p.file(f, c);
        }
        let out = std::process::Command::new("timeout")
            .args([
                "60",
                "prlimit",
                "--stack=1048576:1048576",
                "--as=1073741824",
                "--",
            ])
            .arg(env!("CARGO_BIN_EXE_kk"))
            .args(["run", "site.yaml", "-i", "inventory.yaml"])
            .current_dir(p.path(""))
            .output()
            .expect("run kk under prlimit");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(case.code), "{}: {}", case.name, all);
        for e in &case.expect {
            assert!(
                all.contains(e.as_str()),
                "{}: missing {:?}: {}",
                case.name,
                e,
                all
            );
        }
        assert!(
            !all.contains("overflowed its stack"),
            "{}: {}",
            case.name,
            all
        );
    }
}
