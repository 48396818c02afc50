//! `kk vault …` (ansible-vault's commands) and the vault options every playbook command
//! takes. The files and strings it writes are ansible-vault's, byte for byte in layout, so
//! either tool opens what the other wrote.

use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use kk_engine::vault::{self, Keyring, Secret, Sources};
use kk_engine::{Error, ErrorKind};

/// The vault options of `kk run` and `kk vault` (ansible-playbook's and ansible-vault's).
#[derive(Args, Clone, Default)]
pub(crate) struct VaultArgs {
    /// A vault password: `[label@]source`, source a file, an executable printing it, or
    /// `prompt` (repeatable; tried in order).
    #[arg(long = "vault-id")]
    pub(crate) vault_id: Vec<String>,
    /// A file holding the vault password, or an executable printing it (repeatable).
    #[arg(long = "vault-password-file", visible_alias = "vault-pass-file")]
    pub(crate) vault_password_file: Vec<PathBuf>,
    /// Ask for the vault password on the terminal.
    #[arg(
        short = 'J',
        long = "ask-vault-pass",
        visible_alias = "ask-vault-password",
        conflicts_with = "vault_password_file"
    )]
    pub(crate) ask_vault_pass: bool,
}

impl VaultArgs {
    fn sources(&self) -> Sources {
        Sources {
            vault_ids: self.vault_id.clone(),
            password_files: self.vault_password_file.clone(),
            ask: self.ask_vault_pass,
        }
    }

    /// Loads the passwords for a playbook run and installs them for every file kk loads
    /// (no prompt unless asked for, as ansible-playbook).
    pub(crate) fn install(&self) -> Result<(), Error> {
        vault::install(vault::load_secrets(&self.sources(), false, false)?);
        Ok(())
    }
}

/// `kk vault`'s commands.
#[derive(Subcommand)]
pub(crate) enum VaultCommand {
    /// Create a new encrypted file in $EDITOR.
    Create {
        /// The file to create.
        file: PathBuf,
        #[command(flatten)]
        enc: EncryptId,
        /// Open the editor even when standard output is not a terminal.
        #[arg(long)]
        skip_tty_check: bool,
        #[command(flatten)]
        vault: VaultArgs,
    },
    /// Decrypt files (or standard input to standard output).
    Decrypt {
        /// Files to decrypt in place (`-` or none: standard input).
        files: Vec<String>,
        #[command(flatten)]
        out: OutputArg,
        #[command(flatten)]
        vault: VaultArgs,
    },
    /// Edit an encrypted file in $EDITOR; it is encrypted again when the editor ends.
    Edit {
        /// The files to edit.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        enc: EncryptId,
        #[command(flatten)]
        vault: VaultArgs,
    },
    /// Print the plaintext of encrypted files.
    View {
        /// The files to show.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        vault: VaultArgs,
    },
    /// Encrypt files (or standard input to standard output).
    Encrypt {
        /// Files to encrypt in place (`-` or none: standard input).
        files: Vec<String>,
        #[command(flatten)]
        out: OutputArg,
        #[command(flatten)]
        enc: EncryptId,
        #[command(flatten)]
        vault: VaultArgs,
    },
    /// Encrypt strings into `!vault` YAML values.
    #[command(name = "encrypt_string")]
    EncryptString {
        /// Strings to encrypt (`-` or none: standard input).
        strings: Vec<String>,
        /// Ask for the string on the terminal.
        #[arg(short = 'p', long = "prompt")]
        prompt: bool,
        /// Echo the string typed at the prompt.
        #[arg(long)]
        show_input: bool,
        /// The variable name of each string, in order (repeatable).
        #[arg(short = 'n', long = "name")]
        name: Vec<String>,
        /// The variable name of the string read from standard input.
        #[arg(long)]
        stdin_name: Option<String>,
        #[command(flatten)]
        out: OutputArg,
        #[command(flatten)]
        enc: EncryptId,
        #[command(flatten)]
        vault: VaultArgs,
    },
    /// Encrypt files again with a new password.
    Rekey {
        /// The files to re-encrypt.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The new password's file.
        #[arg(long, conflicts_with = "new_vault_id")]
        new_vault_password_file: Option<PathBuf>,
        /// The new vault id (`label@source`).
        #[arg(long)]
        new_vault_id: Option<String>,
        #[command(flatten)]
        enc: EncryptId,
        #[command(flatten)]
        vault: VaultArgs,
    },
}

