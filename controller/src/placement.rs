//! Which clusters a Bundle goes to: its targets select clusters by name, labels, group or
//! group labels, and its target restrictions (the GitRepo's targets) must allow them too.

use fleet_api::{
    Bundle, BundleDeploymentOptions, BundleTarget, Cluster, ClusterGroup, FleetYaml,
    TargetCustomizationMode,
};
use std::borrow::Borrow;

use fleet_objects::selector::matches_selector;
use fleet_renderer::bundle::ClusterInfo;
use kube::ResourceExt;

/// Whether `group` takes `cluster` in: a cluster of its namespace whose labels its selector
/// matches (a group without a selector takes none).
pub fn group_selects(group: &ClusterGroup, cluster: &Cluster) -> bool {
    group.namespace() == cluster.namespace()
        && (group.spec.selector.as_ref()).is_some_and(|s| matches_selector(s, cluster.labels()))
}

/// What the renderer needs to know of `cluster`: its name, labels, and the groups (of
/// `groups`, in its namespace) whose selector takes it in.
pub fn cluster_info<G: Borrow<ClusterGroup>>(cluster: &Cluster, groups: &[G]) -> ClusterInfo {
    let labels = cluster.labels().clone();
    let namespace = cluster.namespace().unwrap_or_default();
    let member_of = groups
        .iter()
        .map(Borrow::borrow)
        .filter(|g| group_selects(g, cluster))
        .map(|g| (g.name_any(), g.labels().clone()))
        .collect();
    ClusterInfo {
        name: cluster.name_any(),
        namespace,
        labels,
        groups: member_of,
        annotations: cluster.annotations().clone(),
        template_values: cluster.spec.template_values.clone().unwrap_or_default(),
    }
}

/// Whether `bundle` goes to `cluster`: some target selects it, and the restrictions, if
/// any, allow it.
pub fn is_targeted(bundle: &Bundle, cluster: &ClusterInfo) -> bool {
    let selected = bundle.spec.targets.iter().any(|t| cluster.matches(t));
    let restrictions = &bundle.spec.target_restrictions;
    let allowed = restrictions.is_empty()
        || restrictions
            .iter()
            .any(|r| cluster.matches(&BundleTarget::from(r)));
    selected && allowed
}

/// Whether the target at `index` of a bundle's targets customizes (comes from
/// fleet.yaml's `targetCustomizations`) rather than selects. A target says so in
/// `source`; one from before that field is a customization when it comes before the
/// GitRepo's targets, which are as many as the `restrictions`, and a bundle without
/// restrictions (not made from a GitRepo) has only plain targets. This is Fleet's rule,
/// so Bundles Fleet made are read the same.
pub fn is_customization(
    target: &BundleTarget,
    index: usize,
    targets: usize,
    restrictions: usize,
) -> bool {
    match target.source.as_deref() {
        Some(source) if !source.is_empty() => source == fleet_api::CUSTOMIZATION_SOURCE,
        _ => restrictions > 0 && index < targets.saturating_sub(restrictions),
    }
}

/// The options `bundle` carries: its own first, then each target's in order.
pub fn every_options(bundle: &Bundle) -> impl Iterator<Item = &BundleDeploymentOptions> {
    std::iter::once(&bundle.spec.options).chain(bundle.spec.targets.iter().map(|t| &t.options))
}

