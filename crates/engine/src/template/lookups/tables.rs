//! The lookups that read the controller: `lines` (a command's output lines), `fileglob`,
//! and the table readers `csvfile` and `ini`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use minijinja::value::Kwargs;
use minijinja::{Error, State, Value};

use super::{find_file, read_text, search_dirs, term_str, var_str};
use crate::template::filters::{fail, py_regex, py_str};

/// `lines`: each command's standard output, split into lines (run by `/bin/sh` in the
/// playbook's directory); a command that fails is an error.
pub(super) fn lines(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for t in terms {
        let cmd = term_str("lines", t)?;
        let mut c = std::process::Command::new("/bin/sh");
        c.arg("-c").arg(&cmd).stdin(std::process::Stdio::null());
        if let Some(dir) = var_str(state, "playbook_dir").filter(|d| Path::new(d).is_dir()) {
            c.current_dir(dir);
        }
        let res = c
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| fail(format!("lookup('lines'): cannot run `{}`: {}", cmd, e)))?;
        if !res.status.success() {
            return Err(fail(format!(
                "lookup_plugin.lines({}) returned {}",
                cmd,
                res.status.code().unwrap_or(-1)
            )));
        }
        // Python's str.splitlines on the decoded output.
        let text = String::from_utf8_lossy(&res.stdout);
        out.extend(text.lines().map(|l| Value::from(l.trim_end_matches('\r'))));
    }
    Ok(out)
}

/// `fileglob`: the files (not directories) matching each pattern, searched in the
/// `files` dirs; the first directory with matches wins. In the directory's own order,
/// as Python's glob gives them.
pub(super) fn fileglob(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("fileglob", t)?;
        let path = Path::new(&term);
        let file: Vec<char> = path
            .file_name()
            .map(|f| f.to_string_lossy().chars().collect())
            .unwrap_or_default();
        let dirs: Vec<PathBuf> = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(dir) => find_file(state, "fileglob", "files", &dir.display().to_string())
                .map(|d| vec![d])
                .unwrap_or_default(),
            None => search_dirs(state, "files"),
        };
        let pattern = file.iter().collect::<String>();
        for dir in dirs {
            let found = crate::template::filters::paths_os::glob_dir(&dir, &pattern);
            if !found.is_empty() {
                out.extend(found.iter().map(|p| Value::from(p.display().to_string())));
                break;
            }
        }
    }
    Ok(out)
}

/// Options given inline as `key k=v …` in a term (Ansible's older form) or as keyword
/// arguments; `valid` lists the option names the lookup knows.
struct Options {
    values: HashMap<String, String>,
}

impl Options {
    fn new(
        lookup: &str,
        kwargs: &Kwargs,
        valid: &[&str],
        defaults: &[(&str, &str)],
    ) -> Result<Options, Error> {
        let mut values: HashMap<String, String> = defaults
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for k in valid {
            if let Some(v) = kwargs.get::<Option<Value>>(k)? {
                values.insert(k.to_string(), py_str(&v));
            }
        }
        let _ = lookup;
        Ok(Options { values })
    }

    fn get(&self, k: &str) -> &str {
        self.values.get(k).map(String::as_str).unwrap_or("")
    }

    fn flag(&self, k: &str) -> bool {
        matches!(
            self.get(k).to_ascii_lowercase().as_str(),
            "true" | "yes" | "1" | "on" | "y"
        )
    }

    fn int(&self, lookup: &str, k: &str) -> Result<usize, Error> {
        self.get(k).trim().parse().map_err(|_| {
            fail(format!(
                "lookup('{}'): {} must be an integer, got '{}'",
                lookup,
                k,
                self.get(k)
            ))
        })
    }
}

/// Splits one CSV record (Python's `csv.reader`, excel dialect): fields separated by
/// `delim`, double quotes around fields, `""` inside them.
fn csv_fields(line: &str, delim: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cur.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == delim {
            fields.push(std::mem::take(&mut cur));
            at_start = true;
            continue;
        } else if c == '"' && at_start {
            quoted = true;
        } else {
            cur.push(c);
        }
        at_start = false;
    }
    fields.push(cur);
    fields
}

