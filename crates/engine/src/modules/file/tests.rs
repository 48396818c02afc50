//! Unit tests of `file` over the local connection.

use super::super::plan::Planned;
use super::super::remote::testutil::{args, ctx, mode_of};
use super::super::Module;
use super::*;
use serde_json::json;

#[test]
fn ancestors_of_paths() {
    assert_eq!(ancestors("/a/b"), vec!["/a", "/a/b"]);
    assert_eq!(ancestors("a/b"), vec!["a", "a/b"]);
}

#[tokio::test]
async fn directory_touch_absent() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path(), json!({}));
    let d = dir.path().join("x/y/z");
    let ds = d.to_str().unwrap();
    c.check_mode = true;
    c.diff = true;
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ds, "state": "directory", "mode": "0750"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert!(r.diffs[0].before.contains("absent") && r.diffs[0].after.contains("directory"));
    assert!(!d.exists());
    c.check_mode = false;
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ds, "state": "directory", "mode": "0750"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(mode_of(&d), 0o750);
    assert_eq!(mode_of(&dir.path().join("x")), 0o750);
    assert_eq!(r.data["mode"], json!("0750"));
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ds, "state": "directory", "mode": "0750"})),
        )
        .await
        .unwrap();
    assert!(!r.changed);
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ds, "state": "directory", "mode": "u=rwx,g=rx,o=rx"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(mode_of(&d), 0o755);
    // Recursive mode: detects files below with another mode.
    let f = d.join("f");
    std::fs::write(&f, "").unwrap();
    let top = dir.path().join("x");
    let r = Planned(File)
        .run(&c, args(json!({"path": top.to_str().unwrap(), "state": "directory", "mode": "0700", "recurse": true})))
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(mode_of(&f), 0o700);
    let r = Planned(File)
        .run(&c, args(json!({"path": top.to_str().unwrap(), "state": "directory", "mode": "0700", "recurse": true})))
        .await
        .unwrap();
    assert!(!r.changed);
    // touch: always changed; preserve/preserve on an existing file is not.
    let t = dir.path().join("t");
    let ts = t.to_str().unwrap();
    assert!(
        Planned(File)
            .run(&c, args(json!({"path": ts, "state": "touch", "mode": 384})))
            .await
            .unwrap()
            .changed
    );
    assert_eq!(mode_of(&t), 0o600);
    assert!(
        Planned(File)
            .run(&c, args(json!({"path": ts, "state": "touch"})))
            .await
            .unwrap()
            .changed
    );
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ts, "state": "touch", "modification_time": "preserve", "access_time": "preserve"})),
        )
        .await
        .unwrap();
    assert!(!r.changed);
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ts, "state": "file", "modification_time": "202001020304.05"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ts, "state": "file", "modification_time": "202001020304.05"})),
        )
        .await
        .unwrap();
    assert!(!r.changed, "same time again changes nothing");
    // absent
    assert!(
        Planned(File)
            .run(
                &c,
                args(json!({"path": top.to_str().unwrap(), "state": "absent"}))
            )
            .await
            .unwrap()
            .changed
    );
    assert!(!top.exists());
    assert!(
        !Planned(File)
            .run(
                &c,
                args(json!({"path": top.to_str().unwrap(), "state": "absent"}))
            )
            .await
            .unwrap()
            .changed
    );
}

#[test]
fn recurse_probe_output_is_judged_by_the_mode() {
    let sym = Attrs {
        mode: Some("u=rwX,g=rX,o=".into()),
        ..Default::default()
    };
    // 0750 directory and 0640 file: nothing to do; a 0644 file: o loses r.
    let ok = "kk_recmode=41e8\nkk_recmode=81a0\n";
    assert!(!recurse_differs(ok, &sym).unwrap());
    assert!(recurse_differs("kk_recmode=41e8\nkk_recmode=81a4\n", &sym).unwrap());
    // X: a directory gets x, a file without any x does not.
    assert!(recurse_differs("kk_recmode=41a0\n", &sym).unwrap());
    let oct = Attrs {
        mode: Some("0750".into()),
        ..Default::default()
    };
    assert!(!recurse_differs("kk_recmode=41e8\nkk_recmode=81e8\n", &oct).unwrap());
    assert!(recurse_differs("kk_recmode=81a0\n", &oct).unwrap());
    // Owner/group differences come as a flag; without a mode, mode lines are ignored.
    let own = Attrs {
        owner: Some("root".into()),
        ..Default::default()
    };
    assert!(!recurse_differs("kk_recmode=81ff\n", &own).unwrap());
    assert!(recurse_differs("recurse_change=1\n", &own).unwrap());
}

