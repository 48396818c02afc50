//! Unit tests of `copy` over the local connection.

use super::super::plan::Planned;
use super::super::remote::sha1_hex;
use super::super::remote::testutil::{args, ctx, mode_of};
use super::super::Module;
use super::*;
use serde_json::json;

#[tokio::test]
async fn check_mode_reports_a_controller_file_an_earlier_task_would_make() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("out.bin");
    let src = dir.path().join("kubekey/etcd.tar.gz");
    let a = || args(json!({"src": src.to_str().unwrap(), "dest": dest.to_str().unwrap()}));
    let mut c = ctx(dir.path(), json!({}));
    c.check_mode = true;
    let r = Planned(Copy).run(&c, a()).await.unwrap();
    assert!(r.changed, "{r:?}");
    assert!(r
        .msg
        .as_deref()
        .unwrap_or("")
        .contains("not on the controller yet"));
    assert!(!dest.exists());
    // A real run fails on it; a relative (role) file stays an error in check mode too.
    c.check_mode = false;
    assert!(Planned(Copy).run(&c, a()).await.is_err());
    c.check_mode = true;
    let rel = args(json!({"src": "no-such-role-file", "dest": dest.to_str().unwrap()}));
    assert!(Planned(Copy).run(&c, rel).await.is_err());
}

#[tokio::test]
async fn content_is_idempotent_with_check_and_diff() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("out.txt");
    let d = dest.to_str().unwrap();
    let mut c = ctx(dir.path(), json!({}));
    c.check_mode = true;
    c.diff = true;
    let r = Planned(Copy)
        .run(&c, args(json!({"content": "hi\n", "dest": d, "mode": 420})))
        .await
        .unwrap();
    assert!(r.changed);
    assert!(!dest.exists(), "check mode must not write");
    assert_eq!(r.diffs.len(), 1);
    assert_eq!(r.diffs[0].before, "");
    assert_eq!(r.diffs[0].after, "hi\n");
    c.check_mode = false;
    let r = Planned(Copy)
        .run(&c, args(json!({"content": "hi\n", "dest": d, "mode": 420})))
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "hi\n");
    assert_eq!(mode_of(&dest), 0o644);
    assert_eq!(r.data["checksum"], json!(sha1_hex(b"hi\n")));
    assert_eq!(r.data["mode"], json!("0644"));
    assert_eq!(r.data["size"], json!(3));
    let r = Planned(Copy)
        .run(
            &c,
            args(json!({"content": "hi\n", "dest": d, "mode": "0644"})),
        )
        .await
        .unwrap();
    assert!(!r.changed);
    assert!(r.diffs.is_empty());
    // Only the mode differs: changed, content untouched.
    let r = Planned(Copy)
        .run(
            &c,
            args(json!({"content": "hi\n", "dest": d, "mode": "0600"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(mode_of(&dest), 0o600);
    // force: no leaves an existing file alone.
    let r = Planned(Copy)
        .run(
            &c,
            args(json!({"content": "other", "dest": d, "force": "no"})),
        )
        .await
        .unwrap();
    assert!(!r.changed);
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "hi\n");
    // Diff of a change shows both sides.
    let r = Planned(Copy)
        .run(
            &c,
            args(json!({"content": "ho\n", "dest": d, "backup": true})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(r.diffs[0].before, "hi\n");
    assert_eq!(r.diffs[0].after, "ho\n");
    assert!(r.data.contains_key("backup_file"));
}

#[tokio::test]
async fn src_file_into_dir_and_owner() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("files")).unwrap();
    std::fs::write(dir.path().join("files/app.conf"), "x=1\n").unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let c = ctx(dir.path(), json!({}));
    let me = c.exec("id -un", None).await.unwrap().stdout_text();
    let r = Planned(Copy)
        .run(&c, args(json!({"src": "app.conf", "dest": out.to_str().unwrap(), "owner": me, "mode": "u=rw,go=r"})))
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(
        std::fs::read_to_string(out.join("app.conf")).unwrap(),
        "x=1\n"
    );
    assert_eq!(mode_of(&out.join("app.conf")), 0o644);
    assert_eq!(r.data["owner"], json!(me));
    let r = Planned(Copy)
        .run(&c, args(json!({"src": "app.conf", "dest": out.to_str().unwrap(), "owner": me, "mode": "u=rw,go=r"})))
        .await
        .unwrap();
    assert!(!r.changed);
    // Trailing slash: the directory is created.
    let nd = format!("{}/new/", out.display());
    let r = Planned(Copy)
        .run(&c, args(json!({"src": "app.conf", "dest": nd})))
        .await
        .unwrap();
    assert!(r.changed);
    assert!(out.join("new/app.conf").exists());
}

#[tokio::test]
async fn directory_trailing_slash_rule() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("files/tree/sub")).unwrap();
    std::fs::write(dir.path().join("files/tree/a"), "a").unwrap();
    std::fs::write(dir.path().join("files/tree/sub/b"), "b").unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let c = ctx(dir.path(), json!({}));
    let r = Planned(Copy)
        .run(&c, args(json!({"src": "tree", "dest": o})))
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(
        std::fs::read_to_string(out.join("tree/sub/b")).unwrap(),
        "b"
    );
    let r = Planned(Copy)
        .run(&c, args(json!({"src": "tree", "dest": o})))
        .await
        .unwrap();
    assert!(!r.changed);
    let r = Planned(Copy)
        .run(
            &c,
            args(json!({"src": "tree/", "dest": o, "directory_mode": "0750"})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(std::fs::read_to_string(out.join("a")).unwrap(), "a");
    assert_eq!(mode_of(&out.join("sub")), 0o750);
}

#[tokio::test]
async fn symlink_destination() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::write(&real, "same").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let c = ctx(dir.path(), json!({}));
    let l = link.to_str().unwrap();
    // follow: written through, the link stays.
    let r = Planned(Copy)
        .run(
            &c,
            args(json!({"content": "new", "dest": l, "follow": true})),
        )
        .await
        .unwrap();
    assert!(r.changed);
    assert_eq!(r.data["dest"], json!(real.to_str().unwrap()));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    // Without follow (Ansible's default) the link becomes a file, even with equal content.
    let r = Planned(Copy)
        .run(&c, args(json!({"content": "new", "dest": l})))
        .await
        .unwrap();
    assert!(r.changed);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_file());
    assert!(
        !Planned(Copy)
            .run(&c, args(json!({"content": "new", "dest": l})))
            .await
            .unwrap()
            .changed
    );
}

