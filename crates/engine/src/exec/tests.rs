//! Executor tests on hosts with the local connection.

use std::path::Path;
use std::sync::Arc;

use super::{run_playbook, RunOptions, TagFilter};
use crate::inventory::Inventory;
use crate::report::{Event, Reporter};
use crate::vars::VarMap;

/// Ignores every event.
struct Quiet;

impl Reporter for Quiet {
    fn event(&self, _event: &Event) {}
}

/// Runs `site` (a playbook) on `hosts` local hosts named h1, h2 … with `forks`.
async fn run(dir: &Path, site: &str, hosts: usize, forks: usize) -> i32 {
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
    run_playbook(opts, Arc::new(Quiet)).await.unwrap().exit_code
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
