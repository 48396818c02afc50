//! Vaulted values kept out of kk's output: every plaintext a vault gave this process is
//! remembered, and the one place events are written ([`crate::report`]) masks them in
//! results, diffs, warnings and reported data before they reach the screen, the run log
//! or `events.jsonl`; the `-vvv` diagnostics writer masks them too.
//!
//! This is a deliberate difference from ansible-core, which prints a vaulted variable
//! a task shows (`debug`, `--diff`) unless the task says `no_log`: a secret someone took
//! the trouble to vault should not land in a CI log because a task printed it.
//!
//! Plaintexts are matched as text: a value of [`MIN_INNER`] characters or more is masked
//! wherever it appears inside a string; a shorter one only where a whole string equals
//! it (masking every "ok" inside every message would garble the output, not protect it).

use std::borrow::Cow;
use std::sync::RwLock;

use serde_json::Value;

/// What a masked value prints as (ansible-core's mask for `no_log` values).
pub const MASK: &str = "********";

/// Plaintexts at least this long are masked inside longer strings too.
pub const MIN_INNER: usize = 4;

/// The plaintexts seen so far, longest first (so a secret containing another is masked
/// whole).
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remembers one decrypted value (a `!vault` scalar).
pub fn remember(plain: &str) {
    let plain = plain.trim_end_matches('\n');
    if plain.is_empty() {
        return;
    }
    let mut s = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if s.iter().any(|x| x == plain) {
        return;
    }
    s.push(plain.to_string());
    s.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
}

/// Remembers what a decrypted file holds: the text values of a YAML or JSON document
/// (a vaulted vars file), else each non-blank line (a vaulted template, key or copy
/// source).
pub fn remember_file(text: &str) {
    match yaml_rust2::YamlLoader::load_from_str(text) {
        Ok(docs)
            if docs
                .iter()
                .any(|d| matches!(d, yaml_rust2::Yaml::Hash(_) | yaml_rust2::Yaml::Array(_))) =>
        {
            for d in &docs {
                remember_leaves(d);
            }
        }
        _ => {
            for line in text.lines() {
                remember(line.trim());
            }
        }
    }
}

fn remember_leaves(doc: &yaml_rust2::Yaml) {
    use yaml_rust2::Yaml;
    match doc {
        Yaml::String(s) => {
            for line in s.lines() {
                remember(line.trim());
            }
            remember(s);
        }
        Yaml::Real(s) => remember(s),
        Yaml::Array(items) => items.iter().for_each(remember_leaves),
        Yaml::Hash(map) => map.values().for_each(remember_leaves),
        _ => {}
    }
}

/// True once a vault gave this process a plaintext: only then is output scanned.
pub fn is_active() -> bool {
    !SECRETS.read().unwrap_or_else(|e| e.into_inner()).is_empty()
}

/// `text` with every remembered plaintext of [`MIN_INNER`] characters or more masked,
/// and masked whole when it equals a shorter one.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    if secrets.iter().any(|s| s == text) {
        return Cow::Owned(MASK.to_string());
    }
    let mut out = Cow::Borrowed(text);
    for s in secrets.iter().filter(|s| s.chars().count() >= MIN_INNER) {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), MASK));
        }
    }
    out
}

/// Masks remembered plaintexts in every string (keys included) of a JSON value.
pub fn redact_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(o) = redact_text(s) {
                *s = o;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::Object(map) => {
            let masked_keys = map.keys().any(|k| matches!(redact_text(k), Cow::Owned(_)));
            if masked_keys {
                let old = std::mem::take(map);
                for (k, mut val) in old {
                    redact_value(&mut val);
                    map.insert(redact_text(&k).into_owned(), val);
                }
            } else {
                map.values_mut().for_each(redact_value);
            }
        }
        Value::Number(n) => {
            let text = n.to_string();
            if let Cow::Owned(o) = redact_text(&text) {
                *v = Value::String(o);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the registry is the process's, so cases must not race each other.
    #[test]
    fn remembered_values_are_masked_in_text_and_json() {
        remember("s3cr3t-pass");
        remember("ab");
        remember_file("db_password: hunter2hunter2\nport: 5432\nnested: {k: [deep-value]}\n");
        assert!(is_active());
        assert_eq!(
            redact_text("login with s3cr3t-pass now"),
            "login with ******** now"
        );
        // Short values only whole: "ab" inside "cab" stays.
        assert_eq!(redact_text("cab"), "cab");
        assert_eq!(redact_text("ab"), MASK);
        let mut v = serde_json::json!({
            "msg": "pw=hunter2hunter2",
            "cmd": ["echo", "deep-value"],
            "ab": 1,
            "rc": 0,
        });
        redact_value(&mut v);
        assert_eq!(v["msg"], "pw=********");
        assert_eq!(v["cmd"][1], MASK);
        assert!(
            v.get(MASK).is_some(),
            "a key equal to a secret is masked too"
        );
        assert_eq!(v["rc"], 0);
        // Each line of a vaulted non-YAML file counts.
        remember_file("-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD\n-----END KEY-----\n");
        assert_eq!(redact_text("key MIIBOgIBAAJBAKj34GkxFhD"), "key ********");
    }
}
