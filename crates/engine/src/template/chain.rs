//! Ansible's lenient lookups under `default` and `defined`.
//!
//! In Ansible `foo.bar.baz | default(1)` is 1 and `foo.bar is defined` is false even when
//! `foo` itself is undefined, while `{{ foo.bar }}` alone is an error. minijinja's strict
//! mode fails already at `.bar` on an undefined `foo`, and its chainable mode would hide
//! every other undefined use. So before compiling, each lookup chain that feeds `default`
//! (`d`) or an `is [not] defined|undefined` test is rewritten to a call of
//! `__kk_chain(foo, 'bar', 'baz')`, which yields undefined as soon as a step is missing.
//! Everything else stays strict.

use std::borrow::Cow;

use minijinja::Value;

use super::tag_rewrite::{rewrite_tags, skip_string};

/// The function the rewritten chains call.
pub const CHAIN_FN: &str = "__kk_chain";

/// Follows `keys` from `root`; undefined (not an error) once a step is missing or none.
pub fn chain(root: Value, keys: minijinja::value::Rest<Value>) -> Value {
    let mut cur = root;
    for key in keys.iter() {
        if cur.is_undefined() || cur.is_none() {
            return Value::UNDEFINED;
        }
        let next = match key.as_str() {
            Some(name) => cur.get_attr(name),
            None => cur.get_item(key),
        };
        cur = match next {
            Ok(v) => v,
            Err(_) => return Value::UNDEFINED,
        };
    }
    cur
}

/// Rewrites the guarded chains of a template (`{{ }}` and `{% %}` regions; `{% raw %}`
/// sections are left alone) or, with `whole_expr`, of a bare expression.
pub fn guard_chains(src: &str, whole_expr: bool) -> Cow<'_, str> {
    if !(src.contains("default") || src.contains("defined") || src.contains("d(")) {
        return Cow::Borrowed(src);
    }
    rewrite_tags(src, whole_expr, rewrite_expr)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// One step of a lookup chain: `.name` or `[expr]`.
