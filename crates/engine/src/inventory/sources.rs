//! Inventory sources as `ansible-playbook -i` takes them: a file (KubeKey's form, Ansible's
//! YAML or INI form, told apart by content as Ansible's plugins do), a directory (every
//! file in it, sorted, recursively, skipping what Ansible skips), or a comma-separated
//! host list (`h1,h2,`; a single host needs its trailing comma). Several sources merge
//! in the order given.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result, SourceFile, Span};
use crate::vars::VarMap;
use crate::yaml::Yaml;

use super::ranges::{check_host_name, expand_host};
use super::Inventory;

/// File name endings Ansible skips in an inventory directory (`INVENTORY_IGNORE_EXTS`:
/// `REJECT_EXTS` plus `.orig`, `.cfg`, `.retry`).
const IGNORED_ENDINGS: &[&str] = &[
    ".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry",
];

/// Entries of an inventory directory that are never inventories.
const IGNORED_NAMES: &[&str] = &["host_vars", "group_vars", "vars_plugins"];

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
        let mut inv = Inventory::blank();
        for s in sources {
            let s = s.as_ref();
            if is_host_list(s) {
                inv.add_host_list(s)?;
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
            inv.add_path(path, 0)?;
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

    fn add_path(&mut self, path: &Path, depth: usize) -> Result<()> {
        if !path.is_dir() {
            return self.add_file(path);
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
            if n.starts_with('.')
                || IGNORED_NAMES.contains(&n.as_ref())
                || IGNORED_ENDINGS.iter().any(|e| n.ends_with(e))
            {
                continue;
            }
            self.add_path(&path.join(&name), depth + 1)?;
        }
        Ok(())
    }

    /// One inventory file. Like Ansible's plugin order: YAML first for `.yaml`, `.yml`,
    /// `.json` and names without an extension, INI when that is not a YAML mapping.
    fn add_file(&mut self, path: &Path) -> Result<()> {
        let text = crate::error::read_file(path)?;
        let file = SourceFile::new(path, text);
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        let yaml_like = matches!(ext.as_deref(), None | Some("yaml" | "yml" | "json"));
        if !yaml_like {
            return self.load_ini(&file);
        }
        let yaml_err = match crate::yaml::parse(file.clone()) {
            Ok(node) if matches!(node.value, Yaml::Map(_)) => {
                let is_kubekey = node.get("kind").is_some()
                    || (node.get("apiVersion").is_some() && node.get("spec").is_some());
                return if is_kubekey {
                    self.load_kubekey(&node)
                } else {
                    self.load_ansible(&node)
                };
            }
            Ok(node) => node
                .expected("an inventory mapping")
                .help("write either `kind: Inventory` with `spec: {hosts, groups, vars}` (KubeKey), `all: {hosts, children, vars}` (Ansible YAML) or Ansible's INI form"),
            Err(e) => e,
        };
        // Not YAML: INI, on a copy, so a failed attempt leaves nothing behind.
        let mut attempt = self.clone();
        match attempt.load_ini(&file) {
            Ok(()) => {
                *self = attempt;
                Ok(())
            }
            // A file without an extension is most likely INI (`hosts`): its error is the one to show.
            Err(ini_err) if ext.is_none() => Err(ini_err),
            Err(_) => Err(yaml_err),
        }
    }

    /// `-i h1,h2:2222,`: ungrouped hosts, a port when given, no ranges (Ansible's host_list).
    fn add_host_list(&mut self, list: &str) -> Result<()> {
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
            let mut vars = VarMap::new();
            let name = match expand_host(h, &span) {
                Ok((names, port)) if names.len() == 1 && !h.contains('[') || h.starts_with('[') => {
                    if let Some(p) = port {
                        vars.insert("ansible_port".into(), p.into());
                    }
                    names.into_iter().next().unwrap_or_else(|| h.to_string())
                }
                _ => {
                    check_host_name(h, &span)?;
                    h.to_string()
                }
            };
            if !self.hosts.contains_key(&name) {
                self.add_host_def(&name, &vars, None);
            }
        }
        Ok(())
    }
}
