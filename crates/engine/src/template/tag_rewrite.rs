//! The walk over a template's tags that kk's source rewrites share.
//!
//! minijinja offers no hook for Ansible's lenient `default` chains ([`super::chain`]) or
//! for subtracting datetimes ([`super::arith`]), so both rewrite the expressions of a
//! template before it is compiled. Both rewrite only the inside of `{{ }}` and `{% %}`
//! tags and leave everything else as written: the text between tags, `{# #}` comments,
//! the inside of `{% raw %}` sections, and each tag's whitespace control (`{{-`, `-}}`)
//! and the spaces around its expression.

use std::borrow::Cow;

/// Applies `rewrite` to each tag's expression of `src` or, with `whole_expr`, to `src` as
/// one bare expression. `rewrite` gets the expression without the tag's whitespace
/// control and surrounding spaces, and answers `None` when it leaves it as it is;
/// `Cow::Borrowed` when nothing changed.
pub(crate) fn rewrite_tags(
    src: &str,
    whole_expr: bool,
    mut rewrite: impl FnMut(&str) -> Option<String>,
) -> Cow<'_, str> {
    if whole_expr {
        return match rewrite(src) {
            Some(s) => Cow::Owned(s),
            None => Cow::Borrowed(src),
        };
    }
    let mut out = String::with_capacity(src.len() + 16);
    let mut rest = src;
    let mut changed = false;
    while let Some(pos) = rest.find('{') {
        out.push_str(&rest[..pos]);
        let here = &rest[pos..];
        let close = if here.starts_with("{{") {
            "}}"
        } else if here.starts_with("{%") {
            "%}"
        } else if here.starts_with("{#") {
            "#}"
        } else {
            out.push('{');
            rest = &here[1..];
            continue;
        };
        let end = find_close(&here[2..], close)
            .map(|e| e + 2)
            .unwrap_or(here.len());
        let body = &here[2..end];
        out.push_str(&here[..2]);
        let is_raw = close == "%}"
            && body
                .trim_start_matches(['-', '+'])
                .trim_start()
                .starts_with("raw");
        // Whitespace control (`{{-`, `-}}`) and the spaces inside it stay as written.
        let lead = body.len() - body.trim_start_matches(['-', '+']).len();
        let trail = if body.ends_with('-') || body.ends_with('+') {
            1
        } else {
            0
        };
        let inner = &body[lead..body.len().saturating_sub(trail).max(lead)];
        let expr = inner.trim();
        match (close != "#}" && !is_raw).then(|| rewrite(expr)).flatten() {
            Some(new) => {
                changed = true;
                let ws_before = inner.len() - inner.trim_start().len();
                out.push_str(&body[..lead + ws_before]);
                out.push_str(&new);
                out.push_str(&body[lead + ws_before + expr.len()..]);
            }
            None => out.push_str(body),
        }
        rest = &here[end..];
        if is_raw {
            let stop = rest.find("endraw").unwrap_or(rest.len());
            out.push_str(&rest[..stop]);
            rest = &rest[stop..];
        }
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(src)
    }
}

/// Where `close` ends a tag body, skipping string literals.
fn find_close(body: &str, close: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"') => i = skip_string(bytes, i, q),
            _ if bytes[i..].starts_with(close.as_bytes()) => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The index just past the string literal (quoted by `quote`, with backslash escapes)
/// starting at `start`; the end of `bytes` when it is not closed.
pub(crate) fn skip_string(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == quote {
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::rewrite_tags;

    fn upper(s: &str) -> Option<String> {
        s.contains('x').then(|| s.to_uppercase())
    }

    #[test]
    fn rewrites_tag_expressions_only_keeping_whitespace_control() {
        let t = "x {{ x }} {%- if x -%} {{-x+}} {# x #} {{ 'y' }} {{ '}}x' }} {% raw %}{{ x }}{% endraw %}";
        assert_eq!(
            rewrite_tags(t, false, upper),
            "x {{ X }} {%- IF X -%} {{-X+}} {# x #} {{ 'y' }} {{ '}}X' }} {% raw %}{{ x }}{% endraw %}"
        );
        assert!(matches!(
            rewrite_tags("{{ y }} x", false, upper),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(rewrite_tags(" x ", true, upper), " X ");
        // An unclosed tag runs to the end.
        assert_eq!(rewrite_tags("{{ x ü", false, upper), "{{ X Ü");
    }
}
