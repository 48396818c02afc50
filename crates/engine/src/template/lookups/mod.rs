//! Ansible's `lookup(name, *terms, **kwargs)` and `query`/`q` (the same with
//! `wantlist=True`), with the lookups playbooks use: `file`, `template`, `env`,
//! `pipe`, `vars`, `items`, `list`, `dict`, `first_found`, `sequence`.
//!
//! Relative files are searched the way Ansible does: `{{ role_path }}/<sub>`,
//! `{{ role_path }}`, `{{ playbook_dir }}/<sub>`, `{{ playbook_dir }}` (or the
//! directories of `ansible_search_path` when set), where `<sub>` is `files` or
//! `templates`. Errors name the lookup and say what failed.

use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};

use super::filters::{expand_user, fail, py_str, py_type};

mod files;
mod sequence;
#[cfg(test)]
mod tests;
mod values;

use files::{file, first_found, template};
use sequence::sequence;
use values::{dict, env_lookup, flatten_once, pipe, vars};

/// Registers `lookup`, `query` and `q`.
pub fn register(env: &mut Environment<'static>) {
    env.add_function("lookup", lookup);
    env.add_function("query", query);
    env.add_function("q", query);
}

/// The lookups that read the controller (files, the environment) or run a command.
const HOST_LOOKUPS: [&str; 5] = ["file", "template", "env", "pipe", "first_found"];

/// Registers `lookup`, `query` and `q` without the lookups that touch the controller
/// ([`HOST_LOOKUPS`]), which are an error instead: for fuzzing, where a generated
/// template must never run `lookup('pipe', …)` or read a file.
pub(crate) fn register_pure(env: &mut Environment<'static>) {
    fn pure(name: &str) -> Result<(), Error> {
        let short = name.rsplit('.').next().unwrap_or(name);
        if HOST_LOOKUPS.contains(&short) {
            return Err(fail(format!("lookup('{}') is disabled here", name)));
        }
        Ok(())
    }
    env.add_function(
        "lookup",
        |state: &State, name: String, terms: Rest<Value>, kwargs: Kwargs| {
            pure(&name)?;
            lookup(state, name, terms, kwargs)
        },
    );
    for q in ["query", "q"] {
        env.add_function(
            q,
            |state: &State, name: String, terms: Rest<Value>, kwargs: Kwargs| {
                pure(&name)?;
                query(state, name, terms, kwargs)
            },
        );
    }
}

fn lookup(state: &State, name: String, terms: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let terms = terms.0;
    let wantlist = kwargs.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    invoke(state, &name, terms, kwargs, wantlist)
}

fn query(state: &State, name: String, terms: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let terms = terms.0;
    let _ = kwargs.get::<Option<bool>>("wantlist")?;
    invoke(state, &name, terms, kwargs, true)
}

/// Runs a lookup and shapes its result as Ansible does: a list for `query`, else
/// strings joined with commas, a single non-string item alone, or the list.
fn invoke(
    state: &State,
    name: &str,
    terms: Vec<Value>,
    kwargs: Kwargs,
    wantlist: bool,
) -> Result<Value, Error> {
    let short = name
        .strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name);
    let errors = kwargs
        .get::<Option<String>>("errors")?
        .unwrap_or_else(|| "strict".into());
    if !["strict", "warn", "ignore"].contains(&errors.as_str()) {
        return Err(fail(format!(
            "lookup('{}'): errors must be 'strict', 'warn' or 'ignore', got '{}'",
            short, errors
        )));
    }
    let result = match short {
        "file" => file(state, &terms, &kwargs),
        "template" => template(state, &terms, &kwargs),
        "env" => env_lookup(&terms, &kwargs),
        "pipe" => pipe(state, &terms),
        "vars" => vars(state, &terms, &kwargs),
        "items" => Ok(flatten_once(&terms)?),
        "list" => Ok(terms.clone()),
        "dict" => dict(&terms),
        "first_found" => first_found(state, &terms, &kwargs),
        "sequence" => sequence(&terms, &kwargs),
        other => Err(fail(format!(
            "lookup plugin '{}' is not available; kk provides file, template, env, pipe, vars, items, list, dict, first_found, sequence",
            other
        ))),
    };
    let result = match result {
        Ok(r) => {
            kwargs
                .assert_all_used()
                .map_err(|e| fail(format!("lookup('{}'): {}", short, e)))?;
            r
        }
        Err(e) if errors != "strict" && e.kind() != ErrorKind::UndefinedError => Vec::new(),
        Err(e) => return Err(e),
    };
    if wantlist {
        return Ok(Value::from(result));
    }
    if result.iter().all(|v| v.kind() == ValueKind::String) {
        return Ok(Value::from(
            result.iter().map(py_str).collect::<Vec<_>>().join(","),
        ));
    }
    if result.len() == 1 {
        return Ok(result.into_iter().next().unwrap_or_default());
    }
    Ok(Value::from(result))
}

