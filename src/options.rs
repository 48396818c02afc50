//! The options of the commands that run a playbook (`kk run` and the built-in commands),
//! and how they become the engine's [`RunOptions`].

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use kk_engine::connect::ConnectDefaults;
use kk_engine::exec::{Gathering, PlayDefaults, RunOptions, TagFilter};

use crate::ansible_cfg::AnsibleCfg;
use kk_engine::inventory::Inventory;
use kk_engine::vars::input::{apply_set, load_config, parse_extra_var};
use kk_engine::vars::VarMap;
use kk_engine::{Error, ErrorKind};

/// Options of the commands that run a bundled playbook: `kk run`'s, plus these.
#[derive(Args)]
pub(crate) struct Builtin {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Kubernetes version to install (sets `kubernetes.kube_version`, over the config's).
    #[arg(long)]
    pub(crate) with_kubernetes: Option<String>,
    /// Offline package made by `kk artifact export`: install from it, with no network.
    #[arg(short = 'a', long)]
    pub(crate) artifact: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum OutputFormat {
    Text,
    Json,
}

/// Options every playbook-running command takes.
#[derive(Args, Clone)]
pub(crate) struct Common {
    /// Inventory: a file (KubeKey `kind: Inventory`, Ansible YAML or INI), a directory of
    /// them, or hosts separated by commas (`h1,h2,`; one host: `h1,`). Repeatable: merged
    /// in order.
    #[arg(short, long, value_parser = inventory_source)]
    pub(crate) inventory: Vec<String>,
    /// Config file (`kind: Config`); each key of `spec` becomes a variable.
    #[arg(short, long, value_parser = existing_file)]
    pub(crate) config: Option<PathBuf>,
    /// Extra variables: `k=v`, a YAML/JSON mapping, or `@file.yaml` (repeatable).
    #[arg(short = 'e', long = "extra-vars")]
    pub(crate) extra_vars: Vec<String>,
    /// Override config values: `a.b[0].c=v` (repeatable, comma-separated).
    #[arg(long = "set")]
    pub(crate) set: Vec<String>,
    /// Only run tasks with these tags (comma-separated, repeatable).
    #[arg(short, long, value_delimiter = ',')]
    pub(crate) tags: Vec<String>,
    /// Skip tasks with these tags (comma-separated, repeatable).
    #[arg(long = "skip-tags", value_delimiter = ',')]
    pub(crate) skip_tags: Vec<String>,
    /// Limit the run to hosts matching this pattern.
    #[arg(short, long, value_parser = host_pattern)]
    pub(crate) limit: Option<String>,
    /// Report what would change, change nothing.
    #[arg(short = 'C', long)]
    pub(crate) check: bool,
    /// Show the differences in files that change.
    #[arg(short = 'D', long)]
    pub(crate) diff: bool,
    /// How many hosts run at once (1 to 10000; default: `forks` of ansible.cfg, else 50).
    #[arg(short, long, allow_negative_numbers = true, value_parser = forks)]
    pub(crate) forks: Option<usize>,
    /// Working directory for downloads, certificates and run records (default: ./kubekey).
    #[arg(long)]
    pub(crate) workdir: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub(crate) output: OutputFormat,
    /// Refuse SSH hosts whose key is not already in `<workdir>/known_hosts`.
    #[arg(long)]
    pub(crate) ssh_strict: bool,
    /// More output (-v, -vv …).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    #[command(flatten)]
    pub(crate) vault: crate::vault_cmd::VaultArgs,
    #[command(flatten)]
    pub(crate) conn: ConnFlags,
}

/// Ansible's connection and privilege flags (`ansible-playbook -u -b -K …`); each is a
/// default that the play's keywords and the hosts' variables override, as in Ansible.
#[derive(Args, Default, Clone)]
pub(crate) struct ConnFlags {
    /// Log in as this user (a host's `ansible_user` wins).
    #[arg(short = 'u', long = "user", help_heading = "Connection")]
    pub(crate) user: Option<String>,
    /// Private key file for SSH (a host's `ansible_ssh_private_key_file` wins).
    #[arg(
        long = "private-key",
        visible_alias = "key-file",
        help_heading = "Connection"
    )]
    pub(crate) private_key: Option<PathBuf>,
    /// Ask for the SSH login password (on a terminal, not echoed).
    #[arg(short = 'k', long = "ask-pass", help_heading = "Connection")]
    pub(crate) ask_pass: bool,
    /// SSH connect timeout in seconds (a host's `ansible_timeout` wins).
    #[arg(short = 'T', long = "timeout", help_heading = "Connection")]
    pub(crate) timeout: Option<u64>,
    /// Run tasks as another user (sudo) unless a play or task says `become: false`.
    #[arg(short = 'b', long = "become", help_heading = "Privilege escalation")]
    pub(crate) become_: bool,
    /// The user to become (default root).
    #[arg(long, help_heading = "Privilege escalation")]
    pub(crate) become_user: Option<String>,
    /// How to become it (sudo).
    #[arg(long, help_heading = "Privilege escalation")]
    pub(crate) become_method: Option<String>,
    /// Ask for the become (sudo) password (on a terminal, not echoed).
    #[arg(
        short = 'K',
        long = "ask-become-pass",
        help_heading = "Privilege escalation"
    )]
    pub(crate) ask_become_pass: bool,
}

