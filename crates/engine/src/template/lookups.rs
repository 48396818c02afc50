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

use super::filters::{expand_user, fail, map_value, py_str, py_type};

/// Registers `lookup`, `query` and `q`.
pub fn register(env: &mut Environment<'static>) {
    env.add_function("lookup", lookup);
    env.add_function("query", query);
    env.add_function("q", query);
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

fn read_text(lookup: &str, path: &Path) -> Result<String, Error> {
    let bytes = std::fs::read(path).map_err(|e| {
        fail(format!(
            "lookup('{}'): cannot read '{}': {}",
            lookup,
            path.display(),
            e
        ))
    })?;
    String::from_utf8(bytes).map_err(|_| {
        fail(format!(
            "lookup('{}'): '{}' is not UTF-8 text",
            lookup,
            path.display()
        ))
    })
}

fn file(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
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

fn template(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
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
        let rendered = state
            .env()
            .render_str(&text, ctx.clone())
            .map(|r| super::preserve_trailing_newlines(&text, r))
            .map_err(|e| {
                let detail = e
                    .detail()
                    .map(str::to_string)
                    .unwrap_or_else(|| e.kind().to_string());
                let line = e
                    .line()
                    .map(|l| format!(" (line {})", l))
                    .unwrap_or_default();
                Error::new(
                    e.kind(),
                    format!(
                        "lookup('template'): rendering '{}' failed{}: {}",
                        path.display(),
                        line,
                        detail
                    ),
                )
            })?;
        out.push(Value::from(rendered));
    }
    Ok(out)
}

fn env_lookup(terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
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

fn pipe(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
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

fn vars(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
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

fn flatten_once(terms: &[Value]) -> Result<Vec<Value>, Error> {
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

fn dict(terms: &[Value]) -> Result<Vec<Value>, Error> {
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

fn first_found(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
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

/// `sequence`: `start=1 end=5 stride=1 format=%d` or the shortcut `[start-]end[/stride][:format]`.
fn sequence(terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    let kw = |k: &str| -> Result<Option<String>, Error> {
        Ok(kwargs.get::<Option<Value>>(k)?.map(|v| py_str(&v)))
    };
    let (kstart, kend, kcount, kstride, kformat) = (
        kw("start")?,
        kw("end")?,
        kw("count")?,
        kw("stride")?,
        kw("format")?,
    );
    let mut specs: Vec<String> = terms.iter().map(py_str).collect();
    if specs.is_empty() {
        specs.push(String::new());
    }
    for spec in specs {
        let (mut start, mut end, mut count, mut stride, mut format) = (
            kstart.clone(),
            kend.clone(),
            kcount.clone(),
            kstride.clone(),
            kformat.clone(),
        );
        let spec = spec.trim();
        if spec.contains('=') {
            for part in spec.split_whitespace() {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| fail(format!("lookup('sequence'): cannot parse '{}'", part)))?;
                let v = Some(v.to_string());
                match k {
                    "start" => start = v,
                    "end" => end = v,
                    "count" => count = v,
                    "stride" => stride = v,
                    "format" => format = v,
                    other => {
                        return Err(fail(format!(
                            "lookup('sequence'): unknown argument '{}'",
                            other
                        )))
                    }
                }
            }
        } else if !spec.is_empty() {
            let (body, fmt) = match spec.split_once(':') {
                Some((b, f)) => (b, Some(f.to_string())),
                None => (spec, None),
            };
            let (range, st) = match body.split_once('/') {
                Some((r, s)) => (r, Some(s.to_string())),
                None => (body, None),
            };
            match range.rsplit_once('-').filter(|(a, _)| !a.is_empty()) {
                Some((a, b)) => {
                    start = Some(a.to_string());
                    end = Some(b.to_string());
                }
                None => end = Some(range.to_string()),
            }
            if st.is_some() {
                stride = st;
            }
            if fmt.is_some() {
                format = fmt;
            }
        }
        let num = |what: &str, v: &Option<String>, d: i64| -> Result<i64, Error> {
            match v {
                None => Ok(d),
                Some(s) => parse_seq_int(s).ok_or_else(|| {
                    fail(format!(
                        "lookup('sequence'): {} must be a number, got '{}'",
                        what, s
                    ))
                }),
            }
        };
        let start_n = num("start", &start, 1)?;
        let stride_n = num("stride", &stride, 1)?;
        let end_n = match (&end, &count) {
            (Some(_), Some(_)) => {
                return Err(fail("lookup('sequence'): can't specify both count and end"))
            }
            (None, None) => return Err(fail("lookup('sequence'): must specify count or end")),
            (None, Some(_)) => {
                let c = num("count", &count, 0)?;
                if c == 0 {
                    continue;
                }
                start_n + (c - 1) * stride_n
            }
            (Some(_), None) => num("end", &end, 0)?,
        };
        if stride_n == 0 {
            continue;
        }
        if (stride_n > 0 && end_n < start_n) || (stride_n < 0 && end_n > start_n) {
            return Err(fail(
                "lookup('sequence'): to count backwards make stride negative",
            ));
        }
        if ((end_n - start_n) / stride_n).abs() > 1_000_000 {
            return Err(fail(
                "lookup('sequence'): the sequence would have more than 1000000 items",
            ));
        }
        let fmt = format.unwrap_or_else(|| "%d".into());
        let mut i = start_n;
        while (stride_n > 0 && i <= end_n) || (stride_n < 0 && i >= end_n) {
            out.push(Value::from(printf_int(&fmt, i)?));
            i += stride_n;
        }
    }
    Ok(out)
}

fn parse_seq_int(s: &str) -> Option<i64> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(h) = t.strip_prefix("0x") {
        return i64::from_str_radix(h, 16).ok();
    }
    if let Some(o) = t.strip_prefix("0o") {
        return i64::from_str_radix(o, 8).ok();
    }
    t.parse().ok()
}

/// Python's `fmt % n` for one integer conversion (`%d`, `%05d`, `%x`, `%o`, `%s`).
fn printf_int(fmt: &str, n: i64) -> Result<String, Error> {
    let mut out = String::new();
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    let mut used = false;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            out.push('%');
            i += 2;
            continue;
        }
        let mut j = i + 1;
        let mut flags = String::new();
        while j < chars.len() && "-0 +".contains(chars[j]) {
            flags.push(chars[j]);
            j += 1;
        }
        let mut width = String::new();
        while j < chars.len() && chars[j].is_ascii_digit() {
            width.push(chars[j]);
            j += 1;
        }
        let conv = chars
            .get(j)
            .copied()
            .ok_or_else(|| fail(format!("lookup('sequence'): bad format '{}'", fmt)))?;
        let body = match conv {
            'd' | 'i' | 's' => n.to_string(),
            'x' => format!("{:x}", n),
            'X' => format!("{:X}", n),
            'o' => format!("{:o}", n),
            other => {
                return Err(fail(format!(
                    "lookup('sequence'): unsupported conversion %{} in '{}'",
                    other, fmt
                )))
            }
        };
        let w: usize = width.parse().unwrap_or(0);
        let padded = if body.len() >= w {
            body
        } else if flags.contains('-') {
            format!("{:<w$}", body, w = w)
        } else if flags.contains('0') && conv != 's' {
            let (sign, digits) = match body.strip_prefix('-') {
                Some(d) => ("-", d.to_string()),
                None => ("", body.clone()),
            };
            format!("{}{}{}", sign, "0".repeat(w - body.len()), digits)
        } else {
            format!("{:>w$}", body, w = w)
        };
        out.push_str(&padded);
        used = true;
        i = j + 1;
    }
    if !used {
        return Err(fail(format!(
            "lookup('sequence'): the format '{}' has no %d",
            fmt
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};
    use serde_json::{json, Value as J};

    fn ev(expr: &str, vars: &J) -> Result<J, String> {
        let t = Templar::new();
        t.eval_expr(expr, &to_mj(vars))
            .map_err(|e| e.render())
            .map(|v| serde_json::to_value(&v).unwrap())
    }

    fn setup() -> (tempfile::TempDir, J) {
        let dir = tempfile::tempdir().unwrap();
        let role = dir.path().join("roles/r");
        std::fs::create_dir_all(role.join("files")).unwrap();
        std::fs::create_dir_all(role.join("templates")).unwrap();
        std::fs::create_dir_all(dir.path().join("files")).unwrap();
        std::fs::write(role.join("files/a.txt"), "role file\n\n").unwrap();
        std::fs::write(dir.path().join("files/b.txt"), "play file\n").unwrap();
        std::fs::write(dir.path().join("c.txt"), "top\n").unwrap();
        std::fs::write(
            role.join("templates/t.j2"),
            "{% if name %}\nhello {{ name }}{{ extra | default('') }}\n{% endif %}\n",
        )
        .unwrap();
        let vars = json!({
            "role_path": role.display().to_string(),
            "playbook_dir": dir.path().display().to_string(),
            "name": "world",
            "other": {"x": 1},
        });
        let mut with_vars = vars.clone();
        with_vars["vars"] = vars.clone();
        (dir, with_vars)
    }

    #[test]
    fn file_lookup() {
        let (_d, v) = setup();
        assert_eq!(
            ev("lookup('file', 'a.txt')", &v).unwrap(),
            json!("role file")
        );
        assert_eq!(
            ev("lookup('ansible.builtin.file', 'b.txt')", &v).unwrap(),
            json!("play file")
        );
        assert_eq!(ev("lookup('file', 'c.txt')", &v).unwrap(), json!("top"));
        assert_eq!(
            ev("lookup('file', 'a.txt', 'c.txt')", &v).unwrap(),
            json!("role file,top")
        );
        assert_eq!(
            ev("query('file', 'a.txt', 'c.txt')", &v).unwrap(),
            json!(["role file", "top"])
        );
        assert_eq!(
            ev("lookup('file', 'a.txt', rstrip=false)", &v).unwrap(),
            json!("role file\n\n")
        );
        let e = ev("lookup('file', 'nope.txt')", &v).unwrap_err();
        assert!(
            e.contains("lookup('file'): could not find 'nope.txt'") && e.contains("searched"),
            "{}",
            e
        );
        assert_eq!(
            ev("lookup('file', 'nope.txt', errors='ignore')", &v).unwrap(),
            json!("")
        );
        let abs = format!("{}/c.txt", v["playbook_dir"].as_str().unwrap());
        assert_eq!(
            ev(&format!("lookup('file', '{}')", abs), &json!({})).unwrap(),
            json!("top")
        );
    }

    #[test]
    fn template_lookup() {
        let (_d, v) = setup();
        assert_eq!(
            ev("lookup('template', 't.j2')", &v).unwrap(),
            json!("hello world\n")
        );
        assert_eq!(
            ev(
                "lookup('template', 't.j2', template_vars={'extra': '!'})",
                &v
            )
            .unwrap(),
            json!("hello world!\n")
        );
        // template_vars win over the variables.
        assert_eq!(
            ev(
                "lookup('template', 't.j2', template_vars={'name': 'there'})",
                &v
            )
            .unwrap(),
            json!("hello there\n")
        );
        let mut bad = v.clone();
        bad["vars"] = json!({});
        let e = ev("lookup('template', 't.j2')", &bad).unwrap_err();
        assert!(e.contains("lookup('template'): rendering"), "{}", e);
    }

    #[test]
    fn env_pipe_vars() {
        let (_d, v) = setup();
        std::env::set_var("KK_LOOKUP_TEST", "val");
        assert_eq!(
            ev("lookup('env', 'KK_LOOKUP_TEST')", &v).unwrap(),
            json!("val")
        );
        assert_eq!(
            ev("lookup('env', 'KK_LOOKUP_NOPE_X')", &v).unwrap(),
            json!("")
        );
        assert_eq!(
            ev("lookup('env', 'KK_LOOKUP_NOPE_X', default='d')", &v).unwrap(),
            json!("d")
        );
        assert_eq!(
            ev("lookup('pipe', 'echo hi; echo')", &v).unwrap(),
            json!("hi")
        );
        assert_eq!(ev("lookup('pipe', 'cat c.txt')", &v).unwrap(), json!("top"));
        let e = ev("lookup('pipe', 'exit 3')", &v).unwrap_err();
        assert!(e.contains("lookup('pipe'): `exit 3` returned 3"), "{}", e);
        assert_eq!(ev("lookup('vars', 'other')", &v).unwrap(), json!({"x": 1}));
        assert_eq!(
            ev("lookup('vars', 'name', 'name')", &v).unwrap(),
            json!("world,world")
        );
        assert_eq!(
            ev("lookup('vars', 'missing', default=5)", &v).unwrap(),
            json!(5)
        );
        assert!(ev("lookup('vars', 'missing')", &v)
            .unwrap_err()
            .contains("no variable found with this name: missing"));
    }

    #[test]
    fn list_lookups() {
        let v = json!({});
        assert_eq!(
            ev("query('items', [1, [2, 3]], 4)", &v).unwrap(),
            json!([1, [2, 3], 4])
        );
        assert_eq!(
            ev("query('items', [1, 2], [3])", &v).unwrap(),
            json!([1, 2, 3])
        );
        assert_eq!(ev("q('list', 1, 2)", &v).unwrap(), json!([1, 2]));
        assert_eq!(
            ev("query('dict', {'a': 1, 'b': 2})", &v).unwrap(),
            json!([{"key": "a", "value": 1}, {"key": "b", "value": 2}])
        );
        assert_eq!(
            ev("lookup('dict', {'a': 1})", &v).unwrap(),
            json!({"key": "a", "value": 1})
        );
        assert!(ev("query('dict', [1])", &v)
            .unwrap_err()
            .contains("lookup('dict'): expected a dict"));
        assert!(ev("lookup('nosuch', 1)", &v)
            .unwrap_err()
            .contains("lookup plugin 'nosuch' is not available"));
        assert_eq!(
            ev("query('sequence', 'start=1 end=3')", &v).unwrap(),
            json!(["1", "2", "3"])
        );
        assert_eq!(
            ev(
                "query('sequence', 'start=0 end=4 stride=2 format=node%02d')",
                &v
            )
            .unwrap(),
            json!(["node00", "node02", "node04"])
        );
        assert_eq!(
            ev("query('sequence', '2-4/1:h%d')", &v).unwrap(),
            json!(["h2", "h3", "h4"])
        );
        assert_eq!(
            ev("query('sequence', count=3)", &v).unwrap(),
            json!(["1", "2", "3"])
        );
    }

    #[test]
    fn first_found_lookup() {
        let (_d, v) = setup();
        assert!(ev("lookup('first_found', ['nope.txt', 'a.txt'])", &v)
            .unwrap()
            .as_str()
            .unwrap()
            .ends_with("roles/r/files/a.txt"));
        assert!(ev("lookup('first_found', {'files': ['x', 'b.txt']})", &v)
            .unwrap()
            .as_str()
            .unwrap()
            .ends_with("files/b.txt"));
        assert_eq!(
            ev("query('first_found', ['x'], skip=true)", &v).unwrap(),
            json!([])
        );
        assert!(ev("lookup('first_found', ['x'])", &v)
            .unwrap_err()
            .contains("no file was found"));
    }
}
