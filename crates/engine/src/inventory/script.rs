//! Inventory scripts (Ansible's `script` plugin): an executable `-i` file is run with
//! `--list` and its JSON read as groups (`hosts`, `vars`, `children`) and
//! `_meta.hostvars`; without `_meta`, `--host <name>` is asked for each host, as Ansible
//! does. A script that fails, or prints what is not inventory JSON, is a load error naming
//! the script, its exit code and its standard error.

use std::path::Path;
use std::process::Command;

use indexmap::IndexSet;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result, SourceFile, Span};
use crate::vars::VarMap;

use super::{Inventory, ALL, MAX_HOSTS};

/// True for a file Ansible's script plugin would run: executable by someone.
pub(super) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The error for what a script printed or did, with its standard error as help.
fn script_error(path: &Path, msg: String, stderr: &str) -> Error {
    let e = Error::new(
        ErrorKind::Syntax,
        format!(
            "failed to parse inventory {} with the script plugin: {}",
            path.display(),
            msg
        ),
    );
    let stderr = stderr.trim_end();
    if stderr.trim().is_empty() {
        e.help("an inventory script prints its inventory as JSON for `--list` (and a host's variables for `--host <name>`) and exits 0")
    } else {
        e.help(format!(
            "standard error from the inventory script:\n{}",
            stderr
        ))
    }
}

/// Runs the script with `args`; its standard output and error.
fn run(path: &Path, args: &[&str]) -> Result<(String, String)> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let out = Command::new(&abs).args(args).output().map_err(|e| {
        Error::new(
            ErrorKind::Syntax,
            format!(
                "failed to parse inventory {} with the script plugin: cannot run `{} {}`: {}",
                path.display(),
                path.display(),
                args.join(" "),
                e
            ),
        )
        .help("an inventory script needs an interpreter line (`#!/usr/bin/env python3`) or to be a program")
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        let how = match out.status.code() {
            Some(c) => format!("exit code {}", c),
            None => "a signal".to_string(),
        };
        return Err(script_error(
            path,
            format!("`{}` ended with {}", args.join(" "), how),
            &stderr,
        ));
    }
    let stdout = String::from_utf8(out.stdout).map_err(|_| {
        script_error(
            path,
            format!("the output of `{}` is not UTF-8", args.join(" ")),
            &stderr,
        )
    })?;
    Ok((stdout, stderr))
}

/// The JSON a script printed, as a mapping.
fn parse_json(path: &Path, args: &[&str], text: &str, stderr: &str) -> Result<VarMap> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(script_error(
            path,
            format!(
                "`{}` printed {} where a JSON object was expected",
                args.join(" "),
                kind_name(&other)
            ),
            stderr,
        )),
        Err(e) => Err(script_error(
            path,
            format!(
                "the output of `{}` is not JSON: {} (at line {}, column {})",
                args.join(" "),
                e,
                e.line(),
                e.column()
            ),
            stderr,
        )),
    }
}

/// Python's type name for a JSON value, as Ansible's messages say it.
fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "'NoneType'",
        Value::Bool(_) => "'bool'",
        Value::Number(n) if n.is_f64() => "'float'",
        Value::Number(_) => "'int'",
        Value::String(_) => "'str'",
        Value::Array(_) => "'list'",
        Value::Object(_) => "'dict'",
    }
}

