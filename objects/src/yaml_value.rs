//! YAML read into JSON values with a bound on what its aliases expand to. An alias replays
//! its anchor, so a small text can stand for gigabytes (a 512 KiB anchor aliased 2,000
//! times is a 600 KiB text and a 1 GiB value); the deserializer's own guard counts alias
//! jumps, not what they copy. Here every scalar and every node is charged against a budget
//! before it is copied, and the read stops with an error once the budget is spent.
//!
//! ```
//! let bomb = format!("a: &a {}\nb: [{}]\n", "x".repeat(1 << 20), "*a, ".repeat(64));
//! let refused = fleet_objects::yaml_value::read_document(&bomb).unwrap_err();
//! assert!(refused.to_string().contains("aliases expand"));
//! ```

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// What a text may expand to beyond its own length: generous for anchors used as YAML
/// intends (a block of labels repeated a few times), far below what hurts a process.
pub const EXPANSION_ALLOWANCE: usize = 8 * 1024 * 1024;

/// The budget a text of `len` bytes is read with: its length plus the allowance. Each
/// scalar costs its length and each node one more, so no text is refused for its size alone.
pub fn budget_for(len: usize) -> usize {
    len.saturating_add(EXPANSION_ALLOWANCE)
}

/// Reads the one document of `text` (an empty text is `null`).
pub fn read_document(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    let budget = Cell::new(budget_for(text.len()));
    Budgeted(&budget).deserialize(serde_yaml_ng::Deserializer::from_str(text))
}

/// Reads every document of a YAML stream, one budget for them all; empty documents are
/// `null`.
pub fn read_documents(text: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    let budget = Cell::new(budget_for(text.len()));
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|document| Budgeted(&budget).deserialize(document))
        .collect()
}

/// Reads one value, paying for it out of the budget.
#[derive(Clone, Copy)]
struct Budgeted<'b>(&'b Cell<usize>);

impl Budgeted<'_> {
    /// Takes `cost` from the budget, or fails once it is spent.
    fn charge<E: serde::de::Error>(self, cost: usize) -> Result<(), E> {
        match self.0.get().checked_sub(cost.saturating_add(1)) {
            Some(left) => {
                self.0.set(left);
                Ok(())
            }
            None => Err(E::custom(format!(
                "the YAML's aliases expand it beyond {} bytes",
                EXPANSION_ALLOWANCE
            ))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budgeted<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budgeted<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Value, E> {
        self.charge(value.len())?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Value, E> {
        self.charge(value.len())?;
        Ok(Value::String(value))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut values = Vec::new();
        while let Some(value) = items.next_element_seed(self)? {
            values.push(value);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut map = Map::new();
        while let Some(key) = members.next_key_seed(self)? {
            let key = match key {
                Value::String(key) => key,
                // Keys that are not strings are written as JSON text (YAML allows them;
                // Kubernetes objects never have them).
                other => other.to_string(),
            };
            let value = members.next_value_seed(self)?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_read_as_serde_yaml_reads_them() {
        let text = "a: 1\nb: [x, 2.5, true, null]\nc: {d: e}\n---\n---\nf: &g {h: i}\nj: *g\n";
        let ours = read_documents(text).expect("reads");
        let theirs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(text)
            .map(|d| serde::Deserialize::deserialize(d).expect("reads"))
            .collect();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn an_alias_bomb_is_refused_before_it_is_built() {
        let anchor = "x".repeat(512 * 1024);
        let bomb = format!(
            "kind: ConfigMap\na: &a {anchor}\nb: [{}]\n",
            "*a, ".repeat(2000)
        );
        let started = std::time::Instant::now();
        let refused = read_document(&bomb).expect_err("expands to 1 GiB");
        assert!(refused.to_string().contains("aliases expand"), "{refused}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn nested_aliases_are_refused_too() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..12 {
            let previous = level - 1;
            let refs = vec![format!("*a{previous}"); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        // The deserializer's own guard on alias jumps or the budget, whichever comes first.
        read_documents(&text).expect_err("10^12 nodes");
    }

    #[test]
    fn anchors_used_modestly_are_read() {
        let text = "labels: &l {app: web, tier: front}\nselector: *l\ntemplate: *l\n";
        let value = read_document(text).expect("reads");
        assert_eq!(value["template"]["tier"], "front");
    }
}
