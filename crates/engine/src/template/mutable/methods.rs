//! The methods of [`MutMap`] and [`MutList`] that Python's dict and list have, with
//! Python's results (`append` and friends return None) and Python's errors.

use std::sync::Arc;

use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind, Value};

use super::{kk_arg, new_list, new_map, MutList, MutMap};

fn fail(msg: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// Python's repr of a key or item, for error messages.
fn repr(v: &Value) -> String {
    match serde_json::to_value(v) {
        Ok(j) => crate::template::pydump::py_repr(&j),
        Err(_) => v.to_string(),
    }
}

/// Positional arguments and keyword arguments (minijinja passes them last).
fn split(args: &[Value]) -> (&[Value], Option<Kwargs>) {
    match args.last() {
        Some(last) if last.is_kwargs() => {
            (&args[..args.len() - 1], Kwargs::try_from(last.clone()).ok())
        }
        _ => (args, None),
    }
}

fn arity(kind: &str, method: &str, args: &[Value], min: usize, max: usize) -> Result<(), Error> {
    if args.len() < min || args.len() > max {
        let want = if min == max {
            format!("{}", min)
        } else {
            format!("{} to {}", min, max)
        };
        return Err(fail(format!(
            "{}.{}() takes {} argument(s), {} given",
            kind,
            method,
            want,
            args.len()
        )));
    }
    Ok(())
}

/// Jinja's sandbox: names starting with `_` cannot be reached from a template. Except
/// `__setitem__`, which ansible-core 2.18 allowed and playbooks written for it call
/// (kubespray's local-volume-provisioner-cm.yml.j2); 2.19 refuses it.
fn unsafe_attr(method: &str, kind: &str) -> Option<Error> {
    (method.starts_with('_') && method != "__setitem__").then(|| {
        fail(format!(
            "access to attribute '{}' of '{}' object is unsafe",
            method, kind
        ))
    })
}

/// Key/value pairs of `dict.update`'s positional argument (a mapping or pairs).
fn pairs_of(v: &Value) -> Result<Vec<(Value, Value)>, Error> {
    if v.kind() == minijinja::value::ValueKind::Map {
        let mut out = Vec::new();
        for k in v.try_iter()? {
            let val = v.get_item(&k)?;
            out.push((k, val));
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for item in v.try_iter().map_err(|_| {
        fail(format!(
            "dict.update: expected a mapping or a list of pairs, got {}",
            repr(v)
        ))
    })? {
        let kv: Vec<Value> = item.try_iter().map(|i| i.collect()).unwrap_or_default();
        if kv.len() != 2 {
            return Err(fail(format!(
                "dict.update: each item must be a pair [key, value], got {}",
                repr(&item)
            )));
        }
        out.push((kv[0].clone(), kv[1].clone()));
    }
    Ok(out)
}

/// A dict method; `UnknownMethod` for the ones minijinja_contrib answers (`get`, `keys`…).
pub(super) fn dict(this: &Arc<MutMap>, method: &str, args: &[Value]) -> Result<Value, Error> {
    if let Some(e) = unsafe_attr(method, "dict") {
        return Err(e);
    }
    let (pos, kwargs) = split(args);
    match method {
        "__setitem__" => {
            arity("dict", method, pos, 2, 2)?;
            let v = kk_arg(pos[1].clone());
            this.map.lock().unwrap().insert(pos[0].clone(), v);
            Ok(Value::from(()))
        }
        "update" => {
            arity("dict", method, pos, 0, 1)?;
            let mut new = match pos.first() {
                Some(v) => pairs_of(v)?,
                None => Vec::new(),
            };
            if let Some(kw) = &kwargs {
                let names: Vec<String> = kw.args().map(str::to_string).collect();
                for k in names {
                    let v = kw.get::<Value>(&k)?;
                    new.push((Value::from(k), v));
                }
                kw.assert_all_used()?;
            }
            let mut map = this.map.lock().unwrap();
            for (k, v) in new {
                map.insert(k, kk_arg(v));
            }
            Ok(Value::from(()))
        }
        "pop" => {
            arity("dict", method, pos, 1, 2)?;
            match this.map.lock().unwrap().shift_remove(&pos[0]) {
                Some(v) => Ok(v),
                None => pos
                    .get(1)
                    .cloned()
                    .ok_or_else(|| fail(format!("dict.pop: no key {} (KeyError)", repr(&pos[0])))),
            }
        }
        "popitem" => {
            arity("dict", method, pos, 0, 0)?;
            match this.map.lock().unwrap().pop() {
                Some((k, v)) => Ok(Value::from(vec![k, v])),
                None => Err(fail("popitem(): dictionary is empty (KeyError)".into())),
            }
        }
        "setdefault" => {
            arity("dict", method, pos, 1, 2)?;
            let mut map = this.map.lock().unwrap();
            let default = kk_arg(pos.get(1).cloned().unwrap_or(Value::from(())));
            Ok(map.entry(pos[0].clone()).or_insert(default).clone())
        }
        "clear" => {
            arity("dict", method, pos, 0, 0)?;
            this.map.lock().unwrap().clear();
            Ok(Value::from(()))
        }
        "copy" => {
            arity("dict", method, pos, 0, 0)?;
            Ok(new_map(this.flavor, this.map.lock().unwrap().clone()))
        }
        _ => Err(Error::from(ErrorKind::UnknownMethod)),
    }
}

/// Python's index rule for `insert` (clamped) and `pop` (checked).
fn index(i: &Value, len: usize, clamp: bool) -> Result<Option<usize>, Error> {
    let i = i64::try_from(i.clone())
        .map_err(|_| fail(format!("list index must be an integer, got {}", repr(i))))?;
    let len = len as i64;
    let at = if i < 0 { i + len } else { i };
    Ok(if clamp {
        Some(at.clamp(0, len) as usize)
    } else {
        (0..len).contains(&at).then_some(at as usize)
    })
}

/// A list method; `UnknownMethod` for the ones minijinja_contrib answers (`count`).
pub(super) fn list(this: &Arc<MutList>, method: &str, args: &[Value]) -> Result<Value, Error> {
    if let Some(e) = unsafe_attr(method, "list") {
        return Err(e);
    }
    let (pos, kwargs) = split(args);
    let none = Value::from(());
    match method {
        "__setitem__" => {
            arity("list", method, pos, 2, 2)?;
            let mut items = this.items.lock().unwrap();
            let at = index(&pos[0], items.len(), false)?
                .ok_or_else(|| fail("list assignment index out of range (IndexError)".into()))?;
            items[at] = kk_arg(pos[1].clone());
            Ok(none)
        }
        "append" => {
            arity("list", method, pos, 1, 1)?;
            this.items.lock().unwrap().push(kk_arg(pos[0].clone()));
            Ok(none)
        }
        "extend" => {
            arity("list", method, pos, 1, 1)?;
            let new: Vec<Value> = pos[0].try_iter()?.map(kk_arg).collect();
            this.items.lock().unwrap().extend(new);
            Ok(none)
        }
        "insert" => {
            arity("list", method, pos, 2, 2)?;
            let mut items = this.items.lock().unwrap();
            let at = index(&pos[0], items.len(), true)?.unwrap_or(0);
            items.insert(at, kk_arg(pos[1].clone()));
            Ok(none)
        }
        "remove" => {
            arity("list", method, pos, 1, 1)?;
            let mut items = this.items.lock().unwrap();
            match items.iter().position(|v| *v == pos[0]) {
                Some(at) => {
                    items.remove(at);
                    Ok(none)
                }
                None => Err(fail(format!(
                    "list.remove(x): x not in list (x = {}, ValueError)",
                    repr(&pos[0])
                ))),
            }
        }
        "pop" => {
            arity("list", method, pos, 0, 1)?;
            let mut items = this.items.lock().unwrap();
            if items.is_empty() {
                return Err(fail("pop from empty list (IndexError)".into()));
            }
            let at = match pos.first() {
                Some(i) => index(i, items.len(), false)?
                    .ok_or_else(|| fail("pop index out of range (IndexError)".into()))?,
                None => items.len() - 1,
            };
            Ok(items.remove(at))
        }
        "index" => {
            arity("list", method, pos, 1, 1)?;
            let items = this.items.lock().unwrap();
            match items.iter().position(|v| *v == pos[0]) {
                Some(at) => Ok(Value::from(at)),
                None => Err(fail(format!(
                    "{} is not in list (ValueError)",
                    repr(&pos[0])
                ))),
            }
        }
        "clear" => {
            arity("list", method, pos, 0, 0)?;
            this.items.lock().unwrap().clear();
            Ok(none)
        }
        "reverse" => {
            arity("list", method, pos, 0, 0)?;
            this.items.lock().unwrap().reverse();
            Ok(none)
        }
        "sort" => {
            arity("list", method, pos, 0, 0)?;
            let reverse = match &kwargs {
                Some(kw) => {
                    let r = kw.get::<Option<bool>>("reverse")?.unwrap_or(false);
                    kw.assert_all_used()?;
                    r
                }
                None => false,
            };
            let mut items = this.items.lock().unwrap();
            items.sort();
            if reverse {
                items.reverse();
            }
            Ok(none)
        }
        "copy" => {
            arity("list", method, pos, 0, 0)?;
            Ok(new_list(this.flavor, this.items.lock().unwrap().clone()))
        }
        _ => Err(Error::from(ErrorKind::UnknownMethod)),
    }
}
