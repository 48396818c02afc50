//! The script's output as sections and dumped files, and the small Python look-alikes
//! (`int()`, `re.search`, `str.capitalize` …) every collector port reads it with.
//!
//! Kept apart so that each collector sees the host only through [`Raw`]: what the script
//! did not print is simply absent, never an error.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use indexmap::IndexMap;
use regex::Regex;

use super::SECTION;

/// The script's output split into its sections and, for `files`, into files.
pub(super) struct Raw<'a> {
    sections: HashMap<&'a str, Vec<&'a str>>,
    /// Path → its lines, in dump order. Only the first block of a path counts: overlapping
    /// globs may dump a file twice.
    pub(super) files: IndexMap<&'a str, Vec<&'a str>>,
}

impl<'a> Raw<'a> {
    pub(super) fn new(output: &'a str) -> Raw<'a> {
        let mut sections: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut files: IndexMap<&str, Vec<&str>> = IndexMap::new();
        let mut current: Option<&str> = None;
        let mut last_path: Option<&str> = None;
        let mut skipping = false;
        for line in output.lines() {
            if let Some(name) = line.strip_prefix(SECTION) {
                let name = name.trim();
                sections.entry(name).or_default();
                current = Some(name);
                last_path = None;
                continue;
            }
            match current {
                Some("files") => {
                    let Some((path, rest)) = line.split_once(':') else {
                        continue;
                    };
                    if last_path != Some(path) {
                        skipping = files.contains_key(path);
                        last_path = Some(path);
                    }
                    if !skipping {
                        files.entry(path).or_default().push(rest);
                    }
                }
                Some(name) => sections.entry(name).or_default().push(line),
                None => {}
            }
        }
        Raw { sections, files }
    }

    pub(super) fn has_section(&self, name: &str) -> bool {
        self.sections.contains_key(name)
    }

    pub(super) fn section(&self, name: &str) -> &[&'a str] {
        self.sections.get(name).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// A dumped file's lines (empty when absent).
    pub(super) fn lines(&self, path: &str) -> &[&'a str] {
        self.files.get(path).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// A dumped file's text, lines joined.
    pub(super) fn text(&self, path: &str) -> Option<String> {
        self.files.get(path).map(|l| l.join("\n"))
    }

    /// Python's `get_file_content`: stripped, `None` when absent or empty.
    pub(super) fn content(&self, path: &str) -> Option<String> {
        let t = self.text(path)?;
        let t = t.trim();
        (!t.is_empty()).then(|| t.to_string())
    }

    /// True when the script saw the path (tested for existence, or dumped with content).
    pub(super) fn exists(&self, path: &str) -> bool {
        self.section("exists").contains(&path) || self.files.contains_key(path)
    }

    pub(super) fn has_cmd(&self, cmd: &str) -> bool {
        self.section("cmds").contains(&cmd)
    }

    /// Target of a symbolic link listed by `ls -ld` in the `links` section (as `readlink`).
    pub(super) fn link(&self, path: &str) -> Option<&'a str> {
        self.section("links").iter().find_map(|l| {
            let (left, target) = l.split_once(" -> ")?;
            (left.split_whitespace().last() == Some(path)).then_some(target.trim())
        })
    }

    /// Where a symbolic link points, made absolute (one level: enough for `dnf -> dnf5`).
    pub(super) fn link_abs(&self, path: &str) -> Option<String> {
        let target = self.link(path)?;
        if target.starts_with('/') {
            return Some(target.to_string());
        }
        let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        parts.pop();
        for seg in target.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        Some(format!("/{}", parts.join("/")))
    }
}

/// Python's `int()` on a trimmed string.
pub(super) fn py_int(s: &str) -> Option<i64> {
    s.trim().parse().ok()
}

/// A compiled regex, cached: the same few dozen patterns serve every host.
pub(super) fn regex(pattern: &str) -> Option<Regex> {
    static CACHE: LazyLock<Mutex<HashMap<String, Regex>>> = LazyLock::new(Default::default);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(re) = cache.get(pattern) {
        return Some(re.clone());
    }
    let re = Regex::new(pattern).ok()?;
    cache.insert(pattern.to_string(), re.clone());
    Some(re)
}

/// First capture group of a regex search, like Python's `re.search(p, s).group(1)`.
pub(super) fn cap1(pattern: &str, text: &str) -> Option<String> {
    let re = regex(pattern)?;
    re.captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
}

/// Capture group `n` of a regex search.
pub(super) fn cap_n(pattern: &str, text: &str, n: usize) -> Option<String> {
    let re = regex(pattern)?;
    re.captures(text)
        .and_then(|c| c.get(n))
        .map(|m| m.as_str().to_string())
}

/// Python's `str.capitalize()`.
pub(super) fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f
            .to_uppercase()
            .chain(c.flat_map(|ch| ch.to_lowercase()))
            .collect(),
        None => String::new(),
    }
}

/// Python's `str.strip(chars)`.
pub(super) fn strip_chars<'s>(s: &'s str, chars: &str) -> &'s str {
    s.trim_matches(|c| chars.contains(c))
}

/// Python's `os.path.basename`.
pub(super) fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}
