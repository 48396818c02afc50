//! Host patterns, as Ansible reads them: `web`, `web:db`, `web,db`, `web:&prod`,
//! `web:!db1`, `web[0]`, `web[-1]`, `web[1:3]` (inclusive end), `web*`, `~regex`.
//!
//! Parsing and evaluation are separate so a play's `hosts:` can be checked when the
//! playbook loads and evaluated later, against the inventory as it is then.
//!
//! Results come in Ansible's order: the terms' hosts in pattern order (unions first, then
//! intersections and exclusions, which keep that order), each group's hosts in the
//! group's own order, a glob's groups in inventory order before its hosts.
//!
//! Where we differ from Ansible on purpose: `group|random` is refused (kk is
//! deterministic), and a malformed subscript (`web[1:x]`) is an error instead of a
//! character class.

use indexmap::{IndexMap, IndexSet};
use regex::Regex;

use crate::error::{Error, ErrorKind, Result};

/// Names that mean the controller when the inventory does not list them (Ansible's `C.LOCALHOST`).
pub const LOCALHOST_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// How a term combines with the terms before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Plain term: its hosts are added.
    Union,
    /// `&term`: only hosts also matched by the term are kept.
    Intersect,
    /// `!term`: hosts matched by the term are removed.
    Exclude,
}

/// What a term's name part matches against group and host names.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// A plain word: that group, or else that host.
    Name(String),
    /// A shell glob (`*`, `?`, `[abc]`, `[!abc]`), compiled; matches groups and hosts.
    Glob(Regex),
    /// `~regex`, anchored at the start as Python's `re.match`; matches groups and hosts.
    Regex(Regex),
}

/// A `[..]` suffix selecting part of a term's hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subscript {
    /// `[N]` or `[-N]`: one host (negative counts from the end); out of range is an error.
    Index(i64),
    /// `[N:M]`, `[N:]`, `[:M]`: hosts N through M, **inclusive** (Ansible's rule).
    Range(usize, Option<usize>),
}

/// One comma- or colon-separated piece of a pattern.
#[derive(Debug, Clone)]
pub struct Term {
    /// How it combines with the others.
    pub op: Op,
    /// The piece as written, without `&`/`!` (for messages).
    pub text: String,
    /// What it matches.
    pub matcher: Matcher,
    /// Optional subscript.
    pub subscript: Option<Subscript>,
}

/// A parsed host pattern: terms in the order they are applied (unions, intersections, exclusions).
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The pattern as given.
    pub source: String,
    /// Terms, already reordered as Ansible applies them.
    pub terms: Vec<Term>,
}

fn bad(pattern: &str, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Syntax, format!("invalid host pattern `{}`: {}", pattern, what)).help(
        "host patterns are: `name`, `group`, `all`, `a:b` or `a,b` (union), `a:&b` (and), `a:!b` (but not), \
         `group[0]`, `group[-1]`, `group[1:3]`, globs like `web*`, or `~regex`",
    )
}

