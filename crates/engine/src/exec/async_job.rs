//! `async` and `poll` on a task: the module runs as a background job, which reports
//! through its status file on the host (`~/.ansible_async/<jid>`, written with shell;
//! see `modules::async_status`), as under Ansible's `async_wrapper`.
//!
//! kk has no wrapper process on the host: the job is a task of kk's own, driving the
//! module over the host's connection like any task; it writes the started record first
//! and the module's result when it ends (or `Timeout exceeded` when Ansible's wrapper
//! would kill it).
//! With `poll: N > 0` the task looks at its job every N seconds for `async` seconds
//! and returns the module's result with the job's keys, then removes the status file
//! (Ansible's automatic cleanup), or fails as Ansible's poll loop does; with
//! `poll: 0` it returns at once and `async_status` reads the file later. A job is kk's
//! work, so before a run ends kk waits for its fire-and-forget jobs still running (each
//! ends when Ansible's wrapper would kill it at the latest): the host ends as under Ansible, whose
//! wrapper carries on alone there, only the run lasts until the jobs are done.

use std::time::Duration;

use serde_json::{json, Value};

use crate::error::Result;
use crate::modules::async_status::{erase, new_jid, write_status};
use crate::modules::{Module, ModuleContext, ModuleResult, VarMap};

/// Fire-and-forget jobs still running, waited for by [`wait_for_jobs`].
static JOBS: std::sync::Mutex<Vec<tokio::task::JoinHandle<ModuleResult>>> =
    std::sync::Mutex::new(Vec::new());

/// Waits for the fire-and-forget jobs of the run (see the module doc).
pub(super) async fn wait_for_jobs() {
    loop {
        let jobs: Vec<_> = std::mem::take(&mut *JOBS.lock().unwrap_or_else(|e| e.into_inner()));
        if jobs.is_empty() {
            return;
        }
        for j in jobs {
            let _ = j.await;
        }
    }
}

/// `async` seconds and `poll` interval of a task.
#[derive(Debug, Clone, Copy)]
pub(super) struct AsyncSpec {
    /// The most the job may run.
    pub secs: u64,
    /// 0: fire and forget; otherwise the task waits for the job.
    pub poll: u64,
}

/// Ansible's actions that refuse `async` ("This action (copy) does not support
/// async."): those whose action plugin does not declare it, and the ones that run on
/// the controller only.
const NO_ASYNC: &[&str] = &[
    "add_host",
    "assemble",
    "assert",
    "async_status",
    "copy",
    "debug",
    "fail",
    "fetch",
    "gather_facts",
    "group_by",
    "include_vars",
    "pause",
    "raw",
    "reboot",
    "script",
    "set_fact",
    "template",
    "unarchive",
    "wait_for_connection",
    "add_hostvars",
    "result",
];

/// The keys a job's result carries besides the module's.
fn job_keys(r: &mut ModuleResult, jid: &str, path: &str, finished: bool) {
    r.data.insert("started".into(), true.into());
    r.data.insert("finished".into(), finished.into());
    r.data.insert("ansible_job_id".into(), jid.into());
    r.data.insert("results_file".into(), path.into());
    for k in ["stdout", "stderr"] {
        r.data.entry(k).or_insert_with(|| "".into());
        r.data
            .entry(format!("{k}_lines"))
            .or_insert_with(|| json!([]));
    }
}

/// The job's record of a module result, as the status file holds it.
fn record(r: &ModuleResult) -> Value {
    r.to_value()
}

fn timed_out() -> ModuleResult {
    ModuleResult {
        failed: true,
        msg: Some("Timeout exceeded".into()),
        ..Default::default()
    }
}

