//! Progress of a long command on stderr (`keys rewrap`, `purge`, `events
//! replay` of many events): on a terminal an indicatif bar (or, while the
//! total is unknown, a counter) redrawn in place as batches finish;
//! otherwise (a log, a pipe) nothing until the one summary line at the end.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::output::note;

/// Where a command reports how far it has come.
pub struct Progress {
    /// `None` when stderr is not a terminal.
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Live on a terminal, a summary line only otherwise.
    pub fn on_stderr() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Progress { bar }
    }

    /// The amount of work is known: show a bar of `total` from now on.
    pub fn set_total(&self, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            let style = ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} ({eta} left)")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
        }
    }

    /// How much of the total is done.
    pub fn set_position(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// The count so far, in words; shown on a terminal only.
    pub fn update(&self, line: std::fmt::Arguments<'_>) {
        if let Some(bar) = &self.bar {
            bar.set_message(line.to_string());
        }
    }

    /// The summary: one line, always.
    pub fn finish(&self, line: std::fmt::Arguments<'_>) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        note!("{line}");
    }
}
