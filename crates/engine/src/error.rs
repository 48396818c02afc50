//! One error type for the whole engine, carrying where in which file it came from,
//! and one place ([`Error::render`], with miette) that turns it into what a user reads;
//! a failed task's result carries [`Error::result_message`] instead, data not a rendering.

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
    /// Where each line starts, computed on first use by [`SourceFile::line`].
    line_starts: std::sync::OnceLock<Vec<usize>>,
}

impl SourceFile {
    /// Wraps a file's text for use in spans.
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Arc<SourceFile> {
        Arc::new(SourceFile {
            path: path.into(),
            text: text.into(),
            line_starts: std::sync::OnceLock::new(),
        })
    }

    /// The text of 1-based line `n` (without its line break), in constant time: callers
    /// look up a line per key of a mapping of 100,000 keys.
    pub fn line(&self, n: usize) -> Option<&str> {
        let starts = self.line_starts.get_or_init(|| {
            std::iter::once(0)
                .chain(self.text.match_indices('\n').map(|(i, _)| i + 1))
                .collect()
        });
        let start = *starts.get(n.checked_sub(1)?)?;
        let end = starts.get(n).map_or(self.text.len(), |e| e - 1);
        if start > self.text.len() || (start == self.text.len() && n > 1) {
            return None;
        }
        Some(self.text[start..end].trim_end_matches('\r'))
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
    /// A file kk loads is not text it can take: too large, or not UTF-8.
    Input,
    /// Bad command-line options.
    Options,
    /// A host could not be reached or a connection broke.
    Connection,
    /// Anything else that stops a task.
    Runtime,
}

impl ErrorKind {
    /// The diagnostic code of the kind (`kk::<kind>`), shown with the error and stable for
    /// scripts and docs; an error may carry a finer one ([`Error::with_code`]).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Yaml => "kk::yaml",
            ErrorKind::Syntax => "kk::syntax",
            ErrorKind::Template => "kk::template",
            ErrorKind::Undefined => "kk::template::undefined",
            ErrorKind::ModuleArgs => "kk::module::arguments",
            ErrorKind::Io => "kk::io",
            ErrorKind::Input => "kk::file",
            ErrorKind::Options => "kk::options",
            ErrorKind::Connection => "kk::connection",
            ErrorKind::Runtime => "kk::runtime",
        }
    }

    fn headline(self) -> &'static str {
        match self {
            ErrorKind::Yaml => "invalid YAML",
            ErrorKind::Syntax => "invalid playbook",
            ErrorKind::Template => "template error",
            ErrorKind::Undefined => "undefined variable",
            ErrorKind::ModuleArgs => "invalid module arguments",
            ErrorKind::Io => "file error",
            ErrorKind::Input => "unreadable file",
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
    /// A finer diagnostic code than the kind's (`kk::module::unknown_argument`).
    pub code: Option<&'static str>,
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
            code: None,
        }
    }

    /// Gives the error a finer diagnostic code than its kind's.
    pub fn with_code(mut self, code: &'static str) -> Error {
        self.code = Some(code);
        self
    }

    /// The diagnostic code: the finer one if set, else the kind's.
    pub fn code(&self) -> &'static str {
        self.code.unwrap_or(self.kind.code())
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
            ErrorKind::Yaml | ErrorKind::Syntax | ErrorKind::Input => 4,
            ErrorKind::Options => 5,
            _ => 1,
        }
    }

    /// The error's one-line statement: headline and message (a runtime error is its
    /// message alone).
    pub fn statement(&self) -> String {
        match self.kind {
            ErrorKind::Runtime => self.message.clone(),
            _ => format!("{}: {}", self.kind.headline(), self.message),
        }
    }

    /// What a failed task's result carries as `msg`: the statement, where, the notes and
    /// the hint, on one line — data a later task may read, not a rendering.
    pub fn result_message(&self) -> String {
        let mut out = self.statement();
        let mut context: Vec<String> = self.span.iter().map(Span::to_string).collect();
        context.extend(self.notes.iter().cloned());
        if !context.is_empty() {
            out.push_str(&format!(" ({})", context.join("; ")));
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("; help: {}", help));
        }
        out
    }

    /// Renders the error the way a user sees it, with miette: the code and statement, the
    /// quoted source with the place labelled by the notes, the hint. Plain text (no colour,
    /// no wrapping), so logs and tests read the same as a terminal.
    pub fn render(&self) -> String {
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_links(false)
                .with_urls(false)
                .with_wrap_lines(false)
                .with_context_lines(1)
                .without_cause_chain();
        let mut out = String::new();
        if handler
            .render_report(&mut out, &Diagnostic::new(self))
            .is_err()
        {
            // Formatting into a String cannot fail; keep the statement if it ever does.
            out = format!("error: {}\n", self.statement());
        }
        out
    }
}

