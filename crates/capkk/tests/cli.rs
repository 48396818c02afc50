//! The real `kk-capkk` binary writing into a pipe whose reader has gone.

use std::process::Command;

/// `kk-capkk crds | head -1` once head has exited: the reader end is closed before the
/// command writes, so its first write fails with EPIPE. The command must end with status
/// 0 and nothing on stderr (it used to panic with "failed printing to stdout: Broken pipe").
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    for sub in ["crds", "manifests"] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_kk-capkk"))
            .arg(sub)
            .stdout(writer)
            .output()
            .unwrap();
        assert!(out.status.success(), "{sub}: {}", out.status);
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{sub}");
    }
}
