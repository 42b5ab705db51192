//! Cluster and ClusterGroup status: each cluster counts the BundleDeployments in its
//! namespace, each group counts its clusters and adds up their bundles, as
//! `kubectl get clusters,clustergroups -A` shows them in Fleet.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use fleet_api::{
    BundleSummary, Cluster, ClusterDisplay, ClusterGroup, ClusterGroupDisplay, Condition,
    DRIVEN_TWICE_REASON, OFFLINE_REASON,
};
use fleet_objects::client::patch_params;
use futures::StreamExt;
use kube::api::Patch;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use fleet_objects::conditions::set_condition;

use crate::caches::Caches;
use crate::pacing::Pacer;
use crate::reconcile::{cluster_namespace, not_ready, summarise};
use crate::{Context, Error, FIELD_MANAGER};

/// How far apart one Cluster's (or ClusterGroup's) status writes are at least: a rollout
/// changes a cluster's summary once per deployment's report, and the groups it is in with
/// it; paced, the reports that arrive within one interval cost one write.
pub const STATUS_INTERVAL: Duration = Duration::from_secs(5);

/// Writes `cluster`'s status, then that of the groups of its namespace, each at most once
/// per `pacer`'s interval; a change that must wait asks to be reconciled again then.
pub async fn cluster(
    cluster: Arc<Cluster>,
    ctx: &Context,
    caches: &Caches,
    pacer: &Pacer,
) -> Result<Action, Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let mut waits: Vec<Duration> = own_status(&cluster, ctx, caches, pacer)
        .await?
        .into_iter()
        .collect();
    waits.extend(groups(ctx, caches, pacer, &namespace).await?);
    Ok(match waits.into_iter().min() {
        Some(wait) => Action::requeue(wait),
        None => Action::await_change(),
    })
}

/// Writes at once, unpaced, the statuses `pacer` holds back for their turn: the waiting
/// Clusters among `clusters`, then the groups of every namespace with a waiting write.
/// Stopping would lose them otherwise (`fleet up --exit-when-ready` left clusters saying
/// 0/0 bundles ready); only those waiting are written, so it is quick at any fleet's size.
pub async fn flush_waiting(
    ctx: &Context,
    caches: &Caches,
    pacer: &Pacer,
    clusters: &[Arc<Cluster>],
) {
    let waiting: HashSet<String> = pacer.waiting().into_iter().collect();
    let unpaced = Pacer::new(Duration::ZERO);
    let mut namespaces: BTreeSet<String> = waiting
        .iter()
        .filter_map(|key| key.strip_prefix("ClusterGroup/")?.split_once('/'))
        .map(|(namespace, _)| namespace.to_string())
        .collect();
    let due = clusters.iter().filter(|cluster| {
        let namespace = cluster.namespace().unwrap_or_default();
        cluster.metadata.deletion_timestamp.is_none()
            && waiting.contains(&paced_key("Cluster", &namespace, &cluster.name_any()))
    });
    for cluster in due.clone() {
        namespaces.insert(cluster.namespace().unwrap_or_default());
    }
    futures::stream::iter(due)
        .for_each_concurrent(FLUSH_WRITES_AT_ONCE, |cluster| {
            let unpaced = &unpaced;
            async move {
                if let Err(error) = own_status(cluster, ctx, caches, unpaced).await {
                    tracing::warn!(cluster = %cluster.name_any(), %error, "writing its status on the way out");
                }
            }
        })
        .await;
    for namespace in namespaces {
        if let Err(error) = groups(ctx, caches, &unpaced, &namespace).await {
            tracing::warn!(%namespace, %error, "writing its groups' status on the way out");
        }
    }
}

/// Status writes a flush keeps in flight at once.
const FLUSH_WRITES_AT_ONCE: usize = 16;