/// Regression: a recursive `file` reported `changed` when only access times below
/// had moved (its own `find` moves them), and check mode always reported `changed`
/// for a symbolic mode or a tree holding a symlink.
#[tokio::test]
async fn recurse_reports_changed_only_when_something_changed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), json!({}));
    let top = dir.path().join("r");
    std::fs::create_dir_all(top.join("a/b")).unwrap();
    std::fs::write(top.join("a/b/f"), "").unwrap();
    std::os::unix::fs::symlink("f", top.join("a/b/l")).unwrap();
    let ts = top.to_str().unwrap();
    let old_atimes = format!("touch -a -d '2 days ago' {ts} {ts}/a {ts}/a/b");
    for mode in ["u=rwX,g=rX,o=", "0750"] {
        let a = json!({"path": ts, "recurse": true, "mode": mode});
        let run = |check: bool| {
            let mut c2 = ctx(dir.path(), json!({}));
            c2.check_mode = check;
            let a = a.clone();
            async move { Planned(File).run(&c2, args(a)).await.unwrap().changed }
        };
        std::fs::set_permissions(top.join("a/b/f"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        assert!(run(true).await, "{mode}: check sees the file below");
        assert_eq!(mode_of(&top.join("a/b/f")), 0o644, "check changes nothing");
        assert!(run(false).await, "{mode}");
        let want = if mode == "0750" { 0o750 } else { 0o640 };
        assert_eq!(mode_of(&top.join("a/b/f")), want);
        assert_eq!(mode_of(&top.join("a/b")), 0o750);
        for _ in 0..2 {
            c.exec(old_atimes.clone(), None).await.unwrap();
            assert!(!run(true).await, "{mode}: check, nothing to change");
            assert!(!run(false).await, "{mode}: nothing changed");
        }
    }
}

/// Following a link (the default), the mode is set on its target: that is a change.
#[tokio::test]
async fn mode_through_a_link_is_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), json!({}));
    let t = dir.path().join("t");
    std::fs::write(&t, "").unwrap();
    std::os::unix::fs::symlink("t", dir.path().join("l")).unwrap();
    let l = dir.path().join("l");
    let a = json!({"path": l.to_str().unwrap(), "mode": "0600"});
    assert!(
        Planned(File)
            .run(&c, args(a.clone()))
            .await
            .unwrap()
            .changed
    );
    assert_eq!(mode_of(&t), 0o600);
    assert!(!Planned(File).run(&c, args(a)).await.unwrap().changed);
}

#[tokio::test]
async fn recursive_owner() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), json!({}));
    if c.exec("id -u", None).await.unwrap().stdout_text() != "0" {
        return; // changing owners needs root
    }
    let top = dir.path().join("r");
    std::fs::create_dir_all(top.join("a/b")).unwrap();
    std::fs::write(top.join("a/b/f"), "").unwrap();
    let a = json!({"path": top.to_str().unwrap(), "state": "directory", "owner": "nobody", "recurse": true});
    let r = Planned(File).run(&c, args(a.clone())).await.unwrap();
    assert!(r.changed);
    assert_eq!(r.data["owner"], json!("nobody"));
    let out = c
        .exec(format!("stat -c %U {}/a/b/f", top.display()), None)
        .await
        .unwrap();
    assert_eq!(out.stdout_text(), "nobody");
    assert!(!Planned(File).run(&c, args(a)).await.unwrap().changed);
    std::fs::write(top.join("a/new"), "").unwrap();
    let a = json!({"path": top.to_str().unwrap(), "state": "directory", "owner": "nobody", "recurse": true});
    assert!(
        Planned(File).run(&c, args(a)).await.unwrap().changed,
        "a new root-owned file below is found"
    );
}

