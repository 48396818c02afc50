//! `find` on the local host: the listing, the walk order and the filters together.

use std::fs;
use std::os::unix::fs::symlink;

use super::super::remote::testutil::{args, ctx};
use super::super::Module;
use super::Find;
use serde_json::{json, Value};

async fn found(v: Value) -> (Vec<String>, Value) {
    let dir = std::env::temp_dir();
    let r = Find.run(&ctx(&dir, json!({})), args(v)).await.unwrap();
    let data = r.to_value();
    let paths = data["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    (paths, data)
}

#[tokio::test]
async fn filters_and_walk() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().to_str().unwrap().to_string();
    fs::create_dir_all(t.path().join("sub/deeper")).unwrap();
    fs::create_dir_all(t.path().join(".hid")).unwrap();
    fs::write(t.path().join("a.txt"), "hello\nworld\n").unwrap();
    fs::write(t.path().join("b.log"), "x".repeat(2048)).unwrap();
    fs::write(t.path().join(".h.txt"), "").unwrap();
    fs::write(t.path().join("sub/c.txt"), "key=1\n").unwrap();
    fs::write(t.path().join("sub/deeper/d.txt"), "").unwrap();
    fs::write(t.path().join(".hid/e.txt"), "").unwrap();
    symlink("a.txt", t.path().join("link.txt")).unwrap();
    let p = |rel: &str| format!("{}/{}", root, rel);
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };

    let (files, r) = found(json!({"paths": root, "patterns": "*.txt"})).await;
    assert_eq!(files, vec![p("a.txt")]);
    assert_eq!(r["examined"], 6);
    assert_eq!(r["msg"], "All paths examined");
    assert_eq!(r["files"][0]["size"], 12);
    assert_eq!(r["files"][0]["isreg"], true);

    let (files, _) = found(json!({"paths": root, "patterns": "*.txt", "recurse": true})).await;
    // A hidden directory is walked; only names starting with `.` are left out.
    assert_eq!(
        sorted(files),
        vec![
            p(".hid/e.txt"),
            p("a.txt"),
            p("sub/c.txt"),
            p("sub/deeper/d.txt")
        ]
    );

    let (files, _) =
        found(json!({"paths": root, "recurse": true, "depth": 1, "hidden": true})).await;
    assert_eq!(sorted(files), vec![p(".h.txt"), p("a.txt"), p("b.log")]);

    let (files, _) = found(json!({"paths": root, "size": "1k"})).await;
    assert_eq!(files, vec![p("b.log")]);

    let (files, _) = found(json!({"paths": root, "recurse": true, "contains": "key="})).await;
    assert_eq!(files, vec![p("sub/c.txt")]);

    let (files, _) = found(json!({"paths": root, "file_type": "directory"})).await;
    assert_eq!(files, vec![p("sub")]);

    let (files, _) = found(json!({"paths": root, "file_type": "link"})).await;
    assert_eq!(files, vec![p("link.txt")]);

    let (files, _) =
        found(json!({"paths": root, "patterns": [r"^[ab]\."], "use_regex": true, "excludes": "b"}))
            .await;
    assert_eq!(files, vec![p("a.txt")]);

    let (_, r) = found(json!({"paths": root, "get_checksum": true, "patterns": "a.txt"})).await;
    assert_eq!(
        r["files"][0]["checksum"],
        "58853e8a5e8272b1012f9a52a80758b27bd0d3cb"
    );

    let (files, r) =
        found(json!({"paths": [p("a.txt"), root.clone()], "recurse": true, "limit": 1})).await;
    assert_eq!(files.len(), 1);
    assert_eq!(
        r["msg"],
        "Not all paths examined, check warnings for details"
    );
    assert_eq!(
        r["skipped_paths"][p("a.txt")],
        format!("'{}' is not a directory", p("a.txt"))
    );
}

#[test]
fn bad_arguments_are_refused() {
    let e = |v: Value| super::check(args(v)).err().unwrap().message;
    assert!(e(json!({})).contains("`paths` is required"));
    assert!(e(json!({"paths": "/", "age": "3x"})).contains("age"));
    assert!(e(json!({"paths": "/", "mode": 420})).contains("'mode' is not a string"));
    assert!(e(json!({"paths": "/", "limit": 0})).contains("limit cannot be 0"));
    assert!(e(json!({"paths": "/", "file_type": "socket"})).contains("file_type"));
    assert!(e(json!({"paths": "/", "use_regex": true, "patterns": "("})).contains("patterns"));
    assert!(e(json!({"paths": "/", "colour": 1})).contains("colour"));
}
