//! Jinja templating with minijinja, configured the way Ansible users expect:
//! strict undefined, native types for single-expression strings, trim_blocks on,
//! trailing newlines kept as Ansible keeps them, `None` written as nothing, and
//! Ansible's filters, tests and lookups.

use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result, Span};

pub(crate) mod arith;
pub mod chain;
pub(crate) mod conditions;
pub mod datetime;
pub(crate) mod depth;
pub mod filters;
pub(crate) mod includes;
pub mod ipaddr;
pub mod jinja_tests;
pub(crate) mod limits;
pub mod lookups;
pub(crate) mod mutable;
mod native;
pub mod pydump;
mod pymethods;
mod tag_rewrite;
pub mod toml_filters;
pub mod unsafe_text;

/// The value `default(omit)` produces; module arguments equal to it are dropped.
pub const OMIT: &str = "__omit_place_holder__kk";

/// The configured Jinja environment, shared by every host and task of a run.
pub struct Templar {
    env: Environment<'static>,
}

impl Default for Templar {
    fn default() -> Self {
        Templar::new()
    }
}

impl std::fmt::Debug for Templar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Templar")
    }
}

/// True when a string has Jinja syntax and needs rendering.
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

/// Ansible's `_post_render_mutation`: Jinja drops a template's final newline (and
/// `trim_blocks` may drop more), so the newlines missing at the end of a string
/// result compared with the template are appended again.
pub fn preserve_trailing_newlines(template: &str, mut result: String) -> String {
    let want = template.len() - template.trim_end_matches('\n').len();
    let have = result.len() - result.trim_end_matches('\n').len();
    for _ in have..want {
        result.push('\n');
    }
    result
}

/// Ansible's `escape_backslashes` for an expression: backslashes inside string literals
/// are doubled, so Jinja's unescaping gives back exactly what YAML produced
/// (`regex_replace('(\\w+)', '\\1')` keeps its `\w` and `\1`). Ansible applies it to
/// `{{ }}` in task data, not to template files, `{% %}` or conditionals.
/// Returns the expression up to (not including) its closing `}}` when `until_close`,
/// and the number of bytes consumed.
fn escape_expr_strings(expr: &str, until_close: bool) -> (String, usize) {
    let mut out = String::with_capacity(expr.len());
    let mut depth = 0usize;
    let mut chars = expr.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                while let Some((_, d)) = chars.next() {
                    if d == '\\' {
                        out.push_str("\\\\");
                        if let Some((_, e)) = chars.next() {
                            // The target text keeps the backslash; an escaped
                            // delimiter must stay escaped for the lexer.
                            if e == '\\' {
                                out.push_str("\\\\");
                            } else if e == c {
                                out.push('\\');
                                out.push(e);
                            } else {
                                out.push(e);
                            }
                        }
                        continue;
                    }
                    out.push(d);
                    if d == c {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => {
                depth += 1;
                out.push(c);
            }
            ')' | ']' => {
                depth = depth.saturating_sub(1);
                out.push(c);
            }
            '}' => {
                if until_close && depth == 0 && expr[i..].starts_with("}}") {
                    return (out, i);
                }
                depth = depth.saturating_sub(1);
                out.push(c);
            }
            '-' if until_close && depth == 0 && expr[i..].starts_with("-}}") => {
                return (out, i);
            }
            c => out.push(c),
        }
    }
    (out, expr.len())
}

