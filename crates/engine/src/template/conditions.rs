//! Conditions (`when`, `changed_when`, `failed_when`, `until`, `assert`'s `that`) as
//! ansible-core 2.19 judges them: the result must be a boolean, unless
//! `allow_broken_conditionals` asks for the truth of any result as before 2.19.

use serde_json::Value;

use super::{is_template, to_mj, truthy, Templar};
use crate::error::{Error, ErrorKind, Result};

impl Templar {
    /// Evaluates a `when`/`changed_when`/`failed_when`/`until`/`assert` condition: a
    /// boolean, a bare expression, or a list of them (all must hold, the first false one
    /// ends it). As ansible-core 2.19, an expression must give a boolean: any other result
    /// is an error naming the expression and what it gave, unless broken conditionals are
    /// allowed ([`allow_broken_conditionals`]), when its truth decides as before 2.19.
    pub fn eval_condition(&self, cond: &Value, ctx: &minijinja::Value) -> Result<bool> {
        self.condition(cond, ctx, !broken_conditionals_allowed())
    }

    /// [`Templar::eval_condition`] judging any result by its truth (Jinja's `{% if %}`),
    /// as the `constructed` inventory plugin's `groups` do.
    pub fn eval_truth(&self, cond: &Value, ctx: &minijinja::Value) -> Result<bool> {
        self.condition(cond, ctx, false)
    }

    fn condition(&self, cond: &Value, ctx: &minijinja::Value, strict: bool) -> Result<bool> {
        match cond {
            Value::Bool(b) => Ok(*b),
            Value::Null => Ok(false),
            Value::Number(_) if strict => Err(Error::new(
                ErrorKind::Template,
                format!("conditional expressions must be strings, not the number {cond}"),
            )
            .help("write the condition as an expression, e.g. `when: count | int > 0`")),
            Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0) != 0.0),
            Value::Array(items) => {
                for i in items {
                    if !self.condition(i, ctx, strict)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Value::String(s) => {
                let expr = if is_template(s) {
                    match self.render_str(s, ctx)? {
                        Value::String(r) => r,
                        Value::Bool(b) => return Ok(b),
                        other if strict => return Err(not_boolean(s, &to_mj(&other))),
                        other => return Ok(truthy(&other)),
                    }
                } else {
                    s.clone()
                };
                let v = self
                    .eval_expr(&expr, ctx)
                    .map_err(|e| e.note(format!("in condition `{}`", s)))?;
                if v.is_undefined() {
                    return Err(Error::new(
                        ErrorKind::Undefined,
                        format!("condition `{}` is undefined", s),
                    ));
                }
                if v.kind() == minijinja::value::ValueKind::Bool || !strict {
                    return Ok(v.is_true());
                }
                Err(not_boolean(s, &v))
            }
            Value::Object(_) => Err(Error::new(
                ErrorKind::Syntax,
                "a condition must be an expression, not a mapping",
            )),
        }
    }
}

/// ansible-core 2.19's `ALLOW_BROKEN_CONDITIONALS` (ansible.cfg `allow_broken_conditionals`,
/// `ANSIBLE_ALLOW_BROKEN_CONDITIONALS`): conditions whose result is not a boolean are
/// judged by their truth instead of failing. Off unless the command line turns it on.
static ALLOW_BROKEN_CONDITIONALS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Lets conditions give non-boolean results (judged by their truth), as ansible-core's
/// `ALLOW_BROKEN_CONDITIONALS` does; for playbooks written for ansible-core 2.18 and older.
pub fn allow_broken_conditionals(allow: bool) {
    ALLOW_BROKEN_CONDITIONALS.store(allow, std::sync::atomic::Ordering::Relaxed);
}

fn broken_conditionals_allowed() -> bool {
    ALLOW_BROKEN_CONDITIONALS.load(std::sync::atomic::Ordering::Relaxed)
}

/// ansible-core 2.19's error for a condition whose result is not a boolean, with Python's
/// name of the result's type.
fn not_boolean(expr: &str, v: &minijinja::Value) -> Error {
    use minijinja::value::ValueKind;
    let ty = match v.kind() {
        ValueKind::String => "str",
        ValueKind::Number if v.as_i64().is_some() => "int",
        ValueKind::Number => "float",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        ValueKind::None => "NoneType",
        ValueKind::Bytes => "bytes",
        _ => "object",
    };
    let truth = if v.is_true() { "True" } else { "False" };
    Error::new(
        ErrorKind::Template,
        format!(
            "Conditional result ({truth}) was derived from value of type '{ty}' in `{expr}`. Conditionals must have a boolean result."
        ),
    )
    .help("make the expression a boolean: `x | bool`, `x | length > 0`, `x is not none`, `x == 'value'`; or set allow_broken_conditionals = True (ansible.cfg) or ANSIBLE_ALLOW_BROKEN_CONDITIONALS=true to judge it by its truth as ansible-core before 2.19 did")
}
