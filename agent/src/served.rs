//! What the agent's cluster serves, for bundles rendered in it (`.Capabilities.APIVersions`,
//! `lookup`): discovery of every group version, each asked on its own. An aggregated API
//! that is down or hangs (metrics-server often does) leaves out its own group version only, where a
//! discovery that fails whole would fail every such bundle. What is found is kept for a
//! few seconds, enough for the deployments of one commit; a CRD installed later is seen by
//! the next render.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::discovery::ApiResource;

use crate::{Agent, Error};

/// Each kind served, by `(apiVersion, kind)`: its API and whether it is namespaced.
pub type ServedResources = HashMap<(String, String), (ApiResource, bool)>;

/// How long one discovery answers for.
const FRESH: Duration = Duration::from_secs(5);

/// How long one group version may take to answer: an aggregated API whose service is down
/// may leave the request hanging.
const GROUP_PATIENCE: Duration = Duration::from_secs(5);

/// A discovery, and when it was made.
pub(crate) type Found = Option<(Instant, Arc<ServedResources>)>;

impl Agent {
    /// Every kind the agent's cluster serves, found under [`FRESH`] ago.
    pub(crate) async fn served_resources(&self) -> Result<Arc<ServedResources>, Error> {
        let mut found = self.discovery.lock().await;
        if let Some((when, served)) = found.as_ref().filter(|(when, _)| when.elapsed() < FRESH) {
            tracing::trace!(age = ?when.elapsed(), "discovery reused");
            return Ok(served.clone());
        }
        let served = Arc::new(discover(&self.local).await?);
        *found = Some((Instant::now(), served.clone()));
        Ok(served)
    }
}

/// Asks the cluster for its group versions, then each for its resources; one that does not
/// answer is left out, with a warning.
async fn discover(client: &kube::Client) -> Result<ServedResources, Error> {
    let mut group_versions: Vec<String> = client.list_core_api_versions().await?.versions;
    for group in client.list_api_groups().await?.groups {
        group_versions.extend(group.versions.into_iter().map(|v| v.group_version));
    }
    let mut served = ServedResources::new();
    for group_version in group_versions {
        let listed = async {
            if group_version.contains('/') {
                client.list_api_group_resources(&group_version).await
            } else {
                client.list_core_api_resources(&group_version).await
            }
        };
        match tokio::time::timeout(GROUP_PATIENCE, listed).await {
            Ok(Ok(list)) => add(&mut served, &list),
            Ok(Err(error)) => {
                tracing::warn!(%group_version, %error, "discovery: left out a group version that failed");
            }
            Err(_) => {
                tracing::warn!(%group_version, "discovery: left out a group version that did not answer in time");
            }
        }
    }
    Ok(served)
}

/// Adds the kinds of `list` (not its subresources) to `served`.
fn add(served: &mut ServedResources, list: &APIResourceList) {
    let (group, version) = fleet_objects::split_api_version(&list.group_version);
    for resource in list.resources.iter().filter(|r| !r.name.contains('/')) {
        let api = ApiResource {
            group: group.to_string(),
            version: version.to_string(),
            api_version: list.group_version.clone(),
            kind: resource.kind.clone(),
            plural: resource.name.clone(),
        };
        served.insert(
            (list.group_version.clone(), resource.kind.clone()),
            (api, resource.namespaced),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subresources_are_not_kinds() {
        let list: APIResourceList = serde_json::from_value(serde_json::json!({
            "groupVersion": "apps/v1",
            "resources": [
                {"name": "deployments", "kind": "Deployment", "namespaced": true, "singularName": "", "verbs": []},
                {"name": "deployments/scale", "kind": "Scale", "namespaced": true, "singularName": "", "verbs": []},
            ],
        }))
        .expect("list");
        let mut served = ServedResources::new();
        add(&mut served, &list);
        assert_eq!(served.len(), 1);
        let (api, namespaced) = &served[&("apps/v1".to_string(), "Deployment".to_string())];
        assert_eq!(
            (api.plural.as_str(), api.group.as_str(), *namespaced),
            ("deployments", "apps", true)
        );
    }
}
