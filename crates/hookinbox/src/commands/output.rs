//! Where commands print: results on stdout, explanations on stderr, and
//! what a reader that goes away early means.
//!
//! In `hookinbox events list --json | head -1`, `head` exits once it has its
//! line. Rust ignores SIGPIPE, so the command's next write fails with EPIPE,
//! and `println!` panics on that with a backtrace. Here a closed stdout is
//! not a failure: the reader got what it asked for and nobody is left to
//! read the rest, so the command stops printing and exits 0 without a word,
//! as ripgrep does. The error is marked [`StdoutClosed`] at the one place
//! stdout is written, so `main` tells it apart from a broken pipe anywhere
//! else (a socket, a target), which stays an error. Explanations on stderr
//! go through [`note!`], which drops a line it cannot write instead of
//! panicking as `eprintln!` does.

use std::io::{self, BufWriter, StdoutLock, Write};

/// The reader of stdout closed it while a command was printing.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct StdoutClosed;

/// Locked, buffered stdout: rows are written in blocks, not a syscall per
/// line; a write into a closed pipe fails with [`StdoutClosed`] inside.
/// Call `flush` at the end: dropping it flushes too, but ignores errors.
pub struct Stdout(BufWriter<StdoutLock<'static>>);

impl Stdout {
    pub fn lock() -> Stdout {
        Stdout(BufWriter::new(io::stdout().lock()))
    }
}

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes).map_err(mark_closed)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(mark_closed)
    }
}

fn mark_closed(error: io::Error) -> io::Error {
    if error.kind() == io::ErrorKind::BrokenPipe {
        io::Error::new(io::ErrorKind::BrokenPipe, StdoutClosed)
    } else {
        error
    }
}

/// `eprintln!` that never panics: with stderr closed the explanation is
/// lost, not the command's result or exit status.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::commands::output::note_line(format_args!($($arg)*))
    };
}
pub(crate) use note;

pub fn note_line(line: std::fmt::Arguments<'_>) {
    let mut stderr = io::stderr().lock();
    let _ = stderr
        .write_fmt(line)
        .and_then(|()| stderr.write_all(b"\n"));
}

/// Whether `error` is, or was caused by, stdout closing under a command.
pub fn is_stdout_closed(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.is::<StdoutClosed>()
            || cause
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .is_some_and(|inner| inner.is::<StdoutClosed>())
    })
}

/// The one line `main` prints for a failed command, after `error: `: each
/// cause once, outermost first. A message that already ends with its
/// cause's text (`cannot read x.toml: No such file or directory`) is not
/// followed by that cause again.
pub fn error_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_closed_stdout_is_recognised_through_context() {
        let closed = mark_closed(io::ErrorKind::BrokenPipe.into());
        let error = anyhow::Error::from(closed).context("printing the events");
        assert!(is_stdout_closed(&error));
    }

    #[test]
    fn other_write_errors_and_other_broken_pipes_stay_errors() {
        let full = mark_closed(io::Error::from_raw_os_error(28)); // ENOSPC
        assert!(!is_stdout_closed(&anyhow::Error::from(full)));
        // A broken pipe that did not come from stdout (a socket, a target).
        let socket = Err::<(), _>(io::Error::from(io::ErrorKind::BrokenPipe)).context("sending");
        assert!(!is_stdout_closed(&socket.unwrap_err()));
    }

    #[test]
    fn the_error_line_names_each_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot read nope.toml: {source}")]
        struct ReadFailed {
            #[source]
            source: io::Error,
        }
        let source = io::Error::from(io::ErrorKind::NotFound);
        let text = source.to_string();
        let error = anyhow::Error::from(ReadFailed { source });
        assert_eq!(error_line(&error), format!("cannot read nope.toml: {text}"));

        let error = anyhow::anyhow!("disk I/O error").context("replay");
        assert_eq!(error_line(&error), "replay: disk I/O error");
    }
}
