//! `--start-at-task NAME`: as Ansible, the plays before the one holding the task run no
//! task (their headers still show), that play starts at the task (its facts are still
//! gathered), and the plays after it run whole. Only tasks known when the playbook loads
//! can be found (Ansible: "--start-at-task can only follow static includes").

use crate::project::{Keyword, Play, Task, TaskKind};

/// Prunes the plays for `--start-at-task`; when no task matches, every play is left
/// empty and the warning to give at the end of the run comes back (Ansible's words; it
/// still exits 0).
pub fn apply(plays: &mut [Play], pattern: &str) -> Option<String> {
    let mut found = false;
    for play in plays.iter_mut() {
        if found {
            break;
        }
        for list in [
            &mut play.pre_tasks,
            &mut play.roles,
            &mut play.tasks,
            &mut play.post_tasks,
        ] {
            if found {
                continue;
            }
            prune(list, pattern, None, &mut found);
        }
        if !found {
            // Nothing of this play runs, not even its facts.
            play.gather_facts = Some(Keyword::Literal(false));
        }
    }
    (!found).then(|| {
        format!(
            "No matching task \"{}\" found. Note: --start-at-task can only follow static includes.",
            pattern
        )
    })
}

/// Drops the entries before the first task that matches; `found` is set once it is met.
fn prune(list: &mut Vec<Task>, pattern: &str, role: Option<&str>, found: &mut bool) {
    let mut kept = Vec::new();
    for mut t in std::mem::take(list) {
        if *found {
            kept.push(t);
            continue;
        }
        match &mut t.kind {
            TaskKind::Block {
                block,
                rescue,
                always,
                role: r,
            } => {
                let inner = r.as_ref().map(|r| r.role.name.clone());
                let role = inner.as_deref().or(role);
                prune(block, pattern, role, found);
                if !*found {
                    // The block's tasks were all before: only its `always` may hold it.
                    rescue.clear();
                    prune(always, pattern, role, found);
                }
                if *found {
                    kept.push(t);
                }
            }
            _ => {
                if matches(&t, role, pattern) {
                    *found = true;
                    kept.push(t);
                }
            }
        }
    }
    *list = kept;
}

/// Ansible's test: the task's name, or its full name (`role : name`), equal to the
/// pattern or matching it as a shell glob.
fn matches(t: &Task, role: Option<&str>, pattern: &str) -> bool {
    let Some(name) = &t.name else {
        return false;
    };
    let full = match role {
        Some(r) => format!("{} : {}", r, name),
        None => name.clone(),
    };
    [name.as_str(), full.as_str()]
        .iter()
        .any(|n| *n == pattern || glob(pattern.as_bytes(), n.as_bytes()))
}

/// Python's `fnmatch`: `*`, `?` and `[…]` (with `!` for "not").
fn glob(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => {
            let rest = &p[p.iter().take_while(|&&c| c == b'*').count()..];
            (0..=s.len()).any(|i| glob(rest, &s[i..]))
        }
        Some(b'?') => !s.is_empty() && glob(&p[1..], &s[1..]),
        Some(b'[') => {
            let Some(end) = p.iter().skip(2).position(|&c| c == b']').map(|i| i + 2) else {
                return !s.is_empty() && s[0] == b'[' && glob(&p[1..], &s[1..]);
            };
            let Some(&c) = s.first() else {
                return false;
            };
            let (neg, set) = match p[1] {
                b'!' => (true, &p[2..end]),
                _ => (false, &p[1..end]),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != neg && glob(&p[end + 1..], &s[1..])
        }
        Some(&c) => s.first() == Some(&c) && glob(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_as_fnmatch() {
        assert!(glob(b"inst*", b"install packages"));
        assert!(glob(b"?ne", b"one"));
        assert!(glob(b"[a-c]x", b"bx"));
        assert!(!glob(b"[!a-c]x", b"bx"));
        assert!(!glob(b"one", b"one two"));
    }
}
