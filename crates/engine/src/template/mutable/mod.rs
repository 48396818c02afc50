//! Dicts and lists that templates change in place, as ansible-core 2.19 lets them:
//! `{% set d = {} %}{{ d.update({'a': 1}) }}`, `{{ l.append(x) }}`, `d.pop(k)`, …
//!
//! minijinja's own maps and lists are immutable, so a template that calls one of these
//! methods ([`rewrite::mutates`]) renders with values that can change:
//! - its variables through [`MutCtx`]: each render gets its own copy on first use, so a
//!   change shows for the rest of that template only (never in another argument of
//!   the task or in a later task), as Ansible templates on lazy copies;
//! - what `{% set %}` binds and `{% for %}` iterates through `__kk_mut` (the rewrite);
//! - macro arguments by reference, as ansible-core 2.18 passed them. 2.19 hands a macro a
//!   copy of a container built in the template, so a counter macro such as kubespray's
//!   (`increment(counter, 'dns')` in its etcd openssl.conf.j2) no longer counts there and
//!   the certificate gets one name: kk keeps the behaviour those templates were written
//!   for (oracle fixtures 302 and 303 declare the difference).
//!
//! Templates without such a call render exactly as before (no copies, no wrapper).
//! Copies are shallow and made on access: a nested container is converted when first
//! read and stored back, so it stays the same object for the rest of the render.

mod methods;
pub(crate) mod rewrite;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use minijinja::value::{Enumerator, Object, ObjectRepr, ValueKind};
use minijinja::{Error, State, Value};

/// Where a container comes from: built in the template (`Plain`, copied when passed to a
/// call) or reached from a variable (`Lazy`, passed by reference), as ansible-core tells
/// plain Python containers from its lazy variable containers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flavor {
    Plain,
    Lazy,
}

/// A dict a template may change, in insertion order like Python's.
pub(crate) struct MutMap {
    flavor: Flavor,
    map: Mutex<IndexMap<Value, Value>>,
}

/// A list a template may change.
pub(crate) struct MutList {
    flavor: Flavor,
    items: Mutex<Vec<Value>>,
}

impl std::fmt::Debug for MutMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.map.lock().unwrap().iter())
            .finish()
    }
}

impl std::fmt::Debug for MutList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.items.lock().unwrap().iter())
            .finish()
    }
}

fn new_map(flavor: Flavor, map: IndexMap<Value, Value>) -> Value {
    Value::from_object(MutMap {
        flavor,
        map: Mutex::new(map),
    })
}

fn new_list(flavor: Flavor, items: Vec<Value>) -> Value {
    Value::from_object(MutList {
        flavor,
        items: Mutex::new(items),
    })
}

/// The flavor of one of our containers, None for any other value.
fn flavor_of(v: &Value) -> Option<Flavor> {
    if let Some(m) = v.downcast_object_ref::<MutMap>() {
        return Some(m.flavor);
    }
    v.downcast_object_ref::<MutList>().map(|l| l.flavor)
}

/// A changeable shallow copy of an immutable list or dict (minijinja's own, or a
/// sequence such as `a + b` that would otherwise keep pointing at `a`, an iterable such
/// as `d.keys()`, taken as a list); None for
/// anything else (strings, `hostvars`, our containers…).
fn convert_immutable(v: &Value, flavor: Flavor) -> Option<Value> {
    if let Some(m) = v.downcast_object_ref::<IndexMap<Value, Value>>() {
        return Some(new_map(flavor, m.clone()));
    }
    if let Some(items) = v.downcast_object_ref::<Vec<Value>>() {
        return Some(new_list(flavor, items.clone()));
    }
    if matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable)
        && !v.is_tuple()
        && flavor_of(v).is_none()
    {
        return Some(new_list(flavor, v.try_iter().ok()?.collect()));
    }
    None
}

/// The value as a child of a `flavor` container: immutable containers become changeable
/// ones; a plain container under a lazy parent is copied (Ansible templates it into a
/// new lazy container on access).
fn adopt(v: &Value, flavor: Flavor) -> Option<Value> {
    match (flavor_of(v), flavor) {
        (None, _) => convert_immutable(v, flavor),
        (Some(Flavor::Plain), Flavor::Lazy) => Some(copy(v, Flavor::Lazy)),
        _ => None,
    }
}

