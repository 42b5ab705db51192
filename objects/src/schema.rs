//! OpenAPI v3 schemas, the subset Kubernetes uses: pruning of unknown fields and defaulting
//! (structural schemas of custom resources), and validation of the common keywords (type,
//! required, enum, pattern, bounds). The hub checks custom resources with it.

use std::collections::HashMap;

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
    /// Paths of quantities that are not quantities (kube-apiserver refuses the object as
    /// undecodable, 400, rather than invalid).
    pub malformed_quantities: Vec<String>,
    /// Byte strings (`format: byte`) that are not base64, as `(path, Go's decoding error)`
    /// (`illegal base64 data at input byte 4`): kube-apiserver refuses a built-in kind's as
    /// undecodable (400), where a custom resource's validation finds them (422).
    pub malformed_bytes: Vec<(String, String)>,
    /// Failures of validation rules (`x-kubernetes-validations`), which kube-apiserver
    /// checks only once everything else holds.
    pub rule_causes: Vec<Cause>,
    /// Values of the wrong JSON type, as `(path, found, wanted)`: a built-in kind's
    /// decoding refuses them (400) where a custom resource's validation finds them (422).
    pub mistyped: Vec<(String, String, String)>,
}

/// The extension marking a resource quantity (`resource.Quantity`) in the schemas of
/// built-in kinds: stored in its canonical form, as kube-apiserver stores it.
pub const QUANTITY_EXTENSION: &str = "x-fleet-quantity";

/// The extension marking a built-in kind's schema: its optional lists and maps that are
/// empty are dropped, as Go's `omitempty` drops them when kube-apiserver writes the object.
pub const OMIT_EMPTY_EXTENSION: &str = "x-fleet-omit-empty";

/// A schema read once into the rules each node holds, so that checking an object looks
/// up each of its members once instead of every keyword of every node, and compiles each
/// `pattern` once.
#[derive(Debug)]
pub struct Schema {
    source: Value,
    root: Node,
    /// Whether the schema holds validation rules (`x-kubernetes-validations`) anywhere.
    has_rules: bool,
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Schema {
    /// Reads `schema` (an `openAPIV3Schema`).
    pub fn compile(schema: &Value) -> Self {
        fn any_rules(value: &Value) -> bool {
            match value {
                Value::Object(map) => {
                    map.contains_key("x-kubernetes-validations") || map.values().any(any_rules)
                }
                Value::Array(items) => items.iter().any(any_rules),
                _ => false,
            }
        }
        Self {
            source: schema.clone(),
            root: Node::compile(schema),
            has_rules: any_rules(schema),
        }
    }

    /// The schema as it was given.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Removes from `object` the fields the schema does not know (as the API server prunes
    /// a custom resource's), nothing else; returns their paths (`spec.typo`).
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        let mut pruned = Vec::new();
        self.root.prune(object, &Path::Root, &mut pruned);
        pruned
    }

    /// Whether the schema holds validation rules (`x-kubernetes-validations`) anywhere.
    pub fn has_rules(&self) -> bool {
        self.has_rules
    }

    /// Prunes, defaults and validates `object` (a custom resource, or a built-in kind) in
    /// place. `apiVersion`, `kind` and `metadata` are never pruned.
    pub fn prepare(&self, object: &mut Value) -> Checked {
        let mut checked = Checked::default();
        self.root.visit(object, &Path::Root, &mut checked);
        checked
    }
}

/// The rules of one node of a schema.
#[derive(Debug, Default)]
struct Node {
    /// `type`, if set.
    kind: Option<String>,
    int_or_string: bool,
    /// A resource quantity, kept in its canonical form.
    quantity: bool,
    /// A byte string (`format: byte`): base64, kept in its canonical form.
    bytes: bool,
    /// A Go duration, as Fleet's CRDs check one ([`fleet_api::GO_DURATION_RULE`]): the
    /// message of the rule. The one rule in the Common Expression Language understood here.
    go_duration: Option<String>,
    /// Optional empty lists and maps below are dropped (a built-in kind).
    omit_empty: bool,
    nullable: bool,
    allowed: Option<Vec<Value>>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    max_length: Option<f64>,
    max_items: Option<f64>,
    /// `pattern`, and the expression when it compiles (one that does not is not checked).
    pattern: Option<(String, Option<regex::Regex>)>,
    /// `properties`; `None` without the keyword.
    properties: Option<HashMap<String, Node>>,
    /// The `default` of each property that has one, in the schema's order (the order
    /// missing members are added in).
    defaults: Vec<(String, Value)>,
    additional: Option<Box<Node>>,
    preserves_unknown: bool,
    required: Vec<String>,
    items: Option<Box<Node>>,
}

