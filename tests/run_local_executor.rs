//! End-to-end tests of `kk run` on hosts that use the local connection: the executor —
//! plays that end early, strategies, check mode and diffs, output and no_log, inventory
//! changes at run time, become/environment/timeout, unreachable hosts, interrupts, batched
//! loops. The language itself is in run_local.rs.

use crate::common;

use common::{Project, LOCAL_INVENTORY};
use serde_json::json;

fn project(site: &str) -> Project {
    let p = Project::new();
    p.file("inventory.yaml", LOCAL_INVENTORY)
        .file("site.yaml", site);
    p
}

/// Names of the plays started (one per batch) and of the tasks that produced a result.
fn plays_and_tasks(r: &common::Run) -> (Vec<String>, Vec<String>) {
    let ev = r.events();
    let names = |kind: &str, key: &str| -> Vec<String> {
        let mut v: Vec<String> = ev
            .iter()
            .filter(|e| e["event"] == kind)
            .map(|e| e[key].as_str().unwrap_or_default().to_string())
            .collect();
        v.dedup();
        v
    };
    (names("play_start", "play"), names("host_result", "task"))
}

#[test]
fn a_play_whose_hosts_all_failed_ends_the_run() {
    // Every host fails: later plays do not run, not even one on localhost (Ansible's
    // "NO MORE HOSTS LEFT"). The same when a run_once task fails (it fails every host).
    for failing in ["fail: msg=down", "fail: msg=down\n      run_once: true"] {
        let p = project(&format!(
            "- name: first\n  hosts: all\n  gather_facts: false\n  tasks:\n    - name: boom\n      {failing}\n- name: local\n  hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: on localhost\n      debug: msg=x\n"
        ));
        let r = p.run_json(&[]);
        r.code(2);
        let (plays, tasks) = plays_and_tasks(&r);
        assert_eq!(plays, ["first"], "{}", r.describe());
        assert_eq!(tasks, ["boom"], "{}", r.describe());
    }
    // Only some fail: the next plays run for the others. A rescued failure and an
    // ignored one are not failures.
    let p = project(
        r#"
- name: first
  hosts: all
  gather_facts: false
  tasks:
    - name: ignored
      fail: msg=ignored
      ignore_errors: true
    - block:
        - name: rescued
          fail: msg=rescued
      rescue:
        - name: rescue
          debug: msg=r
    - name: boom
      fail: msg=down
      when: n != 3
- name: local
  hosts: localhost
  gather_facts: false
  tasks:
    - name: on localhost
      debug: msg=x
- name: again
  hosts: all
  gather_facts: false
  tasks:
    - name: later
      debug: msg=x
"#,
    );
    let r = p.run_json(&[]);
    r.code(2);
    let (plays, _) = plays_and_tasks(&r);
    assert_eq!(plays, ["first", "local", "again"], "{}", r.describe());
    assert_eq!(r.status("on localhost", "localhost"), "ok");
    assert_eq!(r.status("later", "h3"), "ok");
    assert!(r
        .events()
        .iter()
        .filter(|e| e["event"] == "host_result" && e["task"] == "later")
        .all(|e| e["host"] == "h3"));
}

#[test]
fn max_fail_percentage_ends_the_run_and_any_errors_fatal_runs_always() {
    // Exceeding max_fail_percentage ends the whole run (exit 2); a failure that a rescue
    // handles does not count.
    let p = project(
        r#"
- name: strict
  hosts: all
  gather_facts: false
  max_fail_percentage: 0
  tasks:
    - block:
        - name: rescued
          fail: msg=r
          when: n == 1
      rescue:
        - name: rescue
          debug: msg=r
    - name: boom
      fail: msg=down
      when: n == 2
    - name: after
      debug: msg=x
- name: local
  hosts: localhost
  gather_facts: false
  tasks:
    - name: on localhost
      debug: msg=x
"#,
    );
    let r = p.run_json(&[]);
    r.code(2);
    let (plays, tasks) = plays_and_tasks(&r);
    assert_eq!(plays, ["strict"], "{}", r.describe());
    assert_eq!(tasks, ["rescued", "rescue", "boom"], "{}", r.describe());
    // any_errors_fatal fails every host: their `always` still runs, the rest does not.
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  any_errors_fatal: true
  tasks:
    - block:
        - name: boom
          fail: msg=down
          when: n == 1
        - name: skipped by all
          debug: msg=x
      always:
        - name: always
          debug: msg=x
    - name: after
      debug: msg=x
"#,
    );
    let r = p.run_json(&[]);
    r.code(2);
    let (_, tasks) = plays_and_tasks(&r);
    assert_eq!(tasks, ["boom", "always"], "{}", r.describe());
    for h in ["h1", "h2", "h3"] {
        assert_eq!(r.status("always", h), "ok");
    }
}

