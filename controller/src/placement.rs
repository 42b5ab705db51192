//! Which clusters a Bundle goes to: its targets select clusters by name, labels, group or
//! group labels, and its target restrictions (the GitRepo's targets) must allow them too.

use fleet_api::{Bundle, BundleTarget, Cluster, ClusterGroup, FleetYaml};
use fleet_objects::selector::matches_selector;
use fleet_renderer::bundle::ClusterInfo;
use kube::ResourceExt;

/// What the renderer needs to know of `cluster`: its name, labels, and the groups (of
/// `groups`, in its namespace) whose selector takes it in.
pub fn cluster_info(cluster: &Cluster, groups: &[ClusterGroup]) -> ClusterInfo {
    let labels = cluster.labels().clone();
    let namespace = cluster.namespace().unwrap_or_default();
    let member_of = groups
        .iter()
        .filter(|g| g.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|g| {
            g.spec
                .selector
                .as_ref()
                .is_some_and(|s| matches_selector(s, &labels))
        })
        .map(|g| (g.name_any(), g.labels().clone()))
        .collect();
    ClusterInfo {
        name: cluster.name_any(),
        namespace,
        labels,
        groups: member_of,
    }
}

/// Whether `bundle` goes to `cluster`: some target selects it, and the restrictions, if
/// any, allow it.
pub fn is_targeted(bundle: &Bundle, cluster: &ClusterInfo) -> bool {
    let selected = bundle.spec.targets.iter().any(|t| cluster.matches(t));
    let restrictions = &bundle.spec.target_restrictions;
    let allowed = restrictions.is_empty()
        || restrictions.iter().any(|r| {
            cluster.matches(&BundleTarget {
                name: r.name.clone(),
                cluster_name: r.cluster_name.clone(),
                cluster_selector: r.cluster_selector.clone(),
                cluster_group: r.cluster_group.clone(),
                cluster_group_selector: r.cluster_group_selector.clone(),
                ..BundleTarget::default()
            })
        });
    selected && allowed
}

/// The bundle as the renderer reads a fleet.yaml: its options, and its targets as the
/// customizations tried in order.
pub fn as_fleet_yaml(bundle: &Bundle) -> FleetYaml {
    FleetYaml {
        options: bundle.spec.options.clone(),
        target_customizations: bundle.spec.targets.clone(),
        ..FleetYaml::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::{BundleSpec, BundleTargetRestriction, ClusterGroupSpec, LabelSelector};

    fn cluster(name: &str, labels: &[(&str, &str)]) -> Cluster {
        let mut cluster = Cluster::new(name, Default::default());
        cluster.metadata.namespace = Some("fleet-default".into());
        cluster.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        cluster
    }

    fn selector(pairs: &[(&str, &str)]) -> Option<LabelSelector> {
        Some(LabelSelector {
            match_labels: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..LabelSelector::default()
        })
    }

    #[test]
    fn targets_and_restrictions_both_decide() {
        let mut prod_group = ClusterGroup::new(
            "prod",
            ClusterGroupSpec {
                selector: selector(&[("env", "prod")]),
            },
        );
        prod_group.metadata.namespace = Some("fleet-default".into());
        let groups = [prod_group];
        let dev = cluster_info(&cluster("dev", &[("env", "dev")]), &groups);
        let prod = cluster_info(&cluster("prod-a", &[("env", "prod")]), &groups);
        assert_eq!(prod.groups.len(), 1);
        assert!(dev.groups.is_empty());

        let bundle = Bundle::new(
            "app",
            BundleSpec {
                targets: vec![BundleTarget {
                    name: Some("all".into()),
                    cluster_selector: selector(&[]),
                    ..BundleTarget::default()
                }],
                target_restrictions: vec![BundleTargetRestriction {
                    cluster_group: Some("prod".into()),
                    ..BundleTargetRestriction::default()
                }],
                ..BundleSpec::default()
            },
        );
        assert!(is_targeted(&bundle, &prod));
        assert!(!is_targeted(&bundle, &dev), "restricted to the prod group");
        let mut open = bundle.clone();
        open.spec.target_restrictions.clear();
        assert!(is_targeted(&open, &dev));
        open.spec.targets.clear();
        assert!(!is_targeted(&open, &dev), "no target, no deployment");
    }
}
