//! Rancher Fleet's state metrics (`fleet_bundle_*`, `fleet_bundledeployment_state`,
//! `fleet_cluster_*`, `fleet_cluster_group_*`), written at each scrape from the controller's
//! watch caches: an object's series live exactly as long as the object, and a changed label
//! (commit, generation, state) never leaves a second series behind.
//!
//! As in Fleet, a state metric has one series per state it knows, 1 for the object's state
//! and 0 for the others; a bundle's state is the worst of its deployments that are not
//! Ready, none (every series 0) when all are.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use fleet_api::labels::{
    BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL, CLUSTER_LABEL, CLUSTER_NAMESPACE_LABEL,
    COMMIT_LABEL, REPO_NAME_LABEL,
};
use fleet_api::{Bundle, BundleDeployment, Cluster, ClusterGroup, ResourceCounts, BUNDLE_STATES};
use kube::runtime::reflector::Store;
use kube::ResourceExt;

use crate::placement::group_selects;
use crate::reconcile::DeploymentState;
use crate::watches::Cache;

/// What the state metrics are read from.
pub struct Sources {
    /// The Bundles.
    pub bundles: Store<Bundle>,
    /// The BundleDeployments.
    pub deployments: Arc<Cache<BundleDeployment>>,
    /// The Clusters and ClusterGroups, where this controller writes their status (not in
    /// a shard).
    pub clusters: Option<ClusterCaches>,
}

/// The Clusters and the ClusterGroups.
pub type ClusterCaches = (Arc<Cache<Cluster>>, Arc<Cache<ClusterGroup>>);

/// The states of Fleet's cluster metrics.
const CLUSTER_STATES: [&str; 3] = ["NotReady", "Ready", "WaitCheckIn"];
/// The states of Fleet's cluster group metrics.
const GROUP_STATES: [&str; 2] = ["NotReady", "Ready"];

/// A sample's labels, in the order they are written.
type Labels = Vec<(&'static str, String)>;

/// One metric family being written: its samples, then its text.
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Labels, i64)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Self {
        Self {
            name,
            help,
            samples: Vec::new(),
        }
    }

    /// One series per state of `states`, 1 for `current`.
    fn states(&mut self, labels: &Labels, states: &[&str], current: &str) {
        for state in states {
            let mut labels = labels.clone();
            labels.push(("state", state.to_string()));
            self.samples.push((labels, i64::from(*state == current)));
        }
    }

    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        for (labels, value) in &self.samples {
            let _ = write!(out, "{}{{", self.name);
            for (index, (key, text)) in labels.iter().enumerate() {
                let comma = if index > 0 { "," } else { "" };
                let _ = write!(out, "{comma}{key}=\"{}\"", escaped(text));
            }
            let _ = writeln!(out, "}} {value}");
        }
    }
}

/// A label value as Prometheus' text format escapes it.
fn escaped(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes every state family of `sources` to `out`.
pub fn render(sources: &Sources, out: &mut String) {
    let bundles = sources.bundles.state();
    let deployments = sources.deployments.store().state();
    let mut families = bundle_families(&bundles, &sources.deployments);
    families.push(deployment_family(&deployments));
    if let Some((clusters, groups)) = &sources.clusters {
        let clusters: Vec<ClusterView> = (clusters.store().state().iter())
            .map(|cluster| ClusterView::of(cluster, &sources.deployments))
            .collect();
        families.extend(cluster_families(&clusters));
        families.extend(group_families(&groups.store().state(), &clusters));
    }
    for family in families {
        family.write(out);
    }
}

fn label(object: &impl ResourceExt, key: &str) -> String {
    object.labels().get(key).cloned().unwrap_or_default()
}

fn generation(object: &impl ResourceExt) -> String {
    object.meta().generation.unwrap_or_default().to_string()
}

/// The rank Fleet gives a state when it picks the worst (0 for none).
fn rank(state: &str) -> usize {
    BUNDLE_STATES
        .iter()
        .position(|s| *s == state)
        .map_or(0, |at| at + 1)
}

fn state_name(deployment: &BundleDeployment) -> &'static str {
    match DeploymentState::of(deployment) {
        DeploymentState::Ready => "Ready",
        DeploymentState::NotReady => "NotReady",
        DeploymentState::WaitApplied => "WaitApplied",
        DeploymentState::ErrApplied => "ErrApplied",
        DeploymentState::OutOfSync => "OutOfSync",
        DeploymentState::Modified => "Modified",
    }
}

