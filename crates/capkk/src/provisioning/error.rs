//! The one error type of bootstrap-data mapping: where, what was expected and found, and
//! how to fix it, never the content of a file (bootstrap data holds keys and tokens).

use std::fmt;

/// Bootstrap data that CAPKK cannot apply. It is permanent (retrying will not help): the
/// document must change. Its fields ([`ErrorDetail`], reached through `Deref`) are boxed
/// so that every `Result` of the parser stays small.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvisioningError(Box<ErrorDetail>);

/// Where and why a document was refused. `found` describes the offending value by kind or
/// size, never by quoting a file's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorDetail {
    /// The document kind: `cloud-config`, `ignition` or `bootstrap data`.
    pub document: &'static str,
    /// Where in the document: a key path such as `write_files[3].encoding`.
    pub path: String,
    /// Line and column (1-based) when the YAML parser reports them.
    pub line_column: Option<(usize, usize)>,
    /// What CAPKK expected (and supports) there.
    pub expected: String,
    /// What it found, described without quoting secret values.
    pub found: String,
    /// How to fix the document.
    pub fix: String,
}

impl ProvisioningError {
    /// An error at a key path of `document`.
    pub(crate) fn new(
        document: &'static str,
        path: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        ProvisioningError(Box::new(ErrorDetail {
            document,
            path: path.into(),
            line_column: None,
            expected: expected.into(),
            found: found.into(),
            fix: fix.into(),
        }))
    }

    /// The same error with a line and column.
    pub(crate) fn at_line(mut self, line: usize, column: usize) -> Self {
        self.0.line_column = Some((line, column));
        self
    }
}

impl std::ops::Deref for ProvisioningError {
    type Target = ErrorDetail;

    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl fmt::Display for ProvisioningError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.document)?;
        if !self.path.is_empty() {
            write!(f, " at {}", self.path)?;
        }
        if let Some((line, column)) = self.line_column {
            write!(f, " (line {line}, column {column})")?;
        }
        write!(
            f,
            ": expected {}, found {}; {}",
            self.expected, self.found, self.fix
        )
    }
}

impl std::error::Error for ProvisioningError {}

/// A short, single-line excerpt of a non-secret value (a key name, an encoding) for an
/// error message: at most 40 characters, control characters escaped.
pub(crate) fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(40).flat_map(char::escape_debug).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// The kind of a YAML/JSON value for "found …" (never the value itself).
pub(crate) fn kind_of_yaml(v: &serde_yaml::Value) -> &'static str {
    use serde_yaml::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The kind of a JSON value for "found …" (never the value itself).
pub(crate) fn kind_of_json(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
