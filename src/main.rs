//! `kk`: the command line. It only parses options, builds a [`RunOptions`] and hands it
//! to the engine; every error is rendered by [`kk_engine::Error::render`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

mod adhoc;
mod ansible_cfg;
mod bundle;
mod create;
mod inventory_edit;
mod lifecycle;
mod options;
mod playbook_cmd;
mod prompt;
mod vault_cmd;
mod version;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use kk_engine::exec::run_playbook;
use kk_engine::report::{Format, Output, RunLog};
use kk_engine::{Error, ErrorKind};
use options::{
    absolute, build_options, options_error, workdir_of, Builtin, Common, OutputFormat, Preset,
};

#[derive(Parser)]
#[command(
    name = "kk",
    version,
    about = "Install and run Kubernetes clusters over SSH, with a fast Ansible-compatible playbook engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a playbook from disk.
    Run {
        /// The playbook file.
        playbook: PathBuf,
        #[command(flatten)]
        common: Box<Common>,
        #[command(flatten)]
        flags: Box<playbook_cmd::RunFlags>,
    },
    /// Run one module on the hosts a pattern selects (Ansible's `ansible` command).
    #[command(
        after_help = "Example:\n  kk adhoc 'web:&prod' -m shell -a 'uptime' -i inventory.ini"
    )]
    Adhoc(Box<adhoc::Adhoc>),
    /// Check that the hosts and the config can take a cluster (all checks, or the named ones).
    Precheck {
        /// Only these checks (all of them when none is named).
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(PRECHECKS))]
        checks: Vec<String>,
        #[command(flatten)]
        builtin: Box<Builtin>,
    },
    /// Create a cluster, or write a starting config or inventory file.
    #[command(subcommand)]
    Create(Create),
    /// Add nodes to a cluster.
    #[command(subcommand)]
    Add(Add),
    /// Delete nodes, a cluster or an image registry.
    #[command(subcommand)]
    Delete(Delete),
    /// Manage the cluster's certificates.
    #[command(subcommand)]
    Certs(Certs),
    /// Prepare hosts, or install an image registry.
    #[command(subcommand)]
    Init(Init),
    /// Offline packages and images.
    #[command(subcommand)]
    Artifact(Artifact),
    /// Encrypt and decrypt files and strings with Ansible Vault (ansible-vault's commands).
    #[command(subcommand)]
    Vault(vault_cmd::VaultCommand),
    /// Print the version, git commit, build date, compiler and platform (JSON).
    Version {
        /// Print just the version number.
        #[arg(short, long)]
        short: bool,
    },
}

#[derive(Subcommand)]
enum Add {
    /// Add nodes to the cluster (playbooks/add_nodes.yaml). The nodes must be hosts of the
    /// inventory (-i): name their roles with --control-plane/--worker/--etcd, or put them in
    /// the groups yourself and give no flag (every node not installed yet is added).
    #[command(
        visible_alias = "node",
        after_help = "Example:\n  kk add nodes --worker node7 --etcd node8 -i inventory.yaml -c config.yaml --override"
    )]
    Nodes(Box<lifecycle::AddNodes>),
}

#[derive(Subcommand)]
enum Delete {
    /// Delete the cluster: Kubernetes on every node (playbooks/delete_cluster.yaml); asks
    /// first on a terminal.
    #[command(
        after_help = "Example:\n  kk delete cluster --all --with-data -i inventory.yaml -c config.yaml"
    )]
    Cluster(Box<lifecycle::Delete>),
    /// Drain and delete nodes and uninstall Kubernetes from them
    /// (playbooks/delete_nodes.yaml); asks first on a terminal. A delete that would leave no
    /// control plane node is refused.
    #[command(
        visible_alias = "node",
        after_help = "Example:\n  kk delete nodes node6 -i inventory.yaml -c config.yaml --override"
    )]
    Nodes(Box<lifecycle::DeleteNodes>),
    /// Delete the image registry kk installed (playbooks/delete_registry.yaml); asks first
    /// on a terminal.
    #[command(
        after_help = "Example:\n  kk delete registry --all -i inventory.yaml -c config.yaml"
    )]
    Registry(Box<lifecycle::Delete>),
}

#[derive(Subcommand)]
enum Certs {
    /// Renew the certificates of etcd, Kubernetes and the image registry
    /// (playbooks/certs_renew.yaml, tag certs).
    #[command(after_help = "Example:\n  kk certs renew -i inventory.yaml -c config.yaml")]
    Renew(Box<Builtin>),
}

