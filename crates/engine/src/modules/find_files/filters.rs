//! `find`'s filters, as Ansible's `find.py` applies them: name patterns (shell globs with
//! `fnmatch` rules, or Python regexps matched at the start), age, size and mode. Pure
//! functions over an entry's listing, so they are tested without a host.

use crate::ansible::pyre;

/// Python's `fnmatch.translate` for one glob: `*`, `?`, `[seq]`, `[!seq]`; the whole name
/// must match.
pub fn glob_regex(pat: &str) -> regex::Regex {
    let chars: Vec<char> = pat.chars().collect();
    let mut out = String::from("(?s)^(?:");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                // Consecutive stars are one.
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => {
                let mut j = i;
                if chars.get(j) == Some(&'!') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    out.push_str("\\[");
                    continue;
                }
                let inner: String = chars[i..j].iter().collect();
                i = j + 1;
                let (neg, body) = match inner.strip_prefix('!') {
                    Some(b) => (true, b.to_string()),
                    None => (false, inner),
                };
                // Inside a class only `\`, `[`, `&`, `~`, `-` ranges and a leading `^`
                // need care in Rust's syntax.
                let mut cls = String::new();
                for (k, ch) in body.chars().enumerate() {
                    match ch {
                        '\\' | '[' | ']' | '&' | '~' => {
                            cls.push('\\');
                            cls.push(ch);
                        }
                        '^' if k == 0 => cls.push_str("\\^"),
                        ch => cls.push(ch),
                    }
                }
                out.push('[');
                if neg {
                    out.push('^');
                }
                out.push_str(&cls);
                out.push(']');
            }
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out.push_str(")$");
    // A class with a reversed range (`[z-a]`) is an error in Python too; nothing matches.
    regex::Regex::new(&out).unwrap_or_else(|_| regex::Regex::new("[^\\s\\S]").expect("valid"))
}

/// Name patterns: globs or Python regexps (`re.match`: anchored at the start only).
pub enum Matcher {
    /// `fnmatch` globs.
    Glob(Vec<regex::Regex>),
    /// Python regexps.
    Regex(Vec<fancy_regex::Regex>),
}

impl Matcher {
    /// Compiles `patterns`; a bad regexp is an error naming it.
    pub fn new(patterns: &[String], use_regex: bool) -> Result<Matcher, String> {
        if use_regex {
            patterns
                .iter()
                .map(|p| {
                    pyre::compile(&format!("\\A(?:{})", p), false, false)
                        .map_err(|e| format!("{:?} is not a valid regular expression: {}", p, e))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Matcher::Regex)
        } else {
            Ok(Matcher::Glob(
                patterns.iter().map(|p| glob_regex(p)).collect(),
            ))
        }
    }

    fn any(&self, name: &str) -> bool {
        match self {
            Matcher::Glob(v) => v.iter().any(|r| r.is_match(name)),
            Matcher::Regex(v) => v.iter().any(|r| r.is_match(name).unwrap_or(false)),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Matcher::Glob(v) => v.is_empty(),
            Matcher::Regex(v) => v.is_empty(),
        }
    }
}

/// Ansible's `pfilter`: a name matches a pattern and no exclude.
pub fn pfilter(name: &str, patterns: &Matcher, excludes: &Matcher) -> bool {
    if patterns.is_empty() && excludes.is_empty() {
        return true;
    }
    if patterns.is_empty() {
        return false;
    }
    patterns.any(name) && !excludes.any(name)
}

/// `age` in seconds from `30`, `2d`, `-1w` (units s m h d w); `None` when malformed.
pub fn parse_age(s: &str) -> Option<i64> {
    parse_unit(
        s,
        &[
            ('s', 1),
            ('m', 60),
            ('h', 3600),
            ('d', 86400),
            ('w', 604800),
        ],
    )
}

/// `size` in bytes from `10`, `2k`, `-1m` (units b k m g t, powers of 1024).
pub fn parse_size(s: &str) -> Option<i64> {
    parse_unit(
        s,
        &[
            ('b', 1),
            ('k', 1 << 10),
            ('m', 1 << 20),
            ('g', 1 << 30),
            ('t', 1 << 40),
        ],
    )
}

fn parse_unit(s: &str, units: &[(char, i64)]) -> Option<i64> {
    let s = s.to_ascii_lowercase();
    let (num, mult) = match s.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let m = units.iter().find(|(u, _)| *u == c)?.1;
            (&s[..s.len() - 1], m)
        }
        _ => (s.as_str(), 1),
    };
    let digits = num.strip_prefix('-').unwrap_or(num);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    num.parse::<i64>().ok()?.checked_mul(mult)
}

