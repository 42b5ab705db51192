//! Spacing out status writes of the same object: a Cluster's summary changes with every
//! deployment's report, and a rollout would rewrite it (and every group it is in) once per
//! report. A paced object is written at most once per interval; a change inside the
//! interval waits for its end and is written then, so the last state always lands.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// When each object's status was last written, to space its writes `interval` apart.
pub struct Pacer {
    interval: Duration,
    written: Mutex<Written>,
}

/// The write times, when old ones were last forgotten, and the writes told to wait.
struct Written {
    at: HashMap<String, Instant>,
    pruned: Instant,
    waiting: HashSet<String>,
}

impl Pacer {
    /// A pacer allowing one write per object every `interval`.
    pub fn new(interval: Duration) -> Self {
        Pacer {
            interval,
            written: Mutex::new(Written {
                at: HashMap::new(),
                pruned: Instant::now(),
                waiting: HashSet::new(),
            }),
        }
    }

    /// Claims a write of `key` now: `None` if it may go (it is then counted as written),
    /// or how long it must wait.
    pub fn claim(&self, key: &str) -> Option<Duration> {
        let now = Instant::now();
        let mut written = self
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(last) = written.at.get(key) {
            let since = now.saturating_duration_since(*last);
            if since < self.interval {
                written.waiting.insert(key.to_owned());
                return Some(self.interval - since);
            }
        }
        written.waiting.remove(key);
        written.at.insert(key.to_owned(), now);
        // Writes older than the interval no longer hold anything back: forget them once
        // an interval, so objects gone long ago do not stay.
        if now.saturating_duration_since(written.pruned) >= self.interval {
            let interval = self.interval;
            written
                .at
                .retain(|_, last| now.saturating_duration_since(*last) < interval);
            written.pruned = now;
        }
        None
    }

    /// The keys told to wait whose write has not been claimed since: what stopping now
    /// would lose.
    pub fn waiting(&self) -> Vec<String> {
        let written = self
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut keys: Vec<String> = written.waiting.iter().cloned().collect();
        keys.sort();
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_write_waits_out_the_interval_and_others_do_not() {
        let pacer = Pacer::new(Duration::from_secs(60));
        assert_eq!(pacer.claim("Cluster/a/one"), None);
        let wait = pacer.claim("Cluster/a/one").expect("paced");
        assert!(wait > Duration::from_secs(59) && wait <= Duration::from_secs(60));
        assert_eq!(pacer.claim("Cluster/a/two"), None);
    }

    #[test]
    fn a_write_after_the_interval_goes_at_once() {
        let pacer = Pacer::new(Duration::from_millis(20));
        assert_eq!(pacer.claim("Cluster/a/one"), None);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(pacer.claim("Cluster/a/one"), None);
        assert!(pacer.claim("Cluster/a/one").is_some());
    }

    #[test]
    fn the_writes_told_to_wait_are_listed_until_written() {
        let pacer = Pacer::new(Duration::from_millis(20));
        assert_eq!(pacer.claim("Cluster/a/one"), None);
        assert_eq!(pacer.claim("Cluster/a/two"), None);
        assert!(pacer.waiting().is_empty());
        assert!(pacer.claim("Cluster/a/two").is_some());
        assert!(pacer.claim("Cluster/a/one").is_some());
        assert_eq!(pacer.waiting(), ["Cluster/a/one", "Cluster/a/two"]);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(pacer.claim("Cluster/a/one"), None);
        assert_eq!(pacer.waiting(), ["Cluster/a/two"]);
    }

    #[test]
    fn old_writes_are_forgotten() {
        let pacer = Pacer::new(Duration::from_millis(20));
        assert_eq!(pacer.claim("Cluster/a/gone"), None);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(pacer.claim("Cluster/a/one"), None);
        let written = pacer.written.lock().expect("lock");
        assert!(!written.at.contains_key("Cluster/a/gone"));
        assert!(written.at.contains_key("Cluster/a/one"));
    }
}