/// The most `--forks` takes: far above what one controller can drive at once (each fork
/// is an SSH session), and far below what the run's semaphore can count.
const MAX_FORKS: usize = 10_000;

/// kk's forks when neither `--forks` nor ansible.cfg says (Ansible's is 5; kk drives more
/// hosts at once cheaply, one multiplexed SSH master each).
const DEFAULT_FORKS: usize = 50;

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

/// `-i`: an inventory file or directory that exists, or a comma-separated host list.
fn inventory_source(arg: &str) -> Result<String, String> {
    if kk_engine::inventory::is_host_list(arg) {
        return Ok(arg.to_string());
    }
    match std::fs::metadata(arg) {
        Ok(_) => Ok(arg.to_string()),
        Err(e) => Err(format!("cannot read {}: {}", arg, e)),
    }
}

impl Common {
    /// The one inventory file of the commands that read and edit it (the cluster
    /// commands): `-i` given once, naming a file.
    pub(crate) fn inventory_file(&self) -> Result<Option<PathBuf>, Error> {
        match self.inventory.as_slice() {
            [] => Ok(None),
            [one] if Path::new(one).is_file() => Ok(Some(PathBuf::from(one))),
            _ => Err(options_error(format!(
                "this command takes one inventory file, not {}",
                self.inventory.join(" ")
            ))
            .help("give the cluster's inventory file once: -i inventory.yaml")),
        }
    }
}

/// `--limit`: a host pattern whose syntax is checked when the options are read (exit 5).
fn host_pattern(arg: &str) -> Result<String, String> {
    kk_engine::inventory::pattern::parse(arg)
        .map(|_| arg.to_string())
        .map_err(|e| e.message)
}

pub(crate) fn options_error(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Options, msg)
}

pub(crate) fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// What a command adds to `kk run`'s options: values forced into the config layer and
/// the inventory used when `-i` is not given.
#[derive(Default)]
pub(crate) struct Preset {
    /// `(dotted.path, value)` pairs set in the config, over the user's config and `--set`.
    pub(crate) config: Vec<(&'static str, serde_json::Value)>,
    /// Tags added to `--tags`.
    pub(crate) tags: Vec<String>,
    /// The inventory when `-i` is not given.
    pub(crate) default_inventory: Option<PathBuf>,
    /// `(group, host)` pairs added to the inventory for this run.
    pub(crate) groups_add: Vec<(String, String)>,
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

pub(crate) fn build_options(
    playbook: PathBuf,
    c: &Common,
    preset: &Preset,
    workdir: &Path,
    cfg: &AnsibleCfg,
) -> Result<RunOptions, Error> {
    if !playbook.is_file() {
        return Err(
            options_error(format!("playbook {} not found", playbook.display()))
                .help("give the path of a playbook YAML file"),
        );
    }
    build_run_options(playbook, c, preset, workdir, cfg)
}

/// [`build_options`] without a playbook file (`kk adhoc` builds its play in memory).
pub(crate) fn build_run_options(
    playbook: PathBuf,
    c: &Common,
    preset: &Preset,
    workdir: &Path,
    cfg: &AnsibleCfg,
) -> Result<RunOptions, Error> {
    // Vault passwords first: the inventory and every file after it may be vaulted.
    c.vault.install()?;
    // `inventory_file`/`inventory_dir` of the play: the one file given; several
    // sources, directories and host lists set them per host.
    // `-i`, else ansible.cfg's `inventory` (every source it lists that exists).
    let sources = if c.inventory.is_empty() {
        cfg_inventory(cfg)
    } else {
        c.inventory.clone()
    };
    let inventory_path = match sources.as_slice() {
        [] => preset.default_inventory.clone(),
        [one] if Path::new(one).is_file() => Some(PathBuf::from(one)),
        _ => None,
    };
    let mut inventory = match &inventory_path {
        _ if !sources.is_empty() => {
            Inventory::load_sources_with(&sources, &cfg.inventory_options())?
        }
        Some(p) => Inventory::load(p)?,
        None => Inventory::empty(),
    };
    // An inventory script's standard error, shown as Ansible shows it.
    for n in inventory.take_notices() {
        eprintln!("[ERROR]: {}", n);
    }
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
    let (defaults, connect) = play_defaults(&c.conn, cfg)?;
    let mut only = c.tags.clone();
    only.extend(preset.tags.iter().cloned());
    kk_engine::allow_broken_conditionals(cfg.allow_broken_conditionals);
    // Where modules written in Python are found, for names kk does not implement.
    kk_engine::configure_python_modules(kk_engine::PythonPaths {
        library: cfg.library.clone(),
        collections: cfg.collections_path.clone(),
    });
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
        forks: c.forks.or(cfg.forks).unwrap_or(DEFAULT_FORKS),
        roles_path: cfg.roles_path.clone(),
        inventory_path,
        verbosity: c.verbose,
        workdir: workdir.to_path_buf(),
        ssh_strict: c.ssh_strict,
        defaults,
        connect,
    })
}

