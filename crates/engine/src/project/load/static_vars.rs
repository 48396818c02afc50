//! Templated names of static imports (`import_tasks: "{{ role_path }}/tasks/x.yml"`).
//! ansible-core renders them while it loads the play, with the variables known without a
//! host: extra vars, the play's and enclosing blocks' vars, the task's own vars, the
//! role's defaults, vars and parameters, and `playbook_dir`, `role_path`, `role_name`.

use std::sync::Arc;

use serde_json::Value;

use super::{FileCtx, Loader};
use crate::error::{Error, ErrorKind, Result, Span};
use crate::template::{is_template, to_mj, Templar};
use crate::vars::VarMap;

/// `outer` with `inner`'s entries over it (a block's vars over the play's).
pub(super) fn with_vars(outer: &Arc<VarMap>, inner: &Arc<VarMap>) -> Arc<VarMap> {
    if inner.is_empty() {
        return outer.clone();
    }
    let mut m = (**outer).clone();
    m.extend(inner.iter().map(|(k, v)| (k.clone(), v.clone())));
    Arc::new(m)
}

/// How many times a value that renders to another template is rendered again (a variable
/// defined with a template, `base: "{{ playbook_dir }}/tasks"`).
const MAX_PASSES: usize = 8;

impl Loader {
    /// Renders a static import's file name (a string holding a template) with the
    /// variables known when the play loads; an undefined variable is a load error.
    pub(super) fn render_static(
        &self,
        raw: &str,
        ctx: &FileCtx,
        task_vars: &VarMap,
        span: &Span,
    ) -> Result<String> {
        let mut vars = VarMap::new();
        if let Some(r) = &ctx.role {
            vars.extend(r.role.defaults.iter().map(|(k, v)| (k.clone(), v.clone())));
            vars.extend(r.role.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        vars.extend(ctx.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        vars.extend(task_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(r) = &ctx.role {
            vars.extend(r.params.iter().map(|(k, v)| (k.clone(), v.clone())));
            let path = r.role.path.canonicalize().unwrap_or(r.role.path.clone());
            vars.insert("role_path".into(), Value::from(path.display().to_string()));
            vars.insert("role_name".into(), Value::from(r.role.name.clone()));
            vars.insert("ansible_role_name".into(), Value::from(r.role.name.clone()));
        }
        vars.extend(self.extra_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        let dir = self
            .playbook_dir
            .canonicalize()
            .unwrap_or(self.playbook_dir.clone());
        vars.insert(
            "playbook_dir".into(),
            Value::from(dir.display().to_string()),
        );
        let templar = Templar::new();
        let ctx_value = to_mj(&Value::Object(vars));
        let mut text = raw.to_string();
        for _ in 0..MAX_PASSES {
            if !is_template(&text) {
                break;
            }
            let v = templar.render_str(&text, &ctx_value).map_err(|e| {
                Error::new(
                    ErrorKind::Syntax,
                    format!("the file name `{}` of a static import: {}", raw, e.message),
                )
                .at(span)
                .help("a static import is read when the play loads: its name may use extra vars, play, block, task and role vars, playbook_dir and role_path, not host variables; use include_tasks for a name that needs them")
            })?;
            text = crate::ansible::value_text(&v);
        }
        Ok(text)
    }
}
