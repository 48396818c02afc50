//! Which inventory plugin reads a source, as Ansible decides it: each enabled plugin in
//! order (`[inventory] enable_plugins`, default `host_list, script, auto, yaml, ini, toml`)
//! tries the source and the first that parses it wins. Also the names an inventory
//! directory skips (`ignore_extensions`, `ignore_patterns`).
//!
//! kk's plugins: `host_list` and `advanced_host_list` (comma-separated hosts, the second
//! with ranges), `script` (an executable), `auto` (a YAML file naming its `plugin:`),
//! `yaml`, `ini`, `toml`, and `constructed` and `generator` through `auto` or by name.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result, SourceFile};
use crate::yaml::{Node, Yaml};

use super::node::key_span;
use super::script::is_executable;
use super::Inventory;

/// How `-i` sources are read: Ansible's `[inventory]` settings, defaults as Ansible's.
#[derive(Debug, Clone)]
pub struct SourceOptions {
    /// `enable_plugins` (`ANSIBLE_INVENTORY_ENABLED`), in the order they are tried.
    pub enabled: Vec<String>,
    /// `ignore_extensions` (`ANSIBLE_INVENTORY_IGNORE`): name endings a directory skips.
    pub ignore_exts: Vec<String>,
    /// `ignore_patterns` (`ANSIBLE_INVENTORY_IGNORE_REGEX`): regexes a directory skips.
    pub ignore_patterns: Vec<String>,
}

impl Default for SourceOptions {
    fn default() -> Self {
        SourceOptions {
            enabled: ["host_list", "script", "auto", "yaml", "ini", "toml"]
                .map(String::from)
                .to_vec(),
            ignore_exts: [
                ".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig",
                ".cfg", ".retry",
            ]
            .map(String::from)
            .to_vec(),
            ignore_patterns: Vec::new(),
        }
    }
}

/// The plugins kk has, by the short name (`ansible.builtin.` dropped).
const KNOWN: &[&str] = &[
    "host_list",
    "advanced_host_list",
    "script",
    "auto",
    "yaml",
    "ini",
    "toml",
    "constructed",
    "generator",
];

/// A plugin name without its `ansible.builtin.` (or `ansible.legacy.`) prefix.
pub(super) fn short_name(name: &str) -> &str {
    let n = name.trim();
    n.strip_prefix("ansible.builtin.")
        .or_else(|| n.strip_prefix("ansible.legacy."))
        .unwrap_or(n)
}

/// The compiled skip rule of an inventory directory.
pub(super) struct Ignore {
    re: regex::Regex,
}

impl SourceOptions {
    /// Checks the settings: every enabled plugin known, every pattern a regex.
    pub(super) fn ignore(&self) -> Result<Ignore> {
        for p in &self.enabled {
            if !KNOWN.contains(&short_name(p)) {
                return Err(Error::new(
                    ErrorKind::Options,
                    format!(
                        "inventory plugin `{}` (enable_plugins) is not one kk has",
                        p
                    ),
                )
                .help(format!("kk's inventory plugins: {}", KNOWN.join(", "))));
            }
        }
        // Ansible's IGNORED: hidden names, the vars directories, the patterns, the endings.
        let mut parts: Vec<String> = vec![
            r"^\.".into(),
            "^host_vars$".into(),
            "^group_vars$".into(),
            "^vars_plugins$".into(),
        ];
        for p in &self.ignore_patterns {
            regex::Regex::new(p).map_err(|e| {
                Error::new(
                    ErrorKind::Options,
                    format!(
                        "inventory ignore pattern `{}` is not a regular expression: {}",
                        p, e
                    ),
                )
            })?;
            parts.push(format!("(?:{})", p));
        }
        for e in &self.ignore_exts {
            parts.push(format!("{}$", regex::escape(e)));
        }
        let re = regex::Regex::new(&parts.join("|")).map_err(|e| {
            Error::new(
                ErrorKind::Options,
                format!("inventory ignore settings: {}", e),
            )
        })?;
        Ok(Ignore { re })
    }
}

impl Ignore {
    /// True for a directory entry Ansible skips.
    pub(super) fn skips(&self, name: &str) -> bool {
        self.re.is_match(name)
    }
}

/// One failed attempt, ranked: the lowest rank is the error shown when none parses.
struct Failure {
    rank: u8,
    error: Error,
}

