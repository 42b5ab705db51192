//! What `fleet up` shows while it works: a spinner and a bar on a terminal, plain lines
//! otherwise.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// The progress display of `fleet up`.
pub(super) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A spinner on standard error (hidden when it is not a terminal).
    pub(super) fn new() -> Self {
        let bar = ProgressBar::new_spinner();
        bar.enable_steady_tick(Duration::from_millis(100));
        Self { bar }
    }

    /// Shows what is being done now.
    pub(super) fn working(&self, what: &str) {
        self.bar.set_style(spinner_style());
        self.bar.set_message(what.to_string());
    }

    /// Prints a finished step: above the spinner on a terminal, else on standard output.
    pub(super) fn done(&self, what: &str) {
        if self.bar.is_hidden() {
            println!("✓ {what}");
        } else {
            self.bar.println(format!("✓ {what}"));
        }
    }

    /// Shows `ready` of `wanted` deployments, and what is still awaited.
    pub(super) fn deployments(&self, ready: usize, wanted: usize, message: &str) {
        if self.bar.length() != Some(wanted as u64) {
            self.bar.set_style(bar_style());
            self.bar.set_length(wanted as u64);
        }
        self.bar.set_position(ready as u64);
        self.bar.set_message(message.to_string());
    }

    /// Removes the display.
    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner:.cyan} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{spinner:.cyan} [{bar:24.green/white}] {pos}/{len} deployments ready  {wide_msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ")
}
