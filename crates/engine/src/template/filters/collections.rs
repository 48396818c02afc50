//! Dictionaries and lists: `combine`, `dict2items`/`items2dict`, the set filters,
//! `flatten`, `zip_longest`, `product`, `extract`, `ternary`, `subelements`, `to_uuid`,
//! and the `dict()` function.
//!
//! Kept together because they share Ansible's rules for what counts as a list and how
//! duplicates and order are kept.

use std::collections::BTreeSet;

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Error, State, Value};
use serde_json::Value as J;

use crate::template::limits;

use super::{
    arg, fail, from_plain, is_list, items_of, map_value, py_str, py_type, to_plain, truthy,
    undefined_error,
};

/// Ansible's `merge_hash(x, y, recursive, list_merge)`: `y` wins.
fn merge_hash(
    x: &serde_json::Map<String, J>,
    y: &serde_json::Map<String, J>,
    recursive: bool,
    list_merge: &str,
) -> serde_json::Map<String, J> {
    if x.is_empty() || x == y {
        return y.clone();
    }
    if y.is_empty() {
        return x.clone();
    }
    let mut out = x.clone();
    if !recursive && list_merge == "replace" {
        for (k, v) in y {
            out.insert(k.clone(), v.clone());
        }
        return out;
    }
    for (k, yv) in y {
        let Some(xv) = out.get(k).cloned() else {
            out.insert(k.clone(), yv.clone());
            continue;
        };
        let merged = match (&xv, yv) {
            (J::Object(xm), J::Object(ym)) => {
                if recursive {
                    J::Object(merge_hash(xm, ym, recursive, list_merge))
                } else {
                    yv.clone()
                }
            }
            (J::Array(xa), J::Array(ya)) => J::Array(match list_merge {
                "append" => xa.iter().chain(ya).cloned().collect(),
                "prepend" => ya.iter().chain(xa).cloned().collect(),
                "append_rp" => xa
                    .iter()
                    .filter(|z| !ya.contains(z))
                    .chain(ya)
                    .cloned()
                    .collect(),
                "prepend_rp" => ya
                    .iter()
                    .chain(xa.iter().filter(|z| !ya.contains(z)))
                    .cloned()
                    .collect(),
                "keep" => xa.clone(),
                _ => ya.clone(),
            }),
            _ => yv.clone(),
        };
        out.insert(k.clone(), merged);
    }
    out
}

pub(super) fn combine(
    state: &State,
    value: &Value,
    rest: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let rest = rest.0;
    let recursive = kwargs
        .get::<Option<Value>>("recursive")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let list_merge = kwargs
        .get::<Option<String>>("list_merge")?
        .unwrap_or_else(|| "replace".into());
    kwargs.assert_all_used().map_err(|_| {
        fail("combine: 'recursive' and 'list_merge' are the only valid keyword arguments")
    })?;
    if ![
        "replace",
        "keep",
        "append",
        "prepend",
        "append_rp",
        "prepend_rp",
    ]
    .contains(&list_merge.as_str())
    {
        return Err(fail(format!(
            "combine: list_merge must be one of 'replace', 'keep', 'append', 'prepend', 'append_rp' or 'prepend_rp', got '{}'",
            list_merge
        )));
    }
    // `[d1, d2] | combine` is allowed: flatten one level.
    let mut dicts = Vec::new();
    for term in std::iter::once(value.clone()).chain(rest) {
        let items = if is_list(&term) {
            term.try_iter()?.collect()
        } else {
            vec![term]
        };
        for item in items {
            match to_plain(state, &item, "combine")? {
                J::Object(m) => dicts.push(m),
                other => {
                    return Err(fail(format!(
                        "combine: expected dictionaries to merge, got {}",
                        py_type(&from_plain(&other))
                    )))
                }
            }
        }
    }
    let Some(mut result) = dicts.pop() else {
        return Ok(from_plain(&J::Object(Default::default())));
    };
    while let Some(lower) = dicts.pop() {
        result = merge_hash(&lower, &result, recursive, &list_merge);
    }
    Ok(from_plain(&J::Object(result)))
}

