//! Filters that consume a list holding undefined items give undefined, as in Ansible 2.19.
//!
//! `items | map(attribute='x')` over an item without `x` yields an undefined item. Ansible
//! lets that list be counted (`| length`, `| count`), filtered by a test that accepts
//! undefined (`select('defined')`) or mapped through one (`map('default', 0)`), but a
//! filter that reads its items (`list`, `join`, `first`, `sum`, `sort`, `select` without
//! a test…) gets "object of type 'dict' has no attribute 'x'" instead of a result: its
//! result is undefined, so `| default(...)` after it replaces it, `is defined` is false,
//! and using it anywhere else is an error. minijinja's own filters would read the items
//! as empty values, so those filters are registered again here behind that check.

use std::cell::Cell;

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Environment, Error, State, Value};

use super::strict::holds_undefined;

thread_local! {
    /// The last filter that turned its result undefined this way, for the error
    /// message of the template that then fails (see [`take_note`]).
    static LAST: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Registers the consuming filters (plain and `ansible.builtin.` names) behind the check;
/// called after every other filter is registered, so these replace them.
pub(super) fn register(env: &mut Environment<'static>) {
    use minijinja::filters as b;
    let consuming: Vec<(&'static str, Value)> = vec![
        ("list", Value::from_function(b::list)),
        ("join", Value::from_function(b::join)),
        ("sum", Value::from_function(b::sum)),
        ("first", Value::from_function(b::first)),
        ("last", Value::from_function(b::last)),
        ("min", Value::from_function(b::min)),
        ("max", Value::from_function(b::max)),
        ("sort", Value::from_function(b::sort)),
        ("reverse", Value::from_function(b::reverse)),
        ("string", Value::from_function(b::string)),
        ("zip", Value::from_function(b::zip)),
        ("dictsort", Value::from_function(b::dictsort)),
        ("groupby", Value::from_function(b::groupby)),
        ("unique", Value::from_function(super::strict::unique)),
        ("bool", Value::from_function(super::types::bool_filter)),
        ("batch", Value::from_function(super::widths::batch)),
        ("slice", Value::from_function(super::widths::slice)),
    ];
    for (name, inner) in consuming {
        for full in [name.to_string(), format!("ansible.builtin.{}", name)] {
            let inner = inner.clone();
            env.add_filter(full, move |state: &mut State, args: Rest<ValueOrKwargs>| {
                guarded(name, &inner, state, &args, true)
            });
        }
    }
    // `select`/`reject` read an item's truth only without a test (`select('defined')`
    // passes undefined items to the test, which may take them).
    let tests: Vec<(&'static str, Value)> = vec![
        ("select", Value::from_function(b::select)),
        ("reject", Value::from_function(b::reject)),
    ];
    for (name, inner) in tests {
        for full in [name.to_string(), format!("ansible.builtin.{}", name)] {
            let inner = inner.clone();
            env.add_filter(full, move |state: &mut State, args: Rest<ValueOrKwargs>| {
                guarded(name, &inner, state, &args, args.len() == 1)
            });
        }
    }
}

/// Calls `inner`, or gives undefined when `check` and its input holds undefined items.
fn guarded(
    name: &'static str,
    inner: &Value,
    state: &mut State,
    args: &[ValueOrKwargs],
    check: bool,
) -> Result<Value, Error> {
    if check && args.first().is_some_and(|v| holds_undefined(v)) {
        LAST.with(|l| l.set(Some(name)));
        return Ok(Value::UNDEFINED);
    }
    // Keyword arguments travel as the last value, as minijinja passed them.
    let args: Vec<Value> = args.iter().map(|a| Value::from(a.clone())).collect();
    inner.call(state, &args)
}

/// Forgets the filter [`guarded`] last noted (a template starts).
pub(crate) fn clear_note() {
    LAST.with(|l| l.set(None));
}

/// What to add to an undefined-value error when a consuming filter turned its result
/// undefined while this template rendered.
pub(crate) fn take_note() -> Option<String> {
    LAST.with(|l| l.take()).map(|name| {
        format!(
            "`{}` got a list holding an undefined item (an attribute or key an item lacks, \
             e.g. `map(attribute=...)` over an item without it), so its result is undefined, \
             as in Ansible; give `default=` to `map` or filter the items first \
             (`select('defined')`)",
            name
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};
    use serde_json::json;

    /// Each form as ansible-core 2.19 answers it (None: it fails).
    #[test]
    fn consuming_a_list_with_holes_is_undefined_as_in_ansible() {
        let t = Templar::new();
        let ctx = to_mj(&json!({"items": [{"x": 1}, {"y": 2}]}));
        let m = "items | map(attribute='missing')";
        let cases: Vec<(String, Option<serde_json::Value>)> = vec![
            (format!("{m} | list | length"), None),
            (format!("{m} | list"), None),
            (format!("{m} | length"), Some(json!(2))),
            (format!("{m} | count"), Some(json!(2))),
            (format!("{m} | join(',')"), None),
            (format!("{m} | first"), None),
            (format!("{m} | select | list"), None),
            (format!("{m} | reject('defined') | list | length"), None),
            (format!("{m} | select('defined') | list"), Some(json!([]))),
            (
                format!("{m} | map('default', 0) | list"),
                Some(json!([0, 0])),
            ),
            (format!("{m} | sum"), None),
            (format!("{m} | unique | list"), None),
            (format!("{m} | min"), None),
            (format!("{m} | sort | list"), None),
            (format!("{m} | string"), None),
            (format!("{m} | bool"), None),
            (format!("{m} | zip([1, 2]) | list"), None),
            (format!("{m} | list | default('D')"), Some(json!("D"))),
            (format!("{m} | sort | default('S')"), Some(json!("S"))),
            (format!("{m} | join(',') | default('J')"), Some(json!("J"))),
            (format!("({m} | list) is defined"), Some(json!(false))),
            (format!("{m} | list is undefined"), Some(json!(true))),
            (
                format!("({m} | list | default([])) + [1]"),
                Some(json!([1])),
            ),
            (
                "items | map(attribute='x', default=7) | list".into(),
                Some(json!([1, 7])),
            ),
            (
                "items | map(attribute='x') | select('defined') | list".into(),
                Some(json!([1])),
            ),
            (
                "[1, 2] | map('string') | join(',')".into(),
                Some(json!("1,2")),
            ),
        ];
        for (expr, want) in cases {
            let got = t.render_str(&format!("{{{{ {} }}}}", expr), &ctx);
            match want {
                Some(w) => assert_eq!(got.as_ref().ok(), Some(&w), "{}: {:?}", expr, got),
                None => assert!(got.is_err(), "{} should fail, gave {:?}", expr, got),
            }
        }
        let e = t
            .render_str(&format!("{{{{ {m} | list | length }}}}"), &ctx)
            .unwrap_err();
        assert!(
            e.notes
                .iter()
                .any(|n| n.contains("`list` got a list holding")),
            "{:?}",
            e
        );
        let e = t
            .render_str(&format!("n={{{{ {m} | join(',') }}}}"), &ctx)
            .unwrap_err();
        assert!(e.notes.iter().any(|n| n.contains("`join`")), "{:?}", e);
    }
}
