//! The parsed trees of the objects written last. A write parses the object it changes,
//! and the write that changes an object next often comes a few hundred writes later: an
//! agent reports the status of a BundleDeployment that the controller has just written.
//! Handing that write the tree its predecessor wrote saves parsing the text again (a
//! twentieth of a fleet's rollout) and dropping the tree meanwhile.
//!
//! A tree is found by the stored version it was written as, which the entry holds: so a
//! version's address cannot be taken by another while its tree waits here, and a tree is
//! never given for a version it was not written as. A tree is taken, not copied: the
//! write that takes it replaces that version anyway.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::stored::Stored;

/// How many trees are kept at most.
const ENTRIES: usize = 1_024;
/// The most text the kept trees' versions may take together: the trees take several
/// times that.
const TEXT_BYTES: usize = 4 << 20;

/// A tree kept, with the version it is the parse of.
struct Entry {
    stored: Arc<Stored>,
    value: Value,
    /// When it was kept: the order of `Recent::order`.
    serial: u64,
}

/// The parsed trees of recently written versions, oldest forgotten first.
#[derive(Default)]
pub(crate) struct Recent {
    entries: HashMap<usize, Entry>,
    /// Addresses in the order kept, with their serial: an address taken and kept again
    /// is in here twice, and only the later one still names its entry.
    order: VecDeque<(usize, u64)>,
    serial: u64,
    text_bytes: usize,
}

/// Where a version lives: what finds its tree.
fn address(stored: &Arc<Stored>) -> usize {
    Arc::as_ptr(stored) as usize
}

impl Recent {
    /// Keeps `value`, which `stored` is the text of. Returns the trees it forgot to make
    /// room, for the caller to drop outside its lock.
    pub(crate) fn keep(&mut self, stored: Arc<Stored>, value: Value) -> Vec<Value> {
        let at = address(&stored);
        self.serial += 1;
        self.text_bytes += stored.len();
        let entry = Entry {
            stored,
            value,
            serial: self.serial,
        };
        let mut forgotten = Vec::new();
        if let Some(old) = self.entries.insert(at, entry) {
            self.text_bytes -= old.stored.len();
            forgotten.push(old.value);
        }
        self.order.push_back((at, self.serial));
        while self.entries.len() > ENTRIES || self.text_bytes > TEXT_BYTES {
            forgotten.extend(self.forget_oldest());
        }
        forgotten
    }

    /// The tree of `stored`, taken out, if it was kept.
    pub(crate) fn take(&mut self, stored: &Arc<Stored>) -> Option<Value> {
        let entry = self.entries.remove(&address(stored))?;
        self.text_bytes -= entry.stored.len();
        Arc::ptr_eq(&entry.stored, stored).then_some(entry.value)
    }

    /// Forgets the oldest tree kept, if its place in line is still its own; returns it.
    fn forget_oldest(&mut self) -> Option<Value> {
        let (at, serial) = self.order.pop_front()?;
        if self.entries.get(&at).is_none_or(|e| e.serial != serial) {
            return None;
        }
        let entry = self.entries.remove(&at)?;
        self.text_bytes -= entry.stored.len();
        Some(entry.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn version(n: usize) -> (Arc<Stored>, Value) {
        let value = json!({"metadata": {"name": format!("o{n}")}, "data": {"n": n}});
        (Arc::new(Stored::new(&value)), value)
    }

    #[test]
    fn a_kept_tree_is_given_once_and_only_for_its_own_version() {
        let mut recent = Recent::default();
        let (stored, value) = version(1);
        let (other, _) = version(1);
        let _ = recent.keep(stored.clone(), value.clone());
        assert_eq!(
            recent.take(&other),
            None,
            "an equal text is another version"
        );
        assert_eq!(recent.take(&stored), Some(value));
        assert_eq!(recent.take(&stored), None, "taken, not copied");
    }

    #[test]
    fn the_oldest_trees_are_forgotten_past_the_count() {
        let mut recent = Recent::default();
        let versions: Vec<_> = (0..ENTRIES + 2).map(version).collect();
        let forgotten: Vec<Value> = (versions.iter())
            .flat_map(|(stored, value)| recent.keep(stored.clone(), value.clone()))
            .collect();
        assert_eq!(forgotten, [versions[0].1.clone(), versions[1].1.clone()]);
        assert_eq!(recent.entries.len(), ENTRIES);
        assert_eq!(recent.take(&versions[1].0), None);
        assert_eq!(recent.take(&versions[2].0), Some(versions[2].1.clone()));
        let (last, value) = &versions[ENTRIES + 1];
        assert_eq!(recent.take(last), Some(value.clone()));
    }

    #[test]
    fn large_versions_are_forgotten_past_the_bytes() {
        let mut recent = Recent::default();
        let large = |n: usize| {
            let value = json!({"metadata": {"name": "big"}, "data": {"x": "x".repeat(n)}});
            (Arc::new(Stored::new(&value)), value)
        };
        let first = large(TEXT_BYTES / 2);
        let second = large(TEXT_BYTES / 2);
        let _ = recent.keep(first.0.clone(), first.1);
        let _ = recent.keep(second.0.clone(), second.1.clone());
        assert_eq!(
            recent.take(&first.0),
            None,
            "the two together pass the bound"
        );
        assert_eq!(recent.take(&second.0), Some(second.1));
        assert_eq!(recent.text_bytes, 0);
    }

    #[test]
    fn a_tree_taken_and_kept_again_outlives_its_first_place_in_line() {
        let mut recent = Recent::default();
        let (stored, value) = version(0);
        let (next, next_value) = version(1);
        let _ = recent.keep(stored.clone(), value.clone());
        let _ = recent.keep(next.clone(), next_value);
        let taken = recent.take(&stored).expect("kept");
        let _ = recent.keep(stored.clone(), taken);
        for n in 2..=ENTRIES {
            let (other, value) = version(n);
            let _ = recent.keep(other, value);
        }
        // One past the count: the first place in line, stale, forgets nothing; the next
        // oldest goes.
        assert_eq!(recent.take(&next), None);
        assert_eq!(recent.take(&stored), Some(value));
    }
}
