//! The filters as templates see them: each case renders an expression through
//! [`Templar`](crate::template::Templar) and compares with Ansible's result.

use crate::template::{to_mj, Templar};
use serde_json::{json, Value as J};

fn ev(expr: &str, vars: J) -> Result<J, String> {
    let t = Templar::new();
    t.eval_expr(expr, &to_mj(&vars))
        .map_err(|e| e.render())
        .and_then(|v| serde_json::to_value(&v).map_err(|e| e.to_string()))
}

fn ok(expr: &str) -> J {
    ev(expr, json!({})).unwrap_or_else(|e| panic!("{}: {}", expr, e))
}

fn err(expr: &str) -> String {
    match ev(expr, json!({})) {
        Ok(v) => panic!("{} should fail, gave {}", expr, v),
        Err(e) => e,
    }
}

#[test]
fn default_and_omit() {
    assert_eq!(ok("missing | default('x')"), json!("x"));
    assert_eq!(ok("missing | d('x')"), json!("x"));
    assert_eq!(ok("'' | default('x', true)"), json!("x"));
    assert_eq!(ok("'' | default('x')"), json!(""));
    assert_eq!(ok("missing | default(omit)"), json!(crate::template::OMIT));
    assert_eq!(ok("0 | ansible.builtin.default(5, true)"), json!(5));
}

#[test]
fn mandatory_filter() {
    assert_eq!(ok("1 | mandatory"), json!(1));
    let e = err("nope | mandatory");
    assert!(e.contains("nope") || e.contains("Mandatory"), "{}", e);
    assert!(err("nope | mandatory('set nope please')").contains("set nope please"));
}

#[test]
fn bool_int_float() {
    for (s, b) in [
        ("'yes'", true),
        ("'On'", true),
        ("'1'", true),
        ("'TRUE'", true),
        ("1", true),
        ("true", true),
    ] {
        assert_eq!(ok(&format!("{} | bool", s)), json!(b), "{}", s);
    }
    for s in [
        "'no'", "'off'", "'0'", "'false'", "0", "false", "none", "'y'", "'foo'", "2",
    ] {
        assert_eq!(ok(&format!("{} | bool", s)), json!(false), "{}", s);
    }
    assert_eq!(ok("'42' | int"), json!(42));
    assert_eq!(ok("' 42 ' | int"), json!(42));
    assert_eq!(ok("'3.7' | int"), json!(3));
    assert_eq!(ok("3.7 | int"), json!(3));
    assert_eq!(ok("'abc' | int"), json!(0));
    assert_eq!(ok("'abc' | int(7)"), json!(7));
    assert_eq!(ok("'abc' | int(default=-1)"), json!(-1));
    assert_eq!(ok("'0x1f' | int(base=16)"), json!(31));
    assert_eq!(ok("'1f' | int(base=16)"), json!(31));
    assert_eq!(ok("'0b101' | int(0, 0)"), json!(5));
    assert_eq!(ok("'1_000' | int"), json!(1000));
    assert_eq!(ok("none | int"), json!(0));
    assert_eq!(ok("true | int"), json!(1));
    assert_eq!(ok("'1.5' | float"), json!(1.5));
    assert_eq!(ok("'x' | float"), json!(0.0));
    assert_eq!(ok("'x' | float(2.5)"), json!(2.5));
    assert_eq!(ok("3 | float"), json!(3.0));
    assert!(err("nope | int").contains("nope") || err("nope | int").contains("undefined"));
}

#[test]
fn string_and_type_debug() {
    assert_eq!(ok("1 | string"), json!("1"));
    assert_eq!(ok("none | string"), json!("None"));
    assert_eq!(ok("true | string"), json!("True"));
    for (e, t) in [
        ("'a'", "str"),
        ("1", "int"),
        ("1.5", "float"),
        ("true", "bool"),
        ("[1]", "list"),
        ("{'a': 1}", "dict"),
        ("none", "NoneType"),
    ] {
        assert_eq!(ok(&format!("{} | type_debug", e)), json!(t), "{}", e);
    }
}

