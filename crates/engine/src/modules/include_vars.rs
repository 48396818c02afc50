//! `include_vars`: loads variables from controller YAML/JSON files (one file, or a
//! directory walked in Ansible's sorted order) and returns them as `ansible_facts`, which
//! the executor stores as host variables like `set_fact` does.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::args::{Flag, Int, List, Text};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::ansible::{is_identifier, split_words};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IncludeVarsArgs {
    #[serde(default)]
    _raw_params: Option<Text>,
    #[serde(default)]
    file: Option<Text>,
    #[serde(default)]
    dir: Option<Text>,
    #[serde(default)]
    name: Option<Text>,
    #[serde(default)]
    depth: Option<Int>,
    #[serde(default)]
    files_matching: Option<Text>,
    #[serde(default)]
    ignore_files: List,
    #[serde(default)]
    extensions: Option<List>,
    #[serde(default)]
    ignore_unknown_extensions: Flag,
    #[serde(default)]
    hash_behaviour: Option<Text>,
}

const VALID: &[&str] = &[
    "file",
    "dir",
    "name",
    "depth",
    "files_matching",
    "ignore_files",
    "extensions",
    "ignore_unknown_extensions",
    "hash_behaviour",
];

/// Loads variables from files.
pub struct IncludeVars;

/// Free-form text may be a file name or `key=value` pairs (`file=x.yml name=y`).
fn free_form(raw: &str) -> VarMap {
    let words = split_words(raw);
    let mut m = VarMap::new();
    let kv = !words.is_empty()
        && words
            .iter()
            .all(|w| w.split_once('=').is_some_and(|(k, _)| VALID.contains(&k)));
    if kv {
        for w in words {
            if let Some((k, v)) = w.split_once('=') {
                m.insert(k.to_string(), Value::String(v.to_string()));
            }
        }
    } else {
        m.insert("file".into(), Value::String(raw.trim().to_string()));
    }
    m
}

fn has_extension(path: &Path, exts: &[String]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => {
            exts.iter().any(|e| e.trim_start_matches('.') == ext)
        }
        _ => exts.iter().any(|e| e.is_empty()),
    }
}

fn load(path: &Path) -> Result<Map<String, Value>> {
    let node = crate::yaml::load_file(path)?;
    node.to_map("include_vars").map_err(|e| {
        e.help(format!(
            "{} must hold a mapping of variable names to values",
            path.display()
        ))
    })
}

/// Files of a directory tree in Ansible's order: directories sorted by path, files
/// sorted by name within each; `depth` 0 means no limit, 1 only the top directory.
fn walk_dir(root: &Path, depth: usize) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<(PathBuf, usize)> = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 1usize)];
    while let Some((d, level)) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("include_vars: cannot read directory {}: {}", d.display(), e),
            )
        })?;
        for e in entries.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() && (depth == 0 || level < depth) {
                stack.push((p, level + 1));
            }
        }
        dirs.push((d, level));
    }
    dirs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut files = Vec::new();
    for (d, _) in dirs {
        let mut here: Vec<PathBuf> = std::fs::read_dir(&d)
            .map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("include_vars: cannot read directory {}: {}", d.display(), e),
                )
            })?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        here.sort();
        files.extend(here);
    }
    Ok(files)
}

/// Parses and checks the arguments without reading a file: free-form text merged in,
/// the variable name, `file` or `dir` (not both), the patterns.
fn check(mut raw: VarMap) -> Result<IncludeVarsArgs> {
    if let Some(Value::String(text)) = raw.remove("_raw_params") {
        for (k, v) in free_form(&text) {
            raw.entry(k).or_insert(v);
        }
    }
    let a: IncludeVarsArgs = parse_args("include_vars", raw, VALID)?;
    let _ = (&a._raw_params, &a.hash_behaviour);
    if let Some(n) = &a.name {
        if !is_identifier(n.as_str()) {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!(
                    "include_vars: `{}` is not a valid variable name",
                    n.as_str()
                ),
            ));
        }
    }
    match (&a.file, &a.dir) {
        (Some(_), Some(_)) => {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "include_vars: `file` and `dir` are mutually exclusive",
            ))
        }
        (None, None) => {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "include_vars: give a `file` or a `dir`",
            )
            .help("e.g. `include_vars: vars/main.yaml` or `include_vars: {dir: vars}`"))
        }
        _ => {}
    }
    if let Some(m) = &a.files_matching {
        super::lineinfile::compile("files_matching", m.as_str())?;
    }
    for i in &a.ignore_files.0 {
        super::lineinfile::compile("ignore_files", &format!("{}$", i))?;
    }
    Ok(a)
}

