//! The kk engine: loads playbooks, roles and inventories, templates tasks with Jinja,
//! and runs them on hosts through connections and modules.
//!
//! The binary (`kk`) is a thin layer over [`exec::run_playbook`].

pub(crate) mod ansible;
pub mod connect;
pub(crate) mod depth;
pub(crate) mod duration;
pub mod error;
pub mod exec;
pub mod files;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod graph;
pub mod inventory;
pub(crate) mod modules;
pub(crate) mod project;
pub mod report;
pub(crate) mod template;
pub mod vars;
pub mod vault;
pub mod yaml;

pub use error::{Error, ErrorKind, Result};
/// Where modules written in Python are looked for (ansible.cfg's `library` and
/// `collections_path`), set by the command line before a playbook loads.
pub use modules::python::{configure as configure_python_modules, PythonPaths};
/// The facts script and its parser, for the `facts` example (gathering time, and a dump to
/// compare with `ansible -m setup`).
pub use modules::setup::facts;
pub use template::conditions::allow_broken_conditionals;
