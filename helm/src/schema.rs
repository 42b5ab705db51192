//! `values.schema.json`: values checked against a JSON Schema, with the messages Helm 4
//! prints, which are those of its validator (santhosh-tekuri/jsonschema v6): the keywords
//! of one value checked in that validator's order, a value's several failures grouped
//! under `validation failed`, and the groups printed as an indented tree
//! (`- at '/replicas': got string, want integer`). The keywords charts use are checked:
//! type, const, enum, required, properties, additionalProperties, min/maxProperties,
//! items, min/maxItems, uniqueItems, min/maxLength, pattern, minimum, maximum,
//! exclusiveMinimum/Maximum and multipleOf. Go visits an object's properties in random
//! order; they are visited here in the order the values list them.

use serde_json::{Map, Value};

use super::template::printf::go_quote;
use super::template::value::format_float_g;

/// Where a value failed and why; a value failing several ways is a group of causes.
struct Failure {
    at: String,
    message: String,
    causes: Vec<Failure>,
}

impl Failure {
    fn new(at: &str, message: String) -> Self {
        Failure {
            at: at.to_string(),
            message,
            causes: Vec::new(),
        }
    }

    /// Prints this failure and its causes below it, one level deeper each.
    fn print(&self, depth: usize, out: &mut Vec<String>) {
        let indent = "  ".repeat(depth);
        out.push(format!(
            "{indent}- at {}: {}",
            quote(&self.at),
            self.message
        ));
        for cause in &self.causes {
            cause.print(depth + 1, out);
        }
    }
}

/// The validator's name for a value's type: every number is a `number`.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(value: &Value) -> bool {
    value.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// The types a schema allows, in the validator's order.
fn allowed_types(schema: &Value) -> Vec<&'static str> {
    let named: Vec<&str> = match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    [
        "null", "boolean", "number", "integer", "string", "array", "object",
    ]
    .into_iter()
    .filter(|t| named.contains(t))
    .collect()
}

/// Go's `%q` of a text, in single quotes, as the validator quotes names and texts.
fn quote(text: &str) -> String {
    let quoted = go_quote(text).replace("\\\"", "\"").replace('\'', "\\'");
    let inner = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"'));
    format!("'{}'", inner.unwrap_or(&quoted))
}

/// A value as the validator shows it in `enum` and `const` failures.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => quote(text),
        Value::Array(_) | Value::Object(_) => "value".to_string(),
        Value::Null => "<nil>".to_string(),
        other => other.to_string(),
    }
}

/// A number as the validator's English message printer writes it: thousands grouped
/// (`1,000`, `12,345.5`).
fn grouped(number: impl ToString) -> String {
    let text = number.to_string();
    if text.contains(['e', 'E']) {
        return text;
    }
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((whole, fraction)) => (whole, format!(".{fraction}")),
        None => (unsigned, String::new()),
    };
    let mut digits = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            digits.push(',');
        }
        digits.push(digit);
    }
    format!("{sign}{digits}{fraction}")
}

fn joined(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| quote(n))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A location and a property under it, as a JSON pointer.
fn child(at: &str, name: &str) -> String {
    format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"))
}

fn check(value: &Value, schema: &Value, at: &str) -> Option<Failure> {
    let types = allowed_types(schema);
    let type_ok = |t: &&str| {
        *t == type_name(value) || (*t == "integer" && value.is_number() && is_integer(value))
    };
    if !types.is_empty() && !types.iter().any(type_ok) {
        let message = format!("got {}, want {}", type_name(value), types.join(" or "));
        return Some(Failure::new(at, message));
    }
    if let Some(constant) = schema.get("const").filter(|c| *c != value) {
        let message = match constant {
            Value::Array(_) | Value::Object(_) => "const failed".to_string(),
            other => format!("value must be {}", shown(other)),
        };
        return Some(Failure::new(at, message));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let message = if allowed.iter().any(|a| a.is_array() || a.is_object()) {
                "enum failed".to_string()
            } else if let [one] = allowed.as_slice() {
                format!("value must be {}", shown(one))
            } else {
                let listed: Vec<String> = allowed.iter().map(shown).collect();
                format!("value must be one of {}", listed.join(", "))
            };
            return Some(Failure::new(at, message));
        }
    }
    let mut failures = Vec::new();
    match value {
        Value::Object(map) => check_object(map, schema, at, &mut failures),
        Value::Array(items) => check_array(items, schema, at, &mut failures),
        Value::String(text) => check_string(text, schema, at, &mut failures),
        Value::Number(_) => check_number(value, schema, at, &mut failures),
        _ => {}
    }
    match failures.len() {
        0 => None,
        1 => failures.pop(),
        _ => Some(Failure {
            at: at.to_string(),
            message: "validation failed".to_string(),
            causes: failures,
        }),
    }
}

fn count(schema: &Value, key: &str) -> Option<usize> {
    schema
        .get(key)
        .and_then(Value::as_f64)
        .map(|n| n.max(0.0) as usize)
}

