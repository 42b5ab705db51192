//! Object metadata conventions: names, uids, timestamps, resourceVersion, generation.

use serde_json::{json, Map, Value};

use crate::status::Cause;

thread_local! {
    /// The second [`now`] last formatted on this thread, and its text: every write stamps
    /// its managedFields entry, thousands of times a second.
    static FORMATTED: std::cell::RefCell<(i64, String)> =
        const { std::cell::RefCell::new((i64::MIN, String::new())) };
}

/// The current time as RFC 3339 in UTC with second precision, as Kubernetes writes it.
pub(crate) fn now() -> String {
    let now = jiff::Timestamp::now();
    FORMATTED.with_borrow_mut(|(second, text)| {
        if *second != now.as_second() {
            *second = now.as_second();
            *text = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        }
        text.clone()
    })
}

/// A new object uid.
pub(crate) fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The metadata map of an object, created if missing.
pub(crate) fn metadata_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = object.as_object_mut()?;
    map.entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// A field of `metadata` (looked up directly: `Value::pointer` allocates for every step).
pub(crate) fn meta_field<'a>(object: &'a Value, field: &str) -> Option<&'a Value> {
    object.get("metadata")?.get(field)
}

/// A string field of `metadata`.
pub(crate) fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    meta_field(object, field)?.as_str()
}

/// Sets `metadata.resourceVersion`.
pub(crate) fn set_resource_version(object: &mut Value, rv: u64) {
    if let Some(meta) = metadata_mut(object) {
        meta.insert("resourceVersion".into(), json!(rv.to_string()));
    }
}