#[tokio::test]
async fn remote_src_copies_on_host() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.txt");
    std::fs::write(&s, "remote\n").unwrap();
    let d = dir.path().join("d.txt");
    let c = ctx(dir.path(), json!({}));
    let a = json!({"src": s.to_str().unwrap(), "dest": d.to_str().unwrap(), "remote_src": true});
    assert!(
        Planned(Copy)
            .run(&c, args(a.clone()))
            .await
            .unwrap()
            .changed
    );
    assert_eq!(std::fs::read_to_string(&d).unwrap(), "remote\n");
    assert!(!Planned(Copy).run(&c, args(a)).await.unwrap().changed);
    // mode: preserve takes the source's mode.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o751)).unwrap();
    let p = dir.path().join("p.txt");
    let a = json!({"src": s.to_str().unwrap(), "dest": p.to_str().unwrap(), "remote_src": true, "mode": "preserve"});
    assert!(Planned(Copy).run(&c, args(a)).await.unwrap().changed);
    assert_eq!(mode_of(&p), 0o751);
    let a = json!({"src": s.to_str().unwrap(), "dest": dir.path().join("q").to_str().unwrap(), "mode": "preserve"});
    assert!(Planned(Copy).run(&c, args(a)).await.unwrap().changed);
    assert_eq!(mode_of(&dir.path().join("q")), 0o751);
}