/// Python's `dict([mapping or pairs], **kwargs)`.
pub(super) fn dict_fn(value: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    match value {
        None => {}
        Some(v) if v.is_none() || v.is_undefined() => {
            return Err(fail(format!(
                "dict: expected a mapping or a list of pairs, got {}",
                py_type(&v)
            )));
        }
        Some(v) if v.kind() == ValueKind::Map => {
            for k in v.try_iter()? {
                let item = v.get_item(&k)?;
                pairs.push((k, item));
            }
        }
        Some(v) if is_list(&v) => {
            for item in v.try_iter()? {
                let kv: Vec<Value> = if is_list(&item) {
                    item.try_iter()?.collect()
                } else {
                    Vec::new()
                };
                if kv.len() != 2 {
                    return Err(fail(format!(
                        "dict: each item must be a (key, value) pair, got {}",
                        item
                    )));
                }
                let mut kv = kv.into_iter();
                pairs.push((kv.next().unwrap_or_default(), kv.next().unwrap_or_default()));
            }
        }
        Some(v) => {
            return Err(fail(format!(
                "dict: expected a mapping or a list of pairs, got {}",
                py_type(&v)
            )))
        }
    }
    let names: Vec<String> = kwargs.args().map(str::to_string).collect();
    for name in names {
        let v = kwargs.get::<Value>(&name)?;
        pairs.push((Value::from(name), v));
    }
    kwargs.assert_all_used()?;
    Ok(map_value(pairs))
}

fn key_value_names(
    filter: &str,
    key_name: Option<String>,
    value_name: Option<String>,
    kwargs: &Kwargs,
) -> Result<(String, String), Error> {
    let k = match key_name {
        Some(k) => k,
        None => kwargs
            .get::<Option<String>>("key_name")?
            .unwrap_or_else(|| "key".into()),
    };
    let v = match value_name {
        Some(v) => v,
        None => kwargs
            .get::<Option<String>>("value_name")?
            .unwrap_or_else(|| "value".into()),
    };
    kwargs
        .assert_all_used()
        .map_err(|e| fail(format!("{}: {}", filter, e)))?;
    Ok((k, v))
}

pub(super) fn dict2items(
    value: &Value,
    key_name: Option<String>,
    value_name: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let (kn, vn) = key_value_names("dict2items", key_name, value_name, &kwargs)?;
    if value.kind() != ValueKind::Map {
        return Err(fail(format!(
            "dict2items requires a dictionary, got {} instead.",
            py_type(value)
        )));
    }
    let mut out = Vec::new();
    for key in value.try_iter()? {
        let item = value.get_item(&key)?;
        out.push(map_value(vec![
            (Value::from(kn.as_str()), key),
            (Value::from(vn.as_str()), item),
        ]));
    }
    Ok(Value::from(out))
}

pub(super) fn items2dict(
    value: &Value,
    key_name: Option<String>,
    value_name: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let (kn, vn) = key_value_names("items2dict", key_name, value_name, &kwargs)?;
    if !is_list(value) {
        return Err(fail(format!(
            "items2dict requires a list, got {} instead.",
            py_type(value)
        )));
    }
    let mut out: Vec<(Value, Value)> = Vec::new();
    for item in value.try_iter()? {
        if item.kind() != ValueKind::Map {
            return Err(fail(format!(
                "items2dict requires a list of dictionaries, got an item of type {}",
                py_type(&item)
            )));
        }
        let k = item.get_attr(&kn)?;
        let v = item.get_attr(&vn)?;
        if k.is_undefined() || v.is_undefined() {
            return Err(fail(format!(
                "items2dict: each item needs the keys '{}' and '{}', got {}",
                kn, vn, item
            )));
        }
        if let Some(pos) = out.iter().position(|(ek, _)| ek == &k) {
            out[pos].1 = v;
        } else {
            out.push((k, v));
        }
    }
    Ok(map_value(out))
}