pub(crate) fn workdir_of(c: &Common) -> PathBuf {
    absolute(c.workdir.as_deref().unwrap_or(Path::new("kubekey")))
}

/// The sources of ansible.cfg's `inventory` that exist (Ansible skips missing ones with
/// a warning).
fn cfg_inventory(cfg: &AnsibleCfg) -> Vec<String> {
    for p in cfg.inventory.iter().filter(|p| !p.exists()) {
        eprintln!(
            "[WARNING]: Unable to parse {} as an inventory source (from ansible.cfg)",
            p.display()
        );
    }
    cfg.inventory
        .iter()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect()
}

/// The flags over `ANSIBLE_*` over ansible.cfg: what every play starts with, and how hosts
/// are reached when their variables do not say. Passwords are asked here (`-k`, `-K`, or
/// `ask_pass`/`become_ask_pass` in ansible.cfg).
pub(crate) fn play_defaults(
    f: &ConnFlags,
    cfg: &AnsibleCfg,
) -> Result<(PlayDefaults, ConnectDefaults), Error> {
    let defaults = PlayDefaults {
        become_: if f.become_ { Some(true) } else { cfg.become_ },
        become_user: f.become_user.clone().or_else(|| cfg.become_user.clone()),
        become_method: f
            .become_method
            .clone()
            .or_else(|| cfg.become_method.clone()),
        become_flags: cfg.become_flags.clone(),
        become_password: None,
        gathering: match &cfg.gathering {
            None => Gathering::default(),
            Some(g) => Gathering::parse(g).ok_or_else(|| {
                options_error(format!(
                    "gathering = {}: Invalid value; expected one of implicit, explicit, smart",
                    g
                ))
                .help("set `gathering` in ansible.cfg ([defaults]) or ANSIBLE_GATHERING to implicit, explicit or smart")
            })?,
        },
        ..PlayDefaults::default()
    };
    defaults.check().map_err(|m| {
        options_error(format!("--become-method: {}", m)).help("use --become-method sudo or su")
    })?;
    let mut connect = ConnectDefaults {
        user: f.user.clone().or_else(|| cfg.remote_user.clone()),
        private_key: f
            .private_key
            .as_deref()
            .map(absolute)
            .or_else(|| cfg.private_key_file.clone()),
        password: None,
        timeout: f.timeout.or(cfg.timeout),
        ssh_args: cfg.ssh_args.clone(),
        host_key_checking: cfg.host_key_checking,
    };
    let mut defaults = defaults;
    if f.ask_pass || cfg.ask_pass == Some(true) {
        connect.password = Some(crate::prompt::secret("SSH password: ", "-k/--ask-pass")?);
    }
    if f.ask_become_pass || cfg.become_ask_pass == Some(true) {
        // As Ansible: an empty answer reuses the SSH password.
        let p = crate::prompt::secret(
            if connect.password.is_some() {
                "BECOME password[defaults to SSH password]: "
            } else {
                "BECOME password: "
            },
            "-K/--ask-become-pass",
        )?;
        defaults.become_password = match (p.is_empty(), &connect.password) {
            (true, Some(ssh)) => Some(ssh.clone()),
            _ => Some(p),
        };
    }
    Ok((defaults, connect))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags over ansible.cfg (and `ANSIBLE_*`, already folded into it), each setting
    /// on its own; what neither sets stays unset for the play and host to decide.
    #[test]
    fn flags_over_the_config() {
        let cfg = AnsibleCfg {
            become_: Some(false),
            become_user: Some("cfg-user".into()),
            remote_user: Some("cfg-login".into()),
            timeout: Some(30),
            ssh_args: Some("-o A=1".into()),
            host_key_checking: Some(false),
            ..AnsibleCfg::default()
        };
        let flags = ConnFlags {
            become_: true,
            user: Some("cli-login".into()),
            ..ConnFlags::default()
        };
        let (d, c) = play_defaults(&flags, &cfg).unwrap();
        assert_eq!(d.become_, Some(true));
        assert_eq!(d.become_user.as_deref(), Some("cfg-user"));
        assert_eq!(d.become_method, None);
        assert_eq!(c.user.as_deref(), Some("cli-login"));
        assert_eq!(c.timeout, Some(30));
        assert_eq!(c.ssh_args.as_deref(), Some("-o A=1"));
        assert_eq!(c.host_key_checking, Some(false));
        // Without -b the file's `become = False` stands.
        let (d, _) = play_defaults(&ConnFlags::default(), &cfg).unwrap();
        assert_eq!(d.become_, Some(false));
        // A become method kk does not have is an options error.
        let bad = ConnFlags {
            become_method: Some("pbrun".into()),
            ..ConnFlags::default()
        };
        let e = play_defaults(&bad, &AnsibleCfg::default()).unwrap_err();
        assert_eq!(e.exit_code(), 5);
        assert!(e.message.contains("pbrun"), "{}", e.message);
    }
}