/// `csvfile`: the `col` column of the first row whose `keycol` column is the key, or
/// `default`. The file is tab-separated unless `delimiter` says otherwise.
pub(super) fn csvfile(
    state: &State,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    const VALID: [&str; 6] = ["col", "keycol", "default", "delimiter", "file", "encoding"];
    let base = Options::new(
        "csvfile",
        kwargs,
        &VALID,
        &[
            ("col", "1"),
            ("keycol", "0"),
            ("delimiter", "TAB"),
            ("file", "ansible.csv"),
            ("encoding", "utf-8"),
        ],
    )?;
    let default = kwargs.get::<Option<Value>>("default")?;
    if terms.is_empty() {
        return Err(fail("Search key is required but was not found"));
    }
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("csvfile", t)?;
        let kv = crate::project::kv::parse_kv(&term, false);
        let Some(key) = kv.get("_raw_params").and_then(|v| v.as_str()) else {
            return Err(fail("Search key is required but was not found"));
        };
        let mut opts = Options {
            values: base.values.clone(),
        };
        let mut default = default.clone();
        for (k, v) in &kv {
            if k == "_raw_params" {
                continue;
            }
            if !VALID.contains(&k.as_str()) {
                return Err(fail(format!("'{}' is not a valid option", k)));
            }
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if k == "default" {
                default = Some(Value::from(v.clone()));
            }
            opts.values.insert(k.clone(), v);
        }
        let delim = match opts.get("delimiter") {
            "TAB" | "\\t" | "\t" => '\t',
            d => d.chars().next().unwrap_or('\t'),
        };
        let (col, keycol) = (opts.int("csvfile", "col")?, opts.int("csvfile", "keycol")?);
        let path = find_file(state, "csvfile", "files", opts.get("file"))?;
        let text = read_text("csvfile", &path)?;
        let mut found = None;
        for line in text.lines() {
            if line.is_empty() {
                continue;
            }
            let row = csv_fields(line, delim);
            if row.get(keycol).map(String::as_str) == Some(key) {
                found = Some(row.get(col).cloned().ok_or_else(|| {
                    fail(format!(
                        "lookup('csvfile'): the row for '{}' in {} has no column {}",
                        key,
                        path.display(),
                        col
                    ))
                })?);
                break;
            }
        }
        match found {
            Some(v) => out.push(Value::from(v)),
            None => {
                if let Some(d) = default.filter(|d| !d.is_none()) {
                    out.push(d);
                }
            }
        }
    }
    Ok(out)
}

/// An INI file as Python's configparser reads it: sections of keys (lower-cased unless
/// case-sensitive), `DEFAULT` values visible in every section, continuation lines.
struct Ini {
    defaults: Items,
    sections: Vec<(String, Items)>,
}

/// A section's keys and values (None for a key without a value).
type Items = Vec<(String, Option<String>)>;

impl Ini {
    fn parse(
        text: &str,
        case_sensitive: bool,
        allow_no_value: bool,
        file: &str,
    ) -> Result<Ini, Error> {
        let mut ini = Ini {
            defaults: Vec::new(),
            sections: Vec::new(),
        };
        // Which list the current key goes to: None before any section.
        let mut current: Option<Option<usize>> = None;
        let mut last_key: Option<(Option<usize>, usize)> = None;
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim_end();
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                if trimmed.is_empty() {
                    last_key = None;
                }
                continue;
            }
            let indented = line.len() != trimmed.len();
            if indented {
                if let Some((sec, idx)) = last_key {
                    let list = match sec {
                        None => &mut ini.defaults,
                        Some(i) => &mut ini.sections[i].1,
                    };
                    if let Some(v) = &mut list[idx].1 {
                        v.push('\n');
                        v.push_str(trimmed);
                        continue;
                    }
                }
            }
            if let Some(name) = trimmed.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                if name == "DEFAULT" {
                    current = Some(None);
                } else {
                    let i = match ini.sections.iter().position(|(s, _)| s == name) {
                        Some(i) => i,
                        None => {
                            ini.sections.push((name.to_string(), Vec::new()));
                            ini.sections.len() - 1
                        }
                    };
                    current = Some(Some(i));
                }
                last_key = None;
                continue;
            }
            let Some(sec) = current else {
                return Err(fail(format!(
                    "lookup('ini'): {} line {}: a key before any [section] header: '{}'",
                    file,
                    n + 1,
                    trimmed
                )));
            };
            let split = trimmed.find(['=', ':']);
            let (key, value) = match split {
                Some(p) => (
                    trimmed[..p].trim(),
                    Some(trimmed[p + 1..].trim().to_string()),
                ),
                None if allow_no_value => (trimmed, None),
                None => {
                    return Err(fail(format!(
                        "lookup('ini'): {} line {}: cannot parse '{}' (expected key=value)",
                        file,
                        n + 1,
                        trimmed
                    )))
                }
            };
            let key = if case_sensitive {
                key.to_string()
            } else {
                key.to_lowercase()
            };
            let list = match sec {
                None => &mut ini.defaults,
                Some(i) => &mut ini.sections[i].1,
            };
            if list.iter().any(|(k, _)| *k == key) {
                return Err(fail(format!("Duplicate option in '{}'.", file)));
            }
            list.push((key, value));
            last_key = Some((sec, list.len() - 1));
        }
        Ok(ini)
    }

    /// The section's items, defaults first (configparser's `items(section)`).
    fn items(&self, section: &str) -> Option<Items> {
        let own = &self.sections.iter().find(|(s, _)| s == section)?.1;
        let mut all = self.defaults.clone();
        for (k, v) in own {
            match all.iter_mut().find(|(d, _)| d == k) {
                Some(slot) => slot.1 = v.clone(),
                None => all.push((k.clone(), v.clone())),
            }
        }
        Some(all)
    }
}

