//! Jinja2's HTML filters that minijinja lacks: `xmlattr` and `urlize`, written to give
//! Jinja2 3.1's output byte for byte (MarkupSafe's escaping, its URL and e-mail rules,
//! `rel="noopener"` by default).

use std::sync::LazyLock;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, Value};
use regex::Regex;

use super::{fail, py_str};

/// MarkupSafe's `escape` (also `forceescape`'s).
pub(super) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `dict | xmlattr(autospace=True)`: `key="value"` pairs, None and undefined values left
/// out, a leading space when there is anything and `autospace`.
pub(super) fn xmlattr(value: Value, autospace: Option<bool>) -> Result<Value, Error> {
    if value.kind() != ValueKind::Map {
        return Err(fail(format!(
            "xmlattr: expected a mapping, got {}",
            super::py_type(&value)
        )));
    }
    let mut parts = Vec::new();
    for key in value.try_iter()? {
        let v = value.get_item(&key)?;
        if v.is_none() || v.is_undefined() {
            continue;
        }
        let k = py_str(&key);
        if k.chars()
            .any(|c| c.is_ascii_whitespace() || matches!(c, '/' | '>' | '='))
        {
            return Err(fail(format!(
                "Invalid character in attribute name: '{}'",
                k
            )));
        }
        parts.push(format!("{}=\"{}\"", escape(&k), escape(&py_str(&v))));
    }
    let mut rv = parts.join(" ");
    if autospace.unwrap_or(true) && !rv.is_empty() {
        rv.insert(0, ' ');
    }
    Ok(Value::from(rv))
}

