//! Ansible's `lookup(name, *terms, **kwargs)` and `query`/`q` (the same with
//! `wantlist=True`), with the lookups playbooks use: `file`, `template`, `env`,
//! `pipe`, `vars`, `items`, `list`, `dict`, `first_found`, `sequence`, `nested`,
//! `together`, `indexed_items`, `random_choice`, `subelements`, `varnames`,
//! `inventory_hostnames`, `lines`, `fileglob`, `csvfile`, `ini`, `password`, `url`,
//! `config`, `unvault`.
//! `with_<lookup>` loops run them through [`run_with`].
//!
//! Relative files are searched the way Ansible does: `{{ role_path }}/<sub>`,
//! `{{ role_path }}`, `{{ playbook_dir }}/<sub>`, `{{ playbook_dir }}` (or the
//! directories of `ansible_search_path` when set), where `<sub>` is `files` or
//! `templates`. Errors name the lookup and say what failed.

use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};

use super::filters::{expand_user, fail, py_str, py_type};

mod config;
mod files;
mod loops;
mod password;
mod sequence;
mod tables;
#[cfg(test)]
mod tests;
mod url;
mod values;

use files::{file, first_found, template};
use loops::{
    indexed_items, inventory_hostnames, nested, random_choice, subelements, together, varnames,
};
use sequence::sequence;
use tables::{csvfile, fileglob, ini, lines};
use values::{dict, env_lookup, flatten_once, pipe, vars};

/// Registers `lookup`, `query` and `q`.
pub fn register(env: &mut Environment<'static>) {
    env.add_function("lookup", lookup);
    env.add_function("query", query);
    env.add_function("q", query);
    env.add_function(WITH_FN, with_loop);
}

/// ansible-core's builtin lookups: `with_<name>` is a loop keyword for each of them
/// (a name kk does not provide fails when the loop runs, naming the lookup).
const BUILTIN: [&str; 25] = [
    "config",
    "csvfile",
    "dict",
    "env",
    "file",
    "fileglob",
    "first_found",
    "indexed_items",
    "ini",
    "inventory_hostnames",
    "items",
    "lines",
    "list",
    "nested",
    "password",
    "pipe",
    "random_choice",
    "sequence",
    "subelements",
    "template",
    "together",
    "unvault",
    "url",
    "varnames",
    "vars",
];

/// True when `with_<name>` names a lookup (Ansible's `name in lookup_loader`).
pub fn is_known(name: &str) -> bool {
    BUILTIN.contains(&short_name(name))
}

/// `ansible.builtin.x` and `ansible.legacy.x` are `x`.
fn short_name(name: &str) -> &str {
    name.strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name)
}

/// The function a `with_<lookup>` loop calls: `(name, terms)` with the terms as one list.
const WITH_FN: &str = "__kk_with_lookup";
/// The variable holding a `with_<lookup>` loop's terms while its lookup runs.
const WITH_TERMS: &str = "__kk_with_terms";

fn with_loop(state: &State, name: String, terms: Vec<Value>) -> Result<Value, Error> {
    invoke(
        state,
        &name,
        terms,
        Kwargs::from_iter(std::iter::empty::<(&str, Value)>()),
        true,
    )
}

/// The items of a `with_<name>` loop: the lookup run over the rendered keyword value as
/// its terms (a list as it is, anything else as the one term), with `wantlist`.
///
/// `search_path` is ansible-core's `ansible_search_path` of the task (its roles' paths,
/// the directory of its file, the playbook's), used unless the variables set it.
pub fn run_with(
    templar: &crate::template::Templar,
    name: &str,
    terms: serde_json::Value,
    ctx: &Value,
    search_path: &[String],
) -> crate::error::Result<serde_json::Value> {
    if !is_known(name) {
        return Err(crate::error::Error::new(
            crate::error::ErrorKind::Template,
            format!("`with_{}`: there is no lookup named '{}'", name, name),
        ));
    }
    let terms = match terms {
        serde_json::Value::Array(a) => serde_json::Value::Array(a),
        other => serde_json::Value::Array(vec![other]),
    };
    let defined = ctx
        .get_attr("ansible_search_path")
        .is_ok_and(|v| !v.is_undefined());
    let ctx = match defined || search_path.is_empty() {
        true => {
            minijinja::context! { __kk_with_terms => crate::template::to_mj(&terms), ..ctx.clone() }
        }
        false => minijinja::context! {
            __kk_with_terms => crate::template::to_mj(&terms),
            ansible_search_path => search_path.to_vec(),
            ..ctx.clone()
        },
    };
    let expr = format!("{}('{}', {})", WITH_FN, name, WITH_TERMS);
    let v = templar.eval_expr(&expr, &ctx)?;
    crate::template::to_json(&v, &format!("with_{}", name))
}

