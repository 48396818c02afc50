//! Executor tests: on hosts with the local connection, and on fake hosts that record the
//! commands they are sent (no process, no SSH).

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::{run_playbook, RunOptions, TagFilter};
use crate::connect::fake::FakeHosts;
use crate::inventory::Inventory;
use crate::report::{Event, Reporter, Status};
use crate::vars::VarMap;

/// Ignores every event.
struct Quiet;

impl Reporter for Quiet {
    fn event(&self, _event: &Event) {}
}

/// Keeps every event.
#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl Reporter for Recorder {
    fn event(&self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

/// Runs `site` (a playbook) on `hosts` local hosts named h1, h2 … with `forks`.
async fn run(dir: &Path, site: &str, hosts: usize, forks: usize) -> i32 {
    run_with(dir, site, hosts, forks, Arc::new(Quiet)).await
}

async fn run_with(
    dir: &Path,
    site: &str,
    hosts: usize,
    forks: usize,
    reporter: Arc<dyn Reporter>,
) -> i32 {
    let mut inv = String::from("kind: Inventory\nspec:\n  hosts:\n");
    for i in 1..=hosts {
        inv.push_str(&format!("    h{i}: {{connector: {{type: local}}}}\n"));
    }
    std::fs::write(dir.join("inventory.yaml"), inv).unwrap();
    std::fs::write(dir.join("site.yaml"), site).unwrap();
    let opts = RunOptions {
        playbook: dir.join("site.yaml"),
        inventory: Inventory::load(&dir.join("inventory.yaml")).unwrap(),
        config: VarMap::new(),
        extra_vars: VarMap::new(),
        tags: TagFilter::default(),
        limit: None,
        check: false,
        diff: false,
        forks,
        roles_path: Vec::new(),
        inventory_path: None,
        verbosity: 0,
        workdir: dir.to_path_buf(),
        ssh_strict: false,
        defaults: Default::default(),
        connect: Default::default(),
    };
    run_playbook(opts, reporter).await.unwrap().exit_code
}

/// The most intervals (start, end) open at one time.
fn max_overlap(mut spans: Vec<(u128, u128)>) -> usize {
    let mut points: Vec<(u128, i32)> = Vec::new();
    for (s, e) in spans.drain(..) {
        points.push((s, 1));
        points.push((e, -1));
    }
    // An end and a start at the same instant do not overlap.
    points.sort();
    let (mut open, mut max) = (0i32, 0i32);
    for (_, d) in points {
        open += d;
        max = max.max(open);
    }
    max as usize
}

/// `--forks` holds for the whole run: with `strategy: free` every host walks its own task
/// list, and still no more than `forks` hosts run a task at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forks_limit_the_whole_run_under_the_free_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let site = format!(
        r#"
- hosts: all
  gather_facts: false
  strategy: free
  tasks:
    - name: record
      shell: date +%s%N >> {d}/{{{{ inventory_hostname }}}}; sleep 0.3; date +%s%N >> {d}/{{{{ inventory_hostname }}}}
    - name: again
      shell: date +%s%N >> {d}/{{{{ inventory_hostname }}}}; sleep 0.3; date +%s%N >> {d}/{{{{ inventory_hostname }}}}
"#
    );
    assert_eq!(run(dir.path(), &site, 6, 2).await, 0);
    let mut spans = Vec::new();
    for i in 1..=6 {
        let text = std::fs::read_to_string(dir.path().join(format!("h{i}"))).unwrap();
        let t: Vec<u128> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(t.len(), 4, "h{i}: {text}");
        spans.push((t[0], t[1]));
        spans.push((t[2], t[3]));
    }
    let max = max_overlap(spans);
    assert!(max <= 2, "{} hosts ran a task at once with --forks 2", max);
    assert_eq!(max, 2, "the hosts should have run two at a time");
}

/// The modules' typed effects reach the run: facts set in a loop, a host added with
/// its groups and variables, group_by, variables for other hosts, values reported at
/// the end, and debug's displayed result.
#[tokio::test]
async fn module_effects_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let site = r#"
- hosts: all
  gather_facts: false
  tasks:
    - set_fact: {n: "{{ (n | default(0) | int) + item }}"}
      loop: [1, 2, 3]
    - add_host: {name: extra, groups: [added], connector: {type: local}, color: blue}
    - group_by: {key: "g_{{ inventory_hostname }}"}
    - add_hostvars: {hosts: h1, vars: {mark: set}}
    - result: {sum: "{{ n }}"}
    - name: show
      debug: {msg: "{{ n }}"}
- hosts: added:g_h2
  gather_facts: false
  tasks:
    - name: later
      debug: {msg: "{{ color | default('-') }} {{ hostvars['h1'].mark }}"}
