//! More path filters, as Python's `os.path` computes them on the controller: `normpath`,
//! `realpath`, `relpath`, `commonpath`, `expandvars`, `fileglob`, and Windows paths
//! (`ntpath`): `win_basename`, `win_dirname`, `win_splitdrive`.

use std::path::Path;

use minijinja::{Error, Value};

use super::{fail, items_of, py_str};

/// Python's `posixpath.normpath`.
pub(crate) fn py_normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let initial = if path.starts_with("//") && !path.starts_with("///") {
        2
    } else if path.starts_with('/') {
        1
    } else {
        0
    };
    let mut comps: Vec<&str> = Vec::new();
    for c in path.split('/') {
        if c.is_empty() || c == "." {
            continue;
        }
        if c != ".." || (initial == 0 && comps.is_empty()) || comps.last() == Some(&"..") {
            comps.push(c);
        } else if !comps.is_empty() {
            comps.pop();
        }
    }
    let joined = format!("{}{}", "/".repeat(initial), comps.join("/"));
    if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

fn abspath(p: &str) -> String {
    if p.starts_with('/') {
        py_normpath(p)
    } else {
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "/".into());
        py_normpath(&format!("{}/{}", cwd, p))
    }
}

pub(super) fn normpath(value: &Value) -> String {
    py_normpath(&py_str(value))
}

/// `realpath`: symbolic links resolved as far as the path exists, the rest normalised.
pub(super) fn realpath(value: &Value) -> String {
    let abs = abspath(&py_str(value));
    let mut head = Path::new(&abs).to_path_buf();
    let mut tail: Vec<String> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&head) {
            let mut out = real;
            for t in tail.iter().rev() {
                out.push(t);
            }
            return py_normpath(&out.display().to_string());
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_string_lossy().into_owned());
                head = parent.to_path_buf();
            }
            _ => return abs,
        }
    }
}

/// `relpath(start)`: Python's `os.path.relpath` (start defaults to the current directory).
pub(super) fn relpath(value: &Value, start: Option<Value>) -> Result<String, Error> {
    let path = py_str(value);
    if path.is_empty() {
        return Err(fail("relpath: no path specified"));
    }
    let start = start
        .filter(|s| !s.is_none())
        .map(|s| py_str(&s))
        .unwrap_or_else(|| ".".into());
    let (s, p) = (abspath(&start), abspath(&path));
    let sl: Vec<&str> = s.split('/').filter(|x| !x.is_empty()).collect();
    let pl: Vec<&str> = p.split('/').filter(|x| !x.is_empty()).collect();
    let common = sl.iter().zip(&pl).take_while(|(a, b)| a == b).count();
    let mut rel: Vec<&str> = vec![".."; sl.len() - common];
    rel.extend(&pl[common..]);
    Ok(if rel.is_empty() {
        ".".into()
    } else {
        rel.join("/")
    })
}

/// `commonpath`: the longest common sub-path of the paths (all absolute or all relative).
pub(super) fn commonpath(value: &Value) -> Result<String, Error> {
    let paths: Vec<String> = items_of(value, "commonpath", "the input")?
        .iter()
        .map(py_str)
        .collect();
    if paths.is_empty() {
        return Err(fail("commonpath() arg is an empty sequence"));
    }
    let abs = paths[0].starts_with('/');
    if paths.iter().any(|p| p.starts_with('/') != abs) {
        return Err(fail("Can't mix absolute and relative paths"));
    }
    let split: Vec<Vec<&str>> = paths
        .iter()
        .map(|p| {
            p.split('/')
                .filter(|c| !c.is_empty() && *c != ".")
                .collect()
        })
        .collect();
    let first = &split[0];
    let mut n = first.len();
    for s in &split[1..] {
        n = n.min(first.iter().zip(s).take_while(|(a, b)| a == b).count());
    }
    Ok(format!(
        "{}{}",
        if abs { "/" } else { "" },
        first[..n].join("/")
    ))
}

