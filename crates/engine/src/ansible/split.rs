//! Ansible's `split_args` (`parsing/splitter.py`): how a `key=value` string (`-e`, a
//! task's free-form line) falls into pieces, and `join_args`, its inverse.

/// Ansible's `split_args` (`parsing/splitter.py`), step for step: splits on single spaces
/// and newlines, then glues back the pieces that fall inside quotes or a Jinja
/// `{{ }}`/`{% %}`/`{# #}` block. The pieces keep the whitespace they were split on (a run
/// of spaces stays on the piece before it, a newline ends the piece before it), so that
/// [`join_args`] rebuilds the text as written; a lone `\` outside quotes is a line
/// continuation and is dropped together with its line's newline.
///
/// The flag is false when a quote or block is still open at the end. Ansible then fails
/// ("failed at splitting arguments, either an unbalanced jinja2 block or quotes"); kk
/// keeps the pieces, where everything from the stray quote on is one piece of command
/// text, so a script with an apostrophe in a comment still runs as the shell reads it.
pub fn split_args(args: &str) -> (Vec<String>, bool) {
    let mut params: Vec<String> = Vec::new();
    if args.is_empty() {
        return (params, true);
    }
    let items: Vec<&str> = args.split('\n').collect();
    let mut quote_char: Option<char> = None;
    let mut inside_quotes = false;
    let (mut print_depth, mut block_depth, mut comment_depth) = (0i64, 0i64, 0i64);
    for (itemidx, item) in items.iter().enumerate() {
        let mut line_continuation = false;
        for (idx, token) in item.split(' ').enumerate() {
            if token.is_empty() && idx != 0 {
                match params.last_mut() {
                    Some(last) => last.push(' '),
                    None => params.push(" ".to_string()),
                }
                continue;
            }
            if token == "\\" && !inside_quotes {
                line_continuation = true;
                continue;
            }
            let was_inside_quotes = inside_quotes;
            quote_char = quote_state(token, quote_char);
            inside_quotes = quote_char.is_some();
            let in_block = print_depth != 0 || block_depth != 0 || comment_depth != 0;
            let mut appended = false;
            if inside_quotes && !was_inside_quotes && !in_block {
                params.push(token.to_string());
                appended = true;
            } else if in_block || inside_quotes || was_inside_quotes {
                let spacer = if idx > 0 { " " } else { "" };
                match params.last_mut() {
                    Some(last) => {
                        last.push_str(spacer);
                        last.push_str(token);
                    }
                    None => params.push(token.to_string()),
                }
                appended = true;
            }
            for (depth, open, close) in [
                (&mut print_depth, "{{", "}}"),
                (&mut block_depth, "{%", "%}"),
                (&mut comment_depth, "{#", "#}"),
            ] {
                let before = *depth;
                *depth += token.matches(open).count() as i64 - token.matches(close).count() as i64;
                if *depth < 0 {
                    *depth = 0;
                }
                if *depth != before && !appended {
                    params.push(token.to_string());
                    appended = true;
                }
            }
            let in_block = print_depth != 0 || block_depth != 0 || comment_depth != 0;
            if !in_block && !inside_quotes && !appended && !token.is_empty() {
                params.push(token.to_string());
            }
        }
        if items.len() > 1 && itemidx != items.len() - 1 && !line_continuation {
            match params.last_mut() {
                Some(last) => last.push('\n'),
                None => params.push("\n".to_string()),
            }
        }
    }
    let balanced = print_depth == 0 && block_depth == 0 && comment_depth == 0 && !inside_quotes;
    (params, balanced)
}

/// Ansible's `_get_quote_state`: the quote still open after `token`, given the one open
/// before it. A quote character right after a backslash in the same token does not count.
fn quote_state(token: &str, mut quote_char: Option<char>) -> Option<char> {
    let mut prev: Option<char> = None;
    for c in token.chars() {
        if (c == '"' || c == '\'') && prev != Some('\\') {
            match quote_char {
                Some(q) if q == c => quote_char = None,
                Some(_) => {}
                None => quote_char = Some(c),
            }
        }
        prev = Some(c);
    }
    quote_char
}

/// Ansible's `join_args`: the inverse of [`split_args`] (a space between pieces,
/// none after a piece that ends a line).
pub fn join_args(pieces: &[String]) -> String {
    let mut out = String::new();
    for p in pieces {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
        out.push_str(p);
    }
    out
}

/// [`split_args`] for `-e 'a=1 b="x y"'`: the pieces without the whitespace they keep,
/// and an error where Ansible fails (a quote or Jinja block left open).
pub fn split_words_strict(args: &str) -> Result<Vec<String>, String> {
    let (pieces, balanced) = split_args(args.trim());
    if !balanced {
        return Err("unbalanced quotes or Jinja braces".to_string());
    }
    Ok(pieces
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::split_words_strict;

    #[test]
    fn splits_outside_quotes_and_jinja() {
        assert_eq!(
            split_words_strict(r#"a=1 b="x y" c={{ d | e }}"#).unwrap(),
            vec!["a=1", r#"b="x y""#, "c={{ d | e }}"]
        );
        assert!(split_words_strict("a='x").is_err());
    }
}
