//! Applying objects to the agent's cluster, the layer every deploy path stands on: a
//! deployment's objects by server-side apply (field manager `fleet-agent`), ownership
//! checked, objects that cannot change in place replaced when forced; what left a
//! deployment pruned; a deployment's status written to the hub; kinds resolved and their
//! schemas read.

use std::collections::BTreeSet;
use std::sync::Arc;

use fleet_api::labels::DEPLOYMENT_LABEL;
use fleet_api::{BundleDeployment, BundleDeploymentResource, HelmRelease};
use fleet_objects::client::write_text;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::{ApiCapabilities, ApiResource};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use crate::{Agent, Error};

/// The field manager of the agent's writes.
pub const FIELD_MANAGER: &str = "fleet-agent";

/// The parameters of the agent's creates and replaces: its writes are recorded under its
/// field manager, as its server-side applies are, not under one the server guesses.
pub(crate) fn post_params() -> PostParams {
    fleet_objects::client::post_params(FIELD_MANAGER)
}

/// The parameters of the agent's patches (its status reports, its namespace labels), under
/// its field manager.
pub(crate) fn patch_params() -> PatchParams {
    fleet_objects::client::patch_params(FIELD_MANAGER)
}

/// One object of a deployment, ready to apply: its API and the object as it should be.
pub(crate) struct Desired {
    /// Its API.
    pub(crate) api: ApiResource,
    /// The object as it should be.
    pub(crate) object: DynamicObject,
    /// The same object as JSON, as drift is compared and Helm's manifest records it.
    pub(crate) value: Value,
}

/// Helm's ownership marks: the release an object belongs to.
pub(crate) const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
pub(crate) const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
pub(crate) const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Helm's annotation that keeps an object when its release no longer has it.
pub(crate) const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";

impl Desired {
    /// `object`, of `api`, ready to apply.
    pub(crate) fn new(api: ApiResource, object: DynamicObject) -> Result<Self, Error> {
        let value = serde_json::to_value(&object).map_err(|e| Error::Invalid(e.to_string()))?;
        Ok(Self { api, object, value })
    }

    /// The record of it the deployment's status keeps.
    pub(crate) fn record(&self) -> BundleDeploymentResource {
        BundleDeploymentResource {
            api_version: self.api.api_version.clone(),
            kind: self.api.kind.clone(),
            namespace: self.object.metadata.namespace.clone().unwrap_or_default(),
            name: self.object.name_any(),
        }
    }
}

/// Whether an existing object may be applied over: it carries this deployment's label, or
/// Helm's marks of this release (as a cluster Rancher Fleet managed has them).
fn owned(existing: &DynamicObject, deployment: &str, release: Option<&HelmRelease>) -> bool {
    if existing.labels().get(DEPLOYMENT_LABEL).map(String::as_str) == Some(deployment) {
        return true;
    }
    release.is_some_and(|release| {
        let annotations = existing.annotations();
        annotations.get(RELEASE_NAME_ANNOTATION) == Some(&release.name)
            && annotations.get(RELEASE_NAMESPACE_ANNOTATION) == Some(&release.namespace)
    })
}

/// Applies every object in order, and returns them as applied. An object that exists and
/// belongs to something else stops the apply unless `helm.takeOwnership` is set; as with
/// `helm upgrade`, objects in `applied_before` (what the release or deployment being
/// replaced applied) are not checked.
pub(crate) async fn apply_all(
    agent: &Agent,
    deployment: &BundleDeployment,
    desired: &[Desired],
    options: &fleet_api::BundleDeploymentOptions,
    release: Option<&HelmRelease>,
    applied_before: &[BundleDeploymentResource],
) -> Result<Vec<Value>, Error> {
    let take_ownership = options
        .helm
        .as_ref()
        .and_then(|h| h.take_ownership)
        .unwrap_or(false);
    let already_applied: BTreeSet<&BundleDeploymentResource> = applied_before.iter().collect();
    let mut applied = Vec::with_capacity(desired.len());
    for item in desired {
        let api = agent.api_for(&item.api, item.object.metadata.namespace.as_deref());
        let name = item.object.name_any();
        if !take_ownership && !already_applied.contains(&item.record()) {
            if let Some(existing) = api.get_opt(&name).await? {
                if !owned(&existing, &deployment.name_any(), release) {
                    return Err(Error::NotOwned(format!(
                        "{} {} exists and is not managed by this bundle (set helm.takeOwnership to adopt it)",
                        item.api.kind,
                        qualified(item.object.metadata.namespace.as_deref(), &name)
                    )));
                }
            }
        }
        applied.push(apply_one(agent, item, forced(options)).await?);
    }
    Ok(applied)
}