/// `expandvars`: `$NAME` and `${NAME}` from the controller's environment; unknown ones
/// stay as written (Python's `os.path.expandvars`).
pub(super) fn expandvars(value: &Value) -> String {
    let s = py_str(value);
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(p) = rest.find('$') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        let (name, len) = if let Some(b) = after.strip_prefix('{') {
            match b.find('}') {
                Some(e) => (&b[..e], e + 2),
                None => ("", 0),
            }
        } else {
            let e = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..e], e)
        };
        match std::env::var(name).ok().filter(|_| !name.is_empty()) {
            Some(v) => {
                out.push_str(&v);
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Python's `fnmatch` on one name: `*`, `?`, `[seq]`, `[!seq]`.
pub(crate) fn glob_match(pattern: &[char], name: &[char]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some(('*', rest)) => (0..=name.len()).any(|i| glob_match(rest, &name[i..])),
        Some(('?', rest)) => !name.is_empty() && glob_match(rest, &name[1..]),
        Some(('[', rest)) => {
            let Some(c) = name.first() else { return false };
            let (neg, body) = match rest.first() {
                Some('!') => (true, &rest[1..]),
                _ => (false, rest),
            };
            // A `]` first in the class is a member.
            let close = body.iter().skip(1).position(|c| *c == ']').map(|p| p + 1);
            let Some(close) = close.filter(|_| !body.is_empty()) else {
                return *c == '[' && glob_match(rest, &name[1..]);
            };
            let class = &body[..close];
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    hit |= class[i] <= *c && *c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == *c;
                    i += 1;
                }
            }
            hit != neg && glob_match(&body[close + 1..], &name[1..])
        }
        Some((p, rest)) => name.first() == Some(p) && glob_match(rest, &name[1..]),
    }
}

/// The regular files in `dir` whose names match `pattern` (hidden ones only when the
/// pattern starts with a dot), in the directory's order as Python's glob gives them.
pub(crate) fn glob_dir(dir: &Path, pattern: &str) -> Vec<std::path::PathBuf> {
    let pat: Vec<char> = pattern.chars().collect();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name: Vec<char> = e.file_name().to_string_lossy().chars().collect();
            (name.first() != Some(&'.') || pat.first() == Some(&'.')) && glob_match(&pat, &name)
        })
        .map(|e| dir.join(e.file_name()))
        .filter(|p| p.is_file())
        .collect()
}

/// `fileglob`: the regular files matching a pattern (wildcards in its last part).
pub(super) fn fileglob(value: &Value) -> Vec<String> {
    let s = py_str(value);
    let (dir, pattern) = match s.rsplit_once('/') {
        Some(("", p)) => ("/".to_string(), p.to_string()),
        Some((d, p)) => (d.to_string(), p.to_string()),
        None => (String::new(), s.clone()),
    };
    let base = if dir.is_empty() { "." } else { dir.as_str() };
    glob_dir(Path::new(base), &pattern)
        .into_iter()
        .map(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            match (dir.is_empty(), name) {
                (true, Some(n)) => n,
                (false, Some(n)) if dir == "/" => format!("/{}", n),
                (false, Some(n)) => format!("{}/{}", dir, n),
                _ => p.display().to_string(),
            }
        })
        .collect()
}

/// Python's `ntpath.splitdrive` (3.11): `C:` or a `\\server\share` prefix.
fn nt_splitdrive(p: &str) -> (String, String) {
    let chars: Vec<char> = p.chars().collect();
    if chars.len() >= 2 {
        let norm: Vec<char> = chars
            .iter()
            .map(|c| if *c == '/' { '\\' } else { *c })
            .collect();
        if norm[0] == '\\' && norm[1] == '\\' && norm.get(2) != Some(&'\\') {
            let find = |from: usize| {
                norm[from..]
                    .iter()
                    .position(|c| *c == '\\')
                    .map(|i| i + from)
            };
            let Some(index) = find(2) else {
                return (String::new(), p.to_string());
            };
            let index2 = find(index + 1);
            if index2 == Some(index + 1) {
                return (String::new(), p.to_string());
            }
            let index2 = index2.unwrap_or(chars.len());
            return (
                chars[..index2].iter().collect(),
                chars[index2..].iter().collect(),
            );
        }
        if norm[1] == ':' {
            return (chars[..2].iter().collect(), chars[2..].iter().collect());
        }
    }
    (String::new(), p.to_string())
}

/// Python's `ntpath.split`.
fn nt_split(p: &str) -> (String, String) {
    let (d, rest) = nt_splitdrive(p);
    let chars: Vec<char> = rest.chars().collect();
    let mut i = chars.len();
    while i > 0 && !matches!(chars[i - 1], '/' | '\\') {
        i -= 1;
    }
    let head: String = chars[..i].iter().collect();
    let tail: String = chars[i..].iter().collect();
    let trimmed = head.trim_end_matches(['/', '\\']);
    let head = if trimmed.is_empty() {
        head.clone()
    } else {
        trimmed.to_string()
    };
    (format!("{}{}", d, head), tail)
}

pub(super) fn win_basename(value: &Value) -> String {
    nt_split(&py_str(value)).1
}

pub(super) fn win_dirname(value: &Value) -> String {
    nt_split(&py_str(value)).0
}

pub(super) fn win_splitdrive(value: &Value) -> Value {
    let (d, p) = nt_splitdrive(&py_str(value));
    Value::from(vec![Value::from(d), Value::from(p)])
}
