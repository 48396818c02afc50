//! What is sent to run a Python module on a host, the way ansible-core's AnsiballZ does it:
//! the module and the `module_utils` it may import travel together, the arguments are
//! handed to `ansible.module_utils.basic` before the module runs as `__main__`, and its
//! one JSON line is the result. Unlike AnsiballZ nothing is written on the host: the
//! files arrive zlib-compressed on standard input and are imported from memory.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::find::{AnsibleCore, Found};

/// The program Python runs (`python3 -c BOOT`): reads the arguments line and the files
/// from standard input, imports from them, then runs the module. No single quote in it:
/// it travels inside one in the remote shell line.
pub const BOOT: &str = r#"import sys, json, zlib, runpy, importlib.abc, importlib.util
args = sys.stdin.buffer.readline()
files = json.loads(zlib.decompress(sys.stdin.buffer.read()))
dirs = set()
for f in files:
    p = f.rsplit("/", 1)[0]
    while p and p not in dirs:
        dirs.add(p)
        p = p.rpartition("/")[0]
class Finder(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    def origin(self, name):
        p = name.replace(".", "/")
        if p + "/__init__.py" in files or (p in dirs and p + ".py" not in files):
            return p + "/__init__.py", True
        if p + ".py" in files:
            return p + ".py", False
        return None, False
    def find_spec(self, name, path=None, target=None):
        origin, package = self.origin(name)
        if origin is None:
            return None
        spec = importlib.util.spec_from_loader(name, self, origin=origin, is_package=package)
        spec.has_location = True
        return spec
    def is_package(self, name):
        return self.origin(name)[1]
    def get_source(self, name):
        return files.get(self.origin(name)[0], "")
    def get_code(self, name):
        origin = self.origin(name)[0]
        return compile(files.get(origin, ""), origin, "exec")
    def exec_module(self, module):
        module.__file__ = module.__spec__.origin
        exec(self.get_code(module.__name__), module.__dict__)
sys.meta_path.insert(0, Finder())
sys.stdin = open("/dev/null")
from ansible.module_utils import basic
basic._ANSIBLE_ARGS = args
basic._ANSIBLE_PROFILE = "legacy"
name = json.loads(args)["_kk_import_name"]
runpy.run_module(name, init_globals=dict(_module_fqn=name, _modlib_path=""), run_name="__main__", alter_sys=True)
raise SystemExit("the module ended without printing its result")
"#;

/// The module's files, as the compressed standard input after the arguments line.
pub fn files(found: &Found, core: &AnsibleCore) -> std::io::Result<Vec<u8>> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    files.insert("ansible/__init__.py".into(), String::new());
    add_tree(
        &mut files,
        &core.dir.join("module_utils"),
        "ansible/module_utils",
    )?;
    let module = std::fs::read_to_string(&found.file)?;
    let mut wanted = Vec::new();
    if let Some(coll) = &found.collection {
        wanted.push(coll.clone());
    }
    wanted.extend(referenced_collections(&module, core, found));
    let mut done = Vec::new();
    while let Some(coll) = wanted.pop() {
        if done.contains(&coll) {
            continue;
        }
        let Some(prefix) = collection_prefix(&coll) else {
            continue;
        };
        let before = files.len();
        add_tree(
            &mut files,
            &coll.join("plugins/module_utils"),
            &format!("{prefix}/plugins/module_utils"),
        )?;
        // Collections that this collection's module_utils import come too.
        let added: Vec<String> = files.values().skip(before).cloned().collect();
        for text in added {
            wanted.extend(referenced_collections(&text, core, found));
        }
        done.push(coll);
    }
    let path = found.import_name.replace('.', "/") + ".py";
    files.insert(path, module);
    let json = serde_json::to_vec(&files)?;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&json)?;
    z.finish()
}

/// `ansible_collections/ns/coll` of a collection directory.
fn collection_prefix(coll: &Path) -> Option<String> {
    let coll_name = coll.file_name()?.to_str()?;
    let ns = coll.parent()?.file_name()?.to_str()?;
    Some(format!("ansible_collections/{ns}/{coll_name}"))
}

