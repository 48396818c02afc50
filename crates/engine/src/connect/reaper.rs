//! The host side of stopping what a lost or ended SSH connection left running: one small
//! shell script per connection (started by its first command), instead of a watchdog per
//! command. Its own file so the script and its test read together.

/// Starts [`REAPER`] (passed as `$1`) in its own session, detached from the channel, with
/// the connection's sshd process (`$PPID`: the parent of every command of this
/// connection) and `$SSH_CONNECTION` (client and server address and port: the same in
/// every command of this connection, different in any other).
pub(super) const REAPER_START: &str = "{ setsid /bin/sh -c \"$1\" kk-reaper \"$PPID\" \"$SSH_CONNECTION\" || /bin/sh -c \"$1\" kk-reaper \"$PPID\" \"$SSH_CONNECTION\"; } </dev/null >/dev/null 2>&1 &\n";

/// One per connection, instead of a watchdog per command: waits (checking once a second)
/// until the connection's sshd process is gone (kk ended, was interrupted, or the
/// connection was lost), then stops every command of that connection still running: a
/// session leader (a command sshd started) whose environment holds this connection's
/// `SSH_CONNECTION` and whose parent is no longer a live sshd (so a later connection that
/// happens to reuse the client port is left alone). TERM first, so sudo passes it on to
/// what it started, then KILL after 2 s. Background processes a finished command left
/// behind (its session leader gone) are not touched, as before. A `$PPID` that is not an
/// sshd (`sshd-session` on OpenSSH 9.8+) means the connection was lost before the shell
/// started (it was re-parented, to init or a subreaper): the reaper then stops at once.
pub(super) const REAPER: &str = r#"p=$1 c=$2
[ -n "$c" ] || exit 0
trap '' HUP INT TERM
cd /
n=; read -r n 2>/dev/null <"/proc/$p/comm"
case $n in sshd*) ;; *) p=0 ;; esac
while [ "$p" -gt 1 ] && kill -0 "$p" 2>/dev/null; do sleep 1; done
l=
for f in $(grep -lsxzF "SSH_CONNECTION=$c" /proc/[0-9]*/environ 2>/dev/null); do
  q=${f#/proc/}; q=${q%/environ}
  [ "$q" = "$$" ] && continue
  s=; read -r s 2>/dev/null <"/proc/$q/stat" || continue
  s=${s##*) }; set -- $s
  [ "$4" = "$q" ] || continue
  n=; read -r n 2>/dev/null <"/proc/$2/comm"
  case $n in sshd*) continue ;; esac
  l="$l $q"
done
[ -n "$l" ] || exit 0
for g in $l; do kill -TERM -"$g" 2>/dev/null; done
sleep 2
for g in $l; do kill -KILL -"$g" 2>/dev/null; done"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// A reaper started after its connection was lost (its `$PPID` is init, not an sshd)
    /// stops that connection's sessions at once instead of waiting on init forever.
    #[test]
    fn reaper_of_a_lost_connection_stops_its_sessions_at_once() {
        use std::os::unix::process::ExitStatusExt;
        let conn = format!("192.0.2.1 {} 192.0.2.2 22", std::process::id());
        let mut session = std::process::Command::new("setsid")
            .args(["sleep", "60"])
            .env("SSH_CONNECTION", &conn)
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let t = std::time::Instant::now();
        let reaper = std::process::Command::new("timeout")
            .args([
                "-s",
                "KILL",
                "20",
                "/bin/sh",
                "-c",
                REAPER,
                "kk-reaper",
                "1",
                &conn,
            ])
            .status()
            .unwrap();
        let took = t.elapsed();
        let _ = session.kill();
        assert!(reaper.success(), "{reaper:?}");
        assert!(took.as_secs() < 10, "{took:?}");
        assert_eq!(session.wait().unwrap().signal(), Some(15));
    }
}
