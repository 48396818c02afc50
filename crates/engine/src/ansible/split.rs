//! Ansible's `split_args` for `key=value` strings (`-e 'a=1 b="x y"'`).

/// Jinja block delimiters whose insides never split: `{{ }}`, `{% %}`, `{# #}`.
const JINJA_BLOCKS: [(&str, &str); 3] = [("{{", "}}"), ("{%", "%}"), ("{#", "#}")];

/// Ansible's `split_args`: whitespace separates, except inside quotes and Jinja blocks.
pub fn split_args(args: &str) -> Result<Vec<String>, String> {
    let text = args.trim();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut depth = [0usize; 3];
    let mut prev: Option<char> = None;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if (c == '"' || c == '\'') && prev != Some('\\') {
            match quote {
                Some(q) if q == c => quote = None,
                None => quote = Some(c),
                _ => {}
            }
        }
        if quote.is_none() {
            let rest = &text[i..];
            let mut two = false;
            for (k, (open, close)) in JINJA_BLOCKS.iter().enumerate() {
                if rest.starts_with(open) {
                    depth[k] += 1;
                    two = true;
                } else if rest.starts_with(close) && depth[k] > 0 {
                    depth[k] -= 1;
                    two = true;
                }
                if two {
                    break;
                }
            }
            if two {
                cur.push(c);
                if let Some((_, n)) = iter.next() {
                    cur.push(n);
                    prev = Some(n);
                }
                continue;
            }
            if c.is_whitespace() && depth.iter().all(|d| *d == 0) {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                prev = Some(c);
                continue;
            }
        }
        cur.push(c);
        prev = Some(c);
    }
    if quote.is_some() || depth.iter().any(|d| *d != 0) {
        return Err("unbalanced quotes or Jinja braces".to_string());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::split_args;

    #[test]
    fn splits_outside_quotes_and_jinja() {
        assert_eq!(
            split_args(r#"a=1 b="x y" c={{ d | e }}"#).unwrap(),
            vec!["a=1", r#"b="x y""#, "c={{ d | e }}"]
        );
        assert!(split_args("a='x").is_err());
    }
}
