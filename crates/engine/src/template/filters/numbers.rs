//! Numbers and text: `human_readable`, `human_to_bytes`, `log`, `pow`, `root` and
//! `comment`, with Ansible's rounding and unit tables.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, Value};

use super::types::parse_py_float;
use super::{arg, fail, py_str, py_type};
use crate::template::limits;

const SIZE_RANGES: [(char, u128); 9] = [
    ('Y', 1 << 80),
    ('Z', 1 << 70),
    ('E', 1 << 60),
    ('P', 1 << 50),
    ('T', 1 << 40),
    ('G', 1 << 30),
    ('M', 1 << 20),
    ('K', 1 << 10),
    ('B', 1),
];

fn number_of(filter: &str, v: &Value) -> Result<f64, Error> {
    if let Ok(f) = f64::try_from(v.clone()) {
        if v.kind() == ValueKind::Number {
            return Ok(f);
        }
    }
    v.as_str().and_then(parse_py_float).ok_or_else(|| {
        fail(format!(
            "{}: expected a number, got {} '{}'",
            filter,
            py_type(v),
            py_str(v)
        ))
    })
}

pub(super) fn human_readable(
    value: &Value,
    isbits: Option<Value>,
    unit: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let isbits = arg(isbits, &kwargs, "isbits")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let unit = arg(unit, &kwargs, "unit")?
        .filter(|u| !u.is_none())
        .map(|u| py_str(&u));
    kwargs.assert_all_used()?;
    let size = number_of("human_readable", value)?;
    let base = if isbits { "bits" } else { "Bytes" };
    let mut chosen = SIZE_RANGES[SIZE_RANGES.len() - 1];
    for r in SIZE_RANGES {
        let hit = match &unit {
            None => size >= r.1 as f64,
            Some(u) => u.chars().next().map(|c| c.to_ascii_uppercase()) == Some(r.0),
        };
        chosen = r;
        if hit {
            break;
        }
    }
    let suffix = if chosen.1 != 1 {
        format!("{}{}", chosen.0, &base[..1])
    } else {
        base.to_string()
    };
    Ok(format!("{:.2} {}", size / chosen.1 as f64, suffix))
}

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

