//! The source rewrite for templates that change containers in place (see [`super`]):
//! `{% set x = E %}` binds `__kk_mut(E)` and `{% for x in E %}` iterates `__kk_mut(E)`.

use std::borrow::Cow;

use crate::template::tag_rewrite::{rewrite_tags, skip_string};

/// The methods that change a dict or list in place.
pub(crate) const METHODS: [&str; 12] = [
    ".append(",
    ".update(",
    ".pop(",
    ".extend(",
    ".insert(",
    ".remove(",
    ".setdefault(",
    ".clear(",
    ".popitem(",
    ".sort(",
    ".reverse(",
    ".__setitem__(",
];

/// True when the text may call a method that changes a container (then it renders with
/// changeable values; other templates are left exactly as they are).
pub(crate) fn mutates(src: &str) -> bool {
    src.contains(".") && METHODS.iter().any(|m| src.contains(m))
}

/// The rewritten template (borrowed when no tag needed a change).
pub(crate) fn rewrite(src: &str) -> Cow<'_, str> {
    rewrite_tags(src, false, rewrite_tag)
}

/// Identifier words at the top level of `expr` (outside strings and brackets), with
/// their byte ranges.
fn top_words(expr: &str) -> Vec<(usize, usize)> {
    let bytes = expr.as_bytes();
    let (mut out, mut depth, mut i) = (Vec::new(), 0i32, 0);
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\'' | b'"' => {
                i = skip_string(bytes, i, c);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let after_dot = start > 0 && bytes[start - 1] == b'.';
                if depth == 0 && !after_dot {
                    out.push((start, i));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn rewrite_tag(expr: &str) -> Option<String> {
    let words = top_words(expr);
    let (s, e) = *words.first()?;
    match &expr[s..e] {
        "set" => rewrite_set(expr, e),
        "for" => rewrite_for(expr, &words),
        _ => None,
    }
}

/// `set x = E` (or `set ns.x = E`) binds `__kk_mut(E)`; block sets and tuple targets
/// stay as they are.
fn rewrite_set(expr: &str, after_kw: usize) -> Option<String> {
    let rest = &expr[after_kw..];
    let eq = rest.find('=')?;
    let target = rest[..eq].trim();
    if rest[eq + 1..].starts_with('=') || !target.split('.').all(is_ident) {
        return None;
    }
    let value = rest[eq + 1..].trim();
    Some(format!("set {} = __kk_mut({})", target, value))
}

/// `for x in E [if C] [recursive]` iterates `__kk_mut(E)`.
fn rewrite_for(expr: &str, words: &[(usize, usize)]) -> Option<String> {
    let in_at = words.iter().position(|&(s, e)| &expr[s..e] == "in")?;
    let start = words[in_at].1;
    let end = words[in_at + 1..]
        .iter()
        .find(|&&(s, e)| matches!(&expr[s..e], "if" | "recursive"))
        .map_or(expr.len(), |&(s, _)| s);
    let iter = expr[start..end].trim();
    if iter.is_empty() {
        return None;
    }
    Some(format!(
        "{} __kk_mut({}) {}",
        &expr[..start],
        iter,
        &expr[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_set_and_for_tags() {
        assert_eq!(
            rewrite("{% set d = {'a': 1} %}{% set ns.x = [] %}{% set a, b = 1, 2 %}{% set t %}x{% endset %}"),
            "{% set d = __kk_mut({'a': 1}) %}{% set ns.x = __kk_mut([]) %}{% set a, b = 1, 2 %}{% set t %}x{% endset %}"
        );
        assert_eq!(
            rewrite("{% for k, v in d.items() if v is mapping -%}x{% endfor %}"),
            "{% for k, v in __kk_mut(d.items()) if v is mapping -%}x{% endfor %}"
        );
        // Macro arguments are passed as they are (see `super`).
        assert_eq!(
            rewrite("{%- macro inc(dct, key, inc=1) -%}"),
            "{%- macro inc(dct, key, inc=1) -%}"
        );
        assert!(mutates("{{ l.append(1) }}"));
        assert!(!mutates("{{ l | append }}"));
    }
}
