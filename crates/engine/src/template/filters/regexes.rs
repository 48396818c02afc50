//! Regular expressions with Python `re` syntax (through fancy-regex): `regex_search`,
//! `regex_replace`, `regex_findall`, `regex_escape`, and [`py_regex`], which the `match`
//! and `search` tests share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use minijinja::value::{Kwargs, Rest};
use minijinja::{Error, Value};

use super::{arg, fail, py_str};
use crate::template::limits;

/// Compiled patterns by (pattern, ignorecase, multiline): the same few patterns of the
/// bundled roles are used by every host on every run of a task, and compiling one costs
/// more than matching it. Emptied when it reaches [`REGEX_CACHE_MAX`] entries.
type RegexCache = HashMap<(String, bool, bool), Arc<fancy_regex::Regex>>;
static REGEX_CACHE: OnceLock<Mutex<RegexCache>> = OnceLock::new();
const REGEX_CACHE_MAX: usize = 512;

/// Compiles a Python regular expression with Ansible's `ignorecase`/`multiline` flags
/// (once per run and pattern: compiled patterns are shared).
pub(crate) fn py_regex(
    filter: &str,
    pattern: &str,
    ignorecase: bool,
    multiline: bool,
) -> Result<Arc<fancy_regex::Regex>, Error> {
    let cache = REGEX_CACHE.get_or_init(Default::default);
    let key = (pattern.to_string(), ignorecase, multiline);
    if let Some(re) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(re.clone());
    }
    let re = Arc::new(compile_py_regex(filter, pattern, ignorecase, multiline)?);
    let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
    if map.len() >= REGEX_CACHE_MAX {
        map.clear();
    }
    map.insert(key, re.clone());
    Ok(re)
}

fn compile_py_regex(
    filter: &str,
    pattern: &str,
    ignorecase: bool,
    multiline: bool,
) -> Result<fancy_regex::Regex, Error> {
    if pattern.len() > limits::MAX_PATTERN {
        return Err(fail(format!(
            "{}: the regular expression is {} bytes; refusing more than {}",
            filter,
            pattern.len(),
            limits::MAX_PATTERN
        )));
    }
    let p = crate::ansible::pyre::translate(pattern, ignorecase, multiline, false);
    fancy_regex::Regex::new(&p).map_err(|e| {
        fail(format!(
            "{}: invalid regular expression '{}': {}",
            filter, pattern, e
        ))
    })
}

fn regex_flags(kwargs: &Kwargs) -> Result<(bool, bool), Error> {
    let i = kwargs
        .get::<Option<Value>>("ignorecase")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let m = kwargs
        .get::<Option<Value>>("multiline")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    Ok((i, m))
}

fn regex_err(filter: &str, e: fancy_regex::Error) -> Error {
    fail(format!("{}: regular expression failed: {}", filter, e))
}

pub(super) fn regex_search(
    value: &Value,
    pattern: String,
    groups: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let groups = groups.0;
    let (i, m) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let re = py_regex("regex_search", &pattern, i, m)?;
    enum G {
        Num(usize),
        Name(String),
    }
    let mut wanted = Vec::new();
    for g in &groups {
        let s = py_str(g);
        if let Some(name) = s.strip_prefix("\\g<").and_then(|r| r.strip_suffix('>')) {
            match name.parse::<usize>() {
                Ok(n) => wanted.push(G::Num(n)),
                Err(_) => wanted.push(G::Name(name.to_string())),
            }
        } else if let Some(n) = s.strip_prefix('\\').and_then(|r| r.parse::<usize>().ok()) {
            wanted.push(G::Num(n));
        } else {
            return Err(fail(format!(
                "regex_search: unknown argument '{}'; give groups as '\\\\1' or '\\\\g<name>'",
                s
            )));
        }
    }
    let text = py_str(value);
    let Some(caps) = re
        .captures(&text)
        .map_err(|e| regex_err("regex_search", e))?
    else {
        return Ok(Value::from(()));
    };
    if wanted.is_empty() {
        return Ok(Value::from(
            caps.get(0).map(|m| m.as_str()).unwrap_or_default(),
        ));
    }
    let mut out = Vec::new();
    for w in wanted {
        let m = match &w {
            G::Num(n) => {
                if *n >= caps.len() {
                    return Err(fail(format!(
                        "regex_search: no group {} in '{}'",
                        n, pattern
                    )));
                }
                caps.get(*n)
            }
            G::Name(name) => {
                if !re.capture_names().any(|c| c == Some(name.as_str())) {
                    return Err(fail(format!(
                        "regex_search: no group named '{}' in '{}'",
                        name, pattern
                    )));
                }
                caps.name(name)
            }
        };
        out.push(
            m.map(|m| Value::from(m.as_str()))
                .unwrap_or(Value::from(())),
        );
    }
    Ok(Value::from(out))
}

