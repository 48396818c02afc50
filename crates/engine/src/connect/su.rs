//! `become_method: su`: running a command as another user through `su`, over any
//! connection, without a terminal.
//!
//! Ansible gives `su` a pty and answers its `Password:` prompt. kk needs no pty: `su`
//! authenticates through PAM, whose conversation reads the password from standard input
//! whether or not it is a terminal. The catch is that PAM reads with one `read(2)`, which
//! on a pipe may swallow the command's own input sent after the password. So the password
//! and the command's input travel on two descriptors: the shell in front reads the first
//! line of its input (`read` takes one byte at a time from a pipe, never more than the
//! line) and pipes only that line to `su`; the rest of its input reaches the command as
//! descriptor 3, which `su` passes on, and which the command makes its standard input.
//!
//! The command first writes [`MARKER`] to its standard error: whatever comes before it
//! (the `Password:` prompt, which PAM prints without a newline) is `su`'s and is removed;
//! when the marker never comes, `su` did not run the command (wrong or missing password,
//! an account that may not log in), and [`check`] says so.
//!
//! The password is only ever on standard input: never on a command line, in the
//! environment, or in what kk logs.

use super::{shell_quote, Become, ExecOutput};
use crate::error::{Error, ErrorKind, Result};

/// What the command writes to its standard error as soon as `su` has started it.
pub const MARKER: &str = "KK-BECOME-SU-OK";

/// The shell line that runs `inner` (a shell command line) as `b.user` through `su`.
///
/// With a password, the line's input must start with the password and a newline (the
/// rest is the command's input); without one, `su` gets no input and fails if it asks.
/// Like Ansible, no `-l` unless `become_flags` says so: the target user's shell runs the
/// command in the current environment (with `HOME`, `SHELL`, `USER`, `LOGNAME` of the
/// target user). `become_flags` go before the user, as Ansible puts them.
pub fn line(b: &Become, inner: &str) -> String {
    let target = format!(
        "exec 0<&3 3<&-; printf '%s\\n' {} >&2; exec {}",
        MARKER, inner
    );
    let mut su = String::from("su ");
    for f in super::su_flags(b) {
        su.push_str(&shell_quote(&f));
        su.push(' ');
    }
    su.push_str(&format!(
        "{} -c {}",
        shell_quote(&b.user),
        shell_quote(&target)
    ));
    if b.password.is_some() {
        format!(
            "{{ IFS= read -r kk_pw; printf '%s\\n' \"$kk_pw\" | {}; }} 3<&0",
            su
        )
    } else {
        format!("{} 3<&0 </dev/null", su)
    }
}

/// The input to send before the command's own: the password line, if there is one.
pub fn input_prefix(b: &Become) -> Vec<u8> {
    match &b.password {
        Some(pw) => {
            let mut v = pw.as_bytes().to_vec();
            v.push(b'\n');
            v
        }
        None => Vec::new(),
    }
}

/// The command's output without `su`'s prompt, or an error when `su` did not start it.
pub fn check(mut out: ExecOutput, b: &Become, host: &str) -> Result<ExecOutput> {
    let mark = format!("{}\n", MARKER);
    if let Some(at) = find(&out.stderr, mark.as_bytes()) {
        out.stderr.drain(..at + mark.len());
        return Ok(out);
    }
    let said = said(&out);
    let (msg, help) = if said.contains("Authentication failure") {
        if b.password.is_some() {
            (
                format!(
                    "Incorrect su password: su on {} rejected the become password (to become {})",
                    host, b.user
                ),
                format!(
                    "check `ansible_become_password` (or -K's answer): su asks for {}'s password",
                    b.user
                ),
            )
        } else {
            (
                format!(
                    "Missing su password: su on {} asks for a password to become {}, and none was given",
                    host, b.user
                ),
                format!(
                    "set `ansible_become_password` to {}'s password, or use --ask-become-pass (-K)",
                    b.user
                ),
            )
        }
    } else {
        (
            format!(
                "su on {} could not run the command as {} (exit {})",
                host, b.user, out.rc
            ),
            "the become user needs a login shell that runs commands (not nologin) and su must be allowed"
                .to_string(),
        )
    };
    let mut e = Error::new(ErrorKind::Runtime, msg)
        .with_code(super::BECOME_FAILED)
        .help(help);
    if !said.is_empty() {
        e = e.note(format!("su said: {}", said));
    }
    Err(e)
}

