//! Label selectors and field selectors from list and watch query strings.

use serde_json::Value;

use crate::status::{ApiError, ApiResult};

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed `labelSelector`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the query-string form: `a=b,c!=d,e in (x,y),f notin (z),g,!h`.
    pub fn parse(text: &str) -> ApiResult<Self> {
        let mut requirements = Vec::new();
        for part in split_outside_parens(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(Self { requirements })
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => label(k) == Some(v),
            Requirement::NotEquals(k, v) => label(k) != Some(v),
            Requirement::In(k, vs) => label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => !label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::DoesNotExist(k) => label(k).is_none(),
        })
    }
}

fn split_outside_parens(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn invalid(part: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to parse requirement: invalid label selector \"{part}\""
    ))
}

fn parse_requirement(part: &str) -> ApiResult<Requirement> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(key.trim().to_string()));
    }
    for (operator, negated) in [(" notin ", true), (" in ", false)] {
        if let Some((key, rest)) = part.split_once(operator) {
            let values = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| invalid(part))?
                .split(',')
                .map(|v| v.trim().to_string())
                .collect();
            let key = key.trim().to_string();
            return Ok(if negated {
                Requirement::NotIn(key, values)
            } else {
                Requirement::In(key, values)
            });
        }
    }
    if let Some((key, value)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(
            key.trim().into(),
            value.trim().into(),
        ));
    }
    if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Requirement::Equals(key.trim().into(), value.trim().into()));
    }
    if part.contains([' ', '(', ')']) {
        return Err(invalid(part));
    }
    Ok(Requirement::Exists(part.to_string()))
}

/// A parsed `fieldSelector`: `metadata.name` and `metadata.namespace` with `=`, `==`, `!=`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<(String, String, bool)>,
}

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y`.
    pub fn parse(text: &str) -> ApiResult<Self> {
        let mut terms = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, value, equal) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, v, true)
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: '{part}'")));
            };
            let field = field.trim();
            if !matches!(field, "metadata.name" | "metadata.namespace") {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push((field.to_string(), value.trim().to_string(), equal));
        }
        Ok(Self { terms })
    }

    /// Whether the object satisfies every term.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, value, equal)| {
            let actual = match field.as_str() {
                "metadata.name" => crate::meta::meta_str(object, "name"),
                _ => crate::meta::meta_str(object, "namespace"),
            }
            .unwrap_or_default();
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_cover_every_operator() {
        let object = json!({"metadata": {"labels": {"env": "prod", "tier": "web"}}});
        let yes = [
            "env=prod",
            "env==prod,tier",
            "env in (dev, prod)",
            "tier notin (db)",
            "!missing",
            "env!=dev",
        ];
        for text in yes {
            assert!(
                LabelSelector::parse(text).expect("parses").matches(&object),
                "{text}"
            );
        }
        let no = [
            "env=dev",
            "missing",
            "env in (dev)",
            "env notin (prod)",
            "!env",
        ];
        for text in no {
            assert!(
                !LabelSelector::parse(text).expect("parses").matches(&object),
                "{text}"
            );
        }
        assert!(LabelSelector::parse("env in dev").is_err());
    }

    #[test]
    fn field_selectors_know_name_and_namespace_only() {
        let object = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(FieldSelector::parse("metadata.name=a")
            .expect("parses")
            .matches(&object));
        assert!(!FieldSelector::parse("metadata.namespace!=ns")
            .expect("parses")
            .matches(&object));
        assert!(FieldSelector::parse("spec.nodeName=x").is_err());
    }
}