#[tokio::test]
async fn links_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), json!({}));
    let target = dir.path().join("target");
    std::fs::write(&target, "t").unwrap();
    let l = dir.path().join("l");
    let ls = l.to_str().unwrap();
    let r = Planned(File)
        .run(
            &c,
            args(json!({"path": ls, "src": "target", "state": "link"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(std::fs::read_link(&l).unwrap().to_str().unwrap(), "target");
    assert_eq!(r.data["src"], json!("target"));
    let r = Planned(File)
        .run(
            &c,
            args(json!({"dest": ls, "src": "target", "state": "link"})),
        )
        .await
        .unwrap();
    assert!(!r.changed);
    // Dangling without force is refused; with force it is made.
    let e = Planned(File)
        .run(
            &c,
            args(json!({"path": ls, "src": "nowhere", "state": "link"})),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("force"), "{e:?}");
    assert!(
        Planned(File)
            .run(
                &c,
                args(json!({"path": ls, "src": "nowhere", "state": "link", "force": true}))
            )
            .await
            .unwrap()
            .changed
    );
    // Hard link.
    let h = dir.path().join("h");
    let hs = h.to_str().unwrap();
    let ts = target.to_str().unwrap();
    assert!(
        Planned(File)
            .run(&c, args(json!({"path": hs, "src": ts, "state": "hard"})))
            .await
            .unwrap()
            .changed
    );
    assert!(
        !Planned(File)
            .run(&c, args(json!({"path": hs, "src": ts, "state": "hard"})))
            .await
            .unwrap()
            .changed
    );
    // A directory under a regular file cannot be made; mkdir's own words are shown.
    let under = target.join("sub");
    let e = Planned(File)
        .run(
            &c,
            args(json!({"path": under.to_str().unwrap(), "state": "directory"})),
        )
        .await
        .unwrap_err();
    assert!(e.notes.iter().any(|n| n.contains("mkdir")), "{e:?}");
    // state=file on a missing path, unknown state, unknown argument.
    let e = Planned(File)
        .run(
            &c,
            args(json!({"path": "/nonexistent/kk", "state": "file"})),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("absent"), "{e:?}");
    let e = Planned(File)
        .run(&c, args(json!({"path": ls, "state": "dir"})))
        .await
        .unwrap_err();
    assert!(
        e.message
            .starts_with("file: `state` must be one of file, directory,")
            && e.message.contains("\"dir\""),
        "{e:?}"
    );
    let e = Planned(File)
        .run(&c, args(json!({"path": ls, "stat": "file"})))
        .await
        .unwrap_err();
    assert!(e.message.contains("stat"), "{e:?}");
    assert!(e.help.unwrap().contains("modification_time"));
}

#[test]
fn validate_checks_literal_arguments() {
    let check = |v: serde_json::Value| PlanApply::validate(&File, &args(v));
    assert!(check(json!({"name": "/p", "state": "directory", "mode": "u+rwx,go=rx"})).is_ok());
    let e = check(json!({"path": "/p", "state": "folder"})).unwrap_err();
    assert_eq!(
        e.message,
        "file: `state` must be one of file, directory, link, hard, touch, absent, found \"folder\""
    );
    let e = check(json!({"path": "/p", "mode": "a+q"})).unwrap_err();
    assert!(e.message.starts_with("file: invalid mode \"a+q\""), "{e:?}");
    let e = check(json!({"path": "/p", "recurse": "deep"})).unwrap_err();
    assert!(e.message.contains("expected a boolean"), "{e:?}");
    let e = check(json!({"path": "/p", "modification_time": "soon"})).unwrap_err();
    assert!(e.message.contains("modification_time"), "{e:?}");
    assert!(check(json!({"state": "touch"}))
        .unwrap_err()
        .message
        .contains("`path` is required"));
    let e = check(json!({"path": "/p", "sate": "file"})).unwrap_err();
    assert!(
        e.message.contains("sate") && e.help.as_deref().unwrap_or("").contains("state"),
        "{e:?}"
    );
}

#[test]
fn a_batched_probe_splits_into_each_items_output_and_exit_code() {
    let out = format!(
        "{m}0\nstat of a\nmore\n{m}rc 0\n{m}2\n{m}rc 3\n{m}1\nb\n{m}rc 0\n",
        m = BATCH_MARK
    );
    let parts = split_batch(out.as_bytes());
    assert_eq!(parts[&0], (b"stat of a\nmore\n".to_vec(), Some(0)));
    assert_eq!(parts[&1], (b"b\n".to_vec(), Some(0)));
    assert_eq!(parts[&2], (Vec::new(), Some(3)));
    assert_eq!(parts.len(), 3);
}