/// Ansible's `agefilter`: positive ages select entries at least that old, negative ones
/// entries at most that old.
pub fn age_ok(now: f64, stamp: f64, age: Option<i64>) -> bool {
    match age {
        None => true,
        Some(a) if a >= 0 => now - stamp >= a as f64,
        Some(a) => now - stamp <= a.unsigned_abs() as f64,
    }
}

/// Ansible's `sizefilter`: positive sizes select files at least that big, negative ones
/// files at most that big.
pub fn size_ok(size: u64, want: Option<i64>) -> bool {
    match want {
        None => true,
        Some(w) if w >= 0 => size >= w as u64,
        Some(w) => size <= w.unsigned_abs(),
    }
}

/// Ansible's `mode_filter`: the exact permission bits, or (not exact) any of them.
pub fn mode_ok(mode: u32, want: Option<u32>, exact: bool) -> bool {
    match want {
        None => true,
        Some(w) if exact => mode == w,
        Some(w) => mode & w != 0,
    }
}

/// Python's `os.path.normpath` for the absolute or relative paths `find` reports.
pub fn normpath(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let abs = p.starts_with('/');
    // POSIX keeps exactly two leading slashes.
    let lead = if abs && p.starts_with("//") && !p.starts_with("///") {
        "//"
    } else if abs {
        "/"
    } else {
        ""
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !abs {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let s = format!("{}{}", lead, parts.join("/"));
    if s.is_empty() {
        ".".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_follow_fnmatch() {
        let m = |p: &str, n: &str| glob_regex(p).is_match(n);
        assert!(m("*.txt", "a.txt") && !m("*.txt", "a.txt.bak"));
        assert!(m("*", ".hidden") && m("a?c", "abc") && !m("a?c", "ac"));
        assert!(m("[ab]*", "bx") && !m("[!ab]*", "bx") && m("[!ab]*", "cx"));
        assert!(m("[", "[") && m("x[", "x[") && m("a.b", "a.b") && !m("a.b", "axb"));
        assert!(m("[]]", "]") && m("[^a]", "^") && m("[a-c]", "b"));
        assert!(m("*\n", "x\n"));
    }

    #[test]
    fn regex_patterns_match_at_the_start() {
        let p = |v: &[&str]| {
            Matcher::new(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>(), true).unwrap()
        };
        let none = p(&[]);
        assert!(pfilter("foo.log", &p(&["foo"]), &none));
        assert!(!pfilter("xfoo", &p(&["foo"]), &none));
        assert!(pfilter("a.log", &p(&[r".*\.log$"]), &none));
        assert!(!pfilter("a.log", &p(&[r".*\.log$"]), &p(&["a"])));
        assert!(pfilter("anything", &none, &none));
        assert!(!pfilter("anything", &none, &p(&["z"])));
        assert!(Matcher::new(&["(".to_string()], true).is_err());
    }

    #[test]
    fn units_and_filters() {
        assert_eq!(parse_age("2d"), Some(172800));
        assert_eq!(parse_age("-1W"), Some(-604800));
        assert_eq!(parse_age("30"), Some(30));
        assert_eq!(parse_age("3x"), None);
        assert_eq!(parse_age("d"), None);
        assert_eq!(parse_size("1k"), Some(1024));
        assert_eq!(parse_size("-2m"), Some(-2 * 1048576));
        assert!(age_ok(100.0, 40.0, Some(60)) && !age_ok(100.0, 41.0, Some(60)));
        assert!(age_ok(100.0, 41.0, Some(-60)) && !age_ok(100.0, 39.0, Some(-60)));
        assert!(size_ok(1024, Some(1024)) && !size_ok(1023, Some(1024)));
        assert!(size_ok(10, Some(-10)) && !size_ok(11, Some(-10)));
        assert!(mode_ok(0o644, Some(0o644), true) && !mode_ok(0o640, Some(0o644), true));
        assert!(mode_ok(0o640, Some(0o004 | 0o040), false));
    }

    #[test]
    fn normpath_as_python() {
        assert_eq!(normpath("/a//b/./c/"), "/a/b/c");
        assert_eq!(normpath("/a/../b"), "/b");
        assert_eq!(normpath("a/../../b"), "../b");
        assert_eq!(normpath("//a"), "//a");
        assert_eq!(normpath("///a"), "/a");
        assert_eq!(normpath("/.."), "/");
    }
}