#[test]
fn strategy_free_runs_every_host() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  strategy: free
  tasks:
    - name: one
      command: echo {{ n }}
    - name: two
      debug: msg=done
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    for h in ["h1", "h2", "h3"] {
        assert_eq!(r.status("two", h), "ok");
    }
}

/// Under `strategy: free` a host goes on without waiting for the others: h1's first task
/// waits (up to 10 s) for h2's second task, which a linear executor runs only after every
/// host finished the first — there h1 fails.
#[test]
fn strategy_free_does_not_wait_for_the_slowest_host() {
    let p = project(
        r#"
- hosts: h1:h2
  gather_facts: false
  strategy: free
  tasks:
    - name: one
      shell: |
        [ {{ inventory_hostname }} = h1 ] || exit 0
        for i in $(seq 100); do [ -e {{ playbook_dir }}/two-h2 ] && exit 0; sleep 0.1; done
        exit 1
    - name: two
      command: touch {{ playbook_dir }}/two-{{ inventory_hostname }}
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(r.status("one", "h1"), "changed", "{}", r.describe());
    assert_eq!(r.status("two", "h1"), "changed", "{}", r.describe());
}

#[test]
fn check_mode_changes_nothing() {
    let p = project(
        r#"
- hosts: h1
  gather_facts: false
  tasks:
    - name: would write
      shell: touch {{ playbook_dir }}/made
    - name: forced
      command: touch {{ playbook_dir }}/forced
      check_mode: false
    - name: mode var
      debug: msg="{{ ansible_check_mode }}"
"#,
    );
    let r = p.run_json(&["--check"]);
    r.code(0);
    assert!(!p.path("made").exists());
    assert!(p.path("forced").exists());
    assert_eq!(r.msg("mode var", "h1"), json!(true));
}

#[test]
fn text_output_and_run_records() {
    let p = project("- hosts: h1\n  gather_facts: false\n  tasks:\n    - name: hello\n      debug: msg=hi\n    - name: bad\n      shell: echo out; echo err >&2; exit 7\n");
    let r = p.kk(&["run", "site.yaml", "-i", "inventory.yaml"]);
    r.code(2);
    assert!(r.stdout.contains("TASK [hello]"), "{}", r.describe());
    assert!(r.stdout.contains("\"msg\": \"hi\""), "{}", r.describe());
    assert!(
        r.stdout.contains("rc: 7") && r.stdout.contains("out") && r.stdout.contains("err"),
        "{}",
        r.describe()
    );
    assert!(r.stdout.contains("PLAY RECAP"));
    let runs: Vec<_> = std::fs::read_dir(p.path("kubekey/runs")).unwrap().collect();
    assert_eq!(runs.len(), 1);
    let dir = runs[0].as_ref().unwrap().path();
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(events.lines().any(|l| l.contains("\"event\":\"recap\"")));
    assert!(std::fs::read_to_string(dir.join("kk.log"))
        .unwrap()
        .contains("PLAY RECAP"));
}

#[test]
fn no_log_hides_output() {
    let p = project("- hosts: h1\n  gather_facts: false\n  tasks:\n    - name: secret\n      command: echo s3cret\n      no_log: true\n      register: s\n    - name: still usable\n      debug: msg=\"{{ s.stdout | length }}\"\n");
    let r = p.kk(&[
        "run",
        "site.yaml",
        "-i",
        "inventory.yaml",
        "--output",
        "json",
    ]);
    r.code(0);
    assert!(!r.stdout.contains("s3cret"), "{}", r.describe());
    assert_eq!(r.msg("still usable", "h1"), json!(6));
}

#[test]
fn file_modules_are_idempotent_with_check_and_diff() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: dir
      file: path="{{ out }}" state=directory mode=0755
    - name: copy
      copy: {content: "n={{ n }}\n", dest: "{{ out }}/c.txt", mode: "0640"}
    - name: template
      template: {src: t.j2, dest: "{{ out }}/t.txt"}
    - name: stat
      stat: path="{{ out }}/c.txt"
      register: st
    - name: mode
      debug: msg="{{ st.stat.mode }} {{ st.stat.size }}"
"#,
    );
    p.file(
        "templates/t.j2",
        "{% for i in range(n) %}\nline {{ i }}\n{% endfor %}\nhost {{ inventory_hostname }}\n",
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(p.read("out/h2/c.txt"), "n=2\n");
    assert_eq!(p.read("out/h2/t.txt"), "line 0\nline 1\nhost h2\n");
    assert_eq!(r.msg("mode", "h1"), json!("0640 4"));
    assert_eq!(r.recap("h1")["changed"], 3);
    let again = p.run_json(&[]);
    again.code(0);
    for h in ["h1", "h2", "h3"] {
        assert_eq!(again.recap(h)["changed"], 0, "{}", again.describe());
    }
    p.file("templates/t.j2", "changed {{ n }}\n");
    let check = p.run_json(&["--check", "--diff"]);
    check.code(0);
    assert_eq!(check.status("template", "h1"), "changed");
    assert_eq!(
        p.read("out/h1/t.txt"),
        "line 0\nhost h1\n",
        "check mode must not write"
    );
    let diff = &check.result("template", "h1")["result"]["diff"][0];
    assert_eq!(diff["after"], "changed 1\n");
}

