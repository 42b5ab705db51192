//! Turns to render a commit's bundles, apart from the Git slots that fetch them, shared so
//! that no namespace holds more than its share: GitRepos whose charts run long (or for
//! ever, until their budget stops them) delay their own namespace, not everyone's syncs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Render turns: `total` at once, at most `share` of them for one namespace.
pub(super) struct RenderSlots {
    all: Arc<Semaphore>,
    share: usize,
    namespaces: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A turn to render; the slot is free again once this is dropped.
pub(super) struct RenderTurn {
    _namespace: OwnedSemaphorePermit,
    _all: OwnedSemaphorePermit,
}

impl RenderSlots {
    /// `total` turns (at least one), half of them (at least one) for any one namespace.
    pub(super) fn new(total: usize) -> Self {
        let total = total.max(1);
        Self {
            all: Arc::new(Semaphore::new(total)),
            share: (total / 2).max(1),
            namespaces: Mutex::default(),
        }
    }

    /// Waits for a turn for a GitRepo of `namespace`: first its namespace's, then one of all,
    /// so a namespace waiting on itself takes none of the slots others could use.
    pub(super) async fn turn(&self, namespace: &str) -> Option<RenderTurn> {
        let own = self.namespace(namespace)?;
        let namespace_permit = own.acquire_owned().await.ok()?;
        let all_permit = self.all.clone().acquire_owned().await.ok()?;
        Some(RenderTurn {
            _namespace: namespace_permit,
            _all: all_permit,
        })
    }

    /// The namespace's semaphore, made on first use; namespaces nobody renders in are
    /// forgotten meanwhile, so the map holds only those in use.
    fn namespace(&self, namespace: &str) -> Option<Arc<Semaphore>> {
        let mut namespaces = self.namespaces.lock().ok()?;
        // A waiter or a turn holds its own reference to the semaphore.
        namespaces.retain(|_, slots| Arc::strong_count(slots) > 1);
        let share = self.share;
        Some(
            namespaces
                .entry(namespace.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(share)))
                .clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_namespace_takes_at_most_half_and_others_still_get_a_turn() {
        let slots = RenderSlots::new(4);
        let first = slots.turn("busy").await.expect("turn");
        let second = slots.turn("busy").await.expect("turn");
        let third = tokio::time::timeout(Duration::from_millis(100), slots.turn("busy")).await;
        assert!(third.is_err(), "a third turn for one namespace must wait");
        let other = tokio::time::timeout(Duration::from_millis(100), slots.turn("quiet")).await;
        assert!(
            matches!(other, Ok(Some(_))),
            "another namespace gets a turn"
        );
        drop(first);
        let again = tokio::time::timeout(Duration::from_millis(100), slots.turn("busy")).await;
        assert!(matches!(again, Ok(Some(_))), "a freed turn is given again");
        drop(second);
    }

    #[tokio::test]
    async fn idle_namespaces_are_forgotten() {
        let slots = RenderSlots::new(2);
        for n in 0..100 {
            drop(slots.turn(&format!("ns{n}")).await);
        }
        let kept = slots.namespaces.lock().expect("lock").len();
        assert!(kept <= 1, "{kept} idle namespaces kept");
    }
}