/// `json_query` (community.general's): a JMESPath query over the data, with the `jmespath`
/// crate of the JMESPath project; no match is None, as Python's `jmespath.search` gives.
pub(super) fn json_query(state: &State, value: &Value, query: String) -> Result<Value, Error> {
    let data = to_plain(state, value, "json_query")?;
    let expr = jmespath::compile(&query)
        .map_err(|e| fail(format!("json_query: invalid JMESPath query `{query}`: {e}")))?;
    let found = expr
        .search(data)
        .map_err(|e| fail(format!("json_query: query `{query}` failed: {e}")))?;
    let out = serde_json::to_value(&*found)
        .map_err(|e| fail(format!("json_query: cannot convert the result: {e}")))?;
    Ok(from_plain(&out))
}

/// `community.crypto.x509_certificate_info` (the filter): the fields of a PEM certificate,
/// as the module of the same name returns them ([`crate::modules::x509_info`]).
pub(super) fn x509_certificate_info(value: String) -> Result<Value, Error> {
    let m = crate::modules::x509_info::certificate_info(value.as_bytes())
        .map_err(|e| fail(format!("x509_certificate_info: {e}")))?;
    Ok(from_plain(&J::Object(m)))
}

/// `community.general.dict`: Python's `dict()` of a list of key-value pairs (a later pair
/// wins; each must have exactly two items, with Python's message otherwise).
pub(super) fn pairs_dict(value: &Value) -> Result<Value, Error> {
    if !is_list(value) {
        return Err(fail(format!(
            "community.general.dict: '{}' object is not iterable as pairs",
            py_type(value)
        )));
    }
    let mut out: Vec<(Value, Value)> = Vec::new();
    for (i, item) in value.try_iter()?.enumerate() {
        let pair: Vec<Value> = match item.kind() {
            ValueKind::Seq | ValueKind::String => item.try_iter()?.collect(),
            _ => {
                return Err(fail(format!(
                    "cannot convert dictionary update sequence element #{i} to a sequence"
                )))
            }
        };
        let [k, v] = <[Value; 2]>::try_from(pair).map_err(|p| {
            fail(format!(
                "dictionary update sequence element #{i} has length {}; 2 is required",
                p.len()
            ))
        })?;
        match out.iter().position(|(ek, _)| ek == &k) {
            Some(pos) => out[pos].1 = v,
            None => out.push((k, v)),
        }
    }
    Ok(map_value(out))
}

/// Jinja2's `unique` as Ansible calls it: strings compared case-insensitively,
/// first occurrence kept.
fn unique_values(items: Vec<Value>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for item in items {
        let key = match item.as_str() {
            Some(s) => Value::from(s.to_lowercase()),
            None => item.clone(),
        };
        if seen.insert(key) {
            out.push(item);
        }
    }
    out
}

fn set_inputs(filter: &str, a: &Value, b: &Value) -> Result<(Vec<Value>, Vec<Value>), Error> {
    Ok((
        items_of(a, filter, "the input")?,
        items_of(b, filter, "the argument")?,
    ))
}

pub(super) fn union(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("union", a, b)?;
    Ok(Value::from(unique_values(a.into_iter().chain(b).collect())))
}

pub(super) fn intersect(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("intersect", a, b)?;
    Ok(Value::from(unique_values(
        a.into_iter().filter(|x| b.contains(x)).collect(),
    )))
}

pub(super) fn difference(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("difference", a, b)?;
    Ok(Value::from(unique_values(
        a.into_iter().filter(|x| !b.contains(x)).collect(),
    )))
}

pub(super) fn symmetric_difference(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("symmetric_difference", a, b)?;
    let isect = unique_values(a.iter().filter(|x| b.contains(x)).cloned().collect());
    let all = unique_values(a.into_iter().chain(b).collect());
    Ok(Value::from(
        all.into_iter()
            .filter(|x| !isect.contains(x))
            .collect::<Vec<_>>(),
    ))
}

