//! Objects as they go out. The hub keeps each object's `metadata.managedFields` as the
//! JSON text of the list (a string), not as a tree of maps: those trees were about half of
//! what the hub's objects held, and 100,000 objects carry them. [`Wire`] writes an object,
//! a list, a table or a watch event with that text as the list it holds, so clients see
//! what Kubernetes sends.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A response body or watch event, written with each `fieldsV1` as a JSON object.
pub struct Wire<'a>(pub &'a Value);

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.0 else {
            return self.0.serialize(serializer);
        };
        let mut out = serializer.serialize_map(Some(map.len()))?;
        for (key, value) in map {
            match (key.as_str(), value) {
                ("metadata", Value::Object(metadata)) => {
                    out.serialize_entry(key, &Metadata(metadata))?
                }
                // A list's items, a table's rows, and the object of a row or an event.
                ("items" | "rows", Value::Array(items)) => {
                    out.serialize_entry(key, &Each(items))?
                }
                ("object", _) => out.serialize_entry(key, &Wire(value))?,
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
    }
}

struct Each<'a>(&'a [Value]);

impl Serialize for Each<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            out.serialize_element(&Wire(item))?;
        }
        out.end()
    }
}

struct Metadata<'a>(&'a Map<String, Value>);

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            match (key.as_str(), value) {
                ("managedFields", Value::String(text)) => match list_text(text) {
                    Some(list) => out.serialize_entry(key, list)?,
                    None => out.serialize_entry(key, value)?,
                },
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
    }
}

/// The JSON list `text` holds, unparsed, if it holds one.
fn list_text(text: &str) -> Option<&RawValue> {
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    raw.get().starts_with('[').then_some(raw)
}

/// `value` as JSON bytes, as it goes out.
pub fn to_vec(value: &Value) -> Vec<u8> {
    serde_json::to_vec(&Wire(value)).unwrap_or_default()
}

/// A watch event of `kind` (`ADDED`...) for `object`, as JSON bytes (without copying the
/// object into an event first).
pub fn event(kind: &str, object: &Value) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Event<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        object: Wire<'a>,
    }
    serde_json::to_vec(&Event {
        kind,
        object: Wire(object),
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(name: &str) -> Value {
        json!({
            "kind": "ConfigMap",
            "metadata": {"name": name, "managedFields":
                "[{\"manager\":\"m\",\"fieldsV1\":{\"f:data\":{\"f:a\":{}}}}]"},
            "data": {"managedFields": "[\"not expanded\"]"},
        })
    }

    fn sent(name: &str) -> Value {
        let mut object = stored(name);
        object["metadata"]["managedFields"] =
            json!([{"manager": "m", "fieldsV1": {"f:data": {"f:a": {}}}}]);
        object
    }

    fn out(value: &Value) -> Value {
        serde_json::from_slice(&to_vec(value)).expect("JSON")
    }

    #[test]
    fn managed_fields_go_out_as_a_list_in_objects_lists_tables_and_events() {
        assert_eq!(out(&stored("a")), sent("a"));
        let list = json!({"kind": "ConfigMapList", "items": [stored("a"), stored("b")]});
        assert_eq!(
            out(&list),
            json!({"kind": "ConfigMapList", "items": [sent("a"), sent("b")]})
        );
        let table = json!({"kind": "Table", "rows": [{"cells": [], "object": stored("a")}]});
        assert_eq!(
            out(&table),
            json!({"kind": "Table", "rows": [{"cells": [], "object": sent("a")}]})
        );
        let event = json!({"type": "ADDED", "object": stored("a")});
        assert_eq!(out(&event), json!({"type": "ADDED", "object": sent("a")}));
    }

    #[test]
    fn a_string_that_holds_no_list_stays_a_string() {
        let mut object = stored("a");
        object["metadata"]["managedFields"] = json!("not json");
        assert_eq!(out(&object), object);
        object["metadata"]["managedFields"] = json!("{}");
        assert_eq!(out(&object), object);
    }
}
