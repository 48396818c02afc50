//! `--tags` / `--skip-tags` selection with Ansible's special tags
//! (`always`, `never`, `all`, `tagged`, `untagged`).

/// The tags asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct TagFilter {
    /// `--tags` (empty = all).
    pub only: Vec<String>,
    /// `--skip-tags`.
    pub skip: Vec<String>,
}

impl TagFilter {
    /// Whether a task with these (effective) tags runs.
    pub fn selects(&self, tags: &[String]) -> bool {
        let has = |t: &str| tags.iter().any(|x| x == t);
        let asked = |t: &str| self.only.iter().any(|x| x == t);
        let skipped = |t: &str| self.skip.iter().any(|x| x == t);
        let intersects = |list: &[String]| tags.iter().any(|t| list.contains(t));
        if !self.only.is_empty() {
            let ok = if has("never") {
                // `never` tasks run only when one of their other tags (or `never`) is asked for.
                tags.iter().any(|t| t != "never" && asked(t)) || asked("never")
            } else {
                asked("all")
                    || has("always")
                    || (asked("tagged") && !tags.is_empty())
                    || (asked("untagged") && tags.is_empty())
                    || intersects(&self.only)
            };
            if !ok {
                return false;
            }
        } else if has("never") {
            return false;
        }
        if !self.skip.is_empty() {
            if has("always")
                && !skipped("always")
                && !tags.iter().any(|t| t != "always" && skipped(t))
            {
                return true;
            }
            if skipped("all")
                || (skipped("tagged") && !tags.is_empty())
                || (skipped("untagged") && tags.is_empty())
                || intersects(&self.skip)
            {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn selection() {
        let none = TagFilter::default();
        assert!(none.selects(&t(&[])));
        assert!(none.selects(&t(&["a"])));
        assert!(!none.selects(&t(&["never"])));
        let only_a = TagFilter {
            only: t(&["a"]),
            skip: vec![],
        };
        assert!(only_a.selects(&t(&["a", "b"])));
        assert!(!only_a.selects(&t(&["b"])));
        assert!(only_a.selects(&t(&["always"])));
        assert!(!only_a.selects(&t(&[])));
        assert!(only_a.selects(&t(&["never", "a"])));
        let skip_a = TagFilter {
            only: vec![],
            skip: t(&["a"]),
        };
        assert!(!skip_a.selects(&t(&["a"])));
        assert!(skip_a.selects(&t(&["always"])));
        let skip_always = TagFilter {
            only: vec![],
            skip: t(&["always"]),
        };
        assert!(!skip_always.selects(&t(&["always"])));
        let tagged = TagFilter {
            only: t(&["tagged"]),
            skip: vec![],
        };
        assert!(tagged.selects(&t(&["x"])));
        assert!(!tagged.selects(&t(&[])));
        let untagged = TagFilter {
            only: t(&["untagged"]),
            skip: vec![],
        };
        assert!(untagged.selects(&t(&[])));
    }
}
