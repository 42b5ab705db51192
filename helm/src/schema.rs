//! `values.schema.json`: values checked against a JSON Schema, with the messages Helm 4
//! prints (`- at '/replicas': got string, want integer`). The keywords charts use are
//! checked: type, required, properties, additionalProperties, items, enum, const,
//! minimum/maximum, minLength/maxLength, pattern, minItems/maxItems.

use serde_json::Value;

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n)
            if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) =>
        {
            "integer"
        }
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(value: &Value, wanted: &str) -> bool {
    let actual = type_name(value);
    actual == wanted || (wanted == "number" && actual == "integer")
}

fn quoted(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("'{i}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn check(value: &Value, schema: &Value, at: &str, out: &mut Vec<(String, String)>) {
    let mut fail = |message: String| out.push((at.to_string(), message));
    if let Some(wanted) = schema.get("type") {
        let types: Vec<&str> = match wanted {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| type_matches(value, t)) {
            fail(format!(
                "got {}, want {}",
                type_name(value),
                types.join(" or ")
            ));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let listing: Vec<String> = allowed
                .iter()
                .map(|a| a.to_string().replace('"', "'"))
                .collect();
            fail(format!("value must be one of {}", listing.join(", ")));
        }
    }
    if let Some(constant) = schema.get("const") {
        if constant != value {
            fail(format!(
                "value must be {}",
                constant.to_string().replace('"', "'")
            ));
        }
    }
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if let Some(min) = bound("minimum").filter(|m| n < *m) {
            fail(format!("must be >= {min} but found {n}"));
        }
        if let Some(max) = bound("maximum").filter(|m| n > *m) {
            fail(format!("must be <= {max} but found {n}"));
        }
    }
    if let Some(text) = value.as_str() {
        let length = text.chars().count() as f64;
        if let Some(min) = bound("minLength").filter(|m| length < *m) {
            fail(format!("length must be >= {min}, but got {length}"));
        }
        if let Some(max) = bound("maxLength").filter(|m| length > *m) {
            fail(format!("length must be <= {max}, but got {length}"));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            let translated = super::goregex::translate(pattern);
            if translated.is_ok_and(|p| regex::Regex::new(&p).is_ok_and(|re| !re.is_match(text))) {
                fail(format!("'{text}' does not match pattern '{pattern}'"));
            }
        }
    }
    match value {
        Value::Object(map) => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .filter(|k| !map.contains_key(*k))
                        .collect()
                })
                .unwrap_or_default();
            match required.as_slice() {
                [] => {}
                [one] => fail(format!("missing property '{one}'")),
                many => fail(format!("missing properties {}", quoted(many))),
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let mut extra = Vec::new();
            for (key, child) in map {
                let path = format!("{at}/{key}");
                match properties.and_then(|p| p.get(key)) {
                    Some(child_schema) => check(child, child_schema, &path, out),
                    None => match additional {
                        Some(Value::Bool(false)) => extra.push(key.as_str()),
                        Some(child_schema @ Value::Object(_)) => {
                            check(child, child_schema, &path, out)
                        }
                        _ => {}
                    },
                }
            }
            if !extra.is_empty() {
                out.push((
                    at.to_string(),
                    format!("additional properties {} not allowed", quoted(&extra)),
                ));
            }
        }
        Value::Array(items) => {
            let count = items.len() as f64;
            if let Some(min) = bound("minItems").filter(|m| count < *m) {
                out.push((at.to_string(), format!("minItems: got {count}, want {min}")));
            }
            if let Some(max) = bound("maxItems").filter(|m| count > *m) {
                out.push((at.to_string(), format!("maxItems: got {count}, want {max}")));
            }
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    check(item, item_schema, &format!("{at}/{i}"), out);
                }
            }
        }
        _ => {}
    }
}

/// The schema failures of a chart's values, as Helm lists them (`- at '/path': message`),
/// in path order.
pub(crate) fn violations(values: &Value, schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(values, schema, "", &mut found);
    found.sort();
    found
        .into_iter()
        .map(|(at, message)| format!("- at '{at}': {message}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_match_helm_4() {
        // The first two are what Helm 4 printed for the same schema and values.
        let schema = json!({"type": "object", "required": ["image"], "properties": {
            "replicas": {"type": "integer"}, "image": {"type": "string"},
            "mode": {"enum": ["fast", "safe"]}, "ports": {"type": "array", "items": {"type": "integer"}}},
            "additionalProperties": false});
        let values = json!({"replicas": "two", "mode": "slow", "ports": [80, "x"], "typo": 1});
        assert_eq!(
            violations(&values, &schema),
            [
                "- at '': additional properties 'typo' not allowed",
                "- at '': missing property 'image'",
                "- at '/mode': value must be one of 'fast', 'safe'",
                "- at '/ports/1': got string, want integer",
                "- at '/replicas': got string, want integer",
            ]
        );
        assert!(violations(&json!({"image": "x", "replicas": 3.0}), &schema).is_empty());
    }
}
