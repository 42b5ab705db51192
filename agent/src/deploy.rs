//! One BundleDeployment applied to the agent's cluster: its Content's resources by
//! server-side apply (field manager `fleet-agent`) in install order, each labelled with
//! the deployment; objects of the previous deployment that left it pruned; the outcome,
//! applied and ready told apart, written back to the hub.

use std::collections::BTreeSet;

use fleet_api::{
    BundleDeployment, BundleDeploymentOptions, BundleDeploymentResource, Condition, HelmRelease,
};
use kube::api::{DynamicObject, PatchParams};
use kube::discovery::{ApiResource, Scope};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};
use std::sync::Arc;

use crate::apply::{
    apply_all, apply_one, forced, prune, qualified, server_side_apply, write_status, Desired,
    FIELD_MANAGER, MANAGED_BY_LABEL, RELEASE_NAMESPACE_ANNOTATION, RELEASE_NAME_ANNOTATION,
    RESOURCE_POLICY_ANNOTATION,
};
use crate::objectset::{self, ObjectSet};
use crate::own_writes::Copy;
use crate::{status_budget, Agent, Error};
use fleet_api::labels::{BUNDLE_NAME_LABEL, DEPLOYMENT_LABEL, DEPLOYMENT_NAMESPACE_LABEL};

/// What a reconcile found in the cluster beside readiness.
#[derive(Default)]
struct Findings {
    not_ready: Vec<String>,
    modified: Vec<Value>,
}

/// Applies `deployment` when its `deploymentID` is new (after the bundles it depends on
/// are ready here), prunes, checks drift (correcting it when asked), and reports; a
/// deleted one is uninstalled. Returns whether the reconcile found the deployment ready, or
/// `None` when it did not reconcile.
pub async fn deployment(
    agent: &Agent,
    deployment: &BundleDeployment,
) -> Result<Option<bool>, Error> {
    let name = deployment.name_any();
    let triggered = agent.triggers.wanted(&name);
    if deployment.metadata.deletion_timestamp.is_none() {
        match agent.own_writes.classify(deployment) {
            // What the agent has just applied, inspected and reported: its next reconcile comes
            // with a change to its objects, or the resync.
            Copy::OwnWrite if !triggered => return Ok(None),
            // Older than the agent's last report: the event of that report brings the reconcile.
            Copy::Stale => {
                if triggered {
                    agent.triggers.want(&name);
                }
                return Ok(None);
            }
            _ => {}
        }
    }
    let options = deployment.spec.options.clone().unwrap_or_default();
    // The agent itself, before it takes the deployment's service account, which may not
    // read namespaces.
    let own = agent;
    let status = deployment.status.clone().unwrap_or_default();
    let wanted = deployment.spec.deployment_id.clone().unwrap_or_default();
    let new_deployment = status.applied_deployment_id.as_deref() != Some(wanted.as_str());
    let deleting = deployment.metadata.deletion_timestamp.is_some();
    // A drift reconcile may reuse a recent answer about the service account; anything that
    // changes the cluster only a very recent one.
    let fresh = new_deployment || deleting;
    let account =
        crate::impersonate::account_for(agent, options.service_account.as_deref(), fresh).await;
    let agent = match account {
        Ok(user) => &agent.for_deployment(deployment, user.as_deref())?,
        Err(error) => {
            let outcome = Outcome::failed(&error);
            report(agent, deployment, outcome).await?;
            return Err(error);
        }
    };
    if deleting {
        crate::uninstall::uninstall(agent, deployment).await?;
        return Ok(None);
    }
    // Off schedule: nothing new, no drift corrected, until the cluster's window opens.
    if deployment.spec.paused || deployment.spec.off_schedule || wanted.is_empty() {
        return Ok(None);
    }
    if new_deployment && agent.rolled_back(deployment).as_deref() == Some(wanted.as_str()) {
        return Ok(None);
    }
    if let Some(selector) = &options.allowed_target_namespace_selector {
        if let Err(refusal) = target_namespace_allowed(&own.local, &options, selector).await {
            let outcome = Outcome::not_applied("TargetNamespaceNotAllowed", refusal.clone());
            report(agent, deployment, outcome).await?;
            // Retried with backoff: nothing tells the agent when the namespace changes.
            return Err(Error::Invalid(refusal));
        }
    }
    if new_deployment {
        if let Some(waiting) = dependencies_waiting(agent, deployment).await? {
            let outcome = Outcome::waiting(waiting);
            return report(agent, deployment, outcome).await.map(Some);
        }
    }
    let prepared = match prepare(agent, deployment, &wanted, &options).await {
        Ok(prepared) => prepared,
        Err(error) => {
            let outcome = Outcome::failed(&error);
            report(agent, deployment, outcome).await?;
            return Err(error);
        }
    };
    let applied: Vec<BundleDeploymentResource> =
        prepared.desired.iter().map(Desired::record).collect();
    let mut rolled_out = RolledOut::default();
    if new_deployment {
        rolled_out = match roll_out(agent, deployment, &prepared, &options).await {
            Ok(rolled_out) => rolled_out,
            Err(error) => {
                agent.forget_namespaces(&prepared.namespaces);
                let outcome = Outcome::failed(&error);
                report(agent, deployment, outcome).await?;
                if matches!(error, Error::Atomic(_)) {
                    agent.remember_rolled_back(deployment, &wanted);
                    return Ok(Some(false));
                }
                return Err(error);
            }
        };
        if !options.keep_resources.unwrap_or(false) {
            // What the last deployment applied: the whole set from the release it replaced
            // (the status lists only part of a large one), else from the status.
            let previous = rolled_out.replaced.as_deref().unwrap_or(&status.resources);
            prune(agent, previous, &applied).await?;
        }
    }
    let findings = inspect(agent, &prepared, &options, rolled_out.live)
        .await
        .inspect_err(|_| agent.forget_namespaces(&prepared.namespaces))?;
    let outcome = Outcome {
        applied_id: Some(wanted),
        revision: rolled_out.revision,
        resources: Some(applied),
        not_ready: findings.not_ready,
        modified: findings.modified,
        error: None,
    };
    report(agent, deployment, outcome).await.map(Some)
}

