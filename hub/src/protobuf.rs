//! Kubernetes' protobuf encoding, read for the kinds that kubectl's typed commands send that
//! way (`kubectl create namespace|configmap|secret|serviceaccount|role|clusterrole|
//! rolebinding|clusterrolebinding|token`, `kubectl auth whoami|can-i`), and for the
//! DeleteOptions Helm and client-go send with a delete.
//! Every other kind is refused with 415 and a hint to use a manifest instead.

use base64::Engine;
use serde_json::{json, Map, Value};

/// The four bytes before every Kubernetes protobuf body.
const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, Copy)]
enum Shape {
    Int,
    Str,
    Bytes,
    Bool,
    StrMap,
    BytesMap,
    Message(&'static [FieldDef]),
}

struct FieldDef {
    number: u64,
    name: &'static str,
    shape: Shape,
    repeated: bool,
}

const fn field(number: u64, name: &'static str, shape: Shape) -> FieldDef {
    FieldDef {
        number,
        name,
        shape,
        repeated: false,
    }
}

const fn list(number: u64, name: &'static str, shape: Shape) -> FieldDef {
    FieldDef {
        number,
        name,
        shape,
        repeated: true,
    }
}

const OWNER_REFERENCE: &[FieldDef] = &[
    field(1, "kind", Shape::Str),
    field(3, "name", Shape::Str),
    field(4, "uid", Shape::Str),
    field(5, "apiVersion", Shape::Str),
    field(6, "controller", Shape::Bool),
    field(7, "blockOwnerDeletion", Shape::Bool),
];

const OBJECT_META: &[FieldDef] = &[
    field(1, "name", Shape::Str),
    field(2, "generateName", Shape::Str),
    field(3, "namespace", Shape::Str),
    field(6, "resourceVersion", Shape::Str),
    field(11, "labels", Shape::StrMap),
    field(12, "annotations", Shape::StrMap),
    list(13, "ownerReferences", Shape::Message(OWNER_REFERENCE)),
    list(14, "finalizers", Shape::Str),
];

const NAMESPACE_SPEC: &[FieldDef] = &[list(1, "finalizers", Shape::Str)];
const NAME_ONLY: &[FieldDef] = &[field(1, "name", Shape::Str)];
const OBJECT_REFERENCE: &[FieldDef] = &[
    field(1, "kind", Shape::Str),
    field(2, "namespace", Shape::Str),
    field(3, "name", Shape::Str),
];

const NAMESPACE: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    field(2, "spec", Shape::Message(NAMESPACE_SPEC)),
];
const CONFIG_MAP: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    field(2, "data", Shape::StrMap),
    field(3, "binaryData", Shape::BytesMap),
    field(4, "immutable", Shape::Bool),
];
const SECRET: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    field(2, "data", Shape::BytesMap),
    field(3, "type", Shape::Str),
    field(4, "immutable", Shape::Bool),
    field(5, "stringData", Shape::StrMap),
];
const SERVICE_ACCOUNT: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    list(2, "secrets", Shape::Message(OBJECT_REFERENCE)),
    list(3, "imagePullSecrets", Shape::Message(NAME_ONLY)),
    field(4, "automountServiceAccountToken", Shape::Bool),
];

const POLICY_RULE: &[FieldDef] = &[
    list(1, "verbs", Shape::Str),
    list(2, "apiGroups", Shape::Str),
    list(3, "resources", Shape::Str),
    list(4, "resourceNames", Shape::Str),
    list(5, "nonResourceURLs", Shape::Str),
];
const LABEL_SELECTOR: &[FieldDef] = &[
    field(1, "matchLabels", Shape::StrMap),
    list(
        2,
        "matchExpressions",
        Shape::Message(&[
            field(1, "key", Shape::Str),
            field(2, "operator", Shape::Str),
            list(3, "values", Shape::Str),
        ]),
    ),
];
const ROLE: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    list(2, "rules", Shape::Message(POLICY_RULE)),
    field(
        3,
        "aggregationRule",
        Shape::Message(&[list(
            1,
            "clusterRoleSelectors",
            Shape::Message(LABEL_SELECTOR),
        )]),
    ),
];
const ROLE_BINDING: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    list(
        2,
        "subjects",
        Shape::Message(&[
            field(1, "kind", Shape::Str),
            field(2, "apiGroup", Shape::Str),
            field(3, "name", Shape::Str),
            field(4, "namespace", Shape::Str),
        ]),
    ),
    field(
        3,
        "roleRef",
        Shape::Message(&[
            field(1, "apiGroup", Shape::Str),
            field(2, "kind", Shape::Str),
            field(3, "name", Shape::Str),
        ]),
    ),
];

