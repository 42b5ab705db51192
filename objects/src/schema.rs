//! OpenAPI v3 schemas, the subset Kubernetes uses: pruning of unknown fields and defaulting
//! (structural schemas of custom resources), and validation of the common keywords (type,
//! required, enum, pattern, bounds). The hub checks custom resources with it.

use serde_json::Value;

/// One way a value breaks its schema, in Kubernetes' terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// The cause type, e.g. `FieldValueInvalid` or `FieldValueRequired`.
    pub kind: String,
    /// The human-readable message.
    pub message: String,
    /// The field path, e.g. `spec.replicas`.
    pub field: String,
}

/// What checking an object against its schema found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Validation failures.
    pub causes: Vec<Cause>,
    /// Paths of the unknown fields that were pruned, e.g. `spec.typo`.
    pub pruned: Vec<String>,
}

/// Prunes, defaults and validates a custom resource against its `openAPIV3Schema`, in
/// place. `apiVersion`, `kind` and `metadata` are never pruned.
pub fn prepare(object: &mut Value, schema: &Value) -> Checked {
    let mut checked = Checked::default();
    visit(object, schema, "", &mut checked);
    checked
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn preserves_unknown(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn invalid(path: &str, value: &Value, why: String) -> Cause {
    Cause {
        kind: "FieldValueInvalid".into(),
        message: format!("Invalid value: {}: {why}", short(value)),
        field: path.into(),
    }
}

fn short(value: &Value) -> String {
    match value {
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(value: &Value, schema: &Value) -> bool {
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return matches!(type_name(value), "integer" | "string");
    }
    if value.is_null() && schema.get("nullable").and_then(Value::as_bool) == Some(true) {
        return true;
    }
    match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("number") => value.is_number(),
        Some(wanted) => type_name(value) == wanted,
    }
}

fn visit(value: &mut Value, schema: &Value, path: &str, checked: &mut Checked) {
    let causes = &mut checked.causes;
    if !type_ok(value, schema) {
        let wanted = schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("int-or-string");
        // Kubernetes shows the type it found as the invalid value.
        let actual = type_name(value);
        causes.push(invalid(
            path,
            &Value::String(actual.into()),
            format!("{path} in body must be of type {wanted}: \"{actual}\""),
        ));
        return;
    }
    scalar_rules(value, schema, path, causes);
    match value {
        Value::Object(map) => {
            let root = path.is_empty();
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            if properties.is_some() && additional.is_none() && !preserves_unknown(schema) {
                map.retain(|key, _| {
                    let known = properties.is_some_and(|p| p.contains_key(key))
                        || root && matches!(key.as_str(), "apiVersion" | "kind" | "metadata");
                    if !known {
                        checked.pruned.push(child_path(path, key));
                    }
                    known
                });
            }
            if let Some(properties) = properties {
                for (key, property) in properties {
                    if let Some(default) = property.get("default") {
                        map.entry(key.clone()).or_insert_with(|| default.clone());
                    }
                }
            }
            for (key, child) in map.iter_mut() {
                if root && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_schema = properties.and_then(|p| p.get(key)).or(additional);
                if let Some(child_schema) = child_schema {
                    visit(child, child_schema, &child_path(path, key), checked);
                }
            }
            required(map, schema, path, &mut checked.causes);
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    visit(item, item_schema, &format!("{path}[{i}]"), checked);
                }
            }
        }
        _ => {}
    }
}

fn required(
    map: &serde_json::Map<String, Value>,
    schema: &Value,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let names = schema.get("required").and_then(Value::as_array);
    for name in names.into_iter().flatten().filter_map(Value::as_str) {
        if !map.contains_key(name) {
            let field = child_path(path, name);
            causes.push(Cause {
                kind: "FieldValueRequired".into(),
                message: "Required value".into(),
                field,
            });
        }
    }
}

fn scalar_rules(value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let listing: Vec<String> = allowed.iter().map(Value::to_string).collect();
            causes.push(Cause {
                kind: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {value}: supported values: {}",
                    listing.join(", ")
                ),
                field: path.into(),
            });
        }
    }
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if let Some(min) = number("minimum").filter(|min| n < *min) {
            causes.push(invalid(
                path,
                value,
                format!("{path} in body should be greater than or equal to {min}"),
            ));
        }
        if let Some(max) = number("maximum").filter(|max| n > *max) {
            causes.push(invalid(
                path,
                value,
                format!("{path} in body should be less than or equal to {max}"),
            ));
        }
    }
    if let Some(text) = value.as_str() {
        if let Some(max) = number("maxLength").filter(|max| text.chars().count() as f64 > *max) {
            causes.push(Cause {
                kind: "FieldValueTooLong".into(),
                message: format!("Too long: may not be more than {max} bytes"),
                field: path.into(),
            });
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            if regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(text)) {
                causes.push(invalid(
                    path,
                    value,
                    format!("{path} in body should match '{pattern}'"),
                ));
            }
        }
    }
    if let (Some(items), Some(max)) = (value.as_array(), number("maxItems")) {
        if items.len() as f64 > max {
            causes.push(Cause {
                kind: "FieldValueTooMany".into(),
                message: format!("Too many: {}: must have at most {max} items", items.len()),
                field: path.into(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["repo"], "properties": {
                "repo": {"type": "string", "pattern": "^https?://"},
                "paused": {"type": "boolean", "default": false},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "replicas": {"type": "integer", "minimum": 0},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    }

    #[test]
    fn unknown_fields_are_pruned_and_defaults_filled() {
        let mut object = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
            "spec": {"repo": "https://h/r", "unknown": 1, "extra": {"anything": [1]}}, "junk": true});
        let checked = prepare(&mut object, &schema());
        assert!(checked.causes.is_empty());
        assert_eq!(checked.pruned, ["junk", "spec.unknown"]);
        assert_eq!(
            object["spec"],
            json!({"repo": "https://h/r", "extra": {"anything": [1]}, "paused": false})
        );
        assert!(object.get("junk").is_none());
    }

    #[test]
    fn validation_names_each_bad_field() {
        let mut object = json!({"spec": {"repo": "ftp://x", "mode": "c", "replicas": -1}});
        let fields: Vec<String> = prepare(&mut object, &schema())
            .causes
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(fields, ["spec.repo", "spec.mode", "spec.replicas"]);
        let mut missing = json!({"spec": {"replicas": "two"}});
        let causes = prepare(&mut missing, &schema()).causes;
        assert_eq!(
            causes[0].message,
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        );
        assert_eq!(causes[1].field, "spec.repo");
    }
}