/// `--output`.
#[derive(Args)]
pub(crate) struct OutputArg {
    /// Write to this file instead (`-`: standard output); one input file at most.
    #[arg(long)]
    output: Option<String>,
}

/// `--encrypt-vault-id`.
#[derive(Args)]
pub(crate) struct EncryptId {
    /// The vault id to encrypt with (required when several are given).
    #[arg(long)]
    encrypt_vault_id: Option<String>,
}

fn options(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Options, msg)
}

fn runtime(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, msg).with_code("kk::vault")
}

/// Runs a `kk vault` command; returns the exit code.
pub(crate) fn run(cmd: VaultCommand) -> Result<i32, Error> {
    // Plaintext files kk writes are for the user alone (ansible-vault's umask).
    vault::private_umask();
    match cmd {
        VaultCommand::Create {
            file,
            enc,
            skip_tty_check,
            vault,
        } => {
            let secret = encrypt_secret(&vault, &enc)?;
            if file.is_file() {
                return Err(runtime(format!(
                    "{} exists, please use 'edit' instead",
                    file.display()
                )));
            }
            if !std::io::stdout().is_terminal() && !skip_tty_check {
                return Err(options("not a tty, editor cannot be opened")
                    .help("give --skip-tty-check to open the editor anyway"));
            }
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                if !dir.exists() {
                    eprintln!("[WARNING]: {} does not exist, creating...", dir.display());
                    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
                }
            }
            edit_helper(&file, &secret, None)
        }
        VaultCommand::Edit { files, vault, .. } => {
            let ring = decrypt_ring(&vault)?;
            for f in files {
                let f = real(&f);
                let data = read_input(&f.display().to_string())?;
                let (plain, used) = ring
                    .decrypt(&data)
                    .map_err(|e| runtime(format!("{} for {}", e, f.display())))?;
                // Encrypted again with the secret that opened it, under the header's label.
                let mut secret = used.clone();
                secret.label = header_label(&data);
                edit_helper(&f, &secret, Some(plain))?;
            }
            Ok(0)
        }
        VaultCommand::View { files, vault } => {
            let ring = decrypt_ring(&vault)?;
            let mut text = String::new();
            for f in files {
                let data = read_input(&f.display().to_string())?;
                let (plain, _) = ring
                    .decrypt(&data)
                    .map_err(|e| runtime(format!("{} for {}", e, f.display())))?;
                text.push_str(&String::from_utf8_lossy(&plain));
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            page(&text)?;
            Ok(0)
        }
        VaultCommand::Decrypt { files, out, vault } => {
            let ring = decrypt_ring(&vault)?;
            let files = inputs(files, &out)?;
            for f in &files {
                let data = read_input(f)?;
                let (plain, _) = ring
                    .decrypt(&data)
                    .map_err(|e| runtime(format!("{} for {}", e, shown(f))))?;
                write_output(out.output.as_deref().unwrap_or(f), &plain, false)?;
            }
            if std::io::stdout().is_terminal() {
                eprintln!("Decryption successful");
            }
            Ok(0)
        }
        VaultCommand::Encrypt {
            files,
            out,
            enc,
            vault,
        } => {
            let secret = encrypt_secret(&vault, &enc)?;
            let files = inputs(files, &out)?;
            for f in &files {
                let data = read_input(f)?;
                let text = encrypt_with(&data, &secret)?;
                write_output(out.output.as_deref().unwrap_or(f), &text, true)?;
            }
            if std::io::stdout().is_terminal() {
                eprintln!("Encryption successful");
            }
            Ok(0)
        }
        VaultCommand::EncryptString {
            strings,
            prompt,
            show_input,
            name,
            stdin_name,
            out,
            enc,
            vault,
        } => encrypt_string(EncryptString {
            strings,
            prompt,
            show_input,
            names: name,
            stdin_name,
            output: out.output,
            enc,
            vault,
        }),
        VaultCommand::Rekey {
            files,
            new_vault_password_file,
            new_vault_id,
            enc,
            vault,
        } => {
            let ring = decrypt_ring(&vault)?;
            let encrypt_id = enc
                .encrypt_vault_id
                .clone()
                .or_else(|| std::env::var("ANSIBLE_VAULT_ENCRYPT_IDENTITY").ok())
                .filter(|s| !s.is_empty());
            let new_sources = Sources {
                vault_ids: new_vault_id.into_iter().collect(),
                password_files: new_vault_password_file.into_iter().collect(),
                ask: vault.ask_vault_pass,
            };
            let new_ring = load_new(&new_sources)?;
            if new_ring.secrets.is_empty() {
                return Err(options(
                    "A new vault password is required to use Ansible's Vault rekey",
                ));
            }
            let new_secret = pick(&new_ring, encrypt_id.as_deref())?;
            for f in files {
                let f = real(&f);
                let data = read_input(&f.display().to_string())?;
                let (plain, _) = ring
                    .decrypt(&data)
                    .map_err(|e| runtime(format!("{} for {}", e, f.display())))?;
                let text = encrypt_with(&plain, &new_secret)?;
                let mode = std::fs::metadata(&f).map(|m| m.permissions().mode()).ok();
                write_output(&f.display().to_string(), &text, false)?;
                if let Some(mode) = mode {
                    let _ = std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode));
                }
            }
            eprintln!("Rekey successful");
            Ok(0)
        }
    }
}

