//! BundleNamespaceMappings, as Rancher Fleet reads them: the namespaces whose Clusters a
//! Bundle may target beside its own. A mapping counts for the Bundles of its own
//! namespace; one with a selector missing matches nothing, one with an invalid selector is
//! skipped, and an empty selector matches everything.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fleet_api::{Bundle, BundleNamespaceMapping, LabelSelector};
use fleet_objects::selector::{label_key_problem, label_value_problem, matches_selector};
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;

/// The namespaces whose Clusters `bundle` may target: its own, and those whose labels
/// the mappings of its namespace (`mappings`) select for it, among `namespaces`.
pub fn namespaces_for_bundle(
    bundle: &Bundle,
    mappings: &[Arc<BundleNamespaceMapping>],
    namespaces: &[Arc<Namespace>],
) -> BTreeSet<String> {
    let own = bundle.namespace().unwrap_or_default();
    let mut found = BTreeSet::from([own.clone()]);
    let bundle_labels = bundle.labels();
    for mapping in mappings {
        if mapping.namespace().as_deref() != Some(own.as_str()) {
            continue;
        }
        let Some((bundles, selected)) = selectors(mapping) else {
            continue;
        };
        if !matches_selector(bundles, bundle_labels) {
            continue;
        }
        let matching = namespaces
            .iter()
            .filter(|namespace| matches_selector(selected, namespace.labels()))
            .map(|namespace| namespace.name_any());
        found.extend(matching);
    }
    found
}

/// The two selectors of a mapping that can match anything: both set and both valid.
fn selectors(mapping: &BundleNamespaceMapping) -> Option<(&LabelSelector, &LabelSelector)> {
    let bundles = mapping.selectors.bundle_selector.as_ref()?;
    let namespaces = mapping.selectors.namespace_selector.as_ref()?;
    for selector in [bundles, namespaces] {
        if let Some(problem) = selector_problem(selector) {
            tracing::warn!(
                mapping = %mapping.name_any(),
                namespace = %mapping.namespace().unwrap_or_default(),
                "BundleNamespaceMapping skipped: {problem}"
            );
            return None;
        }
    }
    Some((bundles, namespaces))
}

/// Why Kubernetes would refuse `selector`, if it would.
fn selector_problem(selector: &LabelSelector) -> Option<String> {
    let labels: &BTreeMap<String, String> = &selector.match_labels;
    for (key, value) in labels {
        if let Some(problem) = label_key_problem(key).or_else(|| label_value_problem(value)) {
            return Some(problem);
        }
    }
    for expression in &selector.match_expressions {
        if let Some(problem) = label_key_problem(&expression.key) {
            return Some(problem);
        }
        let values = expression.values.len();
        let fits = match expression.operator.as_str() {
            "In" | "NotIn" => values > 0,
            "Exists" | "DoesNotExist" => values == 0,
            other => return Some(format!("unknown operator `{other}`")),
        };
        if !fits {
            return Some(format!(
                "operator `{}` of `{}` with {values} values",
                expression.operator, expression.key
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundle(namespace: &str, labels: serde_json::Value) -> Bundle {
        serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
            "metadata": {"name": "app", "namespace": namespace, "labels": labels},
            "spec": {},
        }))
        .expect("a bundle")
    }

    fn mapping(namespace: &str, selectors: serde_json::Value) -> Arc<BundleNamespaceMapping> {
        let mut object = json!({"metadata": {"name": "mapping", "namespace": namespace}});
        if let (Some(object), Some(selectors)) = (object.as_object_mut(), selectors.as_object()) {
            object.extend(selectors.clone());
        }
        Arc::new(serde_json::from_value(object).expect("a mapping"))
    }

    fn namespace(name: &str, labels: serde_json::Value) -> Arc<Namespace> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                .expect("a namespace"),
        )
    }

    fn found(bundle: &Bundle, mappings: &[Arc<BundleNamespaceMapping>]) -> Vec<String> {
        let namespaces = [
            namespace(
                "project1",
                json!({"kubernetes.io/metadata.name": "project1"}),
            ),
            namespace("fleet-default", json!({"workspace": "prod"})),
            namespace("fleet-local", json!({"workspace": "dev"})),
        ];
        namespaces_for_bundle(bundle, mappings, &namespaces)
            .into_iter()
            .collect()
    }

    #[test]
    fn a_mapping_of_the_bundles_namespace_adds_the_namespaces_it_selects() {
        let team_one = bundle("project1", json!({"team": "one"}));
        let prod = mapping(
            "project1",
            json!({"bundleSelector": {"matchLabels": {"team": "one"}},
                   "namespaceSelector": {"matchLabels": {"workspace": "prod"}}}),
        );
        assert_eq!(
            found(&team_one, std::slice::from_ref(&prod)),
            ["fleet-default", "project1"]
        );
        // Not the bundle it selects, or a mapping of another namespace: its own only.
        assert_eq!(
            found(
                &bundle("project1", json!({"team": "two"})),
                std::slice::from_ref(&prod)
            ),
            ["project1"]
        );
        assert_eq!(
            found(&bundle("project2", json!({"team": "one"})), &[prod]),
            ["project2"]
        );
    }

    #[test]
    fn a_missing_selector_matches_nothing_and_an_empty_one_everything() {
        let any = bundle("project1", json!({}));
        let half = mapping("project1", json!({"namespaceSelector": {}}));
        assert_eq!(found(&any, &[half]), ["project1"]);
        let all = mapping(
            "project1",
            json!({"bundleSelector": {}, "namespaceSelector": {}}),
        );
        assert_eq!(
            found(&any, &[all]),
            ["fleet-default", "fleet-local", "project1"]
        );
    }

    #[test]
    fn an_invalid_selector_is_skipped_and_mappings_add_up() {
        let any = bundle("project1", json!({}));
        let invalid = mapping(
            "project1",
            json!({"bundleSelector": {"matchExpressions": [{"key": "team", "operator": "NotIn"}]},
                   "namespaceSelector": {}}),
        );
        let dev = mapping(
            "project1",
            json!({"bundleSelector": {},
                   "namespaceSelector": {"matchExpressions": [{"key": "workspace", "operator": "In", "values": ["dev"]}]}}),
        );
        assert_eq!(found(&any, &[invalid, dev]), ["fleet-local", "project1"]);
    }
}
