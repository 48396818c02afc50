//! Where Ansible modules written in Python are found on the controller, the way
//! ansible-core looks for them: a task's short name in the `library` directories (next to
//! the playbook, in each role, then ansible.cfg's `library` / `ANSIBLE_LIBRARY`, then
//! `~/.ansible/plugins/modules` and `/usr/share/ansible/plugins/modules`), a collection
//! name `ns.coll.module` under every collections root (next to the playbook, then
//! `collections_path` / `ANSIBLE_COLLECTIONS_PATH`, then the controller Python's
//! `sys.path`, where `pip install ansible` puts its collections), and ansible-core's own
//! modules (`ansible.builtin.X` that kk does not implement) next to its `module_utils`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The controller's settings for finding Python modules (from ansible.cfg and the
/// environment, set once by the command line before a playbook loads).
#[derive(Debug, Clone, Default)]
pub struct PythonPaths {
    /// `library` / `ANSIBLE_LIBRARY`: directories of modules named by their short name.
    pub library: Vec<PathBuf>,
    /// `collections_path` / `ANSIBLE_COLLECTIONS_PATH`: roots holding `ansible_collections/`.
    pub collections: Vec<PathBuf>,
}

static PATHS: Mutex<Option<PythonPaths>> = Mutex::new(None);

/// Sets where Python modules are looked for (kk's command line calls this once).
pub fn configure(paths: PythonPaths) {
    *PATHS.lock().unwrap_or_else(|e| e.into_inner()) = Some(paths);
}

fn configured() -> PythonPaths {
    PATHS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

/// ansible-core as installed on the controller: its package directory (holding
/// `module_utils/` and `modules/`), its version, and the controller Python's `sys.path`.
#[derive(Debug, Clone)]
pub struct AnsibleCore {
    /// `.../site-packages/ansible`.
    pub dir: PathBuf,
    /// `ansible.release.__version__`, e.g. `2.19.4`.
    pub version: String,
    /// The Python's `sys.path` entries that are directories (collections roots too).
    pub sys_path: Vec<PathBuf>,
}

/// `KK_ANSIBLE_PYTHON`: the Python whose ansible-core kk uses; without it the one that
/// runs `ansible-playbook` (its `#!` line), then `python3`.
const PYTHON_ENV: &str = "KK_ANSIBLE_PYTHON";

/// The controller's ansible-core, asked once per run (about 0.1 s, and only when a
/// playbook names a module kk does not implement).
pub fn ansible_core() -> Option<&'static AnsibleCore> {
    static CORE: OnceLock<Option<AnsibleCore>> = OnceLock::new();
    CORE.get_or_init(|| pythons().iter().find_map(|py| ask(py)))
        .as_ref()
}

/// The Pythons to ask, in order.
pub fn pythons() -> Vec<String> {
    if let Some(p) = std::env::var_os(PYTHON_ENV) {
        return vec![p.to_string_lossy().into_owned()];
    }
    let mut out = Vec::new();
    if let Some(py) = which("ansible-playbook").and_then(|p| shebang_python(&p)) {
        out.push(py);
    }
    out.push("python3".into());
    out
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The interpreter of a script's `#!` line (`#!/usr/bin/env python3` gives `python3`).
fn shebang_python(script: &Path) -> Option<String> {
    let text = std::fs::read(script).ok()?;
    let first = text.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(first).ok()?.strip_prefix("#!")?.trim();
    let mut words = line.split_whitespace();
    let prog = words.next()?;
    if prog.ends_with("/env") {
        words.find(|w| !w.starts_with('-')).map(str::to_string)
    } else {
        Some(prog.to_string())
    }
}

const ASK: &str = "import os, sys\nimport ansible, ansible.release\nprint(os.path.dirname(ansible.__file__))\nprint(ansible.release.__version__)\nfor p in sys.path:\n    print(p)\n";

fn ask(python: &str) -> Option<AnsibleCore> {
    let out = Command::new(python)
        .args(["-c", ASK])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let dir = PathBuf::from(lines.next()?);
    let version = lines.next()?.to_string();
    let sys_path = lines.map(PathBuf::from).filter(|p| p.is_dir()).collect();
    dir.join("module_utils/basic.py")
        .is_file()
        .then_some(AnsibleCore {
            dir,
            version,
            sys_path,
        })
}

/// Where a module named in a task was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The module's source file.
    pub file: PathBuf,
    /// The name Python imports it by (`ansible_collections.ns.coll.plugins.modules.x`,
    /// `ansible.modules.x`; a `library` module is `ansible.legacy.x`'s file under
    /// `ansible.modules`).
    pub import_name: String,
    /// The collection directory for a collection module (its `plugins/module_utils` is
    /// sent with it).
    pub collection: Option<PathBuf>,
}

