//! Request bodies: JSON, or YAML for server-side apply, within a size limit.

use serde_json::Value;

use crate::status::{ApiError, ApiResult};

/// The largest request body the hub accepts (as kube-apiserver's default, 3 MiB).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

/// Parses a JSON body.
pub(crate) fn parse_json(bytes: &[u8]) -> ApiResult<Value> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    crate::json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized: invalid JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    })
}

fn starts_an_object(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Whether `bytes` are one JSON object (checked without building it).
pub(crate) fn is_json_object(bytes: &[u8]) -> bool {
    starts_an_object(bytes) && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// Parses a body that may be YAML (apply patches) or JSON.
pub(crate) fn parse_yaml_or_json(bytes: &[u8]) -> ApiResult<Value> {
    // JSON (what clients send, and what a YAML body becomes once read) takes the fast path.
    if starts_an_object(bytes) {
        if let Ok(value @ Value::Object(_)) = crate::json::from_slice(bytes) {
            return Ok(value);
        }
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
    use fleet_objects::yaml_depth::{too_deep, MAX_FLOW_DEPTH};
    if let Some((line, column)) = too_deep(text, MAX_FLOW_DEPTH) {
        return Err(ApiError::bad_request(format!(
            "error decoding YAML at line {line} column {column}: nested more than {MAX_FLOW_DEPTH} levels deep"
        )));
    }
    let text = fleet_objects::yaml_octal::rewrite(text);
    let value = fleet_objects::yaml_value::read_document(&text).map_err(|e| {
        let place = e
            .location()
            .map(|l| format!(" at line {} column {}", l.line(), l.column()))
            .unwrap_or_default();
        ApiError::bad_request(format!("error decoding YAML{place}: {e}"))
    })?;
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be an object"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_objects_are_told_from_yaml_and_other_json() {
        assert!(is_json_object(b" {\"a\": [1, {\"b\": null}]}"));
        assert!(!is_json_object(b"{a: b}"), "a YAML flow mapping");
        assert!(!is_json_object(b"[1]"));
        assert!(!is_json_object(b"{\"a\": 1"));
    }

    #[test]
    fn deeply_nested_yaml_is_refused_before_parsing() {
        let body = format!(
            "kind: ConfigMap\nextra: {}{}\n",
            "[".repeat(60_000),
            "]".repeat(60_000)
        );
        let started = std::time::Instant::now();
        let refused = parse_yaml_or_json(body.as_bytes()).expect_err("too deep");
        assert!(
            refused.message.contains("nested more than"),
            "{}",
            refused.message
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn yaml_bodies_read_legacy_octal_as_kube_apiserver_does() {
        let body = b"kind: ConfigMap\nmode: 0755\nquoted: \"0755\"\n";
        let value = parse_yaml_or_json(body).expect("parses");
        assert_eq!(value["mode"], 493);
        assert_eq!(value["quoted"], "0755");
    }

    #[test]
    fn yaml_whose_aliases_expand_beyond_the_budget_is_refused() {
        // A 64 KiB anchor aliased 2,000 times: a 72 KiB body that stands for 128 MiB.
        let body = format!(
            "kind: ConfigMap\na: &a {}\nb: [{}]\n",
            "x".repeat(64 * 1024),
            "*a, ".repeat(2000)
        );
        let refused = parse_yaml_or_json(body.as_bytes()).expect_err("expands too far");
        assert!(
            refused.message.contains("aliases expand"),
            "{}",
            refused.message
        );
    }
}
