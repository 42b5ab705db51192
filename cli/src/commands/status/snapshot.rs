//! What `fleet status` shows, read from the hub: GitRepos, their Bundles, and each
//! cluster's deployment state.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};
use fleet_api::labels::{
    BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL, CLUSTER_LABEL, REPO_NAME_LABEL,
};
use fleet_api::{Bundle, BundleDeployment, Condition, GitRepo};
use fleet_controller::reconcile::DeploymentState;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde::Serialize;

/// Everything `fleet status` shows.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Snapshot {
    /// GitRepos, by namespace and name; Bundles of no GitRepo come last.
    pub repos: Vec<RepoNode>,
}

/// A GitRepo and its Bundles.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RepoNode {
    /// The namespace.
    pub namespace: String,
    /// The GitRepo's name; `None` gathers Bundles no GitRepo made.
    pub name: Option<String>,
    /// The commit last synced.
    pub commit: Option<String>,
    /// Ready, NotReady, Stalled...
    pub state: String,
    /// Why it is not ready.
    pub message: Option<String>,
    /// Its Bundles, by name.
    pub bundles: Vec<BundleNode>,
}

/// A Bundle and where it is deployed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BundleNode {
    /// The Bundle's name.
    pub name: String,
    /// Ready, NotReady...
    pub state: String,
    /// Clusters ready.
    pub ready: usize,
    /// Clusters targeted.
    pub desired: usize,
    /// Why it is not ready.
    pub message: Option<String>,
    /// One entry per targeted cluster, by name.
    pub clusters: Vec<ClusterNode>,
}

/// One cluster's deployment of a Bundle.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClusterNode {
    /// The Cluster's name.
    pub cluster: String,
    /// Fleet's state of the deployment.
    pub state: DeploymentState,
    /// What the agent last said was wrong.
    pub message: Option<String>,
}

impl RepoNode {
    /// True when the GitRepo synced a commit, says it is Ready, and every Bundle is ready
    /// everywhere.
    pub(crate) fn is_ready(&self) -> bool {
        self.commit.is_some()
            && self.state == "Ready"
            && !self.bundles.is_empty()
            && self.bundles.iter().all(BundleNode::is_ready)
    }
}

impl BundleNode {
    /// True when the Bundle says it is Ready and every targeted cluster is ready.
    pub(crate) fn is_ready(&self) -> bool {
        self.state == "Ready"
            && self.desired > 0
            && self.ready == self.desired
            && self
                .clusters
                .iter()
                .all(|c| c.state == DeploymentState::Ready)
    }
}

/// The first condition that says something is wrong, as `Type: message`.
fn trouble(conditions: &[Condition]) -> Option<String> {
    conditions
        .iter()
        .find(|c| {
            (c.type_ == "Stalled" && c.status == "True")
                || (c.type_ != "Stalled" && c.type_ != "Reconciling" && c.status == "False")
        })
        .map(|c| match c.message.as_deref().filter(|m| !m.is_empty()) {
            Some(message) => message.to_string(),
            None => format!("{} is {}", c.type_, c.status),
        })
}

impl Snapshot {
    /// Reads GitRepos, Bundles and BundleDeployments from the hub.
    pub(crate) async fn load(client: &kube::Client, namespace: Option<&str>) -> Result<Self> {
        let params = ListParams::default();
        let (repos, bundles): (Api<GitRepo>, Api<Bundle>) = match namespace {
            Some(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
            ),
            None => (Api::all(client.clone()), Api::all(client.clone())),
        };
        let repos = repos.list(&params).await.context("listing GitRepos")?.items;
        let bundles = bundles
            .list(&params)
            .await
            .context("listing Bundles")?
            .items;
        let deployments = Api::<BundleDeployment>::all(client.clone())
            .list(&params)
            .await
            .context("listing BundleDeployments")?
            .items;
        Ok(Self::assemble(&repos, &bundles, &deployments))
    }

    /// Builds the tree from listed objects.
    pub(crate) fn assemble(
        repos: &[GitRepo],
        bundles: &[Bundle],
        deployments: &[BundleDeployment],
    ) -> Self {
        let mut clusters_of: BTreeMap<(String, String), Vec<ClusterNode>> = BTreeMap::new();
        for deployment in deployments {
            let labels = deployment.labels();
            let (Some(namespace), Some(bundle)) = (
                labels.get(BUNDLE_NAMESPACE_LABEL),
                labels.get(BUNDLE_NAME_LABEL),
            ) else {
                continue;
            };
            let status = deployment.status.clone().unwrap_or_default();
            clusters_of
                .entry((namespace.clone(), bundle.clone()))
                .or_default()
                .push(ClusterNode {
                    cluster: labels
                        .get(CLUSTER_LABEL)
                        .cloned()
                        .unwrap_or_else(|| deployment.name_any()),
                    state: DeploymentState::of(deployment),
                    message: trouble(&status.conditions),
                });
        }
        let mut by_repo: BTreeMap<(String, Option<String>), Vec<BundleNode>> = BTreeMap::new();
        for bundle in bundles {
            let namespace = bundle.namespace().unwrap_or_default();
            let mut clusters = clusters_of
                .remove(&(namespace.clone(), bundle.name_any()))
                .unwrap_or_default();
            clusters.sort_by(|a, b| a.cluster.cmp(&b.cluster));
            let status = bundle.status.clone().unwrap_or_default();
            let ready = clusters
                .iter()
                .filter(|c| c.state == DeploymentState::Ready)
                .count();
            let node = BundleNode {
                name: bundle.name_any(),
                state: status
                    .display
                    .and_then(|d| d.state)
                    .unwrap_or_else(|| "Pending".into()),
                ready,
                desired: clusters.len(),
                message: trouble(&status.conditions),
                clusters,
            };
            let repo = bundle.labels().get(REPO_NAME_LABEL).cloned();
            by_repo.entry((namespace, repo)).or_default().push(node);
        }
        let mut nodes: Vec<RepoNode> = repos
            .iter()
            .map(|repo| {
                let namespace = repo.namespace().unwrap_or_default();
                let mut bundles = by_repo
                    .remove(&(namespace.clone(), Some(repo.name_any())))
                    .unwrap_or_default();
                bundles.sort_by(|a, b| a.name.cmp(&b.name));
                let status = repo.status.clone().unwrap_or_default();
                RepoNode {
                    namespace,
                    name: Some(repo.name_any()),
                    commit: status.commit,
                    state: status
                        .display
                        .and_then(|d| d.state)
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "Pending".into()),
                    message: trouble(&status.conditions),
                    bundles,
                }
            })
            .collect();
        nodes.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for ((namespace, _), mut bundles) in by_repo {
            bundles.sort_by(|a, b| a.name.cmp(&b.name));
            nodes.push(RepoNode {
                namespace,
                name: None,
                commit: None,
                state: String::new(),
                message: None,
                bundles,
            });
        }
        Self { repos: nodes }
    }
}
