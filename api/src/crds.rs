//! CustomResourceDefinitions of the Fleet kinds, generated from the Rust types.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{
    Bundle, BundleDeployment, BundleNamespaceMapping, Cluster, ClusterGroup, ClusterRegistration,
    ClusterRegistrationToken, Content, GitRepo, GitRepoRestriction, HelmOp, Policy, Schedule,
};

/// Every Fleet CRD, in a stable order, paired with the file name it is written to.
pub fn all() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        ("gitrepos.yaml", GitRepo::crd()),
        ("bundles.yaml", Bundle::crd()),
        ("bundledeployments.yaml", BundleDeployment::crd()),
        ("clusters.yaml", Cluster::crd()),
        ("clustergroups.yaml", ClusterGroup::crd()),
        ("contents.yaml", Content::crd()),
        (
            "clusterregistrationtokens.yaml",
            ClusterRegistrationToken::crd(),
        ),
        ("clusterregistrations.yaml", ClusterRegistration::crd()),
        ("policies.yaml", Policy::crd()),
        ("helmops.yaml", HelmOp::crd()),
        ("schedules.yaml", Schedule::crd()),
        ("gitreporestrictions.yaml", GitRepoRestriction::crd()),
        (
            "bundlenamespacemappings.yaml",
            BundleNamespaceMapping::crd(),
        ),
    ]
}

/// Renders one CRD as the YAML document written to `deploy/crds/`.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml_ng::Error> {
    serde_yaml_ng::to_string(crd)
}