impl Node {
    fn compile(schema: &Value) -> Self {
        Self::compile_within(schema, false)
    }

    fn compile_within(schema: &Value, omit_empty: bool) -> Self {
        let omit_empty =
            omit_empty || schema.get(OMIT_EMPTY_EXTENSION).and_then(Value::as_bool) == Some(true);
        let compile = |child: &Value| Node::compile_within(child, omit_empty);
        let number = |key: &str| schema.get(key).and_then(Value::as_f64);
        let flag = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
        let declared = schema.get("properties").and_then(Value::as_object);
        let properties = declared.map(|map| {
            map.iter()
                .map(|(key, child)| (key.clone(), compile(child)))
                .collect()
        });
        let defaults = (declared.into_iter().flatten())
            .filter_map(|(key, child)| Some((key.clone(), child.get("default")?.clone())))
            .collect();
        Self {
            kind: schema.get("type").and_then(Value::as_str).map(String::from),
            int_or_string: flag("x-kubernetes-int-or-string"),
            quantity: flag(QUANTITY_EXTENSION),
            bytes: schema.get("format").and_then(Value::as_str) == Some("byte"),
            go_duration: (schema
                .get("x-kubernetes-validations")
                .and_then(Value::as_array))
            .into_iter()
            .flatten()
            .find(|v| v["rule"] == fleet_api::GO_DURATION_RULE)
            .map(|v| v["message"].as_str().unwrap_or_default().to_string()),
            omit_empty,
            nullable: flag("nullable"),
            allowed: schema.get("enum").and_then(Value::as_array).cloned(),
            minimum: number("minimum"),
            maximum: number("maximum"),
            max_length: number("maxLength"),
            max_items: number("maxItems"),
            pattern: (schema.get("pattern").and_then(Value::as_str))
                .map(|p| (p.to_string(), regex::Regex::new(p).ok())),
            properties,
            defaults,
            additional: (schema.get("additionalProperties").filter(|a| a.is_object()))
                .map(|a| Box::new(compile(a))),
            preserves_unknown: flag("x-kubernetes-preserve-unknown-fields"),
            required: (schema.get("required").and_then(Value::as_array).into_iter())
                .flatten()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            items: schema.get("items").map(|i| Box::new(compile(i))),
        }
    }

    fn type_ok(&self, value: &Value) -> bool {
        if self.quantity {
            return value.is_number() || value.is_string();
        }
        if self.int_or_string {
            return matches!(type_name(value), "integer" | "string");
        }
        if value.is_null() && self.nullable {
            return true;
        }
        match self.kind.as_deref() {
            None => true,
            Some("number") => value.is_number(),
            Some(wanted) => type_name(value) == wanted,
        }
    }

    fn visit(&self, value: &mut Value, path: &Path, checked: &mut Checked) {
        if !self.type_ok(value) {
            let wanted = self.kind.as_deref().unwrap_or("int-or-string");
            // Kubernetes shows the type it found as the invalid value.
            let actual = type_name(value);
            checked
                .mistyped
                .push((path.to_string(), actual.to_string(), wanted.to_string()));
            checked.causes.push(invalid(
                path,
                &Value::String(actual.into()),
                format!("{path} in body must be of type {wanted}: \"{actual}\""),
            ));
            return;
        }
        if self.quantity {
            let text = match value {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                _ => return,
            };
            match crate::quantity::canonical(&text) {
                Some(canonical) => *value = Value::String(canonical),
                None => checked.malformed_quantities.push(path.to_string()),
            }
            return;
        }
        if let (true, Value::String(text)) = (self.bytes, &mut *value) {
            match crate::base64::canonical(text) {
                Ok(canonical) => *text = canonical,
                Err(error) => {
                    let why = format!("{path} in body must be of type byte: \"{text}\"");
                    checked.causes.push(invalid(path, value, why));
                    checked.malformed_bytes.push((path.to_string(), error));
                }
            }
            return;
        }
        self.scalar_rules(value, path, &mut checked.causes, &mut checked.rule_causes);
        match value {
            Value::Object(map) => {
                self.retain_known(map, path, &mut checked.pruned);
                if self.omit_empty {
                    self.drop_empty(map);
                }
                let identity = |key: &str| is_identity(path, key);
                for (key, default) in &self.defaults {
                    map.entry(key.clone()).or_insert_with(|| default.clone());
                }
                for (key, child) in map.iter_mut() {
                    if identity(key) {
                        continue;
                    }
                    let property = self.properties.as_ref().and_then(|p| p.get(key));
                    if let Some(node) = property.or(self.additional.as_deref()) {
                        node.visit(child, &path.child(key), checked);
                    }
                }
                for name in &self.required {
                    if !map.contains_key(name) {
                        checked.causes.push(Cause {
                            kind: "FieldValueRequired".into(),
                            message: "Required value".into(),
                            field: path.child(name).to_string(),
                        });
                    }
                }
            }
            Value::Array(items) => {
                if let Some(node) = &self.items {
                    for (index, item) in items.iter_mut().enumerate() {
                        node.visit(item, &Path::Item(path, index), checked);
                    }
                }
            }
            _ => {}
        }
    }