/// Fleet's check of a GitRepoRestriction's `allowedTargetNamespaceSelector` on the
/// cluster: the namespace the deployment goes to (its target namespace, else its default
/// one) must exist and have labels the selector matches. The refusal is in Fleet's words.
async fn target_namespace_allowed(
    local: &kube::Client,
    options: &BundleDeploymentOptions,
    selector: &fleet_api::LabelSelector,
) -> Result<(), String> {
    let namespace = (options.target_namespace.as_deref())
        .or(options.default_namespace.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(local.clone());
    let found = match namespaces.get_opt(namespace).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Err(format!(
                "target namespace {namespace} does not exist on downstream cluster"
            ))
        }
        Err(error) => {
            return Err(format!(
                "failed to get target namespace {namespace}: {error}"
            ))
        }
    };
    let labels = found.metadata.labels.unwrap_or_default();
    if fleet_objects::selector::matches_selector(selector, &labels) {
        return Ok(());
    }
    let shown: Vec<String> = labels.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    Err(format!(
        "target namespace {namespace} does not match AllowedTargetNamespaceSelector ({}); namespace labels map[{}]",
        fleet_objects::selector::to_text(selector),
        shown.join(" ")
    ))
}

/// What applying a new deployment did.
#[derive(Default)]
struct RolledOut {
    /// The Helm release revision made, `namespace/name:revision`.
    revision: Option<String>,
    /// What the revision it replaced applied, when a release records it.
    replaced: Option<Vec<BundleDeploymentResource>>,
    /// The objects as the apply returned them, when nothing after it may have changed
    /// them: the first reconcile needs not read them again.
    live: Option<Vec<Value>>,
}