fn flatten_into(
    items: Vec<Value>,
    levels: Option<i64>,
    skip_nulls: bool,
    out: &mut Vec<Value>,
) -> Result<(), Error> {
    for item in items {
        if skip_nulls && (item.is_none() || matches!(item.as_str(), Some("None") | Some("null"))) {
            continue;
        }
        if is_list(&item) {
            match levels {
                None => flatten_into(item.try_iter()?.collect(), None, skip_nulls, out)?,
                Some(l) if l >= 1 => {
                    flatten_into(item.try_iter()?.collect(), Some(l - 1), skip_nulls, out)?
                }
                Some(_) => out.push(item),
            }
        } else {
            out.push(item);
        }
    }
    Ok(())
}

pub(super) fn flatten(
    value: &Value,
    levels: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let levels = match levels {
        Some(l) => Some(l),
        None => kwargs.get::<Option<Value>>("levels")?,
    };
    let levels = match levels {
        None => None,
        Some(l) if l.is_none() => None,
        Some(l) => Some(l.as_i64().ok_or_else(|| {
            fail(format!(
                "flatten: levels must be a number, got {}",
                py_str(&l)
            ))
        })?),
    };
    let skip_nulls = kwargs.get::<Option<bool>>("skip_nulls")?.unwrap_or(true);
    kwargs.assert_all_used()?;
    let mut out = Vec::new();
    flatten_into(
        items_of(value, "flatten", "the input")?,
        levels,
        skip_nulls,
        &mut out,
    )?;
    Ok(Value::from(out))
}

