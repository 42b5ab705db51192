//! Map keys of two strings, `(String, String)`, found by two borrowed strings without
//! making the owned pair: a look-up that allocates nothing. The standard maps look a key up
//! by any type it borrows as, and a pair of `String`s borrows as the trait object
//! [`Pair`], which a pair of `&str`s is too (`map.get(&(a, b) as &dyn Pair)`); both hash
//! and order as the tuple does.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

/// Two strings, as a map key.
pub trait Pair {
    /// The first string.
    fn first(&self) -> &str;
    /// The second string.
    fn second(&self) -> &str;
}

impl Pair for (String, String) {
    fn first(&self) -> &str {
        &self.0
    }

    fn second(&self) -> &str {
        &self.1
    }
}

impl Pair for (&str, &str) {
    fn first(&self) -> &str {
        self.0
    }

    fn second(&self) -> &str {
        self.1
    }
}

impl<'a> Borrow<dyn Pair + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn Pair + 'a) {
        self
    }
}

/// As `(String, String)` hashes: each string in turn.
impl Hash for dyn Pair + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.first().hash(state);
        self.second().hash(state);
    }
}

impl PartialEq for dyn Pair + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.first() == other.first() && self.second() == other.second()
    }
}

impl Eq for dyn Pair + '_ {}

impl PartialOrd for dyn Pair + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// As `(String, String)` orders: by the first string, then the second.
impl Ord for dyn Pair + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.first(), self.second()).cmp(&(other.first(), other.second()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};

    #[test]
    fn owned_pairs_are_found_by_borrowed_ones_in_hash_and_ordered_maps() {
        let pairs = [("a", "b"), ("a", "ba"), ("ab", ""), ("", "ab"), ("x", "y")];
        let owned = |(a, b): (&str, &str)| (a.to_string(), b.to_string());
        let hashed: HashMap<(String, String), usize> = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| (owned(*p), i))
            .collect();
        let ordered: BTreeMap<(String, String), usize> = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| (owned(*p), i))
            .collect();
        for (i, pair) in pairs.iter().enumerate() {
            assert_eq!(hashed.get(pair as &dyn Pair), Some(&i), "{pair:?}");
            assert_eq!(ordered.get(pair as &dyn Pair), Some(&i), "{pair:?}");
        }
        assert_eq!(hashed.get(&("a", "c") as &dyn Pair), None);
        assert_eq!(ordered.get(&("a", "c") as &dyn Pair), None);
    }
}
