//! `from_toml` and `to_toml`: TOML documents as template data and back (the containerd
//! `config.toml` of role cri/containerd, whose `merge` policy reads the host's file).
//! Upstream KubeKey has the same pair as `fromTOML`/`toToml`.

use minijinja::{Environment, Error, State, Value};
use serde_json::Value as J;

use super::filters::{fail, from_plain, to_plain};

/// Registers `from_toml` and `to_toml` (also as `ansible.builtin.*`, as every filter).
pub fn register(env: &mut Environment<'static>) {
    env.add_filter("from_toml", from_toml);
    env.add_filter("ansible.builtin.from_toml", from_toml);
    env.add_filter("to_toml", to_toml);
    env.add_filter("ansible.builtin.to_toml", to_toml);
}

/// A TOML document (a string) as a mapping; anything else is returned unchanged.
fn from_toml(value: &Value) -> Result<Value, Error> {
    let Some(s) = value.as_str() else {
        return Ok(value.clone());
    };
    let doc: toml::Table = toml::from_str(s).map_err(|e| {
        fail(format!(
            "from_toml: the input is not a TOML document: {}",
            e
        ))
    })?;
    let j = serde_json::to_value(doc).map_err(|e| fail(format!("from_toml: {}", e)))?;
    Ok(from_plain(&j))
}

/// A mapping as a TOML document. TOML has no null: keys whose value is none are left out
/// (also inside tables and arrays of tables). Keys keep their order.
fn to_toml(state: &State, value: &Value) -> Result<String, Error> {
    let j = to_plain(state, value, "to_toml")?;
    let j = drop_nulls(j);
    if !j.is_object() {
        return Err(fail(format!(
            "to_toml: a TOML document must be a mapping, found {}",
            kind(&j)
        )));
    }
    let t: toml::Table = serde_json::from_value(j.clone())
        .map_err(|e| fail(format!("to_toml: cannot write {} as TOML: {}", kind(&j), e)))?;
    toml::to_string(&t).map_err(|e| fail(format!("to_toml: {}", e)))
}

fn drop_nulls(j: J) -> J {
    match j {
        J::Object(m) => J::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, drop_nulls(v)))
                .collect(),
        ),
        J::Array(a) => J::Array(
            a.into_iter()
                .filter(|v| !v.is_null())
                .map(drop_nulls)
                .collect(),
        ),
        other => other,
    }
}

fn kind(j: &J) -> &'static str {
    match j {
        J::Null => "none",
        J::Bool(_) => "a boolean",
        J::Number(_) => "a number",
        J::String(_) => "a string",
        J::Array(_) => "a list",
        J::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment<'static> {
        let mut e = Environment::new();
        register(&mut e);
        e
    }

    #[test]
    fn round_trip_keeps_order_types_and_nested_tables() {
        let e = env();
        let out = e
            .render_str(
                "{{ {'version': 2, 'root': '/var/lib/containerd', 'plugins': {'io.containerd.grpc.v1.cri': {'sandbox_image': 'pause:3.10', 'enabled': true, 'skip': none} } } | to_toml }}",
                (),
            )
            .unwrap();
        assert_eq!(
            out,
            "version = 2\nroot = \"/var/lib/containerd\"\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"pause:3.10\"\nenabled = true\n"
        );
        let back = e
            .render_str(
                "{{ (t | from_toml).plugins['io.containerd.grpc.v1.cri'].sandbox_image }} {{ (t | from_toml).version + 1 }}",
                minijinja::context! { t => out },
            )
            .unwrap();
        assert_eq!(back, "pause:3.10 3");
    }

    #[test]
    fn errors_say_what_was_wrong() {
        let e = env();
        let err = e.render_str("{{ 'a = ' | from_toml }}", ()).unwrap_err();
        assert!(
            err.to_string()
                .contains("from_toml: the input is not a TOML document"),
            "{}",
            err
        );
        let err = e.render_str("{{ [1, 2] | to_toml }}", ()).unwrap_err();
        assert!(
            err.to_string()
                .contains("to_toml: a TOML document must be a mapping, found a list"),
            "{}",
            err
        );
    }
}