/// Applies a new deployment, as a Helm release when it is one, in its namespaces (made
/// sure of first).
async fn roll_out(
    agent: &Agent,
    deployment: &BundleDeployment,
    prepared: &Prepared,
    options: &fleet_api::BundleDeploymentOptions,
) -> Result<RolledOut, Error> {
    agent.ensure_namespaces(&prepared.namespaces).await?;
    let Some(release) = &prepared.release else {
        let listed = deployment
            .status
            .as_ref()
            .map_or(&[][..], |status| &status.resources);
        let live = apply_all(agent, deployment, &prepared.desired, options, None, listed).await?;
        return Ok(RolledOut {
            live: Some(live),
            ..RolledOut::default()
        });
    };
    let deployed =
        crate::helm::deploy(agent, deployment, &prepared.desired, options, release).await?;
    Ok(RolledOut {
        revision: Some(crate::helm::revision_record(
            &release.namespace,
            &release.name,
            deployed.version,
        )),
        replaced: deployed.replaced,
        live: deployed.live,
    })
}

/// The state a deployment reported (`Ready`, `NotReady`, `Modified`, `ErrApplied`), or
/// `WaitApplied` before its agent reported anything.
fn state_of(deployment: &BundleDeployment) -> String {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.display.as_ref())
        .and_then(|d| d.state.clone())
        .unwrap_or_else(|| "WaitApplied".into())
}

/// The message saying which bundles this one waits for, if any is not ready here.
async fn dependencies_waiting(
    agent: &Agent,
    deployment: &BundleDeployment,
) -> Result<Option<String>, Error> {
    if deployment.spec.depends_on.is_empty() {
        return Ok(None);
    }
    let here: Vec<BundleDeployment> =
        Api::<BundleDeployment>::namespaced(agent.hub.clone(), &agent.namespace)
            .list(&Default::default())
            .await?
            .items;
    let mut waiting = Vec::new();
    for dependency in &deployment.spec.depends_on {
        let matching: Vec<&BundleDeployment> = here
            .iter()
            .filter(|d| match (&dependency.name, &dependency.selector) {
                (Some(name), _) => d.labels().get(BUNDLE_NAME_LABEL) == Some(name),
                (None, Some(selector)) => {
                    fleet_objects::selector::matches_selector(selector, d.labels())
                }
                (None, None) => false,
            })
            .collect();
        let accepted = if dependency.accepted_states.is_empty() {
            vec!["Ready".to_string()]
        } else {
            dependency.accepted_states.clone()
        };
        let ready =
            !matching.is_empty() && matching.iter().all(|d| accepted.contains(&state_of(d)));
        if !ready {
            let name = dependency
                .name
                .clone()
                .unwrap_or_else(|| "selected bundles".into());
            waiting.push(name);
        }
    }
    Ok((!waiting.is_empty()).then(|| {
        format!(
            "waiting for dependencies to be ready: {}",
            waiting.join(", ")
        )
    }))
}

/// A deployment's objects as they should be, and what applying them needs.
struct Prepared {
    desired: Vec<Desired>,
    /// The Helm release they make up, if any.
    release: Option<HelmRelease>,
    /// The namespaces they go in (and the release's): made sure of before anything is
    /// applied.
    namespaces: BTreeSet<String>,
}

