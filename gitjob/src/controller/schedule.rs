//! When to poll next: Fleet's defaults, jitter and backoff after failures.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use fleet_objects::duration::parse_go_duration;

/// Fleet's poll period when a GitRepo sets none.
pub const DEFAULT_POLL: Duration = Duration::from_secs(15);
/// The poll period once a webhook has reached a GitRepo that sets none (as in Fleet).
pub const WEBHOOK_POLL: Duration = Duration::from_secs(3600);
/// The longest wait before retrying after the API server failed; the first is
/// [`API_FIRST_RETRY`], doubling.
pub const API_RETRY: Duration = Duration::from_secs(1);
/// The first retry after the API server failed: it is usually back soon (a restart).
pub const API_FIRST_RETRY: Duration = Duration::from_millis(250);
/// The first retry after a failure; it doubles up to the poll period.
pub const FIRST_RETRY: Duration = Duration::from_secs(2);

/// The poll period of a GitRepo: its own, else an hour once webhooks reach it, else 15 s.
pub fn poll_period(polling_interval: Option<&str>, webhook_seen: bool) -> Duration {
    match polling_interval.and_then(parse_go_duration) {
        Some(period) if !period.is_zero() => period,
        _ if webhook_seen => WEBHOOK_POLL,
        _ => DEFAULT_POLL,
    }
}

/// `period` stretched by a random 0-10 %, so that GitRepos created together drift apart
/// instead of polling in one burst.
pub fn jittered(period: Duration) -> Duration {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let fraction = (random % 1000) as f64 / 10_000.0;
    period + period.mul_f64(fraction)
}

/// The wait before retry number `failures` (1 for the first): doubling from
/// [`FIRST_RETRY`], never longer than `period`.
pub fn backoff(failures: u32, period: Duration) -> Duration {
    doubling(FIRST_RETRY, failures, period)
}

/// The wait before retry number `failures` after API errors: doubling from
/// [`API_FIRST_RETRY`] to [`API_RETRY`].
pub fn api_backoff(failures: u32) -> Duration {
    doubling(API_FIRST_RETRY, failures, API_RETRY)
}

fn doubling(first: Duration, failures: u32, period: Duration) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    first.saturating_mul(factor).min(period.max(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_slow_polling_unless_set() {
        assert_eq!(poll_period(None, false), DEFAULT_POLL);
        assert_eq!(poll_period(None, true), WEBHOOK_POLL);
        assert_eq!(poll_period(Some("30s"), true), Duration::from_secs(30));
    }

    #[test]
    fn api_errors_are_retried_soon() {
        assert_eq!(api_backoff(1), Duration::from_millis(250));
        assert_eq!(api_backoff(2), Duration::from_millis(500));
        assert_eq!(api_backoff(3), Duration::from_secs(1));
        assert_eq!(api_backoff(30), API_RETRY);
    }

    #[test]
    fn backoff_doubles_up_to_the_period() {
        let period = Duration::from_secs(15);
        assert_eq!(backoff(1, period), Duration::from_secs(2));
        assert_eq!(backoff(2, period), Duration::from_secs(4));
        assert_eq!(backoff(3, period), Duration::from_secs(8));
        assert_eq!(backoff(9, period), period);
        let jitter = jittered(period);
        assert!(jitter >= period && jitter <= period.mul_f64(1.1));
    }
}