/// Whether objects that cannot change in place are replaced: `helm.force`, or
/// `correctDrift.force`.
pub(crate) fn forced(options: &fleet_api::BundleDeploymentOptions) -> bool {
    options.helm.as_ref().and_then(|h| h.force).unwrap_or(false)
        || options
            .correct_drift
            .as_ref()
            .and_then(|c| c.force)
            .unwrap_or(false)
}

/// How long a replaced object may take to go, beyond a Pod's grace period.
const REPLACE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// How long the replaced object may take to go: a Pod its grace period besides (its
/// kubelet stops its containers first). What it owns is deleted in the background: the new
/// object need not wait for the old one's Pods to stop.
fn replace_patience(item: &Desired) -> std::time::Duration {
    let is_pod = item.api.kind == "Pod" && item.api.group.is_empty();
    let grace = match item.value.pointer("/spec/terminationGracePeriodSeconds") {
        _ if !is_pod => 0,
        Some(seconds) => seconds.as_u64().unwrap_or(0),
        // Kubernetes' default.
        None => 30,
    };
    REPLACE_PATIENCE + std::time::Duration::from_secs(grace)
}

/// Applies one object, and returns it as applied. With `force`, an object the cluster
/// refuses to change in place (an immutable field: 422) is deleted and created again, as
/// `helm upgrade --force` does.
pub(crate) async fn apply_one(agent: &Agent, item: &Desired, force: bool) -> Result<Value, Error> {
    let api = agent.api_for(&item.api, item.object.metadata.namespace.as_deref());
    let name = item.object.name_any();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let own = agent.triggers.applying(&item.api, &item.object);
    match server_side_apply(&api, &name, &params, item).await {
        Ok(applied) => {
            own.done(&applied);
            return Ok(applied);
        }
        Err(Error::Kube(kube::Error::Api(response))) if force && response.code == 422 => {
            tracing::info!(kind = %item.api.kind, %name, reason = %response.message, "replacing");
        }
        Err(error) => return Err(error),
    }
    let patience = replace_patience(item);
    let gone =
        fleet_objects::client::delete_and_wait(&api, &name, &DeleteParams::background(), patience)
            .await?;
    if !gone {
        return Err(Error::Invalid(format!(
            "{} {name} was not deleted within {} s to be replaced",
            item.api.kind,
            patience.as_secs()
        )));
    }
    let applied = server_side_apply(&api, &name, &params, item).await?;
    own.done(&applied);
    Ok(applied)
}

/// The server-side apply of `item`, and the object as the cluster answers it, read as
/// JSON (not as a `DynamicObject`: a reconcile reads it as JSON).
pub(crate) async fn server_side_apply(
    api: &Api<DynamicObject>,
    name: &str,
    params: &PatchParams,
    item: &Desired,
) -> Result<Value, Error> {
    let answer = fleet_objects::client::write_text(api, |request| {
        request.patch(name, params, &Patch::Apply(&item.object))
    })
    .await?;
    serde_json::from_str(&answer).map_err(|e| {
        Error::Invalid(format!(
            "the answer to the apply of {} {name}: {e}",
            item.api.kind
        ))
    })
}

pub(crate) fn qualified(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// Deletes what the previous deployment applied and this one does not.
/// Objects annotated `helm.sh/resource-policy: keep` are left in place, as Helm leaves them.
pub(crate) async fn prune(
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
        let Some(live) = api.get_opt(&gone.name).await? else {
            continue;
        };
        if live
            .annotations()
            .get(RESOURCE_POLICY_ANNOTATION)
            .map(String::as_str)
            == Some("keep")
        {
            continue;
        }
        fleet_objects::client::delete_if_present(&api, &gone.name, &DeleteParams::background())
            .await?;
    }
    Ok(())
}