/// The checks `kk precheck` can select (tags of playbooks/precheck.yaml).
const PRECHECKS: [&str; 10] = [
    "os",
    "kubernetes",
    "network",
    "etcd",
    "cri",
    "nfs",
    "image_registry",
    "storage",
    "storageclass",
    "artifact",
];

#[derive(Subcommand)]
enum Create {
    /// Create a cluster (playbooks/create_cluster.yaml); asks first on a terminal.
    Cluster(Box<CreateCluster>),
    /// Write a documented starting config for a Kubernetes version.
    Config {
        /// The Kubernetes version the config is for.
        #[arg(long, default_value = create::DEFAULT_KUBE_VERSION)]
        with_kubernetes: String,
        /// Write to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Write a documented starting inventory.
    Inventory {
        /// Write to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum Init {
    /// Initialise the operating system of every node (playbooks/init_os.yaml).
    Os(Box<Builtin>),
    /// Install an image registry on the image_registry hosts (playbooks/init_registry.yaml,
    /// tag image_registry).
    #[command(after_help = "Example:\n  kk init registry -i inventory.yaml -c config.yaml")]
    Registry(Box<Builtin>),
}

/// `kk create cluster`.
#[derive(Args)]
struct CreateCluster {
    /// Do not ask for confirmation.
    #[arg(short = 'y', long)]
    yes: bool,
    #[command(flatten)]
    builtin: Builtin,
}

#[derive(Subcommand)]
enum Artifact {
    /// Download everything the config needs and pack it into an offline package
    /// (playbooks/artifact_export.yaml).
    Export(Box<Builtin>),
    /// Pull the config's images into the work dir and/or push them to the image registry
    /// (playbooks/artifact_images.yaml, tags pull and push).
    #[command(
        after_help = "Example:\n  kk artifact images --pull -c config.yaml\n  kk artifact images --push -i inventory.yaml -c config.yaml"
    )]
    Images(Box<lifecycle::ArtifactImages>),
}

async fn run(
    playbook: PathBuf,
    common: &Common,
    preset: Preset,
    cfg: &ansible_cfg::AnsibleCfg,
) -> Result<i32, Error> {
    run_with(playbook, common, preset, cfg, |_| {}).await
}

/// [`run`], with a last change to the engine's options (`kk run`'s own flags).
async fn run_with(
    playbook: PathBuf,
    common: &Common,
    preset: Preset,
    cfg: &ansible_cfg::AnsibleCfg,
    tweak: impl FnOnce(&mut kk_engine::exec::RunOptions),
) -> Result<i32, Error> {
    let workdir = workdir_of(common);
    let mut opts = build_options(playbook, common, &preset, &workdir, cfg)?;
    tweak(&mut opts);
    let format = match common.output {
        OutputFormat::Text => Format::Text,
        OutputFormat::Json => Format::Json,
    };
    let output = Output::new(format, common.diff, common.verbose, Some(&workdir)).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!(
                "cannot create the run directory under {}: {}",
                workdir.display(),
                e
            ),
        )
    })?;
    init_diagnostics(common.verbose, output.run_log());
    let outcome = run_playbook(opts, Arc::new(output)).await?;
    Ok(outcome.exit_code)
}

