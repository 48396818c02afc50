//! Ansible's Jinja tests (`x is version('1.2', '>=')`, `result is failed` …).
//!
//! minijinja's `defined`, `undefined`, `none`, `string`, `number`, `integer`, `float`,
//! `boolean`, `mapping`, `iterable`, `in`, `eq`/`equalto` … already behave as Jinja2's;
//! `sequence` is replaced because Jinja2 counts strings and dicts as sequences.
//! Every test is also registered as `ansible.builtin.<name>`.

use std::cmp::Ordering;
use std::path::Path;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Environment, Error, State, Value};

use super::filters::{fail, py_regex, py_str, py_type};

mod more;

/// Registers the tests.
pub fn register(env: &mut Environment<'static>) {
    macro_rules! test {
        ($name:literal, $f:expr) => {{
            env.add_test($name, $f);
            env.add_test(concat!("ansible.builtin.", $name), $f);
        }};
    }
    test!("version", version);
    test!("version_compare", version);
    test!("match", match_test);
    test!("search", search_test);
    test!("regex", regex_test);
    test!("sequence", sequence);
    test!("truthy", truthy);
    test!("falsy", falsy);
    test!("subset", subset);
    test!("superset", superset);
    test!("contains", contains);
    test!("any", any);
    test!("all", all);
    test!("abs", is_abs);
    test!("is_abs", is_abs);
    test!("exists", exists);
    test!("file", is_file);
    test!("is_file", is_file);
    test!("directory", is_dir);
    test!("is_dir", is_dir);
    test!("link", is_link);
    test!("is_link", is_link);
    test!("link_exists", link_exists);
    test!("same_file", same_file);
    test!("success", succeeded);
    test!("succeeded", succeeded);
    test!("failed", failed);
    test!("failure", failed);
    test!("changed", changed);
    test!("change", changed);
    test!("skipped", skipped);
    test!("skip", skipped);
    test!("finished", finished);
    test!("unreachable", unreachable);
    test!("reachable", reachable);
    test!("nan", nan);
    more::register(env);
    use minijinja::tests as b;
    macro_rules! alias {
        ($($name:literal => $f:expr),* $(,)?) => {{ $( env.add_test(concat!("ansible.builtin.", $name), $f); )* }};
    }
    alias!(
        "defined" => b::is_defined, "undefined" => b::is_undefined, "none" => b::is_none,
        "string" => b::is_string, "number" => b::is_number, "integer" => b::is_integer,
        "float" => b::is_float, "boolean" => b::is_boolean, "mapping" => b::is_mapping,
        "iterable" => b::is_iterable, "in" => b::is_in, "equalto" => b::is_eq, "eq" => b::is_eq,
        "odd" => b::is_odd, "even" => b::is_even, "divisibleby" => b::is_divisibleby,
        "lower" => b::is_lower, "upper" => b::is_upper, "sameas" => b::is_sameas,
    );
}

// ---------------------------------------------------------------------------
// Versions.

/// One part of a `LooseVersion`: a number or a run of other text.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Num(u128),
    Text(String),
}

/// Python's `LooseVersion.parse`: numbers, lowercase words and the text between them.
fn loose_parts(s: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut other = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let flush = |other: &mut String, parts: &mut Vec<Part>| {
        if !other.is_empty() {
            parts.push(Part::Text(std::mem::take(other)));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            flush(&mut other, &mut parts);
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            match digits.parse::<u128>() {
                Ok(n) => parts.push(Part::Num(n)),
                Err(_) => parts.push(Part::Text(digits)),
            }
            continue;
        }
        if c.is_ascii_lowercase() {
            flush(&mut other, &mut parts);
            let start = i;
            while i < chars.len() && chars[i].is_ascii_lowercase() {
                i += 1;
            }
            parts.push(Part::Text(chars[start..i].iter().collect()));
            continue;
        }
        if c == '.' {
            flush(&mut other, &mut parts);
        } else {
            other.push(c);
        }
        i += 1;
    }
    flush(&mut other, &mut parts);
    parts
}

