//! The rest of ansible-core's builtin tests: `successful`, `started`, `timedout`,
//! `issubset`/`issuperset`, `is_same_file`, `mount`/`is_mount`, `isnan`, `callable`,
//! `uri`/`url`/`urn`.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Environment, Error, State, Value};

use crate::template::filters::urls::{is_uri, is_url};

/// Registers these tests (also as `ansible.builtin.<name>`).
pub(super) fn register(env: &mut Environment<'static>) {
    macro_rules! test {
        ($name:literal, $f:expr) => {{
            env.add_test($name, $f);
            env.add_test(concat!("ansible.builtin.", $name), $f);
        }};
    }
    test!("successful", super::succeeded);
    test!("started", started);
    test!("timedout", timedout);
    test!("issubset", super::subset);
    test!("issuperset", super::superset);
    test!("is_same_file", super::same_file);
    test!("mount", is_mount);
    test!("is_mount", is_mount);
    test!("isnan", super::nan);
    test!("callable", callable);
    test!("uri", |v: &Value, schemes: Option<Value>, kw: Kwargs| {
        let schemes = schemes_arg(schemes, &kw)?;
        Ok::<bool, Error>(is_uri(v, schemes.as_ref()))
    });
    test!("url", |v: &Value, schemes: Option<Value>, kw: Kwargs| {
        let schemes = schemes_arg(schemes, &kw)?;
        Ok::<bool, Error>(is_url(v, schemes.as_ref()))
    });
    test!("urn", |v: &Value| is_uri(
        v,
        Some(&Value::from(vec!["urn"]))
    ));
}

/// `schemes` given by position or keyword.
fn schemes_arg(pos: Option<Value>, kw: &Kwargs) -> Result<Option<Value>, Error> {
    let v = crate::template::filters::arg(pos, kw, "schemes")?;
    kw.assert_all_used()?;
    Ok(v)
}

/// `started`: an async job's `started`; a result without it counts as started.
fn started(state: &State, v: &Value) -> Result<bool, Error> {
    super::result_map("started", state, v)?;
    let s = v.get_attr("started").unwrap_or(Value::UNDEFINED);
    Ok(s.is_undefined() || s.is_true())
}

/// `timedout`: the result has a `timedout` mapping with a true `period`.
fn timedout(state: &State, v: &Value) -> Result<bool, Error> {
    super::result_map("timedout", state, v)?;
    let t = v.get_attr("timedout").unwrap_or(Value::UNDEFINED);
    if t.is_undefined() || !t.is_true() {
        return Ok(false);
    }
    Ok(t.get_attr("period").is_ok_and(|p| p.is_true()))
}

/// `mount`: the path is a mount point (Python's `os.path.ismount`).
fn is_mount(v: &Value) -> Result<bool, Error> {
    use std::os::unix::fs::MetadataExt;
    let p = super::path_of("mount", v)?;
    let path = std::path::Path::new(&p);
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(false);
    };
    if meta.file_type().is_symlink() {
        return Ok(false);
    }
    let parent = path.join("..");
    let Ok(pmeta) = std::fs::symlink_metadata(&parent) else {
        return Ok(false);
    };
    Ok(meta.dev() != pmeta.dev() || meta.ino() == pmeta.ino())
}

/// `callable`: functions and macros (minijinja's plain objects).
fn callable(v: &Value) -> bool {
    v.kind() == ValueKind::Plain
}