/// The lookups that read the controller (files, the environment) or run a command.
const HOST_LOOKUPS: [&str; 13] = [
    "file",
    "template",
    "env",
    "pipe",
    "first_found",
    "lines",
    "fileglob",
    "csvfile",
    "ini",
    "password",
    "url",
    "config",
    "unvault",
];

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
    env.add_function(WITH_FN, |state: &State, name: String, terms: Vec<Value>| {
        pure(&name)?;
        with_loop(state, name, terms)
    });
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
    let short = short_name(name);
    let errors = kwargs
        .get::<Option<String>>("errors")?
        .unwrap_or_else(|| "strict".into());
    if !["strict", "warn", "ignore"].contains(&errors.as_str()) {
        return Err(fail(format!(
            "lookup('{}'): errors must be 'strict', 'warn' or 'ignore', got '{}'",
            short, errors
        )));
    }
    let terms = template_terms(state, terms)?;
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
        "nested" => nested(&terms),
        "together" => together(&terms),
        "indexed_items" => indexed_items(&terms),
        "random_choice" => random_choice(&terms),
        "subelements" => subelements(&terms),
        "varnames" => varnames(state, &terms),
        "inventory_hostnames" => inventory_hostnames(state, &terms),
        "lines" => lines(state, &terms),
        "fileglob" => fileglob(state, &terms),
        "csvfile" => csvfile(state, &terms, &kwargs),
        "ini" => ini(state, &terms, &kwargs),
        "password" => password::password(state, &terms, &kwargs),
        "url" => url::url(&terms, &kwargs),
        "config" => config::config(&terms, &kwargs),
        "unvault" => files::unvault(state, &terms),
        other => Err(fail(format!(
            "lookup plugin '{}' is not available; kk provides {}",
            other,
            BUILTIN.join(", ")
        ))),
    };
    let result = match result {
        Ok(r) => {
            kwargs
                .assert_all_used()
                .map_err(|e| fail(format!("lookup('{}'): {}", short, e)))?;
            r
        }
        // An ignored failure is None (`[]` for query), as in ansible-core.
        Err(e) if errors != "strict" && e.kind() != ErrorKind::UndefinedError => {
            return Ok(if wantlist {
                Value::from(Vec::<Value>::new())
            } else {
                Value::from(())
            });
        }
        Err(e) => return Err(e),
    };
    // An empty result stays an empty list, as in ansible-core (not an empty string).
    if wantlist || result.is_empty() {
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

/// Ansible templates a lookup's terms before the lookup sees them: a string term holding
/// `{{ }}` or `{% %}` (`lookup('file', '{{ name }}.txt')`, also inside a list term) is
/// rendered against the same variables; one `{{ expr }}` alone keeps its type.
fn template_terms(state: &State, terms: Vec<Value>) -> Result<Vec<Value>, Error> {
    fn one(state: &State, ctx: &Value, v: Value, depth: usize) -> Result<Value, Error> {
        if let Some(s) = v.as_str().filter(|s| crate::template::is_template(s)) {
            let t = s.trim();
            if let Some(expr) = t
                .strip_prefix("{{")
                .and_then(|r| r.strip_suffix("}}"))
                .filter(|e| !e.contains("{{") && !e.contains("}}"))
            {
                return state.env().compile_expression(expr)?.eval(ctx.clone());
            }
            return Ok(Value::from(state.env().render_str(s, ctx.clone())?));
        }
        if depth == 0 && v.kind() == ValueKind::Seq {
            let items = v
                .try_iter()?
                .map(|i| one(state, ctx, i, 1))
                .collect::<Result<Vec<_>, Error>>()?;
            return Ok(Value::from(items));
        }
        Ok(v)
    }
    if !terms
        .iter()
        .any(|t| t.as_str().is_some_and(crate::template::is_template) || t.kind() == ValueKind::Seq)
    {
        return Ok(terms);
    }
    let ctx = state
        .lookup("vars")
        .unwrap_or_else(|| Value::from_iter(std::iter::empty::<(String, Value)>()));
    terms.into_iter().map(|t| one(state, &ctx, t, 0)).collect()
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
