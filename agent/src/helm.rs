//! A Helm bundle deployed as a Helm release, as Rancher Fleet's agent deploys every
//! bundle: `pre-install` or `pre-upgrade` hooks, the resources, a wait when
//! `helm.timeoutSeconds` is set (Jobs too under `waitForJobs`), `post-install` or
//! `post-upgrade` hooks, then a new revision in Helm's storage, the one before it
//! superseded and the history cut to `helm.maxHistory` (Fleet's default: 2). Under
//! `helm.atomic` a failure is undone: a failed install uninstalled, a failed upgrade rolled
//! back to the last deployed revision (with its `pre-rollback` and `post-rollback` hooks).

use std::time::Duration;

use fleet_api::{BundleDeployment, BundleDeploymentOptions, BundleDeploymentResource, HelmRelease};
use kube::ResourceExt;
use serde_json::Value;

use crate::apply::{apply_all, Desired};
use crate::release::{self, NewRevision, Store};
use crate::{hooks, Agent, Error};

/// How often readiness is looked at while `timeoutSeconds` makes the agent wait.
const WAIT_POLL: Duration = Duration::from_millis(500);

/// A release installed or upgraded.
pub(crate) struct Deployed {
    /// The new revision.
    pub(crate) version: u64,
    /// What the revision it replaced applied (from that revision's manifest); `None` for
    /// an install.
    pub(crate) replaced: Option<Vec<BundleDeploymentResource>>,
    /// The objects as the apply returned them, when nothing (a wait, a hook) came after
    /// it that may have changed them.
    pub(crate) live: Option<Vec<Value>>,
}

/// Installs or upgrades `release` with the objects `desired`. A failure is recorded as a
/// `failed` revision and returned.
pub(crate) async fn deploy(
    agent: &Agent,
    deployment: &BundleDeployment,
    desired: &[Desired],
    options: &BundleDeploymentOptions,
    release: &HelmRelease,
) -> Result<Deployed, Error> {
    let helm = options.helm.clone().unwrap_or_default();
    // The release's namespace was made sure of with the objects' (`deploy::prepare`).
    label_namespace(agent, &release.namespace, options).await?;
    let store = Store::new(&agent.local, &release.namespace, &release.name);
    let history = store.history().await?;
    let previous = history.iter().rev().find(|r| r.status == "deployed");
    let replaced = previous
        .map(|p| replaced_objects(deployment, release, p))
        .transpose()?;
    let install = previous.is_none();
    let version = history.last().map_or(0, |r| r.version) + 1;
    let timeout = hooks::timeout(options);
    let (pre, post) = if install {
        ("pre-install", "post-install")
    } else {
        ("pre-upgrade", "post-upgrade")
    };
    let mut ran = Vec::new();
    let mut live = None;
    let outcome = async {
        hooks::run(agent, release, pre, timeout, &mut ran).await?;
        let applied_before = replaced.as_deref().unwrap_or_default();
        let applied = apply_all(
            agent,
            deployment,
            desired,
            options,
            Some(release),
            applied_before,
        )
        .await?;
        let waits = hooks::configured_timeout(options).is_some();
        if waits {
            wait_ready(agent, desired, helm.wait_for_jobs.unwrap_or(false), timeout).await?;
        }
        hooks::run(agent, release, post, timeout, &mut ran).await?;
        live = (!waits && ran.is_empty()).then_some(applied);
        Ok(())
    }
    .await;
    let description = match &outcome {
        Ok(()) if install => "Install complete".to_string(),
        Ok(()) => "Upgrade complete".to_string(),
        Err(error) => format!("Release \"{}\" failed: {error}", release.name),
    };
    let revision = NewRevision {
        release,
        version,
        status: if outcome.is_ok() {
            "deployed"
        } else {
            "failed"
        },
        description,
        manifest: release::manifest(desired.iter().map(|d| &d.value)),
        hooks: hooks::records(release, &ran),
        first_deployed: first_deployed(&history, previous)?,
        bundle_id: &deployment.name_any(),
        agent_namespace: &agent.namespace,
        service_account: options.service_account.as_deref().unwrap_or_default(),
        keep_resources: options.keep_resources.unwrap_or(false),
    };
    store.create(&revision).await?;
    if outcome.is_ok() {
        for older in history.iter().filter(|r| r.status == "deployed") {
            store.set_status(older, "superseded").await?;
        }
    }
    let max_history = helm
        .max_history
        .and_then(|m| usize::try_from(m).ok())
        .filter(|m| *m > 0)
        .unwrap_or(release::DEFAULT_MAX_HISTORY);
    let Err(error) = outcome else {
        // The revisions now held: the earlier ones (those deployed now superseded), then
        // the new one; no need to list them again.
        let mut held: Vec<(u64, &str)> = history
            .iter()
            .map(|r| match r.status.as_str() {
                "deployed" => (r.version, "superseded"),
                other => (r.version, other),
            })
            .collect();
        held.push((version, "deployed"));
        store.prune_held(&held, max_history).await?;
        return Ok(Deployed {
            version,
            replaced,
            live,
        });
    };
    if !helm.atomic.unwrap_or(false) {
        store.prune(max_history).await?;
        return Err(error);
    }
    // `atomic`: a failed install is uninstalled, a failed upgrade rolled back.
    let undone = match previous {
        None => {
            let applied: Vec<_> = desired.iter().map(Desired::record).collect();
            crate::apply::prune(agent, &applied, &[]).await?;
            store.delete_all(&store.history().await?).await?;
            "uninstalled"
        }
        Some(previous) => {
            let rollback = Rollback {
                store: &store,
                previous,
                version: version + 1,
                timeout,
            };
            rollback.run(agent, deployment, desired, options).await?;
            store.prune(max_history).await?;
            "rolled back"
        }
    };
    Err(Error::Atomic(format!(
        "release {} failed, and has been {undone} due to atomic being set: {error}",
        release.name
    )))
}