/// Loads the passwords of an encrypting command: asks twice when nothing else gives one.
fn load_new(sources: &Sources) -> Result<Keyring, Error> {
    vault::load_secrets(sources, true, true)
}

/// The secret an encrypting command uses: the one of `--encrypt-vault-id`, or the only one.
fn encrypt_secret(args: &VaultArgs, enc: &EncryptId) -> Result<Secret, Error> {
    let encrypt_id = enc
        .encrypt_vault_id
        .clone()
        .or_else(|| std::env::var("ANSIBLE_VAULT_ENCRYPT_IDENTITY").ok())
        .filter(|s| !s.is_empty());
    let ring = load_new(&args.sources())?;
    if ring.secrets.len() > 1 && encrypt_id.is_none() {
        let ids: Vec<&str> = ring.secrets.iter().map(|s| s.label.as_str()).collect();
        return Err(options(format!(
            "The vault-ids {} are available to encrypt. Specify the vault-id to encrypt with --encrypt-vault-id",
            ids.join(",")
        )));
    }
    if ring.secrets.is_empty() {
        return Err(options(
            "A vault password is required to use Ansible's Vault",
        ));
    }
    pick(&ring, encrypt_id.as_deref())
}

fn pick(ring: &Keyring, id: Option<&str>) -> Result<Secret, Error> {
    match id {
        Some(id) => ring
            .secrets
            .iter()
            .find(|s| s.label == id)
            .cloned()
            .ok_or_else(|| {
                let known: Vec<&str> = ring.secrets.iter().map(|s| s.label.as_str()).collect();
                runtime(format!(
                    "Did not find a match for --encrypt-vault-id={} in the known vault-ids {:?}",
                    id, known
                ))
            }),
        None => ring
            .secrets
            .first()
            .cloned()
            .ok_or_else(|| options("A vault password is required to use Ansible's Vault")),
    }
}

/// The passwords of a decrypting command (a prompt when none is given).
fn decrypt_ring(args: &VaultArgs) -> Result<Keyring, Error> {
    let ring = vault::load_secrets(&args.sources(), false, true)?;
    if ring.secrets.is_empty() {
        return Err(options(
            "A vault password is required to use Ansible's Vault",
        ));
    }
    Ok(ring)
}

/// The label of a vaulted text's header (`default` for 1.1).
fn header_label(data: &[u8]) -> String {
    let first = data.split(|b| *b == b'\n').next().unwrap_or(b"");
    String::from_utf8_lossy(first)
        .trim()
        .split(';')
        .nth(3)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| vault::DEFAULT_LABEL.to_string())
}

fn encrypt_with(data: &[u8], secret: &Secret) -> Result<Vec<u8>, Error> {
    if vault::is_encrypted(data) {
        return Err(runtime("input is already encrypted"));
    }
    vault::encrypt(data, secret.password_bytes(), Some(&secret.label))
        .map_err(|e| runtime(format!("cannot get random bytes for the salt: {}", e)))
}

/// The inputs of encrypt/decrypt: standard input when none; `--output` takes one input.
fn inputs(files: Vec<String>, out: &OutputArg) -> Result<Vec<String>, Error> {
    if out.output.is_some() && files.len() > 1 {
        return Err(options(
            "At most one input file may be used with the --output option",
        ));
    }
    if files.is_empty() {
        if std::io::stdin().is_terminal() {
            eprintln!("Reading input from stdin");
        }
        return Ok(vec!["-".into()]);
    }
    Ok(files
        .into_iter()
        .map(|f| {
            if f == "-" {
                f
            } else {
                real(Path::new(&f)).display().to_string()
            }
        })
        .collect())
}