/// The `minX`/`maxX` pair of keywords bounding a size (`Properties`, `Items`, `Length`):
/// `minItems: got 1, want 2`.
fn check_size(size: usize, bounds: &str, schema: &Value, at: &str, out: &mut Vec<Failure>) {
    let (min, max) = (format!("min{bounds}"), format!("max{bounds}"));
    let broken = [
        (&min, count(schema, &min).filter(|bound| size < *bound)),
        (&max, count(schema, &max).filter(|bound| size > *bound)),
    ];
    for (keyword, bound) in broken {
        if let Some(bound) = bound {
            let (got, want) = (grouped(size), grouped(bound));
            out.push(Failure::new(
                at,
                format!("{keyword}: got {got}, want {want}"),
            ));
        }
    }
}

fn check_object(map: &Map<String, Value>, schema: &Value, at: &str, out: &mut Vec<Failure>) {
    check_size(map.len(), "Properties", schema, at, out);
    let required = schema.get("required").and_then(Value::as_array);
    let missing: Vec<&str> = (required.into_iter().flatten())
        .filter_map(Value::as_str)
        .filter(|name| !map.contains_key(*name))
        .collect();
    match missing.as_slice() {
        [] => {}
        [one] => out.push(Failure::new(at, format!("missing property {}", quote(one)))),
        many => out.push(Failure::new(
            at,
            format!("missing properties {}", joined(many)),
        )),
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut additional = Vec::new();
    for (name, item) in map {
        let path = child(at, name);
        match (
            properties.and_then(|p| p.get(name)),
            schema.get("additionalProperties"),
        ) {
            (Some(property), _) => out.extend(check(item, property, &path)),
            (None, Some(Value::Bool(false))) => additional.push(name.as_str()),
            (None, Some(other @ Value::Object(_))) => out.extend(check(item, other, &path)),
            (None, _) => {}
        }
    }
    if !additional.is_empty() {
        let message = format!("additional properties {} not allowed", joined(&additional));
        out.push(Failure::new(at, message));
    }
}

fn check_array(items: &[Value], schema: &Value, at: &str, out: &mut Vec<Failure>) {
    check_size(items.len(), "Items", schema, at, out);
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        let pairs = (0..items.len()).flat_map(|i| (i + 1..items.len()).map(move |j| (i, j)));
        if let Some((i, j)) = pairs.into_iter().find(|(i, j)| items[*i] == items[*j]) {
            out.push(Failure::new(
                at,
                format!("items at {} and {} are equal", grouped(i), grouped(j)),
            ));
        }
    }
    if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
        for (index, item) in items.iter().enumerate() {
            out.extend(check(item, item_schema, &child(at, &index.to_string())));
        }
    }
}

fn check_string(text: &str, schema: &Value, at: &str, out: &mut Vec<Failure>) {
    check_size(text.chars().count(), "Length", schema, at, out);
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        let translated = super::goregex::translate(pattern);
        if translated.is_ok_and(|p| regex::Regex::new(&p).is_ok_and(|re| !re.is_match(text))) {
            let message = format!("{} does not match pattern {}", quote(text), quote(pattern));
            out.push(Failure::new(at, message));
        }
    }
}

/// Whether a number breaks a bound.
type Breaks = fn(f64, f64) -> bool;

fn check_number(value: &Value, schema: &Value, at: &str, out: &mut Vec<Failure>) {
    let Some(n) = value.as_f64() else {
        return;
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let checks: [(&str, Breaks); 5] = [
        ("minimum", |n, b| n < b),
        ("maximum", |n, b| n > b),
        ("exclusiveMinimum", |n, b| n <= b),
        ("exclusiveMaximum", |n, b| n >= b),
        ("multipleOf", |n, b| b != 0.0 && (n / b).fract() != 0.0),
    ];
    for (keyword, fails) in checks {
        if let Some(b) = bound(keyword).filter(|b| fails(n, *b)) {
            let (got, want) = (grouped(format_float_g(n)), grouped(format_float_g(b)));
            out.push(Failure::new(
                at,
                format!("{keyword}: got {got}, want {want}"),
            ));
        }
    }
}

/// The schema failures of a chart's values as Helm prints them, one line each: the
/// validator's tree below its top, each level indented two more spaces.
pub(crate) fn violations(values: &Value, schema: &Value) -> Vec<String> {
    let Some(top) = check(values, schema, "") else {
        return Vec::new();
    };
    let failures = if top.causes.is_empty() {
        vec![top]
    } else {
        top.causes
    };
    let mut lines = Vec::new();
    for failure in &failures {
        failure.print(0, &mut lines);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_match_helm_4() {
        // Helm 4.3.1 printed these lines for the same schema and values, the properties'
        // in Go's random order; ours come in the order the values list them.
        let schema = json!({"type": "object", "required": ["image"], "properties": {
            "replicas": {"type": "integer"}, "image": {"type": "string"},
            "mode": {"enum": ["fast", "safe"]}, "ports": {"type": "array", "items": {"type": "integer"}}},
            "additionalProperties": false});
        let values = json!({"replicas": "two", "mode": "slow", "ports": [80, "x"], "typo": 1});
        assert_eq!(
            violations(&values, &schema),
            [
                "- at '': missing property 'image'",
                "- at '/replicas': got string, want integer",
                "- at '/mode': value must be one of 'fast', 'safe'",
                "- at '/ports/1': got string, want integer",
                "- at '': additional properties 'typo' not allowed",
            ]
        );
        assert!(violations(&json!({"image": "x", "replicas": 3.0}), &schema).is_empty());
    }
}
