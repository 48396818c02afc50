//! `kk`: the command line. It only parses options, builds a [`RunOptions`] and hands it
//! to the engine; every error is rendered by [`kk_engine::Error::render`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

mod bundle;
mod create;
mod inventory_edit;
mod lifecycle;
mod version;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use kk_engine::exec::{run_playbook, RunOptions, TagFilter};
use kk_engine::inventory::Inventory;
use kk_engine::report::{Format, Output, RunLog};
use kk_engine::vars::input::{apply_set, load_config, parse_extra_var};
use kk_engine::vars::VarMap;
use kk_engine::{Error, ErrorKind};

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
    },
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

/// Options of the commands that run a bundled playbook: `kk run`'s, plus these.
#[derive(Args)]
struct Builtin {
    #[command(flatten)]
    common: Common,
    /// Kubernetes version to install (sets `kubernetes.kube_version`, over the config's).
    #[arg(long)]
    with_kubernetes: Option<String>,
    /// Offline package made by `kk artifact export`: install from it, with no network.
    #[arg(short = 'a', long)]
    artifact: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Text,
    Json,
}

/// Options every playbook-running command takes.
#[derive(Args)]
struct Common {
    /// Inventory file (KubeKey `kind: Inventory` or Ansible YAML).
    #[arg(short, long, value_parser = existing_file)]
    inventory: Option<PathBuf>,
    /// Config file (`kind: Config`); each key of `spec` becomes a variable.
    #[arg(short, long, value_parser = existing_file)]
    config: Option<PathBuf>,
    /// Extra variables: `k=v`, a YAML/JSON mapping, or `@file.yaml` (repeatable).
    #[arg(short = 'e', long = "extra-vars")]
    extra_vars: Vec<String>,
    /// Override config values: `a.b[0].c=v` (repeatable, comma-separated).
    #[arg(long = "set")]
    set: Vec<String>,
    /// Only run tasks with these tags (comma-separated, repeatable).
    #[arg(short, long, value_delimiter = ',')]
    tags: Vec<String>,
    /// Skip tasks with these tags (comma-separated, repeatable).
    #[arg(long = "skip-tags", value_delimiter = ',')]
    skip_tags: Vec<String>,
    /// Limit the run to hosts matching this pattern.
    #[arg(short, long, value_parser = host_pattern)]
    limit: Option<String>,
    /// Report what would change, change nothing.
    #[arg(short = 'C', long)]
    check: bool,
    /// Show the differences in files that change.
    #[arg(short = 'D', long)]
    diff: bool,
    /// How many hosts run at once (1 to 10000).
    #[arg(short, long, default_value_t = 50, allow_negative_numbers = true, value_parser = forks)]
    forks: usize,
    /// Working directory for downloads, certificates and run records (default: ./kubekey).
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    output: OutputFormat,
    /// Refuse SSH hosts whose key is not already in `<workdir>/known_hosts`.
    #[arg(long)]
    ssh_strict: bool,
    /// More output (-v, -vv …).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

/// The most `--forks` takes: far above what one controller can drive at once (each fork
/// is an SSH session), and far below what the run's semaphore can count.
const MAX_FORKS: usize = 10_000;

/// `--forks`: a whole number from 1 to [`MAX_FORKS`].
fn forks(arg: &str) -> Result<usize, String> {
    match arg.trim().parse::<i128>() {
        Ok(n) if (1..=MAX_FORKS as i128).contains(&n) => Ok(n as usize),
        _ => Err(format!(
            "--forks takes a whole number from 1 to {}",
            MAX_FORKS
        )),
    }
}

/// `-i`/`-c`: the file must exist when the options are read, so a mistyped name is an
/// options error (exit 5) on every command, before anything is loaded or asked.
fn existing_file(arg: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(arg);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_dir() => Err(format!("{} is a directory, not a file", arg)),
        Ok(_) => Ok(p),
        Err(e) => Err(format!("cannot read {}: {}", arg, e)),
    }
}

/// `--limit`: a host pattern whose syntax is checked when the options are read (exit 5).
fn host_pattern(arg: &str) -> Result<String, String> {
    kk_engine::inventory::pattern::parse(arg)
        .map(|_| arg.to_string())
        .map_err(|e| e.message)
}

