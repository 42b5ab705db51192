//! A deleted BundleDeployment uninstalled from the member cluster, as `helm uninstall` and
//! Fleet's agent do: the release's `pre-delete` hooks, then its objects deleted (unless
//! `keepResources`), its release records removed, its `post-delete` hooks, and with
//! `deleteNamespace` its namespace deleted. The agent then reports it `Uninstalled` (it
//! writes status only); the controller lets the deployment go.

use fleet_api::labels::BUNDLE_DEPLOYMENT_FINALIZER;
use fleet_api::{BundleDeployment, Condition, HelmHook, HelmRelease, UNINSTALLED_CONDITION};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use crate::release::Store;
use crate::{hooks, Agent, Error};

/// Namespaces `deleteNamespace` never deletes.
const KEPT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Uninstalls `deployment` if it waits for that (carries the finalizer and has not
/// reported it done), then reports it done.
pub async fn uninstall(agent: &Agent, deployment: &BundleDeployment) -> Result<(), Error> {
    let waits = deployment
        .finalizers()
        .iter()
        .any(|f| f == BUNDLE_DEPLOYMENT_FINALIZER);
    if !waits || deployment.is_uninstalled() {
        return Ok(());
    }
    let options = deployment.spec.options.clone().unwrap_or_default();
    let status = deployment.status.clone().unwrap_or_default();
    let keep = options.keep_resources.unwrap_or(false);
    let (namespace, name) = release_of(deployment);
    let store = Store::new(&agent.local, &namespace, &name);
    let history = store.history().await?;
    let hooks_of = history
        .iter()
        .rev()
        .find(|r| r.status == "deployed")
        .or(history.last())
        .map(|r| r.body().map(|body| stored_release(&name, &namespace, body)))
        .transpose()?;
    let timeout = hooks::timeout(&options);
    let mut ran = Vec::new();
    if let Some(release) = &hooks_of {
        hooks::run(agent, release, "pre-delete", timeout, &mut ran).await?;
    }
    if !keep {
        // CRDs (and with them every object of their kinds) go only when asked.
        let delete_crds = options.delete_crd_resources.unwrap_or(false);
        // Every object the release's kept revisions applied (a failed upgrade may have
        // made some); the status lists only part of a large set, and is read only when the
        // release is gone.
        let mut recorded = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for revision in &history {
            for resource in crate::release::applied(revision.body()?)? {
                if seen.insert(resource.clone()) {
                    recorded.push(resource);
                }
            }
        }
        if history.is_empty() {
            recorded = status.resources.clone();
        }
        let applied: Vec<_> = recorded
            .iter()
            .filter(|r| delete_crds || r.kind != "CustomResourceDefinition")
            .cloned()
            .collect();
        crate::apply::prune(agent, &applied, &[]).await?;
    }
    store.delete_all(&history).await?;
    if let Some(release) = &hooks_of {
        hooks::run(agent, release, "post-delete", timeout, &mut ran).await?;
    }
    if options.delete_namespace.unwrap_or(false)
        && !keep
        && !KEPT_NAMESPACES.contains(&namespace.as_str())
    {
        let namespaces = Api::<Namespace>::all(agent.local.clone());
        fleet_objects::client::delete_if_present(
            &namespaces,
            &namespace,
            &DeleteParams::background(),
        )
        .await?;
    }
    let mut conditions = status.conditions.clone();
    conditions.retain(|c| c.type_ != UNINSTALLED_CONDITION);
    conditions.push(Condition {
        type_: UNINSTALLED_CONDITION.into(),
        status: "True".into(),
        last_update_time: Some(jiff::Timestamp::now().to_string()),
        message: Some(if keep {
            "release removed, resources kept".into()
        } else {
            "release and resources removed".into()
        }),
        ..Condition::default()
    });
    let patch = json!({"status": {"conditions": conditions}});
    crate::apply::write_status(agent, deployment, &patch).await?;
    tracing::info!(deployment = %deployment.name_any(), kept = keep, "uninstalled");
    Ok(())
}

/// The release a deployment made: from its status (`namespace/name:revision`), else as it
/// would be named.
fn release_of(deployment: &BundleDeployment) -> (String, String) {
    let recorded = deployment
        .status
        .as_ref()
        .and_then(|s| s.release.as_deref())
        .and_then(|r| r.rsplit_once(':'))
        .and_then(|(release, _)| release.split_once('/'))
        .map(|(namespace, name)| (namespace.to_string(), name.to_string()));
    recorded.unwrap_or_else(|| {
        let options = deployment.spec.options.clone().unwrap_or_default();
        let (name, namespace) =
            fleet_renderer::bundle::release_of(&options, &deployment.name_any());
        (namespace, name)
    })
}

/// The hooks of a stored release (Helm keeps each one's manifest), as the agent runs them.
pub(crate) fn stored_release(name: &str, namespace: &str, body: &Value) -> HelmRelease {
    let hooks = body
        .get("hooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|hook| {
            let manifest = hook.get("manifest").and_then(Value::as_str)?;
            let object: Value = serde_yaml_ng::from_str(manifest).ok()?;
            let strings = |key: &str| -> Vec<String> {
                hook.get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            };
            Some(HelmHook {
                path: hook["path"].as_str().unwrap_or_default().to_string(),
                events: strings("events"),
                weight: hook["weight"].as_i64().unwrap_or(0),
                delete_policies: strings("delete_policies"),
                object,
            })
        })
        .collect();
    HelmRelease {
        name: name.to_string(),
        namespace: namespace.to_string(),
        hooks,
        ..HelmRelease::default()
    }
}