/// A file name as ansible-vault resolves it (symlinks followed, so the link stays a link).
fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn shown(f: &str) -> &str {
    if f == "-" {
        "<stdin>"
    } else {
        f
    }
}

fn io_err(p: &Path, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{}: {}", p.display(), e))
}

fn read_input(f: &str) -> Result<Vec<u8>, Error> {
    let mut data = Vec::new();
    let r = if f == "-" {
        std::io::stdin().read_to_end(&mut data).map(|_| ())
    } else {
        std::fs::read(f).map(|d| data = d)
    };
    r.map_err(|e| runtime(format!("Unable to read source file ({}): {}", shown(f), e)))?;
    Ok(data)
}

/// Writes a result: `-` is standard output; a file is replaced through a temp file in its
/// directory (mode 0600, as ansible-vault creates it). `shred` overwrites the replaced
/// file's bytes first (it held the plaintext an encrypt replaces).
fn write_output(target: &str, data: &[u8], shred: bool) -> Result<(), Error> {
    if target == "-" {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(data)
            .and_then(|_| out.flush())
            .map_err(|e| runtime(format!("cannot write to standard output: {}", e)));
    }
    let path = Path::new(target);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".kk-vault-")
        .tempfile_in(dir)
        .map_err(|e| {
            runtime(format!(
                "Destination '{}' not writable: {}",
                dir.display(),
                e
            ))
        })?;
    tmp.write_all(data)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| io_err(tmp.path(), e))?;
    if shred {
        overwrite(path);
    }
    tmp.persist(path).map_err(|e| io_err(path, e.error))?;
    Ok(())
}

/// Overwrites a file's bytes with random data before it is replaced (best effort, as
/// ansible-vault's shred: a copy-on-write or flash file system may keep the old blocks).
fn overwrite(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_file() || meta.len() == 0 {
        return;
    }
    if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(path) {
        let mut left = meta.len() as usize;
        let mut buf = vec![0u8; left.min(1 << 20)];
        while left > 0 {
            let n = left.min(buf.len());
            if getrandom_fill(&mut buf[..n]).is_err() || f.write_all(&buf[..n]).is_err() {
                return;
            }
            left -= n;
        }
        let _ = f.sync_all();
    }
}

fn getrandom_fill(buf: &mut [u8]) -> std::io::Result<()> {
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// Shows text through $PAGER (default `less`) on a terminal, else prints it.
fn page(text: &str) -> Result<(), Error> {
    if std::io::stdout().is_terminal() {
        let pager = std::env::var("PAGER")
            .ok()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| "less".into());
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", &pager]).stdin(std::process::Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            cmd.env("LESS", "FRX");
        }
        if let Ok(mut child) = cmd.spawn() {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = child.wait();
            return Ok(());
        }
    }
    write_output("-", text.as_bytes(), false)
}

/// Opens the plaintext in $EDITOR in a private temp file and encrypts the result into
/// `file` when it changed (always for a new file). The temp file is overwritten, then
/// removed, whatever happens.
fn edit_helper(file: &Path, secret: &Secret, existing: Option<Vec<u8>>) -> Result<i32, Error> {
    let ext = file
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let tmp = tempfile::Builder::new()
        .prefix("kk-vault-edit-")
        .suffix(&ext)
        .tempfile()
        .map_err(|e| runtime(format!("cannot create a temp file to edit in: {}", e)))?;
    let tmp_path = tmp.path().to_path_buf();
    let result = (|| {
        if let Some(data) = &existing {
            std::fs::write(&tmp_path, data).map_err(|e| io_err(&tmp_path, e))?;
        }
        let editor = std::env::var("EDITOR")
            .ok()
            .filter(|e| !e.trim().is_empty())
            .unwrap_or_else(|| "vi".into());
        let mut words = vault::split_command(&editor);
        if words.is_empty() {
            words.push("vi".into());
        }
        let status = std::process::Command::new(&words[0])
            .args(&words[1..])
            .arg(&tmp_path)
            .status()
            .map_err(|e| {
                runtime(format!(
                    "Unable to execute the command \"{} {}\": {}",
                    editor,
                    tmp_path.display(),
                    e
                ))
            })?;
        let _ = status;
        let edited = std::fs::read(&tmp_path).map_err(|e| io_err(&tmp_path, e))?;
        if existing.as_deref() != Some(edited.as_slice()) {
            let text = encrypt_with(&edited, secret)?;
            let mode = std::fs::metadata(file).map(|m| m.permissions().mode()).ok();
            write_output(&file.display().to_string(), &text, false)?;
            if let Some(mode) = mode {
                let _ = std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode));
            }
        }
        Ok(0)
    })();
    overwrite(&tmp_path);
    drop(tmp);
    result
}