/// Compares two LooseVersions as Python 3 compares their part lists; a number
/// against text at the first difference is an error, as in Ansible.
fn loose_cmp(a: &str, b: &str) -> Result<Ordering, String> {
    let (pa, pb) = (loose_parts(a), loose_parts(b));
    for (x, y) in pa.iter().zip(pb.iter()) {
        match (x, y) {
            (Part::Num(m), Part::Num(n)) if m != n => return Ok(m.cmp(n)),
            (Part::Text(m), Part::Text(n)) if m != n => return Ok(m.cmp(n)),
            (Part::Num(_), Part::Text(t)) | (Part::Text(t), Part::Num(_)) => {
                return Err(format!(
                    "cannot compare the number and the text '{}' in versions '{}' and '{}' (LooseVersion); \
                     write both versions the same way (e.g. both with or without a leading 'v')",
                    t, a, b
                ))
            }
            _ => {}
        }
    }
    Ok(pa.len().cmp(&pb.len()))
}

/// A parsed StrictVersion: major, minor, patch and the optional `a`/`b` pre-release.
type StrictKey = (u64, u64, u64, Option<(char, u64)>);

/// `StrictVersion`: `N.N[.N][(a|b)N]`.
fn strict_key(s: &str) -> Result<StrictKey, String> {
    let re =
        regex::Regex::new(r"^(\d+)\.(\d+)(\.(\d+))?([ab](\d+))?$").map_err(|e| e.to_string())?;
    let c = re.captures(s).ok_or_else(|| {
        format!(
            "invalid version number '{}' (StrictVersion wants N.N[.N][aN|bN])",
            s
        )
    })?;
    let num = |i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let pre = c
        .get(5)
        .map(|m| (m.as_str().chars().next().unwrap_or('a'), num(6)));
    Ok((num(1), num(2), num(4), pre))
}

fn strict_cmp(a: &str, b: &str) -> Result<Ordering, String> {
    let (ka, kb) = (strict_key(a)?, strict_key(b)?);
    let core = (ka.0, ka.1, ka.2).cmp(&(kb.0, kb.1, kb.2));
    if core != Ordering::Equal {
        return Ok(core);
    }
    Ok(match (ka.3, kb.3) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(&y),
    })
}

/// Semantic versions: precedence per semver 2.0, build metadata ignored.
fn semver_cmp(a: &str, b: &str) -> Result<Ordering, String> {
    let parse = |s: &str| {
        semver::Version::parse(s).map_err(|e| format!("invalid semantic version '{}': {}", s, e))
    };
    let (x, y) = (parse(a)?, parse(b)?);
    Ok((x.major, x.minor, x.patch)
        .cmp(&(y.major, y.minor, y.patch))
        .then_with(|| x.pre.cmp(&y.pre)))
}

/// `version` / `version_compare`: compares `value` with `version` using `operator`,
/// as LooseVersion by default, StrictVersion with `strict=true`, or semantic
/// versions with `version_type='semver'`.
fn version(
    value: &Value,
    other: &Value,
    operator: Option<String>,
    kwargs: Kwargs,
) -> Result<bool, Error> {
    let operator = match operator {
        Some(o) => o,
        None => kwargs
            .get::<Option<String>>("operator")?
            .unwrap_or_else(|| "eq".into()),
    };
    let strict = kwargs
        .get::<Option<Value>>("strict")?
        .filter(|v| !v.is_none());
    let vtype = kwargs.get::<Option<String>>("version_type")?;
    kwargs.assert_all_used()?;
    if strict.is_some() && vtype.is_some() {
        return Err(fail(
            "version: cannot specify both 'strict' and 'version_type'",
        ));
    }
    let (a, b) = (py_str(value), py_str(other));
    if value.is_none() || value.is_undefined() || a.is_empty() {
        return Err(fail("version: input version value cannot be empty"));
    }
    if other.is_none() || b.is_empty() {
        return Err(fail(
            "version: version parameter to compare against cannot be empty",
        ));
    }
    let kind = match (&strict, vtype.as_deref()) {
        (Some(s), _) if s.is_true() => "strict",
        (_, Some(t)) => t,
        _ => "loose",
    };
    let ord = match kind {
        "loose" => loose_cmp(&a, &b),
        "strict" => strict_cmp(&a, &b),
        "semver" | "semantic" => semver_cmp(&a, &b),
        other => {
            return Err(fail(format!(
                "version: invalid version type ({}); must be one of 'loose', 'strict', 'semver', 'semantic'",
                other
            )))
        }
    };
    let op = match operator.as_str() {
        "==" | "=" | "eq" => "eq",
        "<" | "lt" => "lt",
        "<=" | "le" => "le",
        ">" | "gt" => "gt",
        ">=" | "ge" => "ge",
        "!=" | "<>" | "ne" => "ne",
        other => {
            return Err(fail(format!(
                "version: invalid operator type ({}); must be one of '==', '=', 'eq', '<', 'lt', '<=', 'le', '>', 'gt', '>=', 'ge', '!=', '<>', 'ne'",
                other
            )))
        }
    };
    // Python's list equality never fails; only ordering trips over number-vs-text.
    let ord = match (ord, op) {
        (Err(_), "eq") if kind == "loose" => return Ok(false),
        (Err(_), "ne") if kind == "loose" => return Ok(true),
        (Err(e), _) => return Err(fail(format!("version: comparison failed: {}", e))),
        (Ok(o), _) => o,
    };
    Ok(match op {
        "eq" => ord == Ordering::Equal,
        "ne" => ord != Ordering::Equal,
        "lt" => ord == Ordering::Less,
        "le" => ord != Ordering::Greater,
        "gt" => ord == Ordering::Greater,
        _ => ord != Ordering::Less,
    })
}

