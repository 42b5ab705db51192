//! Agents registered as real ones are: a ClusterRegistration per member, which the
//! controller turns into a Cluster, a namespace, a service account with its Roles and
//! bindings, and a kubeconfig handed back in a Secret. The agents then reach the hub with
//! their own tokens, so every request they make is authorised by RBAC, as in production.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use fleet_api::labels::CLUSTER_LABEL;
use fleet_api::ClusterRegistration;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::runtime::{watcher, WatchStreamExt};
use kube::Api;
use serde_json::json;

/// Where registrations are filed (the clusters' namespace).
const NAMESPACE: &str = "fleet-local";

/// What registration handed an agent back.
pub(crate) struct Credential {
    /// The agent's namespace on the hub (its BundleDeployments).
    pub namespace: String,
    /// Its service account's token.
    pub token: String,
}

/// Files a ClusterRegistration for each `(member, env label)` and waits, up to `patience`,
/// until the controller has handed every one its credential. Returns the credentials by
/// member.
pub(crate) async fn register_all(
    hub: &kube::Client,
    members: &[(String, &str)],
    patience: Duration,
) -> Result<BTreeMap<String, Credential>> {
    let registrations: Api<ClusterRegistration> = Api::namespaced(hub.clone(), NAMESPACE);
    futures::stream::iter(members)
        .map(|(member, env)| {
            let registrations = registrations.clone();
            async move {
                let registration: ClusterRegistration = serde_json::from_value(json!({
                    "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistration",
                    "metadata": {"name": format!("register-{member}"), "namespace": NAMESPACE},
                    "spec": {"clusterName": member, "clientID": member, "clusterLabels": {"env": env},
                             "clientRandom": client_random(member)},
                }))?;
                registrations
                    .create(&PostParams::default(), &registration)
                    .await
                    .with_context(|| format!("registering {member}"))?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(64)
        .try_collect::<()>()
        .await?;
    // The handed-back Secrets are followed by a watch: polling a list of every agent's
    // Secret would weigh on the hub being measured, all the more as clusters join a
    // large fleet.
    let secrets: Api<Secret> = Api::namespaced(hub.clone(), NAMESPACE);
    let handed = watcher(secrets, watcher::Config::default().labels(CLUSTER_LABEL))
        .applied_objects()
        .default_backoff();
    let wanted: BTreeSet<&str> = members.iter().map(|(m, _)| m.as_str()).collect();
    let mut credentials = BTreeMap::new();
    let collect = async {
        let mut handed = std::pin::pin!(handed);
        while credentials.len() < wanted.len() {
            let secret = match handed.next().await {
                Some(Ok(secret)) => secret,
                // The watch resumes by itself (a relist after the hub forgot its place).
                Some(Err(error)) => {
                    eprintln!("the watch of handed-back credentials failed, retrying: {error}");
                    continue;
                }
                None => break,
            };
            // Others' Secrets (every earlier agent's, when clusters join) are passed over
            // before their kubeconfig is parsed.
            let Some(member) = member_of(&secret).filter(|m| wanted.contains(m.as_str())) else {
                continue;
            };
            if let Some(credential) = credential(&secret) {
                credentials.insert(member, credential);
            }
        }
    };
    if tokio::time::timeout(patience, collect).await.is_err() {
        let waiting: Vec<&str> = (wanted.iter().copied())
            .filter(|member| !credentials.contains_key(*member))
            .collect();
        bail!(
            "{} of {} agents got a credential within {} s; {}",
            credentials.len(),
            members.len(),
            patience.as_secs(),
            why_waiting(hub, &waiting).await
        );
    }
    if credentials.len() < wanted.len() {
        bail!("the watch of handed-back credentials ended early");
    }
    Ok(credentials)
}

/// Why the agents `waiting` got no credential, as far as the hub tells: whether it holds
/// their handed-back Secrets (the watch has not brought them) or not (the controller has not
/// handed them over), and what their registrations say.
async fn why_waiting(hub: &kube::Client, waiting: &[&str]) -> String {
    let secrets = Api::<Secret>::namespaced(hub.clone(), NAMESPACE);
    let listed = secrets
        .list(&kube::api::ListParams::default().labels(CLUSTER_LABEL))
        .await;
    let held: BTreeSet<String> = match &listed {
        Ok(list) => list.items.iter().filter_map(member_of).collect(),
        Err(error) => return format!("the handed-back Secrets could not be listed: {error}"),
    };
    let registrations = Api::<ClusterRegistration>::namespaced(hub.clone(), NAMESPACE);
    let mut told = Vec::new();
    for member in waiting.iter().take(5) {
        let registration = registrations.get_opt(&format!("register-{member}")).await;
        let status = match registration {
            Ok(Some(registration)) => serde_json::to_string(&registration.status)
                .unwrap_or_else(|e| format!("unreadable: {e}")),
            Ok(None) => "no registration".to_string(),
            Err(error) => format!("unreadable: {error}"),
        };
        let secret = if held.contains(*member) {
            "the hub holds its Secret, the watch has not brought it"
        } else {
            "no Secret handed back"
        };
        told.push(format!("{member}: {secret}; registration status {status}"));
    }
    told.join("; ")
}

/// The registration's `clientRandom`, which names the credential's Secret: the member's
/// name in hex, so that clusters registering later never take an earlier one's.
fn client_random(member: &str) -> String {
    let hex: String = member.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{hex:0>32}")
}

/// A text entry of a handed-back Secret.
fn data_text(secret: &Secret, key: &str) -> Option<String> {
    let value = secret.data.as_ref()?.get(key)?;
    String::from_utf8(value.0.clone()).ok()
}

/// The member a handed-back Secret is for, from its `cluster` (`namespace/name`).
fn member_of(secret: &Secret) -> Option<String> {
    let cluster = data_text(secret, "cluster")?;
    cluster.split_once('/').map(|(_, name)| name.to_string())
}

/// The credential a handed-back Secret holds, read as the agent reads it: its `namespace`
/// and its kubeconfig's token.
fn credential(secret: &Secret) -> Option<Credential> {
    let kubeconfig: serde_json::Value =
        serde_yaml_ng::from_str(&data_text(secret, "kubeconfig")?).ok()?;
    let token = kubeconfig
        .pointer("/users/0/user/token")?
        .as_str()?
        .to_string();
    let namespace = data_text(secret, "namespace")?;
    Some(Credential { namespace, token })
}
