//! The lookups that read controller files: `file`, `template` and `first_found`.

use std::path::Path;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, State, Value};

use super::{find_file, read_text, term_str};
use crate::template::filters::{fail, py_type};

pub(super) fn file(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let rstrip = kwargs.get::<Option<bool>>("rstrip")?.unwrap_or(true);
    let lstrip = kwargs.get::<Option<bool>>("lstrip")?.unwrap_or(false);
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("file", t)?;
        let path = find_file(state, "file", "files", &term)?;
        let mut text = read_text("file", &path)?;
        if rstrip {
            text.truncate(text.trim_end().len());
        }
        if lstrip {
            text = text.trim_start().to_string();
        }
        out.push(Value::from(text));
    }
    Ok(out)
}

pub(super) fn template(
    state: &State,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    let extra = kwargs.get::<Option<Value>>("template_vars")?;
    for ignored in ["convert_data", "jinja2_native", "trim_blocks"] {
        let _ = kwargs.get::<Option<Value>>(ignored)?;
    }
    for unsupported in [
        "variable_start_string",
        "variable_end_string",
        "comment_start_string",
        "comment_end_string",
    ] {
        if kwargs.has(unsupported) {
            return Err(fail(format!(
                "lookup('template'): the option '{}' is not supported",
                unsupported
            )));
        }
    }
    if let Some(e) = &extra {
        if e.kind() != ValueKind::Map {
            return Err(fail(format!(
                "lookup('template'): template_vars must be a mapping, got {}",
                py_type(e)
            )));
        }
    }
    let vars = state
        .lookup("vars")
        .map(crate::template::mutable::MutCtx::unwrap)
        .filter(|v| v.kind() == ValueKind::Map)
        .unwrap_or_else(|| Value::from_iter(std::iter::empty::<(String, Value)>()));
    // template_vars win over every variable, also inside the variables' own templates (as in
    // Ansible): over a host's variables they are one more layer of the view, whose nested
    // templates then render against it.
    let ctx = match extra {
        Some(e) => match vars.downcast_object::<crate::vars::VarView>() {
            Some(view) => {
                let top = crate::template::to_json(&e, "template_vars")
                    .map_err(|e| fail(format!("lookup('template'): {}", e.message)))?;
                let top = match top {
                    serde_json::Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                view.with_data(std::sync::Arc::new(top)).context()
            }
            None => minijinja::value::merge_maps([vars, e]),
        },
        None => vars,
    };
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("template", t)?;
        let path = find_file(state, "template", "templates", &term)?;
        let text = read_text("template", &path)?;
        crate::template::depth::check(&text, false).map_err(|e| {
            fail(format!(
                "lookup('template'): {}: {}",
                path.display(),
                e.message
            ))
        })?;
        let with_loader;
        let env = if crate::template::includes::loads_others(&text) {
            let dirs = crate::template::includes::dirs(|n| state.lookup(n), &path, true);
            with_loader = crate::template::includes::with_loader(state.env(), dirs);
            &with_loader
        } else {
            state.env()
        };
        let rendered = env
            .render_str(&text, ctx.clone())
            .map(|r| crate::template::preserve_trailing_newlines(&text, r))
            .map_err(|e| {
                let detail = e
                    .detail()
                    .map(str::to_string)
                    .unwrap_or_else(|| e.kind().to_string());
                // The template file's own line and column, as the template module gives.
                let place = crate::template::file_span(&e, &path, &text)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| path.display().to_string());
                Error::new(
                    e.kind(),
                    format!("lookup('template'): {}: {}", place, detail),
                )
            })?;
        out.push(Value::from(rendered));
    }
    Ok(out)
}

/// `lookup('unvault', path, ...)`: each file's text, decrypted when vaulted (every file
/// kk reads is), kept whole — no stripping, unlike `file`.
pub(super) fn unvault(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("unvault", t)?;
        let path = find_file(state, "unvault", "files", &term)?;
        out.push(Value::from(read_text("unvault", &path)?));
    }
    Ok(out)
}

pub(super) fn first_found(
    state: &State,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    let mut files: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut skip = kwargs.get::<Option<bool>>("skip")?.unwrap_or(false);
    let split = |s: &str| -> Vec<String> {
        s.split([',', ';'])
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    let add_list = |v: &Value, into: &mut Vec<String>| -> Result<(), Error> {
        if let Some(s) = v.as_str() {
            into.extend(split(s));
        } else if matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable) {
            for i in v.try_iter()? {
                into.push(term_str("first_found", &i)?);
            }
        }
        Ok(())
    };
    if let Some(f) = kwargs.get::<Option<Value>>("files")? {
        add_list(&f, &mut files)?;
    }
    if let Some(p) = kwargs.get::<Option<Value>>("paths")? {
        add_list(&p, &mut paths)?;
    }
    for t in terms {
        match t.kind() {
            ValueKind::Map => {
                if let Ok(f) = t.get_attr("files") {
                    add_list(&f, &mut files)?;
                }
                if let Ok(p) = t.get_attr("paths") {
                    add_list(&p, &mut paths)?;
                }
                if let Ok(s) = t.get_attr("skip") {
                    skip = skip || s.is_true();
                }
            }
            ValueKind::Seq | ValueKind::Iterable => {
                for i in t.try_iter()? {
                    files.push(term_str("first_found", &i)?);
                }
            }
            _ => files.push(term_str("first_found", t)?),
        }
    }
    for f in &files {
        let candidates: Vec<String> = if paths.is_empty() || Path::new(f).is_absolute() {
            vec![f.clone()]
        } else {
            paths
                .iter()
                .map(|p| Path::new(p).join(f).display().to_string())
                .collect()
        };
        for c in candidates {
            if let Ok(p) = find_file(state, "first_found", "files", &c) {
                // Absolute, as ansible-core returns it (unfrackpath): the caller may
                // resolve it from another directory.
                let p = std::path::absolute(&p).unwrap_or(p);
                return Ok(vec![Value::from(p.display().to_string())]);
            }
        }
    }
    if skip {
        return Ok(Vec::new());
    }
    Err(fail(format!(
        "lookup('first_found'): no file was found among: {}",
        if files.is_empty() {
            "(no files given)".to_string()
        } else {
            files.join(", ")
        }
    )))
}
