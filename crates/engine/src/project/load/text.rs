//! Plays written as text rather than read from a file: `kk adhoc` builds its one-task
//! play so, and it is loaded and checked exactly as a playbook file's play would be.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Loader;
use crate::error::Result;
use crate::project::Playbook;
use crate::vars::VarMap;
use crate::yaml::{self, Yaml};

/// Loads the plays of `text` (YAML or JSON; `origin` names it in messages) as if they
/// were written in a playbook in `dir`.
pub fn load_play_text(
    origin: &str,
    text: &str,
    dir: &Path,
    roles_path: Vec<PathBuf>,
    extra_vars: Arc<VarMap>,
) -> Result<Playbook> {
    let loader = Loader {
        playbook_dir: dir.to_path_buf(),
        roles_path,
        extra_vars,
    };
    let root = yaml::parse_str(origin, text)?;
    let Yaml::Seq(items) = &root.value else {
        return Err(root.expected("a list of plays"));
    };
    let plays = items
        .iter()
        .map(|n| loader.parse_play(n, dir, &[], &VarMap::new()))
        .collect::<Result<Vec<_>>>()?;
    Ok(Playbook { plays })
}