impl Inventory {
    /// Runs an inventory script and adds what it printed (the caller rebuilds).
    pub(super) fn load_script(&mut self, path: &Path) -> Result<()> {
        let (stdout, stderr) = run(path, &["--list"])?;
        if !stderr.trim().is_empty() {
            self.notices.push(stderr.trim_end().to_string());
        }
        let data = parse_json(path, &["--list"], &stdout, &stderr)?;
        let fail = |msg: String| script_error(path, msg, &stderr);
        // Hosts get their position from the script's output (line 1): `inventory_file`.
        let span = Span {
            file: SourceFile::new(path, String::new()),
            line: 1,
            col: 1,
        };
        let mut seen: IndexSet<String> = IndexSet::new();
        let mut meta: Option<VarMap> = None;
        for (group, gdata) in &data {
            if group == "_meta" {
                let hv = gdata.get("hostvars");
                match hv {
                    Some(Value::Object(m)) => meta = Some(m.clone()),
                    Some(other) => {
                        return Err(fail(format!(
                            "`_meta.hostvars` is {} instead of 'dict'",
                            kind_name(other)
                        )))
                    }
                    // `_meta` without `hostvars`: Ansible then asks `--host`.
                    None => {}
                }
                continue;
            }
            self.script_group(group, gdata, &span, &mut seen)
                .map_err(&fail)?;
        }
        if self.hosts.len() > MAX_HOSTS {
            return Err(super::too_many_hosts(&span));
        }
        for host in &seen {
            let vars = match &meta {
                Some(m) => match m.get(host) {
                    None => VarMap::new(),
                    Some(Value::Object(v)) => v.clone(),
                    Some(other) => {
                        return Err(fail(format!(
                            "`_meta.hostvars.{}` is {} instead of 'dict'",
                            host,
                            kind_name(other)
                        )))
                    }
                },
                None => {
                    let args = ["--host", host.as_str()];
                    let (out, err) = run(path, &args)?;
                    if out.trim().is_empty() {
                        VarMap::new()
                    } else {
                        parse_json(path, &args, &out, &err)?
                    }
                }
            };
            self.add_host_def(host, &vars, Some(&span));
        }
        Ok(())
    }

    /// One group of a script's `--list` output, in Ansible's forms: a mapping with `hosts`
    /// (a list), `vars` and `children`; a bare list of hosts; or a mapping of variables
    /// without those keys, which Ansible takes as a host named like the group.
    fn script_group(
        &mut self,
        group: &str,
        gdata: &Value,
        span: &Span,
        seen: &mut IndexSet<String>,
    ) -> std::result::Result<(), String> {
        if group != ALL {
            self.groups.entry(group.to_string()).or_default();
        }
        let owned;
        let data: &serde_json::Map<String, Value> = match gdata {
            Value::Object(m)
                if ["hosts", "vars", "children"]
                    .iter()
                    .any(|k| m.contains_key(*k)) =>
            {
                m
            }
            Value::Object(m) => {
                let mut d = serde_json::Map::new();
                d.insert("hosts".into(), Value::Array(vec![Value::from(group)]));
                d.insert("vars".into(), Value::Object(m.clone()));
                owned = d;
                &owned
            }
            other => {
                let mut d = serde_json::Map::new();
                d.insert("hosts".into(), other.clone());
                owned = d;
                &owned
            }
        };
        if let Some(hosts) = data.get("hosts") {
            let Value::Array(hosts) = hosts else {
                return Err(format!(
                    "`{}.hosts` is {} instead of 'list'",
                    group,
                    kind_name(hosts)
                ));
            };
            for h in hosts {
                let Some(name) = h.as_str() else {
                    return Err(format!(
                        "a host of `{}.hosts` is {} instead of 'str'",
                        group,
                        kind_name(h)
                    ));
                };
                super::ranges::check_host_name(name, span).map_err(|e| e.message)?;
                seen.insert(name.to_string());
                self.add_host_def(name, &VarMap::new(), Some(span));
                if group == ALL {
                    self.all_direct.insert(name.to_string());
                } else if let Some(g) = self.groups.get_mut(group) {
                    g.hosts.insert(name.to_string());
                }
            }
        }
        if let Some(vars) = data.get("vars") {
            let Value::Object(vars) = vars else {
                return Err(format!(
                    "`{}.vars` is {} instead of 'dict'",
                    group,
                    kind_name(vars)
                ));
            };
            if group == ALL {
                self.combine_into_all(vars);
            } else if let Some(g) = self.groups.get_mut(group) {
                for (k, v) in vars {
                    g.vars.insert(k.clone(), v.clone());
                }
            }
        }
        if let Some(children) = data.get("children") {
            let names: Vec<&str> = match children {
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                Value::Object(m) => m.keys().map(String::as_str).collect(),
                Value::String(s) => vec![s.as_str()],
                _ => Vec::new(),
            };
            for c in names {
                if c == ALL {
                    continue;
                }
                self.groups.entry(c.to_string()).or_default();
                if group == ALL {
                    self.all_children.insert(c.to_string());
                }
                if group != ALL {
                    if let Some(g) = self.groups.get_mut(group) {
                        g.children.entry(c.to_string()).or_insert(None);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets `all`'s variables key by key (Ansible's set_variable on the group).
    fn combine_into_all(&mut self, vars: &VarMap) {
        for (k, v) in vars {
            self.all_vars.insert(k.clone(), v.clone());
        }
    }
}
