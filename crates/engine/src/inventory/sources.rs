//! Inventory sources as `ansible-playbook -i` takes them: a file (KubeKey's form, Ansible's
//! YAML or INI form, told apart by content as Ansible's plugins do), a directory (every
//! file in it, sorted, recursively, skipping what Ansible skips), or a comma-separated
//! host list (`h1,h2,`; a single host needs its trailing comma). Several sources merge
//! in the order given.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result, SourceFile, Span};
use crate::vars::VarMap;

use super::plugins::{short_name, Ignore, SourceOptions};
use super::ranges::{check_host_name, expand_host};
use super::Inventory;

/// How deep inventory directories may nest.
const MAX_DIR_DEPTH: usize = 32;

/// True for a `-i` value that is a host list rather than a path: Ansible's test (a
/// comma, and no such file).
pub fn is_host_list(source: &str) -> bool {
    source.contains(',') && !Path::new(source).exists()
}

impl Inventory {
    /// Loads `-i` sources in order into one inventory; group_vars/ and host_vars/ next to
    /// each path source are read for its hosts and groups.
    pub fn load_sources<S: AsRef<str>>(sources: &[S]) -> Result<Inventory> {
        Inventory::load_sources_with(sources, &SourceOptions::default())
    }

    /// [`Inventory::load_sources`] with Ansible's inventory settings (`enable_plugins`,
    /// `ignore_extensions`, `ignore_patterns`) as ansible.cfg gives them.
    pub fn load_sources_with<S: AsRef<str>>(
        sources: &[S],
        opts: &SourceOptions,
    ) -> Result<Inventory> {
        let ignore = opts.ignore()?;
        let mut inv = Inventory::blank();
        for s in sources {
            let s = s.as_ref();
            if is_host_list(s) {
                inv.add_host_list(s, opts)?;
                continue;
            }
            let path = Path::new(s);
            if !path.exists() {
                return Err(Error::new(
                    ErrorKind::Options,
                    format!("inventory source {} does not exist", s),
                )
                .help("give an inventory file, a directory of them, or hosts separated by commas (`host1,host2,`)"));
            }
            inv.add_path(path, 0, opts, &ignore)?;
            let dir = if path.is_dir() {
                path.to_path_buf()
            } else {
                path.parent()
                    .map(Path::to_path_buf)
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or_else(|| PathBuf::from("."))
            };
            inv.vars_dirs.push(dir);
        }
        inv.rebuild()?;
        Ok(inv)
    }

    fn add_path(
        &mut self,
        path: &Path,
        depth: usize,
        opts: &SourceOptions,
        ignore: &Ignore,
    ) -> Result<()> {
        if !path.is_dir() {
            return self.add_file(path, opts);
        }
        if depth > MAX_DIR_DEPTH {
            return Err(Error::new(
                ErrorKind::Input,
                format!(
                    "inventory directories nest more than {} deep at {}",
                    MAX_DIR_DEPTH,
                    path.display()
                ),
            ));
        }
        let read = std::fs::read_dir(path).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot read inventory directory {}: {}", path.display(), e),
            )
        })?;
        let mut names: Vec<_> = read.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            let n = name.to_string_lossy();
            if ignore.skips(&n) {
                continue;
            }
            self.add_path(&path.join(&name), depth + 1, opts, ignore)?;
        }
        Ok(())
    }

    /// `-i h1,h2:2222,`: ungrouped hosts with a port when given, read by the first of
    /// Ansible's `host_list` (no ranges: `web[1:3]` is one host of that name) and
    /// `advanced_host_list` (ranges expanded) that is enabled.
    fn add_host_list(&mut self, list: &str, opts: &SourceOptions) -> Result<()> {
        let advanced = match opts
            .enabled
            .iter()
            .map(|p| short_name(p))
            .find(|p| matches!(*p, "host_list" | "advanced_host_list"))
        {
            Some(p) => p == "advanced_host_list",
            None => {
                return Err(Error::new(
                    ErrorKind::Options,
                    format!("inventory source `{}` is a host list, but neither host_list nor advanced_host_list is an enabled inventory plugin", list),
                )
                .help("add host_list to ansible.cfg's `[inventory] enable_plugins`"))
            }
        };
        let file = SourceFile::new("-i", list);
        let span = Span {
            file,
            line: 1,
            col: 1,
        };
        for h in list.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            if self.hosts.contains_key(h) {
                continue;
            }
            let expanded = expand_host(h, &span);
            let (names, port) = match expanded {
                Ok((names, port)) if advanced => (names, port),
                Ok((names, port)) if names.len() == 1 && !h.contains('[') || h.starts_with('[') => {
                    (names, port)
                }
                _ => {
                    check_host_name(h, &span)?;
                    (vec![h.to_string()], None)
                }
            };
            if self.hosts.len().saturating_add(names.len()) > super::MAX_HOSTS {
                return Err(super::too_many_hosts(&span));
            }
            let mut vars = VarMap::new();
            if let Some(p) = port {
                vars.insert("ansible_port".into(), p.into());
            }
            for name in names {
                if !self.hosts.contains_key(&name) {
                    self.add_host_def(&name, &vars, None);
                }
            }
        }
        Ok(())
    }
}
