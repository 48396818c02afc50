//! Roles named in collection form (`ns.coll.role`), found where ansible-core looks for
//! collections: `collections/ansible_collections/` next to the playbook, then each
//! directory of `ANSIBLE_COLLECTIONS_PATH` (or its default, `~/.ansible/collections` and
//! `/usr/share/ansible/collections`), each holding `ansible_collections/<ns>/<coll>`.

use std::path::{Path, PathBuf};

use super::Loader;

/// The namespace, collection and role of a name in collection form; `None` for a plain
/// role name (or a path).
pub(super) fn split_fqcn(name: &str) -> Option<(&str, &str, &str)> {
    let mut parts = name.split('.');
    let (ns, coll, role) = (parts.next()?, parts.next()?, parts.next()?);
    let ident = |s: &str| {
        !s.is_empty()
            && !s.starts_with(|c: char| c.is_ascii_digit())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    (parts.next().is_none() && ident(ns) && ident(coll) && ident(role)).then_some((ns, coll, role))
}

/// The directories that hold `ansible_collections/`, in ansible-core's search order.
fn collection_roots(playbook_dir: &Path) -> Vec<PathBuf> {
    let mut roots = vec![playbook_dir.join("collections")];
    let configured = std::env::var("ANSIBLE_COLLECTIONS_PATH")
        .or_else(|_| std::env::var("ANSIBLE_COLLECTIONS_PATHS"))
        .ok();
    match configured {
        Some(paths) => roots.extend(paths.split(':').filter(|p| !p.is_empty()).map(expand_home)),
        None => {
            roots.push(expand_home("~/.ansible/collections"));
            roots.push(PathBuf::from("/usr/share/ansible/collections"));
        }
    }
    roots
}

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(p),
    }
}

impl Loader {
    /// Where a role named `ns.coll.role` may be, in search order (empty for other names).
    pub(super) fn collection_role_candidates(&self, name: &str) -> Vec<PathBuf> {
        let Some((ns, coll, role)) = split_fqcn(name) else {
            return Vec::new();
        };
        collection_roots(&self.playbook_dir)
            .into_iter()
            .map(|root| {
                // A configured path may name `ansible_collections` itself.
                let base = if root.ends_with("ansible_collections") {
                    root
                } else {
                    root.join("ansible_collections")
                };
                base.join(ns).join(coll).join("roles").join(role)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::split_fqcn;

    #[test]
    fn collection_names() {
        assert_eq!(split_fqcn("ns.coll.role"), Some(("ns", "coll", "role")));
        assert_eq!(split_fqcn("role"), None);
        assert_eq!(split_fqcn("a.b"), None);
        assert_eq!(split_fqcn("a.b.c.d"), None);
        assert_eq!(split_fqcn("../roles/x.y"), None);
        assert_eq!(split_fqcn("ns.coll.my-role"), None);
    }
}
