//! Where Ansible refuses, kk refuses: `unique(attribute=)` over items without that
//! attribute is an error (Jinja2's unique fails and Ansible cannot fall back), and
//! `undef()`, Ansible 2.19's explicit undefined value.

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Error, State, Value};

use super::fail;

/// `unique`, as minijinja's, but an item without the `attribute` is an error.
pub(super) fn unique(state: &State, values: Value, kwargs: Kwargs) -> Result<Value, Error> {
    if let Some(attr) = kwargs.peek::<Option<String>>("attribute")? {
        if let Ok(items) = values.try_iter() {
            for item in items {
                let mut v = item.clone();
                for part in attr.split('.') {
                    v = match part.parse::<i64>() {
                        Ok(i) => v.get_item(&Value::from(i)),
                        Err(_) => v.get_attr(part),
                    }
                    .unwrap_or(Value::UNDEFINED);
                }
                if v.is_undefined() {
                    return Err(fail(format!(
                        "Jinja2's unique filter failed and we cannot fall back to Ansible's version as it does not support the parameters supplied: object of type '{}' has no attribute '{}'",
                        super::py_type(&item),
                        attr
                    )));
                }
            }
        }
    }
    minijinja::filters::unique(state, values, kwargs)
}

/// `undef(hint=None)`: an undefined value; using it is an error, `default` replaces it.
pub(super) fn undef(args: Rest<Value>) -> Result<Value, Error> {
    for a in args.iter() {
        if a.kind() != ValueKind::String && a.kind() != ValueKind::Map && !a.is_none() {
            return Err(fail("undef: the hint must be a string"));
        }
    }
    Ok(Value::UNDEFINED)
}

/// True when a list or mapping built during rendering holds an undefined value at any
/// depth (`objs | map(attribute='x')` over an item without `x`). Ansible 2.19 refuses
/// to finish such a value; only plain lists and mappings are walked, never lazy objects
/// such as `hostvars`.
/// A value that is itself undefined is not judged here (`{{ x if c }}` prints nothing).
pub(crate) fn holds_undefined(v: &Value) -> bool {
    fn deep(v: &Value) -> bool {
        v.is_undefined() || holds_undefined(v)
    }
    if let Some(items) = v.downcast_object_ref::<Vec<Value>>() {
        return items.iter().any(deep);
    }
    if let Some(map) = v.downcast_object_ref::<indexmap::IndexMap<Value, Value>>() {
        return map.values().any(deep);
    }
    if let Some(items) = crate::template::mutable::children(v) {
        return items.iter().any(deep);
    }
    false
}

/// The error for a value that [`holds_undefined`].
pub(crate) fn undefined_inside() -> Error {
    Error::new(
        minijinja::ErrorKind::UndefinedError,
        "the value holds an undefined item (an attribute or key that an item lacks, e.g. \
         `map(attribute=...)` over an item without it; give `default=` or filter the items first)",
    )
}
