//! Asking for a password on the terminal without echoing it (Python's `getpass`), with
//! rpassword: the prompt and the answer go through `/dev/tty`, so they work while stdin
//! and stdout are redirected, and a run without a terminal gets an error instead of a hang.

/// Writes `prompt` to the terminal and reads one line with echo off; `Err` when there is
/// no terminal (the caller says which option needed one). The line's newline is dropped.
pub fn prompt_hidden(prompt: &str) -> std::io::Result<String> {
    rpassword::prompt_password(prompt)
}
