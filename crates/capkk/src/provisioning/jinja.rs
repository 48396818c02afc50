//! The small part of cloud-init's Jinja templating that CABPK documents use.
//!
//! CABPK starts every cloud-config with `## template: jinja`, so that users can write
//! `{{ ds.meta_data.local_hostname }}` in their kubeadm config (the node name). On a cloud,
//! cloud-init fills these from the instance metadata; CAPKK's machines have none, so the
//! values come from the Machine. Only plain variable substitutions are supported: a
//! statement (`{% if %}`), a filter or an unknown variable is refused rather than rendered
//! wrong.

use super::error::clip;
use super::ProvisioningError;

/// The instance metadata a templated cloud-config can refer to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// `ds.meta_data.local_hostname` / `v1.local_hostname`: the node name kubeadm registers.
    pub local_hostname: String,
    /// `ds.meta_data.hostname`.
    pub hostname: String,
    /// `ds.meta_data.instance_id` / `v1.instance_id`.
    pub instance_id: String,
}

impl Metadata {
    /// All three from the Machine's name, which is what CAPKK names the node.
    pub fn for_machine(name: &str) -> Metadata {
        Metadata {
            local_hostname: name.to_string(),
            hostname: name.to_string(),
            instance_id: name.to_string(),
        }
    }

    fn lookup(&self, var: &str) -> Option<&str> {
        match var {
            "ds.meta_data.local_hostname" | "v1.local_hostname" | "local_hostname" => {
                Some(&self.local_hostname)
            }
            "ds.meta_data.hostname" => Some(&self.hostname),
            "ds.meta_data.instance_id" | "v1.instance_id" | "instance_id" => {
                Some(&self.instance_id)
            }
            _ => None,
        }
    }
}

const SUPPORTED: &str = "`{{ ds.meta_data.local_hostname }}`, `{{ ds.meta_data.hostname }}`, \
     `{{ ds.meta_data.instance_id }}` (or `v1.local_hostname`, `v1.instance_id`), or a quoted \
     string literal such as `{{ '{{' }}`";

/// Whether the document asks for Jinja rendering (cloud-init looks at the first line only).
pub(crate) fn is_template(text: &str) -> bool {
    let first = text.lines().next().unwrap_or("");
    let Some(rest) = first.strip_prefix("## template:") else {
        return false;
    };
    rest.trim().eq_ignore_ascii_case("jinja")
}

/// Renders `{{ … }}` expressions; line numbers of the result match the input. `meta` is
/// `None` when the caller has no machine name: any variable is then an error.
pub(crate) fn render(text: &str, meta: Option<&Metadata>) -> Result<String, ProvisioningError> {
    if let Some(meta) = meta {
        for (name, value) in [
            ("local_hostname", &meta.local_hostname),
            ("hostname", &meta.hostname),
            ("instance_id", &meta.instance_id),
        ] {
            if value.is_empty() || value.contains(|c: char| c.is_control() || c.is_whitespace()) {
                return Err(ProvisioningError::new(
                    "cloud-config",
                    format!("metadata {name}"),
                    "a non-empty name without spaces or control characters",
                    "an empty name or one with spaces or control characters",
                    "name the Machine with a DNS-1123 name",
                ));
            }
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut line = 1usize;
    while let Some(open) = find_open(rest) {
        let (before, tail) = rest.split_at(open);
        out.push_str(before);
        line += before.matches('\n').count();
        let column = out.len() - out.rfind('\n').map_or(0, |i| i + 1) + 1;
        let kind = &tail[..2];
        let close = match kind {
            "{{" => "}}",
            "{%" => "%}",
            _ => "#}",
        };
        let err = |expected: &str, found: String| {
            ProvisioningError::new(
                "cloud-config",
                "Jinja template",
                expected.to_string(),
                found,
                format!(
                    "CAPKK renders only {SUPPORTED}; remove the `## template: jinja` line if the \
                     document needs no rendering"
                ),
            )
            .at_line(line, column)
        };
        if kind != "{{" {
            return Err(err(
                "a `{{ variable }}` expression",
                format!("a Jinja `{kind} … {close}` block"),
            ));
        }
        let Some(end) = tail[2..].find(close) else {
            return Err(err("`}}` closing the expression", "no `}}`".to_string()));
        };
        let expr = tail[2..2 + end].trim();
        if let Some(value) = string_literal(expr) {
            out.push_str(value);
        } else {
            match meta {
                Some(meta) => match meta.lookup(expr) {
                    Some(value) => out.push_str(value),
                    None => {
                        return Err(err(
                            "a supported variable",
                            format!("`{{{{ {} }}}}`", clip(expr)),
                        ));
                    }
                },
                None => {
                    return Err(ProvisioningError::new(
                        "cloud-config",
                        "Jinja template",
                        "a machine name to render the variables from",
                        format!("`{{{{ {} }}}}` and no machine name given", clip(expr)),
                        "call provisioning::parse_with with the Machine's metadata",
                    )
                    .at_line(line, column));
                }
            }
        }
        line += tail[..2 + end + 2].matches('\n').count();
        rest = &tail[2 + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The first `{{`, `{%` or `{#` in `s`.
fn find_open(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    (0..bytes.len().saturating_sub(1))
        .find(|&i| bytes[i] == b'{' && matches!(bytes[i + 1], b'{' | b'%' | b'#'))
}

/// `'text'` or `"text"` without escapes: Jinja's way to write a literal `{{`.
fn string_literal(expr: &str) -> Option<&str> {
    for q in ['\'', '"'] {
        if let Some(inner) = expr.strip_prefix(q).and_then(|e| e.strip_suffix(q)) {
            if !inner.contains(q) && !inner.contains('\\') {
                return Some(inner);
            }
        }
    }
    None
}