fn term_str(lookup: &str, v: &Value) -> Result<String, Error> {
    match v.as_str() {
        Some(s) => Ok(s.to_string()),
        None => Err(fail(format!(
            "lookup('{}'): expected a string term, got {} ({})",
            lookup,
            py_type(v),
            v
        ))),
    }
}

/// A variable from the template's context as a string, when it is one.
fn var_str(state: &State, name: &str) -> Option<String> {
    state
        .lookup(name)
        .and_then(|v| v.as_str().map(str::to_string))
}

/// Directories to search for a relative file, in Ansible's order.
fn search_dirs(state: &State, sub: &str) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    if let Some(list) = state
        .lookup("ansible_search_path")
        .filter(|v| v.kind() == ValueKind::Seq)
    {
        if let Ok(iter) = list.try_iter() {
            bases.extend(iter.filter_map(|v| v.as_str().map(PathBuf::from)));
        }
    }
    if bases.is_empty() {
        for var in ["role_path", "playbook_dir"] {
            if let Some(p) = var_str(state, var) {
                bases.push(PathBuf::from(p));
            }
        }
    }
    let mut dirs = Vec::new();
    for b in bases {
        let with_sub = b.join(sub);
        if !dirs.contains(&with_sub) {
            dirs.push(with_sub);
        }
        if !dirs.contains(&b) {
            dirs.push(b);
        }
    }
    dirs
}

/// Finds a controller file for a lookup, or says where it looked.
fn find_file(state: &State, lookup: &str, sub: &str, term: &str) -> Result<PathBuf, Error> {
    let term = expand_user(term);
    let p = Path::new(&term);
    if p.is_absolute() {
        if p.exists() {
            return Ok(p.to_path_buf());
        }
        return Err(fail(format!(
            "lookup('{}'): the file '{}' does not exist",
            lookup, term
        )));
    }
    let dirs = search_dirs(state, sub);
    if dirs.is_empty() {
        if p.exists() {
            return Ok(p.to_path_buf());
        }
        return Err(fail(format!(
            "lookup('{}'): could not find '{}' (relative to the current directory; neither role_path nor playbook_dir is set)",
            lookup, term
        )));
    }
    for d in &dirs {
        let c = d.join(p);
        if c.exists() {
            return Ok(c);
        }
    }
    Err(fail(format!(
        "lookup('{}'): could not find '{}'; searched: {}",
        lookup,
        term,
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// A file a lookup reads, through the engine's one file reader: at most
/// [`crate::error::MAX_FILE_SIZE`] bytes (so `/dev/zero` fails instead of filling memory),
/// UTF-8, a byte order mark dropped.
fn read_text(lookup: &str, path: &Path) -> Result<String, Error> {
    crate::error::read_file(path).map_err(|e| {
        let at = e.span.as_ref().map(|s| format!("{}: ", s));
        fail(format!(
            "lookup('{}'): {}{}",
            lookup,
            at.unwrap_or_default(),
            e.message
        ))
    })
}
