//! Python `re` semantics: the pattern syntax the regex filters and tests take, and what the
//! text modules need (`replace`, `find`'s `contains`): patterns compiled with fancy-regex (look-around and backreferences, as Python has them), and
//! `re.subn` with Python's replacement templates and its (3.7+) empty-match rules, so a
//! user's Ansible regexp replaces the same text under kk.

use fancy_regex::{Captures, Regex};

/// Python's pattern syntax spelled for fancy-regex: the flags (`re.I`, `re.M`, `re.S`)
/// as inline groups, and Python's `\Z` (end of text) as `\z`. The one translation the
/// regex filters and tests and the text modules share.
pub fn translate(pattern: &str, ignorecase: bool, multiline: bool, dotall: bool) -> String {
    let mut p = String::new();
    for (on, flag) in [(ignorecase, "(?i)"), (multiline, "(?m)"), (dotall, "(?s)")] {
        if on {
            p.push_str(flag);
        }
    }
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('Z') => p.push_str("\\z"),
                Some(n) => {
                    p.push('\\');
                    p.push(n);
                }
                None => p.push('\\'),
            }
        } else {
            p.push(c);
        }
    }
    p
}

/// Compiles a Python pattern; `multiline`/`dotall` are Python's `re.M`/`re.S`.
pub fn compile(pattern: &str, multiline: bool, dotall: bool) -> Result<Regex, String> {
    Regex::new(&translate(pattern, false, multiline, dotall)).map_err(|e| e.to_string())
}

/// A piece of a parsed replacement template.
#[derive(Debug, PartialEq)]
enum Piece {
    Text(String),
    Group(usize),
}

/// Parses a Python replacement template (`\1`, `\g<1>`, `\g<name>`, `\n`, octal
/// escapes) against `re`'s groups, with Python's errors for bad ones.
fn parse_template(re: &Regex, template: &str) -> Result<Vec<Piece>, String> {
    let groups = re.captures_len();
    let chars: Vec<char> = template.chars().collect();
    let mut out = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    let flush = |text: &mut String, out: &mut Vec<Piece>| {
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(text)));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' {
            text.push(c);
            i += 1;
            continue;
        }
        let Some(&n) = chars.get(i + 1) else {
            return Err(format!("bad escape (end of pattern) at position {}", i));
        };
        match n {
            'g' => {
                let rest: String = chars[i + 2..].iter().collect();
                let name = rest
                    .strip_prefix('<')
                    .and_then(|r| r.split_once('>'))
                    .map(|(n, _)| n.to_string())
                    .ok_or_else(|| format!("missing group name at position {}", i + 2))?;
                let idx = if !name.is_empty() && name.chars().all(|c| c.is_ascii_digit()) {
                    let idx: usize = name.parse().unwrap_or(usize::MAX);
                    if idx >= groups {
                        return Err(format!(
                            "invalid group reference {} at position {}",
                            name,
                            i + 3
                        ));
                    }
                    idx
                } else {
                    re.capture_names()
                        .position(|c| c == Some(name.as_str()))
                        .ok_or_else(|| format!("unknown group name '{}'", name))?
                };
                flush(&mut text, &mut out);
                out.push(Piece::Group(idx));
                i += 4 + name.chars().count();
            }
            '0' => {
                // `\0` and up to two more octal digits: a character.
                let mut j = i + 2;
                let mut v = 0u32;
                while j < chars.len() && j < i + 4 && ('0'..='7').contains(&chars[j]) {
                    v = v * 8 + chars[j].to_digit(8).unwrap_or(0);
                    j += 1;
                }
                text.push(char::from_u32(v).unwrap_or('\0'));
                i = j;
            }
            '1'..='9' => {
                // Three octal digits are a character; otherwise one or two digits are a group.
                let oct = chars.get(i + 2..i + 4).is_some_and(|d| {
                    ('0'..='7').contains(&n) && d.iter().all(|c| ('0'..='7').contains(c))
                });
                if oct {
                    let v = chars[i + 1..i + 4]
                        .iter()
                        .fold(0u32, |v, c| v * 8 + c.to_digit(8).unwrap_or(0));
                    if v > 0o377 {
                        return Err(format!(
                            "octal escape value \\{} outside of range 0-0o377 at position {}",
                            chars[i + 1..i + 4].iter().collect::<String>(),
                            i
                        ));
                    }
                    text.push(char::from_u32(v).unwrap_or('\0'));
                    i += 4;
                    continue;
                }
                let mut j = i + 2;
                if chars.get(j).is_some_and(|c| c.is_ascii_digit()) {
                    j += 1;
                }
                let digits: String = chars[i + 1..j].iter().collect();
                let idx: usize = digits.parse().unwrap_or(usize::MAX);
                if idx >= groups {
                    return Err(format!(
                        "invalid group reference {} at position {}",
                        digits,
                        i + 1
                    ));
                }
                flush(&mut text, &mut out);
                out.push(Piece::Group(idx));
                i = j;
            }
            'a' => push2(&mut text, &mut i, '\x07'),
            'b' => push2(&mut text, &mut i, '\x08'),
            'f' => push2(&mut text, &mut i, '\x0c'),
            'n' => push2(&mut text, &mut i, '\n'),
            'r' => push2(&mut text, &mut i, '\r'),
            't' => push2(&mut text, &mut i, '\t'),
            'v' => push2(&mut text, &mut i, '\x0b'),
            '\\' => push2(&mut text, &mut i, '\\'),
            c if c.is_ascii_alphabetic() => {
                return Err(format!("bad escape \\{} at position {}", c, i));
            }
            c => {
                // Python keeps an unknown non-letter escape as it is written.
                text.push('\\');
                text.push(c);
                i += 2;
            }
        }
    }
    flush(&mut text, &mut out);
    Ok(out)
}

