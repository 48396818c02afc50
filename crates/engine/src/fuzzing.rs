//! Entry points for kk's own fuzzing (issue 15): one function per parser, taking raw
//! bytes. The cargo-fuzz targets (`fuzz/`) and the seeded run of the test suite
//! (`tests/fuzz.rs`) call the same functions, so a crash either finds is reproduced by
//! the other.
//!
//! Each returns `Err` when an input breaks a promise the parser makes besides not
//! panicking (a load error without file:line:col); a panic is left to the caller,
//! which reports it as the crash it is.

use std::sync::{Arc, OnceLock};

use crate::error::SourceFile;
use crate::template::Templar;

/// A parser under fuzzing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The YAML loader with spans ([`crate::yaml::parse_documents`]).
    Yaml,
    /// The inventory loaders (KubeKey's and Ansible's YAML forms), then a few queries.
    Inventory,
    /// A template rendered against a fixed set of variables.
    Template,
    /// One of Ansible's filters or lookups with fuzzed arguments.
    Filter,
    /// A host pattern against a fixed inventory.
    Pattern,
    /// The `k=v` splitter (Ansible's `split_args`, `parse_kv`).
    Split,
}

impl Target {
    /// Every target, in a fixed order.
    pub const ALL: [Target; 6] = [
        Target::Yaml,
        Target::Inventory,
        Target::Template,
        Target::Filter,
        Target::Pattern,
        Target::Split,
    ];

    /// The target's name (the cargo-fuzz target and corpus directory).
    pub fn name(self) -> &'static str {
        match self {
            Target::Yaml => "yaml",
            Target::Inventory => "inventory",
            Target::Template => "template",
            Target::Filter => "filter",
            Target::Pattern => "pattern",
            Target::Split => "split",
        }
    }

    /// Runs the target on one input.
    pub fn run(self, data: &[u8]) -> Result<(), String> {
        match self {
            Target::Yaml => yaml(data),
            Target::Inventory => inventory(data),
            Target::Template => template(data),
            Target::Filter => filter(data),
            Target::Pattern => pattern(data),
            Target::Split => split(data),
        }
    }
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// A load error must say where: file:line:col.
fn located(what: &str, e: &crate::Error) -> Result<(), String> {
    match &e.span {
        Some(_) => Ok(()),
        None => Err(format!(
            "{} error without file:line:col: {}",
            what,
            e.render()
        )),
    }
}

/// The YAML loader: any text parses or fails with a located error.
pub fn yaml(data: &[u8]) -> Result<(), String> {
    let file = SourceFile::new("fuzz.yaml", text(data));
    match crate::yaml::parse_documents(Arc::clone(&file)) {
        Ok(docs) => {
            for d in &docs {
                let _ = d.to_value();
            }
            Ok(())
        }
        Err(e) => located("YAML", &e),
    }
}

/// The inventory loaders: a document loads or fails with a located error; a loaded
/// inventory answers its queries.
pub fn inventory(data: &[u8]) -> Result<(), String> {
    let node = match crate::yaml::parse_str("fuzz-inventory.yaml", &text(data)) {
        Ok(n) => n,
        Err(e) => return located("YAML", &e),
    };
    match crate::inventory::Inventory::from_node(&node) {
        Ok(inv) => {
            for host in inv.host_names().iter().take(64) {
                let _ = inv.host_vars(host);
                let _ = inv.group_names(host);
            }
            let _ = inv.select("all:!ungrouped");
            Ok(())
        }
        Err(e) => located("inventory", &e),
    }
}

fn templar() -> &'static Templar {
    static T: OnceLock<Templar> = OnceLock::new();
    T.get_or_init(Templar::sandboxed)
}

/// The fixed variables templates are rendered with: every kind of value, the limits
/// of integers, network addresses, nesting.
fn variables() -> &'static minijinja::Value {
    static V: OnceLock<minijinja::Value> = OnceLock::new();
    V.get_or_init(|| {
        crate::template::to_mj(&serde_json::json!({
            "s": "hello world", "e": "", "text": "line one\nline two\n\nend\n",
            "n": 42, "neg": -7, "zero": 0, "big": i64::MAX, "small": i64::MIN,
            "f": 3.5, "nan_s": "nan", "t": true, "no": false, "z": null,
            "l": [1, "two", 3.5, [4, [5]], {"k": "v"}, null],
            "d": {"a": 1, "b": {"c": [1, 2]}, "name": "x", "value": "y"},
            "items": [{"key": "a", "value": 1}, {"key": "b", "value": 2}],
            "ip": "192.168.1.10/24", "ip6": "fe80::1/64", "ips": ["10.0.0.1", "10.0.0.0/8", "x"],
            "path": "/etc/kubernetes/admin.conf", "url": "https://dl.k8s.io/v1.33.1/bin?x=1",
            "version": "v1.33.1", "json": "{\"a\": [1, 2]}", "yaml": "a: [1, 2]\nb: {c: d}\n",
            "inventory_hostname": "node1", "groups": {"all": ["node1", "node2"], "k8s": ["node1"]},
            "hostvars": {"node1": {"ip": "10.0.0.1"}, "node2": {"ip": "10.0.0.2"}},
        }))
    })
}

/// A template: renders (both as task data and as a template file) or fails with an
/// error; never a panic, never a hang.
pub fn template(data: &[u8]) -> Result<(), String> {
    let src = text(data);
    let t = templar();
    let _ = t.render_str(&src, variables());
    let _ = t.render_text(&src, variables());
    let _ = t.eval_condition(&serde_json::Value::String(src), variables());
    Ok(())
}

