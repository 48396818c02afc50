//! The lookups that reshape lists, mostly met as `with_<lookup>` loops: `nested`,
//! `together`, `indexed_items`, `random_choice`, `subelements`, and the ones that list
//! names from the run: `varnames`, `inventory_hostnames`.

use indexmap::{IndexMap, IndexSet};
use minijinja::value::ValueKind;
use minijinja::{Error, State, Value};

use super::term_str;
use crate::template::filters::{fail, py_regex, py_str, py_type};
use crate::template::limits;

fn is_list(v: &Value) -> bool {
    matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable)
}

/// Ansible's `LookupBase._flatten`: list items are spliced in, one level.
fn flatten_pair(items: impl IntoIterator<Item = Value>) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for i in items {
        if is_list(&i) {
            out.extend(i.try_iter()?);
        } else {
            out.push(i);
        }
    }
    Ok(out)
}

fn list_of(lookup: &str, v: &Value) -> Result<Vec<Value>, Error> {
    if is_list(v) {
        return Ok(v.try_iter()?.collect());
    }
    // Python iterates a string's characters and a dict's keys.
    if let Some(s) = v.as_str() {
        return Ok(s.chars().map(|c| Value::from(c.to_string())).collect());
    }
    if v.kind() == ValueKind::Map {
        return Ok(v.try_iter()?.collect());
    }
    Err(fail(format!(
        "lookup('{}'): expected lists, got {} ({})",
        lookup,
        py_type(v),
        v
    )))
}

/// `nested`: the product of the lists, each combination flattened one level.
pub(super) fn nested(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let Some((first, rest)) = terms.split_first() else {
        return Err(fail(
            "with_nested requires at least one element in the nested list",
        ));
    };
    let mut result: Vec<Value> = list_of("nested", first)?;
    for t in rest {
        let b = list_of("nested", t)?;
        let size = (result.len() as u128) * (b.len() as u128);
        if size > limits::MAX_ITEMS as u128 {
            return Err(fail(format!(
                "lookup('nested'): the product would have {} items; refusing more than {}",
                size,
                limits::MAX_ITEMS
            )));
        }
        let mut next = Vec::with_capacity(size as usize);
        for x in &result {
            for y in &b {
                next.push(Value::from(flatten_pair([x.clone(), y.clone()])?));
            }
        }
        result = next;
    }
    result
        .into_iter()
        .map(|x| {
            if is_list(&x) {
                Ok(Value::from(flatten_pair(x.try_iter()?)?))
            } else {
                Ok(x)
            }
        })
        .collect()
}

/// `together`: the lists side by side, the shorter ones padded with None.
pub(super) fn together(terms: &[Value]) -> Result<Vec<Value>, Error> {
    if terms.is_empty() {
        return Err(fail(
            "with_together requires at least one element in each list",
        ));
    }
    let lists = terms
        .iter()
        .map(|t| list_of("together", t))
        .collect::<Result<Vec<_>, _>>()?;
    let n = lists.iter().map(Vec::len).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            let row = lists
                .iter()
                .map(|l| l.get(i).cloned().unwrap_or(Value::from(())));
            Ok(Value::from(flatten_pair(row)?))
        })
        .collect()
}

/// `indexed_items`: `[index, item]` pairs of the terms flattened one level.
pub(super) fn indexed_items(terms: &[Value]) -> Result<Vec<Value>, Error> {
    Ok(flatten_pair(terms.iter().cloned())?
        .into_iter()
        .enumerate()
        .map(|(i, v)| Value::from(vec![Value::from(i), v]))
        .collect())
}

/// `random_choice`: one of the terms at random (all of them when there are none).
pub(super) fn random_choice(terms: &[Value]) -> Result<Vec<Value>, Error> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![terms[crate::template::filters::pyrandom::below(
        &mut None,
        terms.len(),
    )?]
    .clone()])
}

/// `subelements`: `[parent, child]` for every child in each parent's list at the dotted
/// key (terms: the parents, the key, optionally `{skip_missing: true}`). As in Ansible
/// the parent in each pair no longer holds that key.
pub(super) fn subelements(terms: &[Value]) -> Result<Vec<Value>, Error> {
    let usage = |msg: &str| {
        fail(format!(
            "subelements lookup expects a list of two or three items, {}",
            msg
        ))
    };
    if !(2..=3).contains(&terms.len()) {
        return Err(usage(""));
    }
    let (parents, key) = (&terms[0], &terms[1]);
    let Some(key) = key
        .as_str()
        .filter(|_| is_list(parents) || parents.kind() == ValueKind::Map)
    else {
        return Err(usage(
            "first a dict or a list, second a string pointing to the subkey",
        ));
    };
    let path: Vec<&str> = key.split('.').collect();
    let elements: Vec<Value> = if parents.kind() == ValueKind::Map {
        if parents
            .get_attr("skipped")
            .is_ok_and(|v| !v.is_undefined() && v != Value::from(false))
        {
            return Ok(Vec::new());
        }
        parents
            .try_iter()?
            .map(|k| parents.get_item(&k))
            .collect::<Result<_, _>>()?
    } else {
        parents.try_iter()?.collect()
    };
    let mut skip_missing = false;
    if let Some(flags) = terms.get(2) {
        if flags.kind() != ValueKind::Map {
            return Err(usage(
                "the optional third item must be a dict with flags ('skip_missing',)",
            ));
        }
        if let Ok(v) = flags.get_attr("skip_missing") {
            skip_missing = !v.is_undefined() && crate::template::truthy(&to_j(&v));
        }
    }
    let mut out = Vec::new();
    for item0 in elements {
        if item0.kind() != ValueKind::Map {
            return Err(fail(format!(
                "subelements lookup expects a dictionary, got '{}'",
                item0
            )));
        }
        let mut parent: serde_json::Map<String, serde_json::Value> = match to_j(&item0) {
            serde_json::Value::Object(m) => m,
            _ => Default::default(),
        };
        if parent
            .get("skipped")
            .is_some_and(|v| v != &serde_json::Value::Bool(false))
        {
            continue;
        }
        let sublist = take_sublist(&mut parent, &path, skip_missing)?;
        let parent = crate::template::to_mj(&serde_json::Value::Object(parent));
        for child in sublist {
            out.push(Value::from(vec![
                parent.clone(),
                crate::template::to_mj(&child),
            ]));
        }
    }
    Ok(out)
}