/// The worst state of the deployments that are not Ready, none when all are.
fn worst_state(deployments: &[Arc<BundleDeployment>]) -> &'static str {
    deployments
        .iter()
        .map(|d| state_name(d))
        .filter(|state| *state != "Ready")
        .max_by_key(|state| rank(state))
        .unwrap_or_default()
}

fn bundle_families(bundles: &[Arc<Bundle>], deployments: &Cache<BundleDeployment>) -> Vec<Family> {
    type Count = fn(&fleet_api::BundleSummary) -> i32;
    let counts: [(&str, &str, Count); 8] = [
        (
            "fleet_bundle_not_ready",
            "Deployments of the bundle NotReady.",
            |s| s.not_ready,
        ),
        (
            "fleet_bundle_wait_applied",
            "Deployments of the bundle WaitApplied.",
            |s| s.wait_applied,
        ),
        (
            "fleet_bundle_err_applied",
            "Deployments of the bundle ErrApplied.",
            |s| s.err_applied,
        ),
        (
            "fleet_bundle_out_of_sync",
            "Deployments of the bundle OutOfSync.",
            |s| s.out_of_sync,
        ),
        (
            "fleet_bundle_modified",
            "Deployments of the bundle Modified.",
            |s| s.modified,
        ),
        (
            "fleet_bundle_ready",
            "Deployments of the bundle Ready.",
            |s| s.ready,
        ),
        (
            "fleet_bundle_pending",
            "Deployments of the bundle Pending.",
            |s| s.pending,
        ),
        (
            "fleet_bundle_desired_ready",
            "Deployments of the bundle that should be Ready.",
            |s| s.desired_ready,
        ),
    ];
    let mut families: Vec<Family> = counts
        .iter()
        .map(|(name, help, _)| Family::new(name, help))
        .collect();
    let mut states = Family::new(
        "fleet_bundle_state",
        "The bundle's state, as the state label: 1 for it, 0 for the others.",
    );
    for bundle in bundles {
        let namespace = bundle.namespace().unwrap_or_default();
        let current = worst_state(
            &deployments.get(&crate::caches::bundle_key(&namespace, &bundle.name_any())),
        );
        let labels: Labels = vec![
            ("name", bundle.name_any()),
            ("namespace", namespace),
            ("commit", label(&**bundle, COMMIT_LABEL)),
            ("repo", label(&**bundle, REPO_NAME_LABEL)),
            ("generation", generation(&**bundle)),
        ];
        let summary = (bundle.status.as_ref())
            .and_then(|s| s.summary.clone())
            .unwrap_or_default();
        for (family, (_, _, count)) in families.iter_mut().zip(&counts) {
            let mut labels = labels.clone();
            labels.push(("state", current.to_string()));
            family.samples.push((labels, i64::from(count(&summary))));
        }
        states.states(&labels, &BUNDLE_STATES, current);
    }
    families.push(states);
    families
}

