//! The protobuf form of `/openapi/v2` (gnostic's `openapi.v2.Document`), which client-go
//! asks for and parses without looking at the content type: kubectl's validation, `kubectl
//! explain --output=plaintext-openapiv2` and Helm 3's install all read it.
//!
//! Only the parts of Swagger 2.0 that the hub's document uses are encoded: the version and
//! info, each path's operations (tags, parameters in the query, responses and extensions)
//! and every definition's schema. Extension values travel as YAML text, as gnostic does
//! (JSON is YAML).

use serde_json::{Map, Value};

/// The `Content-Type` of the protobuf form. kube-apiserver labels it as plain bytes: the
/// media type clients ask for (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`)
/// does not parse as one in Go, and client-go refuses the response if it is sent back.
pub(crate) const CONTENT_TYPE: &str = "application/octet-stream";

/// Whether an `Accept` header asks for the protobuf form of `/openapi/v2`.
pub(crate) fn wanted(accept: &str) -> bool {
    accept.contains("proto-openapi") && accept.contains("protobuf")
}

/// One protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }

    fn key(&mut self, field: u64, wire_type: u64) {
        self.varint((field << 3) | wire_type);
    }

    fn bytes(&mut self, field: u64, bytes: &[u8]) {
        self.key(field, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn string(&mut self, field: u64, value: Option<&Value>) {
        if let Some(text) = value.and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.bytes(field, text.as_bytes());
        }
    }

    fn strings(&mut self, field: u64, value: Option<&Value>) {
        match value {
            Some(Value::String(text)) => self.bytes(field, text.as_bytes()),
            Some(Value::Array(items)) => {
                for text in items.iter().filter_map(Value::as_str) {
                    self.bytes(field, text.as_bytes());
                }
            }
            _ => {}
        }
    }

    fn boolean(&mut self, field: u64, value: Option<&Value>) {
        if value.and_then(Value::as_bool) == Some(true) {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u64, value: Option<&Value>) {
        if let Some(number) = value.and_then(Value::as_i64).filter(|n| *n != 0) {
            self.key(field, 0);
            // Negative values are written in two's complement, as protobuf's int64 is.
            self.varint(number as u64);
        }
    }

    fn double(&mut self, field: u64, value: Option<&Value>) {
        if let Some(number) = value.and_then(Value::as_f64).filter(|n| *n != 0.0) {
            self.key(field, 1);
            self.0.extend_from_slice(&number.to_le_bytes());
        }
    }

    fn message(&mut self, field: u64, inner: Message) {
        self.bytes(field, &inner.0);
    }

    /// A gnostic `Any`: the value as YAML text.
    fn any(&mut self, field: u64, value: &Value) {
        let mut any = Message::default();
        any.bytes(2, value.to_string().as_bytes());
        self.message(field, any);
    }

    /// A `NamedAny` for every `x-` member of `object`.
    fn extensions(&mut self, field: u64, object: &Map<String, Value>) {
        for (name, value) in object.iter().filter(|(name, _)| name.starts_with("x-")) {
            let mut named = Message::default();
            named.bytes(1, name.as_bytes());
            named.any(2, value);
            self.message(field, named);
        }
    }
}

fn schema(value: &Value) -> Message {
    let mut out = Message::default();
    let Some(object) = value.as_object() else {
        return out;
    };
    let get = |name: &str| object.get(name);
    out.string(1, get("$ref"));
    out.string(2, get("format"));
    out.string(3, get("title"));
    out.string(4, get("description"));
    if let Some(default) = get("default") {
        out.any(5, default);
    }
    out.double(6, get("multipleOf"));
    out.double(7, get("maximum"));
    out.boolean(8, get("exclusiveMaximum"));
    out.double(9, get("minimum"));
    out.boolean(10, get("exclusiveMinimum"));
    out.int64(11, get("maxLength"));
    out.int64(12, get("minLength"));
    out.string(13, get("pattern"));
    out.int64(14, get("maxItems"));
    out.int64(15, get("minItems"));
    out.boolean(16, get("uniqueItems"));
    out.int64(17, get("maxProperties"));
    out.int64(18, get("minProperties"));
    out.strings(19, get("required"));
    for item in get("enum").and_then(Value::as_array).into_iter().flatten() {
        out.any(20, item);
    }
    match get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            let mut item = Message::default();
            item.key(2, 0);
            item.varint(u64::from(*allowed));
            out.message(21, item);
        }
        Some(inner @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(inner));
            out.message(21, item);
        }
        _ => {}
    }
    if get("type").is_some() {
        let mut types = Message::default();
        types.strings(1, get("type"));
        out.message(22, types);
    }
    let items: Vec<&Value> = match get("items") {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    };
    if !items.is_empty() {
        let mut list = Message::default();
        for item in items {
            list.message(1, schema(item));
        }
        out.message(23, list);
    }
    for part in get("allOf").and_then(Value::as_array).into_iter().flatten() {
        out.message(24, schema(part));
    }
    if let Some(properties) = get("properties").and_then(Value::as_object) {
        out.message(25, named_schemas(properties));
    }
    out.string(26, get("discriminator"));
    out.boolean(27, get("readOnly"));
    if let Some(example) = get("example") {
        out.any(30, example);
    }
    out.extensions(31, object);
    out
}