impl Inventory {
    /// One inventory file, read by the first enabled plugin that takes it.
    pub(super) fn add_file(&mut self, path: &Path, opts: &SourceOptions) -> Result<()> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        let mut text: Option<Arc<SourceFile>> = None;
        let mut failures: Vec<Failure> = Vec::new();
        let mut yaml_root: Option<std::result::Result<Node, Error>> = None;
        for plugin in &opts.enabled {
            let plugin = short_name(plugin);
            let attempt: Option<(u8, Result<()>)> = match plugin {
                "script" if is_executable(path) => {
                    let shebang = std::fs::read(path)
                        .map(|b| b.starts_with(b"#!"))
                        .unwrap_or(false);
                    Some((
                        if shebang { 0 } else { 9 },
                        self.attempt(|inv| inv.load_script(path)),
                    ))
                }
                "auto" | "constructed" | "generator" if plugin_ext(plugin, ext.as_deref()) => {
                    let file = load_text(&mut text, path)?;
                    match parsed(&mut yaml_root, &file) {
                        Ok(root) => match root
                            .get("plugin")
                            .filter(|_| matches!(root.value, Yaml::Map(_)))
                        {
                            Some(pn) => {
                                let name = super::node::scalar_name(pn).unwrap_or_default();
                                let wanted = short_name(&name);
                                if plugin != "auto" && wanted != plugin {
                                    None
                                } else {
                                    let root = root.clone();
                                    Some((
                                        1,
                                        self.attempt(|inv| {
                                            inv.run_plugin(path, &root, pn_span(&root), &name)
                                        }),
                                    ))
                                }
                            }
                            None => None,
                        },
                        Err(_) => None,
                    }
                }
                "yaml" if matches!(ext.as_deref(), None | Some("yaml" | "yml" | "json")) => {
                    let file = load_text(&mut text, path)?;
                    match parsed(&mut yaml_root, &file) {
                        Ok(root) if matches!(root.value, Yaml::Map(_)) => {
                            if root.get("plugin").is_some() {
                                // A plugin configuration: `auto` (or the plugin) reads it.
                                None
                            } else {
                                let root = root.clone();
                                Some((4, self.attempt(|inv| inv.load_yaml_root(&root))))
                            }
                        }
                        Ok(root) => Some((4, Err(root
                            .expected("an inventory mapping")
                            .help("write either `kind: Inventory` with `spec: {hosts, groups, vars}` (KubeKey), `all: {hosts, children, vars}` (Ansible YAML) or Ansible's INI form")))),
                        Err(e) => Some((4, Err(e.clone()))),
                    }
                }
                "ini" => {
                    let file = load_text(&mut text, path)?;
                    // A file without an extension is most likely INI (`hosts`): its error is the one to show.
                    let rank = if ext.is_none() { 3 } else { 5 };
                    Some((rank, self.attempt(|inv| inv.load_ini(&file))))
                }
                "toml" if ext.as_deref() == Some("toml") => {
                    let file = load_text(&mut text, path)?;
                    Some((2, self.attempt(|inv| inv.load_toml(&file))))
                }
                _ => None,
            };
            match attempt {
                Some((_, Ok(()))) => return Ok(()),
                Some((rank, Err(error))) => failures.push(Failure { rank, error }),
                None => {}
            }
        }
        failures.sort_by_key(|f| f.rank);
        match failures.into_iter().next() {
            Some(f) => Err(f.error),
            None => Err(Error::new(
                ErrorKind::Syntax,
                format!(
                    "no enabled inventory plugin can read {} (enable_plugins: {})",
                    path.display(),
                    opts.enabled.join(", ")
                ),
            )
            .help("enable the plugin for this kind of file in ansible.cfg's `[inventory] enable_plugins`")),
        }
    }

    /// Runs `load` on a copy, so a failed attempt leaves nothing behind.
    fn attempt(&mut self, load: impl FnOnce(&mut Inventory) -> Result<()>) -> Result<()> {
        let mut copy = self.clone();
        load(&mut copy)?;
        *self = copy;
        Ok(())
    }

    /// A YAML inventory (KubeKey's or Ansible's form, told apart by content).
    fn load_yaml_root(&mut self, root: &Node) -> Result<()> {
        let is_kubekey = root.get("kind").is_some()
            || (root.get("apiVersion").is_some() && root.get("spec").is_some());
        if is_kubekey {
            self.load_kubekey(root)
        } else {
            self.load_ansible(root)
        }
    }

    /// A plugin configuration file (`plugin: <name>`), read by that plugin.
    fn run_plugin(
        &mut self,
        path: &Path,
        root: &Node,
        at: crate::error::Span,
        name: &str,
    ) -> Result<()> {
        match short_name(name) {
            "constructed" => {
                self.load_constructed(path, root)?;
                self.rebuild()
            }
            "generator" => {
                self.load_generator(path, root)?;
                self.rebuild()
            }
            _ => Err(Error::syntax(
                format!(
                    "inventory config {} specifies unknown plugin `{}`",
                    path.display(),
                    name
                ),
                &at,
            )
            .help("kk reads the inventory plugins ansible.builtin.constructed and ansible.builtin.generator from YAML files; for others (cloud inventories…), export the inventory with `ansible-inventory --list -y` and give that file")),
        }
    }
}

