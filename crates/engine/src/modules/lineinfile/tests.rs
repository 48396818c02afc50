use super::super::remote::testutil::{args, ctx, mode_of};
use super::rules::{absent, compile, present, split_lines, LineEdit};
use super::*;
use crate::modules::plan::Planned;
use crate::modules::Module;
use serde_json::json;

fn edit(line: &str) -> LineEdit {
    LineEdit {
        line: Some(line.as_bytes().to_vec()),
        regexp: None,
        search_string: None,
        insertafter: None,
        insertbefore: None,
        backrefs: false,
        firstmatch: false,
    }
}

fn run_present(content: &str, e: &LineEdit) -> (String, &'static str) {
    let (lines, msg) = present(split_lines(content.as_bytes()), e).unwrap();
    (String::from_utf8(lines.concat()).unwrap(), msg)
}

#[test]
fn present_rules() {
    // Appended at EOF, newline added before when missing.
    assert_eq!(
        run_present("a\nb", &edit("c")),
        ("a\nb\nc\n".into(), "line added")
    );
    // Exact line present: nothing.
    assert_eq!(run_present("a\nc\n", &edit("c")), ("a\nc\n".into(), ""));
    // regexp replaces the last match (firstmatch: the first).
    let mut e = edit("port=9");
    e.regexp = Some(compile("r", "^port=").unwrap());
    assert_eq!(
        run_present("port=1\nx\nport=2\n", &e).0,
        "port=1\nx\nport=9\n"
    );
    e.firstmatch = true;
    assert_eq!(
        run_present("port=1\nx\nport=2\n", &e).0,
        "port=9\nx\nport=2\n"
    );
    // Python-style `$` before the newline works.
    let mut e = edit("SELINUX=disabled");
    e.regexp = Some(compile("r", "^SELINUX=.*$").unwrap());
    assert_eq!(
        run_present("SELINUX=enforcing\n", &e).0,
        "SELINUX=disabled\n"
    );
    // insertafter / insertbefore regexes, BOF.
    let mut e = edit("new");
    e.insertafter = Some("^\\[main\\]".into());
    assert_eq!(
        run_present("[main]\na\n[other]\n", &e).0,
        "[main]\nnew\na\n[other]\n"
    );
    let mut e = edit("new");
    e.insertbefore = Some("^\\[other\\]".into());
    assert_eq!(
        run_present("[main]\na\n[other]\n", &e).0,
        "[main]\na\nnew\n[other]\n"
    );
    let mut e = edit("first");
    e.insertbefore = Some("BOF".into());
    assert_eq!(run_present("a\n", &e).0, "first\na\n");
    // insertafter that matches nothing: EOF.
    let mut e = edit("z");
    e.insertafter = Some("^nomatch".into());
    assert_eq!(run_present("a\n", &e).0, "a\nz\n");
    // backrefs: expanded from the match; no match, no change.
    let mut e = edit("\\1=on # \\g<k>");
    e.regexp = Some(compile("r", "^(?P<k>\\w+)=off").unwrap());
    e.backrefs = true;
    assert_eq!(run_present("feat=off\n", &e).0, "feat=on # feat\n");
    assert_eq!(run_present("other\n", &e), ("other\n".into(), ""));
    // search_string
    let mut e = edit("listen 8080;");
    e.search_string = Some(b"listen 80;".to_vec());
    assert_eq!(run_present("  listen 80;\n", &e).0, "listen 8080;\n");
}

#[test]
fn absent_rules() {
    let mut e = edit("b");
    let (l, n) = absent(split_lines(b"a\nb\nb\nc"), &e);
    assert_eq!((l.concat(), n), (b"a\nc".to_vec(), 2));
    e.regexp = Some(compile("r", "^#").unwrap());
    let (l, n) = absent(split_lines(b"#x\ny\n"), &e);
    assert_eq!((l.concat(), n), (b"y\n".to_vec(), 1));
}