fn deployment_family(deployments: &[Arc<BundleDeployment>]) -> Family {
    let mut family = Family::new(
        "fleet_bundledeployment_state",
        "The bundle deployment's state, as the state label: 1 for it, 0 for the others.",
    );
    for deployment in deployments {
        let labels: Labels = vec![
            ("name", deployment.name_any()),
            ("namespace", deployment.namespace().unwrap_or_default()),
            ("cluster_name", label(&**deployment, CLUSTER_LABEL)),
            (
                "cluster_namespace",
                label(&**deployment, CLUSTER_NAMESPACE_LABEL),
            ),
            ("repo", label(&**deployment, REPO_NAME_LABEL)),
            ("commit", label(&**deployment, COMMIT_LABEL)),
            ("bundle", label(&**deployment, BUNDLE_NAME_LABEL)),
            (
                "bundle_namespace",
                label(&**deployment, BUNDLE_NAMESPACE_LABEL),
            ),
            ("generation", generation(&**deployment)),
        ];
        family.states(&labels, &BUNDLE_STATES, state_name(deployment));
    }
    family
}

/// What a deployment's resources are, counted from what its agent reported.
fn resource_counts(deployment: &BundleDeployment) -> ResourceCounts {
    let Some(status) = deployment.status.as_ref() else {
        return ResourceCounts::default();
    };
    let flagged = |key: &str| {
        let count = (status.modified_status.iter())
            .filter(|m| m.get(key).and_then(serde_json::Value::as_bool) == Some(true))
            .count();
        i32::try_from(count).unwrap_or(i32::MAX)
    };
    let whole = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let (missing, orphaned) = (flagged("missing"), flagged("delete"));
    let modified = whole(status.modified_status.len()) - missing - orphaned;
    let not_ready = whole(status.non_ready_status.len());
    let listed =
        whole(status.resources.len()) + i32::try_from(status.resources_omitted).unwrap_or(0);
    let desired_ready = listed + missing;
    ResourceCounts {
        desired_ready,
        missing,
        orphaned,
        modified,
        not_ready,
        ready: (desired_ready - missing - modified - not_ready).max(0),
        ..ResourceCounts::default()
    }
}

type CountOf = fn(&ResourceCounts) -> i32;

/// The resource counts Fleet exports: a cluster's metric, a group's (Fleet names them
/// apart), and the count.
const RESOURCE_COUNTS: [(&str, &str, CountOf); 8] = [
    (
        "fleet_cluster_resources_count_desiredready",
        "fleet_cluster_group_resource_count_desired_ready",
        |c| c.desired_ready,
    ),
    (
        "fleet_cluster_resources_count_missing",
        "fleet_cluster_group_resource_count_missing",
        |c| c.missing,
    ),
    (
        "fleet_cluster_resources_count_modified",
        "fleet_cluster_group_resource_count_modified",
        |c| c.modified,
    ),
    (
        "fleet_cluster_resources_count_notready",
        "fleet_cluster_group_resource_count_notready",
        |c| c.not_ready,
    ),
    (
        "fleet_cluster_resources_count_orphaned",
        "fleet_cluster_group_resource_count_orphaned",
        |c| c.orphaned,
    ),
    (
        "fleet_cluster_resources_count_ready",
        "fleet_cluster_group_resource_count_ready",
        |c| c.ready,
    ),
    (
        "fleet_cluster_resources_count_unknown",
        "fleet_cluster_group_resource_count_unknown",
        |c| c.unknown,
    ),
    (
        "fleet_cluster_resources_count_waitapplied",
        "fleet_cluster_group_resource_count_waitapplied",
        |c| c.wait_applied,
    ),
];

/// A cluster with its deployments and the sum of their resource counts, read once for
/// the cluster's families and its groups'.
struct ClusterView {
    cluster: Arc<Cluster>,
    deployments: Vec<Arc<BundleDeployment>>,
    resources: ResourceCounts,
}

impl ClusterView {
    fn of(cluster: &Arc<Cluster>, deployments: &Cache<BundleDeployment>) -> Self {
        let namespace = cluster.namespace().unwrap_or_default();
        let key = crate::caches::cluster_key(&namespace, &cluster.name_any());
        let deployments = deployments.get(&key);
        let mut resources = ResourceCounts::default();
        for deployment in &deployments {
            resources += &resource_counts(deployment);
        }
        Self {
            cluster: cluster.clone(),
            deployments,
            resources,
        }
    }
}

