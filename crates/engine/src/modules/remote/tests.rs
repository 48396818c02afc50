//! Unit tests of the shared file helpers: modes, paths, stat and write scripts.

use super::attrs::normalize_mode;
use super::testutil::*;
use super::*;

#[test]
fn symbolic_modes() {
    assert_eq!(apply_mode(0o644, "0755", false).unwrap(), 0o755);
    assert_eq!(apply_mode(0o644, "u+x", false).unwrap(), 0o744);
    assert_eq!(apply_mode(0o644, "a+x", false).unwrap(), 0o755);
    assert_eq!(apply_mode(0o777, "go-w", false).unwrap(), 0o755);
    assert_eq!(apply_mode(0o777, "u=rw,g=r,o=", false).unwrap(), 0o640);
    assert_eq!(apply_mode(0o644, "a+X", false).unwrap(), 0o644);
    assert_eq!(apply_mode(0o644, "a+X", true).unwrap(), 0o755);
    assert_eq!(apply_mode(0o600, "g=u", false).unwrap(), 0o660);
    assert_eq!(apply_mode(0o755, "u+s", false).unwrap(), 0o4755);
    assert_eq!(apply_mode(0o755, "+t", true).unwrap(), 0o1755);
    assert!(apply_mode(0o644, "q+x", false).is_err());
    assert!(apply_mode(0o644, "0999", false).is_err());
    assert_eq!(normalize_mode("+x,g-w"), "a+x,g-w");
}

#[test]
fn paths() {
    assert_eq!(parent_dir("/etc/hosts"), "/etc");
    assert_eq!(parent_dir("/hosts"), "/");
    assert_eq!(parent_dir("hosts"), ".");
    assert_eq!(base_name("/a/b/"), "b");
    assert_eq!(qpath("~/x y"), "\"$HOME\"/'x y'");
}

#[tokio::test]
async fn stat_and_write_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), serde_json::json!({}));
    let p = dir.path().join("f.txt");
    let ps = p.to_str().unwrap();
    let st = stat_path(&c, ps, true, true).await.unwrap();
    assert!(!st.exists);
    let opts = WriteOptions {
        attrs: Attrs {
            mode: Some("0640".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let w = write_file(&c, ps, b"hello\n".to_vec(), &opts)
        .await
        .unwrap();
    assert_eq!(w.stat.mode, 0o640);
    assert_eq!(w.stat.size, 6);
    let st = stat_path(&c, ps, true, true).await.unwrap();
    assert!(st.exists);
    assert_eq!(st.kind, FileKind::File);
    assert_eq!(
        st.checksum.as_deref(),
        Some(sha256_hex(b"hello\n").as_str())
    );
    assert_eq!(st.content.as_deref(), Some(&b"hello\n"[..]));
    assert_eq!(mode_of(&p), 0o640);
    // A rewrite without a mode keeps the old one; backup keeps the old content.
    let w = write_file(
        &c,
        ps,
        b"bye\n".to_vec(),
        &WriteOptions {
            backup: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(mode_of(&p), 0o640);
    let b = w.backup_file.expect("a backup");
    assert_eq!(std::fs::read(&b).unwrap(), b"hello\n");
    // A failing validation leaves the file alone and shows the command's output.
    let err = write_file(
        &c,
        ps,
        b"x".to_vec(),
        &WriteOptions {
            validate: Some("echo checking %s; false".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(err.message.contains("validation"), "{err:?}");
    assert!(err.notes.iter().any(|n| n.contains("checking")), "{err:?}");
    assert_eq!(std::fs::read(&p).unwrap(), b"bye\n");
    // No temp files left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".kk_tmp"))
        .collect();
    assert!(left.is_empty());
}

/// Data cut short (kk stopped mid-send) never replaces the file, and leaves no temp file;
/// a temp file a killed writer left (its pid gone) is swept by the next write there.
#[tokio::test]
async fn a_short_write_changes_nothing_and_stale_temp_files_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), serde_json::json!({}));
    let p = dir.path().join("f.txt");
    std::fs::write(&p, "old\n").unwrap();
    // A pid that does not run here (above the kernel's pid_max), and one that does.
    let stale = dir.path().join(".kk_tmp-4194399-AbCdEfGh");
    std::fs::write(&stale, "half").unwrap();
    let live = dir
        .path()
        .join(format!(".kk_tmp-{}-AbCdEfGh", std::process::id()));
    std::fs::write(&live, "busy").unwrap();
    let script = write_script(p.to_str().unwrap(), &WriteOptions::default(), Some(100));
    let out = c.exec(script, Some(b"only part".to_vec())).await.unwrap();
    assert_eq!(out.rc, 78, "{}", out.stderr_text());
    assert!(out.stderr_text().contains("only 9 of 100 bytes arrived"));
    assert_eq!(std::fs::read(&p).unwrap(), b"old\n");
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".kk_"))
        .collect();
    left.sort();
    assert_eq!(left, [live.file_name().unwrap().to_string_lossy()]);
}

/// A path stat'ed as is and then followed: a plain file or a missing path is read once and
/// its second record repeats the first; a link is read twice, the second time followed.
#[tokio::test]
async fn a_path_followed_after_itself_is_read_again_only_when_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path(), serde_json::json!({}));
    let f = dir.path().join("f.txt");
    std::fs::write(&f, "data\n").unwrap();
    let l = dir.path().join("l");
    std::os::unix::fs::symlink(&f, &l).unwrap();
    let m = dir.path().join("missing");
    let (f, l, m) = (
        f.to_str().unwrap(),
        l.to_str().unwrap(),
        m.to_str().unwrap(),
    );
    let items = [
        (f, false),
        (f, true),
        (l, false),
        (l, true),
        (m, false),
        (m, true),
    ];
    let script = stat_script_mixed(
        &items,
        StatOptions {
            follow: false,
            checksum: None,
            content: false,
            max_content: None,
        },
    );
    assert_eq!(script.matches("else echo same_as_previous=1").count(), 3);
    let out = c.exec(script, None).await.unwrap();
    let paths: Vec<&str> = items.iter().map(|i| i.0).collect();
    let sts = parse_stats(&paths, &out.stdout).unwrap();
    assert!(sts[0].exists && sts[0].kind == FileKind::File && sts[0].size == 5);
    assert_eq!(
        (sts[1].kind, sts[1].size, &sts[1].path),
        (FileKind::File, 5, &sts[0].path)
    );
    assert_eq!(sts[2].kind, FileKind::Link);
    assert_eq!(sts[2].link_target.as_deref(), Some(f));
    assert_eq!((sts[3].kind, sts[3].size), (FileKind::File, 5));
    assert!(!sts[4].exists && !sts[5].exists);
    assert_eq!(sts[5].path, m);
}