/// The deployment's objects as they should be: from its Content, with namespaces filled
/// in and the deployment's labels added (and Helm's ownership marks, for a Helm release).
async fn prepare(
    agent: &Agent,
    deployment: &BundleDeployment,
    wanted: &str,
    options: &fleet_api::BundleDeploymentOptions,
) -> Result<Prepared, Error> {
    let content_id = wanted.split(':').next().unwrap_or_default();
    let payload = agent.contents.payload(&agent.hub, content_id).await?;
    let (resources, helm) = match &payload.member_render {
        Some(render) => {
            let rendered = crate::member_render::render(agent, deployment, render).await?;
            (rendered.resources, rendered.helm)
        }
        None => (payload.resources.clone(), payload.helm.clone()),
    };
    let default_namespace = options
        .target_namespace
        .clone()
        .or_else(|| options.default_namespace.clone())
        .unwrap_or_else(|| "default".into());
    let mut resources = resources;
    let copies = crate::downstream::objects(agent, deployment, options, &default_namespace).await?;
    resources.splice(0..0, copies);
    let mut desired = Vec::new();
    let mut crds_applied = false;
    // Each namespace is made sure of once, the release's (where Helm keeps its records)
    // among them.
    let mut namespaces: BTreeSet<String> = helm.iter().map(|r| r.namespace.clone()).collect();
    let set = ObjectSet::of(&deployment.name_any());
    for resource in resources.iter().cloned() {
        let resolved = match agent.resolve(&resource).await {
            // A kind the bundle's own CRDs define: they go in first (Helm installs a
            // chart's CRDs before anything else), then it is served.
            Err(Error::Invalid(_)) if !crds_applied && defines_crds(&resources) => {
                apply_crds(agent, deployment, &set, &resources, helm.as_ref()).await?;
                crds_applied = true;
                agent.resolve(&resource).await
            }
            resolved => resolved,
        };
        let (api, scope) = resolved?;
        let mut resource = resource;
        // What the kind's schema does not know, the API server would prune from a custom
        // resource; its server-side apply refuses it instead ("field not declared in
        // schema"). Pruned here, as Helm's writes would have it pruned.
        let schema = match defined_schema(&resources, &api) {
            Some(schema) => Some(schema),
            None => agent.custom_schema(&api).await?,
        };
        if let Some(schema) = schema {
            let pruned = schema.prune(&mut resource);
            if !pruned.is_empty() {
                tracing::debug!(kind = %api.kind, ?pruned, "fields the CRD does not declare");
            }
        }
        let mut object: DynamicObject =
            serde_json::from_value(resource).map_err(|e| Error::Invalid(e.to_string()))?;
        let namespaced = matches!(scope.scope, Scope::Namespaced);
        if namespaced && object.metadata.namespace.is_none() {
            object.metadata.namespace = Some(default_namespace.clone());
        }
        if let Some(namespace) = object.metadata.namespace.as_ref().filter(|_| namespaced) {
            namespaces.insert(namespace.clone());
        }
        mark(&mut object, &set, deployment, helm.as_ref());
        agent.triggers.watch_kind(&api);
        desired.push(Desired::new(api, object)?);
    }
    Ok(Prepared {
        desired,
        release: helm,
        namespaces,
    })
}

/// Labels `object` with the deployment that applies it, gives it the marks of its object
/// `set` as Fleet's agent writes them, and Helm's ownership marks of `release`; a CRD is
/// kept when its release lets it go unless the bundle deletes CRDs, as Fleet marks it.
fn mark(
    object: &mut DynamicObject,
    set: &ObjectSet,
    deployment: &BundleDeployment,
    release: Option<&HelmRelease>,
) {
    let keep_crd = object
        .types
        .as_ref()
        .is_some_and(|t| t.kind == "CustomResourceDefinition")
        && deployment
            .spec
            .options
            .as_ref()
            .and_then(|o| o.delete_crd_resources)
            != Some(true);
    let annotations = object
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(objectset::ID_ANNOTATION.into(), set.id.clone());
    if keep_crd {
        annotations.insert(RESOURCE_POLICY_ANNOTATION.into(), "keep".into());
    }
    let labels = object.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(objectset::HASH_LABEL.into(), set.hash.clone());
    labels.insert(DEPLOYMENT_LABEL.into(), deployment.name_any());
    labels.insert(
        DEPLOYMENT_NAMESPACE_LABEL.into(),
        deployment.namespace().unwrap_or_default(),
    );
    if let Some(release) = release {
        labels.insert(MANAGED_BY_LABEL.into(), "Helm".into());
        let annotations = object
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(RELEASE_NAME_ANNOTATION.into(), release.name.clone());
        annotations.insert(
            RELEASE_NAMESPACE_ANNOTATION.into(),
            release.namespace.clone(),
        );
    }
}

