//! Python-compatible text output for data: `json.dumps` and PyYAML's `yaml.dump`.
//!
//! Ansible's `to_json`/`to_yaml` filters are these two Python functions, and users
//! render config files with them, so the exact bytes matter: key order, spacing,
//! quoting and float formatting follow CPython and PyYAML rather than serde.

mod json;
#[cfg(test)]
mod tests;
mod yaml;

pub use json::{dump_json, JsonOptions};
pub use yaml::{dump_yaml, YamlOptions};

/// A float as Python's `repr` writes it (`1.0`, `1e+16`, `1.5e-07`, `inf`, `nan`).
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Shortest round-trip digits, then Python's choice between fixed and exponent form.
    let sci = format!("{:e}", f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let s = format!("{}", f);
        if s.contains('.') {
            s
        } else {
            format!("{}.0", s)
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", mantissa, sign, exp.abs())
    }
}
