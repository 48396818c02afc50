//! Unit tests: Python's and PyYAML's output for the same data.

use super::*;
use serde_json::json;

#[test]
fn float_repr_matches_python() {
    assert_eq!(py_float_repr(1.0), "1.0");
    assert_eq!(py_float_repr(0.1), "0.1");
    assert_eq!(py_float_repr(1e16), "1e+16");
    assert_eq!(py_float_repr(1.5e-7), "1.5e-07");
    assert_eq!(py_float_repr(123456.789), "123456.789");
    assert_eq!(py_float_repr(0.0001), "0.0001");
}

#[test]
fn json_like_python() {
    let v = json!({"b": [1, 2.5, null, true], "a": "é\n"});
    assert_eq!(
        dump_json(&v, &JsonOptions::default()),
        r#"{"b": [1, 2.5, null, true], "a": "\u00e9\n"}"#
    );
    let nice = JsonOptions {
        indent: Some("    ".into()),
        sort_keys: true,
        item_sep: ",".into(),
        ..Default::default()
    };
    assert_eq!(
            dump_json(&v, &nice),
            "{\n    \"a\": \"\\u00e9\\n\",\n    \"b\": [\n        1,\n        2.5,\n        null,\n        true\n    ]\n}"
        );
    assert_eq!(
        dump_json(&json!({"a": [], "b": {}}), &nice),
        "{\n    \"a\": [],\n    \"b\": {}\n}"
    );
}

#[test]
fn yaml_default_flow_style_none() {
    let o = YamlOptions::default();
    assert_eq!(
        dump_yaml(&json!({"b": 1, "a": [1, 2]}), &o),
        "a: [1, 2]\nb: 1\n"
    );
    assert_eq!(dump_yaml(&json!({"a": 1}), &o), "{a: 1}\n");
    assert_eq!(dump_yaml(&json!("abc"), &o), "abc\n...\n");
    assert_eq!(
        dump_yaml(&json!([{"x": "yes"}, "1.0", ""]), &o),
        "- {x: 'yes'}\n- '1.0'\n- ''\n"
    );
}

#[test]
fn yaml_nice() {
    let o = YamlOptions {
        indent: 4,
        flow_style: Some(false),
        ..Default::default()
    };
    let v =
        json!({"k": {"l": [1, {"n": "x", "m": [true]}], "e": {}, "s": "a: b", "t": "multi\nline"}});
    assert_eq!(
            dump_yaml(&v, &o),
            "k:\n    e: {}\n    l:\n    - 1\n    -   m:\n        - true\n        n: x\n    s: 'a: b'\n    t: 'multi\n\n        line'\n"
        );
    let o2 = YamlOptions {
        flow_style: Some(false),
        sort_keys: false,
        ..Default::default()
    };
    assert_eq!(
        dump_yaml(&json!({"z": "tab\there", "a": null, "f": 1e20}), &o2),
        "z: \"tab\\there\"\na: null\nf: 1.0e+20\n"
    );
}

#[test]
fn yaml_folds_long_plain_scalars() {
    let long = "word ".repeat(30).trim_end().to_string();
    let block = YamlOptions {
        flow_style: Some(false),
        ..Default::default()
    };
    let out = dump_yaml(&json!({"k": long}), &block);
    assert!(out.starts_with("k: word word"), "{}", out);
    assert!(out.contains("\n  word"), "{}", out);
    assert!(out.lines().all(|l| l.len() <= 84), "{}", out);
}