/// Writes `cluster`'s own status if it changed and `pacer` lets it; how long the write
/// must wait otherwise.
async fn own_status(
    cluster: &Cluster,
    ctx: &Context,
    caches: &Caches,
    pacer: &Pacer,
) -> Result<Option<Duration>, Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    if cluster.metadata.deletion_timestamp.is_none() {
        // The cluster's namespace comes with it, as in Fleet: the bundles deploying there
        // for the first time find it made (rather than each asking for it).
        ctx.ensure_namespace(&crate::reconcile::cluster_namespace(cluster))
            .await?;
    }
    let deployments = caches.deployments_of_cluster(&namespace, &name);
    let summary = summarise(&deployments);
    let waiting: Vec<String> = not_ready(&deployments)
        .take(3)
        .map(|d| d.name_any())
        .collect();
    let ready = summary.ready == summary.desired_ready;
    let message = if ready {
        String::new()
    } else {
        format!(
            "NotReady({}) [Bundle {}]",
            summary.desired_ready - summary.ready,
            waiting.join(", ")
        )
    };
    let old = cluster.status.clone().unwrap_or_default();
    let agent = agent_heard(cluster, ctx.options.offline_after);
    let offline = matches!(agent, Heard::Gone { .. });
    let display = ClusterDisplay {
        ready_bundles: Some(format!("{}/{}", summary.ready, summary.desired_ready)),
        state: Some(
            if offline {
                OFFLINE_REASON
            } else if ready {
                "Ready"
            } else {
                "NotReady"
            }
            .into(),
        ),
    };
    // A cluster whose agent still reports is looked at again when it would be offline.
    let recheck = match agent {
        Heard::Lately { offline_in } => Some(offline_in),
        _ => None,
    };
    let conditions = if let Heard::Gone { last_seen } = &agent {
        let mut conditions = old.conditions.clone();
        let now = jiff::Timestamp::now().to_string();
        let message = format!(
            "Offline: its agent last reported at {last_seen}; its bundles show what it reported then"
        );
        set_condition(
            &mut conditions,
            "Ready",
            false,
            OFFLINE_REASON,
            &message,
            &now,
        );
        conditions
    } else if cluster.is_driven_twice() {
        let mut conditions = old.conditions.clone();
        let now = jiff::Timestamp::now().to_string();
        let message = "refused: the cluster has both spec.kubeConfigSecret (the controller \
                       deploys to it) and a registered agent (it deploys itself); nothing is \
                       deployed to it until one of them goes";
        set_condition(
            &mut conditions,
            "Ready",
            false,
            DRIVEN_TWICE_REASON,
            message,
            &now,
        );
        conditions
    } else {
        ready_condition(&old.conditions, ready, &message)
    };
    let namespace_used = cluster_namespace(cluster);
    let unchanged = old.summary.as_ref() == Some(&summary)
        && old.display.as_ref() == Some(&display)
        && old.conditions == conditions
        && old.namespace.as_deref() == Some(namespace_used.as_str());
    if unchanged {
        return Ok(recheck);
    }
    if let Some(wait) = pacer.claim(&paced_key("Cluster", &namespace, &name)) {
        return Ok(Some(recheck.map_or(wait, |r| r.min(wait))));
    }
    let patch = json!({"status": {
        "namespace": namespace_used,
        "summary": summary,
        "display": display,
        "conditions": conditions,
    }});
    Api::<Cluster>::namespaced(ctx.client.clone(), &namespace)
        .patch_status(&name, &patch_params(FIELD_MANAGER), &Patch::Merge(&patch))
        .await?;
    Ok(recheck)
}

/// What is known of a cluster's agent.
enum Heard {
    /// No agent reports for it (pushed, or not registered yet).
    Never,
    /// Its agent reported lately; it is offline in this long unless it reports again.
    Lately { offline_in: Duration },
    /// Its agent has not reported for longer than the controller waits.
    Gone { last_seen: String },
}

