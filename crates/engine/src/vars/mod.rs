//! Variables: the layers of design §3, merged lowest to highest, and the lazy view a
//! template sees for one host at one task.
//!
//! Layers are shared `Arc` maps, so building a view for a host and task costs a few
//! pointer copies. Values are templated only when a template reads them, against the
//! same host's view, with a guard against variables that refer to themselves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, ObjectRepr};
use serde_json::{Map, Value};

use crate::template::{is_template, to_mj, Templar};

pub mod input;
pub mod precedence;

/// A map of variables.
pub type VarMap = Map<String, Value>;

/// Merges `over` into `base`: mappings merge key by key, recursively; anything else
/// in `over` replaces what `base` had.
pub fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => merge_maps(b, o),
        (b, o) => *b = o.clone(),
    }
}

/// [`deep_merge`] for two maps.
pub fn merge_maps(base: &mut VarMap, over: &VarMap) {
    for (k, v) in over {
        match base.get_mut(k) {
            Some(existing) if existing.is_object() && v.is_object() => deep_merge(existing, v),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// True when any string inside a value has Jinja syntax.
pub fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => is_template(s),
        Value::Array(a) => a.iter().any(has_template),
        Value::Object(m) => m.values().any(has_template),
        _ => false,
    }
}

/// An ordered stack of variable layers, lowest precedence first.
///
/// A layer is either written by the user (its strings are templates, rendered when
/// read) or data the run produced (registered results, `set_fact` values, facts),
/// which is already rendered and must never be templated again.
#[derive(Clone, Default, Debug)]
pub struct Layers(pub Vec<Arc<VarMap>>, Vec<bool>);

impl Layers {
    /// Layers of user-written (templated) variables, lowest first.
    pub fn from_maps(maps: Vec<Arc<VarMap>>) -> Layers {
        let n = maps.len();
        Layers(maps, vec![true; n])
    }

    /// Adds a layer of user-written variables on top.
    pub fn push(&mut self, layer: Arc<VarMap>) {
        if !layer.is_empty() {
            self.0.push(layer);
            self.1.push(true);
        }
    }

    /// Adds a layer of run-time data (never templated) on top.
    pub fn push_data(&mut self, layer: Arc<VarMap>) {
        if !layer.is_empty() {
            self.0.push(layer);
            self.1.push(false);
        }
    }

    /// The raw (untemplated) value of a variable: the highest layer that has it wins,
    /// except that mappings found in several layers are deep-merged.
    pub fn raw(&self, key: &str) -> Option<Value> {
        self.lookup(key).map(|(v, _)| v)
    }

    /// Like [`Layers::raw`], also saying whether the value may hold templates
    /// (false when it comes only from data layers).
    pub fn lookup(&self, key: &str) -> Option<(Value, bool)> {
        let mut found: Vec<(&Value, bool)> = Vec::new();
        for (layer, templated) in self.0.iter().zip(self.1.iter()).rev() {
            if let Some(v) = layer.get(key) {
                let is_map = v.is_object();
                found.push((v, *templated));
                if !is_map {
                    break;
                }
            }
        }
        match found.len() {
            0 => None,
            1 => Some((found[0].0.clone(), found[0].1)),
            _ => {
                // found is highest first; the lowest entry may be a non-mapping that the maps replace.
                let mut iter = found.into_iter().rev().skip_while(|(v, _)| !v.is_object());
                let (first, mut templated) = iter.next()?;
                let mut acc = first.clone();
                for (v, t) in iter {
                    deep_merge(&mut acc, v);
                    templated |= t;
                }
                Some((acc, templated))
            }
        }
    }

    /// Every variable name, in first-seen order from the lowest layer.
    pub fn keys(&self) -> Vec<String> {
        let mut seen = indexmap::IndexSet::new();
        for layer in &self.0 {
            for k in layer.keys() {
                seen.insert(k.clone());
            }
        }
        seen.into_iter().collect()
    }
}

/// Variables that are not stored in layers but computed per host and task.
#[derive(Clone, Default, Debug)]
pub struct Magic {
    /// Fixed-value magic variables (`inventory_hostname`, `groups`, `play_hosts` …),
    /// in several shared maps (per play, per host, per loop item), first match wins.
    pub values: Vec<Arc<VarMap>>,
    /// `hostvars`, resolving other hosts lazily.
    pub hostvars: Option<minijinja::Value>,
}

/// One host's variables at one point of the run, as a template context.
///
/// Reading a variable templates it (once; the result is cached for this view).
#[derive(Debug)]
pub struct VarView {
    layers: Layers,
    magic: Magic,
    templar: Arc<Templar>,
    cache: Mutex<HashMap<String, minijinja::Value>>,
    resolving: Mutex<Vec<String>>,
    /// Variables whose own template uses something undefined, with why: they read as
    /// undefined (so `| default` and `is defined` see them so, as in ansible-core), and
    /// an error about them says why ([`VarView::undefined_because`]).
    undefined: Mutex<HashMap<String, String>>,
}

impl VarView {
    /// A view over layers plus magic variables.
    pub fn new(layers: Layers, magic: Magic, templar: Arc<Templar>) -> Arc<VarView> {
        Arc::new(VarView {
            layers,
            magic,
            templar,
            cache: Mutex::new(HashMap::new()),
            resolving: Mutex::new(Vec::new()),
            undefined: Mutex::new(HashMap::new()),
        })
    }

    /// Why the variables named in `message` that read as undefined are so (their own
    /// templates use something undefined), one note each.
    pub fn undefined_because(&self, message: &str) -> Vec<String> {
        let undefined = self.undefined.lock().unwrap();
        let mut names: Vec<&String> = undefined
            .keys()
            .filter(|k| message.contains(&format!("`{k}`")) || message.contains(&format!("'{k}'")))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|k| {
                format!(
                    "`{k}` is undefined because its own template is: {}",
                    undefined[k]
                )
            })
            .collect()
    }

    /// The same view with one more layer of run-time data on top (a loop item, a
    /// registered result for `changed_when`).
    pub fn with_data(self: &Arc<Self>, top: Arc<VarMap>) -> Arc<VarView> {
        let mut layers = self.layers.clone();
        layers.push_data(top);
        VarView::new(layers, self.magic.clone(), self.templar.clone())
    }

    /// This view as a template context.
    pub fn context(self: &Arc<Self>) -> minijinja::Value {
        minijinja::Value::from_dyn_object(self.clone())
    }

    /// The layers behind this view.
    pub fn layers(&self) -> &Layers {
        &self.layers
    }

    /// A variable, templated, as plain data (`None` if undefined).
    pub fn get_json(self: &Arc<Self>, key: &str) -> crate::error::Result<Option<Value>> {
        match self.lookup(key) {
            None => Ok(None),
            Some(v) => crate::template::to_json(&v, key).map(Some),
        }
    }

    fn lookup(self: &Arc<Self>, key: &str) -> Option<minijinja::Value> {
        for m in &self.magic.values {
            if let Some(v) = m.get(key) {
                return Some(to_mj(v));
            }
        }
        match key {
            "hostvars" => return self.magic.hostvars.clone(),
            "vars" => return Some(self.context()),
            _ => {}
        }
        if let Some(v) = self.cache.lock().unwrap().get(key) {
            return Some(v.clone());
        }
        if self.undefined.lock().unwrap().contains_key(key) {
            return None;
        }
        let (raw, templated) = self.layers.lookup(key)?;
        let value = if templated && has_template(&raw) {
            {
                let mut stack = self.resolving.lock().unwrap();
                if stack.iter().any(|k| k == key) {
                    let mut chain = stack.clone();
                    chain.push(key.to_string());
                    let err = minijinja::Error::new(
                        minijinja::ErrorKind::InvalidOperation,
                        format!("variable refers to itself: {}", chain.join(" -> ")),
                    );
                    return Some(minijinja::Value::from(err));
                }
                stack.push(key.to_string());
            }
            let rendered = self.templar.render_value(&raw, &self.context());
            self.resolving.lock().unwrap().pop();
            match rendered {
                Ok(v) => to_mj(&v),
                Err(e) => {
                    let mut why = e.message.clone();
                    for n in &e.notes {
                        why.push_str(&format!("; {}", n));
                    }
                    // As ansible-core: a variable whose template uses something undefined
                    // is itself undefined (`| default` replaces it, `is defined` is
                    // false); a plain use fails naming it, with why.
                    if e.kind == crate::error::ErrorKind::Undefined {
                        self.undefined.lock().unwrap().insert(key.to_string(), why);
                        return None;
                    }
                    let msg = format!("while templating variable `{}`: {}", key, why);
                    let err = minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg);
                    return Some(minijinja::Value::from(err));
                }
            }
        } else {
            to_mj(&raw)
        };
        self.cache
            .lock()
            .unwrap()
            .insert(key.to_string(), value.clone());
        Some(value)
    }
}

