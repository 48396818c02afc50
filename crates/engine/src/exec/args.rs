//! Argument forms ansible-core settles only when a task runs: a module named by a
//! template (`action: "{{ mod }} msg=hi"`), arguments given as one template that yields a
//! mapping (`debug: "{{ args }}"`), and `environment` written as a list of mappings.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::modules;
use crate::project::value_text;
use crate::template::{is_template, Templar, OMIT};
use crate::vars::VarMap;

/// The module a task runs on a host: the name as loaded, or, when it is a template
/// (ansible-core templates `action` before it runs the task), the rendered name made
/// canonical. A name that renders to no module kk runs is refused as Ansible refuses it
/// ("Cannot resolve 'x' to an action or module.").
pub(super) fn module_for_host<'a>(
    templar: &Templar,
    module: &'a str,
    ctx: &minijinja::Value,
) -> Result<Cow<'a, str>> {
    if !is_template(module) {
        return Ok(Cow::Borrowed(module));
    }
    let rendered = value_text(&templar.render_str(module, ctx)?);
    let name = modules::canonical_name(rendered.trim()).to_string();
    if modules::lookup(&name).is_none() {
        let why = if modules::find(&name).is_some() {
            "it is task structure, which kk (as Ansible) resolves when the playbook loads"
        } else {
            "kk has no such module"
        };
        return Err(Error::new(
            ErrorKind::Template,
            format!(
                "Cannot resolve '{}' to an action or module ({}): `{}` rendered to `{}`",
                rendered.trim(),
                why,
                module,
                rendered.trim()
            ),
        )
        .help("make the template render to a module name such as `debug` or `command`"));
    }
    Ok(Cow::Owned(name))
}

/// A task's free-form text that rendered to a mapping gives the module's arguments
/// (`debug: "{{ args }}"`, `add_host: "{{ host }}"`), below the ones written beside it,
/// as ansible-core's TaskArgsFinalizer layers them. Command lines keep their text.
pub(super) fn merge_raw_mapping(module: &str, args: &mut VarMap) {
    if modules::is_command_line(module) {
        return;
    }
    if !matches!(args.get("_raw_params"), Some(Value::Object(_))) {
        return;
    }
    if let Some(Value::Object(m)) = args.remove("_raw_params") {
        for (k, v) in m {
            args.entry(k).or_insert(v);
        }
    }
}

/// Adds one rendered `environment` value to `env`: a mapping, or a list of mappings
/// merged in order (later keys win, as ansible-core merges a task's environment list).
/// As ansible-core 2.19's Task._post_validate_environment does, a value or a variable
/// that renders to `omit` is left out, and a value that is no mapping is skipped with a
/// warning: the returned texts are the values skipped so.
pub(super) fn add_environment(env: &mut Vec<(String, String)>, v: Value) -> Vec<String> {
    let mut skipped = Vec::new();
    match v {
        Value::Object(m) => {
            // An omitted variable keeps the value an outer `environment` gave it.
            for (k, v) in m.into_iter().filter(|(_, v)| v.as_str() != Some(OMIT)) {
                env.retain(|(ek, _)| *ek != k);
                env.push((k, value_text(&v)));
            }
        }
        Value::Null => {}
        Value::String(s) if s == OMIT => {}
        Value::Array(items) => {
            for i in items {
                skipped.extend(add_environment(env, i));
            }
        }
        other => skipped.push(other.to_string()),
    }
    skipped
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn environment_lists_merge_in_order() {
        let mut env = Vec::new();
        assert!(add_environment(&mut env, json!([{"A": 1}, {"B": "2", "A": 3}])).is_empty());
        env.sort();
        assert_eq!(
            env,
            vec![("A".into(), "3".into()), ("B".into(), "2".into())]
        );
        assert_eq!(
            add_environment(&mut env, json!(["A=1"])),
            vec!["\"A=1\"".to_string()]
        );
        assert_eq!(add_environment(&mut env, json!(7)), vec!["7".to_string()]);
        assert!(add_environment(&mut env, json!(OMIT)).is_empty());
        // An omitted B keeps the value it had; C is added.
        assert!(add_environment(&mut env, json!({"B": OMIT, "C": 1})).is_empty());
        env.sort();
        assert_eq!(
            env,
            vec![
                ("A".into(), "3".into()),
                ("B".into(), "2".into()),
                ("C".into(), "1".into())
            ]
        );
    }

    #[test]
    fn a_raw_mapping_gives_arguments_below_the_written_ones() {
        let mut args = json!({"_raw_params": {"msg": "raw", "verbosity": 0}, "msg": "kept"});
        let m = args.as_object_mut().unwrap();
        merge_raw_mapping("debug", m);
        assert_eq!(args, json!({"msg": "kept", "verbosity": 0}));
        let mut cmd = json!({"_raw_params": {"a": 1}});
        merge_raw_mapping("command", cmd.as_object_mut().unwrap());
        assert!(cmd.get("_raw_params").is_some());
    }

    #[test]
    fn templated_module_names_render_per_host() {
        let t = Templar::new();
        let ctx = crate::template::to_mj(&json!({"m": "ansible.builtin.debug"}));
        assert_eq!(module_for_host(&t, "{{ m }}", &ctx).unwrap(), "debug");
        assert_eq!(module_for_host(&t, "copy", &ctx).unwrap(), "copy");
        let ctx = crate::template::to_mj(&json!({"m": "include_tasks"}));
        assert!(module_for_host(&t, "{{ m }}", &ctx).is_err());
    }
}