/// An `atomic` upgrade that failed, undone: the last deployed revision's objects applied
/// again (what the failed attempt added deleted), its rollback hooks run, and a new
/// revision recording it.
struct Rollback<'a> {
    store: &'a Store,
    previous: &'a release::Revision,
    version: u64,
    timeout: Duration,
}

impl Rollback<'_> {
    async fn run(
        &self,
        agent: &Agent,
        deployment: &BundleDeployment,
        attempted: &[Desired],
        options: &BundleDeploymentOptions,
    ) -> Result<(), Error> {
        let body = self.previous.body()?;
        let name = body["name"].as_str().unwrap_or_default();
        let namespace = body["namespace"].as_str().unwrap_or_default();
        let manifest = body["manifest"].as_str().unwrap_or_default();
        let hooks_of = crate::uninstall::stored_release(name, namespace, body);
        let restored = objects_of(agent, manifest).await?;
        let mut ran = Vec::new();
        hooks::run(agent, &hooks_of, "pre-rollback", self.timeout, &mut ran).await?;
        // The revision rolled back to applied every object restored.
        let kept: Vec<_> = restored.iter().map(Desired::record).collect();
        apply_all(
            agent,
            deployment,
            &restored,
            options,
            Some(&hooks_of),
            &kept,
        )
        .await?;
        let added: Vec<_> = attempted.iter().map(Desired::record).collect();
        crate::apply::prune(agent, &added, &kept).await?;
        hooks::run(agent, &hooks_of, "post-rollback", self.timeout, &mut ran).await?;
        let mut record = body.clone();
        record["version"] = Value::from(self.version);
        record["info"]["status"] = Value::from("deployed");
        record["info"]["description"] =
            Value::from(format!("Rollback to {}", self.previous.version));
        record["info"]["last_deployed"] = Value::from(jiff::Timestamp::now().to_string());
        self.store
            .create_body(self.version, "deployed", &record)
            .await?;
        self.store.set_status(self.previous, "superseded").await
    }
}

/// What `revision`, the one being replaced, applied: the deployment's status when it lists
/// the whole set and reports that very revision (the agent wrote it when it made the
/// revision), else the set read from the revision's manifest. A revision made since by
/// someone else (`helm upgrade`, `helm rollback`, an atomic rollback) has another number.
fn replaced_objects(
    deployment: &BundleDeployment,
    release: &HelmRelease,
    revision: &release::Revision,
) -> Result<Vec<BundleDeploymentResource>, Error> {
    let recorded = revision_record(&release.namespace, &release.name, revision.version);
    match &deployment.status {
        Some(status)
            if status.release.as_deref() == Some(recorded.as_str())
                && status.resources_omitted == 0
                && !status.resources.is_empty() =>
        {
            Ok(status.resources.clone())
        }
        _ => revision.body().and_then(release::applied),
    }
}

/// How a deployment's status names revision `version` of release `name` in `namespace`:
/// `namespace/name:revision`.
pub(crate) fn revision_record(namespace: &str, name: &str, version: u64) -> String {
    format!("{namespace}/{name}:{version}")
}

/// When revision 1 was deployed: every revision records it, so the deployed one says, or
/// else the oldest kept.
fn first_deployed(
    history: &[release::Revision],
    deployed: Option<&release::Revision>,
) -> Result<Option<String>, Error> {
    match deployed.or(history.first()) {
        Some(revision) => revision.first_deployed(),
        None => Ok(None),
    }
}

