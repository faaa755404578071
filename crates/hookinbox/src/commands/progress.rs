//! Progress of a long command on stderr (`keys rewrap`, `purge`): on a
//! terminal a line rewritten in place as batches finish; otherwise (a log,
//! a pipe) nothing until the one summary line at the end.

use std::io::{IsTerminal, Write};

use super::output::note;

/// Where a command reports how far it has come.
pub struct Progress {
    live: bool,
}

impl Progress {
    /// Live on a terminal, a summary line only otherwise.
    pub fn on_stderr() -> Progress {
        Progress {
            live: std::io::stderr().is_terminal(),
        }
    }

    /// The count so far; shown on a terminal only.
    pub fn update(&self, line: std::fmt::Arguments<'_>) {
        if self.live {
            let mut stderr = std::io::stderr().lock();
            // Carriage return, erase the line: the count is rewritten in place.
            let _lost_if_closed = write!(stderr, "\r\x1b[2K{line}").and_then(|()| stderr.flush());
        }
    }

    /// The summary: one line, always.
    pub fn finish(&self, line: std::fmt::Arguments<'_>) {
        if self.live {
            let mut stderr = std::io::stderr().lock();
            let _lost_if_closed = write!(stderr, "\r\x1b[2K").and_then(|()| stderr.flush());
        }
        note!("{line}");
    }
}
