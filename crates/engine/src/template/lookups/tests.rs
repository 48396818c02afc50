//! Unit tests of the lookups through templates.

use crate::template::{to_mj, Templar};
use serde_json::{json, Value as J};

fn ev(expr: &str, vars: &J) -> Result<J, String> {
    let t = Templar::new();
    t.eval_expr(expr, &to_mj(vars))
        .map_err(|e| e.render())
        .map(|v| serde_json::to_value(&v).unwrap())
}

fn setup() -> (tempfile::TempDir, J) {
    let dir = tempfile::tempdir().unwrap();
    let role = dir.path().join("roles/r");
    std::fs::create_dir_all(role.join("files")).unwrap();
    std::fs::create_dir_all(role.join("templates")).unwrap();
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(role.join("files/a.txt"), "role file\n\n").unwrap();
    std::fs::write(dir.path().join("files/b.txt"), "play file\n").unwrap();
    std::fs::write(dir.path().join("c.txt"), "top\n").unwrap();
    std::fs::write(
        role.join("templates/t.j2"),
        "{% if name %}\nhello {{ name }}{{ extra | default('') }}\n{% endif %}\n",
    )
    .unwrap();
    let vars = json!({
        "role_path": role.display().to_string(),
        "playbook_dir": dir.path().display().to_string(),
        "name": "world",
        "other": {"x": 1},
    });
    let mut with_vars = vars.clone();
    with_vars["vars"] = vars.clone();
    (dir, with_vars)
}

#[test]
fn file_lookup() {
    let (_d, v) = setup();
    assert_eq!(
        ev("lookup('file', 'a.txt')", &v).unwrap(),
        json!("role file")
    );
    assert_eq!(
        ev("lookup('ansible.builtin.file', 'b.txt')", &v).unwrap(),
        json!("play file")
    );
    assert_eq!(ev("lookup('file', 'c.txt')", &v).unwrap(), json!("top"));
    assert_eq!(
        ev("lookup('file', 'a.txt', 'c.txt')", &v).unwrap(),
        json!("role file,top")
    );
    assert_eq!(
        ev("query('file', 'a.txt', 'c.txt')", &v).unwrap(),
        json!(["role file", "top"])
    );
    assert_eq!(
        ev("lookup('file', 'a.txt', rstrip=false)", &v).unwrap(),
        json!("role file\n\n")
    );
    let e = ev("lookup('file', 'nope.txt')", &v).unwrap_err();
    assert!(
        e.contains("lookup('file'): could not find 'nope.txt'") && e.contains("searched"),
        "{}",
        e
    );
    assert_eq!(
        ev("lookup('file', 'nope.txt', errors='ignore')", &v).unwrap(),
        json!(null)
    );
    let abs = format!("{}/c.txt", v["playbook_dir"].as_str().unwrap());
    assert_eq!(
        ev(&format!("lookup('file', '{}')", abs), &json!({})).unwrap(),
        json!("top")
    );
}

#[test]
fn template_lookup() {
    let (_d, v) = setup();
    assert_eq!(
        ev("lookup('template', 't.j2')", &v).unwrap(),
        json!("hello world\n")
    );
    assert_eq!(
        ev(
            "lookup('template', 't.j2', template_vars={'extra': '!'})",
            &v
        )
        .unwrap(),
        json!("hello world!\n")
    );
    // template_vars win over the variables.
    assert_eq!(
        ev(
            "lookup('template', 't.j2', template_vars={'name': 'there'})",
            &v
        )
        .unwrap(),
        json!("hello there\n")
    );
    let mut bad = v.clone();
    bad["vars"] = json!({});
    let e = ev("lookup('template', 't.j2')", &bad).unwrap_err();
    // Located in the template file itself: path:line:col.
    assert!(
        e.contains("lookup('template'): ") && e.contains("t.j2:1:"),
        "{}",
        e
    );
}

