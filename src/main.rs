//! `kk`: the command line. It only parses options, builds a [`RunOptions`] and hands it
//! to the engine; every error is rendered by [`kk_engine::Error::render`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};
use kk_engine::exec::{run_playbook, RunOptions, TagFilter};
use kk_engine::inventory::Inventory;
use kk_engine::report::{Format, Output};
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
    /// Print the version.
    Version,
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
    #[arg(short, long)]
    inventory: Option<PathBuf>,
    /// Config file (`kind: Config`); each key of `spec` becomes a variable.
    #[arg(short, long)]
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
    #[arg(short, long)]
    limit: Option<String>,
    /// Report what would change, change nothing.
    #[arg(short = 'C', long)]
    check: bool,
    /// Show the differences in files that change.
    #[arg(short = 'D', long)]
    diff: bool,
    /// How many hosts run at once.
    #[arg(short, long, default_value_t = 50)]
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

fn build_options(playbook: PathBuf, c: &Common) -> Result<(RunOptions, PathBuf), Error> {
    if !playbook.is_file() {
        return Err(
            options_error(format!("playbook {} not found", playbook.display()))
                .help("give the path of a playbook YAML file"),
        );
    }
    let inventory = match &c.inventory {
        Some(p) => Inventory::load(p)?,
        None => Inventory::empty(),
    };
    let workdir = absolute(c.workdir.as_deref().unwrap_or(Path::new("kubekey")));
    let mut config = match &c.config {
        Some(p) => load_config(p)?,
        None => VarMap::new(),
    };
    config.insert("work_dir".into(), workdir.display().to_string().into());
    for s in &c.set {
        apply_set(&mut config, s)?;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut extra = VarMap::new();
    for e in &c.extra_vars {
        let vars = parse_extra_var(e, &cwd)?;
        kk_engine::vars::merge_maps(&mut extra, &vars);
    }
    if c.forks == 0 {
        return Err(options_error("--forks must be at least 1"));
    }
    Ok((
        RunOptions {
            playbook,
            inventory,
            config,
            extra_vars: extra,
            tags: TagFilter {
                only: c.tags.clone(),
                skip: c.skip_tags.clone(),
            },
            limit: c.limit.clone(),
            check: c.check,
            diff: c.diff,
            forks: c.forks,
            roles_path: Vec::new(),
            inventory_path: c.inventory.clone(),
            verbosity: c.verbose,
            workdir: workdir.clone(),
            ssh_strict: c.ssh_strict,
        },
        workdir,
    ))
}

async fn run(playbook: PathBuf, common: Box<Common>) -> Result<i32, Error> {
    let (opts, workdir) = build_options(playbook, &common)?;
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
    let outcome = run_playbook(opts, Arc::new(output)).await?;
    Ok(outcome.exit_code)
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
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Version => {
            println!("kk {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Command::Run { playbook, common } => {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start the runtime: {}", e);
                    return ExitCode::from(1);
                }
            };
            let outcome = rt.block_on(async {
                tokio::select! {
                    r = run(playbook, common) => Some(r),
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
                    eprintln!(
                        "\ninterrupted: the run was stopped; commands it had started were killed"
                    );
                    99
                }
            }
        }
    };
    ExitCode::from(code as u8)
}
