//! Filters that pick from or rearrange lists: `random`, `shuffle`, `combinations`,
//! `permutations`, `rekey_on_member`. With `seed`, `random` and `shuffle` pick what
//! Python's `random.Random(seed)` picks, as in Ansible.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, Value};

use super::pyrandom::{below, PyRandom};
use super::{arg, fail, is_list, items_of, map_value, py_str, py_type};
use crate::template::limits;

fn rng(seed: Option<Value>, ansible_truthy: bool) -> Option<PyRandom> {
    seed.filter(|s| !s.is_none() && !s.is_undefined() && (!ansible_truthy || s.is_true()))
        .map(|s| PyRandom::seeded(&s))
}

fn int_arg(filter: &str, what: &str, v: Option<Value>) -> Result<Option<i64>, Error> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => i64::try_from(v.clone())
            .ok()
            .filter(|_| v.is_integer() || v.kind() == ValueKind::Bool)
            .map(Some)
            .ok_or_else(|| {
                fail(format!(
                    "{}: {} must be an integer, got {} ({})",
                    filter,
                    what,
                    py_type(&v),
                    v
                ))
            }),
    }
}

/// `random`: an integer from `range(start, end, step)`, or one item of a list.
pub(super) fn random(
    end: &Value,
    start: Option<Value>,
    step: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let start = arg(start, &kwargs, "start")?;
    let step = arg(step, &kwargs, "step")?;
    let mut r = rng(kwargs.get::<Option<Value>>("seed")?, false);
    kwargs.assert_all_used()?;
    if end.is_integer() {
        let start = int_arg("random", "start", start)?.unwrap_or(0);
        let step = int_arg("random", "step", step)?
            .filter(|s| *s != 0)
            .unwrap_or(1);
        let stop = i64::try_from(end.clone()).map_err(|e| fail(e.to_string()))?;
        let width = stop as i128 - start as i128;
        let n = if step > 0 {
            (width + step as i128 - 1).div_euclid(step as i128)
        } else {
            (width + step as i128 + 1).div_euclid(step as i128)
        };
        if n <= 0 {
            return Err(fail(format!(
                "random: empty range for randrange({}, {}, {})",
                start, stop, step
            )));
        }
        if n >= 1 << 32 {
            return Err(fail("random: the range is too wide (at most 2**32 values)"));
        }
        let k = below(&mut r, n as usize)? as i128;
        return Ok(Value::from((start as i128 + step as i128 * k) as i64));
    }
    if is_list(end) || end.kind() == ValueKind::String || end.kind() == ValueKind::Map {
        if start.as_ref().is_some_and(|v| v.is_true()) || step.as_ref().is_some_and(|v| v.is_true())
        {
            return Err(fail("start and step can only be used with integer values"));
        }
        let items: Vec<Value> = match end.as_str() {
            Some(s) => s.chars().map(|c| Value::from(c.to_string())).collect(),
            None => end.try_iter()?.collect(),
        };
        if items.is_empty() {
            return Err(fail("random: cannot choose from an empty sequence"));
        }
        return Ok(items[below(&mut r, items.len())?].clone());
    }
    Err(fail("random can only be used on sequences and integers"))
}

/// `shuffle`: the list in random order (Python's `Random(seed).shuffle` with a seed).
pub(super) fn shuffle(value: &Value, seed: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let seed = arg(seed, &kwargs, "seed")?;
    kwargs.assert_all_used()?;
    let mut items: Vec<Value> = match value.as_str() {
        Some(s) => s.chars().map(|c| Value::from(c.to_string())).collect(),
        None => match value.try_iter() {
            Ok(it) => it.collect(),
            // Ansible returns what it cannot shuffle, as a list when it can.
            Err(_) => return Ok(value.clone()),
        },
    };
    let mut r = rng(seed, true);
    for i in (1..items.len()).rev() {
        let j = below(&mut r, i + 1)?;
        items.swap(i, j);
    }
    Ok(Value::from(items))
}

/// What Python iterates: a string's characters, a dict's keys, a list's items.
fn pool_of(value: &Value, filter: &str) -> Result<Vec<Value>, Error> {
    match value.as_str() {
        Some(s) => Ok(s.chars().map(|c| Value::from(c.to_string())).collect()),
        None if value.kind() == ValueKind::Map => Ok(value.try_iter()?.collect()),
        None => items_of(value, filter, "the input"),
    }
}