/// The collections whose `plugins.module_utils` a source imports, found where the module
/// itself was found (or on the controller Python's path).
fn referenced_collections(
    text: &str,
    core: &AnsibleCore,
    found: &Found,
) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("ansible_collections.") {
        let rest = &text[i + "ansible_collections.".len()..];
        let mut parts = rest.split('.');
        let (Some(ns), Some(coll)) = (parts.next(), parts.next()) else {
            continue;
        };
        let ok =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok(ns) || !ok(coll) {
            continue;
        }
        let roots = found
            .collection
            .iter()
            .filter_map(|c| c.parent()?.parent()?.parent().map(Path::to_path_buf))
            .chain(core.sys_path.iter().cloned());
        for root in roots {
            let dir = root.join("ansible_collections").join(ns).join(coll);
            if dir.is_dir() {
                if !out.contains(&dir) {
                    out.push(dir);
                }
                break;
            }
        }
    }
    out
}

/// Every `.py` file below `dir`, as `prefix/relative/path.py`, in name order.
fn add_tree(files: &mut BTreeMap<String, String>, dir: &Path, prefix: &str) -> std::io::Result<()> {
    let mut entries: Vec<_> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.collect::<Result<_, _>>()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if path.is_dir() {
            if name != "__pycache__" {
                add_tree(files, &path, &format!("{prefix}/{name}"))?;
            }
        } else if name.ends_with(".py") {
            files.insert(format!("{prefix}/{name}"), std::fs::read_to_string(&path)?);
        }
    }
    Ok(())
}

/// The arguments line: the task's arguments and the internal ones every ansible-core
/// since 2.9 reads (the rest keep their defaults), plus the name to import.
pub fn args_line(
    mut args: serde_json::Map<String, Value>,
    module_name: &str,
    import_name: &str,
    check_mode: bool,
    diff: bool,
    no_log: bool,
    version: &str,
) -> Vec<u8> {
    args.insert("_ansible_check_mode".into(), check_mode.into());
    args.insert("_ansible_diff".into(), diff.into());
    args.insert("_ansible_no_log".into(), no_log.into());
    args.insert("_ansible_module_name".into(), module_name.into());
    args.insert("_ansible_version".into(), version.into());
    args.insert("_ansible_verbosity".into(), 0.into());
    let mut line =
        serde_json::to_vec(&json!({"ANSIBLE_MODULE_ARGS": args, "_kk_import_name": import_name}))
            .unwrap_or_default();
    line.push(b'\n');
    line
}

/// The module's JSON result out of its standard output, skipping lines printed before it
/// and after it (ansible-core's `_filter_non_json_lines`).
pub fn parse_result(stdout: &str) -> Option<serde_json::Map<String, Value>> {
    let start = stdout
        .lines()
        .scan(0usize, |off, l| {
            let here = *off;
            *off += l.len() + 1;
            Some((here, l))
        })
        .find(|(_, l)| l.trim_start().starts_with('{'))?
        .0;
    let mut text = &stdout[start..];
    loop {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) {
            return Some(m);
        }
        let end = text.trim_end().rfind('\n')?;
        text = &text[..end];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_among_other_lines() {
        let m = parse_result("warning: x\n{\"changed\": true, \"a\": [1]}\ntrailing\n").unwrap();
        assert_eq!(m["changed"], true);
        assert!(parse_result("no json here").is_none());
        assert!(parse_result("{broken").is_none());
    }

    #[test]
    fn args_carry_the_internal_ones() {
        let mut a = serde_json::Map::new();
        a.insert("path".into(), "/x".into());
        let line = args_line(
            a,
            "ini_file",
            "ansible_collections.c.g.plugins.modules.ini_file",
            true,
            false,
            true,
            "2.19.0",
        );
        assert_eq!(line.last(), Some(&b'\n'));
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["ANSIBLE_MODULE_ARGS"]["path"], "/x");
        assert_eq!(v["ANSIBLE_MODULE_ARGS"]["_ansible_check_mode"], true);
        assert_eq!(v["ANSIBLE_MODULE_ARGS"]["_ansible_no_log"], true);
        assert_eq!(
            v["_kk_import_name"],
            "ansible_collections.c.g.plugins.modules.ini_file"
        );
    }

    #[test]
    fn boot_has_no_single_quote() {
        assert!(!BOOT.contains('\''));
    }
}