/// Merges `patch` into the status of `deployment` on the hub; returns the resourceVersion
/// it was written at, all that is read of the answer.
pub(crate) async fn write_status(
    agent: &Agent,
    deployment: &BundleDeployment,
    patch: &Value,
) -> Result<Option<String>, Error> {
    let api = Api::<BundleDeployment>::namespaced(agent.hub.clone(), &agent.namespace);
    let name = deployment.name_any();
    let answer = write_text(&api, |request| {
        request.patch_subresource("status", &name, &patch_params(), &Patch::Merge(patch))
    })
    .await?;
    let written: Written = serde_json::from_str(&answer).map_err(|e| {
        Error::Invalid(format!("the hub's answer to a status write of {name}: {e}"))
    })?;
    Ok(written.metadata.resource_version)
}

/// What [`write_status`] reads of the written deployment.
#[derive(serde::Deserialize)]
struct Written {
    metadata: WrittenMetadata,
}

/// The part of [`Written`]'s metadata read.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct WrittenMetadata {
    resource_version: Option<String>,
}

impl Agent {
    /// The API resource and scope of a manifest's kind, asked of the agent's cluster the
    /// first time (one request: the resources of its group version) and remembered. A kind
    /// not served is asked again each time, so that one a CRD has just defined is found.
    pub async fn resolve(&self, resource: &Value) -> Result<(ApiResource, ApiCapabilities), Error> {
        let api_version = resource
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = resource.get("kind").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let not_served = || {
            Error::Invalid(format!(
                "{api_version} {kind} is not served by this cluster"
            ))
        };
        if version.is_empty() || kind.is_empty() {
            return Err(not_served());
        }
        let gvk = GroupVersionKind::gvk(group, version, kind);
        if let Some(known) = self
            .kinds
            .lock()
            .ok()
            .and_then(|kinds| kinds.get(&gvk).cloned())
        {
            return Ok(known);
        }
        match kube::discovery::pinned_kind(&self.local, &gvk).await {
            Ok(found) => {
                if let Ok(mut kinds) = self.kinds.lock() {
                    kinds.insert(gvk, found.clone());
                }
                Ok(found)
            }
            Err(kube::Error::Discovery(_)) => Err(not_served()),
            Err(kube::Error::Api(response)) if response.code == 404 => Err(not_served()),
            Err(error) => Err(error.into()),
        }
    }

    /// The schema the cluster's CRD gives the kind of `api`, if a CRD defines it (read once
    /// in a while: a CRD may change).
    pub(crate) async fn custom_schema(
        &self,
        api: &ApiResource,
    ) -> Result<Option<Arc<fleet_objects::schema::Schema>>, Error> {
        if api.group.is_empty() {
            return Ok(None);
        }
        let key = format!("{}/{}/{}", api.group, api.version, api.kind);
        if let Some(known) = self.schemas.get(&key, crate::recent::RECHECK) {
            return Ok(known);
        }
        let crds: Api<CustomResourceDefinition> = Api::all(self.local.clone());
        let crd = match crds.get_opt(&format!("{}.{}", api.plural, api.group)).await {
            Ok(crd) => crd,
            // An agent that may not read CRDs applies objects as they are.
            Err(kube::Error::Api(response)) if response.code == 403 => None,
            Err(error) => return Err(error.into()),
        };
        let schema = crd
            .and_then(|crd| {
                crd.spec
                    .versions
                    .into_iter()
                    .find(|v| v.name == api.version)
            })
            .and_then(|version| version.schema?.open_api_v3_schema)
            .and_then(|schema| serde_json::to_value(schema).ok())
            .map(|schema| Arc::new(fleet_objects::schema::Schema::compile(&schema)));
        self.schemas.remember(&key, schema.clone());
        Ok(schema)
    }

    /// The API of `resource` in the agent's cluster, in `namespace` if it is namespaced.
    pub(crate) fn api_for(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
    ) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.local.clone(), ns, resource),
            None => Api::all_with(self.local.clone(), resource),
        }
    }
}
