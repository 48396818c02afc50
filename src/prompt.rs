//! Asking for a secret on the terminal (`-k`, `-K`): the answer is not echoed, and
//! without a terminal the run stops with an options error instead of hanging on a pipe.

use std::io::IsTerminal;

use kk_engine::{Error, ErrorKind};

/// Asks `question` on the terminal without echo; `flag` names the option that asked, for
/// the error when standard input is not a terminal.
pub(crate) fn secret(question: &str, flag: &str) -> Result<String, Error> {
    if !std::io::stdin().is_terminal() {
        return Err(Error::new(
            ErrorKind::Options,
            format!("{}: cannot ask for a password: standard input is not a terminal", flag),
        )
        .help("run kk on a terminal, or give the password in the inventory (ansible_password, ansible_become_password), e.g. from a vault file"));
    }
    rpassword::prompt_password(question).map_err(|e| {
        Error::new(
            ErrorKind::Options,
            format!("{}: cannot read the password: {}", flag, e),
        )
    })
}