/// Splits a pattern into its pieces as Ansible's `split_host_pattern` does: on commas when
/// there are any, otherwise on colons (and whitespace) outside `[...]`, unless the whole
/// pattern is an IPv6 address.
fn split(pattern: &str) -> Vec<String> {
    // `group | random` is one (refused) term, not three.
    let joined: Vec<&str> = pattern.split('|').map(str::trim).collect();
    let joined = joined.join("|");
    let trimmed = joined.trim();
    if trimmed.contains(',') {
        return trimmed
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect();
    }
    if trimmed.parse::<std::net::Ipv6Addr>().is_ok() {
        return vec![trimmed.to_string()];
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    for c in trimmed.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ':' if depth == 0 => out.push(std::mem::take(&mut cur)),
            c if c.is_whitespace() && depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Parses a host pattern, checking its syntax fully (no inventory needed).
pub fn parse(pattern: &str) -> Result<Pattern> {
    let pieces = split(pattern);
    if pieces.is_empty() {
        return Err(bad(pattern, "it is empty"));
    }
    let mut unions = Vec::new();
    let mut intersections = Vec::new();
    let mut exclusions = Vec::new();
    for piece in pieces {
        let (op, rest) = match piece.chars().next() {
            Some('&') => (Op::Intersect, piece[1..].trim()),
            Some('!') => (Op::Exclude, piece[1..].trim()),
            _ => (Op::Union, piece.as_str()),
        };
        if rest.is_empty() {
            let sym = if op == Op::Intersect { "&" } else { "!" };
            return Err(bad(
                pattern,
                format!(
                    "`{}` must be followed by a group or host, e.g. `webservers:{}staging`",
                    sym, sym
                ),
            ));
        }
        let term = parse_term(pattern, op, rest)?;
        match op {
            Op::Union => unions.push(term),
            Op::Intersect => intersections.push(term),
            Op::Exclude => exclusions.push(term),
        }
    }
    if unions.is_empty() {
        // Ansible: only `&`/`!` terms apply to `all`.
        unions.push(Term {
            op: Op::Union,
            text: "all".to_string(),
            matcher: Matcher::Name("all".to_string()),
            subscript: None,
        });
    }
    let mut terms = unions;
    terms.extend(intersections);
    terms.extend(exclusions);
    Ok(Pattern {
        source: pattern.to_string(),
        terms,
    })
}

fn parse_term(pattern: &str, op: Op, text: &str) -> Result<Term> {
    if let Some(re) = text.strip_prefix('~') {
        if re.is_empty() {
            return Err(bad(pattern, "`~` must be followed by a regular expression"));
        }
        let compiled = Regex::new(&format!("^(?:{})", re))
            .map_err(|e| bad(pattern, format!("bad regular expression `{}`: {}", re, e)))?;
        return Ok(Term {
            op,
            text: text.to_string(),
            matcher: Matcher::Regex(compiled),
            subscript: None,
        });
    }
    if let Some(bar) = text.find('|') {
        let after = text[bar + 1..].trim();
        if after == "random" {
            return Err(bad(
                pattern,
                format!(
                    "`{}` is not supported: kk selects hosts deterministically; use `{}[0]` for one host",
                    text,
                    text[..bar].trim()
                ),
            ));
        }
        return Err(bad(pattern, format!("unexpected `|` in `{}`", text)));
    }
    let (base, subscript) = split_subscript(pattern, text)?;
    if base.is_empty() {
        return Err(bad(
            pattern,
            format!("`{}` has a subscript but no group before it", text),
        ));
    }
    let matcher = if base.contains(['*', '?', '[']) {
        Matcher::Glob(glob_to_regex(pattern, base)?)
    } else if base.contains([']', '&', '!', '~']) {
        return Err(bad(pattern, format!("unexpected character in `{}`", base)));
    } else {
        Matcher::Name(base.to_string())
    };
    Ok(Term {
        op,
        text: text.to_string(),
        matcher,
        subscript,
    })
}

/// Splits `name[sub]` into `name` and the parsed subscript. A trailing `[...]` holding
/// only digits, `-` and `:` (or any `:`) is a subscript and must be well-formed;
/// anything else (`[abc]`) is left to the glob.
fn split_subscript<'a>(pattern: &str, text: &'a str) -> Result<(&'a str, Option<Subscript>)> {
    if !text.ends_with(']') {
        return Ok((text, None));
    }
    let Some(open) = text.rfind('[') else {
        return Err(bad(pattern, format!("`]` without `[` in `{}`", text)));
    };
    let inner = &text[open + 1..text.len() - 1];
    let looks_numeric = !inner.is_empty()
        && inner
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == ':');
    if !(looks_numeric || inner.contains(':')) {
        return Ok((text, None));
    }
    let base = &text[..open];
    let expected = "expected `[N]`, `[-N]`, `[N:M]`, `[N:]` or `[:M]` with whole numbers";
    let sub = if let Some((a, b)) = inner.split_once(':') {
        let start = if a.is_empty() {
            0
        } else {
            a.parse::<usize>().map_err(|_| {
                bad(
                    pattern,
                    format!("bad subscript `[{}]`: {}", inner, expected),
                )
            })?
        };
        let end = if b.is_empty() {
            None
        } else {
            Some(b.parse::<usize>().map_err(|_| {
                bad(
                    pattern,
                    format!("bad subscript `[{}]`: {}", inner, expected),
                )
            })?)
        };
        Subscript::Range(start, end)
    } else if let Ok(i) = inner.parse::<i64>() {
        Subscript::Index(i)
    } else if let Some((a, b)) = inner.split_once('-') {
        return Err(bad(
            pattern,
            format!(
                "`[{}]` ranges are written `[{}:{}]` (both ends included)",
                inner, a, b
            ),
        ));
    } else {
        return Err(bad(
            pattern,
            format!("bad subscript `[{}]`: {}", inner, expected),
        ));
    };
    Ok((base, Some(sub)))
}

