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