/// `kubectl auth whoami`: a review with nothing but metadata.
const SELF_SUBJECT_REVIEW: &[FieldDef] = &[field(1, "metadata", Shape::Message(OBJECT_META))];
/// `kubectl auth can-i VERB RESOURCE` (and `can-i VERB /path`).
const SELF_SUBJECT_ACCESS_REVIEW: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    field(
        2,
        "spec",
        Shape::Message(&[
            field(
                1,
                "resourceAttributes",
                Shape::Message(&[
                    field(1, "namespace", Shape::Str),
                    field(2, "verb", Shape::Str),
                    field(3, "group", Shape::Str),
                    field(4, "version", Shape::Str),
                    field(5, "resource", Shape::Str),
                    field(6, "subresource", Shape::Str),
                    field(7, "name", Shape::Str),
                ]),
            ),
            field(
                2,
                "nonResourceAttributes",
                Shape::Message(&[field(1, "path", Shape::Str), field(2, "verb", Shape::Str)]),
            ),
        ]),
    ),
];
/// `kubectl auth can-i --list`.
const SELF_SUBJECT_RULES_REVIEW: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    field(
        2,
        "spec",
        Shape::Message(&[field(1, "namespace", Shape::Str)]),
    ),
];
/// `kubectl create token`.
const TOKEN_REQUEST: &[FieldDef] = &[
    field(1, "metadata", Shape::Message(OBJECT_META)),
    field(
        2,
        "spec",
        Shape::Message(&[
            list(1, "audiences", Shape::Str),
            field(
                3,
                "boundObjectRef",
                Shape::Message(&[
                    field(1, "kind", Shape::Str),
                    field(2, "apiVersion", Shape::Str),
                    field(3, "name", Shape::Str),
                    field(4, "uid", Shape::Str),
                ]),
            ),
            field(4, "expirationSeconds", Shape::Int),
        ]),
    ),
];

const PRECONDITIONS: &[FieldDef] = &[
    field(1, "uid", Shape::Str),
    field(2, "resourceVersion", Shape::Str),
];
/// The options of a delete, which Helm and client-go send as protobuf.
const DELETE_OPTIONS: &[FieldDef] = &[
    field(1, "gracePeriodSeconds", Shape::Int),
    field(2, "preconditions", Shape::Message(PRECONDITIONS)),
    field(3, "orphanDependents", Shape::Bool),
    field(4, "propagationPolicy", Shape::Str),
    list(5, "dryRun", Shape::Str),
    field(
        6,
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        Shape::Bool,
    ),
];

/// What the envelope says the body holds.
const UNKNOWN: &[FieldDef] = &[
    field(
        1,
        "typeMeta",
        Shape::Message(&[
            field(1, "apiVersion", Shape::Str),
            field(2, "kind", Shape::Str),
        ]),
    ),
    field(2, "raw", Shape::Bytes),
];

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*at).ok_or("truncated varint")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint too long".into())
}

fn wire_fields(buf: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, String> {
    let mut at = 0;
    let mut fields = Vec::new();
    while at < buf.len() {
        let tag = varint(buf, &mut at)?;
        let (number, kind) = (tag >> 3, tag & 7);
        let value = match kind {
            0 => Wire::Varint(varint(buf, &mut at)?),
            2 => {
                let length =
                    usize::try_from(varint(buf, &mut at)?).map_err(|_| "length overflow")?;
                let end = at
                    .checked_add(length)
                    .filter(|e| *e <= buf.len())
                    .ok_or("truncated field")?;
                let bytes = &buf[at..end];
                at = end;
                Wire::Bytes(bytes)
            }
            other => return Err(format!("field {number} has unsupported wire type {other}")),
        };
        fields.push((number, value));
    }
    Ok(fields)
}

/// Whether a field holds only zero values: 0, an empty string, or a message of such.
fn is_zero(wire: &Wire<'_>) -> bool {
    match wire {
        Wire::Varint(v) => *v == 0,
        Wire::Bytes(b) => wire_fields(b).is_ok_and(|fields| fields.iter().all(|(_, w)| is_zero(w))),
    }
}

fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a string field is not UTF-8".to_string())
}

fn map_entry(bytes: &[u8], binary: bool) -> Result<(String, Value), String> {
    let mut key = String::new();
    let mut value = Value::String(String::new());
    for (number, wire) in wire_fields(bytes)? {
        match (number, wire) {
            (1, Wire::Bytes(b)) => key = text(b)?,
            (2, Wire::Bytes(b)) if binary => {
                value = json!(base64::engine::general_purpose::STANDARD.encode(b));
            }
            (2, Wire::Bytes(b)) => value = json!(text(b)?),
            _ => return Err("malformed map entry".into()),
        }
    }
    Ok((key, value))
}

