//! Executor tests on hosts with the local connection.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::{run_playbook, RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::report::{Event, Reporter};
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
