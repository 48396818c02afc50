//! Binary `-` as a function call, so datetimes can be subtracted.
//!
//! minijinja computes `a - b` only for numbers and offers no hook for other values, while
//! Ansible users write `((a | to_datetime) - (b | to_datetime)).total_seconds()`. So in a
//! template that can make a datetime (it mentions `to_datetime` or `now(`), each binary
//! `-` is rewritten before compiling to `__kk_sub(a, b)` ([`super::datetime::sub`]),
//! which subtracts datetimes and timedeltas and leaves every other operand to minijinja's
//! own `-`. The operands are found with Jinja's precedence: `+` and `-` bind looser than
//! `~`, `*`, `/`, `//`, `%`, `**`, unary minus, filters, tests, attribute and item
//! access, and tighter than comparisons, `not`, `and`, `or`, `if`/`else`, commas and
//! colons. Other templates are left exactly as written.

use std::borrow::Cow;

use super::datetime::SUB_FN;
use super::tag_rewrite::{rewrite_tags, skip_string};

/// True when the template can make a datetime, so its `-` must be rewritten.
fn can_make_datetimes(src: &str) -> bool {
    src.contains("to_datetime") || src.contains("now(")
}

/// Rewrites the binary `-` of a template (`{{ }}` and `{% %}` regions; `{% raw %}`
/// sections are left alone) or, with `whole_expr`, of a bare expression.
pub fn rewrite_sub(src: &str, whole_expr: bool) -> Cow<'_, str> {
    if !can_make_datetimes(src) || !src.contains('-') {
        return Cow::Borrowed(src);
    }
    rewrite_tags(src, whole_expr, rewrite_expr)
}

/// One token of an expression: its kind and byte range.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A name, number or string: ends an operand.
    Atom,
    /// `(`, `[` or `{`.
    Open,
    /// `)`, `]` or `}`.
    Close,
    /// `-`.
    Minus,
    /// `+`.
    Plus,
    /// Binds tighter than `+`/`-` (`*`, `/`, `~`, `|`, `.`, `**`, `is`…): stays in the operand.
    Tight,
    /// Binds looser (comparisons, `and`, `or`, `not`, `in`, `if`, `else`, `,`, `:`, `=`).
    Loose,
}

#[derive(Debug, Clone, Copy)]
struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
}

/// Splits an expression into tokens; `None` for text it does not understand.
fn tokens(expr: &str) -> Option<Vec<Tok>> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'\'' | b'"' => {
                i = skip_string(b, i, c);
                Kind::Atom
            }
            b'(' | b'[' | b'{' => {
                i += 1;
                Kind::Open
            }
            b')' | b']' | b'}' => {
                i += 1;
                Kind::Close
            }
            b'-' => {
                i += 1;
                Kind::Minus
            }
            b'+' => {
                i += 1;
                Kind::Plus
            }
            b'=' | b'!' | b'<' | b'>' => {
                i += 1;
                if b.get(i) == Some(&b'=') {
                    i += 1;
                }
                Kind::Loose
            }
            b',' | b':' => {
                i += 1;
                Kind::Loose
            }
            b'*' | b'/' | b'%' | b'~' | b'|' | b'.' => {
                i += 1;
                Kind::Tight
            }
            c if c.is_ascii_digit() => {
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'.'
                        // An exponent's sign (`1e-5`) is part of the number.
                        || (matches!(b[i], b'-' | b'+') && matches!(b[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
                Kind::Atom
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80)
                {
                    i += 1;
                }
                match &expr[start..i] {
                    "and" | "or" | "not" | "in" | "if" | "else" => Kind::Loose,
                    "is" => Kind::Tight,
                    _ => Kind::Atom,
                }
            }
            _ => return None,
        };
        out.push(Tok {
            kind,
            start,
            end: i,
        });
    }
    // `is not` is part of a test, not the `not` operator.
    for k in 1..out.len() {
        if out[k - 1].kind == Kind::Tight
            && &expr[out[k - 1].start..out[k - 1].end] == "is"
            && &expr[out[k].start..out[k].end] == "not"
        {
            out[k].kind = Kind::Tight;
        }
    }
    Some(out)
}

/// Rewrites one expression; `None` when nothing needed rewriting (or it did not scan).
fn rewrite_expr(expr: &str) -> Option<String> {
    if !expr.contains('-') {
        return None;
    }
    let toks = tokens(expr)?;
    let (text, changed) = group(expr, &toks)?;
    changed.then_some(text)
}