/// The bundle as the renderer reads a fleet.yaml: its options, and as customizations its
/// customizing targets, then (under `FirstMatch`, or when it has no customizing
/// targets) its plain targets, whose options apply where no customization matches, as
/// in Fleet.
pub fn as_fleet_yaml(bundle: &Bundle) -> FleetYaml {
    let targets = &bundle.spec.targets;
    let restrictions = bundle.spec.target_restrictions.len();
    let (customizing, plain): (Vec<_>, Vec<_>) = targets
        .iter()
        .enumerate()
        .partition(|(index, target)| is_customization(target, *index, targets.len(), restrictions));
    let mut mode = bundle.spec.target_customization_mode.unwrap_or_default();
    if customizing.is_empty() {
        mode = TargetCustomizationMode::FirstMatch;
    }
    let mut target_customizations: Vec<BundleTarget> =
        customizing.into_iter().map(|(_, t)| t.clone()).collect();
    if mode == TargetCustomizationMode::FirstMatch {
        target_customizations.extend(plain.into_iter().map(|(_, t)| t.clone()));
    }
    FleetYaml {
        options: bundle.spec.options.clone(),
        target_customizations,
        target_customization_mode: Some(mode),
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

/// Fleet's own targeting cases (`internal/cmd/controller/target/matcher`), restated as
/// data: which customizations apply to a cluster, by FirstMatch and AllMatches, and which
/// targets count as customizations.
#[cfg(test)]
mod fleet_cases {
    use super::*;
    use fleet_api::{BundleSpec, BundleTargetRestriction, LabelSelector};
    use fleet_renderer::bundle::{not_deployed, options_for};
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn target(name: &str, selector: &[(&str, &str)]) -> BundleTarget {
        BundleTarget {
            name: Some(name.into()),
            cluster_selector: Some(LabelSelector {
                match_labels: labels(selector),
                ..LabelSelector::default()
            }),
            ..BundleTarget::default()
        }
    }

    /// A Bundle as Fleet's bundle reader lays it out: customizations first, then the
    /// GitRepo's target, which is also the one restriction.
    fn bundle(gitrepo: BundleTarget, customizations: Vec<BundleTarget>, all: bool) -> Bundle {
        let restriction = BundleTargetRestriction {
            name: gitrepo.name.clone(),
            cluster_selector: gitrepo.cluster_selector.clone(),
            ..BundleTargetRestriction::default()
        };
        let mut targets = customizations;
        targets.push(gitrepo);
        Bundle::new(
            "b",
            BundleSpec {
                targets,
                target_restrictions: vec![restriction],
                target_customization_mode: Some(if all {
                    TargetCustomizationMode::AllMatches
                } else {
                    TargetCustomizationMode::FirstMatch
                }),
                ..BundleSpec::default()
            },
        )
    }

    fn applied(bundle: &Bundle, cluster_labels: &[(&str, &str)]) -> Option<String> {
        let cluster = ClusterInfo {
            name: "local".into(),
            labels: labels(cluster_labels),
            ..ClusterInfo::default()
        };
        options_for(&as_fleet_yaml(bundle), &cluster).0
    }

    #[test]
    fn all_matches_returns_every_matching_customization_in_order() {
        let gitrepo = target("gitrepo", &[]);
        let edge = target("edge", &[("edge", "true")]);
        let extra = target("extra", &[("extra", "true")]);
        let all = target("all", &[]);
        let both = [("edge", "true"), ("extra", "true")];
        // (case, customizations, cluster labels, customizations applied)
        type Case<'a> = (
            &'a str,
            Vec<BundleTarget>,
            &'a [(&'a str, &'a str)],
            Option<&'a str>,
        );
        let cases: Vec<Case> = vec![
            ("no customizations match", vec![edge.clone()], &[], None),
            (
                "one customization matches",
                vec![edge.clone(), extra.clone()],
                &[("edge", "true")],
                Some("edge"),
            ),
            (
                "both customizations match",
                vec![edge.clone(), extra.clone()],
                &both,
                Some("edge,extra"),
            ),
            (
                "order is preserved",
                vec![extra.clone(), edge.clone()],
                &both,
                Some("extra,edge"),
            ),
            (
                "catch-all customization matches everything",
                vec![edge.clone(), all.clone()],
                &[("edge", "true")],
                Some("edge,all"),
            ),
        ];
        for (case, customizations, cluster, want) in cases {
            let bundle = bundle(gitrepo.clone(), customizations, true);
            assert_eq!(applied(&bundle, cluster).as_deref(), want, "{case}");
        }
    }

    #[test]
    fn any_matching_do_not_deploy_holds() {
        let stopper = BundleTarget {
            do_not_deploy: true,
            ..target("stopper", &[("edge", "true")])
        };
        for all in [true, false] {
            let bundle = bundle(
                target("gitrepo", &[]),
                vec![target("edge", &[("edge", "true")]), stopper.clone()],
                all,
            );
            let cluster = ClusterInfo {
                name: "local".into(),
                labels: labels(&[("edge", "true")]),
                ..ClusterInfo::default()
            };
            assert!(not_deployed(&as_fleet_yaml(&bundle), &cluster), "all={all}");
        }
    }

    #[test]
    fn first_match_stops_at_the_first_customization() {
        let bundle = bundle(
            target("gitrepo", &[]),
            vec![
                target("edge", &[("edge", "true")]),
                target("extra", &[("extra", "true")]),
            ],
            false,
        );
        let both = [("edge", "true"), ("extra", "true")];
        assert_eq!(applied(&bundle, &both).as_deref(), Some("edge"));
    }

    #[test]
    fn a_customization_like_the_gitrepo_target_still_customizes() {
        let production = target("production", &[("env", "prod")]);
        let mut custom = production.clone();
        custom.options.default_namespace = Some("custom".into());
        for all in [true, false] {
            let bundle = bundle(production.clone(), vec![custom.clone()], all);
            let cluster = ClusterInfo {
                name: "cluster1".into(),
                labels: labels(&[("env", "prod")]),
                ..ClusterInfo::default()
            };
            let (name, options) = options_for(&as_fleet_yaml(&bundle), &cluster);
            assert_eq!(name.as_deref(), Some("production"));
            assert_eq!(options.default_namespace.as_deref(), Some("custom"));
        }
    }

    #[test]
    fn customizations_are_known_by_source_or_else_by_position() {
        let with_source = |source: &str| BundleTarget {
            source: Some(source.into()),
            ..BundleTarget::default()
        };
        let plain = BundleTarget::default();
        // (target, index, customizations, want): the customizations are the first N of
        // N + 1 targets with one restriction, or with none when N + 1 is 0.
        let cases = [
            (with_source("customization"), 0, 1, true),
            (with_source("gitrepo"), 1, 1, false),
            (plain.clone(), 0, 1, true),
            (plain.clone(), 1, 1, false),
            (with_source("gitrepo"), 0, 1, false),
            (plain.clone(), 2, 3, true),
            (plain.clone(), 3, 3, false),
        ];
        for (target, index, customizations, want) in cases {
            let got = is_customization(&target, index, customizations + 1, 1);
            assert_eq!(got, want, "{target:?} at {index} of {customizations}");
        }
        // A bundle without restrictions (not made from a GitRepo) has only plain targets.
        assert!(!is_customization(&plain, 0, 1, 0));
    }
}
