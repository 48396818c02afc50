//! The lookups that produce values from the run: `env`, `pipe`, `vars`, `items`, `dict`.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};

use std::path::Path;

use super::{term_str, var_str};
use crate::template::filters::{fail, map_value, py_type};

pub(super) fn env_lookup(terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let default = kwargs
        .get::<Option<Value>>("default")?
        .unwrap_or_else(|| Value::from(""));
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("env", t)?;
        let name = term.split_whitespace().next().unwrap_or_default();
        match std::env::var(name) {
            Ok(v) => out.push(Value::from(v)),
            Err(_) if default.is_undefined() => {
                return Err(fail(format!(
                    "lookup('env'): the environment variable '{}' is not set",
                    name
                )))
            }
            Err(_) => out.push(default.clone()),
        }
    }
    Ok(out)
}

pub(super) fn pipe(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for t in terms {
        let cmd = term_str("pipe", t)?;
        let mut c = std::process::Command::new("/bin/sh");
        c.arg("-c").arg(&cmd).stdin(std::process::Stdio::null());
        if let Some(dir) = var_str(state, "playbook_dir").filter(|d| Path::new(d).is_dir()) {
            c.current_dir(dir);
        }
        let res = c
            .output()
            .map_err(|e| fail(format!("lookup('pipe'): cannot run `{}`: {}", cmd, e)))?;
        if !res.status.success() {
            let code = res
                .status
                .code()
                .map(|c| c.to_string())
                .unwrap_or_else(|| "a signal".into());
            let stderr = String::from_utf8_lossy(&res.stderr);
            return Err(fail(format!(
                "lookup('pipe'): `{}` returned {}{}",
                cmd,
                code,
                if stderr.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", stderr.trim())
                }
            )));
        }
        let stdout = String::from_utf8_lossy(&res.stdout);
        out.push(Value::from(stdout.trim_end()));
    }
    Ok(out)
}

pub(super) fn vars(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let default = kwargs.get::<Option<Value>>("default")?;
    let mut out = Vec::new();
    for t in terms {
        let name = term_str("vars", t)?;
        match state.lookup(&name).filter(|v| !v.is_undefined()) {
            Some(v) if v.kind() == ValueKind::Invalid => {
                return Err(fail(format!(
                    "lookup('vars'): the variable '{}' failed: {}",
                    name, v
                )));
            }
            Some(v) => out.push(v),
            None => match &default {
                Some(d) => out.push(d.clone()),
                None => {
                    return Err(Error::new(
                        ErrorKind::UndefinedError,
                        format!("lookup('vars'): no variable found with this name: {}", name),
                    ))
                }
            },
        }
    }
    Ok(out)
}

pub(super) fn flatten_once(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for t in terms {
        if matches!(t.kind(), ValueKind::Seq | ValueKind::Iterable) {
            out.extend(t.try_iter()?);
        } else {
            out.push(t.clone());
        }
    }
    Ok(out)
}

pub(super) fn dict(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for t in terms {
        if t.kind() != ValueKind::Map {
            return Err(fail(format!(
                "lookup('dict'): expected a dict, got {} ({})",
                py_type(t),
                t
            )));
        }
        for k in t.try_iter()? {
            let v = t.get_item(&k)?;
            out.push(map_value(vec![
                (Value::from("key"), k),
                (Value::from("value"), v),
            ]));
        }
    }
    Ok(out)
}