/// Filters and lookups with argument types; the input picks which and with what.
const FILTERS: &[&str] = &[
    "indent",
    "format",
    "to_json",
    "to_nice_json",
    "to_yaml",
    "to_nice_yaml",
    "from_json",
    "from_yaml",
    "from_yaml_all",
    "combine",
    "dict2items",
    "items2dict",
    "flatten",
    "product",
    "zip_longest",
    "regex_search",
    "regex_replace",
    "regex_findall",
    "regex_escape",
    "b64encode",
    "b64decode",
    "hash",
    "comment",
    "human_readable",
    "human_to_bytes",
    "log",
    "pow",
    "root",
    "subelements",
    "to_uuid",
    "int",
    "float",
    "bool",
    "replace",
    "truncate",
    "round",
    "batch",
    "slice",
    "join",
    "split",
    "center",
    "wordwrap",
    "ipaddr",
    "ipsubnet",
    "ipmath",
    "ipwrap",
    "nthhost",
    "next_nth_usable",
    "network_in_usable",
    "ipv4",
    "ipv6",
    "version",
    "quote",
    "path_join",
    "splitext",
    "default",
    "ternary",
    "random",
    "shuffle",
    "extract",
    "map",
    "selectattr",
    "unique",
    "sort",
    "sum",
    "min",
    "max",
    "first",
    "last",
    "length",
    "list",
    "string",
    "trim",
    "upper",
    "title",
    "capitalize",
    "dictsort",
    "groupby",
    "urlencode",
    "mandatory",
    "type_debug",
    "toml",
    "to_toml",
    "from_toml",
];

/// Variables a filter is applied to.
const INPUTS: &[&str] = &[
    "s", "text", "n", "big", "small", "neg", "f", "l", "d", "items", "ip", "ip6", "ips", "path",
    "json", "yaml", "z", "e", "version",
];

/// Lookups that need nothing from the controller.
const LOOKUPS: &[&str] = &["sequence", "items", "list", "dict", "vars"];

/// One filter or lookup: the first bytes choose it and its input, the rest is the text
/// of its arguments (`x | f(<rest>)`, `lookup('l', <rest>)`).
pub fn filter(data: &[u8]) -> Result<(), String> {
    let (pick, input, args) = match data {
        [a, b, rest @ ..] => (*a as usize, *b as usize, text(rest)),
        _ => return Ok(()),
    };
    let src = if pick % 8 == 7 {
        let name = LOOKUPS[(pick / 8) % LOOKUPS.len()];
        format!("{{{{ query('{}', {}) }}}}", name, args)
    } else {
        let name = FILTERS[pick % FILTERS.len()];
        let input = INPUTS[input % INPUTS.len()];
        format!("{{{{ {} | {}({}) }}}}", input, name, args)
    };
    let _ = templar().render_str(&src, variables());
    Ok(())
}

/// A host pattern: parses and matches against a small inventory, or fails with an error.
pub fn pattern(data: &[u8]) -> Result<(), String> {
    static INV: OnceLock<crate::inventory::Inventory> = OnceLock::new();
    let inv = INV.get_or_init(|| {
        let node = crate::yaml::parse_str(
            "pattern-inventory.yaml",
            "all:\n  hosts:\n    localhost:\n  children:\n    k8s:\n      hosts:\n        node[1:3]:\n    etcd:\n      hosts:\n        node1:\n        db-[a:c].example.com:\n",
        )
        .expect("the fixed inventory parses");
        crate::inventory::Inventory::from_node(&node).expect("the fixed inventory loads")
    });
    let _ = inv.select(&text(data));
    Ok(())
}

/// The `k=v` splitter: `split_args` keeps every byte but the spaces that start a line,
/// as Ansible's does (its pieces join back to the input when it has no line
/// continuation), and `parse_kv` takes any text.
pub fn split(data: &[u8]) -> Result<(), String> {
    let s = text(data);
    let (pieces, _) = crate::ansible::split_args(&s);
    if !s.contains('\\') {
        let joined = crate::ansible::join_args(&pieces);
        let bare = |t: &str| {
            t.split('\n')
                .map(|l| l.trim_start_matches(' '))
                .collect::<Vec<_>>()
                .join("\n")
        };
        if bare(&joined) != bare(&s) {
            return Err(format!(
                "join_args(split_args(s)) != s: {:?} gave {:?}",
                s, joined
            ));
        }
    }
    let _ = crate::ansible::split_words_strict(&s);
    let _ = crate::project::kv::parse_kv(&s, true);
    let _ = crate::project::kv::parse_kv(&s, false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generated templates must never run a command or read the controller's files.
    #[test]
    fn the_sandbox_refuses_lookups_that_touch_the_controller() {
        for src in [
            "{{ lookup('pipe', 'touch /tmp/kk-fuzz-must-not-exist') }}",
            "{{ query('ansible.builtin.pipe', 'true') }}",
            "{{ q('file', '/etc/hostname') }}",
            "{{ lookup('env', 'HOME') }}",
            "{{ lookup('template', '/etc/hostname') }}",
            "{{ lookup('first_found', ['/etc/hostname']) }}",
        ] {
            let e = templar().render_str(src, variables()).unwrap_err();
            assert!(
                e.render().contains("is disabled here"),
                "{}: {}",
                src,
                e.render()
            );
        }
        assert!(!std::path::Path::new("/tmp/kk-fuzz-must-not-exist").exists());
        assert_eq!(
            templar()
                .render_str("{{ query('sequence', 'count=2') }}", variables())
                .unwrap(),
            serde_json::json!(["1", "2"])
        );
    }

    #[test]
    fn every_target_takes_empty_and_odd_input() {
        for t in Target::ALL {
            for input in [&b""[..], b"\xff\xfe", b"{{", b"- [", b"a=", b"\0"] {
                t.run(input)
                    .unwrap_or_else(|e| panic!("{}: {:?}: {}", t.name(), input, e));
            }
        }
    }
}