#[test]
fn add_host_group_by_add_hostvars_and_result() {
    let p = project(
        r#"
- hosts: h1
  gather_facts: false
  tasks:
    - name: add
      add_host: {name: dyn1, groups: [dynamic], ansible_connection: local, color: blue}
    - name: hostvars for all
      add_hostvars:
        hosts: all
        vars: {cluster_name: demo}
    - name: report
      result: {installed: "{{ cluster_name }}"}
- hosts: dynamic
  gather_facts: false
  tasks:
    - name: dynamic host
      debug: msg="{{ inventory_hostname }} {{ color }} {{ group_names }}"
- hosts: all:!dynamic
  gather_facts: false
  tasks:
    - name: group
      group_by: {key: "n_{{ n }}"}
    - name: groups made
      debug: msg="{{ groups['n_2'] }} {{ cluster_name }}"
"#,
    );
    let r = p.run_json(&[]);
    r.code(0);
    assert_eq!(
        r.msg("dynamic host", "dyn1"),
        json!("dyn1 blue ['dynamic']")
    );
    assert_eq!(r.msg("groups made", "h3"), json!("['h2'] demo"));
    let result = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "result")
        .expect("result event");
    assert_eq!(result["data"], json!({"installed": "demo"}));
}

#[test]
fn become_environment_timeout_throttle_and_pause() {
    let p = project(
        r#"
- hosts: all
  gather_facts: false
  environment: {KK_PLAY_ENV: play}
  tasks:
    - name: become another user
      command: id -un
      become: true
      become_user: nobody
      register: who
      when: n == 1
    - name: env
      shell: echo "$KK_PLAY_ENV $KK_TASK_ENV"
      environment: {KK_TASK_ENV: "task-{{ n }}"}
      register: env
    - name: show env
      debug: msg="{{ env.stdout }}"
    - name: too slow
      command: sleep 5
      timeout: 1
      ignore_errors: true
      when: n == 1
    - name: throttled
      shell: "echo start $(date +%s%N) >> {{ playbook_dir }}/throttle.log; sleep 0.2; echo end $(date +%s%N) >> {{ playbook_dir }}/throttle.log"
      throttle: 1
    - name: pause
      pause: {seconds: 0}
"#,
    );
    let started = std::time::Instant::now();
    let r = p.run_json(&[]);
    r.code(0);
    assert!(
        started.elapsed().as_secs() < 5,
        "timeout must stop the sleep"
    );
    assert_eq!(
        r.result("become another user", "h1")["result"]["stdout"],
        "nobody"
    );
    assert_eq!(r.msg("show env", "h2"), json!("play task-2"));
    let slow = r.result("too slow", "h1");
    assert_eq!(slow["status"], "failed");
    assert!(
        slow["result"]["msg"]
            .as_str()
            .unwrap()
            .contains("Timed out after 1 second(s)"),
        "{}",
        slow
    );
    // With throttle 1 no two hosts overlap: starts and ends alternate.
    let log = p.read("throttle.log");
    let kinds: Vec<&str> = log.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(
        kinds,
        ["start", "end", "start", "end", "start", "end"],
        "{log}"
    );
}

