//! `downstreamResources` in the member: the agent reads the copies the controller placed
//! in its cluster's namespace on the hub and recreates them, under their own names, in the
//! deployment's namespace. They are applied first and then tracked like the bundle's other
//! objects: pruned when they leave it, removed on uninstall unless `keepResources`.

use fleet_api::{BundleDeployment, BundleDeploymentOptions};
use fleet_objects::downstream::{api, copy_name, restored};
use kube::ResourceExt;
use serde_json::Value;

use crate::{Agent, Error};

/// The objects `deployment`'s downstream resources become in `namespace` of the member.
pub(crate) async fn objects(
    agent: &Agent,
    deployment: &BundleDeployment,
    options: &BundleDeploymentOptions,
    namespace: &str,
) -> Result<Vec<Value>, Error> {
    let bundle = deployment.name_any();
    let mut objects = Vec::new();
    for reference in &options.downstream_resources {
        let name = copy_name(&bundle, reference);
        let copy = api(&agent.hub, &agent.namespace, &reference.kind)
            .map_err(|e| Error::Invalid(e.to_string()))?
            .get_opt(&name)
            .await?
            .and_then(|o| serde_json::to_value(o).ok());
        let copy = copy.ok_or_else(|| {
            Error::Invalid(format!(
                "downstreamResources: {} {} has no copy on the hub yet",
                reference.kind, reference.name
            ))
        })?;
        objects.push(restored(&copy, namespace));
    }
    Ok(objects)
}