enum Step<'a> {
    Attr(&'a str),
    Item(&'a str),
}

/// Rewrites one expression; `None` when nothing needed rewriting.
fn rewrite_expr(expr: &str) -> Option<String> {
    let bytes = expr.as_bytes();
    let mut out = String::with_capacity(expr.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    let mut changed = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\'' || b == b'"' {
            i = skip_string(bytes, i, b);
            continue;
        }
        let starts_word = is_ident_start(b)
            && (i == 0 || !(is_ident(bytes[i - 1]) || matches!(bytes[i - 1], b'.' | b']' | b')')));
        if !starts_word {
            i += 1;
            continue;
        }
        let root_end = i + bytes[i..].iter().take_while(|&&c| is_ident(c)).count();
        let (steps, chain_end) = parse_steps(expr, root_end);
        if steps.is_empty() || !guarded(&expr[chain_end..]) {
            i = root_end;
            continue;
        }
        out.push_str(&expr[copied..i]);
        out.push_str(CHAIN_FN);
        out.push('(');
        out.push_str(&expr[i..root_end]);
        for step in &steps {
            out.push_str(", ");
            match step {
                Step::Attr(name) => {
                    out.push('\'');
                    out.push_str(name);
                    out.push('\'');
                }
                Step::Item(inner) => {
                    out.push('(');
                    out.push_str(inner);
                    out.push(')');
                }
            }
        }
        out.push(')');
        copied = chain_end;
        i = chain_end;
        changed = true;
    }
    if !changed {
        return None;
    }
    out.push_str(&expr[copied..]);
    Some(out)
}

/// The `.name` / `[expr]` steps after a root identifier, and where they end.
fn parse_steps(expr: &str, mut i: usize) -> (Vec<Step<'_>>, usize) {
    let bytes = expr.as_bytes();
    let mut steps = Vec::new();
    loop {
        match bytes.get(i) {
            Some(b'.') if bytes.get(i + 1).is_some_and(|&c| is_ident_start(c)) => {
                let start = i + 1;
                let end = start + bytes[start..].iter().take_while(|&&c| is_ident(c)).count();
                steps.push(Step::Attr(&expr[start..end]));
                i = end;
            }
            Some(b'[') => {
                let mut depth = 0usize;
                let mut j = i;
                while j < bytes.len() {
                    match bytes[j] {
                        q @ (b'\'' | b'"') => {
                            j = skip_string(bytes, j, q);
                            continue;
                        }
                        b'[' | b'(' | b'{' => depth += 1,
                        b']' | b')' | b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                if j >= bytes.len()
                    || expr[i + 1..j].trim().is_empty()
                    || expr[i + 1..j].contains(':')
                {
                    // Unbalanced, empty or a slice: not a plain lookup.
                    return (Vec::new(), i);
                }
                steps.push(Step::Item(&expr[i + 1..j]));
                i = j + 1;
            }
            _ => break,
        }
    }
    // A call (`foo.get('x')`) is not a lookup chain.
    if bytes.get(i) == Some(&b'(') {
        return (Vec::new(), i);
    }
    (steps, i)
}

/// Whether the text after a chain makes it lenient: `| default`, `| d`, `is [not]
/// defined`, `is [not] undefined`.
fn guarded(after: &str) -> bool {
    let rest = after.trim_start();
    if let Some(f) = rest.strip_prefix('|') {
        let f = f.trim_start();
        let name_len = f.bytes().take_while(|&c| is_ident(c)).count();
        return matches!(&f[..name_len], "default" | "d");
    }
    let Some(t) = rest.strip_prefix("is") else {
        return false;
    };
    if !t.starts_with(char::is_whitespace) {
        return false;
    }
    let t = t.trim_start();
    let t = match t.strip_prefix("not") {
        Some(n) if n.starts_with(char::is_whitespace) => n.trim_start(),
        _ => t,
    };
    let name_len = t.bytes().take_while(|&c| is_ident(c)).count();
    matches!(&t[..name_len], "defined" | "undefined")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(s: &str) -> String {
        guard_chains(s, true).into_owned()
    }

    #[test]
    fn rewrites_only_guarded_chains() {
        assert_eq!(expr("a.b | default(1)"), "__kk_chain(a, 'b') | default(1)");
        assert_eq!(expr("a.b.c|d('x')"), "__kk_chain(a, 'b', 'c')|d('x')");
        assert_eq!(
            expr("not a['k'][i].z is defined"),
            "not __kk_chain(a, ('k'), (i), 'z') is defined"
        );
        assert_eq!(
            expr("a.b is not undefined"),
            "__kk_chain(a, 'b') is not undefined"
        );
        // Left alone: no guard, plain names, calls, slices, strings, other tests.
        for same in [
            "a.b == 1",
            "a | default(1)",
            "a.get('b') | default(1)",
            "a[1:2] | default([])",
            "'a.b | default(1)'",
            "a.b is string",
            "x | default(a.b)",
            "a.b | defaults",
        ] {
            assert_eq!(expr(same), same);
        }
    }

    #[test]
    fn templates_rewrite_inside_tags_only() {
        let t = "a.b | default(1) {{ a.b | default(1) }} {% if a.b is defined %}{% endif %}";
        assert_eq!(
            guard_chains(t, false),
            "a.b | default(1) {{ __kk_chain(a, 'b') | default(1) }} {% if __kk_chain(a, 'b') is defined %}{% endif %}"
        );
        assert_eq!(
            guard_chains("{{-a.b|d(1)  -}}", false),
            "{{-__kk_chain(a, 'b')|d(1)  -}}"
        );
        let raw = "{% raw %}{{ a.b | default(1) }}{% endraw %}";
        assert_eq!(guard_chains(raw, false), raw);
    }
}

#[cfg(test)]
mod non_ascii {
    use super::guard_chains;

    /// Found by kk's fuzzing: a non-ASCII character inside (or after an unclosed) tag
    /// that mentions `default` made the scan slice inside the character and panic.
    #[test]
    fn non_ascii_in_a_guarded_tag_does_not_panic() {
        for src in [
            "{{ a | default�('x') }}",
            "{{ a.b | default(1) ü",
            "{{ a.b | default('ü') }} ü {{ é | default(2) }}",
        ] {
            let _ = guard_chains(src, false);
            let _ = guard_chains(src, true);
        }
        assert_eq!(
            guard_chains("{{ a.b | default('ü') }}", false),
            "{{ __kk_chain(a, 'b') | default('ü') }}"
        );
    }
}