fn cluster_families(clusters: &[ClusterView]) -> Vec<Family> {
    let mut repos_desired = Family::new(
        "fleet_cluster_desired_ready_git_repos",
        "GitRepos with bundles on the cluster.",
    );
    let mut repos_ready = Family::new(
        "fleet_cluster_ready_git_repos",
        "GitRepos with a Ready bundle on the cluster.",
    );
    let mut counts: Vec<Family> = (RESOURCE_COUNTS.iter())
        .map(|(name, _, _)| Family::new(name, "The cluster's resources in that state."))
        .collect();
    let mut states = Family::new(
        "fleet_cluster_state",
        "The cluster's state, as the state label: 1 for it, 0 for the others.",
    );
    for view in clusters {
        let cluster = &view.cluster;
        // A GitRepo counts once per cluster, ready when any of its deployments is (Fleet's rule).
        let mut repos: BTreeMap<(String, String), bool> = BTreeMap::new();
        for deployment in &view.deployments {
            let repo = label(&**deployment, REPO_NAME_LABEL);
            if repo.is_empty() {
                continue;
            }
            let key = (label(&**deployment, BUNDLE_NAMESPACE_LABEL), repo);
            *repos.entry(key).or_default() |= state_name(deployment) == "Ready";
        }
        let never_seen = !cluster.is_pushed()
            && (cluster.status.as_ref())
                .is_none_or(|s| s.agent.as_ref().is_none_or(|a| a.last_seen.is_none()));
        let current = if never_seen {
            "WaitCheckIn".to_string()
        } else {
            (cluster.status.as_ref())
                .and_then(|s| s.display.as_ref())
                .and_then(|d| d.state.clone())
                .unwrap_or_default()
        };
        let labels: Labels = vec![
            ("name", cluster.name_any()),
            ("namespace", cluster.namespace().unwrap_or_default()),
            (
                "cluster_name",
                label(&**cluster, "management.cattle.io/cluster-name"),
            ),
            (
                "cluster_display_name",
                label(&**cluster, "management.cattle.io/cluster-display-name"),
            ),
            ("generation", generation(&**cluster)),
        ];
        let mut with_state = labels.clone();
        with_state.push(("state", current.clone()));
        let whole = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        repos_desired
            .samples
            .push((with_state.clone(), whole(repos.len())));
        let ready = repos.values().filter(|ready| **ready).count();
        repos_ready.samples.push((with_state.clone(), whole(ready)));
        for (family, (_, _, count)) in counts.iter_mut().zip(&RESOURCE_COUNTS) {
            family
                .samples
                .push((with_state.clone(), i64::from(count(&view.resources))));
        }
        states.states(&labels, &CLUSTER_STATES, &current);
    }
    let mut families = vec![repos_desired, repos_ready];
    families.extend(counts);
    families.push(states);
    families
}