/// What `su` printed (both streams), without its password prompts.
fn said(out: &ExecOutput) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.replace("Password: ", "")
        .replace("Password:", "")
        .trim()
        .to_string()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::BecomeMethod;

    fn become_(password: Option<&str>) -> Become {
        Become {
            user: "kk".into(),
            password: password.map(str::to_string),
            method: BecomeMethod::Su,
            flags: None,
        }
    }

    #[test]
    fn lines_keep_the_password_off_the_command_line() {
        let b = become_(Some("s3cret"));
        let l = line(&b, "/bin/sh -c 'id'");
        assert!(!l.contains("s3cret"));
        assert!(l.starts_with("{ IFS= read -r kk_pw;"), "{l}");
        assert_eq!(input_prefix(&b), b"s3cret\n");
        let l = line(&become_(None), "/bin/sh -c 'id'");
        assert!(l.ends_with("3<&0 </dev/null"), "{l}");
        assert!(input_prefix(&become_(None)).is_empty());
        // become_flags go before the user, as Ansible's `su FLAGS USER -c CMD`.
        let b = Become {
            flags: Some("-m -s /bin/sh".into()),
            ..become_(Some("s3cret"))
        };
        let l = line(&b, "id");
        assert!(l.contains("| su -m -s /bin/sh kk -c "), "{l}");
        assert!(!l.contains("s3cret"));
    }

    #[test]
    fn the_prompt_goes_and_failures_are_named() {
        let out = ExecOutput {
            rc: 0,
            stdout: b"kk\n".to_vec(),
            stderr: format!("Password: {}\nwarn\n", MARKER).into_bytes(),
        };
        let ok = check(out, &become_(Some("x")), "h1").unwrap();
        assert_eq!(ok.stderr, b"warn\n");
        assert_eq!(ok.stdout, b"kk\n");
        let bad = ExecOutput {
            rc: 1,
            stdout: vec![],
            stderr: b"Password: su: Authentication failure\n".to_vec(),
        };
        let e = check(bad.clone(), &become_(Some("x")), "h1").unwrap_err();
        assert!(
            e.message.starts_with("Incorrect su password"),
            "{}",
            e.message
        );
        let e = check(bad, &become_(None), "h1").unwrap_err();
        assert!(
            e.message.starts_with("Missing su password"),
            "{}",
            e.message
        );
        let nologin = ExecOutput {
            rc: 1,
            stdout: b"This account is currently not available.\n".to_vec(),
            stderr: vec![],
        };
        let e = check(nologin, &become_(None), "h1").unwrap_err();
        assert!(
            e.message.contains("could not run the command as kk"),
            "{}",
            e.message
        );
    }

    /// The line really runs (here, as the current user, who needs no password when
    /// root): input after the password line reaches the command, the prompt does not.
    #[tokio::test]
    async fn runs_in_sh_when_root() {
        if !std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(false)
        {
            return;
        }
        let b = Become {
            user: "root".into(),
            password: Some("unused".into()),
            method: BecomeMethod::Su,
            flags: None,
        };
        let mut child = tokio::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(line(&b, "/bin/sh -c 'id -un; cat'"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = input_prefix(&b);
        input.extend_from_slice(b"data line\n");
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&input).await.unwrap();
        drop(stdin);
        let out = child.wait_with_output().await.unwrap();
        let out = check(
            ExecOutput {
                rc: out.status.code().unwrap_or(-1),
                stdout: out.stdout,
                stderr: out.stderr,
            },
            &b,
            "localhost",
        )
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "root\ndata line\n");
        assert!(out.stderr.is_empty(), "{:?}", out.stderr);
    }
}
