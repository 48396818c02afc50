//! Asking for a password on the terminal without echoing it (Python's `getpass`): the
//! prompt and the answer go through `/dev/tty`, so they work while stdin and stdout are
//! redirected, and a run without a terminal gets an error instead of a hang.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;

/// Writes `prompt` to the terminal and reads one line with echo off; `Err` when there is
/// no terminal (the caller says which option needed one). The line's newline is dropped.
pub fn prompt_hidden(prompt: &str) -> std::io::Result<String> {
    let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    let fd = tty.as_raw_fd();
    // SAFETY: termios is plain data; tcgetattr fills it for a valid descriptor.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut quiet = saved;
    quiet.c_lflag &= !(libc::ECHO | libc::ECHONL);
    quiet.c_lflag |= libc::ICANON;
    // SAFETY: a valid descriptor and a termios derived from its own settings.
    if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut out = &tty;
    let mut line = String::new();
    let read = out
        .write_all(prompt.as_bytes())
        .and_then(|_| out.flush())
        .and_then(|_| BufReader::new(&tty).read_line(&mut line));
    // Always restore the echo, whatever the read did.
    // SAFETY: restores the settings read above on the same descriptor.
    unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &saved) };
    let _ = out.write_all(b"\n");
    let n = read?;
    if n == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "end of input (ctrl-d) at the prompt",
        ));
    }
    while line.ends_with('\n') || line.ends_with('\r') {
        line.pop();
    }
    Ok(line)
}
