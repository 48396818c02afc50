//! End-to-end tests of `kk run` on hosts that use the local connection: the language —
//! variables and their precedence, loops, conditions, blocks, handlers, tags, includes and
//! roles, run_once, failures. The executor's behaviour (strategies, check mode, output,
//! interrupts, batching) is in run_local_executor.rs.

use crate::common;

use common::{Project, LOCAL_INVENTORY};
use serde_json::json;

fn project(site: &str) -> Project {
    let p = Project::new();
    p.file("inventory.yaml", LOCAL_INVENTORY)
        .file("site.yaml", site);
    p
}

#[test]
fn variables_follow_precedence_and_scope() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  vars:
    a: play
    b: play
    nested: {x: 1, y: {z: 1}}
    lazy: "{{ a }}-{{ n }}"
  tasks:
    - name: block scoped
      block:
        - name: in block
          debug: msg="{{ b }}"
      vars:
        b: block
    - name: after block
      debug: msg="{{ b }}"
    - name: extra wins
      debug: msg="{{ a }}"
    - name: lazy
      debug: msg="{{ lazy }}"
    - name: task vars
      debug: msg="{{ nested.y.z }}"
      vars:
        nested: {y: {z: 2}}
    - set_fact:
        b: fact
    - name: fact beats play vars
      debug: msg="{{ b }}"
"#,
    );
    let r = p.run_json(&["-e", "a=extra"]);
    r.code(0);
    assert_eq!(r.msg("in block", "h1"), json!("block"));
    assert_eq!(r.msg("after block", "h1"), json!("play"));
    assert_eq!(r.msg("extra wins", "h2"), json!("extra"));
    assert_eq!(r.msg("lazy", "h3"), json!("extra-3"));
    assert_eq!(r.msg("task vars", "h1"), json!(2));
    assert_eq!(r.msg("fact beats play vars", "h1"), json!("fact"));
}

#[test]
fn magic_variables_and_hostvars() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - set_fact:
        mine: "{{ n * 10 }}"
    - name: other host
      debug: msg="{{ hostvars['h2'].mine }}"
    - name: names
      debug: msg="{{ inventory_hostname }} {{ play_hosts | join(',') }} {{ groups['all'] | length }}"
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.msg("other host", "h1"), json!(20));
    assert_eq!(r.msg("names", "h3"), json!("h3 h1,h2,h3 3"));
}

/// `kk_host_changes` counts what may have changed each host: changed results, failed ones
/// (ignored or not), and tasks delegated to it, across plays; ok and skipped results do not.
#[test]
fn kk_host_changes_counts_what_may_have_changed_a_host() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: start
      debug: msg="{{ kk_host_changes }}"
    - name: a change on h1
      command: "true"
      changed_when: inventory_hostname == 'h1'
    - name: unchanged
      command: "true"
      changed_when: false
    - name: a failure on h2
      command: "false"
      when: inventory_hostname == 'h2'
      ignore_errors: true
    - name: h3 changes h1
      command: "true"
      when: inventory_hostname == 'h3'
      delegate_to: h1
- hosts: all
  gather_facts: false
  tasks:
    - name: next play
      debug: msg="{{ kk_host_changes }} {{ hostvars['h1'].kk_host_changes }}"
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.msg("start", "h1"), json!(0));
    assert_eq!(r.msg("next play", "h1"), json!("2 2"));
    assert_eq!(r.msg("next play", "h2"), json!("1 2"));
    assert_eq!(r.msg("next play", "h3"), json!("0 2"));
}

#[test]
fn loops_register_and_conditions() {
    let p = project(
        r#"
- hosts: h1
  gather_facts: false
  tasks:
    - name: loop
      command: echo {{ thing }}-{{ idx }}
      loop: [a, b, c]
      loop_control: {loop_var: thing, index_var: idx}
      when: thing != 'b'
      register: out
    - name: shape
      debug:
        msg: "{{ out.results | map(attribute='stdout', default='-') | list }} {{ out.results[1].skipped }} {{ out.changed }}"
    - name: extended
      debug: msg="{{ ansible_loop.index }}/{{ ansible_loop.length }} {{ ansible_loop.last }}"
      loop: [x, y]
      loop_control: {extended: true}
      register: ext
    - name: with_dict
      debug: msg="{{ item.key }}={{ item.value }}"
      with_dict: {k: v}
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.msg("shape", "h1"), json!("['a-0', '-', 'c-2'] True True"));
    let ext = r.result("extended", "h1");
    assert_eq!(ext["result"]["results"][1]["msg"], json!("2/2 True"));
    assert_eq!(
        r.result("with_dict", "h1")["result"]["results"][0]["msg"],
        json!("k=v")
    );
}