/// The collections roots in Ansible's order: next to the playbook, the configured ones,
/// `~/.ansible/collections`, `/usr/share/ansible/collections`, then the controller
/// Python's `sys.path`.
fn collection_roots(playbook_dir: &Path) -> Vec<PathBuf> {
    let mut roots = vec![playbook_dir.to_path_buf()];
    roots.extend(or_defaults(
        configured().collections,
        ".ansible/collections",
        "/usr/share/ansible/collections",
    ));
    if let Some(core) = ansible_core() {
        roots.extend(core.sys_path.iter().cloned());
    }
    roots
}

/// The directories searched for a module's short name: `library/` next to the playbook
/// and in the role, then the configured ones, then Ansible's defaults.
fn library_dirs(playbook_dir: &Path, role_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![playbook_dir.join("library")];
    if let Some(r) = role_dir {
        dirs.push(r.join("library"));
    }
    dirs.extend(or_defaults(
        configured().library,
        ".ansible/plugins/modules",
        "/usr/share/ansible/plugins/modules",
    ));
    dirs
}

/// The configured directories, or Ansible's defaults (one under `~`, one system-wide).
fn or_defaults(configured: Vec<PathBuf>, in_home: &str, system: &str) -> Vec<PathBuf> {
    if !configured.is_empty() {
        return configured;
    }
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(in_home));
    home.into_iter().chain([PathBuf::from(system)]).collect()
}

/// Finds the Python module a task names, or `None`.
pub fn find(name: &str, playbook_dir: &Path, role_dir: Option<&Path>) -> Option<Found> {
    let short = name
        .strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."));
    let parts: Vec<&str> = name.split('.').collect();
    if short.is_none() && parts.len() == 3 {
        let (ns, coll, module) = (parts[0], parts[1], parts[2]);
        return collection_roots(playbook_dir).into_iter().find_map(|root| {
            let coll_dir = root.join("ansible_collections").join(ns).join(coll);
            let file = coll_dir
                .join("plugins/modules")
                .join(format!("{module}.py"));
            file.is_file().then(|| Found {
                file,
                import_name: format!("ansible_collections.{ns}.{coll}.plugins.modules.{module}"),
                collection: Some(coll_dir),
            })
        });
    }
    let short = short.unwrap_or(name);
    if short.contains('.') || short.is_empty() {
        return None;
    }
    let in_library = library_dirs(playbook_dir, role_dir)
        .into_iter()
        .map(|d| d.join(format!("{short}.py")))
        .find(|f| f.is_file());
    let file = in_library.or_else(|| {
        let f = ansible_core()?
            .dir
            .join("modules")
            .join(format!("{short}.py"));
        f.is_file().then_some(f)
    })?;
    Some(Found {
        file,
        import_name: format!("ansible.modules.{short}"),
        collection: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s");
        std::fs::write(&p, "#!/usr/bin/env -S python3 -u\nx").unwrap();
        assert_eq!(shebang_python(&p).as_deref(), Some("python3"));
        std::fs::write(&p, "#!/opt/venv/bin/python3.11\n").unwrap();
        assert_eq!(
            shebang_python(&p).as_deref(),
            Some("/opt/venv/bin/python3.11")
        );
        std::fs::write(&p, "no shebang").unwrap();
        assert_eq!(shebang_python(&p), None);
    }

    #[test]
    fn library_and_collection_modules() {
        let d = tempfile::tempdir().unwrap();
        let lib = d.path().join("library");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("kube.py"), "").unwrap();
        let coll = d
            .path()
            .join("ansible_collections/acme/tools/plugins/modules");
        std::fs::create_dir_all(&coll).unwrap();
        std::fs::write(coll.join("thing.py"), "").unwrap();
        let f = find("kube", d.path(), None).unwrap();
        assert_eq!(f.import_name, "ansible.modules.kube");
        assert_eq!(
            find("ansible.legacy.kube", d.path(), None).unwrap().file,
            f.file
        );
        let c = find("acme.tools.thing", d.path(), None).unwrap();
        assert_eq!(
            c.import_name,
            "ansible_collections.acme.tools.plugins.modules.thing"
        );
        assert!(c.collection.unwrap().ends_with("acme/tools"));
        assert!(find("acme.tools.nothing", d.path(), None).is_none());
    }
}
