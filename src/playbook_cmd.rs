//! `kk run`: ansible-playbook's own flags on top of the common options: the playbook
//! inspections (`--syntax-check`, `--list-hosts`, `--list-tasks`, `--list-tags`, which
//! load the playbook and run nothing), `--start-at-task` and `--step`.

use std::path::PathBuf;

use clap::Args;
use kk_engine::exec::{list_playbook, syntax_check, ListWhat};
use kk_engine::Error;

use crate::ansible_cfg::AnsibleCfg;
use crate::options::{build_options, workdir_of, Common, Preset};

/// ansible-playbook's flags that only `kk run` takes.
#[derive(Args, Default, Clone)]
pub(crate) struct RunFlags {
    /// Load and check the playbook, run nothing (exit 0, or 4 on an error in the files).
    #[arg(long, help_heading = "Playbook")]
    pub(crate) syntax_check: bool,
    /// List the hosts each play would run on, run nothing.
    #[arg(long, help_heading = "Playbook")]
    pub(crate) list_hosts: bool,
    /// List the tasks each play would run (with --tags/--skip-tags applied), run nothing.
    #[arg(long, help_heading = "Playbook")]
    pub(crate) list_tasks: bool,
    /// List the tags of each play's tasks, run nothing.
    #[arg(long, help_heading = "Playbook")]
    pub(crate) list_tags: bool,
    /// Start at the first task with this name (`role : name` for a role's; `*`, `?` glob).
    #[arg(long, value_name = "NAME", help_heading = "Playbook")]
    pub(crate) start_at_task: Option<String>,
    /// Ask before each task: (N)o/(y)es/(c)ontinue (read from standard input).
    #[arg(long, help_heading = "Playbook")]
    pub(crate) step: bool,
}

impl RunFlags {
    fn inspects(&self) -> bool {
        self.syntax_check || self.list_hosts || self.list_tasks || self.list_tags
    }
}

/// `kk run`: an inspection prints what ansible-playbook prints and exits; otherwise the
/// playbook runs.
pub(crate) async fn run(
    playbook: PathBuf,
    common: &Common,
    flags: &RunFlags,
) -> Result<i32, Error> {
    let cfg = crate::ansible_cfg::load()?;
    if let (Some(f), 1..) = (&cfg.file, common.verbose) {
        println!("Using {} as config file", f.display());
    }
    if !flags.inspects() {
        return crate::run_with(playbook, common, Preset::default(), &cfg, |o| {
            o.defaults.start_at_task = flags.start_at_task.clone();
            o.defaults.step = flags.step;
        })
        .await;
    }
    inspect(playbook, common, flags, &cfg)
}

/// The inspections: no password is asked (as ansible-playbook), nothing is connected.
fn inspect(
    playbook: PathBuf,
    common: &Common,
    flags: &RunFlags,
    cfg: &AnsibleCfg,
) -> Result<i32, Error> {
    let mut cfg = cfg.clone();
    cfg.ask_pass = None;
    cfg.become_ask_pass = None;
    let quiet = Common {
        conn: crate::options::ConnFlags {
            ask_pass: false,
            ask_become_pass: false,
            ..common.conn.clone()
        },
        ..common.clone()
    };
    let mut opts = build_options(
        playbook,
        &quiet,
        &Preset::default(),
        &workdir_of(common),
        &cfg,
    )?;
    if flags.list_tags && opts.tags.only.is_empty() && opts.tags.skip.is_empty() {
        // As ansible-playbook: listing tags without --tags/--skip-tags lists every task,
        // `never` ones included.
        opts.tags.only = vec!["never".into(), "all".into()];
    }
    if flags.list_hosts || flags.list_tasks || flags.list_tags {
        let what = ListWhat {
            hosts: flags.list_hosts,
            tasks: flags.list_tasks,
            tags: flags.list_tags,
        };
        print!("{}", list_playbook(&opts, what)?);
    } else {
        syntax_check(&opts)?;
        println!("\nplaybook: {}", opts.playbook.display());
    }
    Ok(0)
}