    /// Drops the optional members of `map` that are empty lists, or empty maps where the
    /// schema has a map (Go's `omitempty` on a slice or a map).
    fn drop_empty(&self, map: &mut serde_json::Map<String, Value>) {
        let Some(properties) = &self.properties else {
            return;
        };
        map.retain(|key, value| {
            let Some(node) = properties.get(key) else {
                return true;
            };
            let is_map = node.additional.is_some() && node.properties.is_none();
            let empty = match value {
                Value::Array(items) => items.is_empty() && node.kind.as_deref() == Some("array"),
                Value::Object(fields) => fields.is_empty() && is_map,
                _ => false,
            };
            !empty || self.required.iter().any(|r| r == key)
        });
    }

    /// Drops the members of `map` (at `path`) this node does not know, noting their paths.
    fn retain_known(
        &self,
        map: &mut serde_json::Map<String, Value>,
        path: &Path,
        pruned: &mut Vec<String>,
    ) {
        if self.properties.is_none() || self.additional.is_some() || self.preserves_unknown {
            return;
        }
        map.retain(|key, _| {
            let known = (self.properties.as_ref()).is_some_and(|p| p.contains_key(key))
                || is_identity(path, key);
            if !known {
                pruned.push(path.child(key).to_string());
            }
            known
        });
    }

    /// The pruning part of [`Node::visit`].
    fn prune(&self, value: &mut Value, path: &Path, pruned: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                self.retain_known(map, path, pruned);
                for (key, child) in map.iter_mut().filter(|(key, _)| !is_identity(path, key)) {
                    let property = self.properties.as_ref().and_then(|p| p.get(key));
                    if let Some(node) = property.or(self.additional.as_deref()) {
                        node.prune(child, &path.child(key), pruned);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(node) = &self.items {
                    for (index, item) in items.iter_mut().enumerate() {
                        node.prune(item, &Path::Item(path, index), pruned);
                    }
                }
            }
            _ => {}
        }
    }

    fn scalar_rules(
        &self,
        value: &Value,
        path: &Path,
        causes: &mut Vec<Cause>,
        rule_causes: &mut Vec<Cause>,
    ) {
        if let Some(allowed) = &self.allowed {
            if !allowed.contains(value) {
                let listing: Vec<String> = allowed.iter().map(Value::to_string).collect();
                causes.push(Cause {
                    kind: "FieldValueNotSupported".into(),
                    message: format!(
                        "Unsupported value: {value}: supported values: {}",
                        listing.join(", ")
                    ),
                    field: path.to_string(),
                });
            }
        }
        if let Some(n) = value.as_f64() {
            if let Some(min) = self.minimum.filter(|min| n < *min) {
                causes.push(invalid(
                    path,
                    value,
                    format!("{path} in body should be greater than or equal to {min}"),
                ));
            }
            if let Some(max) = self.maximum.filter(|max| n > *max) {
                causes.push(invalid(
                    path,
                    value,
                    format!("{path} in body should be less than or equal to {max}"),
                ));
            }
        }
        if let Some(text) = value.as_str() {
            let too_long = |max: &f64| text.chars().count() as f64 > *max;
            if let Some(max) = self.max_length.filter(too_long) {
                causes.push(Cause {
                    kind: "FieldValueTooLong".into(),
                    message: format!("Too long: may not be more than {max} bytes"),
                    field: path.to_string(),
                });
            }
            if let Some(message) = &self.go_duration {
                match go_duration(text) {
                    GoDuration::Valid => {}
                    GoDuration::Invalid => rule_causes.push(invalid(path, value, message.clone())),
                    // The expression itself failed: kube-apiserver shows the value's type.
                    GoDuration::Overflows => rule_causes.push(invalid(
                        path,
                        &Value::String("string".into()),
                        format!("type conversion error from 'string' to 'google.protobuf.Duration' evaluating rule: {message}"),
                    )),
                }
            }
            if let Some((pattern, Some(expression))) = &self.pattern {
                if !expression.is_match(text) {
                    causes.push(invalid(
                        path,
                        value,
                        format!("{path} in body should match '{pattern}'"),
                    ));
                }
            }
        }
        if let (Some(items), Some(max)) = (value.as_array(), self.max_items) {
            if items.len() as f64 > max {
                causes.push(Cause {
                    kind: "FieldValueTooMany".into(),
                    message: format!("Too many: {}: must have at most {max} items", items.len()),
                    field: path.to_string(),
                });
            }
        }
    }
}

