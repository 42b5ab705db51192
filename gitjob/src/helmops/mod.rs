//! The HelmOp controller: each HelmOp becomes a Bundle of its name deploying a chart from a
//! Helm repository, an OCI registry or an archive's URL, with no Git repository. The chart's
//! `version` (a version or a range) is resolved against the repository when the HelmOp
//! changes and, with a `pollingInterval` and a range, again every interval, so a new
//! release matching the range rolls out on its own. The HelmOp's status says which version
//! is deployed and mirrors its Bundle's deployments.

mod bundle;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleet_api::labels::HELMOP_LABEL;
use fleet_api::{Bundle, HelmOp, HelmOpDisplay, HelmOpStatus};
use fleet_charts::{ChartCache, HelmAuth};
use fleet_objects::backoff::WatchBackoff;
use fleet_objects::client::patch_params;
use fleet_objects::conditions::set_condition;
use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::{watcher, Controller};
use kube::{Api, ResourceExt};
use serde_json::json;

/// The field manager of the HelmOp controller's writes.
pub const FIELD_MANAGER: &str = "fleet-helmops";

/// How soon a HelmOp whose repository could not be read is tried again, when it does not
/// poll (one that polls is tried at its interval).
const RETRY: Duration = Duration::from_secs(30);

/// Errors that make a reconcile retry with backoff.
#[derive(Debug, thiserror::Error)]
pub enum HelmOpError {
    /// The API server refused or failed a request.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// Resolving the version could not run.
    #[error("resolving the chart version: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// The version a HelmOp's generation resolved to, and when.
struct Resolved {
    uid: Option<String>,
    generation: Option<i64>,
    version: String,
    at: Instant,
}

/// What the controller's reconciles share.
struct HelmOps {
    client: kube::Client,
    charts: ChartCache,
    resolved: Mutex<HashMap<String, Resolved>>,
}

/// Runs the HelmOp controller with `client`, fetching indexes and tags through `charts`
/// (and its egress rule), until `shutdown` resolves.
pub async fn run(
    client: kube::Client,
    charts: ChartCache,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let ctx = Arc::new(HelmOps {
        client: client.clone(),
        charts,
        resolved: Mutex::default(),
    });
    Controller::new(
        Api::<HelmOp>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<Bundle>::all(client),
        watcher::Config::default().labels(HELMOP_LABEL),
    )
    .with_config(ControllerConfig::default().debounce(Duration::from_millis(100)))
    .trigger_backoff(WatchBackoff::default())
    .graceful_shutdown_on(shutdown)
    .run(reconcile, retry, ctx)
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::debug!(%error, "helmop reconcile");
        }
    })
    .await;
}

fn retry(helmop: Arc<HelmOp>, error: &HelmOpError, _: Arc<HelmOps>) -> Action {
    tracing::warn!(helmop = %helmop.name_any(), %error, "reconcile failed");
    Action::requeue(Duration::from_secs(2))
}