/// Whether a plugin-configuration plugin looks at a file with this extension.
fn plugin_ext(plugin: &str, ext: Option<&str>) -> bool {
    match plugin {
        "auto" => matches!(ext, Some("yml" | "yaml")),
        "constructed" => matches!(ext, None | Some("config" | "yml" | "yaml" | "json")),
        _ => matches!(ext, None | Some("config" | "yml" | "yaml")),
    }
}

/// Where the `plugin:` of a configuration is written.
fn pn_span(root: &Node) -> crate::error::Span {
    match root.get("plugin") {
        Some(v) => key_span(root, "plugin", v),
        None => root.span.clone(),
    }
}

/// The file's text, read once.
fn load_text(slot: &mut Option<Arc<SourceFile>>, path: &Path) -> Result<Arc<SourceFile>> {
    if let Some(f) = slot {
        return Ok(f.clone());
    }
    let text = crate::error::read_file(path)?;
    let f = SourceFile::new(path, text);
    *slot = Some(f.clone());
    Ok(f)
}

/// The file parsed as YAML, once.
fn parsed<'a>(
    slot: &'a mut Option<std::result::Result<Node, Error>>,
    file: &Arc<SourceFile>,
) -> &'a std::result::Result<Node, Error> {
    slot.get_or_insert_with(|| crate::yaml::parse(file.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(files: &[(&str, &str)], sources: &[&str], opts: &SourceOptions) -> Result<Inventory> {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let sources: Vec<String> = sources
            .iter()
            .map(|s| {
                if s.contains(',') {
                    s.to_string()
                } else {
                    dir.path().join(s).display().to_string()
                }
            })
            .collect();
        Inventory::load_sources_with(&sources, opts)
    }

    #[test]
    fn group_names_are_made_safe_as_ansible_plugins_make_them() {
        use super::super::constructed::safe_group_name;
        assert_eq!(safe_group_name("os_Debian 12"), "os_Debian_12");
        assert_eq!(safe_group_name("1st-tier"), "_st_tier");
        assert_eq!(safe_group_name("zone_z1"), "zone_z1");
    }

    #[test]
    fn toml_errors_name_their_line_and_unknown_plugins_their_key() {
        let opts = SourceOptions::default();
        let e = load(&[("h.toml", "[web.hosts]\nh1 = {\n")], &["h.toml"], &opts).unwrap_err();
        assert!(e.message.contains("toml plugin"), "{}", e.message);
        assert_eq!(e.span.as_ref().map(|s| s.line), Some(2));
        let e = load(&[("p.yml", "---\nplugin: nope.nope\n")], &["p.yml"], &opts).unwrap_err();
        assert!(
            e.message.contains("unknown plugin `nope.nope`"),
            "{}",
            e.message
        );
        assert_eq!(e.span.as_ref().map(|s| s.line), Some(2));
    }

    #[test]
    fn enabled_plugins_decide_what_reads_a_source() {
        let mut opts = SourceOptions::default();
        let inv = load(&[], &["n[1:2],"], &opts).unwrap();
        assert_eq!(inv.host_names(), vec!["n[1:2]"]);
        opts.enabled = vec!["ansible.builtin.advanced_host_list".into(), "ini".into()];
        let inv = load(&[], &["n[1:2],"], &opts).unwrap();
        assert_eq!(inv.host_names(), vec!["n1", "n2"]);
        // No yaml plugin: a YAML file is read by nothing else that can.
        let e = load(&[("h.yml", "all:\n  hosts:\n    h1:\n")], &["h.yml"], &opts).unwrap_err();
        assert!(e.message.contains("ini plugin"), "{}", e.message);
        opts.enabled = vec!["nosuch".into()];
        let e = load(&[], &["a,"], &opts).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Options);
    }
}