/// Whether `cluster`'s agent reported within `offline_after`.
fn agent_heard(cluster: &Cluster, offline_after: Duration) -> Heard {
    let last_seen = cluster
        .status
        .as_ref()
        .and_then(|s| s.agent.as_ref())
        .and_then(|a| a.last_seen.clone());
    let Some(last_seen) = last_seen.filter(|_| !cluster.is_pushed()) else {
        return Heard::Never;
    };
    let Ok(at) = last_seen.parse::<jiff::Timestamp>() else {
        return Heard::Never;
    };
    let since = jiff::Timestamp::now().duration_since(at);
    let since = Duration::try_from(since).unwrap_or(Duration::ZERO);
    match offline_after.checked_sub(since) {
        Some(left) if !left.is_zero() => Heard::Lately {
            // A moment past the limit, so the next look finds it passed.
            offline_in: left + Duration::from_millis(100),
        },
        _ => Heard::Gone { last_seen },
    }
}

/// The pacer's key for the status of `kind` `namespace`/`name`.
fn paced_key(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind}/{namespace}/{name}")
}

/// The conditions with `Ready` set to `ready`/`message`.
fn ready_condition(old: &[Condition], ready: bool, message: &str) -> Vec<Condition> {
    let mut conditions = old.to_vec();
    let now = jiff::Timestamp::now().to_string();
    set_condition(&mut conditions, "Ready", ready, "", message, &now);
    conditions
}

/// Writes the status of every ClusterGroup in `namespace` from its clusters' statuses,
/// paced by `pacer`; the waits of the groups whose writes must wait.
async fn groups(
    ctx: &Context,
    caches: &Caches,
    pacer: &Pacer,
    namespace: &str,
) -> Result<Vec<Duration>, Error> {
    let api: Api<ClusterGroup> = Api::namespaced(ctx.client.clone(), namespace);
    let groups = caches.groups(namespace);
    let mut waits = Vec::new();
    if groups.is_empty() {
        return Ok(waits);
    }
    let clusters = caches.clusters(namespace);
    for group in groups {
        let members: Vec<&Cluster> = clusters
            .iter()
            .map(|c| &**c)
            .filter(|c| crate::placement::group_selects(&group, c))
            .collect();
        let own: Vec<(String, BundleSummary)> = members
            .iter()
            .map(|m| {
                let summary = m.status.as_ref().and_then(|s| s.summary.clone());
                (m.name_any(), summary.unwrap_or_default())
            })
            .collect();
        let summary: BundleSummary = own.iter().map(|(_, s)| s).sum();
        let mut non_ready: Vec<String> = own
            .iter()
            .filter(|(_, s)| s.ready < s.desired_ready)
            .map(|(name, _)| name.clone())
            .collect();
        let count = members.len() as i32;
        let ready = non_ready.is_empty();
        let display = ClusterGroupDisplay {
            ready_clusters: Some(format!("{}/{count}", count - non_ready.len() as i32)),
            ready_bundles: Some(format!("{}/{}", summary.ready, summary.desired_ready)),
            state: Some(if ready { "Ready" } else { "NotReady" }.into()),
        };
        let old = group.status.clone().unwrap_or_default();
        let message = if ready {
            String::new()
        } else {
            let first: Vec<&str> = non_ready.iter().take(3).map(String::as_str).collect();
            format!(
                "NotReady({}) [Cluster {}]",
                non_ready.len(),
                first.join(", ")
            )
        };
        let conditions = ready_condition(&old.conditions, ready, &message);
        let non_ready_count = non_ready.len();
        non_ready.truncate(10);
        let unchanged = old.cluster_count == count
            && old.non_ready_clusters == non_ready
            && old.summary.as_ref() == Some(&summary)
            && old.display.as_ref() == Some(&display)
            && old.conditions == conditions;
        if unchanged {
            continue;
        }
        if let Some(wait) = pacer.claim(&paced_key("ClusterGroup", namespace, &group.name_any())) {
            waits.push(wait);
            continue;
        }
        let patch = json!({"status": {
            "clusterCount": count,
            "nonReadyClusterCount": non_ready_count,
            "nonReadyClusters": non_ready,
            "summary": summary,
            "display": display,
            "conditions": conditions,
        }});
        api.patch_status(
            &group.name_any(),
            &patch_params(FIELD_MANAGER),
            &Patch::Merge(&patch),
        )
        .await?;
    }
    Ok(waits)
}