#[tokio::test]
async fn errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), json!({}));
    let e = Planned(Copy)
        .run(
            &c,
            args(json!({"content": "x", "dest": "/tmp/x", "bogus": 1})),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("bogus"), "{e:?}");
    assert!(e.help.unwrap().contains("directory_mode"));
    let e = Planned(Copy)
        .run(&c, args(json!({"src": "nope.txt", "dest": "/tmp/x"})))
        .await
        .unwrap_err();
    assert!(e.message.contains("nope.txt"), "{e:?}");
    let e = Planned(Copy)
        .run(&c, args(json!({"content": "x"})))
        .await
        .unwrap_err();
    assert!(e.message.contains("dest"), "{e:?}");
    let missing = dir.path().join("no/such/dir/f");
    let e = Planned(Copy)
        .run(
            &c,
            args(json!({"content": "x", "dest": missing.to_str().unwrap()})),
        )
        .await
        .unwrap_err();
    assert!(
        e.notes.iter().any(|n| n.contains("does not exist")),
        "{e:?}"
    );
}

#[test]
fn validate_checks_literal_arguments() {
    let check = |v: Value| PlanApply::validate(&Copy, &args(v));
    assert!(check(json!({"content": "x", "dest": "/d", "mode": 420, "owner": 0})).is_ok());
    assert!(check(json!({"src": "a", "dest": "/d", "mode": "preserve"})).is_ok());
    let e = check(json!({"content": "x", "dest": "/d", "mode": "0999"})).unwrap_err();
    assert!(
        e.message.starts_with("copy:") && e.message.contains("0999"),
        "{e:?}"
    );
    let e = check(json!({"content": "x", "dest": "/d", "mode": "rwx"})).unwrap_err();
    assert!(e.message.starts_with("copy: invalid mode \"rwx\""), "{e:?}");
    let e = check(json!({"content": "x", "dest": "/d", "force": "maybe"})).unwrap_err();
    assert!(e.message.contains("expected a boolean"), "{e:?}");
    let e = check(json!({"content": "x", "dest": "/d", "dst": "/d"})).unwrap_err();
    assert!(e.message.contains("dst"), "{e:?}");
    assert!(e
        .help
        .unwrap()
        .contains("valid arguments of `copy` are: src, content, dest"));
    let e = check(json!({"src": "a", "content": "x", "dest": "/d"})).unwrap_err();
    assert!(e.message.contains("mutually exclusive"), "{e:?}");
    assert!(check(json!({"content": "x"}))
        .unwrap_err()
        .message
        .contains("`dest` is required"));
    let e = check(json!({"content": "x", "dest": "/d", "validate": "visudo -c"})).unwrap_err();
    assert!(e.message.contains("%s"), "{e:?}");
}

/// Counts the round trips a module makes over the local connection.
struct Counting {
    inner: crate::connect::local::LocalConnection,
    n: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl crate::connect::Connection for Counting {
    async fn exec(&self, req: &crate::connect::ExecRequest) -> Result<crate::connect::ExecOutput> {
        self.n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.exec(req).await
    }
}

#[tokio::test]
async fn round_trips_stay_what_they_were() {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let conn = Arc::new(Counting {
        inner: crate::connect::local::LocalConnection::new(),
        n: Default::default(),
    });
    let mut c = ctx(dir.path(), json!({}));
    c.conn = conn.clone();
    let d = dir.path().join("f");
    let a = |content: &str, mode: &str| {
        args(json!({"content": content, "dest": d.to_str().unwrap(), "mode": mode}))
    };
    async fn run(c: &ModuleContext, conn: &Counting, a: VarMap) -> (bool, usize) {
        conn.n.store(0, Ordering::SeqCst);
        let r = Planned(Copy).run(c, a).await.unwrap();
        (r.changed, conn.n.load(Ordering::SeqCst))
    }
    // A small file: looked at and written in one round trip, new or changed or not.
    assert_eq!(run(&c, &conn, a("a", "0644")).await, (true, 1));
    assert_eq!(run(&c, &conn, a("a", "0644")).await, (false, 1));
    assert_eq!(run(&c, &conn, a("b", "0644")).await, (true, 1));
    // Same content, other mode: the look, then the mode.
    assert_eq!(run(&c, &conn, a("b", "0600")).await, (true, 2));
    // Check mode and diff: the stat, then the write only outside check mode.
    c.check_mode = true;
    assert_eq!(run(&c, &conn, a("c", "0600")).await, (true, 1));
    c.check_mode = false;
    c.diff = true;
    assert_eq!(run(&c, &conn, a("c", "0600")).await, (true, 2));
    assert_eq!(run(&c, &conn, a("c", "0600")).await, (false, 1));
}
