//! Deliveries already received, so that a captured, validly signed request sent again is
//! refused: each is remembered for [`WINDOW_SECONDS`] (however many come meanwhile, up
//! to [`CAPACITY`]) and, when a file is given, across restarts: a key is appended to it as it
//! is first seen, and the file is read back (and rewritten without what has aged out) when
//! the receiver starts.

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// How long a delivery is remembered.
const WINDOW_SECONDS: u64 = 24 * 3600;

/// The most deliveries remembered at once; beyond it the oldest are forgotten first.
const CAPACITY: usize = 200_000;

/// The deliveries seen within the window, oldest first.
pub(super) struct Seen {
    order: VecDeque<(u64, String)>,
    keys: HashSet<String>,
    file: Option<PathBuf>,
    /// Lines appended to the file since it was last written whole.
    appended: usize,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Seen {
    /// An empty memory, kept in `file` when given (read back now if it exists).
    pub(super) fn new(file: Option<&Path>) -> Self {
        let mut seen = Self {
            order: VecDeque::new(),
            keys: HashSet::new(),
            file: file.map(Path::to_path_buf),
            appended: 0,
        };
        if let Some(file) = file {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let oldest = now().saturating_sub(WINDOW_SECONDS);
            for line in text.lines() {
                if let Some((at, key)) = line.split_once(' ') {
                    if let Ok(at) = at.parse::<u64>() {
                        if at >= oldest {
                            seen.remember(at, key);
                        }
                    }
                }
            }
            seen.rewrite();
        }
        seen
    }

    /// Records `key`; false when it was seen within the window.
    pub(super) fn first_time(&mut self, key: &str) -> bool {
        self.first_time_at(key, now())
    }

    fn first_time_at(&mut self, key: &str, at: u64) -> bool {
        self.forget_before(at.saturating_sub(WINDOW_SECONDS));
        if self.keys.contains(key) {
            return false;
        }
        self.remember(at, key);
        self.appended += 1;
        if self.appended > CAPACITY {
            // What aged out would otherwise pile up in the file until the next start.
            self.rewrite();
            self.appended = 0;
            return true;
        }
        if let Some(file) = &self.file {
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .and_then(|mut f| writeln!(f, "{at} {key}"));
            if let Err(error) = appended {
                tracing::warn!(file = %file.display(), %error, "could not keep a webhook delivery for replay checks");
            }
        }
        true
    }

    fn remember(&mut self, at: u64, key: &str) {
        if self.order.len() >= CAPACITY {
            if let Some((_, oldest)) = self.order.pop_front() {
                self.keys.remove(&oldest);
            }
        }
        self.order.push_back((at, key.to_string()));
        self.keys.insert(key.to_string());
    }

    fn forget_before(&mut self, oldest: u64) {
        while self.order.front().is_some_and(|(at, _)| *at < oldest) {
            if let Some((_, key)) = self.order.pop_front() {
                self.keys.remove(&key);
            }
        }
    }

    /// Writes the file anew with what is remembered (dropping what aged out).
    fn rewrite(&self) {
        let Some(file) = &self.file else {
            return;
        };
        let text: String = (self.order.iter())
            .map(|(at, key)| format!("{at} {key}\n"))
            .collect();
        let partial = file.with_extension("partial");
        let written = std::fs::write(&partial, text).and_then(|()| std::fs::rename(&partial, file));
        if let Err(error) = written {
            tracing::warn!(file = %file.display(), %error, "could not rewrite the webhook deliveries kept");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_is_refused_within_the_window_and_across_restarts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("deliveries");
        let mut seen = Seen::new(Some(&file));
        let start = now();
        assert!(seen.first_time_at("a", start));
        assert!(!seen.first_time_at("a", start + 10));
        for n in 0..6_000 {
            assert!(seen.first_time_at(&format!("other-{n}"), start + 20));
        }
        assert!(
            !seen.first_time_at("a", start + 30),
            "not forgotten after 6,000 others"
        );
        let mut restarted = Seen::new(Some(&file));
        assert!(
            !restarted.first_time_at("a", start + 40),
            "kept across a restart"
        );
        assert!(
            restarted.first_time_at("a", start + WINDOW_SECONDS + 1),
            "forgotten once the window has passed"
        );
    }
}
