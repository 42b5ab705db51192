//! Delivery ids already received, so that a captured, validly signed request sent again is
//! refused. The oldest ids are forgotten first once the set is full.

use std::collections::{HashSet, VecDeque};

/// A bounded set of delivery ids.
pub(super) struct Seen {
    capacity: usize,
    order: VecDeque<String>,
    ids: HashSet<String>,
}

impl Seen {
    /// A set remembering the last `capacity` ids.
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            order: VecDeque::new(),
            ids: HashSet::new(),
        }
    }

    /// Records `id`; false when it was already there.
    pub(super) fn first_time(&mut self, id: &str) -> bool {
        if self.ids.contains(id) {
            return false;
        }
        if self.order.len() == self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
        self.order.push_back(id.to_string());
        self.ids.insert(id.to_string());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Seen;

    #[test]
    fn refuses_a_repeat_and_forgets_the_oldest() {
        let mut seen = Seen::new(2);
        assert!(seen.first_time("a"));
        assert!(!seen.first_time("a"));
        assert!(seen.first_time("b"));
        assert!(seen.first_time("c"));
        assert!(seen.first_time("a"), "a was forgotten");
    }
}