/// A shallow copy of one of our containers under `flavor`.
fn copy(v: &Value, flavor: Flavor) -> Value {
    if let Some(m) = v.downcast_object_ref::<MutMap>() {
        return new_map(flavor, m.map.lock().unwrap().clone());
    }
    if let Some(l) = v.downcast_object_ref::<MutList>() {
        return new_list(flavor, l.items.lock().unwrap().clone());
    }
    v.clone()
}

/// `__kk_mut(v)`: what `{% set %}` binds and `{% for %}` iterates — a changeable
/// container built in the template, or the value itself.
pub(crate) fn kk_mut(v: Value) -> Value {
    adopt(&v, Flavor::Plain).unwrap_or(v)
}

/// The arguments of the changing methods: as Ansible's `lazify_container_args`, a
/// container built in the template is copied, a variable's is passed as it is.
pub(crate) fn kk_arg(v: Value) -> Value {
    adopt(&v, Flavor::Lazy).unwrap_or(v)
}

impl Object for MutMap {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let mut map = self.map.lock().unwrap();
        let v = map.get_mut(key)?;
        if let Some(new) = adopt(v, self.flavor) {
            *v = new;
        }
        Some(v.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.map.lock().unwrap().keys().cloned().collect())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.map.lock().unwrap().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        methods::dict(self, method, args)
    }
}

impl MutList {
    /// Every item, converted as [`adopt`] says and stored back (loop items keep their
    /// identity, so a change to one shows in the list).
    fn adopted(&self) -> Vec<Value> {
        let mut items = self.items.lock().unwrap();
        for v in items.iter_mut() {
            if let Some(new) = adopt(v, self.flavor) {
                *v = new;
            }
        }
        items.clone()
    }
}

impl Object for MutList {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let idx = usize::try_from(key.clone()).ok()?;
        let mut items = self.items.lock().unwrap();
        let v = items.get_mut(idx)?;
        if let Some(new) = adopt(v, self.flavor) {
            *v = new;
        }
        Some(v.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.adopted())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.items.lock().unwrap().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        methods::list(self, method, args)
    }
}

/// The items of our list or the values of our dict, for checks that walk plain data
/// ([`super::filters::strict::holds_undefined`]).
pub(crate) fn children(v: &Value) -> Option<Vec<Value>> {
    if let Some(m) = v.downcast_object_ref::<MutMap>() {
        return Some(m.map.lock().unwrap().values().cloned().collect());
    }
    v.downcast_object_ref::<MutList>()
        .map(|l| l.items.lock().unwrap().clone())
}

/// The context of a template that changes containers: each variable is a changeable
/// copy made on first use in this render (and kept for the rest of it).
pub(crate) struct MutCtx {
    inner: Value,
    cache: Mutex<HashMap<String, Value>>,
}

impl std::fmt::Debug for MutCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MutCtx")
    }
}

impl MutCtx {
    /// The context behind `v` when it is one of these (lookups that need the variables'
    /// own view), else `v`.
    pub(crate) fn unwrap(v: Value) -> Value {
        match v.downcast_object_ref::<MutCtx>() {
            Some(c) => c.inner.clone(),
            None => v,
        }
    }

    /// `ctx` wrapped for one render.
    pub(crate) fn wrap(ctx: &Value) -> Value {
        Value::from_object(MutCtx {
            inner: ctx.clone(),
            cache: Mutex::new(HashMap::new()),
        })
    }
}