/// An [`Error`] seen as a miette diagnostic: its source file, the labelled place, the
/// notes and the hint. Built only to render, so the error itself stays cheap to clone.
struct Diagnostic<'a> {
    error: &'a Error,
    source: Option<miette::NamedSource<String>>,
    at: Option<miette::SourceSpan>,
    help: Option<String>,
}

impl<'a> Diagnostic<'a> {
    fn new(error: &'a Error) -> Diagnostic<'a> {
        let (source, at) = match &error.span {
            Some(span) => (
                Some(
                    miette::NamedSource::new(
                        span.file.path.display().to_string(),
                        span.file.text.clone(),
                    )
                    .with_language("yaml"),
                ),
                byte_span(&span.file.text, span.line, span.col),
            ),
            None => (None, None),
        };
        // Notes label the marked place; without one they lead the hint.
        let mut help: Vec<String> = match at {
            Some(_) => Vec::new(),
            None => error.notes.iter().map(|n| format!("note: {n}")).collect(),
        };
        help.extend(error.help.iter().cloned());
        Diagnostic {
            error,
            source: at.and(source),
            at,
            help: (!help.is_empty()).then(|| help.join("\n")),
        }
    }
}

/// The byte range of the token at 1-based `line`:`col` (characters), for the label: up to
/// the next blank, `:` or line end, at least one character.
fn byte_span(text: &str, line: usize, col: usize) -> Option<miette::SourceSpan> {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let body = l.trim_end_matches(['\n', '\r']);
            let start = body
                .char_indices()
                .nth(col.saturating_sub(1))
                .map_or(body.len(), |(b, _)| b);
            let rest = &body[start..];
            let len = rest
                .find(|c: char| c.is_whitespace() || c == ':')
                .unwrap_or(rest.len())
                .max(rest.chars().next().map_or(0, char::len_utf8));
            return Some((offset + start, len).into());
        }
        offset += l.len();
    }
    None
}

impl fmt::Display for Diagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error.statement())?;
        match (&self.error.span, self.at) {
            // No quoted source (a position past the end of its file): say where in words.
            (Some(span), None) => write!(f, " ({span})"),
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for Diagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Diagnostic<'_> {}

impl miette::Diagnostic for Diagnostic<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.error.code()))
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let at = self.at?;
        let label = match self.error.notes.is_empty() {
            true => "here".to_string(),
            false => self.error.notes.join("; "),
        };
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(Some(label), at),
        )))
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

/// The most a file kk loads may hold (playbooks, roles, inventories, variable and config
/// files, files a `file` lookup reads): 16 MiB. kk holds such a file whole, and a name like
/// `/dev/zero` would otherwise never end; real ones are a few kilobytes.
pub const MAX_FILE_SIZE: u64 = 16 << 20;

/// Reads at most [`MAX_FILE_SIZE`] bytes of a file on the controller (a longer one is an
/// error saying the limit, without reading the rest), with an error that names it.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("cannot read {}: {}", path.display(), e),
        )
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut data = Vec::new();
    file.take(MAX_FILE_SIZE + 1)
        .read_to_end(&mut data)
        .map_err(cannot)?;
    if data.len() as u64 > MAX_FILE_SIZE {
        return Err(Error::new(
            ErrorKind::Input,
            format!(
                "{} is larger than kk's limit of {} MiB for a file it loads",
                path.display(),
                MAX_FILE_SIZE >> 20
            ),
        )
        .with_code("kk::file::too_large")
        .help("give a regular file of at most that size (is this the right file?)"));
    }
    Ok(data)
}

/// Reads a text file on the controller (at most [`MAX_FILE_SIZE`]), decrypted when it is
/// vaulted: it must be UTF-8, and a leading byte order mark is dropped, as Ansible does. A byte that is not UTF-8 is a
/// located error (line and column of the byte).
pub fn read_file(path: &Path) -> Result<String> {
    // A vaulted file is read as its plaintext, wherever it is loaded from (Ansible's DataLoader).
    let data = crate::vault::decrypt_file(path, read_bytes(path)?)?;
    text_of(path, data)
}