/// The schema a CRD among `resources` gives the kind of `api`: the bundle's own definition,
/// which the objects beside it follow, whatever the cluster holds now.
fn defined_schema(
    resources: &[Value],
    api: &ApiResource,
) -> Option<Arc<fleet_objects::schema::Schema>> {
    let crd = resources.iter().filter(|r| is_crd(r)).find(|crd| {
        crd.pointer("/spec/group").and_then(Value::as_str) == Some(api.group.as_str())
            && crd.pointer("/spec/names/kind").and_then(Value::as_str) == Some(api.kind.as_str())
    })?;
    let version = crd
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(api.version.as_str()))?;
    let schema = version.pointer("/schema/openAPIV3Schema")?;
    Some(Arc::new(fleet_objects::schema::Schema::compile(schema)))
}

fn is_crd(resource: &Value) -> bool {
    resource.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
}

fn defines_crds(resources: &[Value]) -> bool {
    resources.iter().any(is_crd)
}

/// Applies the CRDs among `resources` ahead of the rest, so that their kinds are served.
async fn apply_crds(
    agent: &Agent,
    deployment: &BundleDeployment,
    set: &ObjectSet,
    resources: &[Value],
    release: Option<&HelmRelease>,
) -> Result<(), Error> {
    for crd in resources.iter().filter(|r| is_crd(r)) {
        let (api, _) = agent.resolve(crd).await?;
        let mut object: DynamicObject =
            serde_json::from_value(crd.clone()).map_err(|e| Error::Invalid(e.to_string()))?;
        mark(&mut object, set, deployment, release);
        let name = object.name_any();
        apply_one(agent, &Desired::new(api, object)?, false).await?;
        // Its kind is served, and its objects taken, only once it is Established.
        let patience = fleet_objects::client::CRD_PATIENCE;
        if !fleet_objects::client::wait_established(&agent.local, &name, patience).await? {
            return Err(Error::Invalid(format!(
                "CustomResourceDefinition {name} was not Established within {} s",
                patience.as_secs()
            )));
        }
    }
    Ok(())
}

/// Readiness and drift of every object, read from the cluster unless `applied` holds them
/// as an apply has just returned them; drift is corrected (and looked at again) when
/// `correctDrift.enabled` is set, the namespaces made sure of first.
async fn inspect(
    agent: &Agent,
    prepared: &Prepared,
    options: &fleet_api::BundleDeploymentOptions,
    applied: Option<Vec<Value>>,
) -> Result<Findings, Error> {
    let desired = &prepared.desired;
    let masks = options
        .diff
        .as_ref()
        .map(|d| d.compare_patches.clone())
        .unwrap_or_default();
    let correct = options.correct_drift.as_ref().is_some_and(|c| c.enabled);
    let ignored = options
        .ignore
        .as_ref()
        .map(|i| i.conditions.clone())
        .unwrap_or_default();
    let mut findings = Findings::default();
    let mut applied = applied
        .filter(|applied| applied.len() == desired.len())
        .map(Vec::into_iter);
    for item in desired {
        let namespace = item.object.metadata.namespace.as_deref();
        let label = format!(
            "{} {}",
            item.api.kind,
            qualified(namespace, &item.object.name_any())
        );
        let mut live = match applied.as_mut().and_then(Iterator::next) {
            Some(object) => Some(object),
            None => live_value(agent, item).await?,
        };
        let mut paths = match &live {
            Some(live) => drifted(agent, item, live, &masks).await,
            None => Vec::new(),
        };
        if correct && (live.is_none() || !paths.is_empty()) {
            // Made sure of once: the agent remembers them.
            agent.ensure_namespaces(&prepared.namespaces).await?;
            let applied = apply_one(agent, item, forced(options)).await?;
            paths = drifted(agent, item, &applied, &masks).await;
            live = Some(applied);
        }
        let Some(live) = live else {
            findings.not_ready.push(format!("{label}: missing"));
            findings.modified.push(json!({
                "kind": item.api.kind, "apiVersion": item.api.api_version,
                "namespace": namespace, "name": item.object.name_any(), "missing": true,
            }));
            continue;
        };
        if !paths.is_empty() {
            let patch = crate::drift::live_patch(&live, &paths).to_string();
            findings.modified.push(json!({
                "kind": item.api.kind, "apiVersion": item.api.api_version,
                "namespace": namespace, "name": item.object.name_any(), "paths": paths,
                "patch": patch,
            }));
        }
        if let Some(reason) = crate::readiness::not_ready(&live, &ignored) {
            findings.not_ready.push(format!("{label}: {reason}"));
        }
    }
    Ok(findings)
}