/// Writes the HelmOp's Bundle at the version its `helm.version` resolves to (looking again
/// once its polling interval has passed) and its status.
async fn reconcile(helmop: Arc<HelmOp>, ctx: Arc<HelmOps>) -> Result<Action, HelmOpError> {
    if helmop.metadata.deletion_timestamp.is_some() {
        // Its Bundle is owned by it and goes with it.
        return Ok(Action::await_change());
    }
    let namespace = helmop.namespace().unwrap_or_default();
    let name = helmop.name_any();
    let key = format!("{namespace}/{name}");
    let old = helmop.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let now = jiff::Timestamp::now().to_string();
    // The namespace's Policies fill in their defaults, or refuse the HelmOp.
    let helmop = match admitted(&ctx.client, &helmop).await? {
        Ok(admitted) => admitted,
        Err(why) => {
            refuse(&ctx.client, &helmop, &old, status, &why).await?;
            return Ok(Action::await_change());
        }
    };
    let helm = helmop.spec.bundle.options.helm.as_deref();
    if let Some(why) = bundle::refusal(helm) {
        refuse(&ctx.client, &helmop, &old, status, &why).await?;
        return Ok(Action::await_change());
    }
    let Some(helm) = helm else {
        return Ok(Action::await_change());
    };
    let wanted = helm.version.clone().unwrap_or_default();
    let interval = polling_interval(&helmop)
        .filter(|_| !bundle::is_exact(&wanted) && !bundle::is_tarball(helm));
    let remembered = ctx.remembered(&key, &helmop);
    let due = match (&remembered, interval) {
        (None, _) => true,
        (Some((_, at)), Some(every)) => at.elapsed() >= every,
        (Some(_), None) => false,
    };
    let version = match remembered {
        Some((version, _)) if !due => version,
        _ => {
            let resolved = resolve(&ctx, &helmop, helm).await?;
            if interval.is_some() {
                status.last_polling_triggered = Some(now.clone());
            }
            match resolved {
                Ok(version) => {
                    ctx.remember(&key, &helmop, &version);
                    if interval.is_some() {
                        set_condition(&mut status.conditions, "Polled", true, "", "", &now);
                        set_condition(&mut status.conditions, "Stalled", false, "", "", &now);
                    }
                    version
                }
                Err(why) => {
                    let why = format!("could not get a chart version: {why}");
                    if interval.is_some() && status.version.is_some() {
                        // A failed poll leaves what is deployed in place.
                        set_condition(&mut status.conditions, "Polled", false, "Error", &why, &now);
                        set_condition(
                            &mut status.conditions,
                            "Stalled",
                            true,
                            "Stalled",
                            &why,
                            &now,
                        );
                        write_status(&ctx.client, &helmop, &old, status).await?;
                    } else {
                        refuse(&ctx.client, &helmop, &old, status, &why).await?;
                    }
                    return Ok(Action::requeue(interval.unwrap_or(RETRY)));
                }
            }
        }
    };
    let bundles: Api<Bundle> = Api::namespaced(ctx.client.clone(), &namespace);
    let existing = bundles.get_opt(&name).await?;
    if existing
        .as_ref()
        .is_some_and(|b| b.spec.helm_op_options.is_none())
    {
        let why = format!("a non-helmops bundle already exists with name {name}; aborting");
        refuse(&ctx.client, &helmop, &old, status, &why).await?;
        return Ok(Action::await_change());
    }
    let wanted_bundle = bundle::bundle_for(&helmop, &version);
    let written = bundles
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&wanted_bundle),
        )
        .await?;
    if status.version.as_deref() != Some(version.as_str()) {
        tracing::info!(helmop = %key, %version, "deploying chart version");
        // As Fleet's HelmOp controller: the version itself is the message.
        fleet_objects::events::record(
            &ctx.client,
            &helmop,
            "fleet-helmops",
            fleet_objects::events::EventType::Normal,
            "GotNewChartVersion",
            &version,
        )
        .await;
    }
    status.version = Some(version).filter(|v| !v.is_empty());
    set_condition(&mut status.conditions, "Accepted", true, "", "", &now);
    mirror_bundle(&mut status, &written);
    write_status(&ctx.client, &helmop, &old, status).await?;
    Ok(match interval {
        Some(every) => Action::requeue(every),
        None => Action::await_change(),
    })
}

/// `helmop` as the Policies of its namespace admit it, their defaults filled in; or why
/// they refuse it.
async fn admitted(
    client: &kube::Client,
    helmop: &HelmOp,
) -> Result<Result<HelmOp, String>, kube::Error> {
    let namespace = helmop.namespace().unwrap_or_default();
    let policies = Api::<fleet_api::Policy>::namespaced(client.clone(), &namespace)
        .list(&Default::default())
        .await?;
    Ok(fleet_objects::policy::Policies::combine(&policies.items)
        .and_then(|policies| policies.admit_helm_op(&helmop.spec))
        .map(|spec| HelmOp {
            spec,
            ..helmop.clone()
        }))
}

/// The HelmOp's `pollingInterval`, when it polls at all (`0` or none does not).
fn polling_interval(helmop: &HelmOp) -> Option<Duration> {
    let text = helmop.spec.polling_interval.as_deref()?;
    fleet_objects::duration::parse_go_duration(text).filter(|d| !d.is_zero())
}

