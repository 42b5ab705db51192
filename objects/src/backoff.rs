//! The backoff of the controllers' watches.

use std::time::Duration;

/// The backoff of the controllers' watches: 100 ms doubling to 1 s, back to 100 ms once a
/// watch works. kube-runtime's default grows to 30 s and is shared by every watch of a
/// controller, so a hub restart of two seconds could hold a controller back for half a
/// minute; a watch is cheap to retry.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(1);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        Some(now)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_backoff_is_short_and_resets() {
        use kube::runtime::utils::Backoff;
        let mut backoff = WatchBackoff::default();
        let waits: Vec<u128> = backoff.by_ref().take(6).map(|d| d.as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        backoff.reset();
        assert_eq!(backoff.next(), Some(Duration::from_millis(100)));
    }
}
