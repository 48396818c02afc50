//! Ansible's line-editing rules, ported from `lineinfile.py`: where a line goes, what
//! replaces what, what is removed. Pure functions over the file's lines, so they are
//! tested without a host.

use regex::bytes::{Captures, Regex};

use crate::error::{Error, ErrorKind, Result};

/// Compiles a user's Python regular expression with Rust's engine, explaining the
/// difference when it does not compile.
pub(crate) fn compile(what: &str, pattern: &str) -> Result<Regex> {
    Regex::new(pattern).map_err(|e| {
        Error::new(ErrorKind::ModuleArgs, format!("{} {:?} is not a valid regular expression: {}", what, pattern, e))
            .help("the syntax is Python's minus look-around (`(?=`, `(?!`, `(?<=`) and backreferences (`\\1` in the pattern)")
    })
}

/// Splits content into lines keeping their `\n` (Python's `readlines`).
pub(crate) fn split_lines(content: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, b) in content.iter().enumerate() {
        if *b == b'\n' {
            lines.push(content[start..=i].to_vec());
            start = i + 1;
        }
    }
    if start < content.len() {
        lines.push(content[start..].to_vec());
    }
    lines
}

/// A line without its line ending (`rstrip('\r\n')`).
fn bare(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// Python's `match.expand(template)`: `\1`, `\g<1>`, `\g<name>`, `\n`, `\t`, `\\`.
fn expand(caps: &Captures, template: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < template.len() {
        let c = template[i];
        if c != b'\\' || i + 1 >= template.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let n = template[i + 1];
        if n.is_ascii_digit() {
            let mut j = i + 1;
            while j < template.len() && j < i + 3 && template[j].is_ascii_digit() {
                j += 1;
            }
            let idx: usize = std::str::from_utf8(&template[i + 1..j])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if let Some(m) = caps.get(idx) {
                out.extend_from_slice(m.as_bytes());
            }
            i = j;
        } else if n == b'g' && template.get(i + 2) == Some(&b'<') {
            match template[i + 3..].iter().position(|b| *b == b'>') {
                Some(end) => {
                    let name = String::from_utf8_lossy(&template[i + 3..i + 3 + end]).into_owned();
                    let m = match name.parse::<usize>() {
                        Ok(idx) => caps.get(idx),
                        Err(_) => caps.name(&name),
                    };
                    if let Some(m) = m {
                        out.extend_from_slice(m.as_bytes());
                    }
                    i += 4 + end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            match n {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'\\' => out.push(b'\\'),
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
            i += 2;
        }
    }
    out
}

/// What to do with the line, parsed and validated.
pub(crate) struct LineEdit {
    /// The line wanted (or, with state=absent, to remove).
    pub line: Option<Vec<u8>>,
    /// Lines matching this are replaced (present) or removed (absent).
    pub regexp: Option<Regex>,
    /// Like `regexp`, a plain substring.
    pub search_string: Option<Vec<u8>>,
    /// `EOF`, `BOF` or a regex: where a new line goes.
    pub insertafter: Option<String>,
    /// `BOF` or a regex: where a new line goes.
    pub insertbefore: Option<String>,
    /// Expand `\1`-style groups of `regexp` in `line`; do nothing without a match.
    pub backrefs: bool,
    /// Use the first match instead of the last.
    pub firstmatch: bool,
}

/// Ansible's `present()`: returns the new lines and the message ("" when unchanged).
pub(crate) fn present(
    mut lines: Vec<Vec<u8>>,
    e: &LineEdit,
) -> Result<(Vec<Vec<u8>>, &'static str)> {
    let line = e.line.clone().unwrap_or_default();
    let ins_pattern = match (&e.insertafter, &e.insertbefore) {
        (Some(a), _) if a != "BOF" && a != "EOF" => Some(a),
        (None, Some(b)) if b != "BOF" => Some(b),
        _ => None,
    };
    let bre_ins = ins_pattern
        .map(|p| compile("insertafter/insertbefore", p))
        .transpose()?;
    let mut index: [isize; 2] = [-1, -1];
    let mut caps_line: Option<usize> = None;
    if let Some(re) = &e.regexp {
        for (n, cur) in lines.iter().enumerate() {
            if re.is_match(bare(cur)) {
                index[0] = n as isize;
                caps_line = Some(n);
                if e.firstmatch {
                    break;
                }
            }
        }
    }
    if let Some(ss) = &e.search_string {
        for (n, cur) in lines.iter().enumerate() {
            if contains(cur, ss) {
                index[0] = n as isize;
                caps_line = Some(n);
                if e.firstmatch {
                    break;
                }
            }
        }
    }
    if caps_line.is_none() {
        for (n, cur) in lines.iter().enumerate() {
            if bare(cur) == line.as_slice() {
                index[0] = n as isize;
            } else if let Some(re) = &bre_ins {
                if re.is_match(bare(cur)) {
                    if e.insertafter.is_some() {
                        index[1] = n as isize + 1;
                        if e.firstmatch {
                            break;
                        }
                    }
                    if e.insertbefore.is_some() {
                        index[1] = n as isize;
                        if e.firstmatch {
                            break;
                        }
                    }
                }
            }
        }
    }
    let with_sep = |l: &[u8]| {
        let mut v = l.to_vec();
        v.push(b'\n');
        v
    };
    let mut msg = "";
    if index[0] != -1 {
        let i = index[0] as usize;
        let mut new_line = match (&e.regexp, caps_line, e.backrefs) {
            (Some(re), Some(n), true) => {
                let cur = bare(&lines[n]).to_vec();
                match re.captures(&cur) {
                    Some(c) => expand(&c, &line),
                    None => line.clone(),
                }
            }
            _ => line.clone(),
        };
        if !new_line.ends_with(b"\n") {
            new_line.push(b'\n');
        }
        if lines[i] != new_line {
            lines[i] = new_line;
            msg = "line replaced";
        }
    } else if e.backrefs {
        // Nothing matched, so the backreferences have nothing to fill them: do nothing.
    } else if e.insertbefore.as_deref() == Some("BOF") || e.insertafter.as_deref() == Some("BOF") {
        lines.insert(0, with_sep(&line));
        msg = "line added";
    } else if e.insertafter.as_deref() == Some("EOF") || index[1] == -1 {
        if let Some(last) = lines.last_mut() {
            if !last.ends_with(b"\n") && !last.ends_with(b"\r") {
                last.push(b'\n');
            }
        }
        lines.push(with_sep(&line));
        msg = "line added";
    } else if e.insertafter.is_some() && index[1] != -1 {
        let i = index[1] as usize;
        if lines.len() == i {
            if bare(&lines[i - 1]) != line.as_slice() {
                if let Some(last) = lines.last_mut() {
                    if !last.ends_with(b"\n") && !last.ends_with(b"\r") {
                        last.push(b'\n');
                    }
                }
                lines.push(with_sep(&line));
                msg = "line added";
            }
        } else if bare(&lines[i]) != line.as_slice() {
            lines.insert(i, with_sep(&line));
            msg = "line added";
        }
    } else {
        lines.insert(index[1].max(0) as usize, with_sep(&line));
        msg = "line added";
    }
    Ok((lines, msg))
}

/// Ansible's `absent()`: removes every matching line; returns the count.
pub(crate) fn absent(lines: Vec<Vec<u8>>, e: &LineEdit) -> (Vec<Vec<u8>>, usize) {
    let before = lines.len();
    let kept: Vec<Vec<u8>> = lines
        .into_iter()
        .filter(|cur| {
            let hit = if let Some(re) = &e.regexp {
                re.is_match(bare(cur))
            } else if let Some(ss) = &e.search_string {
                contains(cur, ss)
            } else {
                e.line.as_deref() == Some(bare(cur))
            };
            !hit
        })
        .collect();
    let n = before - kept.len();
    (kept, n)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}
