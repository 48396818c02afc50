//! A bound on how deep one Jinja expression may nest, checked before minijinja compiles.
//!
//! minijinja's parser guards brackets and blocks (150 levels) but not chains:
//! `- - - … 1`, `not not …` recurse in its parser, and `1 + 1 + … + 1`, `x | f | f …`,
//! `a[0][0]…` or `x if y else …` build a tree as deep as the chain is long, which its
//! code generator and destructor then walk recursively. A few thousand links overflow a
//! 2 MiB thread stack (the size of tokio's workers) and abort the process, found by
//! kk's fuzzing (issue 15). Each `{{ }}`/`{% %}` tag (or a bare expression) may hold at
//! most [`MAX_OPERATORS`] operators, far more than any real expression and well within
//! the stack (about 1000 links still fit in a debug build).

use super::tag_rewrite::skip_string;
use crate::error::{Error, ErrorKind, Result};

/// The most operators (`+ - * / % ~ | . [ (`, `and or not if is in`) one tag may hold.
pub(crate) const MAX_OPERATORS: usize = 400;

/// The deepest nesting of brackets (`( [ {`) in one tag: minijinja's own guard stops
/// `((((…` near 75 levels but not calls, and `f(f(f(…` 100 deep overflowed a 2 MiB
/// stack in a debug build (found by the long seeded run); 50 is far beyond real use.
pub(crate) const MAX_NESTING: usize = 50;

/// Checks every tag of a template (`whole_expr`: the text is one bare expression).
pub(crate) fn check(src: &str, whole_expr: bool) -> Result<()> {
    // Cheap exit: too short to reach either limit.
    if src.len() <= MAX_NESTING {
        return Ok(());
    }
    if whole_expr {
        return check_tag(src, src);
    }
    let mut rest = src;
    while let Some(pos) = rest.find('{') {
        let here = &rest[pos..];
        let close = if here.starts_with("{{") {
            "}}"
        } else if here.starts_with("{%") {
            "%}"
        } else {
            rest = &here[1..];
            continue;
        };
        let body = &here[2..];
        let (tag, used) = tag_body(body, close);
        check_tag(tag, src)?;
        rest = &body[used..];
    }
    Ok(())
}

/// The tag's text up to its closing delimiter, and the bytes consumed. As minijinja's
/// lexer, a delimiter inside a string or brackets (`{{ {'a': {'b': 1}} }}`) does not close.
fn tag_body<'a>(body: &'a str, close: &str) -> (&'a str, usize) {
    let b = body.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i = skip_string(b, i, q);
                continue;
            }
            _ if depth == 0 && b[i..].starts_with(close.as_bytes()) => {
                return (&body[..i], i + close.len())
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    (body, body.len())
}

fn check_tag(tag: &str, src: &str) -> Result<()> {
    let b = tag.as_bytes();
    let (mut i, mut ops, mut depth, mut deepest) = (0, 0usize, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i = skip_string(b, i, q);
                continue;
            }
            c @ (b'[' | b'(' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
                if c != b'{' {
                    ops += 1;
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'|' => ops += 1,
            // A dot between digits is a float, not an attribute.
            b'.' if !b.get(i + 1).is_some_and(u8::is_ascii_digit) => ops += 1,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if matches!(&tag[start..i], "and" | "or" | "not" | "if" | "is" | "in") {
                    ops += 1;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if deepest > MAX_NESTING {
        let preview: String = tag.trim().chars().take(60).collect();
        return Err(Error::new(
            ErrorKind::Template,
            format!(
                "an expression nests brackets {} deep, more than the {} kk allows",
                deepest, MAX_NESTING
            ),
        )
        .note(format!(
            "at `{}…` in a template of {} bytes",
            preview,
            src.len()
        ))
        .help("split the expression: compute inner parts with `set` or in vars"));
    }
    if ops > MAX_OPERATORS {
        let preview: String = tag.trim().chars().take(60).collect();
        return Err(Error::new(
            ErrorKind::Template,
            format!(
                "an expression has {} operators, more than the {} kk allows in one tag",
                ops, MAX_OPERATORS
            ),
        )
        .note(format!(
            "at `{}…` in a template of {} bytes",
            preview,
            src.len()
        ))
        .help("split the expression: compute parts with `set` or in vars, then combine them"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};

    /// Runs on a 2 MiB stack, the size of tokio's worker threads.
    fn on_small_stack(src: String) -> Result<serde_json::Value, String> {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let ctx = to_mj(&serde_json::json!({"d": {}, "x": "a"}));
                let t = Templar::new();
                // Each entry point checks; reaching the end is the test (no overflow).
                let _ = t.render_text(&src, &ctx);
                let inner = src.trim_start_matches("{{").trim_end_matches("}}");
                let _ = t.eval_expr(inner, &ctx);
                t.render_str(&src, &ctx).map_err(|e| e.render())
            })
            .expect("thread")
            .join()
            .expect("no panic")
    }

    #[test]
    fn long_chains_are_an_error_not_a_stack_overflow() {
        let n = 20_000;
        for src in [
            format!("{{{{ {}1 }}}}", "- ".repeat(n)),
            format!("{{{{ {}1 }}}}", "not ".repeat(n)),
            format!("{{{{ 1{} }}}}", " + 1".repeat(n)),
            format!("{{{{ 'a'{} }}}}", " ~ 'a'".repeat(n)),
            format!("{{{{ true{} }}}}", " and true".repeat(n)),
            format!("{{{{ x{} }}}}", " | upper".repeat(n)),
            format!("{{{{ d{} }}}}", "['a']".repeat(n)),
            format!("{{{{ 1{} }}}}", " if 1 else 2".repeat(n)),
            format!(
                "{}{{{{ 1{} }}}}{}",
                "(".repeat(140),
                "+1".repeat(390),
                ")".repeat(140)
            ),
            format!("{{{{ {}1{} }}}}", "lookup(".repeat(100), ")".repeat(100)),
            format!("{{{{ {}1{} }}}}", "f(".repeat(n), ")".repeat(n)),
            // A `}}` inside a dict literal does not end the tag.
            format!(
                "{{{{ {{'a': {{'b': 1}}}} | combine({}1) }}}}",
                "- ".repeat(n)
            ),
        ] {
            match on_small_stack(src.clone()) {
                Ok(_) => assert!(src.len() < 4000, "{}", &src[..80]),
                Err(e) => assert!(
                    e.contains("operators, more than the 400")
                        || e.contains("brackets")
                        || e.contains("recursion"),
                    "{}",
                    e
                ),
            }
        }
    }

    #[test]
    fn ordinary_long_templates_pass() {
        let list = (0..2000)
            .map(|i| format!("'v{}'", i))
            .collect::<Vec<_>>()
            .join(", ");
        let src = format!("{{{{ [{}] | length }}}}", list);
        assert_eq!(on_small_stack(src).unwrap(), serde_json::json!(2000));
        let text = "{{ x | upper }} - text with - dashes and words if in is not ü. ".repeat(500);
        assert!(on_small_stack(text).is_ok());
    }
}