/// Runs `imp` as an async job of `module` on the task's host.
pub(super) async fn run(
    module: &str,
    imp: &'static dyn Module,
    mctx: &ModuleContext,
    args: VarMap,
    spec: AsyncSpec,
) -> Result<ModuleResult> {
    if NO_ASYNC.contains(&module) {
        return Ok(ModuleResult::failed(format!(
            "This action ({module}) does not support async."
        )));
    }
    let jid = new_jid();
    let path = write_status(
        mctx,
        &jid,
        &json!({"started": 1, "finished": 0, "ansible_job_id": jid}),
    )
    .await?;
    let ctx = mctx.clone();
    let job_id = jid.clone();
    // Ansible's async_wrapper first looks at its job after 5 s, then every 5 s, and at
    // the first look once `async` seconds are used up (5 + 5·⌈async/5⌉ s) records
    // `Timeout exceeded` and kills it — also when the job ended since the look before.
    let kill_at = Duration::from_secs(5 + spec.secs.div_ceil(5) * 5);
    let job = tokio::spawn(async move {
        let start = tokio::time::Instant::now();
        let run = tokio::time::timeout(kill_at, imp.run(&ctx, args)).await;
        let res = match run {
            _ if start.elapsed() + Duration::from_secs(5) > kill_at => {
                tokio::time::sleep_until(start + kill_at).await;
                timed_out()
            }
            Ok(Ok(r)) => r,
            Ok(Err(e)) => ModuleResult::failed(e.result_message()),
            Err(_) => timed_out(),
        };
        let mut file = record(&res);
        if res.failed && res.msg.as_deref() == Some("Timeout exceeded") {
            file["finished"] = 1.into();
        }
        // A status that cannot be written leaves the job "running" for async_status;
        // the task that polls it has the result itself.
        let _ = write_status(&ctx, &job_id, &file).await;
        res
    });
    if spec.poll == 0 {
        JOBS.lock().unwrap_or_else(|e| e.into_inner()).push(job);
        let mut r = ModuleResult::changed(true);
        job_keys(&mut r, &jid, &path, false);
        for k in ["stdout", "stderr", "stdout_lines", "stderr_lines"] {
            r.data.remove(k);
        }
        return Ok(r);
    }
    // Ansible's poll loop: look every `poll` seconds until the job is done or `async`
    // seconds of polls are spent; a job still running then goes on in the background.
    let mut time_left = spec.secs;
    while time_left > 0 && !job.is_finished() {
        tokio::time::sleep(Duration::from_secs(spec.poll)).await;
        if job.is_finished() {
            break;
        }
        time_left = time_left.saturating_sub(spec.poll);
    }
    if !job.is_finished() {
        JOBS.lock().unwrap_or_else(|e| e.into_inner()).push(job);
        let status = crate::modules::async_status::job_status(mctx, &jid).await?;
        let mut r = ModuleResult::failed(format!(
            "async task did not complete within the requested time - {}s",
            spec.secs
        ));
        r.data.insert("async_result".into(), status.to_value());
        return Ok(r);
    }
    let mut res = match job.await {
        Ok(r) => r,
        Err(e) => ModuleResult::failed(format!("async job {jid} stopped: {e}")),
    };
    // What async_status would say is what the job returned; the file is removed as
    // Ansible's automatic cleanup does after a finished poll.
    let _ = erase(mctx, &jid).await;
    job_keys(&mut res, &jid, &path, true);
    Ok(res)
}

impl super::Runner {
    /// The task's `async`/`poll` for one item (templated, as Ansible does), with its
    /// module's name; `None` without `async` or with `async: 0`. `poll` defaults to 15.
    pub(super) fn async_spec(
        &self,
        t: &crate::project::Task,
        view: &std::sync::Arc<crate::vars::VarView>,
    ) -> Result<Option<(String, AsyncSpec)>> {
        let crate::project::TaskKind::Module { module, .. } = &t.kind else {
            return Ok(None);
        };
        if t.own.async_.is_none() {
            return Ok(None);
        }
        let ctx = view.context();
        let secs = self.keyword(&t.own.async_, &ctx)?.unwrap_or(0);
        let poll = self.keyword(&t.own.poll, &ctx)?.unwrap_or(15);
        Ok((secs > 0).then(|| (module.clone(), AsyncSpec { secs, poll })))
    }
}