/// Translates a Python `re.sub` replacement (`\1`, `\g<name>`, `\n`) to the
/// `$`-syntax of the regex crates.
fn py_replacement(repl: &str) -> Result<String, Error> {
    let mut out = String::new();
    let chars: Vec<char> = repl.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '$' {
            out.push_str("$$");
        } else if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            i += 1;
            match n {
                '0'..='9' => {
                    let mut digits = n.to_string();
                    if i + 1 < chars.len() && chars[i + 1].is_ascii_digit() {
                        digits.push(chars[i + 1]);
                        i += 1;
                    }
                    out.push_str(&format!("${{{}}}", digits.parse::<usize>().unwrap_or(0)));
                }
                'g' => {
                    let rest: String = chars[i + 1..].iter().collect();
                    let name = rest
                        .strip_prefix('<')
                        .and_then(|r| r.split_once('>'))
                        .map(|(n, _)| n.to_string())
                        .ok_or_else(|| {
                            fail("regex_replace: bad group reference in replacement; use \\g<name>")
                        })?;
                    i += name.chars().count() + 2;
                    out.push_str(&format!("${{{}}}", name));
                }
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'f' => out.push('\u{0c}'),
                'v' => out.push('\u{0b}'),
                'a' => out.push('\u{07}'),
                'b' => out.push('\u{08}'),
                '\\' => out.push('\\'),
                c if c.is_ascii_alphabetic() => {
                    return Err(fail(format!(
                        "regex_replace: bad escape \\{} in the replacement",
                        c
                    )));
                }
                c => {
                    out.push('\\');
                    if c == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(c);
                    }
                }
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    Ok(out)
}

pub(super) fn regex_replace(
    value: &Value,
    pattern: Option<String>,
    replacement: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let pattern = pattern
        .or(kwargs.get::<Option<String>>("pattern")?)
        .unwrap_or_default();
    let replacement = replacement
        .or(kwargs.get::<Option<String>>("replacement")?)
        .unwrap_or_default();
    let (i, m) = regex_flags(&kwargs)?;
    let count = kwargs.get::<Option<usize>>("count")?.unwrap_or(0);
    let mandatory_count = kwargs.get::<Option<usize>>("mandatory_count")?.unwrap_or(0);
    kwargs.assert_all_used()?;
    let re = py_regex("regex_replace", &pattern, i, m)?;
    let text = py_str(value);
    if mandatory_count > 0 {
        let found = re.find_iter(&text).count();
        if found != mandatory_count {
            return Err(fail(format!(
                "regex_replace: expected {} matches of '{}', found {}",
                mandatory_count, pattern, found
            )));
        }
    }
    let repl = py_replacement(&replacement)?;
    re.try_replacen(&text, count, repl.as_str())
        .map(|c| c.into_owned())
        .map_err(|e| regex_err("regex_replace", e))
}

pub(super) fn regex_findall(
    value: &Value,
    pattern: String,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let (i, m) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let re = py_regex("regex_findall", &pattern, i, m)?;
    let text = py_str(value);
    let mut out = Vec::new();
    for caps in re.captures_iter(&text) {
        let caps = caps.map_err(|e| regex_err("regex_findall", e))?;
        let grp = |n: usize| Value::from(caps.get(n).map(|m| m.as_str()).unwrap_or_default());
        out.push(match caps.len() {
            1 => grp(0),
            2 => grp(1),
            n => Value::from((1..n).map(grp).collect::<Vec<_>>()),
        });
    }
    Ok(Value::from(out))
}

pub(super) fn regex_escape(
    value: &Value,
    re_type: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let re_type = arg(re_type, &kwargs, "re_type")?.map(|v| py_str(&v));
    kwargs.assert_all_used()?;
    let s = py_str(value);
    let special: &str = match re_type.as_deref().unwrap_or("python") {
        "python" => "()[]{}?*+-|^$\\.&~# \t\n\r\u{0b}\u{0c}",
        "posix_basic" => "].[^$*\\",
        "posix_extended" => {
            return Err(fail(
                "regex_escape: regex type (posix_extended) not yet implemented",
            ))
        }
        other => {
            return Err(fail(format!(
                "regex_escape: invalid regex type ({}); use 'python' or 'posix_basic'",
                other
            )))
        }
    };
    let mut out = String::new();
    for c in s.chars() {
        if special.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(out)
}
