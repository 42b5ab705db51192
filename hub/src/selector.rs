//! Label selectors (parsed as the renderer parses kustomize targets) and field selectors
//! from list and watch query strings.

use std::collections::BTreeMap;

use serde_json::Value;

use fleet_objects::selector::LabelRequirements;

use crate::status::{ApiError, ApiResult};
use crate::stored::Stored;

/// The `labelSelector` and `fieldSelector` of a list or watch.
pub struct Selectors {
    labels: LabelSelector,
    fields: FieldSelector,
    /// The values the label selector requires, each as a JSON string (`"web"`): labels
    /// written without escapes hold each of them, or cannot match.
    required: Vec<String>,
}

impl Selectors {
    /// Parses both from a call's query parameters (`param` reads one), for objects of
    /// `kind` (`custom` for a custom resource).
    pub fn parse<'a>(
        param: impl Fn(&str) -> Option<&'a str>,
        kind: &str,
        custom: bool,
    ) -> ApiResult<Self> {
        let labels = LabelSelector::parse(param("labelSelector").unwrap_or_default())?;
        let required = (labels.0.required_values())
            .map(|value| Value::from(value).to_string())
            .collect();
        Ok(Self {
            labels,
            fields: FieldSelector::parse(param("fieldSelector").unwrap_or_default(), kind, custom)?,
            required,
        })
    }

    /// Whether there is neither selector: every object is selected.
    pub fn is_empty(&self) -> bool {
        self.labels.0.is_empty() && self.fields.terms.is_empty()
    }

    /// Whether `object` satisfies both.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    /// Whether a stored object satisfies both. It is read only as far as the selectors
    /// need: not at all without one, its labels alone for a label selector alone, its
    /// name, namespace and labels for selectors of those alone.
    pub fn selects(&self, object: &Stored) -> bool {
        if self.is_empty() {
            return true;
        }
        if self.fields.terms.is_empty() {
            let Some(text) = object.labels() else {
                return self.labels.0.matches(None);
            };
            if !self.may_match(text) {
                return false;
            }
            // Labels are read in place; only a label written with escapes needs a tree.
            if let Ok(labels) = serde_json::from_slice::<BTreeMap<&str, &str>>(text) {
                return (self.labels.0).matches_labels(|key| labels.get(key).copied());
            }
            return serde_json::from_slice::<Value>(text)
                .is_ok_and(|labels| self.labels.0.matches(Some(&labels)));
        }
        let on_metadata = (self.fields.terms.iter())
            .all(|(field, _, _)| matches!(field.as_str(), "metadata.name" | "metadata.namespace"));
        let read = if on_metadata {
            serde_json::from_slice::<Head>(object.text())
                .map(|head| serde_json::json!({"metadata": head.metadata}))
        } else {
            serde_json::from_slice::<Value>(object.text())
        };
        read.is_ok_and(|o| self.matches(&o))
    }

    /// False when the text of an object's labels cannot satisfy the label selector: it was
    /// written without escapes and lacks a value the selector requires. A list of a
    /// release's Helm records passes over the other releases' records this way.
    fn may_match(&self, labels: &[u8]) -> bool {
        memchr::memchr(b'\\', labels).is_some()
            || (self.required.iter())
                .all(|value| memchr::memmem::find(labels, value.as_bytes()).is_some())
    }
}

/// What label and metadata field selectors read of an object; the rest is skipped.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    metadata: HeadMetadata,
}

#[derive(serde::Deserialize, serde::Serialize, Default)]
struct HeadMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    labels: Option<Value>,
}

/// A parsed `labelSelector`.
pub(crate) struct LabelSelector(LabelRequirements);

impl LabelSelector {
    /// Parses the query-string form: `a=b,c!=d,e in (x,y),f notin (z),g,!h`.
    pub(crate) fn parse(text: &str) -> ApiResult<Self> {
        LabelRequirements::parse(text)
            .map(Self)
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))
    }

    /// Whether an object's labels satisfy every requirement.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.0.matches(crate::meta::meta_field(object, "labels"))
    }
}

/// The fields a built-in kind may be selected by besides `metadata.name` and
/// `metadata.namespace`, as kube-apiserver registers them (`kubectl describe` lists Events
/// by `involvedObject.*`; Secrets are listed by `type`).
fn field_labels(kind: &str) -> &'static [&'static str] {
    match kind {
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Secret" => &["type"],
        "Pod" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Namespace" => &["status.phase"],
        "Node" => &["spec.unschedulable"],
        "ReplicaSet" | "ReplicationController" => &["status.replicas"],
        "Job" => &["status.successful"],
        "CertificateSigningRequest" => &["spec.signerName"],
        _ => &[],
    }
}