#[test]
fn changed_failed_when_ignore_errors_until() {
    let p = project(
        r#"
- hosts: h1
  gather_facts: false
  tasks:
    - name: never changed
      command: "true"
      changed_when: false
    - name: fails on output
      shell: echo boom
      register: r
      failed_when: "'boom' in r.stdout"
      ignore_errors: true
    - name: rc ok
      shell: exit 3
      register: r3
      failed_when: r3.rc not in [0, 3]
    - name: retry
      shell: "n=$(cat {{ playbook_dir }}/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > {{ playbook_dir }}/count; echo $n"
      register: c
      until: c.stdout | int >= 3
      retries: 5
      delay: 0
    - name: attempts
      debug: msg="{{ c.attempts }}"
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.status("never changed", "h1"), "ok");
    let f = r.result("fails on output", "h1");
    assert_eq!(f["status"], "failed");
    assert_eq!(f["ignored"], true);
    assert_eq!(r.status("rc ok", "h1"), "changed");
    assert_eq!(r.msg("attempts", "h1"), json!(3));
    let recap = r.recap("h1");
    assert_eq!(recap["ignored"], 1);
    assert_eq!(recap["failed"], 0);
}

#[test]
fn failed_host_leaves_play_and_exit_code_is_2() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: fail h2
      fail: msg="h2 is bad"
      when: inventory_hostname == 'h2'
    - name: after
      debug: msg=still
"#,
    );
    let r = p.run_json(&[]);
    r.code(2);
    assert_eq!(r.status("after", "h1"), "ok");
    assert!(r
        .events()
        .iter()
        .all(|e| !(e["task"] == "after" && e["host"] == "h2")));
    assert_eq!(r.recap("h2")["failed"], 1);
    assert_eq!(r.msg("fail h2", "h2"), json!("h2 is bad"));
}

#[test]
fn blocks_rescue_and_always() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - block:
        - name: maybe fail
          command: /bin/false
          when: n == 1
        - name: rest of block
          debug: msg=rest
      rescue:
        - name: rescue
          debug: msg="{{ ansible_failed_task.name }}"
      always:
        - name: always
          debug: msg=always
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.msg("rescue", "h1"), json!("maybe fail"));
    assert_eq!(r.status("rest of block", "h2"), "ok");
    assert!(r
        .events()
        .iter()
        .all(|e| !(e["task"] == "rest of block" && e["host"] == "h1")));
    assert_eq!(r.status("always", "h1"), "ok");
    assert_eq!(r.status("always", "h3"), "ok");
    assert_eq!(r.recap("h1")["rescued"], 1);
}

