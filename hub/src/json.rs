//! JSON text read into a `serde_json::Value`, the same value `serde_json::from_slice`
//! makes, with less work: JSON does not say how many members an object has, so serde_json
//! grows each object's map as members come (two or three reallocations of its entries and
//! of its hash table for a typical Kubernetes object). Here each object's members are first
//! gathered in a buffer the thread keeps, then moved into a map made at their number.
//! Every object the hub changes is read this way, and so is every request body.
//!
//! Values are compared here too ([`equal`]), members of objects in order first.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

thread_local! {
    /// Buffers for the members of the objects being read, one per level of nesting.
    static MEMBERS: RefCell<Vec<Vec<(String, Value)>>> = const { RefCell::new(Vec::new()) };
}

/// The most members a buffer keeps between objects.
const MEMBERS_KEPT: usize = 1024;

/// Reads `text` as one JSON value, as `serde_json::from_slice` does (the same errors, the
/// same nesting limit, trailing whitespace allowed).
pub(crate) fn from_slice(text: &[u8]) -> serde_json::Result<Value> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let value = ValueSeed.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Reads one value.
struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

/// Makes each kind of JSON value as serde_json's own `Value` visitor makes it.
struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        ValueSeed.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut values = Vec::with_capacity(items.size_hint().unwrap_or(0));
        while let Some(value) = items.next_element_seed(ValueSeed)? {
            values.push(value);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let mut gathered = MEMBERS.with_borrow_mut(Vec::pop).unwrap_or_default();
        let read = (|| {
            while let Some(key) = members.next_key::<String>()? {
                let value = members.next_value_seed(ValueSeed)?;
                gathered.push((key, value));
            }
            Ok(())
        })();
        // A key given twice keeps its last value, in the place of its first, as a map
        // filled member by member does.
        let mut map = Map::with_capacity(gathered.len());
        map.extend(gathered.drain(..));
        if gathered.capacity() <= MEMBERS_KEPT {
            MEMBERS.with_borrow_mut(|kept| kept.push(gathered));
        }
        read.map(|()| Value::Object(map))
    }
}

/// Whether two values are equal, as `==` says (the order of an object's members does not
/// count), with less work: the members of two objects are compared in order, and looked up
/// by name only once the two orders part. `==` looks up every member of one object in the
/// other, hashing its name, though the two objects a write compares (before and after)
/// almost always hold their members in the same order.
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => maps_equal(a, b),
        (Value::Array(a), Value::Array(b)) => lists_equal(a, b),
        _ => a == b,
    }
}

/// [`equal`] for two lists.
pub(crate) fn lists_equal(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
}

