//! Plays: their hosts, `serial` batches, play variables and `vars_files`, fact
//! gathering, and the sections (`pre_tasks`, roles and `tasks`, `post_tasks`) run with
//! the play's strategy.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use serde_json::Value;

use super::walk::play_hosts_map;
use super::{Gathering, PlayCtx, Runner, Scope};
use crate::error::{Error, ErrorKind, Result};
use crate::project::{
    BatchSize, HostOrder, Inherited, Keyword, KeywordValue, Play, Serial, Strategy, Task, TaskKind,
};
use crate::report::Event;
use crate::vars::{Layers, Magic, VarMap, VarView};

/// Keywords of the play itself (not inherited by its tasks), resolved once per play with
/// the play's variables and the extra vars, as ansible-core does.
#[derive(Debug, Clone, Default)]
pub(super) struct PlayKeywords {
    /// `serial`.
    serial: Option<Serial>,
    /// `strategy`.
    pub(super) strategy: Strategy,
    /// `gather_facts`; unset, `gathering` decides ([`super::Gathering`]).
    gather_facts: Option<bool>,
    /// `force_handlers`.
    pub(super) force_handlers: bool,
    /// `max_fail_percentage`.
    pub(super) max_fail_percentage: Option<f64>,
    /// `order`.
    order: HostOrder,
}

impl Runner {
    /// Variables a play's keywords and name see: config, play vars, extra vars.
    fn play_view(&self, play: &Play) -> Arc<VarView> {
        let mut l = Layers::default();
        l.push(self.config.clone());
        l.push(play.attrs.vars.clone());
        l.push(self.extra.clone());
        VarView::new(l, Magic::default(), self.templar.clone())
    }

    fn play_keywords(&self, play: &Play) -> Result<PlayKeywords> {
        let ctx = self.play_view(play).context();
        fn get<T: KeywordValue>(
            me: &Runner,
            k: &Option<Keyword<T>>,
            ctx: &minijinja::Value,
        ) -> Result<Option<T>> {
            match k {
                None => Ok(None),
                Some(k) => k.resolve(&me.templar, ctx),
            }
        }
        Ok(PlayKeywords {
            serial: get(self, &play.serial, &ctx)?,
            strategy: get(self, &play.strategy, &ctx)?.unwrap_or_default(),
            gather_facts: get(self, &play.gather_facts, &ctx)?,
            force_handlers: get(self, &play.force_handlers, &ctx)?.unwrap_or(false),
            max_fail_percentage: get(self, &play.max_fail_percentage, &ctx)?.map(|p| p.0),
            order: get(self, &play.order, &ctx)?.unwrap_or_default(),
        })
    }

    /// Resolves the play's host patterns (templated with extra vars and config), in the
    /// order the pattern selects them (`ansible_play_hosts_all`'s; `order` applies later).
    fn play_hosts(&self, play: &Play) -> Result<Vec<String>> {
        let mut l = Layers::default();
        l.push(self.config.clone());
        l.push(self.extra.clone());
        let view = VarView::new(l, Magic::default(), self.templar.clone());
        let ctx = view.context();
        let rendered = self
            .templar
            .render_value(&play.hosts, &ctx)
            .map_err(|e| e.at(&play.span))?;
        let patterns: Vec<String> = match rendered {
            Value::String(s) => vec![s],
            Value::Array(items) => items.iter().map(crate::project::value_text).collect(),
            other => vec![crate::project::value_text(&other)],
        };
        let inv = self.inventory.read().unwrap();
        let pattern = patterns.join(":");
        let mut hosts = inv.select(&pattern).map_err(|e| e.at(&play.span))?;
        if let Some(limit) = &self.opts.limit {
            let allowed = inv.select(limit)?;
            hosts.retain(|h| allowed.contains(h));
        }
        Ok(hosts)
    }

