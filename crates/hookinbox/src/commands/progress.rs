//! Progress of a long command on stderr (`purge`, `keys rewrap`,
//! `reconcile`): on a terminal an indicatif bar — counted when the total is
//! known, a spinner with the latest count when it is not — redrawn as
//! batches finish; otherwise (a log, a pipe) nothing is drawn, and only the
//! one summary line at the end is written.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::output::note;

/// Where a command reports how far it has come.
pub struct Progress {
    bar: ProgressBar,
}

const SPINNER: &str = "{spinner} {msg}";
const COUNTED: &str = "{bar:30} {pos}/{len} {msg}";

impl Progress {
    /// A bar on stderr when it is a terminal; indicatif draws nothing
    /// otherwise.
    pub fn on_stderr() -> Progress {
        Progress::drawn_to(ProgressDrawTarget::stderr())
    }

    fn drawn_to(target: ProgressDrawTarget) -> Progress {
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(style(SPINNER));
        // A spinner that moves while a slow batch or page is waited for.
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar }
    }

    /// The latest count, when the total is unknown.
    pub fn update(&self, line: std::fmt::Arguments<'_>) {
        self.bar.set_message(line.to_string());
    }

    /// `done` of `total`, and what they are.
    pub fn counts(&self, done: u64, total: u64, line: std::fmt::Arguments<'_>) {
        if self.bar.length().is_none() {
            self.bar.set_style(style(COUNTED));
        }
        self.bar.set_length(total);
        self.bar.set_position(done);
        self.bar.set_message(line.to_string());
    }

    /// The summary: the bar is cleared, and one line is written, always.
    pub fn finish(&self, line: std::fmt::Arguments<'_>) {
        self.bar.finish_and_clear();
        note!("{line}");
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

#[cfg(test)]
mod tests {
    use indicatif::InMemoryTerm;

    use super::*;

    #[test]
    fn on_a_terminal_the_bar_shows_the_counts_and_is_cleared_at_the_end() {
        let term = InMemoryTerm::new(4, 80);
        let progress = Progress::drawn_to(ProgressDrawTarget::term_like(Box::new(term.clone())));
        progress.counts(3, 10, format_args!("purged 3 events"));
        progress.bar.tick();
        let screen = term.contents();
        assert!(screen.contains("3/10 purged 3 events"), "{screen:?}");
        progress.finish(format_args!("purged 10 events"));
        assert_eq!(term.contents().trim(), "", "cleared for the summary line");
    }

    #[test]
    fn without_a_total_it_spins_with_the_latest_count() {
        let term = InMemoryTerm::new(4, 80);
        let progress = Progress::drawn_to(ProgressDrawTarget::term_like(Box::new(term.clone())));
        progress.update(format_args!("stripe: 200 events listed"));
        progress.bar.tick();
        let screen = term.contents();
        assert!(screen.contains("stripe: 200 events listed"), "{screen:?}");
        assert!(
            !screen.contains('/'),
            "no count without a total: {screen:?}"
        );
    }

    #[test]
    fn off_a_terminal_nothing_is_drawn() {
        let progress = Progress::drawn_to(ProgressDrawTarget::hidden());
        progress.counts(1, 2, format_args!("rewrapped 1 record"));
        assert!(progress.bar.is_hidden());
    }
}
