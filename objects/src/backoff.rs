//! The backoff of the controllers' and agents' watches.

use std::time::Duration;

/// The backoff of a watch: from 200 ms, doubling up to 10 s, back to the start once the
/// watch works; each wait drawn between half and all of its step, so that the thousand
/// agents an API server restart (or an RBAC change refusing them all) cuts off do not all
/// come back at the same instant. kube-runtime's default grows to 30 s and is shared by
/// every watch of a controller, so that a two-second restart could hold it back for half
/// a minute; these watches are cheap to retry, but not all at once.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(200);
    const MAX: Duration = Duration::from_secs(10);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let step = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        Some(step / 2 + step.mul_f64(random_fraction() / 2.0))
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// A random number in [0, 1).
fn random_fraction() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_ten_seconds_jittered_and_reset() {
        use kube::runtime::utils::Backoff;
        let steps = [200u128, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000];
        let mut backoff = WatchBackoff::default();
        let waits: Vec<u128> = backoff.by_ref().take(8).map(|d| d.as_millis()).collect();
        for (wait, step) in waits.iter().zip(steps) {
            assert!(*wait >= step / 2 && *wait <= step, "{waits:?}");
        }
        backoff.reset();
        assert!(backoff
            .next()
            .is_some_and(|d| d <= Duration::from_millis(200)));
        // A thousand watches cut off together come back spread over the last step.
        let last: Vec<Duration> = (0..1000)
            .map(|_| WatchBackoff::default().nth(7).unwrap_or_default())
            .collect();
        let (min, max) = (last.iter().min(), last.iter().max());
        assert!(
            max.zip(min)
                .is_some_and(|(max, min)| *max - *min > Duration::from_secs(4)),
            "{min:?}..{max:?}"
        );
    }
}