/// `Properties` and `Definitions` share one shape: repeated `NamedSchema` in field 1.
fn named_schemas(schemas: &Map<String, Value>) -> Message {
    let mut out = Message::default();
    for (name, value) in schemas {
        let mut named = Message::default();
        named.bytes(1, name.as_bytes());
        named.message(2, schema(value));
        out.message(1, named);
    }
    out
}

/// A query parameter: `ParametersItem.parameter.non_body_parameter.query_parameter_sub_schema`.
fn query_parameter(value: &Value) -> Message {
    let mut query = Message::default();
    query.boolean(1, value.get("required"));
    query.string(2, value.get("in"));
    query.string(3, value.get("description"));
    query.string(4, value.get("name"));
    query.string(6, value.get("type"));
    query.boolean(20, value.get("uniqueItems"));
    let mut non_body = Message::default();
    non_body.message(3, query);
    let mut parameter = Message::default();
    parameter.message(2, non_body);
    let mut item = Message::default();
    item.message(1, parameter);
    item
}

fn responses(value: &Map<String, Value>) -> Message {
    let mut out = Message::default();
    for (code, response) in value {
        let mut body = Message::default();
        body.string(1, response.get("description"));
        let mut response_value = Message::default();
        response_value.message(1, body);
        let mut named = Message::default();
        named.bytes(1, code.as_bytes());
        named.message(2, response_value);
        out.message(1, named);
    }
    out
}

fn operation(value: &Value) -> Message {
    let mut out = Message::default();
    let Some(object) = value.as_object() else {
        return out;
    };
    out.strings(1, object.get("tags"));
    out.string(3, object.get("description"));
    out.string(5, object.get("operationId"));
    let parameters = object.get("parameters").and_then(Value::as_array);
    for parameter in parameters.into_iter().flatten() {
        if parameter.get("in").and_then(Value::as_str) == Some("query") {
            out.message(8, query_parameter(parameter));
        }
    }
    if let Some(codes) = object.get("responses").and_then(Value::as_object) {
        out.message(9, responses(codes));
    }
    out.extensions(13, object);
    out
}

fn path_item(value: &Value) -> Message {
    let mut out = Message::default();
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (8, "patch"),
    ] {
        if let Some(op) = value.get(method) {
            out.message(field, operation(op));
        }
    }
    out
}

/// The Swagger 2.0 document `document` (as `/openapi/v2` serves it in JSON) as protobuf.
pub(crate) fn encode(document: &Value) -> Vec<u8> {
    let mut out = Message::default();
    out.string(1, document.get("swagger"));
    if let Some(info) = document.get("info") {
        let mut inner = Message::default();
        inner.string(1, info.get("title"));
        inner.string(2, info.get("version"));
        out.message(2, inner);
    }
    if let Some(paths) = document.get("paths").and_then(Value::as_object) {
        let mut inner = Message::default();
        for (path, item) in paths {
            let mut named = Message::default();
            named.bytes(1, path.as_bytes());
            named.message(2, path_item(item));
            inner.message(2, named);
        }
        out.message(8, inner);
    }
    if let Some(definitions) = document.get("definitions").and_then(Value::as_object) {
        out.message(9, named_schemas(definitions));
    }
    out.0
}