/// Translates a shell glob to an anchored regex (Python's `fnmatch.translate`, case-sensitive).
fn glob_to_regex(pattern: &str, glob: &str) -> Result<Regex> {
    let mut re = String::from("^(?s:");
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let close = chars[i + 1..]
                    .iter()
                    .enumerate()
                    // A `]` right after `[` or `[!` is a literal member, as in fnmatch.
                    .position(|(j, c)| *c == ']' && !(j == 0 || (j == 1 && chars[i + 1] == '!')))
                    .map(|j| i + 1 + j)
                    .ok_or_else(|| bad(pattern, format!("unclosed `[` in `{}`", glob)))?;
                let body: String = chars[i + 1..close].iter().collect();
                let (neg, body) = match body.strip_prefix('!') {
                    Some(b) => (true, b.to_string()),
                    None => (false, body),
                };
                re.push('[');
                if neg {
                    re.push('^');
                }
                for c in body.chars() {
                    if matches!(c, '\\' | '[' | ']' | '^' | '&' | '~') {
                        re.push('\\');
                    }
                    re.push(c);
                }
                re.push(']');
                i = close;
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push_str(")$");
    Regex::new(&re).map_err(|e| bad(pattern, format!("bad glob `{}`: {}", glob, e)))
}

impl Matcher {
    fn is_match(&self, name: &str) -> bool {
        match self {
            Matcher::Name(n) => n == name,
            Matcher::Glob(re) | Matcher::Regex(re) => re.is_match(name),
        }
    }
}

impl Pattern {
    /// Evaluates the pattern.
    ///
    /// `all` is every inventory host in order; `groups` maps each group (including
    /// `all` and `ungrouped`) to its hosts. Names in [`LOCALHOST_NAMES`] select the
    /// implicit `localhost` when nothing else matches them. The result is de-duplicated
    /// and in Ansible's order (`InventoryManager._evaluate_patterns`): a host where its
    /// pattern term first brings it, each term's hosts in the order it matches them.
    pub fn evaluate(
        &self,
        all: &IndexSet<String>,
        groups: &IndexMap<String, Vec<String>>,
    ) -> Result<Vec<String>> {
        let mut hosts: IndexSet<String> = IndexSet::new();
        for term in &self.terms {
            let matched = self.match_term(term, all, groups)?;
            match term.op {
                Op::Union => hosts.extend(matched),
                Op::Intersect => {
                    let keep: IndexSet<String> = matched.into_iter().collect();
                    hosts.retain(|h| keep.contains(h));
                }
                Op::Exclude => {
                    for h in matched {
                        hosts.shift_remove(&h);
                    }
                }
            }
        }
        Ok(hosts.into_iter().collect())
    }

    fn match_term(
        &self,
        term: &Term,
        all: &IndexSet<String>,
        groups: &IndexMap<String, Vec<String>>,
    ) -> Result<Vec<String>> {
        let mut results: IndexSet<String> = IndexSet::new();
        match &term.matcher {
            Matcher::Name(name) if term.subscript.is_none() && all.contains(name) => {
                // A plain host name wins over a group of the same name (Ansible).
                results.insert(name.clone());
            }
            Matcher::Name(name) => {
                if let Some(members) = groups.get(name) {
                    results.extend(members.iter().cloned());
                } else if all.contains(name) {
                    results.insert(name.clone());
                }
            }
            m => {
                for (g, members) in groups {
                    if m.is_match(g) {
                        results.extend(members.iter().cloned());
                    }
                }
                results.extend(all.iter().filter(|h| m.is_match(h)).cloned());
            }
        }
        if results.is_empty() {
            if let Matcher::Name(name) = &term.matcher {
                if LOCALHOST_NAMES.contains(&name.as_str()) {
                    results.insert("localhost".to_string());
                }
            }
        }
        let results: Vec<String> = results.into_iter().collect();
        apply_subscript(&self.source, term, results)
    }
}

