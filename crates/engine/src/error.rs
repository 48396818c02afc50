//! One error type for the whole engine, carrying where in which file it came from,
//! and one place ([`Error::render`]) that turns it into what a user reads.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file the engine read, kept whole so an error can quote the offending line.
#[derive(Debug)]
pub struct SourceFile {
    /// Path as the user would recognise it (relative where it was given relative).
    pub path: PathBuf,
    /// Full text of the file.
    pub text: String,
}

impl SourceFile {
    /// Wraps a file's text for use in spans.
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Arc<SourceFile> {
        Arc::new(SourceFile {
            path: path.into(),
            text: text.into(),
        })
    }
}

/// A position in a source file (1-based line and column).
#[derive(Clone)]
pub struct Span {
    /// The file the position is in.
    pub file: Arc<SourceFile>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

impl Span {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.file.path
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.path.display(), self.line, self.col)
    }
}

/// What went wrong, coarsely: decides the exit code and the headline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The YAML itself does not parse.
    Yaml,
    /// A playbook, role, inventory or config is well-formed YAML but not a valid one.
    Syntax,
    /// A Jinja template does not compile or fails to evaluate.
    Template,
    /// A variable used by a template is not defined.
    Undefined,
    /// A module got arguments it does not accept.
    ModuleArgs,
    /// A file could not be read or written on the controller.
    Io,
    /// Bad command-line options.
    Options,
    /// A host could not be reached or a connection broke.
    Connection,
    /// Anything else that stops a task.
    Runtime,
}

impl ErrorKind {
    fn headline(self) -> &'static str {
        match self {
            ErrorKind::Yaml => "invalid YAML",
            ErrorKind::Syntax => "invalid playbook",
            ErrorKind::Template => "template error",
            ErrorKind::Undefined => "undefined variable",
            ErrorKind::ModuleArgs => "invalid module arguments",
            ErrorKind::Io => "file error",
            ErrorKind::Options => "invalid options",
            ErrorKind::Connection => "connection error",
            ErrorKind::Runtime => "error",
        }
    }
}

/// An engine error: a kind, a message, maybe a source position and a hint to fix it.
#[derive(Debug, Clone)]
pub struct Error {
    /// Coarse category.
    pub kind: ErrorKind,
    /// What happened, in one sentence.
    pub message: String,
    /// Where in the user's files, when known.
    pub span: Option<Span>,
    /// How to fix it, when we can say.
    pub help: Option<String>,
    /// Extra context lines ("while running task X").
    pub notes: Vec<String>,
}

/// Result alias used across the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of a kind with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            span: None,
            help: None,
            notes: Vec::new(),
        }
    }

    /// Shorthand for a structural playbook error at a position.
    pub fn syntax(message: impl Into<String>, span: &Span) -> Error {
        Error::new(ErrorKind::Syntax, message).at(span)
    }

    /// Attaches a position unless one is already known (the innermost wins).
    pub fn at(mut self, span: &Span) -> Error {
        if self.span.is_none() {
            self.span = Some(span.clone());
        }
        self
    }

    /// Attaches a position if one is given and none is known.
    pub fn at_opt(self, span: Option<&Span>) -> Error {
        match span {
            Some(s) => self.at(s),
            None => self,
        }
    }

    /// Adds a hint on how to fix the problem.
    pub fn help(mut self, help: impl Into<String>) -> Error {
        self.help = Some(help.into());
        self
    }

    /// Adds a context line.
    pub fn note(mut self, note: impl Into<String>) -> Error {
        self.notes.push(note.into());
        self
    }

    /// Ansible's exit codes: 4 for anything wrong with the files given, 5 for options, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::Yaml | ErrorKind::Syntax => 4,
            ErrorKind::Options => 5,
            _ => 1,
        }
    }

    /// Renders the error the way a user sees it: headline, location, quoted line, caret, hints.
    pub fn render(&self) -> String {
        let mut out = match self.kind {
            ErrorKind::Runtime => format!("error: {}\n", self.message),
            _ => format!("error: {}: {}\n", self.kind.headline(), self.message),
        };
        if let Some(span) = &self.span {
            out.push_str(&format!("  --> {}\n", span));
            if let Some(line) = span.file.text.lines().nth(span.line.saturating_sub(1)) {
                let num = span.line.to_string();
                let pad = " ".repeat(num.len());
                out.push_str(&format!("{pad} |\n{num} | {line}\n"));
                let caret_pad: String = line
                    .chars()
                    .take(span.col.saturating_sub(1))
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                out.push_str(&format!("{pad} | {caret_pad}^\n"));
            }
        }
        for note in &self.notes {
            out.push_str(&format!("  = note: {}\n", note));
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("  = help: {}\n", help));
        }
        out
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.span {
            Some(span) => write!(f, "{} ({})", self.message, span),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

/// Reads a file on the controller, with an error that names it.
pub fn read_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read {}: {}", path.display(), e),
        )
    })
}

/// The closest candidate to a misspelt name, for "did you mean" hints: the first with the
/// smallest edit distance (Levenshtein, in characters), if that is at most 2 or a third of
/// the name.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(&str, usize)> = None;
    for c in candidates {
        let d = strsim::levenshtein(name, c);
        if d <= 2.max(name.len() / 3) && best.is_none_or(|(_, bd)| d < bd) {
            best = Some((c, d));
        }
    }
    best.map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_quotes_line_and_caret() {
        let f = SourceFile::new("site.yaml", "- hosts: all\n  tasks:\n    - comand: x\n");
        let e = Error::syntax(
            "unknown module `comand`",
            &Span {
                file: f,
                line: 3,
                col: 7,
            },
        )
        .help("did you mean `command`?");
        let r = e.render();
        assert!(r.contains("--> site.yaml:3:7"), "{r}");
        assert!(r.contains("3 |     - comand: x"), "{r}");
        assert!(r.contains("  |       ^"), "{r}");
        assert!(r.contains("help: did you mean"), "{r}");
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("comand", ["command", "shell"]),
            Some("command")
        );
        assert_eq!(did_you_mean("zzzzzz", ["command", "shell"]), None);
    }
}