/// Resolves the chart's version against its repository, with the HelmOp's credentials;
/// the outer error is the API server's, the inner one the repository's.
async fn resolve(
    ctx: &HelmOps,
    helmop: &HelmOp,
    helm: &fleet_api::HelmOptions,
) -> Result<Result<String, String>, HelmOpError> {
    let chart = bundle::remote_chart(helm);
    let repository = chart.repo.clone().unwrap_or_else(|| chart.chart.clone());
    let auth = HelmAuth::read_for_repository(
        &ctx.client,
        &helmop.namespace().unwrap_or_default(),
        helmop.spec.helm_secret_name.as_deref(),
        &repository,
    )
    .await;
    let auth = match auth {
        Ok(auth) => auth.skipping_tls_verify(helmop.spec.insecure_skip_tls_verify),
        Err(why) => return Ok(Err(why.to_string())),
    };
    let charts = ctx.charts.clone();
    let resolved =
        tokio::task::spawn_blocking(move || charts.resolve_version(&chart, &auth)).await?;
    Ok(resolved.map_err(|e| e.to_string()))
}

impl HelmOps {
    /// The version this HelmOp's current generation resolved to, and when.
    fn remembered(&self, key: &str, helmop: &HelmOp) -> Option<(String, Instant)> {
        let resolved = self.resolved.lock().ok()?;
        let seen = resolved.get(key)?;
        (seen.uid == helmop.uid() && seen.generation == helmop.metadata.generation)
            .then(|| (seen.version.clone(), seen.at))
    }

    fn remember(&self, key: &str, helmop: &HelmOp, version: &str) {
        if let Ok(mut resolved) = self.resolved.lock() {
            resolved.insert(
                key.to_string(),
                Resolved {
                    uid: helmop.uid(),
                    generation: helmop.metadata.generation,
                    version: version.to_string(),
                    at: Instant::now(),
                },
            );
        }
    }
}

/// The Bundle's deployments as the HelmOp's status shows them.
fn mirror_bundle(status: &mut HelmOpStatus, bundle: &Bundle) {
    let bundle_status = bundle.status.clone().unwrap_or_default();
    let summary = bundle_status.summary.clone().unwrap_or_default();
    status.ready_clusters = summary.ready;
    status.desired_ready_clusters = summary.desired_ready;
    status.display = Some(HelmOpDisplay {
        ready_bundle_deployments: Some(format!("{}/{}", summary.ready, summary.desired_ready)),
        state: bundle_status.display.and_then(|d| d.state),
        ..status.display.clone().unwrap_or_default()
    });
    status.summary = Some(summary);
    if let Some(ready) = bundle_status.conditions.iter().find(|c| c.type_ == "Ready") {
        status.conditions.retain(|c| c.type_ != "Ready");
        status.conditions.push(ready.clone());
    }
}

/// Says in the HelmOp's status why it is not accepted (`Accepted=False`, reason `Error`).
async fn refuse(
    client: &kube::Client,
    helmop: &HelmOp,
    old: &HelmOpStatus,
    mut status: HelmOpStatus,
    why: &str,
) -> Result<(), kube::Error> {
    let now = jiff::Timestamp::now().to_string();
    set_condition(
        &mut status.conditions,
        "Accepted",
        false,
        "Error",
        why,
        &now,
    );
    write_status(client, helmop, old, status).await
}

/// Writes `status` unless it is what the HelmOp already says.
async fn write_status(
    client: &kube::Client,
    helmop: &HelmOp,
    old: &HelmOpStatus,
    status: HelmOpStatus,
) -> Result<(), kube::Error> {
    if &status == old {
        return Ok(());
    }
    let api: Api<HelmOp> = Api::namespaced(client.clone(), &helmop.namespace().unwrap_or_default());
    api.patch_status(
        &helmop.name_any(),
        &patch_params(FIELD_MANAGER),
        &Patch::Merge(&json!({ "status": status })),
    )
    .await?;
    Ok(())
}