"#;
    let rec = Arc::new(Recorder::default());
    assert_eq!(run_with(dir.path(), site, 2, 5, rec.clone()).await, 0);
    let events = rec.0.lock().unwrap();
    let shown = |task: &str, host: &str| -> Option<Value> {
        events.iter().find_map(|e| match e {
            Event::HostResult {
                task: t,
                host: h,
                display,
                ..
            } if t == task && h == host => display.clone(),
            _ => None,
        })
    };
    assert_eq!(shown("show", "h1"), Some(json!({"msg": 6})));
    assert_eq!(shown("later", "extra"), Some(json!({"msg": "blue set"})));
    assert_eq!(shown("later", "h2"), Some(json!({"msg": "- set"})));
    assert!(shown("later", "h1").is_none());
    let reported = events.iter().find_map(|e| match e {
        Event::Result { data } => Some(data.clone()),
        _ => None,
    });
    assert_eq!(reported, Some(json!({"sum": 6})));
}

/// Runs `site` on fake hosts h1 … hN (see [`crate::connect::fake`]): every command they
/// receive is recorded and answered by the rules `script` sets, no process is started.
async fn run_fake(
    site: &str,
    hosts: usize,
    check: bool,
    script: impl FnOnce(&FakeHosts),
) -> (i32, Arc<FakeHosts>, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let (id, fakes) = FakeHosts::register();
    script(&fakes);
    let mut inv = String::from("kind: Inventory\nspec:\n  hosts:\n");
    for i in 1..=hosts {
        inv.push_str(&format!(
            "    h{i}: {{connector: {{type: fake, fake: {id}}}}}\n"
        ));
    }
    std::fs::write(dir.path().join("inventory.yaml"), inv).unwrap();
    std::fs::write(dir.path().join("site.yaml"), site).unwrap();
    let rec = Arc::new(Recorder::default());
    let opts = RunOptions {
        playbook: dir.path().join("site.yaml"),
        inventory: Inventory::load(&dir.path().join("inventory.yaml")).unwrap(),
        config: VarMap::new(),
        extra_vars: VarMap::new(),
        tags: TagFilter::default(),
        limit: None,
        check,
        diff: false,
        forks: 5,
        roles_path: Vec::new(),
        inventory_path: None,
        verbosity: 0,
        workdir: dir.path().to_path_buf(),
        ssh_strict: false,
        defaults: Default::default(),
        connect: Default::default(),
    };
    let code = run_playbook(opts, rec.clone()).await.unwrap().exit_code;
    let events = rec.0.lock().unwrap().clone();
    (code, fakes, events)
}