fn push2(text: &mut String, i: &mut usize, c: char) {
    text.push(c);
    *i += 2;
}

fn expand(pieces: &[Piece], caps: &Captures<'_, str>, out: &mut String) {
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            // An unmatched group is the empty string (Python 3.5+).
            Piece::Group(g) => out.push_str(caps.get(*g).map(|m| m.as_str()).unwrap_or("")),
        }
    }
}

/// Python's `re.subn(re, template, text)`: the new text and the number of replacements.
/// Empty matches follow Python 3.7+: one is allowed right after a non-empty match, and
/// after an empty match the search moves on one character. (Python also tries a
/// non-empty match at the same place first — `'|a'` on `"a"` — which this does not.)
pub fn subn(re: &Regex, template: &str, text: &str) -> Result<(String, usize), String> {
    let pieces = parse_template(re, template)?;
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    let mut pos = 0; // where the next search starts
    let mut copied = 0; // text[..copied] is in `out`
    let mut last_empty_at: Option<usize> = None;
    while pos <= text.len() {
        let caps = match re.captures_from_pos(text, pos).map_err(|e| e.to_string())? {
            Some(c) => c,
            None => break,
        };
        let m = caps.get(0).expect("group 0 always matches");
        if m.start() == m.end() && last_empty_at == Some(m.start()) {
            // The same empty match again: step over one character.
            match text[m.start()..].chars().next() {
                Some(c) => {
                    pos = m.start() + c.len_utf8();
                    continue;
                }
                None => break,
            }
        }
        out.push_str(&text[copied..m.start()]);
        expand(&pieces, &caps, &mut out);
        copied = m.end();
        n += 1;
        if m.start() == m.end() {
            last_empty_at = Some(m.start());
            pos = m.end();
        } else {
            last_empty_at = None;
            pos = m.end();
        }
    }
    out.push_str(&text[copied..]);
    Ok((out, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(p: &str, t: &str, s: &str) -> (String, usize) {
        subn(&compile(p, true, false).unwrap(), t, s).unwrap()
    }

    /// Expected values printed by CPython 3.11's `re.subn(re.compile(p, re.M), t, s)`.
    #[test]
    fn matches_python_subn() {
        assert_eq!(sub("x*", "-", "abxd"), ("-a-b--d-".into(), 5));
        assert_eq!(sub("a|", "-", "ab"), ("--b-".into(), 3));
        assert_eq!(sub("^", "-", "a\nb\n"), ("-a\n-b\n-".into(), 3));
        assert_eq!(sub("$", "-", "a\nb\n"), ("a-\nb-\n-".into(), 3));
        assert_eq!(sub("(?=b)", "-", "abab"), ("a-ba-b".into(), 2));
        assert_eq!(sub(r"\b", "-", "ab cd"), ("-ab- -cd-".into(), 4));
        assert_eq!(
            sub(r"^(\w+)=(?P<v>.*)$", r"\g<v>:\1\t\\", "a=1\nbb=2\n"),
            ("1:a\t\\\n2:bb\t\\\n".into(), 2)
        );
        assert_eq!(sub(r"(a)|b", r"[\1]", "ab"), ("[a][]".into(), 2));
        assert_eq!(sub("é", r"\101\0", "xéy"), ("xA\0y".into(), 1));
        assert_eq!(sub(r"(\d)\1", "<>", "1122 12"), ("<><> 12".into(), 2));
        assert_eq!(sub("z", "q", "abc"), ("abc".into(), 0));
        assert_eq!(sub(r"c\Z", r"\-", "abc"), ("ab\\-".into(), 1));
    }

    #[test]
    fn template_errors_are_pythons() {
        let re = compile("(a)", true, false).unwrap();
        assert_eq!(
            subn(&re, r"\2", "a").unwrap_err(),
            "invalid group reference 2 at position 1"
        );
        assert_eq!(
            subn(&re, r"\g<x>", "a").unwrap_err(),
            "unknown group name 'x'"
        );
        assert_eq!(
            subn(&re, r"x\q", "a").unwrap_err(),
            "bad escape \\q at position 1"
        );
        assert!(compile("(", true, false).is_err());
    }
}
