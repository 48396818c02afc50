//! `group_vars/` and `host_vars/` directories, next to each inventory source and next to
//! the playbook of the running play, as Ansible's `host_group_vars` plugin reads them.
//!
//! For a group or host `name`, the first of `name` (a file or a directory), `name.yml`,
//! `name.yaml`, `name.json` that exists is used; a directory contributes every file in
//! it with no extension or one of those, sorted, recursively, skipping hidden files and
//! `~` backups. Later files replace earlier ones key by key. Files are read once per run.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::error::Result;
use crate::vars::VarMap;

use super::Inventory;

/// The extensions tried after the bare name, in Ansible's order.
const EXTENSIONS: &[&str] = &["", ".yml", ".yaml", ".json"];

/// How deep a `group_vars/<name>/` directory may nest.
const MAX_DEPTH: usize = 16;

/// Which of the two directories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Group,
    Host,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Group => "group_vars",
            Kind::Host => "host_vars",
        }
    }
}

/// The files read so far, by directory, kind and name.
#[derive(Debug, Clone, Default)]
pub(super) struct VarsFiles {
    loaded: HashMap<(PathBuf, Kind, String), Arc<VarMap>>,
    /// `<base>/group_vars` or `<base>/host_vars` that are not directories.
    absent: HashSet<PathBuf>,
}

impl VarsFiles {
    /// True when `base` has a group_vars/ or host_vars/ directory.
    pub(super) fn has_any(base: &Path) -> bool {
        base.join("group_vars").is_dir() || base.join("host_vars").is_dir()
    }

    /// The variables of `name` from `<base>/group_vars` or `<base>/host_vars` (empty when
    /// there are none); a file that does not load is an error naming its place.
    pub(super) fn get(&mut self, base: &Path, kind: Kind, name: &str) -> Result<Arc<VarMap>> {
        let key = (base.to_path_buf(), kind, name.to_string());
        if let Some(v) = self.loaded.get(&key) {
            return Ok(v.clone());
        }
        let dir = base.join(kind.dir());
        let mut vars = VarMap::new();
        // Ansible skips names that are absolute paths (chroot hosts).
        if !name.starts_with('/') && !self.absent.contains(&dir) {
            if dir.is_dir() {
                for file in find(&dir, name) {
                    for (k, v) in load(&file)? {
                        vars.insert(k, v);
                    }
                }
            } else {
                self.absent.insert(dir);
            }
        }
        let vars = Arc::new(vars);
        self.loaded.insert(key, vars.clone());
        Ok(vars)
    }
}

/// The files for `name` in `dir`, in load order.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    if name.contains('/') || name == "." || name == ".." {
        return Vec::new();
    }
    for ext in EXTENSIONS {
        let p = dir.join(format!("{}{}", name, ext));
        if p.is_dir() {
            let mut out = Vec::new();
            walk(&p, 0, &mut out);
            return out;
        }
        if p.exists() {
            return vec![p];
        }
    }
    Vec::new()
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<_> = read.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    names.sort();
    for n in names {
        let s = n.to_string_lossy();
        if s.starts_with('.') || s.ends_with('~') {
            continue;
        }
        let p = dir.join(&n);
        let ext = Path::new(s.as_ref())
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()));
        if p.is_dir() {
            if ext.is_none() {
                walk(&p, depth + 1, out);
            }
        } else if ext.as_deref().is_none_or(|e| EXTENSIONS[1..].contains(&e)) {
            out.push(p);
        }
    }
}

/// One vars file: YAML or JSON, a mapping or empty.
fn load(path: &Path) -> Result<VarMap> {
    let node = crate::yaml::load_file(path)?;
    match node.to_value() {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(VarMap::new()),
        _ => Err(node
            .expected("a mapping of variables")
            .help("a group_vars/ or host_vars/ file holds `name: value` lines")),
    }
}

impl Inventory {
    /// The directories whose group_vars/ and host_vars/ apply now: the inventory
    /// sources' (in `-i` order), then the running play's playbook directory; each with
    /// whether it is the playbook's. Only those that have such a directory.
    pub(super) fn files_dirs(&self) -> Vec<(PathBuf, bool)> {
        let mut out: Vec<(PathBuf, bool)> = self
            .vars_dirs
            .iter()
            .filter(|d| VarsFiles::has_any(d))
            .map(|d| (d.clone(), false))
            .collect();
        if let Some(p) = self.play_dir.as_ref().filter(|d| VarsFiles::has_any(d)) {
            out.push((p.clone(), true));
        }
        out
    }

    /// A host's variables with the files of `dirs`, in Ansible's order: the inventory's
    /// `all` and group variables (`base`) < group_vars/all (inventory, then playbook) <
    /// group_vars/<group> (inventory, then playbook; `groups` in precedence order) < the
    /// inventory's host variables < host_vars/<host> (inventory, then playbook).
    /// A file replaces a variable whole; the inventory's host variables still combine
    /// with its group variables where no file set them (deep-merged in KubeKey's form).
    pub(super) fn with_files(
        &self,
        files: &mut VarsFiles,
        dirs: &[(PathBuf, bool)],
        base: VarMap,
        groups: &[&String],
        host: &str,
        own: &VarMap,
    ) -> Result<VarMap> {
        let mut out = base.clone();
        let mut from_files: HashSet<String> = HashSet::new();
        let put = |out: &mut VarMap, from_files: &mut HashSet<String>, layer: &VarMap| {
            for (k, v) in layer {
                out.insert(k.clone(), v.clone());
                from_files.insert(k.clone());
            }
        };
        for playbook in [false, true] {
            for (d, _) in dirs.iter().filter(|(_, p)| *p == playbook) {
                put(
                    &mut out,
                    &mut from_files,
                    &*files.get(d, Kind::Group, "all")?,
                );
            }
        }
        for playbook in [false, true] {
            for (d, _) in dirs.iter().filter(|(_, p)| *p == playbook) {
                for g in groups {
                    put(&mut out, &mut from_files, &*files.get(d, Kind::Group, g)?);
                }
            }
        }
        let mut deep = base;
        self.combine(&mut deep, own);
        for (k, v) in own {
            let v = if from_files.contains(k) {
                v.clone()
            } else {
                deep.get(k).cloned().unwrap_or_else(|| v.clone())
            };
            out.insert(k.clone(), v);
        }
        for playbook in [false, true] {
            for (d, _) in dirs.iter().filter(|(_, p)| *p == playbook) {
                put(&mut out, &mut from_files, &*files.get(d, Kind::Host, host)?);
            }
        }
        Ok(out)
    }
}