/// [`equal`] for two values that may be missing.
pub(crate) fn options_equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => equal(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// [`equal`] for two maps.
pub(crate) fn maps_equal(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    if a.len() != b.len() {
        return false;
    }
    for ((a_key, a_value), (b_key, b_value)) in a.iter().zip(b) {
        if a_key != b_key {
            return a
                .iter()
                .all(|(key, x)| b.get(key).is_some_and(|y| equal(x, y)));
        }
        if !equal(a_value, b_value) {
            return false;
        }
    }
    true
}

/// Walks `map`'s members in order, handing each the member of `other` with the same name:
/// found where `other`'s own walk has reached when the two orders agree, looked up by name
/// otherwise. `skip` names members neither walk sees.
pub(crate) fn zip_members<'a>(
    map: &'a Map<String, Value>,
    other: &'a Map<String, Value>,
    skip: impl Fn(&str) -> bool + Copy + 'a,
) -> impl Iterator<Item = (&'a String, &'a Value, Option<&'a Value>)> + 'a {
    let mut others = other.iter().filter(move |(key, _)| !skip(key));
    map.iter()
        .filter(move |(key, _)| !skip(key))
        .map(move |(key, value)| {
            let in_step = others.next().filter(|(other_key, _)| *other_key == key);
            let counterpart = match in_step {
                Some((_, found)) => Some(found),
                None => other.get(key),
            };
            (key, value, counterpart)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_as_serde_json_reads_them() {
        let texts = [
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"}},
               "data":{"k":"v\"\n\u00e9"},"list":[1,-2,3.5,1e300,18446744073709551615,
               -9223372036854775808,true,false,null,[],{}],"nested":{"a":{"b":{"c":[{"d":0}]}}}}"#,
            r#"{"b":1,"a":2,"b":3}"#,
            r#"  [1, {"z": 0, "a": 1}]  "#,
            r#""text""#,
            "12",
            "null",
        ];
        for text in texts {
            let ours = from_slice(text.as_bytes()).expect("reads");
            let theirs: Value = serde_json::from_slice(text.as_bytes()).expect("reads");
            assert_eq!(ours, theirs, "{text}");
            // The same order of members, not just the same members.
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
    }

    #[test]
    fn values_are_equal_when_serde_json_says_so_whatever_the_order_of_members() {
        use serde_json::json;
        let pairs = [
            (
                json!({"a": 1, "b": {"c": [1, {"d": 2}]}}),
                json!({"a": 1, "b": {"c": [1, {"d": 2}]}}),
            ),
            (
                json!({"a": 1, "b": 2, "c": 3}),
                json!({"b": 2, "a": 1, "c": 3}),
            ),
            (json!({"a": 1, "b": 2}), json!({"a": 1, "b": 3})),
            (json!({"a": 1, "b": 2}), json!({"a": 1, "c": 2})),
            (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 2})),
            (json!({"a": 1}), json!({"a": 1, "b": null})),
            (json!([1, 2]), json!([2, 1])),
            (json!([{"x": 1, "y": 2}]), json!([{"y": 2, "x": 1}])),
            (json!(1), json!(1.0)),
            (json!("a"), json!("a")),
            (json!(null), json!({})),
        ];
        for (a, b) in &pairs {
            assert_eq!(equal(a, b), a == b, "{a} {b}");
            assert_eq!(equal(b, a), b == a, "{b} {a}");
        }
    }

    /// A small random JSON value: few names and leaves, so that pairs are often equal.
    fn random_value(state: &mut u64, depth: u32) -> Value {
        let mut next = |range: u64| {
            *state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (*state >> 33) % range
        };
        let choice = if depth > 3 { next(3) } else { next(6) };
        match choice {
            0 => Value::from(next(3)),
            1 => Value::from(["a", "b", "c"][usize::try_from(next(3)).unwrap_or(0)]),
            2 => Value::Null,
            3 | 4 => {
                let names: Vec<&str> = (0..next(4))
                    .map(|_| ["x", "y", "z", "w"][usize::try_from(next(4)).unwrap_or(0)])
                    .collect();
                let mut map = Map::new();
                for name in names {
                    map.insert(name.to_string(), random_value(state, depth + 1));
                }
                Value::Object(map)
            }
            _ => Value::Array(
                (0..next(3))
                    .map(|_| random_value(state, depth + 1))
                    .collect(),
            ),
        }
    }

    #[test]
    fn equal_agrees_with_serde_json_on_random_values_in_any_order() {
        let mut state = 7;
        for round in 0..20_000 {
            let a = random_value(&mut state, 0);
            let mut b = if round % 3 == 0 {
                a.clone()
            } else {
                random_value(&mut state, 0)
            };
            if let (Value::Object(map), true) = (&mut b, round % 2 == 0) {
                // The same members, the other way round.
                let reversed: Vec<(String, Value)> =
                    std::mem::take(map).into_iter().rev().collect();
                map.extend(reversed);
            }
            assert_eq!(equal(&a, &b), a == b, "{a} {b}");
            if let (Value::Object(x), Value::Object(y)) = (&a, &b) {
                for (key, _, counterpart) in zip_members(x, y, |key| key == "z") {
                    assert_eq!(counterpart, y.get(key));
                    assert_ne!(key, "z");
                }
            }
        }
    }

    #[test]
    fn members_are_paired_by_name_in_or_out_of_step() {
        use serde_json::json;
        let new = json!({"kind": "K", "a": 1, "b": 2, "c": 3, "d": 4});
        let old = json!({"kind": "K", "a": 1, "c": 30, "b": 20, "e": 5});
        let (Value::Object(new), Value::Object(old)) = (new, old) else {
            unreachable!("objects")
        };
        let paired: Vec<(String, Option<Value>)> = zip_members(&new, &old, |key| key == "kind")
            .map(|(key, _, counterpart)| (key.clone(), counterpart.cloned()))
            .collect();
        let expected: Vec<(String, Option<Value>)> = new
            .keys()
            .filter(|key| *key != "kind")
            .map(|key| (key.clone(), old.get(key).cloned()))
            .collect();
        assert_eq!(paired, expected);
    }

    #[test]
    fn bad_text_fails_as_serde_json_fails() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        let texts = [
            "{",
            r#"{"a":}"#,
            r#"{"a":1,}"#,
            "[1,]",
            "1 2",
            "",
            "\"\\x\"",
            "1e400",
            &deep,
        ];
        for text in texts {
            let ours = from_slice(text.as_bytes()).expect_err("fails");
            let theirs = serde_json::from_slice::<Value>(text.as_bytes()).expect_err("fails");
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
        // The buffers of objects left unfinished are not taken for the next one.
        let after = from_slice(br#"{"a":{"b":1}}"#).expect("reads");
        assert_eq!(after, serde_json::json!({"a": {"b": 1}}));
    }
}
