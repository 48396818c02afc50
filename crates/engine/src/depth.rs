//! How deeply a playbook may nest, and the stack the loader and the executor recurse on.
//!
//! Blocks, imported and included task files, roles and their dependencies nest task lists
//! in task lists; the loader and the executor walk them recursively. Two guards keep a
//! hostile or mistaken playbook from overflowing the thread's stack (an abort, not an
//! error): a limit on the nesting, reported at the place that goes one level too deep, and
//! [`grow`]/[`GrowStack`] at each recursion point, which continue on a fresh heap-allocated
//! stack segment when the thread's stack runs low — so the limit is reached first whatever
//! the thread's stack size (8 MiB for `main`, 2 MiB for tokio's workers) and however large
//! an unoptimised build's frames are.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::{Error, Span};

/// How many task lists may nest in one another: blocks, `import_tasks`/`include_tasks`
/// files, roles, role dependencies and `include_role`, counted together.
///
/// Ansible has no limit of its own: Python's recursion limit ends it somewhere between 150
/// and 300 nested blocks ("maximum recursion depth exceeded", exit 250). Real projects
/// nest a dozen levels; 100 leaves room for recursive includes that count down.
pub const MAX_NESTING: usize = 100;

/// Stack left before [`grow`] switches to a new segment. Generous: an unoptimised build
/// spends about 150 KiB of stack per nesting level between two checks.
const RED_ZONE: usize = 512 * 1024;
/// Size of each new stack segment.
const SEGMENT: usize = 8 * 1024 * 1024;

/// Runs `f`, on a new stack segment when less than the red zone is left on this one.
pub fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// A future whose every poll runs through [`grow`]: polling nested futures recurses on
/// the stack as deeply as they nest.
pub struct GrowStack<F>(pub Pin<Box<F>>);

impl<F: Future> Future for GrowStack<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let inner = self.0.as_mut();
        grow(|| inner.poll(cx))
    }
}

/// The error of a task list nested one level deeper than [`MAX_NESTING`], at the entry
/// that nests it.
pub fn too_deep(span: &Span) -> Error {
    Error::syntax(
        format!(
            "tasks nest too deeply: more than {} levels of blocks, imported or included task files and roles",
            MAX_NESTING
        ),
        span,
    )
    .with_code("kk::nesting")
    .help("flatten the nesting; a file or role that includes itself needs a `when:` that stops it")
}

/// The next nesting level, or the error at `span` when it is one too many.
pub fn deeper(depth: usize, span: &Span) -> Result<usize, Error> {
    if depth >= MAX_NESTING {
        Err(too_deep(span))
    } else {
        Ok(depth + 1)
    }
}