/// configparser's BasicInterpolation: `%%` is `%`, `%(name)s` another key's value.
fn interpolate(v: &str, items: &[(String, Option<String>)], depth: usize) -> Result<String, Error> {
    let mut out = String::new();
    let mut rest = v;
    while let Some(p) = rest.find('%') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        if let Some(r) = after.strip_prefix('%') {
            out.push('%');
            rest = r;
        } else if let Some(r) = after.strip_prefix('(') {
            let end = r
                .find(")s")
                .ok_or_else(|| fail(format!("lookup('ini'): bad interpolation in '{}'", v)))?;
            let name = r[..end].to_lowercase();
            let value = items
                .iter()
                .find(|(k, _)| k.to_lowercase() == name)
                .and_then(|(_, v)| v.clone())
                .ok_or_else(|| {
                    fail(format!(
                        "lookup('ini'): '{}' refers to '{}', which is not set",
                        v, name
                    ))
                })?;
            if depth > 10 {
                return Err(fail(format!(
                    "lookup('ini'): interpolation too deep in '{}'",
                    v
                )));
            }
            out.push_str(&interpolate(&value, items, depth + 1)?);
            rest = &r[end + 2..];
        } else {
            return Err(fail(format!(
                "lookup('ini'): '%' must be followed by '%' or '(' in '{}'",
                v
            )));
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `ini`: the value of a key (or of every key matching a regex with `re=True`) in a
/// section of an INI or Java properties file.
pub(super) fn ini(state: &State, terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    const VALID: [&str; 10] = [
        "type",
        "file",
        "section",
        "re",
        "encoding",
        "default",
        "case_sensitive",
        "allow_no_value",
        "allow_none",
        "interpolation",
    ];
    let base = Options::new(
        "ini",
        kwargs,
        &VALID,
        &[
            ("type", "ini"),
            ("file", "ansible.ini"),
            ("section", "global"),
            ("re", "false"),
            ("encoding", "utf-8"),
            ("default", ""),
            ("case_sensitive", "false"),
            ("allow_no_value", "false"),
            ("interpolation", "true"),
        ],
    )?;
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("ini", t)?;
        let mut opts = Options {
            values: base.values.clone(),
        };
        let mut key = term.clone();
        if term.contains('=') || term.trim().contains(' ') {
            // Ansible's `_parse_params`: words after `name=` belong to that option.
            let mut params: Vec<(String, String)> = Vec::new();
            let mut this = "key".to_string();
            for (i, phrase) in term.split_whitespace().enumerate() {
                if phrase.contains('=') {
                    for k in VALID {
                        if phrase.contains(&format!("{}=", k)) {
                            this = k.to_string();
                        }
                    }
                }
                match params.iter_mut().find(|(k, _)| *k == this) {
                    Some((_, v)) if i != 0 && !v.is_empty() => {
                        v.push(' ');
                        v.push_str(phrase);
                    }
                    _ => params.push((this.clone(), phrase.to_string())),
                }
            }
            let mut got_key = false;
            for (_, p) in params {
                if let Some((name, value)) = p.split_once('=') {
                    if !VALID.contains(&name) {
                        return Err(fail(format!("'{}' is not a valid option.", name)));
                    }
                    opts.values.insert(name.to_string(), value.to_string());
                } else if !got_key {
                    key = p;
                    got_key = true;
                }
            }
            if !got_key {
                return Err(fail(format!(
                    "No key to look up was provided as first term within string inline options: {}",
                    term
                )));
            }
        }
        let file = opts.get("file").to_string();
        let path = find_file(state, "ini", "files", &file)?;
        let mut text = read_text("ini", &path)?;
        let mut section = opts.get("section").to_string();
        if opts.get("type") == "properties" {
            text = format!("[java_properties]\n{}", text);
            section = "java_properties".into();
        }
        let allow_none = opts.flag("allow_no_value") || opts.flag("allow_none");
        let parsed = Ini::parse(&text, opts.flag("case_sensitive"), allow_none, &file)?;
        let items = parsed
            .items(&section)
            .ok_or_else(|| fail(format!("No section '{}' in '{}'.", section, file)))?;
        let value_of = |v: &Option<String>| -> Result<Value, Error> {
            match v {
                None => Ok(Value::from(())),
                Some(s) if opts.flag("interpolation") => {
                    Ok(Value::from(interpolate(s, &items, 0)?))
                }
                Some(s) => Ok(Value::from(s.as_str())),
            }
        };
        if opts.flag("re") {
            let re = py_regex("lookup('ini')", &key, false, false)?;
            for (k, v) in &items {
                // re.match: anchored at the start.
                if re.find(k).ok().flatten().is_some_and(|m| m.start() == 0) {
                    out.push(value_of(v)?);
                }
            }
            continue;
        }
        let wanted = if opts.flag("case_sensitive") {
            key.clone()
        } else {
            key.to_lowercase()
        };
        match items.iter().find(|(k, _)| *k == wanted) {
            Some((_, v)) => out.push(value_of(v)?),
            None => out.push(Value::from(opts.get("default"))),
        }
    }
    Ok(out)
}