/// Ansible's `escape_backslashes` over a whole template string: applied to every
/// `{{ }}`; `{% raw %}` sections, `{% %}` tags and comments are left alone.
fn escape_backslashes(src: &str) -> std::borrow::Cow<'_, str> {
    if !src.contains('\\') {
        return std::borrow::Cow::Borrowed(src);
    }
    let mut out = String::with_capacity(src.len() + 8);
    let mut rest = src;
    while let Some(pos) = rest.find('{') {
        out.push_str(&rest[..pos]);
        let here = &rest[pos..];
        if let Some(body) = here.strip_prefix("{{") {
            let (escaped, used) = escape_expr_strings(body, true);
            out.push_str("{{");
            out.push_str(&escaped);
            rest = &body[used..];
        } else if here.starts_with("{%") || here.starts_with("{#") {
            let close = if here.starts_with("{%") { "%}" } else { "#}" };
            let end = here[2..].find(close).map(|e| e + 4).unwrap_or(here.len());
            let tag = &here[..end];
            out.push_str(tag);
            rest = &here[end..];
            let word = tag.trim_start_matches(['{', '%', '-', '+']).trim_start();
            if close == "%}" && word.starts_with("raw") {
                // Everything up to the endraw tag is text.
                let stop = rest.find("endraw").map(|e| e + 6).unwrap_or(rest.len());
                out.push_str(&rest[..stop]);
                rest = &rest[stop..];
            }
        } else {
            out.push('{');
            rest = &here[1..];
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// When the whole string is one `{{ expr }}`, the expression inside. As in Ansible 2.19,
/// one final newline is dropped first (`"{{ n }}\n"` is the number; a string result gets
/// its newline back); any other text around the braces makes the result a string.
fn single_expression(s: &str) -> Option<&str> {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let rest = body.strip_prefix("{{")?;
    // The first `}}` outside strings and brackets closes the expression (a dict literal
    // `{'a': {'b': 1}}` inside is fine); it must be the end of the string.
    let (_, used) = escape_expr_strings(rest, true);
    let tail = &rest[used..];
    if tail.strip_prefix('-').unwrap_or(tail) != "}}" {
        return None;
    }
    let inner = &rest[..used];
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    Some(inner.trim())
}

/// Whether an expression is, at its top level, `A if B` without `else` (words inside
/// strings and brackets do not count).
fn inline_if_without_else(expr: &str) -> bool {
    let (mut depth, mut quote, mut word) = (0i32, None::<char>, String::new());
    let (mut has_if, mut has_else) = (false, false);
    let mut end_word = |w: &mut String, depth: i32| {
        if depth == 0 {
            has_if |= w == "if";
            has_else |= w == "else";
        }
        w.clear();
    };
    for c in expr.chars().chain(std::iter::once(' ')) {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        end_word(&mut word, depth);
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
    }
    has_if && !has_else
}

/// Python methods on values (`s.upper()`, `d.keys()` …) from minijinja_contrib, except
/// `dict.items()`: Ansible turns its tuples into lists, so it renders as
/// `[['a', 1], ['b', 2]]`.
fn python_methods(
    state: &mut minijinja::State,
    value: &minijinja::Value,
    method: &str,
    args: &[minijinja::Value],
) -> std::result::Result<minijinja::Value, minijinja::Error> {
    if method == "items" && args.is_empty() && value.kind() == minijinja::value::ValueKind::Map {
        let pairs = value
            .try_iter()?
            .map(|k| {
                let v = value.get_item(&k)?;
                Ok(minijinja::Value::from(vec![k, v]))
            })
            .collect::<std::result::Result<Vec<_>, minijinja::Error>>()?;
        return Ok(minijinja::Value::from(pairs));
    }
    if let Some(v) = pymethods::call(value, method, args)? {
        return Ok(v);
    }
    if let Some(v) = mutable::on_immutable(state, value, method, args)? {
        return Ok(v);
    }
    if method == "format" {
        if let Some(f) = value.as_str() {
            limits::str_format("format", f, args)?;
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

impl Templar {
    /// Builds the environment with every filter, test and lookup registered.
    pub fn new() -> Templar {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .keep_trailing_newline(false)
                .build()
                .expect("default delimiters are valid"),
        );
        // Like Ansible, a `{{ }}` whose value is None writes nothing.
        env.set_formatter(|out, state, value| {
            native::record(state, value);
            if filters::strict::holds_undefined(value) {
                return Err(filters::strict::undefined_inside());
            }
            if value.is_none() {
                Ok(())
            } else {
                minijinja::escape_formatter(out, state, value)
            }
        });
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_recursion_limit(200);
        // Debug info lets errors name the undefined variable in release builds too.
        env.set_debug(true);
        minijinja_contrib::add_to_environment(&mut env);
        env.set_unknown_method_callback(python_methods);
        env.add_global("omit", OMIT);
        env.add_function(chain::CHAIN_FN, chain::chain);
        env.add_function("__kk_mut", mutable::kk_mut);
        filters::register(&mut env);
        datetime::register(&mut env);
        Templar { env }
    }

    /// A templar for generated templates (fuzzing): lookups that read the controller or
    /// run commands are errors.
    pub(crate) fn sandboxed() -> Templar {
        let mut t = Templar::new();
        lookups::register_pure(&mut t.env);
        t
    }

    /// The underlying environment (for filters that render files).
    pub fn env(&self) -> &Environment<'static> {
        &self.env
    }

    /// Evaluates a Jinja expression (no braces) to a value.
    pub fn eval_expr(&self, expr: &str, ctx: &minijinja::Value) -> Result<minijinja::Value> {
        filters::consumers::clear_note();
        depth::check(expr, true)?;
        let guarded = chain::guard_chains(expr, true);
        let compiled = self
            .env
            .compile_expression_owned(arith::rewrite_sub(&guarded, true).into_owned())
            .map_err(|e| convert_error(e, expr))?;
        let result = if mutable::rewrite::mutates(expr) {
            compiled.eval(mutable::MutCtx::wrap(ctx))
        } else {
            compiled.eval(ctx)
        };
        result.map_err(|e| explain_undefined(convert_error(e, expr), ctx))
    }

    /// Renders a string. A string that is exactly one `{{ expr }}` keeps the
    /// expression's type (a list stays a list); anything else becomes a string.
    pub fn render_str(&self, s: &str, ctx: &minijinja::Value) -> Result<Value> {
        if !is_template(s) {
            return Ok(Value::String(s.to_string()));
        }
        if let Some(expr) = single_expression(s) {
            let expr = escape_expr_strings(expr, false).0;
            let v = self
                .eval_expr(&expr, ctx)
                .map_err(|e| e.note(format!("in `{}`", s)))?;
            if v.is_undefined() {
                // Rendering as text fails with minijinja's explanation, which names the variable.
                self.render_text(s, ctx)?;
            }
            return match to_json(&v, s)? {
                Value::String(text) => Ok(Value::String(preserve_trailing_newlines(s, text))),
                other => Ok(other),
            };
        }
        depth::check(s, false)?;
        filters::consumers::clear_note();
        let escaped = escape_backslashes(s);
        let escaped = chain::guard_chains(&escaped, false);
        let escaped = arith::rewrite_sub(&escaped, false);
        let mutates = mutable::rewrite::mutates(&escaped);
        let escaped = if mutates {
            mutable::rewrite::rewrite(&escaped).into_owned().into()
        } else {
            escaped
        };
        let captured = self
            .env
            .template_from_str(&escaped)
            .and_then(|t| match mutates {
                true => t.render_captured(mutable::MutCtx::wrap(ctx)),
                false => t.render_captured(ctx),
            })
            .map_err(|e| explain_undefined(convert_error(e, &escaped), ctx))?;
        // One printed value and no other text keeps its type (Ansible 2.19's native concat).
        if let Some(v) = native::single_value(captured.state(), captured.output()) {
            return to_json(&v, s);
        }
        Ok(Value::String(preserve_trailing_newlines(
            s,
            captured.output().to_string(),
        )))
    }

    /// Renders a string template to text (the `template` module's path).
    /// Trailing newlines of the template are kept the way Ansible keeps them.
    pub fn render_text(&self, s: &str, ctx: &minijinja::Value) -> Result<String> {
        depth::check(s, false)?;
        let guarded = chain::guard_chains(s, false);
        let guarded = arith::rewrite_sub(&guarded, false);
        let (guarded, render_ctx) = mutable::prepare(guarded, ctx, false);
        self.env
            .render_str(&guarded, &render_ctx)
            .map(|r| preserve_trailing_newlines(s, r))
            .map_err(|e| explain_undefined(convert_error(e, s), ctx))
    }

    /// [`Templar::render_text`] for the text of a template FILE at `path`: its errors
    /// point at the file's own line and column (see [`convert_file_error`]). The
    /// template module's `trim_blocks`/`lstrip_blocks` other than Ansible's defaults
    /// (true, false) render with a copy of the environment under that syntax, through
    /// the same guards.
    pub fn render_file(
        &self,
        path: &std::path::Path,
        s: &str,
        ctx: &minijinja::Value,
        (trim_blocks, lstrip_blocks): (bool, bool),
    ) -> Result<String> {
        depth::check(s, false)?;
        let guarded = chain::guard_chains(s, false);
        let guarded = arith::rewrite_sub(&guarded, false);
        let other;
        let env = if trim_blocks && !lstrip_blocks {
            &self.env
        } else {
            let syntax = minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(trim_blocks)
                .lstrip_blocks(lstrip_blocks)
                .keep_trailing_newline(false)
                .build()
                .map_err(|e| convert_file_error(e, path, s))?;
            let mut env = self.env.clone();
            env.set_syntax(syntax);
            other = env;
            &other
        };
        // `{% include %}` and the like find their templates as the template module does.
        let with_loader;
        let env = if includes::loads_others(s) {
            let dirs = includes::dirs(
                |n| ctx.get_attr(n).ok().filter(|v| !v.is_undefined()),
                path,
                false,
            );
            with_loader = includes::with_loader(env, dirs);
            &with_loader
        } else {
            env
        };
        let (guarded, render_ctx) = mutable::prepare(guarded, ctx, includes::loads_others(s));
        env.render_str(&guarded, &render_ctx)
            .map(|r| preserve_trailing_newlines(s, r))
            // The rewrite adds no line breaks: lines match the file, columns nearly.
            .map_err(|e| convert_file_error(e, path, &guarded))
    }

    /// [`Templar::render_value`] that leaves out the list items and mapping values whose
    /// templates are undefined: ansible-core's terms of `with_first_found`, which drop
    /// them for backwards compatibility (a missing fact names no candidate file).
    pub fn render_value_omitting_undefined(
        &self,
        v: &Value,
        ctx: &minijinja::Value,
    ) -> Result<Option<Value>> {
        let keep = |r: Result<Option<Value>>| match r {
            Err(e) if e.kind == ErrorKind::Undefined => Ok(None),
            other => other,
        };
        Ok(match v {
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    if let Some(r) = keep(self.render_value_omitting_undefined(i, ctx))? {
                        out.push(r);
                    }
                }
                Some(Value::Array(out))
            }
            Value::Object(m) if unsafe_text::as_unsafe(v).is_none() => {
                let mut out = serde_json::Map::with_capacity(m.len());
                for (k, val) in m {
                    if let Some(r) = keep(self.render_value_omitting_undefined(val, ctx))? {
                        out.insert(k.clone(), r);
                    }
                }
                Some(Value::Object(out))
            }
            other => Some(self.render_value(other, ctx)?),
        })
    }

    /// A list item: as [`Templar::render_value`], except that an item that is one inline
    /// `if` without `else` whose condition is false (`"{{ ip6 if ipv6_stack }}"`) stays
    /// in the list as None, as ansible-core keeps its undefined result there until used
    /// (`| select` drops it); alone, such a template is an error as in ansible-core.
    fn render_item(&self, v: &Value, ctx: &minijinja::Value) -> Result<Value> {
        if let Some(expr) = v.as_str().and_then(single_expression) {
            if inline_if_without_else(expr) {
                let expr = escape_expr_strings(expr, false).0;
                if self.eval_expr(&expr, ctx)?.is_undefined() {
                    return Ok(Value::Null);
                }
            }
        }
        self.render_value(v, ctx)
    }

    /// Renders every string inside a value, recursively (keys too).
    pub fn render_value(&self, v: &Value, ctx: &minijinja::Value) -> Result<Value> {
        Ok(match v {
            Value::String(s) => self.render_str(s, ctx)?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| self.render_item(i, ctx))
                    .collect::<Result<_>>()?,
            ),
            Value::Object(m) => {
                if let Some(text) = unsafe_text::as_unsafe(v) {
                    return Ok(Value::String(text.to_string()));
                }
                let mut out = serde_json::Map::with_capacity(m.len());
                for (k, val) in m {
                    let key = if is_template(k) {
                        match self.render_str(k, ctx)? {
                            Value::String(s) => s,
                            other => other.to_string(),
                        }
                    } else {
                        k.clone()
                    };
                    out.insert(key, self.render_value(val, ctx)?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }
}

/// Converts plain data to a template value.
pub fn to_mj(v: &Value) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(v))
}

/// Converts a template result to plain data.
pub fn to_json(v: &minijinja::Value, source: &str) -> Result<Value> {
    if v.is_undefined() {
        return Err(Error::new(
            ErrorKind::Undefined,
            format!("`{}` evaluated to an undefined value", source),
        ));
    }
    if filters::strict::holds_undefined(v) {
        return Err(convert_error(filters::strict::undefined_inside(), source));
    }
    let stored = datetime::storable(v).map_err(|e| convert_error(e, source))?;
    serde_json::to_value(stored.as_ref().unwrap_or(v))
        .map_err(|e| Error::new(ErrorKind::Template, format!("{} (in `{}`)", e, source)))
}

/// Jinja truthiness of plain data.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().unwrap_or(0.0) != 0.0,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Where a minijinja error sits in a template file (the `template` module's `src`, a
/// `lookup('template')`): the file's own line and column, from the error's byte range
/// (its line alone when it has no range). `None` when minijinja gave neither.
pub fn file_span(e: &minijinja::Error, path: &std::path::Path, source: &str) -> Option<Span> {
    let (line, col) = match e.range().filter(|r| r.start <= source.len()) {
        Some(r) => {
            let before = source.get(..r.start)?;
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            (line, source[line_start..r.start].chars().count() + 1)
        }
        None => (e.line()?, 1),
    };
    Some(Span {
        file: crate::error::SourceFile::new(path, source),
        line,
        col,
    })
}

/// A minijinja error from rendering a template FILE: located at the file's own line and
/// column (the task that rendered it is for the caller to add as a note), without the
/// whole file quoted as [`convert_error`] quotes an inline template.
pub fn convert_file_error(e: minijinja::Error, path: &std::path::Path, source: &str) -> Error {
    let span = file_span(&e, path, source);
    let err = convert(e, None);
    match span {
        Some(s) => err.at(&s),
        None => err.note(format!("in template {}", path.display())),
    }
}

/// Turns a minijinja error into ours, keeping its explanation and the template text.
pub fn convert_error(e: minijinja::Error, source: &str) -> Error {
    convert(e, Some(source))
}

/// Adds to an undefined-variable error why the variables it names are undefined when
/// their own templates are the cause (see [`crate::vars::VarView::undefined_because`]).
fn explain_undefined(err: Error, ctx: &minijinja::Value) -> Error {
    if err.kind != ErrorKind::Undefined {
        return err;
    }
    let Some(view) = ctx.downcast_object_ref::<crate::vars::VarView>() else {
        return err;
    };
    let notes = view.undefined_because(&err.message);
    notes.into_iter().fold(err, Error::note)
}

/// [`convert_error`], quoting `source` (an inline template) when given.
fn convert(e: minijinja::Error, source: Option<&str>) -> Error {
    let kind = match e.kind() {
        minijinja::ErrorKind::UndefinedError => ErrorKind::Undefined,
        // Jinja finds no such attribute, so calling it is calling an undefined value.
        minijinja::ErrorKind::UnknownMethod => ErrorKind::Undefined,
        _ => ErrorKind::Template,
    };
    let detail = e
        .detail()
        .map(str::to_string)
        .unwrap_or_else(|| e.kind().to_string());
    let mut err = Error::new(kind, detail);
    match (source, e.range()) {
        (None, _) => {}
        (Some(source), Some(range)) => {
            if let Some(snippet) = source.get(range) {
                if !source.trim().eq(snippet.trim()) {
                    err = err.note(format!("at `{}` in `{}`", snippet, source.trim()));
                } else {
                    err = err.note(format!("in `{}`", source.trim()));
                }
            }
        }
        (Some(source), None) => err = err.note(format!("in `{}`", source.trim())),
    }
    // An error raised while lazily rendering a variable travels as the cause.
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        err = err.note(s.to_string());
        src = s.source();
    }
    // A filter that turned its result undefined explains the failure that followed.
    if let Some(note) = filters::consumers::take_note() {
        err = err.note(note);
    }
    if kind == ErrorKind::Undefined {
        err = err.help(
            "define the variable (inventory, vars, -e) or give a fallback with `| default(...)`",
        );
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    #[test]
    fn native_types_for_single_expressions() {
        let t = Templar::new();
        let ctx = to_mj(&serde_json::json!({"a": [1, 2], "n": 3}));
        assert_eq!(
            t.render_str("{{ a }}", &ctx).unwrap(),
            serde_json::json!([1, 2])
        );
        assert_eq!(
            t.render_str("{{ n + 1 }}", &ctx).unwrap(),
            serde_json::json!(4)
        );
        assert_eq!(
            t.render_str("n={{ n }}", &ctx).unwrap(),
            serde_json::json!("n=3")
        );
        assert_eq!(
            t.render_str("{{ n }}\n", &ctx).unwrap(),
            serde_json::json!(3)
        );
    }

    #[test]
    fn trailing_newlines_and_none_like_ansible() {
        let t = Templar::new();
        let ctx = to_mj(&serde_json::json!({"a": "hello", "n": 3, "z": null}));
        let r = |s: &str| t.render_str(s, &ctx).unwrap();
        assert_eq!(r("{{ a }}\n"), serde_json::json!("hello\n"));
        assert_eq!(r("x{{ a }}\n\n"), serde_json::json!("xhello\n\n"));
        assert_eq!(r(" {{ n }}"), serde_json::json!(" 3"));
        assert_eq!(r("{{ z }}"), serde_json::json!(null));
        assert_eq!(r("<{{ z }}> {{ [z] }}"), serde_json::json!("<> [None]"));
        let text = t
            .render_text("a\n{% if true %}b{% endif %}\n", &ctx)
            .unwrap();
        assert_eq!(text, "a\nb\n");
        assert_eq!(
            t.render_text("{% if true %}b\n{% endif %}", &ctx).unwrap(),
            "b\n"
        );
    }

    #[test]
    fn backslashes_in_expressions_like_ansible() {
        assert_eq!(
            escape_backslashes(
                r#"a\1 {{ x | f('\d', "\"") }} {% if '\n' %}{{ {'a': '\t'} }}{% endif %}"#
            ),
            r#"a\1 {{ x | f('\\d', "\\\"") }} {% if '\n' %}{{ {'a': '\\t'} }}{% endif %}"#
        );
        assert_eq!(
            escape_backslashes(r"{% raw %}{{ '\1' }}{% endraw %}"),
            r"{% raw %}{{ '\1' }}{% endraw %}"
        );
        let t = Templar::new();
        let ctx = to_mj(&serde_json::json!({"v": "k8s.io"}));
        assert_eq!(
            t.render_str(r"{{ v | regex_replace('(\w+)\.(\w+)', '\2/\1') }}", &ctx)
                .unwrap(),
            serde_json::json!("io/k8s")
        );
        assert_eq!(
            t.render_str(r"<{{ v | regex_replace('(\w+)\.(\w+)', '\2/\1') }}>", &ctx)
                .unwrap(),
            serde_json::json!("<io/k8s>")
        );
        let ctx = to_mj(&serde_json::json!({}));
        assert_eq!(
            t.render_str(r#"{{ 'a\'b' }} {{ "q\"" }}"#, &ctx).unwrap(),
            serde_json::json!(r#"a\'b q\""#)
        );
    }

    #[test]
    fn dict_items_are_lists() {
        let t = Templar::new();
        let ctx = to_mj(&serde_json::json!({"d": {"b": 2, "a": 1}}));
        assert_eq!(
            t.render_str("{{ d.items() }}", &ctx).unwrap(),
            serde_json::json!([["b", 2], ["a", 1]])
        );
        assert_eq!(
            t.render_str("{{ d.items() | list }} {{ d.keys() | list }}", &ctx)
                .unwrap(),
            serde_json::json!("[['b', 2], ['a', 1]] ['b', 'a']")
        );
        assert_eq!(
            t.render_str(
                "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                &ctx
            )
            .unwrap(),
            serde_json::json!("b=2;a=1;")
        );
    }

    #[test]
    fn nested_dict_literals_keep_their_type() {
        let t = Templar::new();
        let ctx = context! {};
        assert_eq!(
            t.render_str("{{ {'a': {'b': 1}} }}", &ctx).unwrap(),
            serde_json::json!({"a": {"b": 1}})
        );
        assert_eq!(
            t.render_str("{{ 1 }} and {{ 2 }}", &ctx).unwrap(),
            Value::from("1 and 2")
        );
    }

    #[test]
    fn default_and_defined_see_through_undefined_parents() {
        let t = Templar::new();
        let ctx = context! { a => context! { b => 1 } };
        let r = |s: &str| t.render_str(s, &ctx).unwrap();
        assert_eq!(r("{{ nope.x.y | default(3) }}"), Value::from(3));
        assert_eq!(r("{{ a.b.c.d | default('z') }}"), Value::from("z"));
        assert_eq!(r("{{ a.b | default(0) }}"), Value::from(1));
        assert_eq!(
            r("{{ nope.x is defined }} {{ a['b'] is defined }}"),
            Value::from("False True")
        );
        assert!(t
            .eval_condition(&Value::from("nope.x is undefined"), &ctx)
            .unwrap());
        // Without a guard an undefined parent is still an error that names it.
        let e = t.render_str("{{ nope.x }}", &ctx).unwrap_err();
        assert!(e.message.contains("nope"), "{}", e.message);
        assert!(t.eval_condition(&Value::from("nope.x == 1"), &ctx).is_err());
    }

    #[test]
    fn undefined_names_the_variable() {
        let t = Templar::new();
        let e = t.render_str("{{ nope }}", &context! {}).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Undefined);
        assert!(e.message.contains("nope"), "{}", e.render());
    }

    #[test]
    fn conditions() {
        let t = Templar::new();
        let ctx = to_mj(&serde_json::json!({"x": 2, "s": "yes"}));
        assert!(t.eval_condition(&serde_json::json!("x > 1"), &ctx).unwrap());
        assert!(!t
            .eval_condition(&serde_json::json!(["x > 1", "x > 5"]), &ctx)
            .unwrap());
        assert!(t.eval_condition(&serde_json::json!(true), &ctx).unwrap());
        // ansible-core 2.19: a result that is not a boolean is an error naming its type…
        let e = t.eval_condition(&serde_json::json!("s"), &ctx).unwrap_err();
        assert!(e.message.contains("type 'str' in `s`"), "{}", e.message);
        let e = t.eval_condition(&serde_json::json!("x"), &ctx).unwrap_err();
        assert!(e.message.contains("type 'int'"), "{}", e.message);
        assert!(t.eval_condition(&serde_json::json!(1), &ctx).is_err());
        // … a rendered `{{ }}` is read again as the expression, and `| bool` is one.
        assert!(t
            .eval_condition(&serde_json::json!("{{ s == 'yes' }}"), &ctx)
            .unwrap());
        assert!(t
            .eval_condition(&serde_json::json!("s | bool"), &ctx)
            .unwrap());
        // Jinja's truth where it is asked for (the constructed inventory's groups).
        assert!(t.eval_truth(&serde_json::json!("s"), &ctx).unwrap());
    }

    #[test]
    fn inline_if_without_else() {
        assert!(super::inline_if_without_else("a if b"));
        assert!(!super::inline_if_without_else("a if b else c"));
        assert!(!super::inline_if_without_else("x | map('y if z')"));
        assert!(!super::inline_if_without_else("[a if b]"));
        assert!(!super::inline_if_without_else("'if' ~ gift"));
    }
}