#[test]
fn env_pipe_vars() {
    let (_d, v) = setup();
    std::env::set_var("KK_LOOKUP_TEST", "val");
    assert_eq!(
        ev("lookup('env', 'KK_LOOKUP_TEST')", &v).unwrap(),
        json!("val")
    );
    assert_eq!(
        ev("lookup('env', 'KK_LOOKUP_NOPE_X')", &v).unwrap(),
        json!("")
    );
    assert_eq!(
        ev("lookup('env', 'KK_LOOKUP_NOPE_X', default='d')", &v).unwrap(),
        json!("d")
    );
    assert_eq!(
        ev("lookup('pipe', 'echo hi; echo')", &v).unwrap(),
        json!("hi")
    );
    assert_eq!(ev("lookup('pipe', 'cat c.txt')", &v).unwrap(), json!("top"));
    let e = ev("lookup('pipe', 'exit 3')", &v).unwrap_err();
    assert!(e.contains("lookup('pipe'): `exit 3` returned 3"), "{}", e);
    assert_eq!(ev("lookup('vars', 'other')", &v).unwrap(), json!({"x": 1}));
    assert_eq!(
        ev("lookup('vars', 'name', 'name')", &v).unwrap(),
        json!("world,world")
    );
    assert_eq!(
        ev("lookup('vars', 'missing', default=5)", &v).unwrap(),
        json!(5)
    );
    assert!(ev("lookup('vars', 'missing')", &v)
        .unwrap_err()
        .contains("no variable found with this name: missing"));
}

#[test]
fn list_lookups() {
    let v = json!({});
    assert_eq!(
        ev("query('items', [1, [2, 3]], 4)", &v).unwrap(),
        json!([1, [2, 3], 4])
    );
    assert_eq!(
        ev("query('items', [1, 2], [3])", &v).unwrap(),
        json!([1, 2, 3])
    );
    assert_eq!(ev("q('list', 1, 2)", &v).unwrap(), json!([1, 2]));
    assert_eq!(
        ev("query('dict', {'a': 1, 'b': 2})", &v).unwrap(),
        json!([{"key": "a", "value": 1}, {"key": "b", "value": 2}])
    );
    assert_eq!(
        ev("lookup('dict', {'a': 1})", &v).unwrap(),
        json!({"key": "a", "value": 1})
    );
    assert!(ev("query('dict', [1])", &v)
        .unwrap_err()
        .contains("lookup('dict'): expected a dict"));
    assert!(ev("lookup('nosuch', 1)", &v)
        .unwrap_err()
        .contains("lookup plugin 'nosuch' is not available"));
    assert_eq!(
        ev("query('sequence', 'start=1 end=3')", &v).unwrap(),
        json!(["1", "2", "3"])
    );
    assert_eq!(
        ev(
            "query('sequence', 'start=0 end=4 stride=2 format=node%02d')",
            &v
        )
        .unwrap(),
        json!(["node00", "node02", "node04"])
    );
    assert_eq!(
        ev("query('sequence', '2-4/1:h%d')", &v).unwrap(),
        json!(["h2", "h3", "h4"])
    );
    assert_eq!(
        ev("query('sequence', count=3)", &v).unwrap(),
        json!(["1", "2", "3"])
    );
}

#[test]
fn first_found_lookup() {
    let (_d, v) = setup();
    assert!(ev("lookup('first_found', ['nope.txt', 'a.txt'])", &v)
        .unwrap()
        .as_str()
        .unwrap()
        .ends_with("roles/r/files/a.txt"));
    assert!(ev("lookup('first_found', {'files': ['x', 'b.txt']})", &v)
        .unwrap()
        .as_str()
        .unwrap()
        .ends_with("files/b.txt"));
    assert_eq!(
        ev("query('first_found', ['x'], skip=true)", &v).unwrap(),
        json!([])
    );
    assert!(ev("lookup('first_found', ['x'])", &v)
        .unwrap_err()
        .contains("no file was found"));
}

#[test]
fn sequence_at_the_edges_of_i64_is_an_error_not_a_hang() {
    let v = json!({});
    let max = i64::MAX;
    let min = i64::MIN;
    for expr in [
        format!("query('sequence', 'start={} end={}')", max - 1, max),
        format!(
            "query('sequence', 'start={} end={} stride=-1')",
            min + 1,
            min
        ),
        format!("query('sequence', 'start={} count=3 stride={}')", max, max),
        format!(
            "query('sequence', 'start={} end={} stride={}')",
            min, max, max
        ),
        "query('sequence', 'count=1000000000000000000')".to_string(),
        "query('sequence', 'start=0 end=1 format=%10000000000d')".to_string(),
        format!("query('sequence', 'start=1 end={}')", max),
    ] {
        match ev(&expr, &v) {
            Ok(items) => assert!(items.as_array().unwrap().len() <= 3, "{}", expr),
            Err(e) => assert!(e.contains("lookup('sequence')"), "{}: {}", expr, e),
        }
    }
    assert_eq!(
        ev(
            &format!("query('sequence', 'start={} end={}')", max - 1, max),
            &v
        )
        .unwrap(),
        json!([(max - 1).to_string(), max.to_string()])
    );
    let e = ev("query('sequence', 'count=1000000000000000000')", &v).unwrap_err();
    assert!(e.contains("refusing more than 1000000"), "{}", e);
}