/// The status each host got for `task`, by host name (hosts finish in any order).
fn statuses(events: &[Event], task: &str) -> Vec<(String, Status)> {
    let mut out: Vec<(String, Status)> = events
        .iter()
        .filter_map(|e| match e {
            Event::HostResult {
                task: t,
                host,
                status,
                ..
            } if t == task => Some((host.clone(), *status)),
            _ => None,
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Which marker words (`m1`, `m2` …) a script carries.
fn marks(scripts: &[String], words: &[&str]) -> Vec<String> {
    scripts
        .iter()
        .flat_map(|s| {
            words
                .iter()
                .filter(|w| s.contains(**w))
                .map(|w| w.to_string())
        })
        .collect()
}

/// Linear strategy: every host finishes a task before any host starts the next, and each
/// host gets its tasks in the playbook's order.
#[tokio::test]
async fn fake_linear_order() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: one, command: echo mark-one}\n    - {name: two, command: echo mark-two}\n";
    let (code, fakes, _) = run_fake(site, 3, false, |_| {}).await;
    assert_eq!(code, 0);
    let sent = fakes.sent.lock().unwrap().clone();
    let order = marks(
        &sent.iter().map(|s| s.script.clone()).collect::<Vec<_>>(),
        &["mark-one", "mark-two"],
    );
    assert_eq!(order.len(), 6, "{sent:?}");
    assert!(order[..3].iter().all(|m| m == "mark-one"), "{order:?}");
    assert!(order[3..].iter().all(|m| m == "mark-two"), "{order:?}");
    for h in ["h1", "h2", "h3"] {
        assert_eq!(
            marks(&fakes.scripts(h), &["mark-one", "mark-two"]),
            ["mark-one", "mark-two"]
        );
    }
}

/// `run_once`: the first host runs the command, the others get its result.
#[tokio::test]
async fn fake_run_once_runs_on_one_host() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: once, command: echo mark-once, run_once: true, register: r}\n    - {name: seen, debug: {msg: \"{{ r.stdout }}\"}}\n";
    let (code, fakes, events) = run_fake(site, 3, false, |f| {
        f.answer(None, "mark-once", 0, "from-the-first\n")
    })
    .await;
    assert_eq!(code, 0);
    let total: usize = ["h1", "h2", "h3"]
        .iter()
        .map(|h| marks(&fakes.scripts(h), &["mark-once"]).len())
        .sum();
    assert_eq!(total, 1);
    assert_eq!(marks(&fakes.scripts("h1"), &["mark-once"]), ["mark-once"]);
    let shown: Vec<Option<Value>> = events
        .iter()
        .filter_map(|e| match e {
            Event::HostResult { task, display, .. } if task == "seen" => Some(display.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(shown.len(), 3);
    assert!(shown
        .iter()
        .all(|d| d == &Some(json!({"msg": "from-the-first"}))));
}

/// A host whose task fails leaves the play: it gets no further task, the others go on,
/// and the run's exit code says a host failed.
#[tokio::test]
async fn fake_failed_host_leaves_the_play() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: first, command: echo mark-first}\n    - {name: second, command: echo mark-second}\n";
    let (code, fakes, events) = run_fake(site, 2, false, |f| {
        f.answer(Some("h1"), "mark-first", 1, "")
    })
    .await;
    assert_eq!(code, 2);
    assert_eq!(
        marks(&fakes.scripts("h1"), &["mark-first", "mark-second"]),
        ["mark-first"]
    );
    assert_eq!(
        marks(&fakes.scripts("h2"), &["mark-first", "mark-second"]),
        ["mark-first", "mark-second"]
    );
    assert_eq!(
        statuses(&events, "first"),
        [
            ("h1".into(), Status::Failed),
            ("h2".into(), Status::Changed)
        ]
    );
    assert_eq!(
        statuses(&events, "second"),
        [("h2".into(), Status::Changed)]
    );
}

/// A failure inside a block runs its `rescue` (the failed host is rescued and stays in
/// the play) and its `always`, for every host.
#[tokio::test]
async fn fake_rescue_and_always() {
    let site = r#"
- hosts: all
  gather_facts: false
  tasks:
    - block:
        - {name: try, command: echo mark-try}
        - {name: after, command: echo mark-after}
      rescue:
        - {name: fix, command: echo mark-rescue}
      always:
        - {name: last, command: echo mark-always}
    - {name: next, command: echo mark-next}
"#;
    let (code, fakes, _) =
        run_fake(site, 2, false, |f| f.answer(Some("h1"), "mark-try", 1, "")).await;
    assert_eq!(code, 0);
    let words = [
        "mark-try",
        "mark-after",
        "mark-rescue",
        "mark-always",
        "mark-next",
    ];
    assert_eq!(
        marks(&fakes.scripts("h1"), &words),
        ["mark-try", "mark-rescue", "mark-always", "mark-next"]
    );
    assert_eq!(
        marks(&fakes.scripts("h2"), &words),
        ["mark-try", "mark-after", "mark-always", "mark-next"]
    );
}

/// The items of a looped command go to the host together (one round trip), and each
/// item still gets its own result.
#[tokio::test]
async fn fake_command_loop_items_are_batched() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: each, command: \"echo item-{{ item }}\", loop: [a, b, c], register: r}\n    - {name: count, debug: {msg: \"{{ r.results | map(attribute='stdout') | list }}\"}}\n";
    // The batch's framing: the items' exit codes, their output sizes, then the outputs.
    let framed = "__KK_BATCH__ 0 0 0\n2 o0\n0 e0\n2 o1\n0 e1\n2 o2\n0 e2\n6 total\na\nb\nc\n";
    let (code, fakes, events) =
        run_fake(site, 1, false, |f| f.answer(None, "item-a", 0, framed)).await;
    assert_eq!(code, 0);
    let scripts = fakes.scripts("h1");
    let with_items: Vec<&String> = scripts.iter().filter(|s| s.contains("item-")).collect();
    assert_eq!(with_items.len(), 1, "{scripts:?}");
    for i in ["item-a", "item-b", "item-c"] {
        assert!(with_items[0].contains(i), "{}", with_items[0]);
    }
    let shown = events.iter().find_map(|e| match e {
        Event::HostResult { task, display, .. } if task == "count" => display.clone(),
        _ => None,
    });
    assert_eq!(shown, Some(json!({"msg": ["a", "b", "c"]})));
}

/// Check mode: a command (which cannot say what it would do) is skipped and never sent.
#[tokio::test]
async fn fake_check_mode_skips_commands() {
    let site = "- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: cmd, command: echo mark-cmd}\n";
    let (code, fakes, events) = run_fake(site, 2, true, |_| {}).await;
    assert_eq!(code, 0);
    assert!(fakes
        .sent
        .lock()
        .unwrap()
        .iter()
        .all(|s| !s.script.contains("mark-cmd")));
    assert_eq!(
        statuses(&events, "cmd"),
        [
            ("h1".into(), Status::Skipped),
            ("h2".into(), Status::Skipped)
        ]
    );
}