/// The drifted paths of `item` in `live`: those the comparison finds, less those where the
/// server already holds what applying would write (asked with a dry-run apply, only when
/// the comparison finds any).
async fn drifted(
    agent: &Agent,
    item: &Desired,
    live: &Value,
    masks: &[fleet_api::ComparePatch],
) -> Vec<String> {
    let paths = crate::drift::drifted_paths(&item.value, live, masks);
    if paths.is_empty() {
        return paths;
    }
    let api = agent.api_for(&item.api, item.object.metadata.namespace.as_deref());
    let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
    match server_side_apply(&api, &item.object.name_any(), &params, item).await {
        Ok(would_apply) => crate::drift::settled_paths(paths, &would_apply, live),
        Err(error) => {
            tracing::debug!(kind = %item.api.kind, name = %item.object.name_any(), %error,
                "dry-run apply for drift failed; the comparison stands");
            paths
        }
    }
}

async fn live_value(agent: &Agent, item: &Desired) -> Result<Option<Value>, Error> {
    let api = agent.api_for(&item.api, item.object.metadata.namespace.as_deref());
    api.get_opt(&item.object.name_any())
        .await?
        .as_ref()
        .map(as_value)
        .transpose()
}

fn as_value(object: &DynamicObject) -> Result<Value, Error> {
    serde_json::to_value(object).map_err(|e| Error::Invalid(e.to_string()))
}

/// What a reconcile of a deployment came to, as reported to the hub.
struct Outcome {
    applied_id: Option<String>,
    /// The Helm release revision made, `namespace/name:revision`.
    revision: Option<String>,
    /// What the deployment applied; `None` when the status's record stands.
    resources: Option<Vec<BundleDeploymentResource>>,
    not_ready: Vec<String>,
    modified: Vec<Value>,
    /// Why nothing new was applied: the condition reason and the message.
    error: Option<(&'static str, String)>,
}

impl Outcome {
    /// Nothing (new) applied: the previous objects stand, because of `error`.
    fn failed(error: &Error) -> Self {
        Self::not_applied(error.reason(), error.to_string())
    }

    /// Nothing applied while the bundles this one depends on are not ready.
    fn waiting(message: String) -> Self {
        Self::not_applied("DependenciesNotReady", message)
    }

