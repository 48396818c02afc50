//! `!unsafe` text: a string the user marked as never to be templated.
//!
//! Ansible keeps such a string raw wherever it goes (`{{ }}` inside stays text). kk's
//! user-written data is plain JSON that the templar renders when it is read, so the YAML
//! loader wraps an `!unsafe` string that holds Jinja syntax as a one-key mapping
//! `{"__ansible_unsafe": text}` (the name Ansible's own JSON encoding used for unsafe
//! values). [`super::Templar::render_value`] turns that mapping back into its text
//! without rendering it; what rendering produced (set_fact and register results, facts,
//! loop items) lives in data layers that are never templated again, so the text stays
//! raw through variables, `set_fact`, `register` and filters such as `to_json`.
//! A string without Jinja syntax needs no marker and stays a plain string.

use serde_json::Value;

/// The key of the one-key mapping that carries an `!unsafe` string.
pub const UNSAFE_KEY: &str = "__ansible_unsafe";

/// The text of an `!unsafe` marker, or None when `v` is not one.
pub fn as_unsafe(v: &Value) -> Option<&str> {
    match v {
        Value::Object(m) if m.len() == 1 => m.get(UNSAFE_KEY)?.as_str(),
        _ => None,
    }
}

/// Wraps `text` as `!unsafe` data (see the module doc); the YAML loader builds the
/// same shape as a node, the task loader wraps the values of `!unsafe` free-form text.
pub fn wrap(text: String) -> Value {
    let mut m = serde_json::Map::with_capacity(1);
    m.insert(UNSAFE_KEY.to_string(), Value::String(text));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{to_mj, Templar};
    use serde_json::json;

    #[test]
    fn unsafe_text_is_never_rendered() {
        let t = Templar::new();
        let raw = json!({"a": wrap("{{ x }} raw".into()), "b": ["{{ x }}", wrap("{% if 1 %}y{% endif %}".into())]});
        let ctx = to_mj(&json!({"x": 1}));
        assert_eq!(
            t.render_value(&raw, &ctx).unwrap(),
            json!({"a": "{{ x }} raw", "b": [1, "{% if 1 %}y{% endif %}"]})
        );
        assert_eq!(as_unsafe(&wrap("t".into())), Some("t"));
        assert_eq!(as_unsafe(&json!({UNSAFE_KEY: "t", "other": 1})), None);
    }
}