/// From `-vvv` on, the engine's diagnostics (connections opened, commands sent, their
/// exit codes and timings; `-vvvv` adds trace level) go to stderr and to the run log.
/// Below that no subscriber is installed, so the output is exactly the events' text.
/// Installed once per process: a second run in the same process keeps the first.
fn init_diagnostics(verbose: u8, log: RunLog) {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::fmt::writer::MakeWriterExt;
    let level = match verbose {
        0..=2 => return,
        3 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_target(false)
        .with_writer((|| kk_engine::report::RedactedStderr).and(move || log.clone()))
        .try_init();
}

/// Runs one of the bundled playbooks (`playbooks/<name>.yaml`) with a built-in command's
/// options; without `-i` the bundled localhost inventory is used.
async fn run_builtin(name: &str, b: &Builtin, tags: Vec<String>) -> Result<i32, Error> {
    let plan = lifecycle::Plan {
        tags,
        ..lifecycle::Plan::default()
    };
    run_plan(name, b, plan).await
}

/// Runs a bundled playbook with a command's plan (tags, config values, group additions).
async fn run_plan(name: &str, b: &Builtin, plan: lifecycle::Plan) -> Result<i32, Error> {
    let root = bundle::extract(&workdir_of(&b.common))?;
    let mut preset = Preset {
        tags: plan.tags,
        config: plan.config,
        default_inventory: Some(root.join("builtin/inventory/localhost.yaml")),
        groups_add: plan.groups_add,
    };
    if let Some(v) = &b.with_kubernetes {
        preset
            .config
            .push(("kubernetes.kube_version", create::kube_version(v)?.into()));
    }
    if let Some(a) = &b.artifact {
        if !a.is_file() {
            return Err(options_error(format!(
                "the offline package {} does not exist",
                a.display()
            ))
            .help("give the file `kk artifact export` wrote (under <workdir>/artifact/)"));
        }
        preset.config.push((
            "download.artifact_file",
            absolute(a).display().to_string().into(),
        ));
    }
    let playbook = root.join("playbooks").join(format!("{}.yaml", name));
    // ansible.cfg is for `kk run`: the built-in commands keep their own defaults. Their
    // playbooks gather facts in many plays (as upstream's do); facts gathered once per host
    // serve the whole run (what they read does not change during it).
    let cfg = ansible_cfg::AnsibleCfg {
        gathering: Some("smart".into()),
        ..ansible_cfg::AnsibleCfg::default()
    };
    run(playbook, &b.common, preset, &cfg).await
}

/// Runs a future on a fresh runtime until it ends or the user interrupts it (exit 99).
fn block_on(job: impl std::future::Future<Output = Result<i32, Error>>) -> i32 {
    // Masters and secret files of earlier runs killed before they could clean up.
    kk_engine::connect::sweep_stale_runtime_dirs();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {}", e);
            return 1;
        }
    };
    let outcome = rt.block_on(async {
        tokio::select! {
            r = job => Some(r),
            _ = interrupted() => None,
        }
    });
    // Dropping the run's futures killed the commands it had started.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    kk_engine::connect::remove_runtime_dir();
    match outcome {
        Some(Ok(code)) => code,
        Some(Err(e)) => {
            eprint!("{}", e.render());
            e.exit_code()
        }
        None => {
            eprintln!("\ninterrupted: the run was stopped; commands it had started were killed");
            99
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn main() -> ExitCode {
    // kk is its own SSH askpass helper: print the password file ssh was given, nothing else.
    if let Ok(path) = std::env::var(kk_engine::connect::ssh::ASKPASS_ENV) {
        return match std::fs::read_to_string(&path) {
            Ok(pw) => {
                println!("{}", pw.trim_end_matches('\n'));
                ExitCode::SUCCESS
            }
            Err(_) => ExitCode::from(1),
        };
    }
    // A usage error exits 5 (Ansible's code for bad options; clap's own 2 means "a host
    // failed" here); --help and --version print and exit 0.
    let cli = match available(Cli::command())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 5 } else { 0 });
        }
    };
    let code = match cli.command {
        Command::Version { short } => {
            version::print(short);
            0
        }
        Command::Vault(v) => finish_code(vault_cmd::run(v)),
        Command::Adhoc(a) => block_on(async move { adhoc::run(&a).await }),
        Command::Run {
            playbook,
            common,
            flags,
        } => block_on(async move { playbook_cmd::run(playbook, &common, &flags).await }),
        Command::Precheck { checks, builtin } => {
            block_on(run_builtin("precheck", &builtin, checks))
        }
        Command::Create(Create::Cluster(c)) => {
            let question = lifecycle::create_question(&c.builtin);
            let plan = question.map(|q| lifecycle::Plan {
                playbook: "create_cluster",
                confirm: Some(q),
                ..lifecycle::Plan::default()
            });
            execute(&c.builtin, plan, c.yes)
        }
        Command::Init(Init::Os(b)) => block_on(run_builtin("init_os", &b, vec![])),
        Command::Init(Init::Registry(b)) => execute(&b, Ok(lifecycle::init_registry()), false),
        Command::Artifact(Artifact::Export(b)) => {
            block_on(run_builtin("artifact_export", &b, vec![]))
        }
        Command::Artifact(Artifact::Images(a)) => {
            execute(&a.builtin, Ok(lifecycle::artifact_images(&a)), false)
        }
        Command::Add(Add::Nodes(a)) => execute(&a.builtin, lifecycle::add_nodes(&a), false),
        Command::Delete(Delete::Nodes(d)) => {
            execute(&d.builtin, lifecycle::delete_nodes(&d), d.delete.yes)
        }
        Command::Delete(Delete::Cluster(d)) => {
            execute(&d.builtin, lifecycle::delete_cluster(&d), d.delete.yes)
        }
        Command::Delete(Delete::Registry(d)) => {
            execute(&d.builtin, lifecycle::delete_registry(&d), d.delete.yes)
        }
        Command::Certs(Certs::Renew(b)) => execute(&b, Ok(lifecycle::certs_renew()), false),
        Command::Create(Create::Config {
            with_kubernetes,
            output,
        }) => finish(create::config(&with_kubernetes, output.as_deref())),
        Command::Create(Create::Inventory { output }) => {
            finish(create::inventory(output.as_deref()))
        }
    };
    ExitCode::from(code as u8)
}