impl Object for MutCtx {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        if let Some(v) = self.cache.lock().unwrap().get(name) {
            return Some(v.clone());
        }
        if name == "vars" {
            // `vars` is this render's variables too: `vars.update({...})` shows in them.
            return Some(Value::from_dyn_object(self.clone()));
        }
        let v = match self.inner.as_object() {
            Some(obj) => obj.get_value(key)?,
            None => return None,
        };
        let v = adopt(&v, Flavor::Lazy).unwrap_or(v);
        self.cache
            .lock()
            .unwrap()
            .insert(name.to_string(), v.clone());
        Some(v)
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        if method != "update" || args.len() != 1 || args[0].kind() != ValueKind::Map {
            return Err(Error::from(minijinja::ErrorKind::UnknownMethod));
        }
        let mut cache = self.cache.lock().unwrap();
        for k in args[0].try_iter()? {
            let v = args[0].get_item(&k)?;
            if let Some(name) = k.as_str() {
                cache.insert(name.to_string(), kk_arg(v));
            }
        }
        Ok(Value::from(()))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        match self.inner.try_iter() {
            Ok(keys) => Enumerator::Values(keys.collect()),
            Err(_) => Enumerator::Empty,
        }
    }
}

/// The template text and context to render `src` with: rewritten and wrapped when it
/// changes containers ([`rewrite::mutates`]) — or when `force` (a template that includes
/// others, which may) — else both as they are.
pub(crate) fn prepare<'a>(
    src: std::borrow::Cow<'a, str>,
    ctx: &Value,
    force: bool,
) -> (std::borrow::Cow<'a, str>, Value) {
    if rewrite::mutates(&src) {
        let new = rewrite::rewrite(&src).into_owned();
        return (std::borrow::Cow::Owned(new), MutCtx::wrap(ctx));
    }
    if force {
        return (src, MutCtx::wrap(ctx));
    }
    (src, ctx.clone())
}

/// A method called on a list or dict that is not one of ours (a value no `{% set %}`
/// bound, e.g. `{{ [1].append(2) }}`): Python's dunder names are refused as Ansible's
/// sandbox refuses them (`__setitem__` aside, see `methods::unsafe_attr`), and a changing
/// method runs on a copy for its result (the change itself could not be seen anyway).
/// None for any other method.
pub(crate) fn on_immutable(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Option<Value>, Error> {
    let kind = match value.kind() {
        ValueKind::Map => "dict",
        ValueKind::Seq => "list",
        _ => return Ok(None),
    };
    if method.starts_with('_') && method != "__setitem__" {
        return Err(Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!(
                "access to attribute '{}' of '{}' object is unsafe",
                method, kind
            ),
        ));
    }
    let name = format!(".{}(", method);
    if !rewrite::METHODS.contains(&name.as_str()) || flavor_of(value).is_some() {
        return Ok(None);
    }
    match convert_immutable(value, Flavor::Plain) {
        Some(tmp) => tmp.call_method(state, method, args).map(Some),
        None => Err(Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!(
                "kk cannot change this {} in place with `{}` (only a template's variables \
                 and values it binds with `{{% set %}}` can be changed)",
                kind, method
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::template::Templar;
    use serde_json::json;

    fn ctx() -> minijinja::Value {
        crate::template::to_mj(&json!({
            "v": {"a": 1, "n": {"x": [1, 2]}},
            "l": [1, 2, 3],
            "big": (0..200).map(|i| json!({"k": i})).collect::<Vec<_>>(),
        }))
    }

    #[test]
    fn changes_show_within_one_render_only() {
        let t = Templar::new();
        let c = ctx();
        let r = t
            .render_str(
                "{{ v.update({'b': 2}) }}{{ v.n.x.append(3) }}{{ v | to_json }}",
                &c,
            )
            .unwrap();
        assert_eq!(r, json!(r#"{"a": 1, "n": {"x": [1, 2, 3]}, "b": 2}"#));
        let r = t.render_str("{{ v | to_json }}", &c).unwrap();
        assert_eq!(r, json!(r#"{"a": 1, "n": {"x": [1, 2]}}"#));
        let r = t
            .render_str("{% set c = {'n': 1} %}{% macro inc(d) %}{{ d.update({'n': 2}) }}{% endmacro %}{{ inc(c) }}{{ c.n }}", &c)
            .unwrap();
        // The macro changed the caller's dict, as in ansible-core 2.18 (2.19 passes a
        // copy). Its empty output is "" in kk, so the result here is text.
        assert_eq!(r, json!("2"));
    }
}