fn apply_subscript(pattern: &str, term: &Term, hosts: Vec<String>) -> Result<Vec<String>> {
    let Some(sub) = term.subscript else {
        return Ok(hosts);
    };
    if hosts.is_empty() {
        return Ok(hosts);
    }
    let n = hosts.len();
    match sub {
        Subscript::Index(i) => {
            let idx = if i < 0 { n as i64 + i } else { i };
            if idx < 0 || idx >= n as i64 {
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!(
                        "host pattern `{}`: `{}` is out of range, it has {} host{} (index 0 to {}, or -1 to -{})",
                        pattern,
                        term.text,
                        n,
                        if n == 1 { "" } else { "s" },
                        n - 1,
                        n
                    ),
                ));
            }
            Ok(vec![hosts[idx as usize].clone()])
        }
        Subscript::Range(start, end) => {
            let end = end.map(|e| e.min(n - 1)).unwrap_or(n - 1);
            if start > end {
                return Ok(Vec::new());
            }
            Ok(hosts[start..=end].to_vec())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv() -> (IndexSet<String>, IndexMap<String, Vec<String>>) {
        let all: IndexSet<String> = ["web1", "web2", "web3", "db1", "db2", "lb.example.com"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut groups = IndexMap::new();
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        groups.insert("all".to_string(), all.iter().cloned().collect());
        groups.insert("ungrouped".to_string(), v(&["lb.example.com"]));
        groups.insert("web".to_string(), v(&["web1", "web2", "web3"]));
        groups.insert("db".to_string(), v(&["db2", "db1"]));
        groups.insert("prod".to_string(), v(&["web1", "db1"]));
        groups.insert("empty".to_string(), v(&[]));
        (all, groups)
    }

    fn sel(p: &str) -> Vec<String> {
        let (all, groups) = inv();
        parse(p).unwrap().evaluate(&all, &groups).unwrap()
    }

    fn err(p: &str) -> String {
        let (all, groups) = inv();
        match parse(p) {
            Err(e) => e.render(),
            Ok(pat) => pat.evaluate(&all, &groups).unwrap_err().render(),
        }
    }

    #[test]
    fn names_groups_and_all() {
        assert_eq!(sel("web2"), ["web2"]);
        assert_eq!(sel("web"), ["web1", "web2", "web3"]);
        assert_eq!(sel("all").len(), 6);
        assert_eq!(sel("*").len(), 6);
        assert_eq!(sel("ungrouped"), ["lb.example.com"]);
        assert_eq!(sel("nosuch"), Vec::<String>::new());
        assert_eq!(sel("empty"), Vec::<String>::new());
    }

    #[test]
    fn set_operations_in_ansible_order() {
        // Pattern order, each group in its own order (db is db2, db1).
        assert_eq!(sel("db:web1"), ["db2", "db1", "web1"]);
        assert_eq!(sel("db,web1"), ["db2", "db1", "web1"]);
        assert_eq!(sel(" db , web1 "), ["db2", "db1", "web1"]);
        assert_eq!(sel("web1:db:web"), ["web1", "db2", "db1", "web2", "web3"]);
        assert_eq!(sel("web:&prod"), ["web1"]);
        assert_eq!(sel("web:!prod"), ["web2", "web3"]);
        // Exclusions apply last even when written first; intersections after unions.
        assert_eq!(sel("!web1:web"), ["web2", "web3"]);
        assert_eq!(sel("&prod:web:db"), ["web1", "db1"]);
        assert_eq!(sel("db:web:&prod"), ["db1", "web1"]);
        // Only exclusions: applied to all.
        assert_eq!(sel("!web"), ["db1", "db2", "lb.example.com"]);
        assert_eq!(sel("web:db:&prod:!db1"), ["web1"]);
    }

    #[test]
    fn subscripts_are_inclusive() {
        assert_eq!(sel("web[0]"), ["web1"]);
        assert_eq!(sel("web[-1]"), ["web3"]);
        assert_eq!(sel("db[0]"), ["db2"]); // the group's own order
        assert_eq!(sel("web[1:2]"), ["web2", "web3"]);
        assert_eq!(sel("web[1:]"), ["web2", "web3"]);
        assert_eq!(sel("web[:1]"), ["web1", "web2"]);
        assert_eq!(sel("web[0:10]"), ["web1", "web2", "web3"]);
        assert_eq!(sel("web[2:1]"), Vec::<String>::new());
        assert_eq!(sel("web[0]:db[-1]"), ["web1", "db1"]);
        assert_eq!(sel("nosuch[0]"), Vec::<String>::new());
    }

    #[test]
    fn globs_and_regex() {
        assert_eq!(sel("web*"), ["web1", "web2", "web3"]);
        assert_eq!(sel("*.example.com"), ["lb.example.com"]);
        assert_eq!(sel("?b1"), ["db1"]);
        // A trailing all-digit bracket is an index, as in Ansible, not a character class.
        assert!(err("web[12]").contains("out of range"));
    }

    #[test]
    fn char_classes_and_regex() {
        assert_eq!(sel("web[!1]*"), ["web2", "web3"]);
        assert_eq!(sel("d[ab]*"), ["db2", "db1"]); // group db matches, in its order
        assert_eq!(sel("~web[12]"), ["web1", "web2"]);
        assert_eq!(sel("~(web|db)1"), ["web1", "db1"]);
        // Globs match group names too: `d*` matches group `db` and hosts db1, db2.
        // The group's hosts first (db2, db1), then the matching hosts not already there.
        assert_eq!(sel("d*"), ["db2", "db1"]);
        assert_eq!(sel("pro?"), ["web1", "db1"]);
    }

    #[test]
    fn localhost_is_implicit() {
        assert_eq!(sel("localhost"), ["localhost"]);
        assert_eq!(sel("127.0.0.1"), ["localhost"]);
        assert_eq!(sel("::1"), ["localhost"]);
        assert_eq!(sel("localhost:web[0]"), ["localhost", "web1"]);
        assert_eq!(sel("web[0]:localhost"), ["web1", "localhost"]);
        assert!(!sel("all").contains(&"localhost".to_string()));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(
            err("web[1:x]").contains("bad subscript `[1:x]`"),
            "{}",
            err("web[1:x]")
        );
        assert!(
            err("a:&").contains("`&` must be followed"),
            "{}",
            err("a:&")
        );
        assert!(
            err("a:!").contains("`!` must be followed"),
            "{}",
            err("a:!")
        );
        assert!(
            err("web|random").contains("not supported"),
            "{}",
            err("web|random")
        );
        assert!(
            err("web | random").contains("`web[0]`"),
            "{}",
            err("web | random")
        );
        assert!(err("web[1-2]").contains("`[1:2]`"), "{}", err("web[1-2]"));
        assert!(err("").contains("empty"), "{}", err(""));
        assert!(
            err("~(").contains("bad regular expression"),
            "{}",
            err("~(")
        );
        assert!(err("web[").contains("unclosed `[`"), "{}", err("web["));
        assert!(err("[0]").contains("no group before it"), "{}", err("[0]"));
        let e = err("web[3]");
        assert!(e.contains("out of range") && e.contains("3 hosts"), "{}", e);
        assert!(err("web[-4]").contains("out of range"));
    }

    #[test]
    fn splitting() {
        assert_eq!(split("a:b"), ["a", "b"]);
        assert_eq!(split("a[1:2]:b"), ["a[1:2]", "b"]);
        assert_eq!(split("fe80::1"), ["fe80::1"]);
        assert_eq!(split("a,b:c"), ["a", "b:c"]);
        assert_eq!(split("a,,b,"), ["a", "b"]);
    }
}
