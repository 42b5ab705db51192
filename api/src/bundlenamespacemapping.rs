//! The BundleNamespaceMapping kind: Rancher Fleet's way to let the Bundles of one
//! namespace target Clusters registered in other namespaces. Like Fleet's, it has no spec:
//! its two selectors sit beside the metadata.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::LabelSelector;

/// In its own namespace, maps the Bundles `bundle_selector` selects to the Clusters of
/// the namespaces `namespace_selector` selects. A missing selector on either side makes
/// the mapping match nothing; an empty one matches everything.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct BundleNamespaceMapping {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// What the mapping selects.
    #[serde(flatten)]
    pub selectors: BundleNamespaceMappingSelectors,
}

/// The fields of a [`BundleNamespaceMapping`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleNamespaceMappingSelectors {
    /// The Bundles of the mapping's namespace it maps, by their labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_selector: Option<LabelSelector>,
    /// The namespaces whose Clusters those Bundles may target, by the Namespaces' labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
}

specless_resource!(
    BundleNamespaceMapping,
    "BundleNamespaceMapping",
    "bundlenamespacemappings",
    k8s_openapi::NamespaceResourceScope
);

impl BundleNamespaceMapping {
    /// The CRD of the kind (Fleet's has no columns).
    pub fn crd() -> CustomResourceDefinition {
        crate::specless::crd::<BundleNamespaceMappingSelectors>(crate::specless::Kind {
            kind: "BundleNamespaceMapping",
            plural: "bundlenamespacemappings",
            description: "Lets the Bundles of a namespace target Clusters in other namespaces.",
            columns: &[],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapping of Fleet's multi-cluster e2e asset, and one with no selectors (its dump
    /// test's): absent selectors stay absent, as they decide between nothing and all.
    #[test]
    fn reads_fleets_mappings() {
        let mapping: BundleNamespaceMapping = serde_json::from_value(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1",
            "kind": "BundleNamespaceMapping",
            "metadata": {"name": "mapping", "namespace": "project1"},
            "bundleSelector": {"matchLabels": {"team": "one"}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "fleet-default"}},
        }))
        .expect("Fleet's mapping");
        let selector = mapping
            .selectors
            .bundle_selector
            .expect("a bundle selector");
        assert_eq!(
            selector.match_labels.get("team").map(String::as_str),
            Some("one")
        );
        let empty: BundleNamespaceMapping = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "my-bnm", "namespace": "test-bnm"},
            "namespaceSelector": {},
        }))
        .expect("a mapping without selectors");
        assert_eq!(empty.selectors.bundle_selector, None);
        assert_eq!(
            empty.selectors.namespace_selector,
            Some(LabelSelector::default())
        );
    }
}