/// `metadata.generation`, zero when absent.
pub(crate) fn generation(object: &Value) -> i64 {
    meta_field(object, "generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Whether the object has finalizers left.
pub(crate) fn has_finalizers(object: &Value) -> bool {
    meta_field(object, "finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// Whether the object is being deleted.
pub(crate) fn is_deleting(object: &Value) -> bool {
    meta_field(object, "deletionTimestamp").is_some()
}

/// Why `name` is not a DNS-1123 subdomain (most kinds), or `None` if it is one.
pub(crate) fn subdomain_problem(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    // As Kubernetes checks it: the whole name is bounded, its dot-separated parts are not
    // (a content id `s-<sha256>` is 66 characters).
    let labels_ok = name.split('.').all(label_shaped);
    (!labels_ok).then(|| {
        format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case \
             alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
             character (e.g. 'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    })
}

/// Why `name` is not a DNS-1123 label (namespaces, services), or `None` if it is one.
pub(crate) fn label_problem(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some(format!(
            "Invalid value: \"{name}\": must be no more than 63 characters"
        ));
    }
    (!label_ok(name)).then(|| {
        format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case \
             alphanumeric characters or '-', and must start and end with an alphanumeric \
             character (e.g. 'my-name',  or '123-abc', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    })
}

fn label_ok(label: &str) -> bool {
    label.len() <= 63 && label_shaped(label)
}

/// Lower-case alphanumerics and `-`, starting and ending with an alphanumeric.
fn label_shaped(label: &str) -> bool {
    let bytes = label.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

/// How a kind's names are validated, as Kubernetes validates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// A DNS-1123 label (namespaces, services).
    Label,
    /// A DNS-1123 subdomain (most kinds).
    Subdomain,
    /// Any path segment (RBAC roles and bindings: `system:controller:x`).
    PathSegment,
}

impl NameRule {
    /// The rule for a built-in kind of `group` (custom resources use subdomains).
    pub(crate) fn of(group: &str, kind: &str, custom: bool) -> Self {
        match (custom, group, kind) {
            (false, "", "Namespace" | "Service") => NameRule::Label,
            (false, "rbac.authorization.k8s.io", _) => NameRule::PathSegment,
            _ => NameRule::Subdomain,
        }
    }
}

/// Why `name` cannot be a path segment (`.`, `..`, or a `/` or `%` in it), or `None`.
pub(crate) fn path_segment_problem(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("Invalid value: \"{name}\": may not be '{name}'"));
    }
    ["/", "%"]
        .iter()
        .find(|bad| name.contains(*bad))
        .map(|bad| format!("Invalid value: \"{name}\": may not contain '{bad}'"))
}

/// The name causes for an object of a kind whose names follow `rule`.
pub(crate) fn name_causes(name: &str, rule: NameRule) -> Vec<Cause> {
    let problem = if name.is_empty() {
        Some("Required value: name or generateName is required".to_string())
    } else {
        match rule {
            NameRule::Label => label_problem(name),
            NameRule::Subdomain => subdomain_problem(name),
            NameRule::PathSegment => path_segment_problem(name),
        }
    };
    problem
        .map(|message| Cause {
            kind: if name.is_empty() {
                "FieldValueRequired"
            } else {
                "FieldValueInvalid"
            }
            .into(),
            message,
            field: "metadata.name".into(),
        })
        .into_iter()
        .collect()
}

/// The most bytes of annotations (keys and values) an object may carry, as in Kubernetes.
pub(crate) const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

/// What is wrong with an object's labels and annotations, as Kubernetes validates them:
/// label keys and values, annotation keys, and the total size of the annotations. (Every
/// field a client controls is bounded: a label value cannot carry megabytes.)
pub(crate) fn label_and_annotation_causes(object: &Value) -> Vec<Cause> {
    use fleet_objects::selector::{label_key_problem, label_value_problem};
    let invalid = |field: String, message: String| Cause {
        kind: "FieldValueInvalid".into(),
        message,
        field,
    };
    let mut causes = Vec::new();
    let map = |field: &str| meta_field(object, field).and_then(Value::as_object);
    for (key, value) in map("labels").into_iter().flatten() {
        let problem = label_key_problem(key)
            .or_else(|| label_value_problem(value.as_str().unwrap_or_default()));
        if let Some(problem) = problem {
            causes.push(invalid(format!("metadata.labels[{key}]"), problem));
        }
    }
    let mut annotation_bytes = 0;
    for (key, value) in map("annotations").into_iter().flatten() {
        annotation_bytes += key.len() + value.as_str().map_or(0, str::len);
        if let Some(problem) = label_key_problem(&key.to_ascii_lowercase()) {
            let problem = problem.replace("label key", "annotation key");
            causes.push(invalid(format!("metadata.annotations[{key}]"), problem));
        }
    }
    if annotation_bytes > MAX_ANNOTATION_BYTES {
        causes.push(Cause {
            kind: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {MAX_ANNOTATION_BYTES} bytes"),
            field: "metadata.annotations".into(),
        });
    }
    causes
}

/// A random suffix for `generateName`, five characters as Kubernetes uses.
pub(crate) fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// A human duration as kubectl prints ages: `45s`, `5m`, `3h`, `2d`.
pub(crate) fn human_age(timestamp: &str) -> String {
    let Ok(then) = timestamp.parse::<jiff::Timestamp>() else {
        return "<invalid>".into();
    };
    let seconds = jiff::Timestamp::now().as_second() - then.as_second();
    let seconds = seconds.max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 600 && s % 60 == 0 => format!("{}m", s / 60),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 8 * 3600 && s % 3600 < 60 => format!("{}h", s / 3600),
        s if s < 8 * 3600 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s if s < 8 * 86400 => format!("{}d{}h", s / 86400, (s % 86400) / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_annotations_are_bounded_as_kubernetes_bounds_them() {
        let fine = json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "empty": ""},
                                       "annotations": {"Example.com/Note": "any text at all"}}});
        assert!(label_and_annotation_causes(&fine).is_empty());
        let long = "x".repeat(64);
        let bad = json!({"metadata": {"labels": {"ok": long, "-bad": "v", "Upper.Case/x": "v"},
                                      "annotations": {"a b": "v", "big": "y".repeat(MAX_ANNOTATION_BYTES)}}});
        let fields: Vec<String> = label_and_annotation_causes(&bad)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "metadata.labels[ok]",
                "metadata.labels[-bad]",
                "metadata.labels[Upper.Case/x]",
                "metadata.annotations[a b]",
                "metadata.annotations"
            ]
        );
    }

    #[test]
    fn names_follow_dns_1123() {
        assert!(subdomain_problem("my-app.v1").is_none());
        assert!(subdomain_problem("My_App").is_some());
        assert!(subdomain_problem("-lead").is_some());
        assert!(label_problem("a.b").is_some());
        assert!(label_problem(&"x".repeat(64)).is_some());
        // Subdomain parts are not limited to 63 characters (Kubernetes' IsDNS1123Subdomain).
        assert!(subdomain_problem(&format!("s-{}", "a".repeat(64))).is_none());
        assert!(subdomain_problem(&"x".repeat(254)).is_some());
        assert_eq!(
            name_causes("", NameRule::Subdomain)[0].kind,
            "FieldValueRequired"
        );
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        assert_eq!(human_age("not a time"), "<invalid>");
        let an_hour_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(3_600);
        assert_eq!(human_age(&an_hour_ago.to_string()), "60m");
    }
}
