//! ansible-core's ArgumentSpecValidator, as `validate_argument_spec` runs it for a role's
//! entry point: aliases, unsupported parameters, `required`, each option's `type` (with
//! ansible-core's conversions) and `elements`, `choices`, and, inside an option with
//! `options` (a dict, or a list of dicts), `mutually_exclusive`, `required_together`,
//! `required_one_of`, `required_if` and `required_by`. Errors come in ansible-core's order
//! and words. `default`s take part in the checks only: the role's variables stay as given.
//! (At the entry point's own level ansible-core passes only `options` to the validator,
//! so the entry point's `mutually_exclusive` and the like are not checked.)

use serde_json::{json, Map, Value};

use crate::template::pydump::{py_repr, py_str};

/// The errors of `params` against `spec` (an entry point's `options`).
pub(super) fn validate(spec: &Map<String, Value>, params: &Map<String, Value>) -> Vec<String> {
    let mut v = Validator::default();
    let mut params = params.clone();
    v.level(spec, &mut params, None, &mut Vec::new());
    v.finish()
}

#[derive(Default)]
struct Validator {
    errors: Vec<String>,
    /// Unsupported parameters (dotted with their context), in the order found.
    unsupported: Vec<String>,
    /// The supported names and aliases of the context of the last unsupported one.
    supported: (Vec<String>, Vec<String>),
}

impl Validator {
    /// One level of options: `value` is the option that holds them (None at the top).
    fn level(
        &mut self,
        spec: &Map<String, Value>,
        params: &mut Map<String, Value>,
        holder: Option<&Value>,
        ctx: &mut Vec<String>,
    ) {
        let aliases = self.aliases(spec, params);
        for k in params.keys() {
            if spec.contains_key(k) || aliases.iter().any(|(a, _)| a == k) {
                continue;
            }
            let mut path = ctx.clone();
            path.push(k.clone());
            self.unsupported.push(path.join("."));
            self.supported = (
                spec.keys().cloned().collect(),
                aliases.iter().map(|(a, _)| a.clone()).collect(),
            );
        }
        if let Some(h) = holder {
            self.check(
                check_mutually_exclusive(h.get("mutually_exclusive"), params),
                ctx,
            );
        }
        set_defaults(spec, params, false);
        let mut missing: Vec<&String> = spec
            .iter()
            .filter(|(k, o)| is_true(o.get("required")) && !params.contains_key(*k))
            .map(|(k, _)| k)
            .collect();
        missing.sort();
        if !missing.is_empty() {
            let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            self.check(
                Err(format!("missing required arguments: {}", names.join(", "))),
                ctx,
            );
        }
        self.types(spec, params, ctx);
        self.values(spec, params, ctx);
        if let Some(h) = holder {
            self.check(
                check_required_together(h.get("required_together"), params),
                ctx,
            );
            self.check(check_required_one_of(h.get("required_one_of"), params), ctx);
            self.check(check_required_if(h.get("required_if"), params), ctx);
            self.check(check_required_by(h.get("required_by"), params), ctx);
        }
        set_defaults(spec, params, true);
        self.sub_specs(spec, params, ctx);
    }