#[test]
fn unreachable_host_is_not_failed_and_exit_code_is_3() {
    let p = Project::new();
    p.file(
        "inventory.yaml",
        "kind: Inventory\nspec:\n  hosts:\n    up: {connector: {type: local}}\n    down: {connector: {type: ssh, host: 127.0.0.1, port: 1}}\n",
    )
    .file("site.yaml", "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: ping\n      command: \"true\"\n    - name: after\n      debug: msg=ok\n");
    let r = p.run_json(&[]);
    r.code(3);
    assert_eq!(r.status("ping", "down"), "unreachable");
    assert_eq!(r.status("after", "up"), "ok");
    assert_eq!(r.recap("down")["unreachable"], 1);
    assert_eq!(r.recap("down")["failed"], 0);
    // An unreachable host decides the exit code even when another failed (Ansible's order).
    p.file("site.yaml", "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: ping\n      command: \"true\"\n    - name: boom\n      fail: msg=down\n");
    let r = p.run_json(&[]);
    r.code(3);
    assert_eq!(r.recap("up")["failed"], 1);
}

#[test]
fn interrupt_stops_the_run_and_its_commands() {
    // A sleep with a duration no other process uses, so pgrep finds exactly it.
    let marker = format!("sleep 29.{}", std::process::id());
    let p = project(&format!("- hosts: h1\n  gather_facts: false\n  tasks:\n    - name: long\n      shell: \"{marker}; echo never\"\n"));
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kk"))
        .args(["run", "site.yaml", "-i", "inventory.yaml"])
        .current_dir(p.dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let running = || {
        std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    common::wait_until("the command to start", 10, running);
    unsafe_kill(child.id(), 2);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::wait_until("the command to stop (it was left running)", 5, || {
        !running()
    });
}

fn unsafe_kill(pid: u32, sig: i32) {
    std::process::Command::new("kill")
        .args([format!("-{}", sig), pid.to_string()])
        .status()
        .unwrap();
}

/// A `command`/`shell` loop runs its items in one round trip; what the playbook sees
/// (register shape, a failing middle item, `changed_when`, `when`) must be what running
/// them one by one gives (`timeout` keeps a task on the one-by-one path).
#[test]
fn batched_command_loop_matches_unbatched() {
    let task = |name: &str, extra: &str| {
        format!(
            r#"
    - name: {name} shell
      shell: "echo out-{{{{ item }}}}; echo err-{{{{ item }}}} >&2; cd /; exit {{{{ 3 if item == 'b' else 0 }}}}"
      loop: [a, b, c, d]
      when: item != 'd'
      changed_when: "r.rc == 0 and 'out-a' in r.stdout"
      register: r
      ignore_errors: true{extra}
    - name: {name} shell shown
      debug: msg="{{{{ r }}}}"
    - name: {name} command
      command: "sh -c 'pwd; exit {{{{ item }}}}'"
      args:
        chdir: /tmp
      loop: [0, 2, 0]
      failed_when: r.rc == 2 and item == 2
      register: r
      ignore_errors: true{extra}
    - name: {name} command shown
      debug: msg="{{{{ r }}}}"
"#
        )
    };
    let site = format!(
        "- hosts: h1\n  gather_facts: false\n  tasks:{}{}",
        task("batched", ""),
        task("single", "\n      timeout: 60")
    );
    let p = project(&site);
    let r = p.run_json(&[]);
    let r = r.code(0);
    fn norm(mut v: serde_json::Value) -> serde_json::Value {
        for item in v["results"].as_array_mut().unwrap() {
            for k in ["start", "end", "delta"] {
                if let Some(x) = item.get_mut(k) {
                    *x = json!(x.is_null());
                }
            }
        }
        v
    }
    for kind in ["shell", "command"] {
        let b = r.msg(&format!("batched {kind} shown"), "h1");
        let s = r.msg(&format!("single {kind} shown"), "h1");
        // One round trip: the batched items share the batch's timing.
        assert_eq!(b["results"][0]["start"], b["results"][1]["start"]);
        assert_eq!(norm(b.clone()), norm(s), "{kind}");
        assert_eq!(
            r.status(&format!("batched {kind}"), "h1"),
            r.status(&format!("single {kind}"), "h1")
        );
    }
    let b = r.msg("batched shell shown", "h1");
    assert_eq!(b["failed"], json!(true));
    assert_eq!(b["results"][0]["changed"], json!(true));
    assert_eq!(b["results"][1]["rc"], json!(3));
    assert_eq!(b["results"][1]["stderr"], json!("err-b"));
    assert_eq!(b["results"][2]["changed"], json!(false));
    assert_eq!(b["results"][3]["skipped"], json!(true));
    let c = r.msg("batched command shown", "h1");
    assert_eq!(c["results"][0]["stdout"], json!("/tmp"));
    assert_eq!(c["results"][1]["failed"], json!(true));
}

/// Regression: `file` with `recurse: true` reported `changed` on every run because its
/// before/after comparison included access times, which its own `find` moves (relatime
/// updates a directory's atime once it is older than its mtime/ctime or a day old); and
/// check mode always reported `changed` for symbolic modes (and for octal ones when the
/// tree held a symlink). Only a real mode/owner/group change counts, in both modes.
#[test]
fn file_recurse_reports_changed_only_when_something_changed() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let p = Project::new();
    let md = std::fs::metadata(p.dir()).unwrap();
    let (uid, gid) = (md.uid(), md.gid());
    p.file("inventory.yaml", LOCAL_INVENTORY).file(
        "site.yaml",
        &format!(
            r#"
- hosts: all
  gather_facts: false
  tasks:
    # Every run disturbs the trees without changing any attribute: the symlinks are
    # made again (the directories' mtime/ctime move) and the directories' access times
    # are put two days back, so reading them moves their atime.
    - name: tree
      shell: |
        for t in oct sym; do
          mkdir -p {{{{ out }}}}/$t/a/b && touch {{{{ out }}}}/$t/a/b/f && ln -sfn f {{{{ out }}}}/$t/a/b/l
          touch -a -d '2 days ago' {{{{ out }}}}/$t {{{{ out }}}}/$t/a {{{{ out }}}}/$t/a/b
        done
      changed_when: false
    - name: octal
      file: {{path: "{{{{ out }}}}/oct", state: directory, recurse: true, mode: "0750", owner: "{uid}", group: "{gid}"}}
    - name: symbolic
      file: {{path: "{{{{ out }}}}/sym", recurse: true, mode: "u=rwX,g=rX,o=", owner: "{uid}", group: "{gid}"}}
"#
        ),
    );
    let mode = |rel: &str| {
        std::fs::symlink_metadata(p.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let first = p.run_json(&[]);
    first.code(0);
    for h in ["h1", "h2", "h3"] {
        assert_eq!(first.status("octal", h), "changed", "{}", first.describe());
        assert_eq!(
            first.status("symbolic", h),
            "changed",
            "{}",
            first.describe()
        );
        assert_eq!(mode(&format!("out/{h}/oct/a/b/f")), 0o750);
        assert_eq!(mode(&format!("out/{h}/sym/a/b")), 0o750);
        assert_eq!(mode(&format!("out/{h}/sym/a/b/f")), 0o640);
    }
    for extra in [&[][..], &["--check"][..], &[][..]] {
        let again = p.run_json(extra);
        again.code(0);
        for h in ["h1", "h2", "h3"] {
            assert_eq!(
                again.recap(h)["changed"],
                0,
                "{extra:?}\n{}",
                again.describe()
            );
        }
    }
    // A real change below the top is seen by check mode (without being made) and by a run.
    std::fs::set_permissions(
        p.path("out/h2/sym/a/b/f"),
        std::fs::Permissions::from_mode(0o604),
    )
    .unwrap();
    std::fs::set_permissions(
        p.path("out/h3/oct/a/b/f"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let check = p.run_json(&["--check"]);
    check.code(0);
    assert_eq!(
        check.status("symbolic", "h2"),
        "changed",
        "{}",
        check.describe()
    );
    assert_eq!(
        check.status("octal", "h3"),
        "changed",
        "{}",
        check.describe()
    );
    assert_eq!(check.recap("h1")["changed"], 0, "{}", check.describe());
    assert_eq!(
        mode("out/h2/sym/a/b/f"),
        0o604,
        "check mode must not change modes"
    );
    let fix = p.run_json(&[]);
    fix.code(0);
    assert_eq!(
        fix.status("symbolic", "h2"),
        "changed",
        "{}",
        fix.describe()
    );
    assert_eq!(fix.status("octal", "h3"), "changed", "{}", fix.describe());
    assert_eq!(fix.recap("h1")["changed"], 0, "{}", fix.describe());
    assert_eq!(mode("out/h2/sym/a/b/f"), 0o640);
    assert_eq!(mode("out/h3/oct/a/b/f"), 0o750);
}