/// The rewritten text of a token range at one bracket depth, and whether it changed.
fn group(expr: &str, toks: &[Tok]) -> Option<(String, bool)> {
    // Items: each a token or a whole bracketed group (rewritten inside).
    let mut items: Vec<(Kind, String, usize)> = Vec::new();
    let mut changed = false;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if t.kind == Kind::Open {
            let mut depth = 0usize;
            let mut j = i;
            while j < toks.len() {
                match toks[j].kind {
                    Kind::Open => depth += 1,
                    Kind::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if j >= toks.len() {
                return None;
            }
            let (inner, c) = group(expr, &toks[i + 1..j])?;
            changed |= c;
            let text = format!(
                "{}{}{}",
                &expr[t.start..t.end],
                inner,
                &expr[toks[j].start..toks[j].end]
            );
            items.push((Kind::Atom, text, t.start));
            i = j + 1;
            continue;
        }
        if t.kind == Kind::Close {
            return None;
        }
        items.push((t.kind, expr[t.start..t.end].to_string(), t.start));
        i += 1;
    }
    // Split into segments at the looser operators; in each, fold `+`/`-` operands.
    let mut out = String::new();
    let mut seg: Vec<&(Kind, String, usize)> = Vec::new();
    let flush = |seg: &mut Vec<&(Kind, String, usize)>, out: &mut String, changed: &mut bool| {
        if let Some(s) = fold(seg) {
            *changed = true;
            out.push_str(&s);
        } else {
            out.push_str(&join(seg));
        }
        seg.clear();
    };
    for item in &items {
        if item.0 == Kind::Loose {
            flush(&mut seg, &mut out, &mut changed);
            if !matches!(item.1.as_str(), "," | ":") && !out.ends_with(' ') {
                out.push(' ');
            }
            out.push_str(&item.1);
            out.push(' ');
        } else {
            seg.push(item);
        }
    }
    flush(&mut seg, &mut out, &mut changed);
    Some((out.trim().to_string(), changed))
}

/// Items joined back with single spaces where the source had any.
fn join(items: &[&(Kind, String, usize)]) -> String {
    let mut s = String::new();
    let mut prev_end: Option<usize> = None;
    for (_, text, start) in items {
        if let Some(e) = prev_end {
            if *start > e {
                s.push(' ');
            }
        }
        s.push_str(text);
        prev_end = Some(start + text.len());
    }
    s
}

/// `a + b - c` as `__kk_sub(a + b, c)`; `None` when the segment has no binary `-`.
fn fold(seg: &[&(Kind, String, usize)]) -> Option<String> {
    // Indices of the binary `+`/`-`: after something that ends an operand.
    let mut ops = Vec::new();
    for (k, item) in seg.iter().enumerate() {
        if matches!(item.0, Kind::Minus | Kind::Plus) && k > 0 && seg[k - 1].0 == Kind::Atom {
            ops.push(k);
        }
    }
    if !ops.iter().any(|&k| seg[k].0 == Kind::Minus) {
        return None;
    }
    let mut bounds = vec![0];
    for &k in &ops {
        bounds.push(k);
        bounds.push(k + 1);
    }
    bounds.push(seg.len());
    let operands: Vec<String> = bounds.chunks(2).map(|c| join(&seg[c[0]..c[1]])).collect();
    if operands.iter().any(|o| o.is_empty()) {
        return None;
    }
    let mut acc = operands[0].clone();
    for (n, &k) in ops.iter().enumerate() {
        let rhs = &operands[n + 1];
        acc = if seg[k].0 == Kind::Minus {
            format!("{}({}, {})", SUB_FN, acc, rhs)
        } else {
            format!("{} + {}", acc, rhs)
        };
    }
    Some(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(s: &str) -> String {
        rewrite_expr(s).unwrap_or_else(|| s.to_string())
    }

    #[test]
    fn binary_minus_becomes_a_call_with_jinja_precedence() {
        assert_eq!(expr("a - b"), "__kk_sub(a, b)");
        assert_eq!(expr("(a|f) - (b|f)"), "__kk_sub((a|f), (b|f))");
        assert_eq!(
            expr("((a|f) - (b|f)).total_seconds()"),
            "(__kk_sub((a|f), (b|f))).total_seconds()"
        );
        assert_eq!(expr("a - b - c"), "__kk_sub(__kk_sub(a, b), c)");
        assert_eq!(expr("a + b - c"), "__kk_sub(a + b, c)");
        assert_eq!(expr("a - b + c"), "__kk_sub(a, b) + c");
        assert_eq!(
            expr("a * 2 - b.c[1] | int"),
            "__kk_sub(a * 2, b.c[1] | int)"
        );
        assert_eq!(expr("x > a - b and y"), "x > __kk_sub(a, b) and y");
        assert_eq!(expr("a - b is number"), "__kk_sub(a, b is number)");
        assert_eq!(expr("f(a - 1, -b)"), "f(__kk_sub(a, 1), -b)");
        assert_eq!(expr("-a - -b"), "__kk_sub(-a, -b)");
        assert_eq!(expr("a if x - 1 else b"), "a if __kk_sub(x, 1) else b");
        assert_eq!(expr("'a - b' ~ c"), "'a - b' ~ c");
        assert_eq!(expr("x not in a - b"), "x not in __kk_sub(a, b)");
    }

    #[test]
    fn templates_rewrite_inside_tags_only() {
        let t = "a - b {{ now() - x }} {%- set y = z - 1 -%} {{- c - d -}} {% raw %}{{ e - f }}{% endraw %}";
        assert_eq!(
            rewrite_sub(t, false),
            "a - b {{ __kk_sub(now(), x) }} {%- set y = __kk_sub(z, 1) -%} {{- __kk_sub(c, d) -}} {% raw %}{{ e - f }}{% endraw %}"
        );
        // Without a way to make datetimes, nothing changes.
        assert_eq!(rewrite_sub("{{ a - b }}", false), "{{ a - b }}");
    }
}