#[tokio::test]
async fn edits_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("conf");
    let fs = f.to_str().unwrap();
    std::fs::write(&f, "a=1\nb=2\n").unwrap();
    let mut c = ctx(dir.path(), json!({}));
    c.diff = true;
    c.check_mode = true;
    let r = Planned(LineInFile)
        .run(
            &c,
            args(json!({"path": fs, "regexp": "^b=", "line": "b=3"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(r.diffs[0].after, "a=1\nb=3\n");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a=1\nb=2\n");
    c.check_mode = false;
    let r = Planned(LineInFile)
        .run(
            &c,
            args(json!({"path": fs, "regexp": "^b=", "line": "b=3", "mode": "0600"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(
        r.msg.as_deref(),
        Some("line replaced and ownership, perms or SE linux context changed")
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a=1\nb=3\n");
    assert_eq!(mode_of(&f), 0o600);
    let r = Planned(LineInFile)
        .run(
            &c,
            args(json!({"path": fs, "regexp": "^b=", "line": "b=3", "mode": "0600"})),
        )
        .await
        .unwrap();
    assert!(!r.changed);
    let r = Planned(LineInFile)
        .run(
            &c,
            args(json!({"path": fs, "line": "a=1", "state": "absent"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "b=3\n");
    // Missing file: error unless create.
    let n = dir.path().join("sub/new");
    let e = Planned(LineInFile)
        .run(&c, args(json!({"path": n.to_str().unwrap(), "line": "x"})))
        .await
        .unwrap_err();
    assert!(e.message.contains("does not exist"));
    let r = Planned(LineInFile)
        .run(
            &c,
            args(json!({"path": n.to_str().unwrap(), "line": "x", "create": "yes"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(r.msg.as_deref(), Some("line added"));
    assert_eq!(std::fs::read_to_string(&n).unwrap(), "x\n");
    let n2 = dir.path().join("sub/new2");
    let r = Planned(LineInFile)
        .run(
            &c,
            args(
                json!({"path": n2.to_str().unwrap(), "line": "x", "create": true, "mode": "0600"}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        r.msg.as_deref(),
        Some("line added and ownership, perms or SE linux context changed")
    );
    let e = Planned(LineInFile)
        .run(
            &c,
            args(json!({"path": fs, "line": "x", "regexp": "(?<=a)b"})),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("regular expression"));
    // A symlink is edited through: the link stays, its target changes.
    let l = dir.path().join("link");
    std::os::unix::fs::symlink(&f, &l).unwrap();
    let r = Planned(LineInFile)
        .run(
            &c,
            args(json!({"path": l.to_str().unwrap(), "line": "via=link"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert!(std::fs::symlink_metadata(&l)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&f).unwrap().ends_with("via=link\n"));
    let e = Planned(LineInFile)
        .run(&c, args(json!({"path": fs, "lines": "x"})))
        .await
        .unwrap_err();
    assert!(e.message.contains("lines"));
}

#[test]
fn validate_at_load() {
    let check = |a: serde_json::Value| LineInFile.validate(&args(a));
    assert!(check(json!({"path": "/etc/x", "line": "a", "mode": "0644"})).is_ok());
    let e = check(json!({"path": "/etc/x", "line": "a", "state": "gone"})).unwrap_err();
    assert!(
        e.message.contains("lineinfile")
            && e.message.contains("`state`")
            && e.message.contains("present, absent"),
        "{}",
        e.message
    );
    let e = check(json!({"path": "/etc/x", "line": "a", "colour": 1})).unwrap_err();
    assert!(e.message.contains("lineinfile") && e.message.contains("colour"));
    assert!(e.help.unwrap().contains("path, line"));
    let e = check(json!({"line": "a"})).unwrap_err();
    assert!(e.message.contains("lineinfile: `path` is required"));
    let e =
        check(json!({"path": "/x", "line": "a", "regexp": "a", "search_string": "b"})).unwrap_err();
    assert!(e.message.contains("mutually exclusive"));
    let e = check(json!({"path": "/x", "line": "a", "mode": "rwx?"}));
    assert!(e.is_ok(), "symbolic modes are checked when applied");
}