    fn not_applied(reason: &'static str, message: String) -> Self {
        Self {
            applied_id: None,
            revision: None,
            resources: None,
            not_ready: Vec::new(),
            modified: Vec::new(),
            error: Some((reason, message)),
        }
    }
}

/// Writes the status `outcome` makes, unless it is the status already; returns whether it
/// reports the deployment ready.
async fn report(
    agent: &Agent,
    deployment: &BundleDeployment,
    outcome: Outcome,
) -> Result<bool, Error> {
    let old = deployment.status.clone().unwrap_or_default();
    let now = jiff::Timestamp::now().to_string();
    let deployed = outcome.error.is_none();
    let ready = deployed && outcome.not_ready.is_empty();
    let non_modified = outcome.modified.is_empty();
    let condition = |kind: &str, ok: bool, message: String| Condition {
        type_: kind.into(),
        status: if ok { "True" } else { "False" }.into(),
        last_update_time: Some(now.clone()),
        message: Some(message).filter(|m| !m.is_empty()),
        ..Condition::default()
    };
    let errors: Vec<String> = outcome.error.iter().map(|(_, m)| m.clone()).collect();
    let mut deployed_condition = condition("Deployed", deployed, status_budget::message(&errors));
    deployed_condition.reason = outcome.error.as_ref().map(|(r, _)| r.to_string());
    let modified_message: Vec<String> = outcome
        .modified
        .iter()
        .map(|m| {
            let paths: Vec<&str> = m["paths"]
                .as_array()
                .map(|p| p.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "{} {} modified {}",
                m["kind"].as_str().unwrap_or(""),
                m["name"].as_str().unwrap_or(""),
                paths.join(", ")
            )
        })
        .collect();
    let conditions = vec![
        deployed_condition,
        condition("Ready", ready, status_budget::message(&outcome.not_ready)),
        condition(
            "Monitored",
            non_modified,
            status_budget::message(&modified_message),
        ),
    ];
    let (resources, resources_omitted) = match &outcome.resources {
        Some(applied) => status_budget::listed(applied),
        None => (old.resources.clone(), old.resources_omitted),
    };
    let modified = status_budget::modified(&outcome.modified);
    let same = |a: &[Condition], b: &[Condition]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.type_ == y.type_
                    && x.status == y.status
                    && x.reason == y.reason
                    && x.message == y.message
            })
    };
    let applied_id = outcome.applied_id.or(old.applied_deployment_id.clone());
    let release = outcome.revision.clone().or_else(|| {
        release_record(
            deployment,
            old.release.as_deref(),
            applied_id.as_deref(),
            old.applied_deployment_id.as_deref(),
        )
    });
    if old.ready == ready
        && old.release == release
        && old.non_modified == non_modified
        && old.modified_status == modified
        && old.applied_deployment_id == applied_id
        && old.resources == resources
        && old.resources_omitted == resources_omitted
        && same(&old.conditions, &conditions)
    {
        return Ok(ready);
    }
    let non_ready: Vec<Value> = status_budget::summaries(&outcome.not_ready)
        .into_iter()
        .map(|m| json!({"summary": m}))
        .collect();
    let state = if !deployed {
        "ErrApplied"
    } else if !non_modified {
        "Modified"
    } else if ready {
        "Ready"
    } else {
        "NotReady"
    };
    let patch = json!({"status": {
        "appliedDeploymentID": applied_id,
        "release": release,
        "ready": ready,
        "nonModified": non_modified,
        "nonReadyStatus": non_ready,
        "modifiedStatus": modified,
        "resources": resources,
        "resourcesOmitted": Some(resources_omitted).filter(|n| *n > 0),
        "conditions": conditions,
        "display": {
            "deployed": if deployed { "Yes" } else { "No" },
            "monitored": if non_modified { "Yes" } else { "No" },
            "state": state,
        },
    }});
    let name = deployment.name_any();
    agent.own_writes.sending(&name);
    let written = write_status(agent, deployment, &patch).await;
    let version = written.as_ref().ok().cloned().flatten();
    if agent.own_writes.answered(&name, version) {
        agent.triggers.reconcile_again(&name);
    }
    written?;
    Ok(ready)
}

/// The release record, `namespace/name:revision`, when this reconcile made no new Helm revision:
/// the release named as the renderer names it, the revision kept, or counted up for a
/// deployment applied without a release (a Content packed before releases were recorded).
fn release_record(
    deployment: &BundleDeployment,
    old: Option<&str>,
    applied: Option<&str>,
    previously_applied: Option<&str>,
) -> Option<String> {
    applied?;
    let options = deployment.spec.options.clone().unwrap_or_default();
    let (name, namespace) = fleet_renderer::bundle::release_of(&options, &deployment.name_any());
    let revision: u64 = old
        .and_then(|r| r.rsplit_once(':'))
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0);
    let revision = if applied != previously_applied || revision == 0 {
        revision + 1
    } else {
        revision
    };
    Some(crate::helm::revision_record(&namespace, &name, revision))
}