fn options_error(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Options, msg)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// What a command adds to `kk run`'s options: values forced into the config layer and
/// the inventory used when `-i` is not given.
#[derive(Default)]
struct Preset {
    /// `(dotted.path, value)` pairs set in the config, over the user's config and `--set`.
    config: Vec<(&'static str, serde_json::Value)>,
    /// Tags added to `--tags`.
    tags: Vec<String>,
    /// The inventory when `-i` is not given.
    default_inventory: Option<PathBuf>,
    /// `(group, host)` pairs added to the inventory for this run.
    groups_add: Vec<(String, String)>,
}

/// Sets `a.b.c` in a variable map, creating the mappings on the way.
fn set_path(map: &mut VarMap, path: &str, value: serde_json::Value) {
    let mut keys = path.rsplit('.');
    let mut value = value;
    let last = keys.next().unwrap_or(path);
    let mut leaf = serde_json::Map::new();
    leaf.insert(last.to_string(), value);
    value = serde_json::Value::Object(leaf);
    for k in keys {
        let mut m = serde_json::Map::new();
        m.insert(k.to_string(), value);
        value = serde_json::Value::Object(m);
    }
    if let serde_json::Value::Object(m) = value {
        let over: VarMap = m.into_iter().collect();
        kk_engine::vars::merge_maps(map, &over);
    }
}

fn build_options(
    playbook: PathBuf,
    c: &Common,
    preset: &Preset,
    workdir: &Path,
) -> Result<RunOptions, Error> {
    if !playbook.is_file() {
        return Err(
            options_error(format!("playbook {} not found", playbook.display()))
                .help("give the path of a playbook YAML file"),
        );
    }
    let inventory_path = c
        .inventory
        .clone()
        .or_else(|| preset.default_inventory.clone());
    let mut inventory = match &inventory_path {
        Some(p) => Inventory::load(p)?,
        None => Inventory::empty(),
    };
    for (group, host) in &preset.groups_add {
        inventory.add_to_group(host, group)?;
    }
    let mut config = match &c.config {
        Some(p) => load_config(p)?,
        None => VarMap::new(),
    };
    config.insert("work_dir".into(), workdir.display().to_string().into());
    for s in &c.set {
        apply_set(&mut config, s)?;
    }
    for (path, value) in &preset.config {
        set_path(&mut config, path, value.clone());
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut extra = VarMap::new();
    for e in &c.extra_vars {
        let vars = parse_extra_var(e, &cwd)?;
        kk_engine::vars::merge_maps(&mut extra, &vars);
    }
    if let Some(limit) = &c.limit {
        // Ansible's words when the limit leaves nothing to run on (exit 1, as Ansible).
        let matched = inventory
            .select(limit)
            .map_err(|e| options_error(format!("--limit: {}", e.message)))?;
        if matched.is_empty() {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!(
                    "--limit `{}` matches no host: Specified inventory, host pattern and/or --limit leaves us with no hosts to target.",
                    limit
                ),
            )
            .help(format!(
                "hosts of the inventory: {}",
                match inventory.host_names() {
                    h if h.is_empty() => "none".to_string(),
                    h => h.join(", "),
                }
            )));
        }
    }
    let mut only = c.tags.clone();
    only.extend(preset.tags.iter().cloned());
    Ok(RunOptions {
        playbook,
        inventory,
        config,
        extra_vars: extra,
        tags: TagFilter {
            only,
            skip: c.skip_tags.clone(),
        },
        limit: c.limit.clone(),
        check: c.check,
        diff: c.diff,
        forks: c.forks,
        roles_path: Vec::new(),
        inventory_path,
        verbosity: c.verbose,
        workdir: workdir.to_path_buf(),
        ssh_strict: c.ssh_strict,
    })
}

fn workdir_of(c: &Common) -> PathBuf {
    absolute(c.workdir.as_deref().unwrap_or(Path::new("kubekey")))
}

async fn run(playbook: PathBuf, common: &Common, preset: Preset) -> Result<i32, Error> {
    let workdir = workdir_of(common);
    let opts = build_options(playbook, common, &preset, &workdir)?;
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
        .with_writer(std::io::stderr.and(move || log.clone()))
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
    run(playbook, &b.common, preset).await
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
        Command::Run { playbook, common } => block_on(run(playbook, &common, Preset::default())),
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
        "run", "precheck", "create", "add", "delete", "certs", "init", "artifact", "version",
    ]
    .into_iter()
    .filter(|n| cli.find_subcommand(n).is_some())
    .collect();
    for (i, n) in names.into_iter().enumerate() {
        cli = cli.mut_subcommand(n, |c| c.display_order(i));
    }
    cli
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
