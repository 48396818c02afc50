//! Variables from the command line and Config files (`-c`, `-e`, `--set`).

use std::path::Path;

use super::VarMap;
use crate::error::{Error, ErrorKind, Result};

/// Loads a `kind: Config` file and returns its `spec`.
pub fn load_config(path: &Path) -> Result<VarMap> {
    let node = crate::yaml::load_file(path)?;
    match node.get("spec") {
        Some(spec) => spec.to_map("Config spec"),
        None => Err(Error::syntax("a Config file needs a `spec:` mapping", &node.span)),
    }
}

/// Parses one `-e` argument: `@file`, a YAML/JSON mapping, or `k=v` pairs.
pub fn parse_extra_var(arg: &str, base_dir: &Path) -> Result<VarMap> {
    if let Some(file) = arg.strip_prefix('@') {
        let node = crate::yaml::load_file(&base_dir.join(file))?;
        return node.to_map("extra vars file");
    }
    let t = arg.trim_start();
    if t.starts_with('{') {
        return crate::yaml::parse_str("-e", arg)?.to_map("extra vars");
    }
    Ok(crate::project::kv::parse_kv(arg, false))
}

/// Applies one `--set a.b=v` argument.
pub fn apply_set(target: &mut VarMap, arg: &str) -> Result<()> {
    let (k, v) = arg.split_once('=').ok_or_else(|| Error::new(ErrorKind::Options, format!("--set {:?}: expected key=value", arg)))?;
    let mut value = serde_json::Value::String(v.to_string());
    for part in k.split('.').rev().skip(0).collect::<Vec<_>>().into_iter() {
        let mut m = VarMap::new();
        m.insert(part.to_string(), value);
        value = serde_json::Value::Object(m);
    }
    if let serde_json::Value::Object(m) = value {
        super::merge_maps(target, &m);
    }
    Ok(())
}