pub(super) fn human_to_bytes(
    value: &Value,
    default_unit: Option<Value>,
    isbits: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let default_unit = arg(default_unit, &kwargs, "default_unit")?
        .filter(|u| !u.is_none())
        .map(|u| py_str(&u));
    let isbits = arg(isbits, &kwargs, "isbits")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    kwargs.assert_all_used()?;
    let text = py_str(value);
    let bad = || {
        fail(format!(
            "human_to_bytes() can't interpret following string: {}",
            text
        ))
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if num.is_empty() || (!unit.is_empty() && !unit.chars().all(|c| c.is_ascii_alphabetic())) {
        return Err(bad());
    }
    let num: f64 = num.parse().map_err(|_| bad())?;
    let unit = if unit.is_empty() {
        default_unit.unwrap_or_default()
    } else {
        unit.to_string()
    };
    if unit.is_empty() {
        return Ok(Value::from(round_half_even(num) as i128));
    }
    let key = unit
        .chars()
        .next()
        .map(|c| c.to_ascii_uppercase())
        .unwrap_or('B');
    let limit = SIZE_RANGES.iter().find(|r| r.0 == key).map(|r| r.1).ok_or_else(|| {
        fail(format!(
            "human_to_bytes() failed to convert {} (unit = {}). The suffix must be one of Y, Z, E, P, T, G, M, K, B",
            text, unit
        ))
    })?;
    if unit.len() > 1 {
        let (class, class_name) = if isbits { ('b', "bit") } else { ('B', "byte") };
        let names = [
            ('B', "byte", "bit"),
            ('K', "kilobyte", "kilobit"),
            ('M', "megabyte", "megabit"),
            ('G', "gigabyte", "gigabit"),
            ('T', "terabyte", "terabit"),
            ('P', "petabyte", "petabit"),
            ('E', "exabyte", "exabit"),
            ('Z', "zettabyte", "zettabit"),
            ('Y', "yottabyte", "yottabit"),
        ];
        let long = names
            .iter()
            .find(|n| n.0 == key)
            .map(|n| if isbits { n.2 } else { n.1 })
            .unwrap_or(class_name);
        let expected = format!("{}{}", key, class);
        if !(unit.to_lowercase() == long
            || unit == expected
            || (key == 'B' && unit.to_lowercase() == class_name))
        {
            let expect = if key == 'B' {
                format!("expect {} or {}", class, class_name)
            } else {
                format!("expect {}{} or {}", key, class, key)
            };
            return Err(fail(format!(
                "human_to_bytes() failed to convert {}. Value is not a valid string ({})",
                text, expect
            )));
        }
    }
    Ok(Value::from(round_half_even(num * limit as f64) as i128))
}

pub(super) fn log(x: &Value, base: Option<Value>) -> Result<f64, Error> {
    let x = number_of("log", x)?;
    match base {
        None => Ok(x.ln()),
        Some(b) => {
            let b = number_of("log", &b)?;
            Ok(if b == 10.0 {
                x.log10()
            } else {
                x.ln() / b.ln()
            })
        }
    }
}

pub(super) fn pow(x: &Value, y: &Value) -> Result<f64, Error> {
    Ok(number_of("pow", x)?.powf(number_of("pow", y)?))
}

pub(super) fn root(x: &Value, base: Option<Value>) -> Result<f64, Error> {
    let x = number_of("root", x)?;
    let b = match base {
        Some(b) => number_of("root", &b)?,
        None => 2.0,
    };
    if x < 0.0 {
        return Err(fail(format!(
            "root: cannot take a root of the negative number {}",
            x
        )));
    }
    Ok(if b == 2.0 { x.sqrt() } else { x.powf(1.0 / b) })
}

/// Ansible's `comment` filter: wraps text in comment decoration of a style.
pub(super) fn comment(
    value: &Value,
    style: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let text = py_str(value);
    let style = style.unwrap_or_else(|| "plain".into());
    let (beginning, decoration, end) = match style.as_str() {
        "plain" => ("", "# ", ""),
        "erlang" => ("", "% ", ""),
        "c" => ("", "// ", ""),
        "cblock" => ("/*", " * ", " */"),
        "xml" => ("<!--", " - ", "-->"),
        other => {
            return Err(fail(format!(
                "comment: unknown style '{}'; use plain, erlang, c, cblock or xml",
                other
            )))
        }
    };
    let get = |k: &str, d: &str| -> Result<String, Error> {
        Ok(kwargs
            .get::<Option<Value>>(k)?
            .map(|v| py_str(&v))
            .unwrap_or_else(|| d.to_string()))
    };
    let prepost = get("decoration", decoration)?;
    let newline = get("newline", "\n")?;
    let beginning = get("beginning", beginning)?;
    let prefix = get("prefix", prepost.trim_end())?;
    let count = |k: &str| -> Result<usize, Error> {
        match get(k, "1")?.trim().parse::<i128>() {
            Ok(n) => limits::width("comment", k, n),
            Err(_) => Ok(1),
        }
    };
    let prefix_count = count("prefix_count")?;
    let decoration = get("decoration", decoration)?;
    let postfix = get("postfix", prepost.trim_end())?;
    let postfix_count = count("postfix_count")?;
    let end = get("end", end)?;
    kwargs.assert_all_used()?;
    let mut out = String::new();
    if !beginning.is_empty() {
        out.push_str(&beginning);
        out.push_str(&newline);
    }
    if !prefix.is_empty() {
        let unit = if prefix != newline {
            format!("{}{}", prefix, newline)
        } else {
            newline.clone()
        };
        out.push_str(&unit.repeat(prefix_count));
    }
    let body = format!(
        "{}{}",
        decoration,
        text.replace(&newline, &format!("{}{}", newline, decoration))
    );
    out.push_str(&body.replace(
        &format!("{}{}", decoration, newline),
        &format!("{}{}", decoration.trim_end(), newline),
    ));
    for _ in 0..postfix_count {
        out.push_str(&newline);
        out.push_str(&postfix);
    }
    if !end.is_empty() {
        out.push_str(&newline);
        out.push_str(&end);
    }
    Ok(out)
}