    /// An alias given for an option gives the option its value; the aliases of `spec`.
    fn aliases(
        &mut self,
        spec: &Map<String, Value>,
        params: &mut Map<String, Value>,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, opt) in spec {
            let Some(Value::Array(list)) = opt.get("aliases") else {
                continue;
            };
            for a in list.iter().filter_map(Value::as_str) {
                out.push((a.to_string(), name.clone()));
                if let Some(v) = params.get(a).cloned() {
                    params.insert(name.clone(), v);
                }
            }
        }
        out
    }

    fn check(&mut self, r: Result<(), String>, ctx: &[String]) {
        if let Err(msg) = r {
            self.errors.push(found_in(msg, ctx));
        }
    }

    fn types(
        &mut self,
        spec: &Map<String, Value>,
        params: &mut Map<String, Value>,
        ctx: &[String],
    ) {
        for (name, opt) in spec {
            let Some(value) = params.get(name).cloned() else {
                continue;
            };
            if value.is_null()
                && !is_true(opt.get("required"))
                && opt.get("default").is_none_or(Value::is_null)
            {
                continue;
            }
            let wanted = opt.get("type").and_then(Value::as_str).unwrap_or("str");
            match convert(wanted, &value) {
                Ok(converted) => {
                    let elements = opt.get("elements").and_then(Value::as_str);
                    let converted = match (elements, converted) {
                        (Some(el), Value::Array(items)) => {
                            Value::Array(self.elements(el, name, items, ctx))
                        }
                        (Some(_), other) => {
                            let mut msg =
                                format!("Invalid type {} for option '{}'", wanted, py_str(&other));
                            if !ctx.is_empty() {
                                msg.push_str(&format!(" found in '{}'.", ctx.join(" -> ")));
                            }
                            msg.push_str(
                                ", elements value check is supported only with 'list' type",
                            );
                            self.errors.push(msg);
                            other
                        }
                        (None, c) => c,
                    };
                    params.insert(name.clone(), converted);
                }
                Err(why) => {
                    let mut msg = format!("argument '{}' is of type {}", name, type_name(&value));
                    if !ctx.is_empty() {
                        msg.push_str(&format!(" found in '{}'.", ctx.join(" -> ")));
                    }
                    msg.push_str(&format!(
                        " and we were unable to convert to {}: {}",
                        wanted, why
                    ));
                    self.errors.push(msg);
                }
            }
        }
    }

    fn elements(
        &mut self,
        wanted: &str,
        name: &str,
        items: Vec<Value>,
        ctx: &[String],
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for item in items {
            match convert(wanted, &item) {
                Ok(c) => out.push(c),
                Err(why) => {
                    let mut msg = format!("Elements value for option '{}'", name);
                    if !ctx.is_empty() {
                        msg.push_str(&format!(" found in '{}'", ctx.join(" -> ")));
                    }
                    msg.push_str(&format!(
                        " is of type {} and we were unable to convert to {}: {}",
                        type_name(&item),
                        wanted,
                        why
                    ));
                    self.errors.push(msg);
                }
            }
        }
        out
    }

    fn values(&mut self, spec: &Map<String, Value>, params: &Map<String, Value>, ctx: &[String]) {
        for (name, opt) in spec {
            let (Some(Value::Array(choices)), Some(v)) = (opt.get("choices"), params.get(name))
            else {
                continue;
            };
            let shown = || choices.iter().map(py_str).collect::<Vec<_>>().join(", ");
            let msg = match v {
                Value::Array(items) => {
                    let bad: Vec<String> = items
                        .iter()
                        .filter(|i| !choices.iter().any(|c| py_eq(c, i)))
                        .map(py_str)
                        .collect();
                    (!bad.is_empty()).then(|| {
                        format!(
                            "value of {} must be one or more of: {}. Got no match for: {}",
                            name,
                            shown(),
                            bad.join(", ")
                        )
                    })
                }
                v if !choices.iter().any(|c| py_eq(c, v)) => Some(format!(
                    "value of {} must be one of: {}, got: {}",
                    name,
                    shown(),
                    py_str(v)
                )),
                _ => None,
            };
            if let Some(msg) = msg {
                self.errors.push(found_in(msg, ctx));
            }
        }
    }

    /// Options with `options` of their own: a dict, or a list of dicts.
    fn sub_specs(
        &mut self,
        spec: &Map<String, Value>,
        params: &mut Map<String, Value>,
        ctx: &mut Vec<String>,
    ) {
        for (name, opt) in spec {
            let wanted = opt.get("type").and_then(Value::as_str);
            let is_list = wanted == Some("list")
                && opt.get("elements").and_then(Value::as_str) == Some("dict");
            if wanted != Some("dict") && !is_list {
                continue;
            }
            let Some(Value::Object(sub)) = opt.get("options") else {
                continue;
            };
            if is_true(opt.get("apply_defaults")) && params.get(name).is_none_or(Value::is_null) {
                params.insert(name.clone(), json!({}));
            }
            let Some(value) = params.get_mut(name).filter(|v| !v.is_null()) else {
                continue;
            };
            ctx.push(name.clone());
            let mut single;
            let elements: &mut [Value] = match value {
                Value::Array(items) => items,
                other => {
                    single = [other.clone()];
                    &mut single
                }
            };
            for element in elements.iter_mut() {
                match element {
                    Value::Object(m) => self.level(sub, m, Some(opt), ctx),
                    _ => self.errors.push(format!(
                        "value of '{}' must be of type dict or list of dicts",
                        name
                    )),
                }
            }
            ctx.pop();
        }
    }

    fn finish(mut self) -> Vec<String> {
        if !self.unsupported.is_empty() {
            let mut names = self.unsupported.clone();
            names.sort();
            names.dedup();
            let (mut supported, mut aliases) = self.supported.clone();
            supported.sort();
            aliases.sort();
            let mut text = supported.join(", ");
            if !aliases.is_empty() {
                text.push_str(&format!(" ({})", aliases.join(", ")));
            }
            self.errors.push(format!(
                "{}. Supported parameters include: {}.",
                names.join(", "),
                text
            ));
        }
        self.errors
    }
}