/// What [`fleet_api::GO_DURATION_RULE`] makes of a text.
enum GoDuration {
    /// `0`, or numbers each with one of Go's units (`1h30m`, `1.5s`, `300ms`), within what
    /// a Go duration holds.
    Valid,
    /// Not written as one (`1d`, `abc`, `-1h`).
    Invalid,
    /// Written as one, but longer than a Go duration holds (`5000000h`): the rule's
    /// conversion fails.
    Overflows,
}

fn go_duration(text: &str) -> GoDuration {
    const MAX: std::time::Duration = std::time::Duration::from_secs(2_562_047 * 3600);
    static UNITS: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let units =
        UNITS.get_or_init(|| regex::Regex::new(r"^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$").ok());
    if text == "0" {
        return GoDuration::Valid;
    }
    if !units.as_ref().is_some_and(|u| u.is_match(text)) {
        return GoDuration::Invalid;
    }
    match crate::duration::parse_go_duration(text) {
        Some(duration) if duration <= MAX => GoDuration::Valid,
        _ => GoDuration::Overflows,
    }
}

/// The cause kube-apiserver adds when an object's validation rules were not run because
/// the object failed other checks.
pub fn rules_not_checked() -> Cause {
    Cause {
        kind: "FieldValueInvalid".into(),
        message: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
        field: "<nil>".into(),
    }
}

/// Whether `key` at `path` is one of the members every object keeps whatever its schema
/// says: `apiVersion`, `kind` and `metadata` at the root.
fn is_identity(path: &Path, key: &str) -> bool {
    matches!(path, Path::Root) && matches!(key, "apiVersion" | "kind" | "metadata")
}

/// Where a node lies in the object (`spec.items[0].name`), written out only for a cause
/// or a pruned field.
enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'a str),
    Item(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    fn child(&'a self, key: &'a str) -> Path<'a> {
        Path::Field(self, key)
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Field(Path::Root, key) => f.write_str(key),
            Path::Field(parent, key) => write!(f, "{parent}.{key}"),
            Path::Item(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

fn invalid(path: &Path, value: &Value, why: String) -> Cause {
    Cause {
        kind: "FieldValueInvalid".into(),
        message: format!("Invalid value: {}: {why}", short(value)),
        field: path.to_string(),
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
        let checked = Schema::compile(&schema()).prepare(&mut object);
        assert!(checked.causes.is_empty());
        assert_eq!(checked.pruned, ["junk", "spec.unknown"]);
        assert_eq!(
            object["spec"],
            json!({"repo": "https://h/r", "extra": {"anything": [1]}, "paused": false})
        );
        assert!(object.get("junk").is_none());
    }

    #[test]
    fn pruning_alone_neither_defaults_nor_validates() {
        let mut object = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
            "spec": {"unknown": 1, "mode": "c"}, "junk": true});
        let pruned = Schema::compile(&schema()).prune(&mut object);
        assert_eq!(pruned, ["junk", "spec.unknown"]);
        assert_eq!(object["spec"], json!({"mode": "c"}));
    }

    #[test]
    fn validation_names_each_bad_field() {
        let mut object = json!({"spec": {"repo": "ftp://x", "mode": "c", "replicas": -1}});
        let fields: Vec<String> = Schema::compile(&schema())
            .prepare(&mut object)
            .causes
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(fields, ["spec.repo", "spec.mode", "spec.replicas"]);
        let mut missing = json!({"spec": {"replicas": "two"}});
        let causes = Schema::compile(&schema()).prepare(&mut missing).causes;
        assert_eq!(
            causes[0].message,
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        );
        assert_eq!(causes[1].field, "spec.repo");
    }

    #[test]
    fn list_items_and_additional_properties_are_checked_where_they_lie() {
        let schema = Schema::compile(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "ports": {"type": "array", "maxItems": 2, "items": {"type": "object",
                    "required": ["port"],
                    "properties": {"port": {"type": "integer", "maximum": 65535}}}},
                "labels": {"type": "object",
                    "additionalProperties": {"type": "string", "maxLength": 3}}}}}}));
        let mut object = json!({"spec": {
            "ports": [{"port": 80}, {"port": 70000}, {"name": "x"}],
            "labels": {"a": "long", "b": "ok"}}});
        let checked = schema.prepare(&mut object);
        let fields: Vec<&str> = checked.causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.ports",
                "spec.ports[1].port",
                "spec.ports[2].port",
                "spec.labels.a"
            ]
        );
        assert_eq!(checked.pruned, ["spec.ports[2].name"]);
    }
}