/// A parsed `fieldSelector`: `metadata.name`, `metadata.namespace`, and the fields the
/// kind registers, with `=`, `==`, `!=`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSelector {
    terms: Vec<(String, String, bool)>,
}

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y` for objects of built-in `kind`
    /// (custom resources: the metadata fields only).
    pub(crate) fn parse(text: &str, kind: &str, custom: bool) -> ApiResult<Self> {
        let extra = if custom { &[][..] } else { field_labels(kind) };
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
            if !matches!(field, "metadata.name" | "metadata.namespace") && !extra.contains(&field) {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push((field.to_string(), value.trim().to_string(), equal));
        }
        Ok(Self { terms })
    }

    /// Whether the object satisfies every term (a missing field reads as empty).
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, value, equal)| {
            let actual = field
                .split('.')
                .try_fold(object, |v, key| v.get(key))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            (actual == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_objects_are_selected_by_labels_metadata_and_other_fields() {
        let secret = Stored::new(&json!({"kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"owner": "helm"}},
            "data": {"tls.crt": "eA=="}}));
        let selects = |labels: &str, fields: &str| {
            let query = [("labelSelector", labels), ("fieldSelector", fields)];
            let param = |name: &str| query.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
            Selectors::parse(param, "Secret", false)
                .expect("parses")
                .selects(&secret)
        };
        assert!(selects("", ""));
        assert!(selects(
            "owner=helm",
            "metadata.name=a,metadata.namespace=ns"
        ));
        assert!(!selects("owner=other", ""));
        assert!(!selects("", "metadata.name=b"));
        assert!(selects("owner", "type=kubernetes.io/tls"));
        assert!(!selects("", "type=Opaque"));
        assert!(selects("owner in (helm),!name", ""));
        assert!(!selects("owner notin (helm)", ""));
        let unlabelled = Stored::new(&json!({"metadata": {"name": "b"}, "data": {}}));
        assert!(selected_by_labels(&unlabelled, "!owner"));
        assert!(!selected_by_labels(&unlabelled, "owner"));
        // Labels written with an escape (never valid on a write, but read all the same).
        let escaped = Stored::new(&json!({"metadata": {"name": "c",
            "labels": {"note": "a\"b", "owner": "helm"}}}));
        assert!(selected_by_labels(&escaped, "owner=helm,note"));
        assert!(!selected_by_labels(&escaped, "owner=other"));
    }

    #[test]
    fn a_value_the_selector_requires_is_looked_for_in_the_labels_text_first() {
        let record = |name: &str| {
            Stored::new(&json!({"metadata": {"name": name,
                "labels": {"name": name, "owner": "helm", "empty": ""}}}))
        };
        let (web, web2) = (record("web"), record("web-2"));
        assert!(selected_by_labels(&web, "owner=helm,name=web"));
        assert!(!selected_by_labels(&web2, "owner=helm,name=web"));
        assert!(selected_by_labels(&web2, "owner==helm,name in (web-2)"));
        assert!(!selected_by_labels(&web, "name in (web-2)"));
        assert!(selected_by_labels(&web, "empty="));
        assert!(!selected_by_labels(&web, "owner="));
        // A required value found as a key is not a match.
        assert!(!selected_by_labels(&web, "name=owner"));
        assert!(selected_by_labels(&web, "name in (web, web-2)"));
    }

    fn selected_by_labels(object: &Stored, labels: &str) -> bool {
        let param = |name: &str| (name == "labelSelector").then_some(labels);
        Selectors::parse(param, "Secret", false)
            .expect("parses")
            .selects(object)
    }

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
    fn field_selectors_know_metadata_and_the_kinds_own_fields() {
        let object = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(FieldSelector::parse("metadata.name=a", "ConfigMap", false)
            .expect("parses")
            .matches(&object));
        assert!(
            !FieldSelector::parse("metadata.namespace!=ns", "ConfigMap", false)
                .expect("parses")
                .matches(&object)
        );
        assert!(FieldSelector::parse("spec.nodeName=x", "ConfigMap", false).is_err());
        let event =
            json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "web"}});
        let pods = FieldSelector::parse(
            "involvedObject.kind=Pod,involvedObject.name=web",
            "Event",
            false,
        )
        .expect("parses");
        assert!(pods.matches(&event));
        let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"});
        assert!(
            FieldSelector::parse("type=kubernetes.io/tls", "Secret", false)
                .expect("parses")
                .matches(&secret)
        );
        assert!(FieldSelector::parse("type=x", "Widget", true).is_err());
        let unscheduled = json!({"metadata": {"name": "p"}});
        assert!(FieldSelector::parse("spec.nodeName=", "Pod", false)
            .expect("parses")
            .matches(&unscheduled));
    }
}
