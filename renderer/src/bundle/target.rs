//! Cluster matching: label selectors, cluster groups and names, as Fleet matches targets.

use std::collections::BTreeMap;

use fleet_api::{BundleTarget, TargetCustomizationMode};
use fleet_objects::selector::matches_selector;

/// What the renderer knows of a cluster it renders for (serialisable, so that it can travel
/// with a render the agent does).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ClusterInfo {
    /// Cluster name.
    pub name: String,
    /// Namespace holding the Cluster object.
    pub namespace: String,
    /// Cluster labels.
    pub labels: BTreeMap<String, String>,
    /// Groups the cluster belongs to, with the groups' labels.
    pub groups: Vec<(String, BTreeMap<String, String>)>,
    /// Cluster annotations (`.ClusterAnnotations` in `${ }` templates).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// `spec.templateValues` (`.ClusterValues`).
    #[serde(default)]
    pub template_values: serde_json::Map<String, serde_json::Value>,
}

impl ClusterInfo {
    /// The clusters a bundle is checked against before it ships: one without labels, and
    /// one selected by each of its customizations.
    pub fn checks_for(fleet: &fleet_api::FleetYaml) -> Vec<Self> {
        let mut clusters = vec![Self::default()];
        clusters.extend(fleet.target_customizations.iter().map(Self::selected_by));
        clusters
    }

    /// A made-up cluster that `target`'s name, match labels and group select, for checking
    /// that a customization renders (`fleet lint`, gitjob).
    pub fn selected_by(target: &BundleTarget) -> Self {
        Self {
            name: target
                .cluster_name
                .clone()
                .unwrap_or_else(|| "check".into()),
            namespace: "fleet-default".into(),
            labels: target
                .cluster_selector
                .as_ref()
                .map(|s| s.match_labels.clone())
                .unwrap_or_default(),
            groups: target
                .cluster_group
                .iter()
                .map(|g| (g.clone(), BTreeMap::new()))
                .collect(),
            ..Self::default()
        }
    }

    /// Whether a target selects this cluster: every criterion it sets must hold, and a
    /// target that sets none matches nothing (as in Fleet).
    pub fn matches(&self, target: &BundleTarget) -> bool {
        let mut any = false;
        if let Some(name) = &target.cluster_name {
            any = true;
            if *name != self.name {
                return false;
            }
        }
        if let Some(selector) = &target.cluster_selector {
            any = true;
            if !matches_selector(selector, &self.labels) {
                return false;
            }
        }
        if let Some(group) = &target.cluster_group {
            any = true;
            if !self.groups.iter().any(|(g, _)| g == group) {
                return false;
            }
        }
        if let Some(selector) = &target.cluster_group_selector {
            any = true;
            if !self
                .groups
                .iter()
                .any(|(_, l)| matches_selector(selector, l))
            {
                return false;
            }
        }
        any
    }

    /// The first target customization that selects this cluster.
    pub fn first_match<'t>(&self, targets: &'t [BundleTarget]) -> Option<&'t BundleTarget> {
        targets.iter().find(|t| self.matches(t))
    }

    /// The customizations that apply to this cluster, in order: the first match under
    /// `FirstMatch`, every match under `AllMatches`.
    pub fn customizations<'t>(
        &self,
        targets: &'t [BundleTarget],
        mode: TargetCustomizationMode,
    ) -> Vec<&'t BundleTarget> {
        match mode {
            TargetCustomizationMode::FirstMatch => self.first_match(targets).into_iter().collect(),
            TargetCustomizationMode::AllMatches => {
                targets.iter().filter(|t| self.matches(t)).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::LabelSelector;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn first_matching_customization_wins() {
        let by_env = |name: &str, env: &str| BundleTarget {
            name: Some(name.into()),
            cluster_selector: Some(LabelSelector {
                match_labels: labels(&[("env", env)]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let targets = vec![
            by_env("first", "prod"),
            by_env("second", "prod"),
            BundleTarget {
                name: Some("by-name".into()),
                cluster_name: Some("c1".into()),
                ..Default::default()
            },
            BundleTarget {
                name: Some("by-group".into()),
                cluster_group: Some("g".into()),
                ..Default::default()
            },
        ];
        let prod = ClusterInfo {
            name: "c9".into(),
            labels: labels(&[("env", "prod")]),
            ..Default::default()
        };
        assert_eq!(
            prod.first_match(&targets).and_then(|t| t.name.as_deref()),
            Some("first")
        );
        let named = ClusterInfo {
            name: "c1".into(),
            ..Default::default()
        };
        assert_eq!(
            named.first_match(&targets).and_then(|t| t.name.as_deref()),
            Some("by-name")
        );
        let grouped = ClusterInfo {
            name: "x".into(),
            groups: vec![("g".into(), BTreeMap::new())],
            ..Default::default()
        };
        assert_eq!(
            grouped
                .first_match(&targets)
                .and_then(|t| t.name.as_deref()),
            Some("by-group")
        );
        assert!(ClusterInfo::default().first_match(&targets).is_none());
    }
}