fn group_families(groups: &[Arc<ClusterGroup>], clusters: &[ClusterView]) -> Vec<Family> {
    type Count = fn(&fleet_api::ClusterGroupStatus) -> i32;
    let from_status: [(&str, &str, Count); 4] = [
        (
            "fleet_cluster_group_cluster_count",
            "Clusters in the group.",
            |s| s.cluster_count,
        ),
        (
            "fleet_cluster_group_non_ready_cluster_count",
            "Clusters of the group not Ready.",
            |s| s.non_ready_cluster_count,
        ),
        (
            "fleet_cluster_group_bundle_desired_ready",
            "Deployments in the group that should be Ready.",
            |s| s.summary.as_ref().map_or(0, |s| s.desired_ready),
        ),
        (
            "fleet_cluster_group_bundle_ready",
            "Deployments in the group Ready.",
            |s| s.summary.as_ref().map_or(0, |s| s.ready),
        ),
    ];
    let mut counted: Vec<Family> = (from_status.iter())
        .map(|(name, help, _)| Family::new(name, help))
        .chain(
            (RESOURCE_COUNTS.iter())
                .map(|(_, name, _)| Family::new(name, "The group's resources in that state.")),
        )
        .collect();
    let mut states = Family::new(
        "fleet_cluster_group_state",
        "The group's state, as the state label: 1 for it, 0 for the others.",
    );
    for group in groups {
        let namespace = group.namespace().unwrap_or_default();
        let status = group.status.clone().unwrap_or_default();
        let current = (status.display.as_ref())
            .and_then(|d| d.state.clone())
            .unwrap_or_default();
        let mut resources = ResourceCounts::default();
        for member in clusters.iter().filter(|v| group_selects(group, &v.cluster)) {
            resources += &member.resources;
        }
        let labels: Labels = vec![
            ("name", group.name_any()),
            ("namespace", namespace),
            ("generation", generation(&**group)),
        ];
        let mut with_state = labels.clone();
        with_state.push(("state", current.clone()));
        let values = (from_status.iter().map(|(_, _, count)| count(&status))).chain(
            RESOURCE_COUNTS
                .iter()
                .map(|(_, _, count)| count(&resources)),
        );
        for (family, value) in counted.iter_mut().zip(values) {
            family.samples.push((with_state.clone(), i64::from(value)));
        }
        states.states(&labels, &GROUP_STATES, &current);
    }
    counted.push(states);
    counted
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;
    use serde_json::json;

    fn object<K: serde::de::DeserializeOwned>(value: serde_json::Value) -> K {
        serde_json::from_value(value).expect("an object")
    }

    fn cache<K: crate::watches::Watched>(
        keys: crate::watches::Keys<K>,
        objects: Vec<K>,
    ) -> Arc<Cache<K>> {
        let (cache, mut apply) = Cache::detached(keys);
        apply(Event::Init);
        for object in objects {
            apply(Event::InitApply(object));
        }
        apply(Event::InitDone);
        cache
    }

    /// A deployment of bundle `demo-app` in cluster `dev`, applied at `applied`, with a
    /// failed `Deployed` condition when `failed`.
    fn deployment(applied: &str, failed: bool, ready: bool) -> BundleDeployment {
        let conditions = if failed {
            json!([{"type": "Deployed", "status": "False"}])
        } else {
            json!([])
        };
        object(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {"name": "demo-app", "namespace": "cluster-dev", "generation": 2,
                "labels": {BUNDLE_NAME_LABEL: "demo-app", BUNDLE_NAMESPACE_LABEL: "fleet-local",
                    CLUSTER_LABEL: "dev", CLUSTER_NAMESPACE_LABEL: "fleet-local",
                    REPO_NAME_LABEL: "demo", COMMIT_LABEL: "abc"}},
            "spec": {"deploymentID": "v2"},
            "status": {"appliedDeploymentID": applied, "ready": ready, "nonModified": true,
                "conditions": conditions,
                "resources": [{"kind": "ConfigMap", "name": "a"}, {"kind": "ConfigMap", "name": "b"}],
                "nonReadyStatus": [{"kind": "ConfigMap", "name": "b"}]},
        }))
    }

    fn rendered(deployments: Vec<BundleDeployment>, seen: bool) -> String {
        let bundle: Bundle = object(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
            "metadata": {"name": "demo-app", "namespace": "fleet-local", "generation": 3,
                "labels": {REPO_NAME_LABEL: "demo", COMMIT_LABEL: "abc"}},
            "spec": {},
            "status": {"summary": {"desiredReady": 1, "waitApplied": 1}},
        }));
        let agent = if seen {
            json!({"lastSeen": "2026-12-07T00:00:00Z"})
        } else {
            json!(null)
        };
        let cluster: Cluster = object(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "dev", "namespace": "fleet-local", "labels": {"env": "dev"}},
            "spec": {},
            "status": {"agent": agent, "display": {"state": "NotReady"}},
        }));
        let group: ClusterGroup = object(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterGroup",
            "metadata": {"name": "devs", "namespace": "fleet-local"},
            "spec": {"selector": {"matchLabels": {"env": "dev"}}},
            "status": {"clusterCount": 1, "nonReadyClusterCount": 1, "display": {"state": "NotReady"}},
        }));
        let sources = Sources {
            bundles: cache(crate::caches::by_namespace, vec![bundle]).store(),
            deployments: cache(crate::caches::deployment_keys, deployments),
            clusters: Some((
                cache(crate::caches::by_namespace, vec![cluster]),
                cache(crate::caches::by_namespace, vec![group]),
            )),
        };
        let mut out = String::new();
        render(&sources, &mut out);
        out
    }

    fn lines<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.split('{').next() == Some(name))
            .collect()
    }

    #[test]
    fn a_bundle_has_the_worst_state_of_its_deployments_and_one_series_per_state() {
        let text = rendered(vec![deployment("v1", true, false)], true);
        let states = lines(&text, "fleet_bundle_state");
        assert_eq!(states.len(), 7, "{text}");
        let on: Vec<&&str> = states.iter().filter(|l| l.ends_with(" 1")).collect();
        assert_eq!(
            on,
            [&"fleet_bundle_state{name=\"demo-app\",namespace=\"fleet-local\",commit=\"abc\",repo=\"demo\",generation=\"3\",state=\"ErrApplied\"} 1"]
        );
        assert_eq!(
            lines(&text, "fleet_bundle_wait_applied"),
            ["fleet_bundle_wait_applied{name=\"demo-app\",namespace=\"fleet-local\",commit=\"abc\",repo=\"demo\",generation=\"3\",state=\"ErrApplied\"} 1"]
        );
        let deployment = lines(&text, "fleet_bundledeployment_state");
        assert_eq!(deployment.len(), 7);
        assert!(deployment.contains(&"fleet_bundledeployment_state{name=\"demo-app\",namespace=\"cluster-dev\",cluster_name=\"dev\",cluster_namespace=\"fleet-local\",repo=\"demo\",commit=\"abc\",bundle=\"demo-app\",bundle_namespace=\"fleet-local\",generation=\"2\",state=\"ErrApplied\"} 1"), "{text}");
    }

    #[test]
    fn a_ready_bundle_has_no_state_and_a_cluster_never_seen_waits_for_check_in() {
        let text = rendered(vec![deployment("v2", false, true)], false);
        assert!(
            lines(&text, "fleet_bundle_state")
                .iter()
                .all(|l| l.ends_with(" 0")),
            "{text}"
        );
        assert!(lines(&text, "fleet_cluster_state").contains(&"fleet_cluster_state{name=\"dev\",namespace=\"fleet-local\",cluster_name=\"\",cluster_display_name=\"\",generation=\"0\",state=\"WaitCheckIn\"} 1"), "{text}");
        assert_eq!(
            lines(&text, "fleet_cluster_ready_git_repos"),
            ["fleet_cluster_ready_git_repos{name=\"dev\",namespace=\"fleet-local\",cluster_name=\"\",cluster_display_name=\"\",generation=\"0\",state=\"WaitCheckIn\"} 1"]
        );
        // Two resources, one not ready: on the cluster, and on the group it belongs to.
        assert!(text.contains("fleet_cluster_resources_count_notready{name=\"dev\",namespace=\"fleet-local\",cluster_name=\"\",cluster_display_name=\"\",generation=\"0\",state=\"WaitCheckIn\"} 1\n"), "{text}");
        assert!(text.contains("fleet_cluster_group_resource_count_ready{name=\"devs\",namespace=\"fleet-local\",generation=\"0\",state=\"NotReady\"} 1\n"), "{text}");
        assert!(text.contains("fleet_cluster_group_state{name=\"devs\",namespace=\"fleet-local\",generation=\"0\",state=\"NotReady\"} 1\n"), "{text}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escaped("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
