//! Lenient argument types, because Ansible users write `force: yes`, `mode: 0644`,
//! `mode: "0644"`, `retries: "3"` and a comma-separated string for a list.
//! Use with `#[serde(deserialize_with = "...")]` on module argument structs.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;

use super::VarMap;

/// Ansible's lenient booleans, shared with the layers below modules.
pub use crate::ansible::to_bool;

/// A boolean given as `true`, `yes`, `"on"`, `1` …
pub fn bool_like<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let v = Value::deserialize(d)?;
    to_bool(&v).ok_or_else(|| {
        D::Error::custom(format!(
            "expected a boolean (true/false/yes/no), found {}",
            v
        ))
    })
}

/// An optional integer given as a number or a numeric string.
pub fn opt_int_like<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = Value::deserialize(d)?;
    match &v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| D::Error::custom("expected an integer")),
        Value::String(s) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("expected an integer, found {:?}", s))),
        _ => Err(D::Error::custom(format!(
            "expected an integer, found {}",
            v
        ))),
    }
}

/// An optional string; numbers and booleans are stringified (YAML may have typed them).
pub fn opt_string_like<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        other => Err(D::Error::custom(format!(
            "expected a string, found {}",
            other
        ))),
    }
}

/// A list given as a list or as a comma-separated string.
pub fn list_like<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(s
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()),
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(D::Error::custom(format!(
                    "expected a list of strings, found item {}",
                    other
                ))),
            })
            .collect(),
        other => Err(D::Error::custom(format!(
            "expected a list, found {}",
            other
        ))),
    }
}

/// A file mode: `0644` (YAML octal, already an integer), `"0644"`, `"644"`, `"u+x"` kept symbolic.
/// Returns the mode as the string `chmod` accepts.
pub fn opt_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::Null => Ok(None),
        // An integer is what YAML made of `0644`: its value is the mode; print it back in octal.
        Value::Number(n) => {
            let i = n
                .as_u64()
                .ok_or_else(|| D::Error::custom("mode must be a positive number"))?;
            Ok(Some(format!("{:04o}", i)))
        }
        Value::String(s) => {
            let s = s.trim().to_string();
            if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
                let m = u32::from_str_radix(&s, 8).map_err(|_| {
                    D::Error::custom(format!("mode {:?} is not an octal number", s))
                })?;
                Ok(Some(format!("{:04o}", m)))
            } else {
                Ok(Some(s))
            }
        }
        other => Err(D::Error::custom(format!(
            "expected a mode like \"0644\", found {}",
            other
        ))),
    }
}

/// Ansible's lenient boolean as an argument type (`yes`, `"on"`, `1` …), so a struct field
/// is `force: Flag` instead of a `deserialize_with` attribute. `Option<Flag>` for tristate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl Flag {
    /// Serde default for flags that are on unless turned off (`#[serde(default = "Flag::on")]`).
    pub fn on() -> Flag {
        Flag(true)
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Flag, D::Error> {
        bool_like(d).map(Flag)
    }
}

/// A string argument YAML may have typed as a number or boolean (`version: 1.30`,
/// `owner: 0`): kept as the text the user meant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(pub String);

impl Text {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        opt_string_like(d)?
            .map(Text)
            .ok_or_else(|| D::Error::custom("expected a string, found null"))
    }
}

/// An integer given as a number or a numeric string (`timeout: "30"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Int(pub i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Int, D::Error> {
        opt_int_like(d)?
            .map(Int)
            .ok_or_else(|| D::Error::custom("expected an integer, found null"))
    }
}

/// A list given as a list or as a comma-separated string (`groups: a,b`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct List(pub Vec<String>);

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<List, D::Error> {
        list_like(d).map(List)
    }
}

/// A file mode as `chmod` accepts it: octal (`0644` — YAML's integer — `"0644"`, `"644"`,
/// always printed back as four octal digits) or symbolic (`"u+x,g-w"`, kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mode(pub String);

impl Mode {
    /// The mode as `chmod` takes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        opt_mode(d)?
            .map(Mode)
            .ok_or_else(|| D::Error::custom("expected a mode like \"0644\", found null"))
    }
}

/// Declares a closed set of values for one argument (`state: present|absent`) as an enum
/// whose parse error names the argument and lists the valid values (serde's own enum
/// error names neither the argument nor, for numbers, the value). Each variant lists
/// the spellings it accepts; the first is the canonical one ([`Self::as_str`]).
///
/// ```ignore
/// closed_set! {
///     /// `state` of lineinfile.
///     pub enum State for "state" { Present = "present", Absent = "absent" }
/// }
/// ```
#[macro_export]
macro_rules! closed_set {
    ($(#[$m:meta])* $vis:vis enum $name:ident for $arg:literal {
        $($(#[$vm:meta])* $var:ident = $first:literal $(| $more:literal)*),+ $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$vm])* $var),+
        }

        impl $name {
            /// The canonical spellings, for messages.
            #[allow(dead_code)]
            pub const VALUES: &'static [&'static str] = &[$($first),+];

            /// The canonical spelling.
            #[allow(dead_code)]
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$var => $first),+
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let text = <$crate::modules::args::Text as serde::Deserialize>::deserialize(d)?;
                match text.as_str() {
                    $($first $(| $more)* => Ok($name::$var),)+
                    other => Err(<D::Error as serde::de::Error>::custom(format!(
                        "`{}` must be one of {}, found {:?}",
                        $arg,
                        $name::VALUES.join(", "),
                        other
                    ))),
                }
            }
        }
    };
}

