//! The kk engine: loads playbooks, roles and inventories, templates tasks with Jinja,
//! and runs them on hosts through connections and modules.
//!
//! The binary (`kk`) is a thin layer over [`exec::run_playbook`].

pub mod ansible;
pub mod connect;
pub mod duration;
pub mod error;
pub mod exec;
pub mod files;
pub mod graph;
pub mod inventory;
pub mod modules;
pub mod project;
pub mod report;
pub mod template;
pub mod vars;
pub mod yaml;

pub use error::{Error, ErrorKind, Result};