#[async_trait]
impl Module for IncludeVars {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let exts = a
            .extensions
            .clone()
            .map(|l| l.0)
            .unwrap_or_else(|| vec!["json".into(), "yml".into(), "yaml".into()]);
        let files: Vec<PathBuf> = match (&a.file, &a.dir) {
            // `check` refused both and neither.
            (Some(_), Some(_)) | (None, None) => Vec::new(),
            (Some(f), None) => {
                let p = ctx.find_file("vars", f.as_str())?;
                if !has_extension(&p, &exts) {
                    return Err(Error::new(
                        ErrorKind::ModuleArgs,
                        format!(
                            "include_vars: {} does not have a valid extension: {}",
                            p.display(),
                            exts.join(", ")
                        ),
                    )
                    .help(
                        "name the file .yaml, .yml or .json, or list its extension in `extensions`",
                    ));
                }
                vec![p]
            }
            (None, Some(d)) => {
                let root = ctx.find_file("vars", d.as_str())?;
                if !root.is_dir() {
                    return Err(Error::new(
                        ErrorKind::ModuleArgs,
                        format!("include_vars: {} is not a directory", root.display()),
                    ));
                }
                let matcher = a
                    .files_matching
                    .as_ref()
                    .map(|m| super::lineinfile::compile("files_matching", m.as_str()))
                    .transpose()?;
                let ignores = a
                    .ignore_files
                    .0
                    .iter()
                    .map(|i| super::lineinfile::compile("ignore_files", &format!("{}$", i)))
                    .collect::<Result<Vec<_>>>()?;
                let mut out = Vec::new();
                for p in walk_dir(&root, a.depth.map_or(0, |Int(d)| d).max(0) as usize)? {
                    let name = p
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if ignores.iter().any(|r| r.is_match(name.as_bytes())) {
                        continue;
                    }
                    if matcher
                        .as_ref()
                        .is_some_and(|m| !m.is_match(name.as_bytes()))
                    {
                        continue;
                    }
                    if !has_extension(&p, &exts) {
                        if a.ignore_unknown_extensions.0 {
                            continue;
                        }
                        return Err(Error::new(
                            ErrorKind::ModuleArgs,
                            format!(
                                "include_vars: {} does not have a valid extension: {}",
                                p.display(),
                                exts.join(", ")
                            ),
                        )
                        .help("set `ignore_unknown_extensions: true` to skip other files"));
                    }
                    out.push(p);
                }
                out
            }
        };
        let mut vars = Map::new();
        for (i, f) in files.iter().enumerate() {
            let loaded = match load(f) {
                Ok(m) => m,
                // Ansible's action reports a file that is not a mapping in its result:
                // `message` (not msg), the facts and files so far; its msg is the generic one.
                Err(e) if e.message.starts_with("expected a mapping") => {
                    let included: Vec<Value> = files[..i]
                        .iter()
                        .map(|f| Value::String(f.display().to_string()))
                        .collect();
                    return Ok(
                        ModuleResult::failed("Task failed: Action failed: Unknown error.")
                            .with(
                                "message",
                                format!(
                                    "{} must be stored as a dictionary/hash",
                                    std::path::absolute(f)
                                        .unwrap_or_else(|_| f.clone())
                                        .display()
                                ),
                            )
                            .with("ansible_facts", Value::Object(Map::new()))
                            .with("ansible_included_var_files", Value::Array(included)),
                    );
                }
                Err(e) => return Err(e),
            };
            for (k, v) in loaded {
                vars.insert(k, v);
            }
        }
        let facts = match &a.name {
            Some(n) => {
                let mut m = Map::new();
                m.insert(n.as_str().to_string(), Value::Object(vars));
                m
            }
            None => vars,
        };
        let included: Vec<Value> = files
            .iter()
            .map(|f| Value::String(f.display().to_string()))
            .collect();
        Ok(ModuleResult::ok()
            .with_facts(facts, super::Effect::IncludedVars)
            .with("ansible_included_var_files", Value::Array(included)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn file_dir_and_name() {
        let dir = tempfile::tempdir().unwrap();
        let v = dir.path().join("vars");
        std::fs::create_dir_all(v.join("more/deeper")).unwrap();
        std::fs::write(v.join("main.yaml"), "a: 1\nmode: 0644\nlist: [x]\n").unwrap();
        std::fs::write(v.join("b.yml"), "b: two\na: 2\n").unwrap();
        std::fs::write(v.join("more/c.json"), "{\"c\": true, \"a\": 3}").unwrap();
        std::fs::write(v.join("more/deeper/d.yaml"), "d: 4\n").unwrap();
        std::fs::write(v.join("README"), "not vars").unwrap();
        let c = ctx(dir.path(), json!({}));
        let r = IncludeVars
            .run(&c, args(json!({"_raw_params": "main.yaml"})))
            .await
            .unwrap();
        assert!(!r.changed);
        assert_eq!(
            r.data["ansible_facts"],
            json!({"a": 1, "mode": 420, "list": ["x"]})
        );
        let r = IncludeVars
            .run(&c, args(json!({"file": "vars/b.yml", "name": "cfg"})))
            .await
            .unwrap();
        assert_eq!(
            r.data["ansible_facts"],
            json!({"cfg": {"b": "two", "a": 2}})
        );
        // Directory: top files sorted, then subdirectories; later files win.
        let r = IncludeVars
            .run(
                &c,
                args(json!({"dir": "vars", "ignore_unknown_extensions": true})),
            )
            .await
            .unwrap();
        assert_eq!(r.data["ansible_facts"]["a"], json!(3));
        assert_eq!(r.data["ansible_facts"]["d"], json!(4));
        let files = r.data["ansible_included_var_files"].as_array().unwrap();
        assert!(files[0].as_str().unwrap().ends_with("b.yml"));
        assert!(files[1].as_str().unwrap().ends_with("main.yaml"));
        let r = IncludeVars
            .run(
                &c,
                args(json!({"dir": "vars", "depth": 1, "ignore_files": ["README", "main.yaml"]})),
            )
            .await
            .unwrap();
        assert_eq!(r.data["ansible_facts"], json!({"b": "two", "a": 2}));
        let r = IncludeVars
            .run(&c, args(json!({"_raw_params": "dir=vars files_matching=^[cd] ignore_unknown_extensions=yes"})))
            .await
            .unwrap();
        assert_eq!(r.data["ansible_facts"], json!({"c": true, "a": 3, "d": 4}));
        let e = IncludeVars
            .run(&c, args(json!({"dir": "vars"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("README"));
        let e = IncludeVars
            .run(&c, args(json!({"file": "nope.yaml"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("nope.yaml"));
        let e = IncludeVars
            .run(&c, args(json!({"file": "main.yaml", "nmae": "x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("nmae"));
    }

    #[test]
    fn validate_at_load() {
        let check = |a: Value| IncludeVars.validate(&args(a));
        assert!(check(json!({"_raw_params": "vars/main.yaml"})).is_ok());
        assert!(check(json!({"dir": "vars", "depth": "2", "ignore_files": "a,b"})).is_ok());
        let e = check(json!({"file": "a.yaml", "nmae": "x"})).unwrap_err();
        assert!(e.message.contains("include_vars") && e.message.contains("nmae"));
        let e = check(json!({"file": "a.yaml", "dir": "vars"})).unwrap_err();
        assert!(e.message.contains("mutually exclusive"));
        let e = check(json!({"name": "x"})).unwrap_err();
        assert!(e.message.contains("`file` or a `dir`"));
        assert!(check(json!({"file": "a.yaml", "name": "not-a-name"})).is_err());
    }
}