/// The file attributes Ansible's file-handling modules share (`add_file_common_args`):
/// declared once, taken out of the arguments before the module's own struct is parsed
/// (serde's `flatten` cannot be combined with `deny_unknown_fields`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
// unsafe_writes, the SELinux fields and attributes are accepted (Ansible users write them)
// but not applied: read by nothing.
#[allow(dead_code)]
pub struct FileAttrs {
    /// `mode`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// `owner`: a user name or id.
    #[serde(default)]
    pub owner: Option<Text>,
    /// `group`: a group name or id.
    #[serde(default)]
    pub group: Option<Text>,
    /// `unsafe_writes`: accepted; kk always writes through a temp file and rename.
    #[serde(default)]
    pub unsafe_writes: Option<Flag>,
    /// SELinux user; accepted, not applied (Debian targets run without SELinux).
    #[serde(default)]
    pub seuser: Option<Text>,
    /// SELinux role; accepted, not applied.
    #[serde(default)]
    pub serole: Option<Text>,
    /// SELinux type; accepted, not applied.
    #[serde(default)]
    pub setype: Option<Text>,
    /// SELinux level; accepted, not applied.
    #[serde(default)]
    pub selevel: Option<Text>,
    /// `chattr` attributes; accepted, not applied.
    #[serde(default, alias = "attr")]
    pub attributes: Option<Text>,
}

impl FileAttrs {
    /// The argument names of the group (aliases included).
    pub const NAMES: &'static [&'static str] = &[
        "mode",
        "owner",
        "group",
        "unsafe_writes",
        "seuser",
        "serole",
        "setype",
        "selevel",
        "attributes",
        "attr",
    ];

    /// Takes the group's arguments out of `args`, leaving the module's own.
    pub fn take(module: &str, args: &mut VarMap) -> crate::error::Result<FileAttrs> {
        let mut mine = VarMap::new();
        for k in Self::NAMES {
            if let Some(v) = args.remove(*k) {
                mine.insert((*k).to_string(), v);
            }
        }
        super::parse_args(module, mine, Self::NAMES)
    }
}

/// Parses a module's arguments that include the shared [`FileAttrs`]: the group is taken
/// out first, the rest goes to `T` (which denies unknown fields); an unknown argument's
/// error lists `valid` and the group's names.
pub fn parse_with_file_attrs<T: serde::de::DeserializeOwned>(
    module: &str,
    mut args: VarMap,
    valid: &[&str],
) -> crate::error::Result<(T, FileAttrs)> {
    let attrs = FileAttrs::take(module, &mut args)?;
    let all: Vec<&str> = valid.iter().chain(FileAttrs::NAMES).copied().collect();
    let own = super::parse_args(module, args, &all)?;
    Ok((own, attrs))
}

/// Whether no argument holds a template (`{{`, `{%`), at any depth: then the arguments
/// are what the task will get, and can be checked when the playbook loads.
pub fn is_literal(args: &VarMap) -> bool {
    fn literal(v: &Value) -> bool {
        match v {
            Value::String(s) => !s.contains("{{") && !s.contains("{%"),
            Value::Array(items) => items.iter().all(literal),
            Value::Object(m) => m
                .iter()
                .all(|(k, v)| literal(&Value::String(k.clone())) && literal(v)),
            _ => true,
        }
    }
    // A templated key (`set_fact: "{{ item }}=moo"`) is only known when the task runs.
    args.iter()
        .all(|(k, v)| literal(&Value::String(k.clone())) && literal(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct T {
        #[serde(default, deserialize_with = "opt_mode")]
        mode: Option<String>,
        #[serde(default, deserialize_with = "bool_like")]
        force: bool,
    }

    #[test]
    fn lenient_values() {
        let t: T =
            serde_json::from_value(serde_json::json!({"mode": 420, "force": "yes"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("0644"));
        assert!(t.force);
        let t: T = serde_json::from_value(serde_json::json!({"mode": "0755"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("0755"));
        let t: T = serde_json::from_value(serde_json::json!({"mode": "644"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("0644"));
        let t: T = serde_json::from_value(serde_json::json!({"mode": "u+x"})).unwrap();
        assert_eq!(t.mode.as_deref(), Some("u+x"));
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Own {
        #[serde(default)]
        force: Flag,
        #[serde(default = "Flag::on")]
        backup: Flag,
        #[serde(default)]
        retries: Option<Int>,
        #[serde(default)]
        names: List,
    }

    #[test]
    fn newtypes_and_file_attrs() {
        let args = serde_json::json!({"force": "on", "retries": "3", "names": "a, b",
            "mode": 493, "owner": 0, "selevel": "s0"});
        let (own, attrs): (Own, FileAttrs) =
            parse_with_file_attrs("x", args.as_object().unwrap().clone(), &["force"]).unwrap();
        assert_eq!(
            (own.force, own.backup, own.retries),
            (Flag(true), Flag(true), Some(Int(3)))
        );
        assert_eq!(own.names.0, ["a", "b"]);
        assert_eq!(attrs.mode.unwrap().as_str(), "0755");
        assert_eq!(attrs.owner.unwrap().as_str(), "0");
        let bad = serde_json::json!({"forse": true});
        let e = parse_with_file_attrs::<Own>("x", bad.as_object().unwrap().clone(), &["force"])
            .unwrap_err();
        assert!(
            e.help.unwrap().contains("force, mode, owner"),
            "valid names listed"
        );
        assert!(is_literal(args.as_object().unwrap()));
        closed_set! {
            /// A test set.
            enum State for "state" { Present = "present", Absent = "absent" | "gone" }
        }
        let s: State = serde_json::from_value(serde_json::json!("gone")).unwrap();
        assert_eq!((s, s.as_str()), (State::Absent, "absent"));
        let e = serde_json::from_value::<State>(serde_json::json!(1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`state` must be one of present, absent, found \"1\""
        );
        assert!(!is_literal(
            serde_json::json!({"a": ["{{ x }}"]}).as_object().unwrap()
        ));
    }
}