fn found_in(msg: String, ctx: &[String]) -> String {
    if ctx.is_empty() {
        msg
    } else {
        format!("{} found in {}", msg, ctx.join(" -> "))
    }
}

fn is_true(v: Option<&Value>) -> bool {
    v.and_then(crate::ansible::to_bool) == Some(true)
}

/// Options absent from `params` get their default: only non-null ones unless `all`.
fn set_defaults(spec: &Map<String, Value>, params: &mut Map<String, Value>, all: bool) {
    for (name, opt) in spec {
        let default = opt.get("default").cloned().unwrap_or(Value::Null);
        if !params.contains_key(name) && (all || !default.is_null()) {
            params.insert(name.clone(), default);
        }
    }
}

/// The names of a term (one name or a list of them).
fn term_names(t: &Value) -> Vec<String> {
    match t {
        Value::Array(a) => a.iter().map(py_str).collect(),
        other => vec![py_str(other)],
    }
}

fn count(names: &[String], params: &Map<String, Value>) -> usize {
    let mut seen: Vec<&String> = names.iter().filter(|n| params.contains_key(*n)).collect();
    seen.sort();
    seen.dedup();
    seen.len()
}

fn terms(v: Option<&Value>) -> Vec<Vec<String>> {
    match v {
        Some(Value::Array(list)) => list.iter().map(term_names).collect(),
        _ => Vec::new(),
    }
}

fn check_mutually_exclusive(v: Option<&Value>, params: &Map<String, Value>) -> Result<(), String> {
    let hits: Vec<String> = terms(v)
        .into_iter()
        .filter(|t| count(t, params) > 1)
        .map(|t| t.join("|"))
        .collect();
    if hits.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "parameters are mutually exclusive: {}",
            hits.join(", ")
        ))
    }
}

fn check_required_together(v: Option<&Value>, params: &Map<String, Value>) -> Result<(), String> {
    for t in terms(v) {
        let given = t.iter().filter(|n| params.contains_key(*n)).count();
        if given > 0 && given < t.len() {
            return Err(format!(
                "parameters are required together: {}",
                t.join(", ")
            ));
        }
    }
    Ok(())
}

fn check_required_one_of(v: Option<&Value>, params: &Map<String, Value>) -> Result<(), String> {
    match terms(v).into_iter().find(|t| count(t, params) == 0) {
        Some(t) => Err(format!(
            "one of the following is required: {}",
            t.join(", ")
        )),
        None => Ok(()),
    }
}

