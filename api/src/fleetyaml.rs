//! The `fleet.yaml` file that turns a directory into a bundle.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BundleDeploymentOptions, BundleRef, BundleTarget, GitTarget, RolloutStrategy};

/// The contents of a `fleet.yaml`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetYaml {
    /// Bundle name; derived from the GitRepo and path when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Labels set on the Bundle, usable in `dependsOn.selector`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Deployment options for every target.
    #[serde(flatten)]
    pub options: BundleDeploymentOptions,
    /// Stop deploying new versions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// How new versions roll out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_strategy: Option<RolloutStrategy>,
    /// Bundles that must be ready first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<BundleRef>,
    /// Targets of the bundle itself (fleet.yaml holds a Bundle's spec, as in Fleet): they
    /// select clusters as the GitRepo's do, within its restrictions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<BundleTarget>,
    /// Per-target customizations; the first matching one wins, or under
    /// `targetCustomizationMode: AllMatches` every match is merged in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_customizations: Vec<BundleTarget>,
    /// Whether the first matching customization applies, or all of them.
    /// Kept as written (Fleet's Bundle carries an explicit `FirstMatch`); none is
    /// `FirstMatch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_customization_mode: Option<TargetCustomizationMode>,
    /// Targets replacing the GitRepo's for this bundle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub override_targets: Vec<GitTarget>,
    /// Image scan definitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_scans: Vec<ImageScan>,
}

/// How a cluster's matching target customizations combine.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum TargetCustomizationMode {
    /// The first customization that selects the cluster applies (Fleet's rule).
    #[default]
    FirstMatch,
    /// Every customization that selects the cluster applies, merged in order: later
    /// ones override earlier ones field by field, and any `doNotDeploy` holds.
    AllMatches,
}

impl TargetCustomizationMode {
    /// Whether this is the default, `FirstMatch`.
    pub fn is_first_match(&self) -> bool {
        *self == Self::FirstMatch
    }
}

/// An image scan entry of fleet.yaml.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageScan {
    /// Name used in `# {"$imagescan": name}` markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Image repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Tag policy (semver, alphabetical, numerical).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::preserve_unknown_fields")]
    pub tag_policy: Option<crate::FreeForm>,
    /// Scan interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Secret with registry credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
}