/// Runs a command's plan: its input checks already passed (or `plan` is their error), then
/// the confirmation, the playbook, and after a successful run the `--override` edit.
fn execute(b: &Builtin, plan: Result<lifecycle::Plan, Error>, yes: bool) -> i32 {
    let mut plan = match plan {
        Ok(p) => p,
        Err(e) => return finish(Err(e)),
    };
    // A --check run changes nothing: no question, and no inventory edit after it.
    let check = b.common.check;
    if let Some(q) = plan.confirm.take() {
        if !lifecycle::confirm(&q, yes || check) {
            eprintln!("cancelled: nothing was changed");
            return 1;
        }
    }
    let edit = plan.edit.take();
    let name = plan.playbook;
    let code = block_on(run_plan(name, b, plan));
    match edit {
        Some(edit) if check => {
            eprintln!(
                "--override: a --check run; {} was not changed",
                edit.path.display()
            );
            code
        }
        Some(edit) if code == 0 => finish(edit.write()),
        Some(edit) => {
            eprintln!(
                "--override: the run failed; {} was not changed",
                edit.path.display()
            );
            code
        }
        None => code,
    }
}

/// The commands of the bundled playbooks that are missing from this build are left out
/// of the command line (as unknown commands), so none fails for want of its playbook.
fn available(cli: clap::Command) -> clap::Command {
    const NEEDS: [(&str, &str, &str); 7] = [
        ("add", "nodes", "add_nodes"),
        ("delete", "cluster", "delete_cluster"),
        ("delete", "nodes", "delete_nodes"),
        ("delete", "registry", "delete_registry"),
        ("certs", "renew", "certs_renew"),
        ("init", "registry", "init_registry"),
        ("artifact", "images", "artifact_images"),
    ];
    let mut cli = cli;
    for parent in ["add", "delete", "certs", "init", "artifact"] {
        let missing: Vec<&str> = NEEDS
            .iter()
            .filter(|(p, _, book)| {
                *p == parent && bundle::file(&format!("playbooks/{}.yaml", book)).is_none()
            })
            .map(|(_, sub, _)| *sub)
            .collect();
        if missing.is_empty() {
            continue;
        }
        cli = cli.mut_subcommand(parent, |c| {
            let kept: Vec<clap::Command> = c
                .get_subcommands()
                .filter(|s| !missing.contains(&s.get_name()))
                .cloned()
                .collect();
            let mut pruned = clap::Command::new(parent)
                .subcommand_required(true)
                .arg_required_else_help(true)
                .hide(kept.is_empty())
                .subcommands(kept);
            if let Some(about) = c.get_about() {
                pruned = pruned.about(about.clone());
            }
            pruned
        });
    }
    // A replaced command loses its place in the help: keep the declaration order.
    let names: Vec<&'static str> = [
        "run", "adhoc", "precheck", "create", "add", "delete", "certs", "init", "artifact",
        "vault", "version",
    ]
    .into_iter()
    .filter(|n| cli.find_subcommand(n).is_some())
    .collect();
    for (i, n) in names.into_iter().enumerate() {
        cli = cli.mut_subcommand(n, |c| c.display_order(i));
    }
    cli
}

/// The exit code a command returned, or its error's (printed).
fn finish_code(r: Result<i32, Error>) -> i32 {
    match r {
        Ok(code) => code,
        Err(e) => {
            eprint!("{}", e.render());
            e.exit_code()
        }
    }
}

/// The exit code of a command that runs no playbook, printing its error if any.
fn finish(r: Result<(), Error>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprint!("{}", e.render());
            e.exit_code()
        }
    }
}
