//! One BundleDeployment applied to the agent's cluster: its Content's resources by
//! server-side apply (field manager `fleet-agent`) in install order, each labelled with
//! the deployment; objects of the previous deployment that left it pruned; the outcome,
//! applied and ready told apart, written back to the hub.

use std::collections::BTreeSet;

use fleet_api::{BundleDeployment, BundleDeploymentResource, Condition, Content};
use kube::api::{DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use crate::{Agent, Error};

/// The field manager of the agent's writes.
pub const FIELD_MANAGER: &str = "fleet-agent";
/// Label on every applied object: the BundleDeployment's name.
pub const DEPLOYMENT_LABEL: &str = "fleet.cattle.io/bundle-deployment";
/// Label on every applied object: the BundleDeployment's namespace on the hub.
pub const DEPLOYMENT_NAMESPACE_LABEL: &str = "fleet.cattle.io/bundle-deployment-namespace";

/// Applies `deployment` unless it is paused or already applied, prunes, and reports.
pub async fn deployment(agent: &Agent, deployment: &BundleDeployment) -> Result<(), Error> {
    let status = deployment.status.clone().unwrap_or_default();
    let wanted = deployment.spec.deployment_id.clone().unwrap_or_default();
    if deployment.spec.paused || wanted.is_empty() {
        return Ok(());
    }
    let options = deployment.spec.options.clone().unwrap_or_default();
    let applied = if status.applied_deployment_id.as_deref() == Some(wanted.as_str()) {
        status.resources.clone()
    } else {
        match apply_all(agent, deployment, &wanted, &options).await {
            Ok(applied) => applied,
            Err(error) => {
                let message = error.to_string();
                report(
                    agent,
                    deployment,
                    None,
                    &status.resources,
                    vec![],
                    Some(&message),
                )
                .await?;
                return Err(error);
            }
        }
    };
    if status.applied_deployment_id.as_deref() != Some(wanted.as_str()) {
        let keep = options.keep_resources.unwrap_or(false);
        if !keep {
            prune(agent, &status.resources, &applied).await?;
        }
    }
    let not_ready = not_ready(agent, &applied).await?;
    report(agent, deployment, Some(&wanted), &applied, not_ready, None).await
}

async fn apply_all(
    agent: &Agent,
    deployment: &BundleDeployment,
    wanted: &str,
    options: &fleet_api::BundleDeploymentOptions,
) -> Result<Vec<BundleDeploymentResource>, Error> {
    let content_id = wanted.split(':').next().unwrap_or_default();
    let content = Api::<Content>::all(agent.hub.clone())
        .get(content_id)
        .await?;
    let resources = fleet_controller::variant::unpack(&content)?;
    let take_ownership = options
        .helm
        .as_ref()
        .and_then(|h| h.take_ownership)
        .unwrap_or(false);
    let default_namespace = options
        .target_namespace
        .clone()
        .or_else(|| options.default_namespace.clone())
        .unwrap_or_else(|| "default".into());
    let mut applied = Vec::new();
    for resource in resources {
        let (api_resource, scope) = agent.resolve(&resource).await?;
        let mut object: DynamicObject =
            serde_json::from_value(resource).map_err(|e| Error::Invalid(e.to_string()))?;
        let namespaced = matches!(scope.scope, Scope::Namespaced);
        if namespaced && object.metadata.namespace.is_none() {
            object.metadata.namespace = Some(default_namespace.clone());
        }
        if let Some(namespace) = object.metadata.namespace.as_deref().filter(|_| namespaced) {
            fleet_controller::reconcile::ensure_namespace(&agent.local, namespace).await?;
        }
        let labels = object.metadata.labels.get_or_insert_with(Default::default);
        labels.insert(DEPLOYMENT_LABEL.into(), deployment.name_any());
        labels.insert(
            DEPLOYMENT_NAMESPACE_LABEL.into(),
            deployment.namespace().unwrap_or_default(),
        );
        let api = agent.api_for(&api_resource, object.metadata.namespace.as_deref());
        let name = object.name_any();
        if !take_ownership {
            if let Some(existing) = api.get_opt(&name).await? {
                let ours = existing.labels().get(DEPLOYMENT_LABEL) == Some(&deployment.name_any());
                if !ours {
                    return Err(Error::NotOwned(format!(
                        "{} {} exists and is not managed by this bundle (set helm.takeOwnership to adopt it)",
                        api_resource.kind,
                        qualified(object.metadata.namespace.as_deref(), &name)
                    )));
                }
            }
        }
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await?;
        applied.push(BundleDeploymentResource {
            api_version: api_resource.api_version.clone(),
            kind: api_resource.kind.clone(),
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name,
        });
    }
    Ok(applied)
}

fn qualified(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// Deletes what the previous deployment applied and this one does not.
async fn prune(
    agent: &Agent,
    previous: &[BundleDeploymentResource],
    current: &[BundleDeploymentResource],
) -> Result<(), Error> {
    let keep: BTreeSet<&BundleDeploymentResource> = current.iter().collect();
    for gone in previous.iter().filter(|r| !keep.contains(r)).rev() {
        let resource = json!({"apiVersion": gone.api_version, "kind": gone.kind});
        let Ok((api_resource, _)) = agent.resolve(&resource).await else {
            continue;
        };
        let namespace = Some(gone.namespace.as_str()).filter(|n| !n.is_empty());
        let api = agent.api_for(&api_resource, namespace);
        match api.delete(&gone.name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(response)) if response.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// Why each applied object is not ready yet, as `Kind namespace/name: reason`.
async fn not_ready(
    agent: &Agent,
    applied: &[BundleDeploymentResource],
) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for resource in applied {
        let (api_resource, _) = agent
            .resolve(&json!({"apiVersion": resource.api_version, "kind": resource.kind}))
            .await?;
        let namespace = Some(resource.namespace.as_str()).filter(|n| !n.is_empty());
        let api = agent.api_for(&api_resource, namespace);
        let live = match api.get_opt(&resource.name).await? {
            Some(live) => serde_json::to_value(&live).map_err(|e| Error::Invalid(e.to_string()))?,
            None => {
                out.push(format!(
                    "{} {}: missing",
                    resource.kind,
                    qualified(namespace, &resource.name)
                ));
                continue;
            }
        };
        if let Some(reason) = crate::readiness::not_ready(&live) {
            out.push(format!(
                "{} {}: {reason}",
                resource.kind,
                qualified(namespace, &resource.name)
            ));
        }
    }
    Ok(out)
}

async fn report(
    agent: &Agent,
    deployment: &BundleDeployment,
    applied_id: Option<&str>,
    resources: &[BundleDeploymentResource],
    not_ready: Vec<String>,
    error: Option<&str>,
) -> Result<(), Error> {
    let old = deployment.status.clone().unwrap_or_default();
    let now = jiff::Timestamp::now().to_string();
    let deployed = error.is_none();
    let ready = deployed && not_ready.is_empty();
    let condition = |kind: &str, ok: bool, message: String| Condition {
        type_: kind.into(),
        status: if ok { "True" } else { "False" }.into(),
        last_update_time: Some(now.clone()),
        message: Some(message).filter(|m| !m.is_empty()),
        ..Condition::default()
    };
    let conditions = vec![
        condition("Deployed", deployed, error.unwrap_or_default().to_string()),
        condition("Ready", ready, not_ready.join("; ")),
    ];
    let same = |a: &[Condition], b: &[Condition]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.type_ == y.type_ && x.status == y.status && x.message == y.message)
    };
    let applied_id = applied_id
        .map(String::from)
        .or(old.applied_deployment_id.clone());
    if old.ready == ready
        && old.applied_deployment_id == applied_id
        && old.resources == resources
        && same(&old.conditions, &conditions)
    {
        return Ok(());
    }
    let non_ready: Vec<Value> = not_ready.iter().map(|m| json!({"summary": m})).collect();
    let patch = json!({"status": {
        "appliedDeploymentID": applied_id,
        "ready": ready,
        "nonModified": true,
        "nonReadyStatus": non_ready,
        "resources": resources,
        "conditions": conditions,
        "display": {
            "deployed": if deployed { "Yes" } else { "No" },
            "monitored": "Yes",
            "state": if ready { "Ready" } else if deployed { "NotReady" } else { "ErrApplied" },
        },
    }});
    Api::<BundleDeployment>::namespaced(agent.hub.clone(), &agent.namespace)
        .patch_status(
            &deployment.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

impl Agent {
    /// The API resource and scope of a manifest's kind, from discovery of the agent's
    /// cluster (run again when a kind is unknown, as after a CRD is applied).
    pub async fn resolve(&self, resource: &Value) -> Result<(ApiResource, ApiCapabilities), Error> {
        let api_version = resource
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = resource.get("kind").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        for refresh in [false, true] {
            let mut discovery = self.discovery.lock().await;
            if refresh || discovery.is_none() {
                *discovery = Some(Discovery::new(self.local.clone()).run().await?);
            }
            if let Some(found) = discovery.as_ref().and_then(|d| d.resolve_gvk(&gvk)) {
                return Ok(found);
            }
        }
        Err(Error::Invalid(format!(
            "{api_version} {kind} is not served by this cluster"
        )))
    }

    fn api_for(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.local.clone(), ns, resource),
            None => Api::all_with(self.local.clone(), resource),
        }
    }
}