#[test]
fn replace_with_count() {
    assert_eq!(ok("'aaa' | replace('a', 'b')"), json!("bbb"));
    assert_eq!(ok("'aaa' | replace('a', 'b', 2)"), json!("bba"));
}

#[test]
fn json_filters() {
    assert_eq!(
        ok("{'b': 1, 'a': [1, 2.0, none, true]} | to_json"),
        json!(r#"{"b": 1, "a": [1, 2.0, null, true]}"#)
    );
    assert_eq!(
        ok("{'b': 1, 'a': 2} | to_json(sort_keys=true)"),
        json!(r#"{"a": 2, "b": 1}"#)
    );
    assert_eq!(
        ok("{'b': 1, 'a': 2} | to_json(indent=2)"),
        json!("{\n  \"b\": 1,\n  \"a\": 2\n}")
    );
    assert_eq!(ok("'é' | to_json"), json!("\"\\u00e9\""));
    assert_eq!(ok("'é' | to_json(ensure_ascii=false)"), json!("\"é\""));
    assert_eq!(
        ok("{'b': [1], 'a': {}} | to_nice_json"),
        json!("{\n    \"a\": {},\n    \"b\": [\n        1\n    ]\n}")
    );
    assert_eq!(
        ok("{'b': 1} | to_nice_json(indent=2)"),
        json!("{\n  \"b\": 1\n}")
    );
    assert_eq!(
        ok("'{\"a\": [1, 2], \"b\": null}' | from_json"),
        json!({"a": [1, 2], "b": null})
    );
    assert!(err("'{bad' | from_json").contains("from_json: invalid JSON"));
    assert_eq!(
        ok("{'x': 1} | ansible.builtin.to_json | from_json"),
        json!({"x": 1})
    );
}

#[test]
fn yaml_filters() {
    assert_eq!(
        ok("{'b': 1, 'a': [1, 2]} | to_yaml"),
        json!("a: [1, 2]\nb: 1\n")
    );
    assert_eq!(
        ok("{'b': 1, 'a': [1, 2]} | to_nice_yaml"),
        json!("a:\n- 1\n- 2\nb: 1\n")
    );
    assert_eq!(
        ok("{'b': {'c': 'yes'}} | to_nice_yaml(indent=2)"),
        json!("b:\n  c: 'yes'\n")
    );
    assert_eq!(
        ok("{'b': 1, 'a': 2} | to_nice_yaml(sort_keys=false)"),
        json!("b: 1\na: 2\n")
    );
    assert_eq!(
        ok("'a: 1\\nb: [x, yes, 0755]' | from_yaml"),
        json!({"a": 1, "b": ["x", true, 493]})
    );
    assert_eq!(
        ok("'a: 1\\n---\\nb: 2\\n' | from_yaml_all"),
        json!([{"a": 1}, {"b": 2}])
    );
    assert_eq!(ok("[1] | from_yaml"), json!([1]));
    assert!(err("'a: [' | from_yaml").contains("from_yaml: invalid YAML"));
}

#[test]
fn combine_filter() {
    assert_eq!(
        ok("{'a': 1, 'b': 2} | combine({'b': 3, 'c': 4})"),
        json!({"a": 1, "b": 3, "c": 4})
    );
    assert_eq!(
        ok("{'a': 1} | combine({'b': 2}, {'a': 3})"),
        json!({"a": 3, "b": 2})
    );
    assert_eq!(ok("[{'a': 1}, {'a': 2}] | combine"), json!({"a": 2}));
    let nested = "{'a': {'x': 1, 'l': [1, 2]}, 'b': 1}";
    assert_eq!(
        ok(&format!("{} | combine({{'a': {{'y': 2}}}})", nested)),
        json!({"a": {"y": 2}, "b": 1})
    );
    assert_eq!(
        ok(&format!(
            "{} | combine({{'a': {{'y': 2}}}}, recursive=True)",
            nested
        )),
        json!({"a": {"x": 1, "l": [1, 2], "y": 2}, "b": 1})
    );
    let lm = |m: &str| {
        ok(&format!(
            "{{'l': [1, 2]}} | combine({{'l': [2, 3]}}, list_merge='{}')",
            m
        ))
    };
    assert_eq!(lm("replace"), json!({"l": [2, 3]}));
    assert_eq!(lm("keep"), json!({"l": [1, 2]}));
    assert_eq!(lm("append"), json!({"l": [1, 2, 2, 3]}));
    assert_eq!(lm("prepend"), json!({"l": [2, 3, 1, 2]}));
    assert_eq!(lm("append_rp"), json!({"l": [1, 2, 3]}));
    assert_eq!(lm("prepend_rp"), json!({"l": [2, 3, 1]}));
    assert!(err("{} | combine({}, list_merge='bad')").contains("list_merge"));
    assert!(err("{} | combine([1])").contains("expected dictionaries"));
    assert!(err("{} | combine({}, foo=1)").contains("only valid keyword"));
}

#[test]
fn dict_items() {
    assert_eq!(
        ok("{'a': 1, 'b': 2} | dict2items"),
        json!([{"key": "a", "value": 1}, {"key": "b", "value": 2}])
    );
    assert_eq!(
        ok("{'a': 1} | dict2items(key_name='k', value_name='v')"),
        json!([{"k": "a", "v": 1}])
    );
    assert_eq!(
        ok("[{'key': 'a', 'value': 1}] | items2dict"),
        json!({"a": 1})
    );
    assert_eq!(
        ok("[{'n': 'a', 'v': 1}] | items2dict(key_name='n', value_name='v')"),
        json!({"a": 1})
    );
    assert!(err("[1] | dict2items").contains("dict2items requires a dictionary, got list"));
    assert!(err("[{'x': 1}] | items2dict").contains("'key' and 'value'"));
}

#[test]
fn set_theory() {
    assert_eq!(ok("[1, 2, 2, 3] | unique"), json!([1, 2, 3]));
    assert_eq!(ok("[{'a': 1}, {'a': 1}] | unique"), json!([{"a": 1}]));
    assert_eq!(ok("[1, 2] | union([2, 3])"), json!([1, 2, 3]));
    assert_eq!(ok("[1, 2, 2] | intersect([2, 3])"), json!([2]));
    assert_eq!(ok("[1, 2, 1] | difference([2, 3])"), json!([1]));
    assert_eq!(ok("[1, 2] | symmetric_difference([2, 3])"), json!([1, 3]));
    assert!(err("1 | union([1])").contains("union: the input must be a list, got int"));
}

#[test]
fn flatten_zip_product() {
    assert_eq!(
        ok("[1, [2, [3, [4]]], none, 'null'] | flatten"),
        json!([1, 2, 3, 4])
    );
    assert_eq!(
        ok("[1, [2, [3, [4]]]] | flatten(levels=1)"),
        json!([1, 2, [3, [4]]])
    );
    assert_eq!(ok("[1, [2, [3]]] | flatten(1)"), json!([1, 2, [3]]));
    assert_eq!(
        ok("[1, none] | flatten(skip_nulls=false)"),
        json!([1, null])
    );
    assert_eq!(
        ok("[1, 2] | zip(['a', 'b']) | list"),
        json!([[1, "a"], [2, "b"]])
    );
    assert_eq!(
        ok("[1, 2, 3] | zip_longest(['a'])"),
        json!([[1, "a"], [2, null], [3, null]])
    );
    assert_eq!(
        ok("[1, 2] | zip_longest(['a'], fillvalue='-')"),
        json!([[1, "a"], [2, "-"]])
    );
    assert_eq!(
        ok("[1, 2] | product(['a', 'b'])"),
        json!([[1, "a"], [1, "b"], [2, "a"], [2, "b"]])
    );
    assert_eq!(ok("[0, 1] | product(repeat=2) | length"), json!(4));
}

#[test]
fn regex_filters() {
    assert_eq!(ok("'foo bar' | regex_search('o+')"), json!("oo"));
    assert_eq!(ok("'foo bar' | regex_search('z')"), json!(null));
    assert_eq!(ok("'server1/database42' | regex_search('server([0-9]+)/database([0-9]+)', '\\\\1', '\\\\2')"), json!(["1", "42"]));
    assert_eq!(
        ok("'a=1' | regex_search('(?P<k>\\\\w)=(?P<v>\\\\d)', '\\\\g<v>')"),
        json!(["1"])
    );
    assert_eq!(
        ok("'FOO' | regex_search('foo', ignorecase=true)"),
        json!("FOO")
    );
    assert_eq!(
        ok("'a\\nfoo' | regex_search('^foo', multiline=true)"),
        json!("foo")
    );
    assert_eq!(ok("'a\\nfoo' | regex_search('^foo')"), json!(null));
    assert_eq!(
        ok("'ansible' | regex_replace('^a.*i(.*)$', 'a\\\\1')"),
        json!("able")
    );
    assert_eq!(
        ok("'foobar' | regex_replace('^f.*o(.*)$', '\\\\1')"),
        json!("bar")
    );
    assert_eq!(ok("'localhost:80' | regex_replace('^(?P<host>.+):(?P<port>\\\\d+)$', '\\\\g<host>, \\\\g<port>')"), json!("localhost, 80"));
    assert_eq!(
        ok("'CAR' | regex_replace('car', 'bus', ignorecase=true)"),
        json!("bus")
    );
    assert_eq!(ok("'aaa' | regex_replace('a', 'b', count=1)"), json!("baa"));
    assert_eq!(ok("'a$b' | regex_replace('\\\\$', '$')"), json!("a$b"));
    assert_eq!(
        ok("'foo(1)' | regex_replace('(?<=foo)\\\\(', '[')"),
        json!("foo[1)")
    );
    assert_eq!(ok("'a1b22' | regex_findall('\\\\d+')"), json!(["1", "22"]));
    assert_eq!(
        ok("'k=v x=y' | regex_findall('(\\\\w)=(\\\\w)')"),
        json!([["k", "v"], ["x", "y"]])
    );
    assert_eq!(ok("'a.b*c' | regex_escape"), json!("a\\.b\\*c"));
    assert_eq!(
        ok("'^f.*o(.*)$' | regex_escape('posix_basic')"),
        json!("\\^f\\.\\*o(\\.\\*)\\$")
    );
    assert!(err("'x' | regex_search('(')").contains("regex_search: invalid regular expression"));
    assert!(err("'x' | regex_search('x', 'bad')").contains("unknown argument"));
}

#[test]
fn encodings_and_hashes() {
    assert_eq!(ok("'hello' | b64encode"), json!("aGVsbG8="));
    assert_eq!(ok("'aGVsbG8=' | b64decode"), json!("hello"));
    assert_eq!(ok("'aGVsbG8' | b64decode"), json!("hello"));
    assert_eq!(
        ok("'hi' | b64encode(encoding='utf-16-le')"),
        json!("aABpAA==")
    );
    assert_eq!(
        ok("'aABpAA==' | b64decode(encoding='utf-16-le')"),
        json!("hi")
    );
    assert!(err("'!!!' | b64decode").contains("b64decode"));
    assert_eq!(
        ok("'test' | hash('sha1')"),
        json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
    );
    assert_eq!(
        ok("'test' | hash"),
        json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
    );
    assert_eq!(
        ok("'test' | sha1"),
        json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
    );
    assert_eq!(
        ok("'test' | checksum"),
        json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
    );
    assert_eq!(
        ok("'test' | md5"),
        json!("098f6bcd4621d373cade4e832627b4f6")
    );
    assert_eq!(
        ok("'test' | hash('md5')"),
        json!("098f6bcd4621d373cade4e832627b4f6")
    );
    assert_eq!(
        ok("'test' | hash('sha256')"),
        json!("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
    );
    assert_eq!(ok("'test' | hash('sha512') | length"), json!(128));
    assert!(err("'x' | hash('crc')").contains("unsupported hash type 'crc'"));
}

#[test]
fn paths_and_quote() {
    assert_eq!(ok("'/etc/asdf/foo.txt' | basename"), json!("foo.txt"));
    assert_eq!(ok("'/etc/asdf/' | basename"), json!(""));
    assert_eq!(ok("'/etc/asdf/foo.txt' | dirname"), json!("/etc/asdf"));
    assert_eq!(ok("'/etc/asdf/' | dirname"), json!("/etc/asdf"));
    assert_eq!(ok("'foo' | dirname"), json!(""));
    assert_eq!(ok("'/foo' | dirname"), json!("/"));
    assert_eq!(
        ok("'/etc/my.cfg.bak' | splitext"),
        json!(["/etc/my.cfg", ".bak"])
    );
    assert_eq!(ok("'.bashrc' | splitext"), json!([".bashrc", ""]));
    assert_eq!(ok("'a/b' | splitext"), json!(["a/b", ""]));
    assert_eq!(
        ok("['/etc', 'x', 'y.conf'] | path_join"),
        json!("/etc/x/y.conf")
    );
    assert_eq!(ok("['/etc', '/abs'] | path_join"), json!("/abs"));
    assert_eq!(ok("'/no/tilde' | expanduser"), json!("/no/tilde"));
    let home = std::env::var("HOME").unwrap_or_default();
    if !home.is_empty() {
        assert_eq!(
            ok("'~/x' | expanduser"),
            json!(format!("{}/x", home.trim_end_matches('/')))
        );
    }
    assert_eq!(ok("'abc' | quote"), json!("abc"));
    assert_eq!(ok("'a b' | quote"), json!("'a b'"));
    assert_eq!(ok("\"it's\" | quote"), json!("'it'\"'\"'s'"));
    assert_eq!(ok("'' | quote"), json!("''"));
    assert_eq!(ok("none | quote"), json!("''"));
    assert_eq!(
        ok("'a=b,c:d@e%f+g./-h' | quote"),
        json!("a=b,c:d@e%f+g./-h")
    );
}

#[test]
fn ternary_split_extract() {
    assert_eq!(ok("true | ternary('y', 'n')"), json!("y"));
    assert_eq!(ok("'' | ternary('y', 'n')"), json!("n"));
    assert_eq!(ok("none | ternary('y', 'n', 'z')"), json!("z"));
    assert_eq!(ok("none | ternary('y', 'n')"), json!("n"));
    assert_eq!(ok("'a b  c' | split"), json!(["a", "b", "c"]));
    assert_eq!(ok("'a,b,,c' | split(',')"), json!(["a", "b", "", "c"]));
    assert_eq!(ok("'a,b,c' | split(',', 1)"), json!(["a", "b,c"]));
    assert_eq!(
        ok("[0, 2] | map('extract', ['x', 'y', 'z']) | list"),
        json!(["x", "z"])
    );
    assert_eq!(ok("'a' | extract({'a': {'b': 5}}, 'b')"), json!(5));
    assert_eq!(
        ok("'a' | extract({'a': {'b': {'c': 6}}}, ['b', 'c'])"),
        json!(6)
    );
    assert_eq!(
        ok("'q' | extract({'a': 1}) | default('none')"),
        json!("none")
    );
}

#[test]
fn human_sizes() {
    assert_eq!(ok("1024 | human_readable"), json!("1.00 KB"));
    assert_eq!(ok("10 | human_readable"), json!("10.00 Bytes"));
    assert_eq!(ok("0 | human_readable"), json!("0.00 Bytes"));
    assert_eq!(
        ok("1048576 | human_readable(isbits=true)"),
        json!("1.00 Mb")
    );
    assert_eq!(
        ok("1048576 | human_readable(unit='K')"),
        json!("1024.00 KB")
    );
    assert_eq!(ok("'1K' | human_to_bytes"), json!(1024));
    assert_eq!(ok("'1.5 MB' | human_to_bytes"), json!(1572864));
    assert_eq!(ok("'2' | human_to_bytes"), json!(2));
    assert_eq!(ok("'2' | human_to_bytes(default_unit='K')"), json!(2048));
    assert_eq!(ok("'1 megabyte' | human_to_bytes"), json!(1048576));
    assert_eq!(ok("'10Mb' | human_to_bytes(isbits=true)"), json!(10485760));
    assert!(err("'10 Mb' | human_to_bytes").contains("expect MB or M"));
    assert!(err("'abc' | human_to_bytes").contains("can't interpret"));
    assert!(err("'1 X' | human_to_bytes").contains("suffix must be one of"));
}

#[test]
fn comment_filter() {
    assert_eq!(ok("'hello' | comment"), json!("#\n# hello\n#"));
    assert_eq!(ok("'a\\nb' | comment('c')"), json!("//\n// a\n// b\n//"));
    assert_eq!(
        ok("'x' | comment('cblock')"),
        json!("/*\n *\n * x\n *\n */")
    );
    assert_eq!(ok("'x' | comment(decoration='; ')"), json!(";\n; x\n;"));
    assert_eq!(ok("'x' | comment('xml')"), json!("<!--\n -\n - x\n -\n-->"));
}

#[test]
fn subelements_and_uuid() {
    let users = "[{'name': 'a', 'groups': ['wheel', 'docker']}, {'name': 'b', 'groups': []}, {'name': 'c'}]";
    assert_eq!(
        ok(&format!(
            "{} | subelements('groups', skip_missing=true) | map('last') | list",
            users
        )),
        json!(["wheel", "docker"])
    );
    assert_eq!(
        ok("[{'n': 1, 'x': {'l': [5]}}] | subelements('x.l')"),
        json!([[{"n": 1, "x": {"l": [5]}}, 5]])
    );
    assert!(
        err(&format!("{} | subelements('groups')", users)).contains("could not find 'groups' key")
    );
    assert!(err("[{'g': 1}] | subelements('g')").contains("should point to a list"));
    assert_eq!(
        ok("'python.org' | to_uuid(namespace='6ba7b810-9dad-11d1-80b4-00c04fd430c8')"),
        json!("886313e1-3b8a-5372-9b90-0c9aee199e5d")
    );
    assert_eq!(ok("'x' | to_uuid | length"), json!(36));
}

#[test]
fn dict_function() {
    assert_eq!(
        ok("dict(['a', 'b'] | zip([1, 2]))"),
        json!({"a": 1, "b": 2})
    );
    assert_eq!(
        ok("dict([['a', 1], ['a', 2], ['b', 3]])"),
        json!({"a": 2, "b": 3})
    );
    assert_eq!(ok("dict(a=1, b='x')"), json!({"a": 1, "b": "x"}));
    assert_eq!(ok("dict({'a': 1}, b=2)"), json!({"a": 1, "b": 2}));
    assert_eq!(ok("dict()"), json!({}));
    assert!(err("dict([1, 2])").contains("dict: each item must be a (key, value) pair"));
}

#[test]
fn math() {
    assert_eq!(ok("100 | log(10)"), json!(2.0));
    assert_eq!(ok("2 | pow(10)"), json!(1024.0));
    assert_eq!(ok("9 | root"), json!(3.0));
    assert_eq!(ok("27 | root(3) | round"), json!(3.0));
}

#[test]
fn jinja_builtins_behave_as_jinja2() {
    let vars = json!({"l": [{"a": 2, "n": "B"}, {"a": 1, "n": "a"}]});
    let e = |x: &str| ev(x, vars.clone()).unwrap();
    assert_eq!(
        e("l | sort(attribute='n') | map(attribute='n') | list"),
        json!(["a", "B"])
    );
    assert_eq!(
        e("l | selectattr('n', 'equalto', 'a') | map(attribute='a') | list"),
        json!([1])
    );
    assert_eq!(
        e("l | selectattr('n', 'match', '[A-Z]') | map(attribute='a') | list"),
        json!([2])
    );
    assert_eq!(e("l | min(attribute='a')"), json!({"a": 1, "n": "a"}));
    assert_eq!(e("l | sum(attribute='a')"), json!(3));
    assert_eq!(e("l | map(attribute='a') | join(',')"), json!("2,1"));
    assert_eq!(e("'%s-%d' | format('x', 3)"), json!("x-3"));
    assert_eq!(e("range(3) | list"), json!([0, 1, 2]));
    assert_eq!(e("{'a': 1} | items | list"), json!([["a", 1]]));
    assert_eq!(e("['a', 'A', 'b'] | unique | list"), json!(["a", "b"]));
    assert_eq!(
        e("l | ansible.builtin.map(attribute='a') | ansible.builtin.max"),
        json!(2)
    );
}
