//! Shell words: splitting a command line as Python's `shlex.split` does and quoting a
//! word for `/bin/sh`.

/// Splits a command line into words the way Python's `shlex.split` does (what Ansible's
/// `command` and its SSH arguments use). Not the `shlex` crate: that one drops a word
/// starting with `#` and the rest of its line as a comment (Python's `split` keeps it),
/// and refuses an unclosed quote (here it closes at the end).
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some('"') | Some('\\') | Some('$') | Some('`') => {
                                cur.push(chars.next().unwrap())
                            }
                            _ => cur.push('\\'),
                        },
                        _ => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Quotes a string for a POSIX shell (single quotes, `'` written `'\''`). Not the
/// `shlex` crate's quoting: that one also quotes `=`, `,` and `%` and switches to double
/// quotes around `'`; kk's scripts keep `K=V`, `user:group` and `a,b` bare. (The
/// template filter `quote` is Python's `shlex.quote`, another spelling again.)
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Python's `shlex.quote`: what Ansible's modules use when they show a command line
/// (`'` is written `'"'"'`, so programs that read quotes but not backslashes, such as
/// rsync's `--rsh`, split it right too).
pub fn shlex_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || "_@%+=:,./-".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\"'\"'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/etc/hosts"), "/etc/hosts");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn quoting_differs_from_the_shlex_crate() {
        for s in [
            "K=V",
            "root:root",
            "a,b",
            "/etc/hosts",
            "a b",
            "it's",
            "50%",
        ] {
            let ours = shell_quote(s);
            let theirs = shlex::try_quote(s).unwrap();
            let same = ["root:root", "/etc/hosts", "a b"].contains(&s);
            assert_eq!(ours == theirs, same, "{}: {} vs {}", s, ours, theirs);
        }
    }

    #[test]
    fn words() {
        assert_eq!(
            split_words(r#"echo "a b" 'c d' e\ f"#),
            vec!["echo", "a b", "c d", "e f"]
        );
        assert_eq!(split_words("  ls   -l "), vec!["ls", "-l"]);
        assert_eq!(split_words(r#"echo "x\"y""#), vec!["echo", "x\"y"]);
    }

    #[test]
    fn words_differ_from_the_shlex_crate() {
        // The same where both read the line alike.
        let line = r#"echo "a b" 'c d' e\ f"#;
        assert_eq!(Some(split_words(line)), shlex::split(line));
        // Python's shlex.split (Ansible) has no comments; the crate drops them.
        assert_eq!(split_words("echo a #b c"), vec!["echo", "a", "#b", "c"]);
        assert_eq!(shlex::split("echo a #b c").unwrap(), vec!["echo", "a"]);
        // An unclosed quote ends at the end of the line here; the crate refuses it.
        assert_eq!(split_words("echo 'a b"), vec!["echo", "a b"]);
        assert_eq!(shlex::split("echo 'a b"), None);
    }
}