// ---------------------------------------------------------------------------
// Regular expressions.

fn regex_run(
    name: &str,
    value: &Value,
    pattern: &str,
    kwargs: &Kwargs,
    mode: &str,
) -> Result<bool, Error> {
    let i = kwargs
        .get::<Option<Value>>("ignorecase")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let m = kwargs
        .get::<Option<Value>>("multiline")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let mode = kwargs
        .get::<Option<String>>("match_type")?
        .unwrap_or_else(|| mode.to_string());
    kwargs.assert_all_used()?;
    let anchored = match mode.as_str() {
        "match" => format!(r"\A(?:{})", pattern),
        "fullmatch" => format!(r"\A(?:{})\z", pattern),
        _ => pattern.to_string(),
    };
    let re = py_regex(name, &anchored, i, m)?;
    re.is_match(&py_str(value))
        .map_err(|e| fail(format!("{}: regular expression failed: {}", name, e)))
}

fn match_test(value: &Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    regex_run("match", value, &pattern, &kwargs, "match")
}

fn search_test(value: &Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    regex_run("search", value, &pattern, &kwargs, "search")
}

fn regex_test(value: &Value, pattern: String, kwargs: Kwargs) -> Result<bool, Error> {
    regex_run("regex", value, &pattern, &kwargs, "search")
}

// ---------------------------------------------------------------------------
// Types, truth and sets.

fn sequence(value: &Value) -> bool {
    matches!(
        value.kind(),
        ValueKind::String | ValueKind::Seq | ValueKind::Map | ValueKind::Bytes
    )
}

fn truthy(value: &Value, convert_bool: Option<bool>, kwargs: Kwargs) -> Result<bool, Error> {
    let convert = match convert_bool {
        Some(c) => c,
        None => kwargs.get::<Option<bool>>("convert_bool")?.unwrap_or(false),
    };
    kwargs.assert_all_used()?;
    Ok(convert
        .then(|| convert_boolean(value))
        .flatten()
        .unwrap_or_else(|| value.is_true()))
}

