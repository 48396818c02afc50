//! Modules written in Python that kk does not implement (a playbook's `library/`
//! modules, collection modules, ansible-core modules kk lacks), run the way Ansible runs
//! them when the controller has ansible-core: the module and the `module_utils` it may
//! import are sent as one payload, run by the host's Python, and its JSON result is the
//! task's result. Without ansible-core on the controller such a name is a load error
//! that says where kk looked and how to enable it. Every host run is counted, so the end
//! of the run says which tasks needed Python on the hosts.

mod find;
mod payload;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use serde_json::Value;

use super::registry::{Action, Entry, FreeForm};
use super::{Effect, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};
pub use find::{configure, PythonPaths};

/// A Python module found on the controller.
pub struct PythonModule {
    name: String,
    found: find::Found,
    core: &'static find::AnsibleCore,
    /// The compressed files, built on first use and sent to every host.
    payload: OnceLock<std::result::Result<Arc<Vec<u8>>, String>>,
}

/// The Python modules this run resolved, by the name tasks use (entries live for the
/// process, like the built-in ones).
static FOUND: Mutex<BTreeMap<String, &'static Entry>> = Mutex::new(BTreeMap::new());

/// How many host runs each Python module had in this process.
static RUNS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// The entry of a Python module resolved earlier under this name.
pub(super) fn entry(name: &str) -> Option<&'static Entry> {
    FOUND
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .copied()
}

/// Resolves a task's module name that kk does not implement: `Ok(true)` when it is a
/// Python module kk can run, `Ok(false)` when no such module exists, and an error when
/// the module exists but ansible-core is missing on the controller.
pub fn resolve(name: &str, playbook_dir: &Path, role_dir: Option<&Path>) -> Result<bool> {
    if entry(name).is_some() {
        return Ok(true);
    }
    let Some(found) = find::find(name, playbook_dir, role_dir) else {
        return Ok(false);
    };
    let Some(core) = find::ansible_core() else {
        return Err(Error::new(
            ErrorKind::Syntax,
            format!(
                "`{name}` is a module written in Python ({}), and running it needs ansible-core's module_utils on the controller",
                found.file.display()
            ),
        )
        .with_code("kk::module::python")
        .note(format!(
            "looked for ansible-core with: {}",
            find::pythons().join(", ")
        ))
        .help("install ansible-core on the controller (`pip install ansible-core`), or point KK_ANSIBLE_PYTHON at a Python that has it"));
    };
    let module: &'static PythonModule = Box::leak(Box::new(PythonModule {
        name: name.to_string(),
        found,
        core,
        payload: OnceLock::new(),
    }));
    let e: &'static Entry = Box::leak(Box::new(Entry {
        name: Box::leak(name.to_string().into_boxed_str()),
        aliases: &[],
        free_form: FreeForm::No,
        run_once: false,
        action: Action::Module(module),
    }));
    FOUND
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string(), e);
    Ok(true)
}

/// The Python modules run in this process and how many host runs each had, for the end
/// of the run ("run through Python on the hosts").
pub fn runs() -> Vec<(String, u64)> {
    RUNS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// The remote script: the host's Python (`ansible_python_interpreter`, else the first of
/// Ansible's usual names) running [`payload::BOOT`].
fn script(interpreter: Option<&str>) -> String {
    let boot = format!("-c '{}'", payload::BOOT);
    match interpreter {
        Some(py) => format!("exec {} {boot}\n", crate::ansible::shell_quote(py)),
        None => format!(
            "for p in python3 /usr/bin/python3 /usr/libexec/platform-python python; do\n  if command -v \"$p\" >/dev/null 2>&1; then exec \"$p\" {boot}; fi\ndone\necho 'no Python on this host (python3, /usr/bin/python3, /usr/libexec/platform-python, python); set ansible_python_interpreter' >&2\nexit 127\n"
        ),
    }
}

impl PythonModule {
    fn payload(&self) -> Result<Arc<Vec<u8>>> {
        self.payload
            .get_or_init(|| {
                payload::files(&self.found, self.core)
                    .map(Arc::new)
                    .map_err(|e| format!("{}: {e}", self.found.file.display()))
            })
            .clone()
            .map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("{}: cannot read the module: {e}", self.name),
                )
            })
    }
}

#[async_trait]
impl Module for PythonModule {
    async fn run(&self, ctx: &ModuleContext, args: VarMap) -> Result<ModuleResult> {
        let files = self.payload()?;
        let interpreter = ctx
            .vars
            .get_attr("ansible_python_interpreter")
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_none())
            .map(|v| v.to_string())
            .filter(|s| !s.is_empty() && !s.starts_with("auto"));
        let mut input = payload::args_line(
            args,
            self.name.rsplit('.').next().unwrap_or(&self.name),
            &self.found.import_name,
            ctx.check_mode,
            ctx.diff,
            ctx.no_log,
            &self.core.version,
        );
        input.extend_from_slice(&files);
        *RUNS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(self.name.clone())
            .or_default() += 1;
        let out = ctx
            .exec(script(interpreter.as_deref()), Some(input))
            .await?;
        let stdout = out.stdout_text();
        let Some(mut m) = payload::parse_result(&stdout) else {
            // Ansible's words for a module that printed no result.
            return Ok(ModuleResult::failed(
                "MODULE FAILURE: See stdout/stderr for the exact error",
            )
            .with("module_stdout", stdout)
            .with("module_stderr", out.stderr_text())
            .with("rc", out.rc));
        };
        m.retain(|k, _| !k.starts_with("_ansible_"));
        let flag = |m: &mut VarMap, k: &str| {
            m.remove(k)
                .is_some_and(|v| crate::ansible::to_bool(&v).unwrap_or(false))
        };
        let changed = flag(&mut m, "changed");
        let rc_failed = m
            .get("rc")
            .and_then(Value::as_i64)
            .is_some_and(|rc| rc != 0);
        let failed = match m.contains_key("failed") {
            true => flag(&mut m, "failed"),
            false => rc_failed,
        };
        let skipped = flag(&mut m, "skipped");
        let msg = match m.remove("msg") {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                m.insert("msg".into(), other);
                None
            }
            None => None,
        };
        let facts = match m.get("ansible_facts") {
            Some(Value::Object(f)) => Some(f.clone()),
            _ => None,
        };
        let mut r = ModuleResult {
            changed,
            failed,
            skipped,
            msg,
            data: m,
            ..ModuleResult::default()
        };
        if let (Some(f), false) = (facts, failed) {
            r = r.effect(Effect::GatheredFacts(f));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_quote_the_boot_program() {
        let s = script(None);
        assert!(s.contains("for p in python3"));
        assert!(
            script(Some("/opt/py 3/bin/python")).starts_with("exec '/opt/py 3/bin/python' -c '")
        );
    }
}
