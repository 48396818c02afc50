//! Argument forms ansible-core settles only when a task runs: a module named by a
//! template (`action: "{{ mod }} msg=hi"`), arguments given as one template that yields a
//! mapping (`debug: "{{ args }}"`), and `environment` written as a list of mappings.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::modules;
use crate::project::value_text;
use crate::template::{is_template, Templar};
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
pub(super) fn add_environment(env: &mut Vec<(String, String)>, v: Value) -> Result<()> {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                env.retain(|(ek, _)| *ek != k);
                env.push((k, value_text(&v)));
            }
            Ok(())
        }
        Value::Null => Ok(()),
        Value::Array(items) => items.into_iter().try_for_each(|i| match i {
            Value::Object(_) | Value::Null => add_environment(env, i),
            other => Err(not_a_mapping(&other)),
        }),
        other => Err(not_a_mapping(&other)),
    }
}

fn not_a_mapping(v: &Value) -> Error {
    Error::new(
        ErrorKind::Template,
        format!(
            "environment must be a dictionary (or a list of them), received {}",
            v
        ),
    )
    .help("write `environment:` as a mapping of variable names to values")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn environment_lists_merge_in_order() {
        let mut env = Vec::new();
        add_environment(&mut env, json!([{"A": 1}, {"B": "2", "A": 3}])).unwrap();
        env.sort();
        assert_eq!(
            env,
            vec![("A".into(), "3".into()), ("B".into(), "2".into())]
        );
        assert!(add_environment(&mut env, json!(["A=1"])).is_err());
        assert!(add_environment(&mut env, json!("A=1")).is_err());
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
