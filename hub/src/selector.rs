//! Label selectors (parsed as the renderer parses kustomize targets) and field selectors
//! from list and watch query strings.

use serde_json::Value;

use fleet_objects::selector::LabelRequirements;

use crate::status::{ApiError, ApiResult};

/// A parsed `labelSelector`.
pub struct LabelSelector(LabelRequirements);

impl LabelSelector {
    /// Parses the query-string form: `a=b,c!=d,e in (x,y),f notin (z),g,!h`.
    pub fn parse(text: &str) -> ApiResult<Self> {
        LabelRequirements::parse(text)
            .map(Self)
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.matches(object.pointer("/metadata/labels"))
    }
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