    /// Runs one play; returns false when the run must stop: every host of a batch
    /// failed or was unreachable (Ansible's "NO MORE HOSTS LEFT", which ends the whole
    /// playbook, later plays on other hosts included), or `max_fail_percentage` was
    /// exceeded.
    pub(super) fn run_play(self: Arc<Self>, play: Play) -> BoxFuture<'static, Result<bool>> {
        Box::pin(async move {
            let matched = self.play_hosts(&play)?;
            // Hosts that failed or were unreachable earlier in the run take no part
            // (Ansible's rule), but still count in the `serial` batches.
            let gone = |h: &String| {
                let s = self.state(h);
                s.failed || s.unreachable
            };
            let hosts: Vec<String> = matched.iter().filter(|h| !gone(h)).cloned().collect();
            for h in &hosts {
                self.with_state(h, |s| s.ended = false);
            }
            if hosts.is_empty() {
                self.emit(Event::PlayStart {
                    play: play.name.clone(),
                    hosts: Vec::new(),
                });
                self.warn(format!(
                    "no hosts matched the play's pattern {}",
                    play.hosts
                ));
                return Ok(true);
            }
            let kw = self.play_keywords(&play)?;
            // Batches and each batch's hosts follow `order`; ansible_play_hosts(_all) keep
            // the pattern's order (ansible-core's get_hosts with and without `order`).
            let ordered = kw.order.apply(&matched);
            for full in serial_batches(kw.serial.as_ref(), &ordered) {
                let batch: Vec<String> = full.iter().filter(|h| !gone(h)).cloned().collect();
                if batch.is_empty() {
                    // A batch of hosts that all failed earlier: Ansible starts it and
                    // runs nothing.
                    self.emit(Event::PlayStart {
                        play: play.name.clone(),
                        hosts: Vec::new(),
                    });
                    continue;
                }
                let pc = Arc::new(self.prepare_play(&play, &kw, &batch, full.len(), &hosts)?);
                self.emit(Event::PlayStart {
                    play: pc.name.clone(),
                    hosts: batch.clone(),
                });
                self.clone().run_batch(pc.clone()).await?;
                if self.max_fail_break.load(Ordering::SeqCst) {
                    return Ok(false);
                }
                if pc.abort.load(Ordering::SeqCst) {
                    // end_play: the play stops, the run goes on.
                    break;
                }
                // Ansible compares the batch size with the hosts failed plus the hosts
                // unreachable in this batch; a host can be both (any_errors_fatal fails
                // a host that was unreachable at the same task), and then they differ.
                let lost: usize = batch
                    .iter()
                    .map(|h| {
                        let s = self.state(h);
                        usize::from(s.failed) + usize::from(s.unreachable)
                    })
                    .sum();
                if lost == full.len() {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    fn prepare_play(
        &self,
        play: &Play,
        kw: &PlayKeywords,
        batch: &[String],
        batch_size: usize,
        all: &[String],
    ) -> Result<PlayCtx> {
        let vars = (*play.attrs.vars).clone();
        let name = if crate::template::is_template(&play.name) {
            let v = self.play_view(play);
            crate::project::value_text(
                &self
                    .templar
                    .render_str(&play.name, &v.context())
                    .map_err(|e| e.at(&play.span))?,
            )
        } else {
            play.name.clone()
        };
        // vars_files names may use host variables, so each host gets its own set.
        let play_vars = Arc::new(vars.clone());
        let mut loaded_files: HashMap<PathBuf, VarMap> = HashMap::new();
        let mut host_vars_files = HashMap::new();
        if !play.vars_files.is_empty() {
            for host in batch {
                let view = VarView::new(
                    self.base_layers(host, &play_vars),
                    Magic {
                        values: vec![self.host_magic(host)],
                        hostvars: None,
                    },
                    self.templar.clone(),
                );
                let ctx = view.context();
                let mut merged = VarMap::new();
                for (file, span) in &play.vars_files {
                    let rendered = self
                        .templar
                        .render_value(file, &ctx)
                        .map_err(|e| e.at(span))?;
                    let candidates: Vec<String> = match rendered {
                        Value::Array(items) => {
                            items.iter().map(crate::project::value_text).collect()
                        }
                        other => vec![crate::project::value_text(&other)],
                    };
                    let Some(path) = candidates
                        .iter()
                        .map(|c| play.dir.join(c))
                        // Any file but a directory (a device or FIFO reaches the reader,
                        // which caps what it takes), as Ansible's path_exists.
                        .find(|p| p.exists() && !p.is_dir())
                    else {
                        return Err(Error::new(
                            ErrorKind::Io,
                            format!(
                                "vars file {} not found (for host {})",
                                candidates.join(" or "),
                                host
                            ),
                        )
                        .at(span));
                    };
                    if !loaded_files.contains_key(&path) {
                        let node = crate::yaml::load_file(&path)?;
                        loaded_files.insert(path.clone(), node.to_map("vars_files")?);
                    }
                    crate::vars::merge_maps(&mut merged, &loaded_files[&path]);
                }
                host_vars_files.insert(host.clone(), Arc::new(merged));
            }
        }
        let (mut role_defaults, mut role_vars) = (Vec::new(), Vec::new());
        for list in [&play.roles, &play.pre_tasks, &play.tasks, &play.post_tasks] {
            collect_static_roles(list, &mut role_defaults, &mut role_vars);
        }
        let mut magic = self.play_magic(all, &name);
        let role_names = super::role_magic::RoleNames::of_static(&[
            &play.roles,
            &play.pre_tasks,
            &play.tasks,
            &play.post_tasks,
        ]);
        role_names.insert_into(&mut magic);
        Ok(PlayCtx {
            play: play.clone(),
            kw: kw.clone(),
            name,
            vars: Arc::new(vars),
            host_vars_files,
            role_defaults,
            role_vars,
            magic: RwLock::new(Arc::new(magic)),
            play_hosts: RwLock::new(Arc::new(play_hosts_map(&self.still_in(all), batch))),
            play_hosts_all: all.to_vec(),
            batch: batch.to_vec(),
            batch_size,
            abort: AtomicBool::new(false),
            fatal: Mutex::new(None),
            included_handlers: RwLock::new(Vec::new()),
            role_names: RwLock::new(role_names),
            public_roles: RwLock::new(Vec::new()),
            roles_done: Default::default(),
            included_handler_files: Default::default(),
            notify_at_run: [&play.pre_tasks, &play.roles, &play.tasks, &play.post_tasks]
                .iter()
                .any(|l| crate::project::includes_roles(l)),
        })
    }

    fn run_batch(self: Arc<Self>, pc: Arc<PlayCtx>) -> BoxFuture<'static, Result<()>> {
        Box::pin(async move {
            let scope = Scope {
                attrs: Inherited {
                    vars: Arc::new(VarMap::new()),
                    ..pc.play.attrs.clone()
                },
                environment: pc.play.attrs.environment.iter().cloned().collect(),
                ..Default::default()
            };
            self.gather_facts(&pc, &scope).await;
            let sections: [(&str, Vec<Task>); 3] = [
                ("pre_tasks", pc.play.pre_tasks.clone()),
                (
                    "tasks",
                    pc.play
                        .roles
                        .iter()
                        .chain(pc.play.tasks.iter())
                        .cloned()
                        .collect(),
                ),
                ("post_tasks", pc.play.post_tasks.clone()),
            ];
            for (_, tasks) in sections {
                if tasks.is_empty() {
                    continue;
                }
                let hosts = self.active(&pc, &pc.batch);
                if pc.kw.strategy != Strategy::Linear {
                    // host_pinned: a host holds one of the run's forks for the whole
                    // section, so with fewer forks than hosts the others wait their turn.
                    let pinned = (pc.kw.strategy == Strategy::HostPinned)
                        .then(|| Arc::new(tokio::sync::Semaphore::new(self.opts.forks.max(1))));
                    let futs = hosts.iter().map(|h| {
                        let run = self.clone().run_list(
                            pc.clone(),
                            tasks.clone(),
                            vec![h.clone()],
                            scope.clone(),
                        );
                        let pinned = pinned.clone();
                        async move {
                            let _fork = match &pinned {
                                Some(s) => s.acquire().await.ok(),
                                None => None,
                            };
                            run.await
                        }
                    });
                    futures::future::join_all(futs).await;
                } else {
                    self.clone()
                        .run_list(pc.clone(), tasks, hosts, scope.clone())
                        .await;
                }
                if let Some(e) = pc.fatal.lock().unwrap().take() {
                    return Err(e);
                }
                self.clone().flush_handlers(pc.clone(), scope.clone()).await;
                if let Some(e) = pc.fatal.lock().unwrap().take() {
                    return Err(e);
                }
                if pc.abort.load(Ordering::SeqCst) {
                    break;
                }
            }
            Ok(())
        })
    }

    /// The play's implicit `Gathering Facts` task, for the hosts `gather_facts` and
    /// `gathering` select.
    async fn gather_facts(self: &Arc<Self>, pc: &Arc<PlayCtx>, scope: &Scope) {
        let task = Task {
            name: Some("Gathering Facts".into()),
            kind: TaskKind::Module {
                module: crate::modules::FACTS_MODULE.into(),
                args: pc
                    .play
                    .gather_subset
                    .iter()
                    .map(|v| ("gather_subset".to_string(), v.clone()))
                    .collect(),
            },
            attrs: Inherited::default(),
            own: Default::default(),
            span: pc.play.span.clone(),
            dir: pc.play.dir.clone(),
        };
        let hosts = self.active(pc, &pc.batch);
        // Ansible's PlayIterator: "implied" is gather_facts unset or true.
        let hosts = match (self.opts.defaults.gathering, pc.kw.gather_facts) {
            (_, Some(false)) | (Gathering::Explicit, None) => return,
            (Gathering::Smart, _) => {
                let states = self.hosts.lock().unwrap();
                let todo: Vec<String> = hosts
                    .iter()
                    .filter(|h| !states.get(*h).is_some_and(|s| s.gathered))
                    .cloned()
                    .collect();
                // Every host gathered already: no task at all, as Ansible shows none.
                if todo.is_empty() && !hosts.is_empty() {
                    return;
                }
                todo
            }
            _ => hosts,
        };
        self.clone()
            .run_tasks_on_hosts(pc.clone(), task, hosts, scope.clone(), true)
            .await;
    }
}

/// Gathers defaults and vars of roles applied statically (`roles:`, `import_role`,
/// their dependencies), which Ansible exposes to the whole play.
fn collect_static_roles(
    tasks: &[Task],
    defaults: &mut Vec<Arc<VarMap>>,
    vars: &mut Vec<Arc<VarMap>>,
) {
    for t in tasks {
        if let TaskKind::Block {
            block,
            rescue,
            always,
            role,
        } = &t.kind
        {
            if let Some(r) = role.as_ref().filter(|r| r.public) {
                if !defaults.iter().any(|d| Arc::ptr_eq(d, &r.role.defaults)) {
                    defaults.push(r.role.defaults.clone());
                    vars.push(r.role.vars.clone());
                }
            }
            collect_static_roles(block, defaults, vars);
            collect_static_roles(rescue, defaults, vars);
            collect_static_roles(always, defaults, vars);
        }
    }
}

/// Splits hosts into `serial` batches: sizes in order, the last one repeating; a
/// percentage is of all the play's hosts, rounded down, at least one host.
fn serial_batches(serial: Option<&Serial>, hosts: &[String]) -> Vec<Vec<String>> {
    let sizes = match serial {
        Some(Serial(sizes)) if !sizes.is_empty() => sizes,
        _ => return vec![hosts.to_vec()],
    };
    let total = hosts.len();
    let size_of = |b: &BatchSize| -> usize {
        let n = match *b {
            BatchSize::Hosts(n) => usize::try_from(n).unwrap_or(usize::MAX),
            BatchSize::Percent(pct) => ((total as f64) * pct / 100.0) as usize,
        };
        n.max(1)
    };
    let mut out = Vec::new();
    let mut i = 0;
    let mut k = 0;
    while i < total {
        let n = size_of(&sizes[k.min(sizes.len() - 1)]);
        let end = i.saturating_add(n).min(total);
        out.push(hosts[i..end].to_vec());
        i = end;
        k += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::serial_batches;
    use crate::project::{BatchSize, Serial};

    #[test]
    pub(super) fn serial() {
        let hosts: Vec<String> = (1..=5).map(|i| format!("h{}", i)).collect();
        let b = serial_batches(Some(&Serial(vec![BatchSize::Hosts(2)])), &hosts);
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 2, 1]);
        let half = Serial(vec![BatchSize::Hosts(1), BatchSize::Percent(50.0)]);
        let b = serial_batches(Some(&half), &hosts);
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 2, 2]);
        let b = serial_batches(None, &hosts);
        assert_eq!(b.len(), 1);
        let b = serial_batches(Some(&Serial(vec![BatchSize::Hosts(u64::MAX)])), &hosts);
        assert_eq!(b.len(), 1);
    }
}
