//! The Contents an agent has read, unpacked, by name. A Content is named by the sha256 of
//! what it holds and never changes, so once read it is not asked of the hub again: a drift
//! reconcile costs no hub request. The cache holds the most recently used few; agents in one
//! process (a simulation, `fleet up`) may share one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use fleet_api::{Content, Payload};
use kube::Api;

use crate::Error;

/// How many Contents an agent keeps unless told otherwise: a cluster's bundles, each at
/// its current and previous deployment, with room to spare.
pub const DEFAULT_CAPACITY: usize = 256;

/// Unpacked Contents by name, the least recently used dropped first when full.
#[derive(Debug)]
pub struct ContentCache {
    capacity: usize,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    /// Each Content's payload and when it was last used (a counter, not a clock).
    payloads: HashMap<String, (Arc<Payload>, u64)>,
    uses: u64,
}

impl Default for ContentCache {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

impl ContentCache {
    /// A cache holding at most `capacity` Contents (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            held: Mutex::default(),
        }
    }

    /// The payload of the Content `name`: from the cache, or read from `hub` and kept.
    pub async fn payload(&self, hub: &kube::Client, name: &str) -> Result<Arc<Payload>, Error> {
        if let Some(payload) = self.cached(name) {
            return Ok(payload);
        }
        let content = Api::<Content>::all(hub.clone()).get(name).await?;
        let payload = Arc::new(content.unpack()?);
        self.keep(name, &payload);
        Ok(payload)
    }

    fn cached(&self, name: &str) -> Option<Arc<Payload>> {
        let mut held = self.held.lock().ok()?;
        held.uses += 1;
        let now = held.uses;
        let (payload, used) = held.payloads.get_mut(name)?;
        *used = now;
        Some(payload.clone())
    }

    fn keep(&self, name: &str, payload: &Arc<Payload>) {
        let Ok(mut held) = self.held.lock() else {
            return;
        };
        if held.payloads.len() >= self.capacity && !held.payloads.contains_key(name) {
            let oldest = held
                .payloads
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                held.payloads.remove(&oldest);
            }
        }
        held.uses += 1;
        let now = held.uses;
        held.payloads
            .insert(name.to_string(), (payload.clone(), now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(n: usize) -> Arc<Payload> {
        Arc::new(Payload {
            resources: vec![serde_json::json!({"n": n})],
            ..Payload::default()
        })
    }

    fn held(cache: &ContentCache) -> usize {
        cache.held.lock().expect("not poisoned").payloads.len()
    }

    #[test]
    fn the_least_recently_used_content_is_dropped_when_full() {
        let cache = ContentCache::with_capacity(2);
        cache.keep("a", &payload(1));
        cache.keep("b", &payload(2));
        // "a" is used again, so "b" is now the least recently used.
        assert!(cache.cached("a").is_some());
        cache.keep("c", &payload(3));
        assert_eq!(held(&cache), 2);
        assert!(cache.cached("b").is_none());
        assert_eq!(cache.cached("a"), Some(payload(1)));
        assert_eq!(cache.cached("c"), Some(payload(3)));
    }

    #[test]
    fn keeping_a_held_content_again_drops_nothing() {
        let cache = ContentCache::with_capacity(2);
        cache.keep("a", &payload(1));
        cache.keep("b", &payload(2));
        cache.keep("b", &payload(2));
        assert_eq!(held(&cache), 2);
        assert!(cache.cached("a").is_some());
    }
}
