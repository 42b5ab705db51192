//! JSON text read into a `serde_json::Value`, the same value `serde_json::from_slice`
//! makes, with less work: JSON does not say how many members an object has, so serde_json
//! grows each object's map as members come (two or three reallocations of its entries and
//! of its hash table for a typical Kubernetes object). Here each object's members are first
//! gathered in a buffer the thread keeps, then moved into a map made at their number.
//! Every object the hub changes is read this way, and so is every request body.

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
pub fn from_slice(text: &[u8]) -> serde_json::Result<Value> {
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