/// The objects of a stored release's manifest, ready to apply again.
async fn objects_of(agent: &Agent, manifest: &str) -> Result<Vec<Desired>, Error> {
    let mut objects = Vec::new();
    for value in release::manifest_objects(manifest)? {
        let (api, _) = agent.resolve(&value).await?;
        let object = serde_json::from_value(value).map_err(|e| Error::Invalid(e.to_string()))?;
        objects.push(Desired::new(api, object)?);
    }
    Ok(objects)
}

/// Sets `namespaceLabels` and `namespaceAnnotations` on the release's namespace (others it
/// has are left alone).
async fn label_namespace(
    agent: &Agent,
    namespace: &str,
    options: &BundleDeploymentOptions,
) -> Result<(), Error> {
    let labels = options.namespace_labels.clone().unwrap_or_default();
    let annotations = options.namespace_annotations.clone().unwrap_or_default();
    if labels.is_empty() && annotations.is_empty() || !agent.creates_namespaces {
        return Ok(());
    }
    let patch = serde_json::json!({"metadata": {"labels": labels, "annotations": annotations}});
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(agent.local.clone())
        .patch(
            namespace,
            &crate::apply::patch_params(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

/// Waits until every object is ready, as `helm --wait` does (Jobs only when `jobs`).
async fn wait_ready(
    agent: &Agent,
    desired: &[Desired],
    jobs: bool,
    timeout: Duration,
) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let mut waiting = None;
        for item in desired {
            if item.api.kind == "Job" && !jobs {
                continue;
            }
            let api = agent.api_for(&item.api, item.object.metadata.namespace.as_deref());
            let reason = match api.get_opt(&item.object.name_any()).await? {
                Some(live) => serde_json::to_value(&live)
                    .ok()
                    .and_then(|v| crate::readiness::not_ready(&v, &[])),
                None => Some("missing".into()),
            };
            if let Some(reason) = reason {
                waiting = Some(format!(
                    "{} {}: {reason}",
                    item.api.kind,
                    item.object.name_any()
                ));
                break;
            }
        }
        let Some(waiting) = waiting else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "not ready within {} s: {waiting}",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use fleet_api::BundleDeploymentStatus;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;
    use serde_json::json;

    use super::*;

    fn resource(name: &str) -> BundleDeploymentResource {
        BundleDeploymentResource {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "apps".into(),
            name: name.into(),
        }
    }

    /// Revision `version` of release `web`, deployed, its manifest holding ConfigMap `a`.
    fn revision(version: u64) -> release::Revision {
        let manifest =
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\n";
        let body = json!({"version": version, "manifest": manifest});
        let encoded = crate::record_encoding::encode(&body).expect("encodes");
        let labels = [
            ("version", version.to_string()),
            ("status", "deployed".into()),
        ];
        let secret = Secret {
            metadata: ObjectMeta {
                labels: Some(labels.map(|(k, v)| (k.to_string(), v)).into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(
                "release".to_string(),
                ByteString(encoded.into_bytes()),
            )])),
            ..Secret::default()
        };
        release::Revision::read(format!("web.v{version}"), secret)
            .expect("reads")
            .expect("a record")
    }

    #[test]
    fn the_replaced_objects_come_from_the_status_only_when_it_lists_that_whole_revision() {
        let release = HelmRelease {
            name: "web".into(),
            namespace: "apps".into(),
            ..HelmRelease::default()
        };
        let with_status = |record: &str, omitted: u64| {
            let mut deployment = BundleDeployment::new("web", Default::default());
            deployment.status = Some(BundleDeploymentStatus {
                release: Some(record.into()),
                resources: vec![resource("listed")],
                resources_omitted: omitted,
                ..BundleDeploymentStatus::default()
            });
            deployment
        };
        let names = |deployment: &BundleDeployment| {
            let objects = replaced_objects(deployment, &release, &revision(3)).expect("read");
            objects.into_iter().map(|r| r.name).collect::<Vec<_>>()
        };
        // The agent's own report of revision 3, whole: no need to read the manifest.
        assert_eq!(names(&with_status("apps/web:3", 0)), ["listed"]);
        // A revision made since by someone else, a list cut short, or no status: the
        // manifest says.
        assert_eq!(names(&with_status("apps/web:2", 0)), ["a"]);
        assert_eq!(names(&with_status("apps/web:3", 5)), ["a"]);
        assert_eq!(
            names(&BundleDeployment::new("web", Default::default())),
            ["a"]
        );
    }
}
