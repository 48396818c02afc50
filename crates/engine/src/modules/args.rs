//! Lenient argument types, because Ansible users write `force: yes`, `mode: 0644`,
//! `mode: "0644"`, `retries: "3"` and a comma-separated string for a list.
//! Use with `#[serde(deserialize_with = "...")]` on module argument structs.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;

/// Ansible's lenient booleans, shared with the layers below modules.
pub use crate::ansible::to_bool;

/// Serde default for boolean arguments that are on unless turned off
/// (`#[serde(default = "args::yes")]`).
pub fn yes() -> bool {
    true
}

/// A boolean given as `true`, `yes`, `"on"`, `1` …
pub fn bool_like<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let v = Value::deserialize(d)?;
    to_bool(&v).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a boolean (true/false/yes/no), found {}",
            v
        ))
    })
}

/// An optional boolean, lenient as [`bool_like`].
pub fn opt_bool_like<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    to_bool(&v).map(Some).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a boolean (true/false/yes/no), found {}",
            v
        ))
    })
}

/// An optional integer given as a number or a numeric string.
pub fn opt_int_like<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = Value::deserialize(d)?;
    match &v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| D::Error::custom("expected an integer")),
        Value::String(s) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("expected an integer, found {:?}", s))),
        _ => Err(D::Error::custom(format!(
            "expected an integer, found {}",
            v
        ))),
    }
}

/// An optional string; numbers and booleans are stringified (YAML may have typed them).
pub fn opt_string_like<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        other => Err(D::Error::custom(format!(
            "expected a string, found {}",
            other
        ))),
    }
}

/// A list given as a list or as a comma-separated string.
pub fn list_like<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(s
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()),
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(D::Error::custom(format!(
                    "expected a list of strings, found item {}",
                    other
                ))),
            })
            .collect(),
        other => Err(D::Error::custom(format!(
            "expected a list, found {}",
            other
        ))),
    }
}

/// A file mode: `0644` (YAML octal, already an integer), `"0644"`, `"644"`, `"u+x"` kept symbolic.
/// Returns the mode as the string `chmod` accepts.
pub fn opt_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::Null => Ok(None),
        // An integer is what YAML made of `0644`: its value is the mode; print it back in octal.
        Value::Number(n) => {
            let i = n
                .as_u64()
                .ok_or_else(|| D::Error::custom("mode must be a positive number"))?;
            Ok(Some(format!("{:04o}", i)))
        }
        Value::String(s) => {
            let s = s.trim().to_string();
            if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
                let m = u32::from_str_radix(&s, 8).map_err(|_| {
                    D::Error::custom(format!("mode {:?} is not an octal number", s))
                })?;
                Ok(Some(format!("{:04o}", m)))
            } else {
                Ok(Some(s))
            }
        }
        other => Err(D::Error::custom(format!(
            "expected a mode like \"0644\", found {}",
            other
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct T {
        #[serde(default, deserialize_with = "opt_mode")]
        mode: Option<String>,
        #[serde(default, deserialize_with = "bool_like")]
        force: bool,
    }

    #[test]
    fn lenient_values() {
        let t: T =
            serde_json::from_value(serde_json::json!({"mode": 420, "force": "yes"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("0644"));
        assert!(t.force);
        let t: T = serde_json::from_value(serde_json::json!({"mode": "0755"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("0755"));
        let t: T = serde_json::from_value(serde_json::json!({"mode": "644"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("0644"));
        let t: T = serde_json::from_value(serde_json::json!({"mode": "u+x"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("u+x"));
    }
}