/// Ansible's `boolean()` as `truthy(convert_bool=True)` uses it; `None` when the
/// value is not one of its well-known spellings.
fn convert_boolean(v: &Value) -> Option<bool> {
    match v.kind() {
        ValueKind::Bool => Some(v.is_true()),
        ValueKind::String => match v
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_lowercase()
            .as_str()
        {
            "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
            "n" | "no" | "off" | "0" | "false" | "f" => Some(false),
            _ => None,
        },
        ValueKind::Number => match f64::try_from(v.clone()) {
            Ok(1.0) => Some(true),
            Ok(0.0) => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn falsy(value: &Value, convert_bool: Option<bool>, kwargs: Kwargs) -> Result<bool, Error> {
    truthy(value, convert_bool, kwargs).map(|t| !t)
}

fn items(name: &str, v: &Value) -> Result<Vec<Value>, Error> {
    match v.kind() {
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map => Ok(v.try_iter()?.collect()),
        _ => Err(fail(format!(
            "{}: expected a list, got {}",
            name,
            py_type(v)
        ))),
    }
}

fn subset(a: &Value, b: &Value) -> Result<bool, Error> {
    let (a, b) = (items("subset", a)?, items("subset", b)?);
    Ok(a.iter().all(|x| b.contains(x)))
}

fn superset(a: &Value, b: &Value) -> Result<bool, Error> {
    let (a, b) = (items("superset", a)?, items("superset", b)?);
    Ok(b.iter().all(|x| a.contains(x)))
}

fn contains(seq: &Value, item: &Value) -> Result<bool, Error> {
    match seq.kind() {
        ValueKind::String => Ok(seq.as_str().unwrap_or_default().contains(&py_str(item))),
        _ => Ok(items("contains", seq)?.contains(item)),
    }
}

fn any(seq: &Value) -> Result<bool, Error> {
    Ok(items("any", seq)?.iter().any(Value::is_true))
}

fn all(seq: &Value) -> Result<bool, Error> {
    Ok(items("all", seq)?.iter().all(Value::is_true))
}

fn nan(v: &Value) -> bool {
    v.kind() == ValueKind::Number && f64::try_from(v.clone()).map(f64::is_nan).unwrap_or(false)
}

// ---------------------------------------------------------------------------
// Paths on the controller.

fn path_of(name: &str, v: &Value) -> Result<String, Error> {
    match v.as_str() {
        Some(s) => Ok(s.to_string()),
        None => Err(fail(format!(
            "{}: expected a path string, got {}",
            name,
            py_type(v)
        ))),
    }
}

fn is_abs(v: &Value) -> Result<bool, Error> {
    Ok(path_of("abs", v)?.starts_with('/'))
}

fn exists(v: &Value) -> Result<bool, Error> {
    Ok(Path::new(&path_of("exists", v)?).exists())
}

fn is_file(v: &Value) -> Result<bool, Error> {
    Ok(Path::new(&path_of("file", v)?).is_file())
}

fn is_dir(v: &Value) -> Result<bool, Error> {
    Ok(Path::new(&path_of("directory", v)?).is_dir())
}

fn is_link(v: &Value) -> Result<bool, Error> {
    Ok(Path::new(&path_of("link", v)?).is_symlink())
}

fn link_exists(v: &Value) -> Result<bool, Error> {
    Ok(std::fs::symlink_metadata(path_of("link_exists", v)?).is_ok())
}

fn same_file(a: &Value, b: &Value) -> Result<bool, Error> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (path_of("same_file", a)?, path_of("same_file", b)?);
    match (std::fs::metadata(&a), std::fs::metadata(&b)) {
        (Ok(x), Ok(y)) => Ok(x.dev() == y.dev() && x.ino() == y.ino()),
        _ => Err(fail(format!(
            "same_file: '{}' or '{}' does not exist",
            a, b
        ))),
    }
}

// ---------------------------------------------------------------------------
// Registered task results.

fn result_map(name: &str, state: &State, v: &Value) -> Result<(), Error> {
    if v.is_undefined() {
        return Err(super::filters::undefined_error(state, v, name));
    }
    if v.kind() != ValueKind::Map {
        return Err(fail(format!(
            "The '{}' test expects a dictionary (a registered task result), got {}",
            name,
            py_type(v)
        )));
    }
    Ok(())
}

fn flag(v: &Value, key: &str) -> bool {
    v.get_attr(key).map(|x| x.is_true()).unwrap_or(false)
}

fn failed(state: &State, v: &Value) -> Result<bool, Error> {
    result_map("failed", state, v)?;
    Ok(flag(v, "failed"))
}

fn succeeded(state: &State, v: &Value) -> Result<bool, Error> {
    result_map("succeeded", state, v)?;
    Ok(!flag(v, "failed"))
}

fn changed(state: &State, v: &Value) -> Result<bool, Error> {
    result_map("changed", state, v)?;
    let c = v.get_attr("changed").unwrap_or(Value::UNDEFINED);
    if !c.is_undefined() {
        return Ok(c.is_true());
    }
    // Loop results carry `changed` per item.
    let results = v.get_attr("results").unwrap_or(Value::UNDEFINED);
    if results.kind() == ValueKind::Seq {
        for r in results.try_iter()? {
            if r.kind() == ValueKind::Map && flag(&r, "changed") {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn skipped(state: &State, v: &Value) -> Result<bool, Error> {
    result_map("skipped", state, v)?;
    Ok(flag(v, "skipped"))
}

fn finished(state: &State, v: &Value) -> Result<bool, Error> {
    result_map("finished", state, v)?;
    let f = v.get_attr("finished").unwrap_or(Value::UNDEFINED);
    if f.is_undefined() {
        return Ok(true);
    }
    Ok(f.as_i64() == Some(1) || (f.kind() == ValueKind::Bool && f.is_true()))
}

fn unreachable(state: &State, v: &Value) -> Result<bool, Error> {
    result_map("unreachable", state, v)?;
    Ok(flag(v, "unreachable"))
}

fn reachable(state: &State, v: &Value) -> Result<bool, Error> {
    result_map("reachable", state, v)?;
    Ok(!flag(v, "unreachable"))
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};
    use serde_json::json;

    fn t(expr: &str) -> bool {
        let tpl = Templar::new();
        let v = tpl
            .eval_expr(expr, &to_mj(&json!({"res": {"failed": true, "changed": false, "rc": 1}, "ok": {"changed": true}, "loop": {"results": [{"changed": false}, {"changed": true}]}, "skip": {"skipped": true, "changed": false}, "unr": {"unreachable": true}})))
            .unwrap_or_else(|e| panic!("{}: {}", expr, e.render()));
        v.is_true()
    }

    fn e(expr: &str) -> String {
        let tpl = Templar::new();
        match tpl.eval_expr(expr, &to_mj(&json!({}))) {
            Ok(v) => panic!("{} should fail, gave {}", expr, v),
            Err(e) => e.render(),
        }
    }

    #[test]
    fn loose_versions() {
        assert!(t("'1.28.3' is version('1.28', '>=')"));
        assert!(t("'v1.28.3' is version('v1.28', '>')"));
        assert!(t("'v1.28.3' is version('v1.30.0', 'lt')"));
        assert!(t("'1.10' is version('1.9', 'gt')"));
        assert!(t("'1.2' is version('1.2.0', '<')"));
        assert!(t("'1.2.3' is version('1.2.3', '==')"));
        assert!(t("'1.2.3' is version('1.2.3', '=')"));
        assert!(t("'1.2.3' is version('1.2.4', '<>')"));
        assert!(t("'1.2.3' is version('1.2.4', 'ne')"));
        assert!(t("'1.2.3' is version('1.2.3')"));
        assert!(t("'3.4.0-rc.1' is version('3.4.0', '>')"));
        assert!(t("'1.2.3' is version_compare('1.2', 'ge')"));
        assert!(t("'1.2.3' is ansible.builtin.version('1.2', '>=')"));
        assert!(t("'1.2.3' is version('1.2', operator='>=')"));
        assert!(t("not ('v1.2' is version('1.2', '=='))"));
        assert!(e("'v1.28.3' is version('1.28', '>=')").contains("comparison failed"));
        assert!(e("'1.2' is version('1.0', 'bigger')").contains("invalid operator"));
        assert!(e("'' is version('1.0')").contains("cannot be empty"));
    }

    #[test]
    fn strict_and_semver_versions() {
        assert!(t("'1.2.3' is version('1.2.3a1', '>', strict=true)"));
        assert!(t("'1.2' is version('1.2.0', '==', strict=true)"));
        assert!(e("'v1.2' is version('1.2', strict=true)").contains("invalid version number"));
        assert!(t(
            "'1.0.0-alpha' is version('1.0.0', '<', version_type='semver')"
        ));
        assert!(t(
            "'1.0.0-alpha.1' is version('1.0.0-alpha.beta', '<', version_type='semver')"
        ));
        assert!(t(
            "'1.0.0+build1' is version('1.0.0+build2', '==', version_type='semver')"
        ));
        assert!(t(
            "'3.4.0-rc.1' is version('3.4.0', '<', version_type='semantic')"
        ));
        assert!(e("'v1.0.0' is version('1.0.0', version_type='semver')")
            .contains("invalid semantic version"));
        assert!(e("'1' is version('1', strict=true, version_type='semver')").contains("both"));
    }

    #[test]
    fn regex_tests() {
        assert!(!t(
            "'http://example.com/users/1' is match('http://example.com/users/.*/resources')"
        ));
        assert!(t(
            "'http://example.com/users/1' is match('http://example.com/users/')"
        ));
        assert!(t("'xfoo' is search('foo')"));
        assert!(!t("'xfoo' is match('foo')"));
        assert!(t("'FOO' is match('foo', ignorecase=true)"));
        assert!(t("'a\\nfoo' is search('^foo', multiline=true)"));
        assert!(!t("'a\\nfoo' is search('^foo')"));
        assert!(t("'abc' is regex('b')"));
        assert!(t("'abc' is regex('abc', match_type='fullmatch')"));
        assert!(!t("'abcd' is regex('abc', match_type='fullmatch')"));
        assert!(e("'x' is match('(')").contains("invalid regular expression"));
    }

    #[test]
    fn type_tests() {
        assert!(t("x is undefined"));
        assert!(!t("x is defined"));
        assert!(t("none is none"));
        assert!(t("'a' is string"));
        assert!(t("1 is number"));
        assert!(t("1 is integer"));
        assert!(t("1.5 is float"));
        assert!(t("true is boolean"));
        assert!(t("{} is mapping"));
        assert!(t("[] is sequence"));
        assert!(t("'ab' is sequence"));
        assert!(t("{} is sequence"));
        assert!(!t("1 is sequence"));
        assert!(t("'ab' is iterable"));
        assert!(t("'yes' is truthy"));
        assert!(t("'' is falsy"));
        assert!(t("'no' is truthy"));
        assert!(!t("'no' is truthy(convert_bool=true)"));
        assert!(t("'off' is falsy(convert_bool=true)"));
        assert!(!t("1.0 is nan"));
    }

    #[test]
    fn set_tests() {
        assert!(t("[1, 2] is subset([1, 2, 3])"));
        assert!(!t("[1, 4] is subset([1, 2, 3])"));
        assert!(t("[1, 2, 3] is superset([2])"));
        assert!(t("[1, 2] is contains(2)"));
        assert!(t("2 is in([1, 2])"));
        assert!(t("[0, 1] is any"));
        assert!(!t("[0, 1] is all"));
        assert!(t("[1, 'a'] is all"));
        assert!(t(
            "[{'a': 1}] | selectattr('a', 'defined') | list | length == 1"
        ));
        assert!(e("1 is subset([1])").contains("subset: expected a list, got int"));
    }

    #[test]
    fn path_tests() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let l = dir.path().join("l");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        let (d, f, l) = (dir.path().display(), f.display(), l.display());
        assert!(t(&format!("'{}' is directory", d)));
        assert!(t(&format!("'{}' is file", f)));
        assert!(t(&format!("'{}' is exists", f)));
        assert!(t(&format!("'{}' is link", l)));
        assert!(!t(&format!("'{}' is link", f)));
        assert!(t(&format!("'{}' is same_file('{}')", f, l)));
        assert!(!t(&format!("'{}/nope' is exists", d)));
        assert!(t("'/etc' is abs"));
        assert!(!t("'etc' is abs"));
    }

    #[test]
    fn result_tests() {
        assert!(t("res is failed"));
        assert!(t("res is failure"));
        assert!(!t("res is succeeded"));
        assert!(!t("res is success"));
        assert!(!t("res is changed"));
        assert!(t("ok is changed"));
        assert!(t("ok is change"));
        assert!(t("ok is success"));
        assert!(t("loop is changed"));
        assert!(t("skip is skipped"));
        assert!(t("skip is skip"));
        assert!(!t("ok is skipped"));
        assert!(t("ok is finished"));
        assert!(t("unr is unreachable"));
        assert!(!t("ok is unreachable"));
        assert!(t("ok is reachable"));
        assert!(e("'x' is failed").contains("expects a dictionary"));
    }
}