impl Object for VarView {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &minijinja::Value) -> Option<minijinja::Value> {
        self.lookup(key.as_str()?)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<minijinja::Value> = self
            .magic
            .values
            .iter()
            .flat_map(|m| m.keys())
            .map(|k| minijinja::Value::from(k.as_str()))
            .collect();
        keys.extend(self.layers.keys().into_iter().map(minijinja::Value::from));
        Enumerator::Values(keys)
    }
}

/// Builds the view of a host by name; `None` for unknown hosts.
pub type HostResolver = Box<dyn Fn(&str) -> Option<Arc<VarView>> + Send + Sync>;

/// `hostvars`: every host's view, built on first access.
pub struct HostVars {
    /// Builds the view of a host by name.
    pub resolve: HostResolver,
    /// Host names, in inventory order, for iteration.
    pub names: Vec<String>,
    cache: Mutex<HashMap<String, minijinja::Value>>,
}

impl HostVars {
    /// A lazily resolving `hostvars` object.
    pub fn new(names: Vec<String>, resolve: HostResolver) -> HostVars {
        HostVars {
            resolve,
            names,
            cache: Mutex::new(HashMap::new()),
        }
    }
}

impl std::fmt::Debug for HostVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hostvars{:?}", self.names)
    }
}

impl Object for HostVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &minijinja::Value) -> Option<minijinja::Value> {
        let name = key.as_str()?;
        if let Some(v) = self.cache.lock().unwrap().get(name) {
            return Some(v.clone());
        }
        let view = (self.resolve)(name)?;
        let v = view.context();
        self.cache
            .lock()
            .unwrap()
            .insert(name.to_string(), v.clone());
        Some(v)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(
            self.names
                .iter()
                .map(|n| minijinja::Value::from(n.as_str()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn layer(v: Value) -> Arc<VarMap> {
        Arc::new(v.as_object().unwrap().clone())
    }

    #[test]
    fn higher_layers_win_and_maps_merge() {
        let layers = Layers::from_maps(vec![
            layer(json!({"k": {"a": 1, "b": {"x": 1}}, "s": "low", "l": [1]})),
            layer(json!({"k": {"b": {"y": 2}}, "s": "high", "l": [2]})),
        ]);
        assert_eq!(
            layers.raw("k").unwrap(),
            json!({"a": 1, "b": {"x": 1, "y": 2}})
        );
        assert_eq!(layers.raw("s").unwrap(), json!("high"));
        assert_eq!(layers.raw("l").unwrap(), json!([2]));
        assert!(layers.raw("missing").is_none());
    }

    #[test]
    fn scalar_above_map_replaces() {
        let layers = Layers::from_maps(vec![
            layer(json!({"k": {"a": 1}})),
            layer(json!({"k": "flat"})),
        ]);
        assert_eq!(layers.raw("k").unwrap(), json!("flat"));
        let layers = Layers::from_maps(vec![
            layer(json!({"k": "flat"})),
            layer(json!({"k": {"a": 1}})),
        ]);
        assert_eq!(layers.raw("k").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn lazy_templates_and_cycles() {
        let t = Arc::new(Templar::new());
        let layers = Layers::from_maps(vec![layer(
            json!({"a": "{{ b }}-x", "b": "{{ c | default('d') }}", "p": "{{ q }}", "q": "{{ p }}"}),
        )]);
        let view = VarView::new(layers, Magic::default(), t.clone());
        let ctx = view.context();
        assert_eq!(t.render_str("{{ a }}", &ctx).unwrap(), json!("d-x"));
        let e = t.render_str("{{ p }}", &ctx).unwrap_err();
        assert!(e.render().contains("p -> q -> p"), "{}", e.render());
    }
}
