//! Agents registered as real ones are: a ClusterRegistration per member, which the
//! controller turns into a Cluster, a namespace, a service account with its Roles and
//! bindings, and a kubeconfig handed back in a Secret. The agents then reach the hub with
//! their own tokens, so every request they make is authorised by RBAC, as in production.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fleet_api::labels::CLUSTER_LABEL;
use fleet_api::ClusterRegistration;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, PostParams};
use kube::Api;
use serde_json::json;

/// Where registrations are filed (the clusters' namespace).
const NAMESPACE: &str = "fleet-local";

/// What registration handed an agent back.
pub struct Credential {
    /// The agent's namespace on the hub (its BundleDeployments).
    pub namespace: String,
    /// Its service account's token.
    pub token: String,
}

/// Files a ClusterRegistration for each `(member, env label)` and waits, up to `patience`,
/// until the controller has handed every one its credential. Returns the credentials by
/// member.
pub async fn register_all(
    hub: &kube::Client,
    members: &[(String, &str)],
    patience: Duration,
) -> Result<BTreeMap<String, Credential>> {
    let registrations: Api<ClusterRegistration> = Api::namespaced(hub.clone(), NAMESPACE);
    futures::stream::iter(members.iter().enumerate())
        .map(|(i, (member, env))| {
            let registrations = registrations.clone();
            async move {
                let registration: ClusterRegistration = serde_json::from_value(json!({
                    "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistration",
                    "metadata": {"name": format!("register-{member}"), "namespace": NAMESPACE},
                    "spec": {"clusterName": member, "clusterLabels": {"env": env},
                             "clientRandom": format!("{i:032x}")},
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
    let secrets: Api<Secret> = Api::namespaced(hub.clone(), NAMESPACE);
    let started = Instant::now();
    loop {
        let handed = secrets
            .list(&ListParams::default().labels(CLUSTER_LABEL))
            .await?;
        if handed.items.len() < members.len() && started.elapsed() <= patience {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        let credentials: BTreeMap<String, Credential> = handed
            .items
            .iter()
            .filter_map(credential)
            .filter(|(member, _)| members.iter().any(|(m, _)| m == member))
            .collect();
        if credentials.len() == members.len() {
            return Ok(credentials);
        }
        if started.elapsed() > patience {
            bail!(
                "{} of {} agents got a credential within {} s",
                credentials.len(),
                members.len(),
                patience.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The member and credential a handed-back Secret holds, read as the agent reads them:
/// its `cluster`, `namespace` and kubeconfig's token.
fn credential(secret: &Secret) -> Option<(String, Credential)> {
    let text = |key: &str| {
        let value = secret.data.as_ref()?.get(key)?;
        String::from_utf8(value.0.clone()).ok()
    };
    let kubeconfig: serde_json::Value = serde_yaml_ng::from_str(&text("kubeconfig")?).ok()?;
    let token = kubeconfig
        .pointer("/users/0/user/token")?
        .as_str()?
        .to_string();
    let cluster = text("cluster")?;
    let member = cluster.split_once('/').map(|(_, name)| name.to_string())?;
    let namespace = text("namespace")?;
    Some((member, Credential { namespace, token }))
}
