//! Contents nobody deploys any more are deleted, as Rancher Fleet deletes them: each commit
//! makes new ones (one per variant), and on a real management cluster etcd would otherwise
//! fill up with every variant ever rendered.
//!
//! A sweep reads which Contents the BundleDeployments name (their `deploymentID` and
//! `stagedDeploymentID`, from the controller's cache of them) and deletes a Content found
//! unnamed by two sweeps in a row, so that one just made, whose deployments are being
//! written, is kept. Only the unsharded controller sweeps: it alone sees every shard's
//! deployments.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_api::{BundleDeployment, Content};
use kube::api::{DeleteParams, ListParams};
use kube::Api;

use crate::watches::Cache;
use crate::Context;

/// Sweeps every `every` until `shutdown`, once the cache of deployments is filled.
pub async fn run(
    ctx: Arc<Context>,
    deployments: Arc<Cache<BundleDeployment>>,
    every: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let sweeping = async {
        if deployments.store().wait_until_ready().await.is_err() {
            return;
        }
        let mut unnamed = HashMap::new();
        loop {
            tokio::time::sleep(every).await;
            match sweep(&ctx, &deployments, &mut unnamed, every).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "deleted Contents no deployment names"),
                Err(error) => tracing::warn!(%error, "sweeping Contents"),
            }
        }
    };
    tokio::select! {
        _ = sweeping => {}
        _ = shutdown => {}
    }
}

/// One sweep: marks the Contents no deployment names, deletes those marked at least
/// `grace` ago and still unnamed; returns how many were deleted.
async fn sweep(
    ctx: &Context,
    deployments: &Cache<BundleDeployment>,
    unnamed: &mut HashMap<String, Instant>,
    grace: Duration,
) -> Result<usize, kube::Error> {
    let api: Api<Content> = Api::all(ctx.client.clone());
    let listed = api.list_metadata(&ListParams::default()).await?;
    let named = named_contents(deployments);
    let now = Instant::now();
    let present: HashSet<String> = listed
        .items
        .into_iter()
        .filter_map(|content| content.metadata.name)
        .collect();
    unnamed.retain(|name, _| present.contains(name) && !named.contains(name));
    let mut deleted = 0;
    for name in present.iter().filter(|name| !named.contains(*name)) {
        let since = *unnamed.entry(name.clone()).or_insert(now);
        // Looked at once more just before: a deployment may have been written since.
        if now.duration_since(since) < grace || named_contents(deployments).contains(name) {
            continue;
        }
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => deleted += 1,
            Err(kube::Error::Api(response)) if response.code == 404 => {}
            Err(error) => return Err(error),
        }
        unnamed.remove(name);
    }
    if deleted > 0 {
        // A bundle placed before may name a Content just deleted (its deployment written
        // in the instant between): its next pass makes sure of its Contents again.
        ctx.forget_placements();
    }
    Ok(deleted)
}

/// The Contents the cached deployments name.
fn named_contents(deployments: &Cache<BundleDeployment>) -> HashSet<String> {
    deployments
        .store()
        .state()
        .iter()
        .flat_map(|deployment| {
            [
                deployment.spec.deployment_id.as_deref(),
                deployment.spec.staged_deployment_id.as_deref(),
            ]
        })
        .flatten()
        .map(|id| id.split(':').next().unwrap_or(id).to_string())
        .collect()
}
