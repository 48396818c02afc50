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