/// The text of a file's bytes: [`read_file`]'s checks, for bytes read otherwise.
pub fn text_of(path: &Path, mut data: Vec<u8>) -> Result<String> {
    if data.starts_with(b"\xEF\xBB\xBF") {
        data.drain(..3);
    }
    String::from_utf8(data).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let valid = String::from_utf8_lossy(&bytes[..at]);
        let line = valid.matches('\n').count() + 1;
        let col = valid.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let shown = String::from_utf8_lossy(bytes).into_owned();
        Error::new(
            ErrorKind::Input,
            format!(
                "byte 0x{:02x} is not UTF-8: the file must be UTF-8",
                bytes[at]
            ),
        )
        .at(&Span {
            file: SourceFile::new(path, shown),
            line,
            col,
        })
        .with_code("kk::file::not_utf8")
        .help("convert the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`), or remove the byte")
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
        assert!(r.contains("kk::syntax"), "{r}");
        assert!(
            r.contains("invalid playbook: unknown module `comand`"),
            "{r}"
        );
        assert!(r.contains("[site.yaml:3:7]"), "{r}");
        assert!(r.contains("3 │     - comand: x"), "{r}");
        assert!(r.contains("·       ───┬──"), "{r}");
        assert!(r.contains("help: did you mean"), "{r}");
        let m = e.with_code("kk::module::unknown").note("in play `p`");
        let r = m.render();
        assert!(r.contains("kk::module::unknown"), "{r}");
        assert!(r.contains("╰── in play `p`"), "{r}");
        assert_eq!(
            m.result_message(),
            "invalid playbook: unknown module `comand` (site.yaml:3:7; in play `p`); help: did you mean `command`?"
        );
    }

    #[test]
    fn render_past_the_end_and_without_place() {
        let f = SourceFile::new("x.yaml", "a: 1\n");
        let e = Error::syntax(
            "odd",
            &Span {
                file: f,
                line: 9,
                col: 1,
            },
        );
        let r = e.render();
        assert!(r.contains("invalid playbook: odd (x.yaml:9:1)"), "{r}");
        let r = Error::new(ErrorKind::Runtime, "command failed")
            .note("in task `t`")
            .render();
        assert!(r.contains("× command failed"), "{r}");
        assert!(r.contains("help: note: in task `t`"), "{r}");
        assert_eq!(byte_span("ab\nc: d\n", 2, 1), Some((3, 1).into()));
        assert_eq!(byte_span("ab\nxé z\n", 2, 2), Some((4, 2).into()));
    }

    #[test]
    fn read_file_limits_and_utf8() {
        let e = read_file(Path::new("/dev/zero")).unwrap_err();
        assert_eq!((e.kind, e.exit_code()), (ErrorKind::Input, 4));
        assert!(
            e.message
                .contains("/dev/zero is larger than kk's limit of 16 MiB"),
            "{}",
            e.message
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("v.yaml");
        std::fs::write(&f, b"\xEF\xBB\xBFa: 1\n").unwrap();
        assert_eq!(read_file(&f).unwrap(), "a: 1\n");
        std::fs::write(&f, b"a: 1\nb: \xc3\xa9t\xe9\n").unwrap();
        let e = read_file(&f).unwrap_err();
        assert_eq!(e.exit_code(), 4);
        assert!(
            e.message
                .contains("byte 0xe9 is not UTF-8: the file must be UTF-8"),
            "{}",
            e.message
        );
        let span = e.span.unwrap();
        assert_eq!((span.line, span.col), (2, 6));
        std::fs::write(&f, b"\xff").unwrap();
        let span = read_file(&f).unwrap_err().span.unwrap();
        assert_eq!((span.line, span.col), (1, 1));
        let e = read_file(&dir.path().join("none")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Io);
    }

    #[test]
    fn lines_by_number() {
        let f = SourceFile::new("x", "a\r\nbb\n\nc");
        let got: Vec<Option<&str>> = (0..=5).map(|n| f.line(n)).collect();
        assert_eq!(
            got,
            [None, Some("a"), Some("bb"), Some(""), Some("c"), None]
        );
        assert_eq!(SourceFile::new("x", "a\n").line(2), None);
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
