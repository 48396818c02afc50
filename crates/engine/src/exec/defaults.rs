//! What the command line and `ansible.cfg` set for a whole run: Ansible's play-context
//! defaults. Play, block and task keywords override them, and host variables
//! (`ansible_user`, `ansible_become_password`…) override those, as in Ansible.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::project::{BecomeMethod, Keyword, KeywordValue, Play};

/// `--step` was answered "continue": no more questions for this run.
static STEP_ALL: AtomicBool = AtomicBool::new(false);

/// `--step`: asks on standard input whether to run the task, in Ansible's words
/// (`Perform task: TASK: name (N)o/(y)es/(c)ontinue: `); "c" runs this task and every
/// later one without asking, anything but "y"/"c" (an empty line, end of input) skips it.
pub(super) async fn take_step(name: String) -> bool {
    if STEP_ALL.load(Ordering::SeqCst) {
        return true;
    }
    let answer = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "Perform task: TASK: {} (N)o/(y)es/(c)ontinue: ", name);
        let _ = out.flush();
        drop(out);
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        line.trim().to_ascii_lowercase()
    })
    .await
    .unwrap_or_default();
    match answer.as_str() {
        "y" | "yes" => true,
        "c" | "continue" => {
            STEP_ALL.store(true, Ordering::SeqCst);
            true
        }
        _ => false,
    }
}

/// `-b`, `--become-user`, `--become-method`, `-K`, `--start-at-task`, `--step`.
#[derive(Clone, Default)]
pub struct PlayDefaults {
    /// `-b` / `become = True`: the default of the `become` keyword.
    pub become_: Option<bool>,
    /// `--become-user` / `become_user =`: the default of `become_user`.
    pub become_user: Option<String>,
    /// `--become-method` / `become_method =`: the default of `become_method`.
    pub become_method: Option<String>,
    /// `become_flags =` / `ANSIBLE_BECOME_FLAGS`: the default of `become_flags`.
    pub become_flags: Option<String>,
    /// `-K`: the become password, below `ansible_become_password`. Never logged.
    pub become_password: Option<String>,
    /// `--start-at-task NAME`: tasks before the first one with this name are skipped.
    pub start_at_task: Option<String>,
    /// `--step`: ask before each task.
    pub step: bool,
    /// `gathering =` / `ANSIBLE_GATHERING`: when a play gathers facts.
    pub gathering: Gathering,
}

/// Ansible's `DEFAULT_GATHERING`: which plays gather facts, and for which hosts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Gathering {
    /// Every play that does not say `gather_facts: false` (Ansible's default).
    #[default]
    Implicit,
    /// Only plays that say `gather_facts: true`.
    Explicit,
    /// As `Implicit`, but only for hosts whose facts were not gathered yet in this run:
    /// facts of the first gathering are reused by the later plays.
    Smart,
}

impl Gathering {
    /// Reads `implicit`, `explicit` or `smart` (any case), as ansible.cfg spells them.
    pub fn parse(s: &str) -> Option<Gathering> {
        match s.trim().to_ascii_lowercase().as_str() {
            "implicit" => Some(Gathering::Implicit),
            "explicit" => Some(Gathering::Explicit),
            "smart" => Some(Gathering::Smart),
            _ => None,
        }
    }
}

impl PlayDefaults {
    /// Checks the become method now (an options error, before anything runs).
    pub fn check(&self) -> Result<(), String> {
        if let Some(m) = &self.become_method {
            if BecomeMethod::from_value(&serde_json::Value::String(m.clone())).is_err() {
                return Err(format!(
                    "become method `{}` is not one kk supports: {}",
                    m,
                    BecomeMethod::EXPECTED
                ));
            }
        }
        Ok(())
    }

    /// Gives a play's keywords their command-line defaults where the play sets none
    /// (its blocks and tasks still override them).
    pub fn apply(&self, play: &mut Play) {
        let a = &mut play.attrs;
        if a.become_.is_none() {
            a.become_ = self.become_.map(Keyword::Literal);
        }
        if a.become_user.is_none() {
            a.become_user = self.become_user.clone().map(Keyword::Literal);
        }
        if a.become_flags.is_none() {
            a.become_flags = self.become_flags.clone().map(Keyword::Literal);
        }
        if a.become_method.is_none() {
            a.become_method = self.become_method.as_ref().and_then(|m| {
                BecomeMethod::from_value(&serde_json::Value::String(m.clone()))
                    .ok()
                    .map(Keyword::Literal)
            });
        }
    }
}

impl std::fmt::Debug for PlayDefaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlayDefaults")
            .field("become_", &self.become_)
            .field("become_user", &self.become_user)
            .field("become_method", &self.become_method)
            .field("become_flags", &self.become_flags)
            .field(
                "become_password",
                &self.become_password.as_ref().map(|_| "<hidden>"),
            )
            .field("start_at_task", &self.start_at_task)
            .field("step", &self.step)
            .finish()
    }
}