fn check_required_if(v: Option<&Value>, params: &Map<String, Value>) -> Result<(), String> {
    let Some(Value::Array(reqs)) = v else {
        return Ok(());
    };
    for req in reqs {
        let Some(r) = req.as_array().filter(|r| r.len() >= 3) else {
            continue;
        };
        let (key, val, needed) = (py_str(&r[0]), &r[1], term_names(&r[2]));
        let any = r.get(3).is_some_and(|b| is_true(Some(b)));
        if !params.get(&key).is_some_and(|p| py_eq(p, val)) {
            continue;
        }
        let missing: Vec<String> = needed
            .iter()
            .filter(|n| !params.contains_key(*n))
            .cloned()
            .collect();
        let limit = if any { needed.len() } else { 0 };
        if !missing.is_empty() && missing.len() >= limit {
            return Err(format!(
                "{} is {} but {} of the following are missing: {}",
                key,
                py_str(val),
                if any { "any" } else { "all" },
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

fn check_required_by(v: Option<&Value>, params: &Map<String, Value>) -> Result<(), String> {
    let Some(Value::Object(reqs)) = v else {
        return Ok(());
    };
    let given = |k: &str| params.get(k).is_some_and(|v| !v.is_null());
    for (key, needed) in reqs {
        if !given(key) {
            continue;
        }
        let missing: Vec<String> = term_names(needed)
            .into_iter()
            .filter(|n| !given(n))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "missing parameter(s) required by '{}': {}",
                key,
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

/// Python's name of a value's type, as ansible-core's native_type_name prints it.
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `type(value)` as ansible-core 2.19 prints it in a conversion error: values loaded
/// from YAML carry its data tags, so their class is the tagged one.
fn py_class(v: &Value) -> String {
    let tagged = |n: &str| {
        format!(
            "<class 'ansible.module_utils._internal._datatag._AnsibleTagged{}'>",
            n
        )
    };
    match v {
        Value::Null => "<class 'NoneType'>".into(),
        Value::Bool(_) => "<class 'bool'>".into(),
        Value::Number(n) if n.is_f64() => tagged("Float"),
        Value::Number(_) => tagged("Int"),
        Value::String(_) => tagged("Str"),
        Value::Array(_) => tagged("List"),
        Value::Object(_) => tagged("Dict"),
    }
}

/// Python's `==` between plain data (1 == 1.0 == True).
fn py_eq(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// ansible-core's `boolean()`: the words and numbers it takes.
fn boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => Some(true),
            Some(0.0) => Some(false),
            _ => None,
        },
        Value::String(s) => match s.trim().to_lowercase().as_str() {
            "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
            "n" | "no" | "off" | "0" | "false" | "f" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Python's `float()` of a string.
fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim().replace('_', "");
    match t.to_ascii_lowercase().trim_start_matches(['+', '-']) {
        "inf" | "infinity" | "nan" => t.to_ascii_lowercase().parse::<f64>().ok(),
        _ => t.parse::<f64>().ok().filter(|_| !t.is_empty()),
    }
}

/// ansible-core's human_to_bytes: `10`, `1K`, `2.5MB`, `1Mb` (bits).
fn human_to_bytes(v: &Value, bits: bool) -> Option<Value> {
    let text = py_str(v);
    let t = text.trim_end();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, rest) = t.split_at(split);
    let unit = rest.trim_start();
    if num.is_empty() || num.ends_with('.') || num.matches('.').count() > 1 {
        return None;
    }
    if !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    if unit.is_empty() {
        return Some(json!(n.round() as i64));
    }
    let key = unit.chars().next()?.to_ascii_uppercase();
    let power = "BKMGTPEZY".find(key)?;
    if unit.len() > 1 {
        let (word, short) = match (key, bits) {
            ('B', false) => ("byte".to_string(), "B".to_string()),
            ('B', true) => ("bit".to_string(), "b".to_string()),
            (k, false) => (String::new(), format!("{}B", k)),
            (k, true) => (String::new(), format!("{}b", k)),
        };
        let long = [
            "", "kilo", "mega", "giga", "tera", "peta", "exa", "zeta", "yotta",
        ][power];
        let full = if word.is_empty() {
            format!("{}{}", long, if bits { "bit" } else { "byte" })
        } else {
            word
        };
        if unit.to_lowercase() != full && unit != short {
            return None;
        }
    }
    Some(json!((n * 2f64.powi(10 * power as i32)).round() as u64))
}

/// ansible-core's check_type_<wanted>: the converted value, or why it cannot be one.
pub(super) fn convert(wanted: &str, v: &Value) -> Result<Value, String> {
    match wanted {
        "str" => Ok(match v {
            Value::String(_) => v.clone(),
            Value::Null => Value::String(String::new()),
            other => Value::String(py_str(other)),
        }),
        "path" => convert("str", v),
        "int" => {
            let as_int = match v {
                Value::Number(n) if n.is_i64() || n.is_u64() => Some(v.clone()),
                Value::Number(n) => n.as_f64().filter(|f| f.fract() == 0.0).map(|f| json!(f as i64)),
                Value::Bool(b) => Some(Value::Bool(*b)),
                Value::String(s) => {
                    let t = s.trim();
                    t.parse::<i64>().ok().map(|i| json!(i)).or_else(|| {
                        parse_float(t)
                            .filter(|f| f.is_finite() && f.fract() == 0.0 && !t.contains(['n', 'N']))
                            .map(|f| json!(f as i64))
                    })
                }
                _ => None,
            };
            as_int.ok_or_else(|| format!("\"{}\" cannot be converted to an int", py_repr(v)))
        }
        "float" => match v {
            Value::Number(n) => Ok(json!(n.as_f64().unwrap_or(0.0))),
            Value::Bool(b) => Ok(json!(f64::from(u8::from(*b)))),
            Value::String(s) => parse_float(s)
                .map(|f| json!(f))
                .ok_or_else(|| format!("{} cannot be converted to a float", py_class(v))),
            other => Err(format!("{} cannot be converted to a float", py_class(other))),
        },
        "bool" => match v {
            Value::Bool(_) => Ok(v.clone()),
            Value::String(_) | Value::Number(_) => boolean(v).map(Value::Bool).ok_or_else(|| {
                format!(
                    "The value {} is not a valid boolean.  Valid booleans include: 'y', 'yes', 'on', '1', 'true', 't', 1, 1.0, True, 'n', 'no', 'off', '0', 'false', 'f', 0, 0.0, False",
                    py_repr(v)
                )
            }),
            other => Err(format!("{} cannot be converted to a bool", py_class(other))),
        },
        "list" => match v {
            Value::Array(_) => Ok(v.clone()),
            Value::String(s) => Ok(Value::Array(
                s.split(',').map(|p| Value::String(p.to_string())).collect(),
            )),
            Value::Number(_) => Ok(json!([py_str(v)])),
            other => Err(format!("{} cannot be converted to a list", py_class(other))),
        },
        "dict" => match v {
            Value::Object(_) => Ok(v.clone()),
            Value::String(s) if s.starts_with('{') => serde_json::from_str::<Value>(s)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| "unable to evaluate string as dictionary".to_string()),
            Value::String(s) if s.contains('=') => {
                let mut m = Map::new();
                for field in s.split([',', ' ']).filter(|f| !f.is_empty()) {
                    let (k, val) = field.split_once('=').ok_or_else(|| {
                        "unable to evaluate string in the \"key=value\" format as dictionary"
                            .to_string()
                    })?;
                    m.insert(k.to_string(), Value::String(val.to_string()));
                }
                Ok(Value::Object(m))
            }
            Value::String(_) => Err("dictionary requested, could not parse JSON or key=value".into()),
            other => Err(format!("{} cannot be converted to a dict", py_class(other))),
        },
        "bytes" => human_to_bytes(v, false)
            .ok_or_else(|| format!("{} cannot be converted to a Byte value", py_class(v))),
        "bits" => human_to_bytes(v, true)
            .ok_or_else(|| format!("{} cannot be converted to a Bit value", py_class(v))),
        "jsonarg" => match v {
            Value::String(s) => Ok(Value::String(s.trim().to_string())),
            Value::Array(_) | Value::Object(_) => Ok(Value::String(v.to_string())),
            other => Err(format!("{} cannot be converted to a json string", py_class(other))),
        },
        // raw, and types kk does not know, are taken as they are.
        _ => Ok(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Map<String, Value> {
        json!({
            "name": {"type": "str", "required": true},
            "port": {"type": "int"},
            "mode": {"type": "str", "choices": ["fast", "slow"]},
            "debug": {"type": "bool"},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn messages_are_ansible_cores() {
        let given = json!({"port": "many", "mode": "medium"});
        let e = validate(&spec(), given.as_object().unwrap());
        assert_eq!(
            e,
            vec![
                "missing required arguments: name".to_string(),
                "argument 'port' is of type str and we were unable to convert to int: \"'many'\" cannot be converted to an int".to_string(),
                "value of mode must be one of: fast, slow, got: medium".to_string(),
            ]
        );
        let ok = json!({"name": "a", "port": "81", "debug": "yes", "mode": "fast"});
        assert!(validate(&spec(), ok.as_object().unwrap()).is_empty());
    }

    #[test]
    fn nested_options_and_their_checks() {
        let spec = json!({
            "server": {"type": "dict", "options": {
                "host": {"type": "str", "required": true},
                "user": {}, "cert": {}, "key": {},
            },
            "mutually_exclusive": [["user", "cert"]],
            "required_together": [["cert", "key"]]},
        });
        let given = json!({"server": {"user": "u", "cert": "c", "extra": 1}});
        let e = validate(spec.as_object().unwrap(), given.as_object().unwrap());
        assert_eq!(
            e,
            vec![
                "parameters are mutually exclusive: user|cert found in server",
                "missing required arguments: host found in server",
                "parameters are required together: cert, key found in server",
                "server.extra. Supported parameters include: cert, host, key, user.",
            ]
        );
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_to_bytes(&json!("1K"), false), Some(json!(1024)));
        assert_eq!(human_to_bytes(&json!("1Mb"), true), Some(json!(1048576)));
        assert_eq!(human_to_bytes(&json!("1MB"), true), None);
        assert_eq!(human_to_bytes(&json!("lots"), false), None);
        assert_eq!(human_to_bytes(&json!(10), false), Some(json!(10)));
    }
}
