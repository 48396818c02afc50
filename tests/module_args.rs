//! Module arguments written as literals are checked when the playbook loads: a mistake is
//! exit 4 with the task's file:line:col before any task runs, on any host. The same
//! mistake coming from a template is only known when the task runs, and fails it there.

use crate::common;

use common::{Project, LOCAL_INVENTORY};

fn project(site: &str) -> Project {
    let p = Project::new();
    p.file("inventory.yaml", LOCAL_INVENTORY)
        .file("site.yaml", site);
    p
}

/// A play whose first task makes each host's `out` directory, then `task`.
fn play(task: &str) -> String {
    format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: first\n      file: {{path: \"{{{{ out }}}}\", state: directory}}\n{task}"
    )
}

/// Runs a playbook whose task at line 6 has a literal mistake: exit 4, the place, every
/// expected text, and nothing ran.
fn load_error(task: &str, expect: &[&str]) {
    let p = project(&play(task));
    let r = p.run_json(&[]);
    r.code(4);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("site.yaml:6:7"), "no place\n{}", r.describe());
    for e in expect {
        assert!(all.contains(e), "missing {e:?}\n{}", r.describe());
    }
    assert!(!p.path("out").exists(), "a task ran\n{}", r.describe());
    assert!(
        !r.events().iter().any(|e| e["event"] == "task_start"),
        "{}",
        r.describe()
    );
}

#[test]
fn a_literal_bad_mode_stops_the_load() {
    load_error(
        "    - name: bad mode\n      copy: {content: x, dest: /tmp/kk-never, mode: rwx}\n",
        &["copy: invalid mode \"rwx\""],
    );
    load_error(
        "    - name: bad octal\n      template: {src: t.j2, dest: /tmp/kk-never, mode: \"0999\"}\n",
        &["template:", "0999"],
    );
}

#[test]
fn a_literal_unknown_state_names_module_argument_and_values() {
    load_error(
        "    - name: bad state\n      file: {path: /tmp/kk-never, state: folder}\n",
        &["file: `state` must be one of file, directory, link, hard, touch, absent, found \"folder\""],
    );
}

#[test]
fn a_literal_unknown_argument_lists_the_valid_ones() {
    load_error(
        "    - name: typo\n      stat: {path: /tmp, get_chksum: false}\n",
        &[
            "get_chksum",
            "valid arguments of `stat` are: path, follow, get_checksum",
        ],
    );
    load_error(
        "    - name: bad flag\n      fetch: {src: /etc/hostname, dest: out, flat: sometimes}\n",
        &["fetch:", "expected a boolean"],
    );
    load_error(
        "    - name: no dest\n      copy: {content: x}\n",
        &["copy: `dest` is required"],
    );
}

#[test]
fn a_literal_mistake_in_an_included_file_stops_at_its_place() {
    let p = project(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: first\n      file: {path: \"{{ out }}\", state: directory}\n    - import_tasks: more.yaml\n",
    );
    p.file(
        "more.yaml",
        "- name: bad state\n  file: {path: /tmp/kk-never, state: folder}\n",
    );
    let r = p.run_json(&[]);
    r.code(4);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("more.yaml:1:3"), "{}", r.describe());
    assert!(!p.path("out").exists(), "{}", r.describe());
}

#[test]
fn a_templated_mistake_fails_the_task_when_it_runs() {
    let p = project(&play(
        "    - name: bad mode\n      copy: {content: x, dest: \"{{ out }}/f\", mode: \"{{ m }}\"}\n      vars: {m: rwx}\n    - name: after\n      debug: {msg: never}\n",
    ));
    let r = p.run_json(&[]);
    r.code(2);
    assert!(
        p.path("out/h1").is_dir(),
        "the first task ran\n{}",
        r.describe()
    );
    assert_eq!(r.status("bad mode", "h1"), "failed", "{}", r.describe());
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("invalid mode \\\"rwx\\\"") || all.contains("invalid mode \"rwx\""),
        "{}",
        r.describe()
    );
    assert!(!p.path("out/h1/f").exists());
}

#[test]
fn valid_literal_arguments_run() {
    let p = project(&play(
        "    - name: write\n      copy: {content: \"hi\\n\", dest: \"{{ out }}/f\", mode: 0640, force: yes}\n    - name: look\n      stat: {path: \"{{ out }}/f\", get_checksum: no}\n      register: st\n    - name: show\n      debug: {msg: \"{{ st.stat.mode }}\"}\n",
    ));
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.msg("show", "h1"), serde_json::json!("0640"));
}
