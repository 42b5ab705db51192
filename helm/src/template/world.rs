//! What the non-deterministic functions draw on: a source of random bytes, a clock, and
//! the cluster `lookup` asks. A render has one, shared by every template it executes;
//! tests seed it and fix the clock so that random passwords, keys and certificates come
//! out the same every run.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Answers Helm's `lookup`: Helm asks the cluster it installs into; `helm template` (and a
/// render with no lookup) finds nothing.
pub trait Lookup {
    /// The object `apiVersion kind namespace/name` as JSON, or with an empty `name` the
    /// list of them (`{"items": [...]}`); an empty object when there is none.
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<serde_json::Value, String>;

    /// The first address `name` resolves to where the cluster is (Helm's `getHostByName`
    /// with DNS lookups enabled).
    fn host_by_name(&self, name: &str) -> Result<String, String>;
}

/// The most steps (nodes walked, loop turns, function calls) one render may take: far
/// beyond any chart's (the largest in the corpus takes a few hundred thousand), and a
/// few seconds' work.
pub const MAX_STEPS: u64 = 200_000_000;

/// How often, in steps, the clock and the cancel flag are looked at.
const CHECK_EVERY: u64 = 4096;

/// A random number generator, a clock, a cluster to look objects up in, and how much work
/// the render may still do.
pub struct World {
    rng: RefCell<ChaCha20Rng>,
    clock: Option<jiff::Timestamp>,
    cluster: Option<Rc<dyn Lookup>>,
    dns: bool,
    steps: Cell<u64>,
    deadline: Option<(Instant, Duration)>,
    cancel: Option<Arc<AtomicBool>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("clock", &self.clock)
            .field("cluster", &self.cluster.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for World {
    fn default() -> Self {
        Self::from_entropy()
    }
}

impl World {
    /// Randomness from the operating system and the real clock, as Helm has.
    pub fn from_entropy() -> Self {
        Self {
            rng: RefCell::new(ChaCha20Rng::from_entropy()),
            clock: None,
            cluster: None,
            dns: false,
            steps: Cell::new(0),
            deadline: None,
            cancel: None,
        }
    }

    /// A repeatable world: randomness from `seed`, and the clock stopped at `now` when
    /// given.
    pub fn seeded(seed: u64, now: Option<jiff::Timestamp>) -> Self {
        Self {
            rng: RefCell::new(ChaCha20Rng::seed_from_u64(seed)),
            clock: now,
            cluster: None,
            dns: false,
            steps: Cell::new(0),
            deadline: None,
            cancel: None,
        }
    }

    /// The same world, whose render stops with an error once it has run `limit` (from now)
    /// or once `cancel` is set, when given.
    pub fn bounded(mut self, limit: Option<Duration>, cancel: Option<Arc<AtomicBool>>) -> Self {
        self.deadline = limit.map(|limit| (Instant::now() + limit, limit));
        self.cancel = cancel;
        self
    }

    /// Counts one step of the render: an error once it has taken [`MAX_STEPS`], run out of
    /// time, or been cancelled.
    pub fn step(&self) -> Result<(), String> {
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        if !steps.is_multiple_of(CHECK_EVERY) {
            return Ok(());
        }
        if steps >= MAX_STEPS {
            return Err(format!("rendering stopped after {MAX_STEPS} steps"));
        }
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err("rendering was cancelled".into());
        }
        match self.deadline {
            Some((at, limit)) if Instant::now() >= at => {
                Err(format!("rendering stopped after {limit:?}"))
            }
            _ => Ok(()),
        }
    }

    /// The same world with its clock stopped at `now`, when given.
    pub fn stopped_at(mut self, now: Option<jiff::Timestamp>) -> Self {
        if now.is_some() {
            self.clock = now;
        }
        self
    }

    /// The same world with DNS lookups (`getHostByName`) enabled or not (Helm's
    /// `--enable-dns`; off by default, as in Helm).
    pub fn resolving(mut self, dns: bool) -> Self {
        self.dns = dns;
        self
    }

    /// Helm's `getHostByName`: with DNS lookups off, or with no cluster to resolve from
    /// (a render that is not the member's), the empty string, as Helm gives it with DNS
    /// off; else the cluster's answer.
    pub fn host_by_name(&self, name: &str) -> Result<String, String> {
        match &self.cluster {
            Some(cluster) if self.dns => cluster.host_by_name(name),
            _ => Ok(String::new()),
        }
    }

    /// The same world with `lookup` answered by `cluster`, when given.
    pub fn looking_in(mut self, cluster: Option<Rc<dyn Lookup>>) -> Self {
        self.cluster = cluster;
        self
    }

    /// Helm's `lookup` in the world's cluster: an empty object when it has none.
    pub fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<serde_json::Value, String> {
        match &self.cluster {
            Some(cluster) => cluster.lookup(api_version, kind, namespace, name),
            None => Ok(serde_json::json!({})),
        }
    }

    /// The current time.
    pub fn now(&self) -> jiff::Timestamp {
        self.clock.unwrap_or_else(jiff::Timestamp::now)
    }

    /// Runs `f` with the random number generator (a cryptographic one, as key generation
    /// needs).
    pub fn with_rng<R>(&self, f: impl FnOnce(&mut ChaCha20Rng) -> R) -> R {
        f(&mut self.rng.borrow_mut())
    }

    /// `count` random bytes.
    pub fn bytes(&self, count: usize) -> Vec<u8> {
        let mut bytes = vec![0; count];
        self.with_rng(|rng| rng.fill_bytes(&mut bytes));
        bytes
    }

    /// A uniformly random number below `bound` (0 when `bound` is 0).
    pub fn below(&self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        // Rejection sampling: draws in the incomplete last block would favour low numbers.
        let zone = u64::MAX - (u64::MAX % bound);
        self.with_rng(|rng| loop {
            let draw = rng.next_u64();
            if draw < zone {
                return draw % bound;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_world_repeats_itself() {
        let (a, b) = (World::seeded(7, None), World::seeded(7, None));
        assert_eq!(a.bytes(16), b.bytes(16));
        assert_ne!(
            World::seeded(8, None).bytes(16),
            World::seeded(7, None).bytes(16)
        );
        let draws: Vec<u64> = (0..1000).map(|_| a.below(10)).collect();
        assert!(draws.iter().all(|d| *d < 10));
        assert!((0..10).all(|n| draws.contains(&n)), "every digit drawn");
        assert_eq!(a.below(0), 0);
    }

    #[test]
    fn a_render_stops_when_cancelled_or_out_of_time() {
        let run = |world: &World| (0..10 * CHECK_EVERY).try_for_each(|_| world.step());
        assert_eq!(run(&World::seeded(1, None)), Ok(()));
        let cancel = Arc::new(AtomicBool::new(true));
        let cancelled = World::seeded(1, None).bounded(None, Some(cancel));
        assert_eq!(run(&cancelled), Err("rendering was cancelled".into()));
        let late = World::seeded(1, None).bounded(Some(Duration::ZERO), None);
        assert_eq!(run(&late), Err("rendering stopped after 0ns".into()));
    }

    #[test]
    fn a_stopped_clock_stays_put() {
        let now: jiff::Timestamp = "2024-05-06T07:08:09Z".parse().expect("a timestamp");
        let world = World::seeded(1, Some(now));
        assert_eq!(world.now(), now);
        assert!(World::from_entropy().now() > now);
    }
}
