//! Where `{% include %}`, `{% import %}`, `{% from %}` and `{% extends %}` inside a
//! template FILE find their templates, as Ansible searches: the search path (the role's
//! directory, then the playbook's — `ansible_search_path` when set), each entry's
//! `templates/` before the entry itself, plus the template's own directory — first for
//! `lookup('template')`, last for the `template` module (each as in ansible-core).

use std::path::{Path, PathBuf};

use minijinja::value::ValueKind;
use minijinja::{Environment, Value};

/// True when a template's text may load another template (worth a loader).
pub(crate) fn loads_others(text: &str) -> bool {
    ["include", "import", "extends"]
        .iter()
        .any(|w| text.contains(w))
}

/// The search directories for a template at `path`, from the variables `var` gives.
pub(crate) fn dirs(
    var: impl Fn(&str) -> Option<Value>,
    path: &Path,
    own_dir_first: bool,
) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    if let Some(list) = var("ansible_search_path").filter(|v| v.kind() == ValueKind::Seq) {
        if let Ok(iter) = list.try_iter() {
            bases.extend(iter.filter_map(|v| v.as_str().map(PathBuf::from)));
        }
    }
    if bases.is_empty() {
        for name in ["role_path", "playbook_dir"] {
            if let Some(p) = var(name).and_then(|v| v.as_str().map(PathBuf::from)) {
                bases.push(p);
            }
        }
    }
    let own = path.parent().map(Path::to_path_buf);
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    if own_dir_first {
        own.clone().into_iter().for_each(&mut add);
    }
    for b in bases {
        add(b.join("templates"));
        add(b);
    }
    if !own_dir_first {
        own.into_iter().for_each(&mut add);
    }
    out
}

/// `env` with a loader over `dirs`: a name is the first `dir/name` that is a file. The
/// loaded text goes through the same guards as the template itself.
pub(crate) fn with_loader<'e>(env: &Environment<'e>, dirs: Vec<PathBuf>) -> Environment<'e> {
    let mut env = env.clone();
    env.set_loader(move |name: &str| {
        for d in &dirs {
            let candidate = d.join(name);
            if !candidate.is_file() {
                continue;
            }
            let text = crate::error::read_file(&candidate).map_err(|e| {
                minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!("{}: {}", candidate.display(), e.message),
                )
            })?;
            super::depth::check(&text, false).map_err(|e| {
                minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!("{}: {}", candidate.display(), e.message),
                )
            })?;
            let text = super::chain::guard_chains(&text, false).into_owned();
            if super::mutable::rewrite::mutates(&text) {
                return Ok(Some(super::mutable::rewrite::rewrite(&text).into_owned()));
            }
            return Ok(Some(text));
        }
        Ok(None)
    });
    env
}