pub(super) fn zip_longest(
    value: &Value,
    rest: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let rest = rest.0;
    let fill = kwargs
        .get::<Option<Value>>("fillvalue")?
        .unwrap_or(Value::from(()));
    kwargs.assert_all_used()?;
    let mut lists = vec![items_of(value, "zip_longest", "the input")?];
    for r in &rest {
        lists.push(items_of(r, "zip_longest", "every argument")?);
    }
    let n = lists.iter().map(Vec::len).max().unwrap_or(0);
    Ok(Value::from(
        (0..n)
            .map(|i| {
                Value::from(
                    lists
                        .iter()
                        .map(|l| l.get(i).cloned().unwrap_or_else(|| fill.clone()))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>(),
    ))
}

pub(super) fn product(value: &Value, rest: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let rest = rest.0;
    let repeat = match kwargs.get::<Option<i64>>("repeat")? {
        Some(n) => limits::width("product", "repeat", n.into())?,
        None => 1,
    };
    kwargs.assert_all_used()?;
    let mut pools = vec![items_of(value, "product", "the input")?];
    for r in &rest {
        pools.push(items_of(r, "product", "every argument")?);
    }
    // The size first (it overflows long before it is built), then the pools.
    let total = (0..repeat)
        .flat_map(|_| pools.iter())
        .try_fold(1u64, |acc, p| acc.checked_mul(p.len() as u64));
    if total.is_none_or(|t| t > limits::MAX_ITEMS) {
        return Err(fail(format!(
            "product: the result would have more than {} items",
            limits::MAX_ITEMS
        )));
    }
    let pools: Vec<Vec<Value>> = (0..repeat).flat_map(|_| pools.clone()).collect();
    let mut acc: Vec<Vec<Value>> = vec![Vec::new()];
    for pool in &pools {
        acc = acc
            .into_iter()
            .flat_map(|prefix| {
                pool.iter().map(move |x| {
                    let mut p = prefix.clone();
                    p.push(x.clone());
                    p
                })
            })
            .collect();
    }
    Ok(Value::from(
        acc.into_iter().map(Value::from).collect::<Vec<_>>(),
    ))
}

pub(super) fn extract(
    state: &State,
    item: &Value,
    container: &Value,
    morekeys: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let morekeys = arg(morekeys, &kwargs, "morekeys")?;
    kwargs.assert_all_used()?;
    if container.is_undefined() {
        return Err(undefined_error(state, container, "extract"));
    }
    let mut keys = vec![item.clone()];
    match morekeys {
        None => {}
        Some(m) if is_list(&m) => keys.extend(m.try_iter()?),
        Some(m) => keys.push(m),
    }
    let mut v = container.clone();
    for k in keys {
        if v.is_undefined() {
            break;
        }
        v = v.get_item(&k).unwrap_or(Value::UNDEFINED);
    }
    Ok(v)
}

pub(super) fn ternary(
    value: &Value,
    true_val: Option<Value>,
    false_val: Option<Value>,
    none_val: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let true_val = arg(true_val, &kwargs, "true_val")?.unwrap_or(Value::from(true));
    let false_val = arg(false_val, &kwargs, "false_val")?.unwrap_or(Value::from(false));
    let none_val = arg(none_val, &kwargs, "none_val")?;
    kwargs.assert_all_used()?;
    Ok(match none_val {
        Some(n) if value.is_none() && !n.is_none() => n,
        _ if truthy(value) => true_val,
        _ => false_val,
    })
}

/// `subelements`: pairs of (item, sub-item) for a list found under a key path of each item.
pub(super) fn subelements(
    value: &Value,
    path: &Value,
    skip_missing: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let skip_missing = arg(skip_missing, &kwargs, "skip_missing")?.is_some_and(|v| v.is_true());
    kwargs.assert_all_used()?;
    let elements: Vec<Value> = match value.kind() {
        ValueKind::Map => value
            .try_iter()?
            .map(|k| value.get_item(&k).unwrap_or_default())
            .collect(),
        ValueKind::Seq | ValueKind::Iterable => value.try_iter()?.collect(),
        _ => {
            return Err(fail(format!(
                "subelements: obj must be a list of dicts or a nested dict, got {}",
                py_type(value)
            )))
        }
    };
    let keys: Vec<String> = match path.kind() {
        ValueKind::String => path
            .as_str()
            .unwrap_or_default()
            .split('.')
            .map(str::to_string)
            .collect(),
        ValueKind::Seq => path.try_iter()?.map(|k| py_str(&k)).collect(),
        _ => {
            return Err(fail(format!(
                "subelements: subelements must be a list or a string, got {}",
                py_type(path)
            )))
        }
    };
    let mut out = Vec::new();
    for element in elements {
        let mut values = element.clone();
        let mut missing = false;
        for key in &keys {
            if values.kind() != ValueKind::Map {
                return Err(fail(format!(
                    "subelements: the key {} should point to a dictionary, got '{}'",
                    key, values
                )));
            }
            let next = values.get_attr(key)?;
            if next.is_undefined() {
                if skip_missing {
                    missing = true;
                    break;
                }
                return Err(fail(format!(
                    "subelements: could not find '{}' key in iterated item {}",
                    key, values
                )));
            }
            values = next;
        }
        if missing {
            continue;
        }
        if values.kind() != ValueKind::Seq {
            return Err(fail(format!(
                "subelements: the key '{}' should point to a list, got {}",
                keys.join("."),
                values
            )));
        }
        for v in values.try_iter()? {
            out.push(Value::from(vec![element.clone(), v]));
        }
    }
    Ok(Value::from(out))
}

/// `to_uuid`: a name-based (version 5) UUID in Ansible's namespace by default.
pub(super) fn to_uuid(
    value: &Value,
    namespace: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    use sha1::Digest;
    let ns = arg(namespace, &kwargs, "namespace")?
        .map(|v| py_str(&v))
        .unwrap_or_else(|| "361E6D51-FAEC-444A-9079-341386DA8E2E".into());
    kwargs.assert_all_used()?;
    let hex_ns: String = ns.chars().filter(|c| *c != '-').collect();
    let ns_bytes = hex::decode(&hex_ns)
        .ok()
        .filter(|b| b.len() == 16)
        .ok_or_else(|| {
            fail(format!(
                "to_uuid: invalid value '{}' for 'namespace': not a UUID",
                ns
            ))
        })?;
    let mut h = sha1::Sha1::new();
    h.update(&ns_bytes);
    h.update(py_str(value).as_bytes());
    let mut b: Vec<u8> = h.finalize()[..16].to_vec();
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x = hex::encode(b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..]
    ))
}
