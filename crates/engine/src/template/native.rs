//! Ansible 2.19's native rendering of templates with blocks: when a template's output
//! is exactly one `{{ }}` value and nothing else (`{% for i in [1] %}{{ i }}{% endfor %}`,
//! `{% if x %}{{ n }}{% endif %}`), the value keeps its type instead of becoming text.
//! The environment's formatter records what each render printed ([`record`]).

use minijinja::{State, Value};

/// What one render printed through `{{ }}`: how many values other than None, the first
/// of them, and whether a None was printed (None writes nothing, so `{{ l.append(1) }}{{ l }}`
/// is the list, as in ansible-core).
#[derive(Default)]
struct Printed {
    count: usize,
    first: Option<Value>,
    none: bool,
}

/// Called by the formatter for every printed value.
pub(super) fn record(state: &mut State, value: &Value) {
    let p = state.get_or_insert_extension_with(Printed::default);
    if value.is_none() {
        p.none = true;
        return;
    }
    p.count += 1;
    if p.count == 1 {
        p.first = Some(value.clone());
    }
}

/// The native value of a finished render: its one printed value when the output is
/// exactly that value's text (no other text around it), else None (the text stands).
pub(super) fn single_value(state: &State, output: &str) -> Option<Value> {
    let p = state.get_extension::<Printed>()?;
    if p.count == 0 && p.none && output.is_empty() {
        return Some(Value::from(()));
    }
    if p.count != 1 {
        return None;
    }
    let v = p.first.as_ref()?;
    if v.as_str().is_some() || v.is_undefined() {
        return None;
    }
    let text = if v.is_none() {
        String::new()
    } else {
        v.to_string()
    };
    (text == output).then(|| v.clone())
}
