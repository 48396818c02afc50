//! Asking for a secret on the terminal (`-k`, `-K`): the answer is not echoed, and
//! without a terminal the run stops with an options error instead of hanging on a pipe.
//!
//! The prompt is the vault's ([`kk_engine::vault::prompt_hidden`]), kk's one hidden
//! prompt: it turns echo off before it prints the question, so an answer typed at once
//! is never echoed.

use std::io::IsTerminal;

use kk_engine::{Error, ErrorKind};

/// Asks `question` on the terminal without echo; `flag` names the option that asked, for
/// the error when standard input is not a terminal.
pub(crate) fn secret(question: &str, flag: &str) -> Result<String, Error> {
    let no_terminal = |why: String| {
        Error::new(
            ErrorKind::Options,
            format!("{}: cannot ask for a password: {}", flag, why),
        )
        .help("run kk on a terminal, or give the password in the inventory (ansible_password, ansible_become_password), e.g. from a vault file")
    };
    if !std::io::stdin().is_terminal() {
        return Err(no_terminal("standard input is not a terminal".into()));
    }
    kk_engine::vault::prompt_hidden(question).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => no_terminal(e.to_string()),
        _ => no_terminal(format!("no terminal to ask on ({})", e)),
    })
}