#[test]
fn handlers_run_once_per_host_at_the_end() {
    let p = project(
        r#"
- hosts: h1,h2
  gather_facts: false
  tasks:
    - name: change 1
      command: "true"
      notify: restart
    - name: change 2
      command: "true"
      notify: [restart, by topic]
      when: inventory_hostname == 'h1'
    - meta: flush_handlers
    - name: after flush
      debug: msg=after
  handlers:
    - name: restart
      debug: msg=restarted
    - name: listener
      debug: msg=heard
      listen: by topic
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    let restarts = r
        .events()
        .iter()
        .filter(|e| e["task"] == "restart" && e["event"] == "host_result")
        .count();
    assert_eq!(restarts, 2, "{}", r.describe());
    assert_eq!(r.status("listener", "h1"), "ok");
    assert!(r
        .events()
        .iter()
        .all(|e| !(e["task"] == "listener" && e["host"] == "h2")));
    let pos = |t: &str| r.events().iter().position(|e| e["task"] == t).unwrap();
    assert!(pos("restart") < pos("after flush"));
}

#[test]
fn tags_select_tasks() {
    let p = project(
        r#"
- hosts: h1
  gather_facts: false
  tasks:
    - {name: a, debug: msg=a, tags: [a]}
    - {name: b, debug: msg=b, tags: b}
    - {name: always, debug: msg=x, tags: always}
    - {name: never, debug: msg=x, tags: [never, dbg]}
    - {name: untagged, debug: msg=x}
"#,
    );
    let names = |r: &common::Run| -> Vec<String> {
        r.events()
            .iter()
            .filter(|e| e["event"] == "host_result")
            .map(|e| e["task"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&p.run_json(&["--tags", "a"])), ["a", "always"]);
    assert_eq!(
        names(&p.run_json(&["--skip-tags", "a"])),
        ["b", "always", "untagged"]
    );
    assert_eq!(names(&p.run_json(&["--tags", "dbg"])), ["always", "never"]);
    assert_eq!(names(&p.run_json(&[])), ["a", "b", "always", "untagged"]);
}

#[test]
fn includes_imports_and_roles() {
    let p = project(
        r#"
- hosts: h1
  gather_facts: false
  roles:
    - role: web
      port: 8080
  tasks:
    - import_tasks: tasks/static.yaml
    - include_tasks: tasks/dynamic.yaml
      loop: [1, 2]
      loop_control: {loop_var: num}
    - include_role:
        name: web
        tasks_from: extra
"#,
    );
    p.file("tasks/static.yaml", "- name: static\n  debug: msg=static\n")
        .file("tasks/dynamic.yaml", "- name: dynamic\n  debug: msg=\"num {{ num }}\"\n")
        .file("roles/base/tasks/main.yaml", "- name: base\n  debug: msg=\"{{ base_var }}\"\n")
        .file("roles/base/defaults/main.yaml", "base_var: from-base-defaults\n")
        .file("roles/web/meta/main.yaml", "dependencies: [base]\n")
        .file("roles/web/defaults/main.yaml", "port: 80\nname_default: web\n")
        .file("roles/web/vars/main.yaml", "role_var: rv\n")
        .file("roles/web/tasks/main.yaml", "- name: web\n  debug: msg=\"{{ port }} {{ role_var }} {{ name_default }} {{ role_name }}\"\n  notify: web handler\n  changed_when: true\n")
        .file("roles/web/tasks/extra.yaml", "- name: extra\n  debug: msg=\"{{ port }}\"\n")
        .file("roles/web/handlers/main.yaml", "- name: web handler\n  debug: msg=\"handled {{ role_var }}\"\n");
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.msg("base", "h1"), json!("from-base-defaults"));
    assert_eq!(r.msg("web", "h1"), json!("8080 rv web web"));
    assert_eq!(r.msg("static", "h1"), json!("static"));
    let dyn_msgs: Vec<_> = r
        .events()
        .iter()
        .filter(|e| e["task"] == "dynamic" && e["event"] == "host_result")
        .map(|e| e["result"]["msg"].clone())
        .collect();
    assert_eq!(dyn_msgs, vec![json!("num 1"), json!("num 2")]);
    assert_eq!(r.msg("extra", "h1"), json!(80));
    assert_eq!(r.msg("web handler", "h1"), json!("handled rv"));
}

#[test]
fn run_once_delegate_and_serial() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  serial: 2
  tasks:
    - name: once
      command: echo once
      run_once: true
      register: o
    - name: seen by all
      debug: msg="{{ o.stdout }} {{ ansible_play_batch | length }}"
    - name: delegated
      command: hostname
      delegate_to: localhost
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    let once = r
        .events()
        .iter()
        .filter(|e| e["task"] == "once" && e["event"] == "host_result")
        .count();
    assert_eq!(once, 2, "one per serial batch");
    assert_eq!(r.msg("seen by all", "h2"), json!("once 2"));
    assert_eq!(r.msg("seen by all", "h3"), json!("once 1"));
    assert_eq!(r.result("delegated", "h1")["delegated_to"], "localhost");
}

#[test]
fn any_errors_fatal_and_max_fail_percentage() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  any_errors_fatal: true
  tasks:
    - name: fail one
      command: /bin/false
      when: n == 2
    - name: next
      debug: msg=x
"#,
    );
    let r = p.run_json(&[]);
    r.code(2);
    assert!(
        r.events().iter().all(|e| e["task"] != "next"),
        "{}",
        r.describe()
    );
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  max_fail_percentage: 50
  tasks:
    - name: fail one
      command: /bin/false
      when: n == 2
    - name: next
      debug: msg=x
"#,
    );
    let r = p.run_json(&[]);
    assert_eq!(r.status("next", "h1"), "ok");
}