/// `combinations`: Python's `itertools.combinations(value, r)`, as lists, in its order.
pub(super) fn combinations(
    value: &Value,
    r: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let r = arg(r, &kwargs, "r")?;
    kwargs.assert_all_used()?;
    let pool = pool_of(value, "combinations")?;
    let n = pool.len();
    let r = match int_arg("combinations", "r", r)? {
        None => return Err(fail("combinations: missing argument 'r'")),
        Some(r) if r < 0 => return Err(fail("combinations: r must be non-negative")),
        Some(r) => r as usize,
    };
    let mut out = Vec::new();
    if r > n {
        return Ok(Value::from(out));
    }
    let mut idx: Vec<usize> = (0..r).collect();
    loop {
        out.push(Value::from(
            idx.iter().map(|i| pool[*i].clone()).collect::<Vec<_>>(),
        ));
        if out.len() as u64 > limits::MAX_ITEMS {
            return Err(fail(format!(
                "combinations: more than {} results",
                limits::MAX_ITEMS
            )));
        }
        let Some(i) = (0..r).rev().find(|&i| idx[i] != i + n - r) else {
            break;
        };
        idx[i] += 1;
        for j in i + 1..r {
            idx[j] = idx[j - 1] + 1;
        }
    }
    Ok(Value::from(out))
}

/// `permutations`: Python's `itertools.permutations(value, r)` in its order.
pub(super) fn permutations(
    value: &Value,
    r: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let r = arg(r, &kwargs, "r")?;
    kwargs.assert_all_used()?;
    let pool = pool_of(value, "permutations")?;
    let n = pool.len();
    let r = match int_arg("permutations", "r", r)? {
        None => n,
        Some(r) if r < 0 => return Err(fail("permutations: r must be non-negative")),
        Some(r) => r as usize,
    };
    let mut out = Vec::new();
    if r > n {
        return Ok(Value::from(out));
    }
    // CPython's algorithm: indices and cycles.
    let mut indices: Vec<usize> = (0..n).collect();
    let mut cycles: Vec<usize> = (n - r + 1..=n).rev().collect();
    let emit = |indices: &[usize], out: &mut Vec<Value>| {
        out.push(Value::from(
            indices[..r]
                .iter()
                .map(|i| pool[*i].clone())
                .collect::<Vec<_>>(),
        ));
    };
    emit(&indices, &mut out);
    if n == 0 {
        return Ok(Value::from(out));
    }
    'outer: loop {
        for i in (0..r).rev() {
            cycles[i] -= 1;
            if cycles[i] == 0 {
                let moved = indices.remove(i);
                indices.push(moved);
                cycles[i] = n - i;
            } else {
                let j = cycles[i];
                indices.swap(i, n - j);
                emit(&indices, &mut out);
                if out.len() as u64 > limits::MAX_ITEMS {
                    return Err(fail(format!(
                        "permutations: more than {} results",
                        limits::MAX_ITEMS
                    )));
                }
                continue 'outer;
            }
        }
        break;
    }
    Ok(Value::from(out))
}

/// `rekey_on_member`: a dict of the items (of a list, or a dict's values) keyed on
/// their `key` member; `duplicates='overwrite'` lets a later item win.
pub(super) fn rekey_on_member(
    data: &Value,
    key: &Value,
    duplicates: Option<String>,
) -> Result<Value, Error> {
    let duplicates = duplicates.unwrap_or_else(|| "error".into());
    if duplicates != "error" && duplicates != "overwrite" {
        return Err(fail(format!(
            "duplicates parameter to rekey_on_member has unknown value '{}'",
            duplicates
        )));
    }
    let items: Vec<Value> = match data.kind() {
        ValueKind::Map => data
            .try_iter()?
            .map(|k| data.get_item(&k))
            .collect::<Result<_, _>>()?,
        ValueKind::Seq | ValueKind::Iterable => data.try_iter()?.collect(),
        _ => return Err(fail("Type is not a valid list, set, or dict")),
    };
    let mut out: indexmap::IndexMap<Value, Value> = indexmap::IndexMap::new();
    for item in items {
        if item.kind() != ValueKind::Map {
            return Err(fail("List item is not a valid dict"));
        }
        let k = item.get_item(key)?;
        if k.is_undefined() {
            return Err(fail(format!("Key '{}' was not found.", py_str(key))));
        }
        if out.contains_key(&k) && duplicates == "error" {
            return Err(fail(format!(
                "Key {} is not unique, cannot convert to dict",
                k
            )));
        }
        out.insert(k, item);
    }
    Ok(map_value(out.into_iter().collect()))
}