static HTTP_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)^(
            (https?://|www\.)(([\w%-]+\.)+)?([a-z]{2,63}|xn--[\w%]{2,59})
          | ([\w%-]{2,63}\.)+(com|net|int|edu|gov|org|info|mil)
          | (https?://)((([\d]{1,3})(\.[\d]{1,3}){3})|(\[([\da-f]{0,4}:){2}([\da-f]{0,4}:?){1,6}\]))
        )(?::[\d]{1,5})?(?:[/?\#]\S*)?$",
    )
    .expect("a valid regex")
});
static EMAIL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\S+@\w[\w.-]*\.\w+$").expect("a valid regex"));
static SCHEME_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-zA-Z][\w+.-]*:(//)?$").expect("a valid regex"));
static HEAD_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([(<]|&lt;)+").expect("a valid regex"));
static TAIL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([)>.,\n]|&gt;)+$").expect("a valid regex"));

/// `text | urlize(trim_url_limit=None, nofollow=False, target=None, rel=None,
/// extra_schemes=None)`.
pub(super) fn urlize(value: Value, trim: Option<usize>, kwargs: Kwargs) -> Result<Value, Error> {
    let trim = match kwargs.get::<Option<usize>>("trim_url_limit")? {
        Some(t) => Some(t),
        None => trim,
    };
    let nofollow = kwargs.get::<Option<bool>>("nofollow")?.unwrap_or(false);
    let target = kwargs.get::<Option<String>>("target")?;
    let rel = kwargs.get::<Option<String>>("rel")?;
    let extra: Vec<String> = kwargs
        .get::<Option<Vec<String>>>("extra_schemes")?
        .unwrap_or_default();
    kwargs.assert_all_used()?;
    for s in &extra {
        if !SCHEME_RE.is_match(s) {
            return Err(fail(format!("'{}' is not a valid URI scheme prefix.", s)));
        }
    }
    let mut rel_parts: std::collections::BTreeSet<String> = rel
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if nofollow {
        rel_parts.insert("nofollow".into());
    }
    rel_parts.insert("noopener".into());
    let rel = rel_parts.into_iter().collect::<Vec<_>>().join(" ");
    let rel_attr = format!(" rel=\"{}\"", escape(&rel));
    let target_attr = target
        .filter(|t| !t.is_empty())
        .map(|t| format!(" target=\"{}\"", escape(&t)))
        .unwrap_or_default();
    let trim_url = |x: &str| -> String {
        match trim {
            Some(n) if x.chars().count() > n => {
                format!("{}...", x.chars().take(n).collect::<String>())
            }
            _ => x.to_string(),
        }
    };
    let text = escape(&py_str(&value));
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let ws = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..ws]);
        rest = &rest[ws..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        if word.is_empty() {
            continue;
        }
        let (mut head, mut middle, mut tail) = ("", word.to_string(), String::new());
        if let Some(m) = HEAD_RE.find(word) {
            head = m.as_str();
            middle = word[m.end()..].to_string();
        }
        if let Some(m) = TAIL_RE.find(&middle.clone()) {
            tail = m.as_str().to_string();
            middle.truncate(m.start());
        }
        for (open, close) in [("(", ")"), ("<", ">"), ("&lt;", "&gt;")] {
            let opens = middle.matches(open).count();
            if opens <= middle.matches(close).count() {
                continue;
            }
            for _ in 0..opens.min(tail.matches(close).count()) {
                let Some(i) = tail.find(close) else { break };
                let cut = i + close.len();
                middle.push_str(&tail[..cut]);
                tail = tail[cut..].to_string();
            }
        }
        let linked = if HTTP_RE.is_match(&middle) {
            let href = if middle.starts_with("https://") || middle.starts_with("http://") {
                middle.clone()
            } else {
                format!("https://{}", middle)
            };
            format!(
                "<a href=\"{}\"{}{}>{}</a>",
                href,
                rel_attr,
                target_attr,
                trim_url(&middle)
            )
        } else if let Some(addr) = middle
            .strip_prefix("mailto:")
            .filter(|a| EMAIL_RE.is_match(a))
        {
            format!("<a href=\"{}\">{}</a>", middle, addr)
        } else if middle.contains('@')
            && !middle.starts_with("www.")
            && !middle.contains(':')
            && EMAIL_RE.is_match(&middle)
        {
            format!("<a href=\"mailto:{}\">{}</a>", middle, middle)
        } else {
            let mut m = middle.clone();
            for s in &extra {
                if m != *s && m.starts_with(s.as_str()) {
                    m = format!("<a href=\"{}\"{}{}>{}</a>", m, rel_attr, target_attr, m);
                }
            }
            m
        };
        out.push_str(head);
        out.push_str(&linked);
        out.push_str(&tail);
    }
    Ok(Value::from(out))
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};

    #[test]
    fn as_jinja2() {
        let t = Templar::new();
        let r = |s: &str| t.render_str(s, &to_mj(&serde_json::json!({}))).unwrap();
        // Expected texts printed by Jinja2 3.1 (ansible-core 2.19's).
        assert_eq!(
            r(r#"{{ {'class': 'x', 'id': none, 'title': 'a"b<&>', 'n': 3} | xmlattr }}|"#),
            r#" class="x" title="a&#34;b&lt;&amp;&gt;" n="3"|"#
        );
        assert_eq!(
            r("{{ 'see http://example.com/x?a=1&b=2. and www.foo.org, mail me@x.org or https://a.b/c) (http://q.r/s) <b>' | urlize }}"),
            r#"see <a href="http://example.com/x?a=1&amp;b=2" rel="noopener">http://example.com/x?a=1&amp;b=2</a>. and <a href="https://www.foo.org" rel="noopener">www.foo.org</a>, mail <a href="mailto:me@x.org">me@x.org</a> or https://a.b/c) (http://q.r/s) &lt;b&gt;"#
        );
        assert_eq!(
            r("{{ 'go to http://x.org now' | urlize(nofollow=true, target='_blank') }}"),
            r#"go to <a href="http://x.org" rel="nofollow noopener" target="_blank">http://x.org</a> now"#
        );
    }
}