fn message(buf: &[u8], defs: &[FieldDef]) -> Result<Map<String, Value>, String> {
    let mut object = Map::new();
    for (number, wire) in wire_fields(buf)? {
        // Go writes unset fields as their zero values (empty status, generation 0...);
        // a zero value means unset, except as an item of a list (`apiGroups: [""]`).
        let def = defs.iter().find(|d| d.number == number);
        if is_zero(&wire) && !def.is_some_and(|d| d.repeated) {
            continue;
        }
        let Some(def) = def else {
            return Err(format!(
                "field {number} is not supported by the hub's protobuf reader"
            ));
        };
        let value = match (def.shape, wire) {
            (Shape::Str, Wire::Bytes(b)) => json!(text(b)?),
            (Shape::Bytes, Wire::Bytes(b)) => {
                json!(base64::engine::general_purpose::STANDARD.encode(b))
            }
            (Shape::Bool, Wire::Varint(v)) => json!(v != 0),
            // int64 fields are written as two's complement varints.
            (Shape::Int, Wire::Varint(v)) => json!(v as i64),
            (Shape::StrMap | Shape::BytesMap, Wire::Bytes(b)) => {
                let (key, value) = map_entry(b, matches!(def.shape, Shape::BytesMap))?;
                let entry = object.entry(def.name).or_insert_with(|| json!({}));
                if let Some(map) = entry.as_object_mut() {
                    map.insert(key, value);
                }
                continue;
            }
            (Shape::Message(inner), Wire::Bytes(b)) => Value::Object(message(b, inner)?),
            _ => return Err(format!("field {} has the wrong wire type", def.name)),
        };
        if def.repeated {
            let entry = object.entry(def.name).or_insert_with(|| json!([]));
            if let Some(items) = entry.as_array_mut() {
                items.push(value);
            }
        } else {
            object.insert(def.name.into(), value);
        }
    }
    Ok(object)
}

/// Whether a `Content-Type` is Kubernetes protobuf.
pub(crate) fn is_protobuf(content_type: &str) -> bool {
    content_type.starts_with("application/vnd.kubernetes.protobuf")
}

/// Decodes a protobuf request body into the JSON object it stands for.
pub(crate) fn decode(body: &[u8]) -> Result<Value, String> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or("the body does not start with k8s\\0")?;
    let unknown = message(envelope, UNKNOWN)?;
    let type_of = |field: &str| {
        unknown
            .get("typeMeta")
            .and_then(|t| t.get(field))
            .and_then(Value::as_str)
    };
    let (api_version, kind) = (
        type_of("apiVersion").unwrap_or_default(),
        type_of("kind").unwrap_or_default(),
    );
    let defs = match (api_version, kind) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Secret") => SECRET,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("v1" | "meta.k8s.io/v1", "DeleteOptions") => DELETE_OPTIONS,
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => ROLE_BINDING,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => SELF_SUBJECT_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => SELF_SUBJECT_RULES_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => TOKEN_REQUEST,
        _ => {
            return Err(format!(
                "{kind} ({api_version}) is not readable as protobuf here"
            ))
        }
    };
    // Protobuf leaves out empty fields: an object with every field at its default (the
    // DeleteOptions of a plain delete) comes without `raw`.
    let raw = match unknown.get("raw").and_then(Value::as_str) {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| format!("the envelope's object is not readable: {e}"))?,
        None => Vec::new(),
    };
    let mut object = message(&raw, defs)?;
    object.insert("apiVersion".into(), json!(api_version));
    object.insert("kind".into(), json!(kind));
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_field(number: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![
            (number << 3) | 2,
            u8::try_from(payload.len()).expect("short"),
        ];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn a_config_map_envelope_decodes_to_json() {
        let entry = [bytes_field(1, b"mode"), bytes_field(2, b"fast")].concat();
        let meta = [
            bytes_field(1, b"settings"),
            bytes_field(
                11,
                &[bytes_field(1, b"app"), bytes_field(2, b"web")].concat(),
            ),
        ]
        .concat();
        let raw = [bytes_field(1, &meta), bytes_field(2, &entry)].concat();
        let type_meta = [bytes_field(1, b"v1"), bytes_field(2, b"ConfigMap")].concat();
        let body = [
            MAGIC.to_vec(),
            bytes_field(1, &type_meta),
            bytes_field(2, &raw),
        ]
        .concat();
        assert_eq!(
            decode(&body).expect("decodes"),
            json!({"metadata": {"name": "settings", "labels": {"app": "web"}}, "data": {"mode": "fast"},
                   "apiVersion": "v1", "kind": "ConfigMap"})
        );
        assert!(decode(b"{}").is_err());
        let options = [bytes_field(1, b"v1"), bytes_field(2, b"DeleteOptions")].concat();
        let empty = [MAGIC.to_vec(), bytes_field(1, &options)].concat();
        assert_eq!(
            decode(&empty).expect("decodes"),
            json!({"apiVersion": "v1", "kind": "DeleteOptions"})
        );
        let deployment = [bytes_field(1, b"apps/v1"), bytes_field(2, b"Deployment")].concat();
        let body = [
            MAGIC.to_vec(),
            bytes_field(1, &deployment),
            bytes_field(2, b""),
        ]
        .concat();
        assert_eq!(
            decode(&body).expect_err("refused"),
            "Deployment (apps/v1) is not readable as protobuf here"
        );
    }
}