struct EncryptString {
    strings: Vec<String>,
    prompt: bool,
    show_input: bool,
    names: Vec<String>,
    stdin_name: Option<String>,
    output: Option<String>,
    enc: EncryptId,
    vault: VaultArgs,
}

/// `encrypt_string`: each plaintext as `[name: ]!vault |` and the vaulted lines indented by
/// ten spaces, one after another (a comment on stderr names each when there are several).
fn encrypt_string(o: EncryptString) -> Result<i32, Error> {
    let args: Vec<String> = o.strings.iter().filter(|s| *s != "-").cloned().collect();
    let read_stdin = o.strings.iter().any(|s| s == "-")
        || o.stdin_name.is_some()
        || (o.strings.is_empty() && !o.prompt);
    if o.prompt && read_stdin {
        return Err(options(
            "The --prompt option is not supported if also reading input from stdin",
        ));
    }
    let secret = encrypt_secret(&o.vault, &o.enc)?;
    let mut plaintexts: Vec<(Vec<u8>, &str, Option<String>)> = Vec::new();
    if o.prompt {
        let name = prompt_line("Variable name (enter for no name): ", true)?;
        let name = (!name.is_empty()).then_some(name);
        let msg = if o.show_input {
            "String to encrypt:"
        } else {
            "String to encrypt (hidden): "
        };
        let text = prompt_line(msg, o.show_input)?;
        if text.is_empty() {
            return Err(options(
                "The plaintext provided from the prompt was empty, not encrypting",
            ));
        }
        plaintexts.push((text.into_bytes(), "the interactive prompt", name));
    }
    if read_stdin {
        if std::io::stdout().is_terminal() {
            eprintln!("Reading plaintext input from stdin. (ctrl-d to end input, twice if your content does not already have a newline)");
        }
        let data = read_input("-")?;
        if data.is_empty() {
            return Err(options("stdin was empty, not encrypting"));
        }
        plaintexts.push((data, "stdin", o.stdin_name.clone()));
    }
    if !o.names.is_empty() && args.len() > o.names.len() {
        eprintln!("The number of --name options do not match the number of args.");
        eprintln!(
            "The last named variable will be \"{}\". The rest will not have names.",
            o.names[o.names.len() - 1]
        );
    }
    for (i, a) in args.iter().enumerate() {
        if a.is_empty() {
            return Err(options(
                "The plaintext provided from the command line args was empty, not encrypting",
            ));
        }
        plaintexts.push((
            a.clone().into_bytes(),
            "the command line args",
            o.names.get(i).cloned(),
        ));
    }
    let several = plaintexts.len() > 1;
    let mut out = Vec::new();
    for (i, (plain, src, name)) in plaintexts.iter().enumerate() {
        let text = encrypt_with(plain, &secret)?;
        if several {
            match name {
                Some(n) => eprintln!(
                    "# The encrypted version of variable (\"{}\", the string #{} from {}).",
                    n,
                    i + 1,
                    src
                ),
                None => eprintln!(
                    "# The encrypted version of the string #{} from {}.)",
                    i + 1,
                    src
                ),
            }
        }
        let mut lines = vec![match name {
            Some(n) => format!("{}: !vault |", n),
            None => "!vault |".to_string(),
        }];
        for l in String::from_utf8_lossy(&text).lines() {
            lines.push(format!("{}{}", " ".repeat(10), l));
        }
        out.push(lines.join("\n"));
    }
    out.push(String::new());
    write_output(
        o.output.as_deref().unwrap_or("-"),
        out.join("\n").as_bytes(),
        false,
    )?;
    if std::io::stdout().is_terminal() {
        eprintln!("Encryption successful");
    }
    Ok(0)
}

/// One line from the terminal, echoed or not.
fn prompt_line(msg: &str, echo: bool) -> Result<String, Error> {
    let no_tty = |e: std::io::Error| {
        options(format!("cannot prompt: no terminal ({})", e))
            .help("pass the string as an argument or on standard input")
    };
    if echo {
        let mut tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .map_err(no_tty)?;
        tty.write_all(msg.as_bytes()).map_err(no_tty)?;
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(&tty), &mut line)
            .map_err(no_tty)?;
        Ok(line.trim_end_matches(['\n', '\r']).to_string())
    } else {
        vault::prompt_hidden(msg).map_err(no_tty)
    }
}
