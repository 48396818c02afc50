//! Ansible's small rules that every layer needs and that belong to none of them: its
//! lenient booleans, what a variable name is, how it splits a command line and a
//! `key=value` string, and how kk quotes a word for the shell. Connections, the loader,
//! variables and modules all use these, so they live below all of them.

use serde_json::Value;

pub mod pyre;
mod shell;
mod split;

pub use shell::{shell_quote, shlex_quote, split_words};
pub use split::{join_args, split_args, split_words_strict};

/// Ansible's boolean conversion (`yes`, `on`, `1`, `true` …); `None` for anything else.
pub fn to_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => Some(n.as_f64()? != 0.0),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "yes" | "on" | "true" | "1" | "y" | "t" => Some(true),
            "no" | "off" | "false" | "0" | "n" | "f" | "" => Some(false),
            _ => None,
        },
        Value::Null => Some(false),
        _ => None,
    }
}

/// A value as text, as Ansible's `to_text` gives a module argument: strings as they are
/// (unquoted), anything else as JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// True for names a template can refer to (a variable name).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn booleans_and_names() {
        assert_eq!(to_bool(&json!("Yes")), Some(true));
        assert_eq!(to_bool(&json!(0)), Some(false));
        assert_eq!(to_bool(&json!(null)), Some(false));
        assert_eq!(to_bool(&json!("maybe")), None);
        assert!(is_identifier("_a1") && !is_identifier("1a") && !is_identifier("a-b"));
    }
}