/// Python's repr of plain data, as Ansible's messages quote it.
fn repr(v: &serde_json::Value) -> String {
    crate::template::to_mj(v).to_string()
}

fn to_j(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Walks the dotted path inside `parent` and removes the list at its end.
fn take_sublist(
    parent: &mut serde_json::Map<String, serde_json::Value>,
    path: &[&str],
    skip_missing: bool,
) -> Result<Vec<serde_json::Value>, Error> {
    let show = serde_json::Value::Object(parent.clone());
    let mut node = parent;
    for (i, key) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        if !node.contains_key(*key) {
            if skip_missing {
                return Ok(Vec::new());
            }
            return Err(fail(format!(
                "could not find '{}' key in iterated item '{}'",
                key,
                repr(&serde_json::Value::Object(node.clone()))
            )));
        }
        if last {
            return match node.get(*key) {
                Some(serde_json::Value::Array(_)) => match node.shift_remove(*key) {
                    Some(serde_json::Value::Array(a)) => Ok(a),
                    _ => Ok(Vec::new()),
                },
                other => Err(fail(format!(
                    "the key {} should point to a list, got '{}'",
                    key,
                    other.map(repr).unwrap_or_default()
                ))),
            };
        }
        match node.get_mut(*key) {
            Some(serde_json::Value::Object(m)) => node = m,
            other => {
                if skip_missing {
                    return Ok(Vec::new());
                }
                return Err(fail(format!(
                    "the key {} should point to a dictionary, got '{}' (in '{}')",
                    key,
                    other.map(|v| repr(v)).unwrap_or_default(),
                    repr(&show)
                )));
            }
        }
    }
    Ok(Vec::new())
}

/// `varnames`: the names of the variables matching any of the regexes (`re.search`).
pub(super) fn varnames(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let names: Vec<String> = match state.lookup("vars").filter(|v| v.kind() == ValueKind::Map) {
        Some(vars) => vars
            .try_iter()?
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect(),
        None => Vec::new(),
    };
    let mut out = Vec::new();
    for t in terms {
        let Some(pattern) = t.as_str() else {
            return Err(fail(format!(
                "Invalid setting identifier, \"{}\" is not a string, it is a {}",
                py_str(t),
                py_type(t)
            )));
        };
        let re = py_regex("lookup('varnames')", pattern, false, false)?;
        for n in &names {
            if re.is_match(n).unwrap_or(false) {
                out.push(Value::from(n.as_str()));
            }
        }
    }
    Ok(out)
}

/// `inventory_hostnames`: the hosts of the `groups` variable a host pattern selects,
/// in inventory order; a pattern that matches nothing (or is malformed) gives none.
pub(super) fn inventory_hostnames(state: &State, terms: &[Value]) -> Result<Vec<Value>, Error> {
    let mut groups: IndexMap<String, Vec<String>> = IndexMap::new();
    if let Some(g) = state
        .lookup("groups")
        .filter(|v| v.kind() == ValueKind::Map)
    {
        for name in g.try_iter()? {
            let hosts = g.get_item(&name)?;
            let list = if is_list(&hosts) {
                hosts.try_iter()?.map(|h| py_str(&h)).collect()
            } else {
                Vec::new()
            };
            groups.insert(py_str(&name), list);
        }
    }
    let mut all: IndexSet<String> = IndexSet::new();
    for hosts in groups.values() {
        all.extend(hosts.iter().cloned());
    }
    let mut patterns = Vec::new();
    for t in terms {
        if is_list(t) {
            for p in t.try_iter()? {
                patterns.push(term_str("inventory_hostnames", &p)?);
            }
        } else {
            patterns.push(term_str("inventory_hostnames", t)?);
        }
    }
    // Ansible hands the terms list to get_hosts as one pattern list.
    let pattern = patterns.join(",");
    let hosts = crate::inventory::pattern::parse(&pattern)
        .and_then(|p| p.evaluate(&all, &groups))
        .unwrap_or_default();
    Ok(hosts.into_iter().map(Value::from).collect())
}
