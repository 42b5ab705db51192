//! Registration: a ClusterRegistrationToken becomes a service account that may only create
//! ClusterRegistrations (until the token expires); a ClusterRegistration becomes a Cluster,
//! its namespace, and a credential that can read only that namespace's BundleDeployments
//! (and the Contents they name) and write their status, handed back in a Secret only the
//! registering token can read, named by a random value only the registering agent knows.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;

use fleet_api::labels::{CLUSTER_LABEL, TOKEN_LABEL};
use fleet_api::{Cluster, ClusterRegistration, ClusterRegistrationToken};
use fleet_objects::client::{
    delete_if_present, ensure_namespace, patch_params, post_params, remove_finalizer,
};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::reconcile::cluster_namespace;
use crate::{Context, Error, FIELD_MANAGER};

/// On a Cluster made by registration: its deletion waits until the agent's credential and
/// everything granted with it are gone.
pub const CREDENTIAL_FINALIZER: &str = "fleet.cattle.io/agent-credential";

/// The agent's service account in its cluster namespace.
pub const AGENT_ACCOUNT: &str = "fleet-agent";
const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

/// Where agents reach the hub: what goes into the kubeconfigs registration hands out.
#[derive(Clone, Debug)]
pub struct HubAddress {
    /// The hub's URL.
    pub server: String,
    /// Its CA, base64-encoded PEM (kubeconfig's `certificate-authority-data`).
    pub ca_data: Option<String>,
}

impl HubAddress {
    /// The address a kubeconfig's current context names (its cluster's server and CA).
    pub fn from_kubeconfig(path: &std::path::Path) -> Result<Self, Error> {
        let failed = |what: String| Error::Registration(format!("{}: {what}", path.display()));
        let file = kube::config::Kubeconfig::read_from(path).map_err(|e| failed(e.to_string()))?;
        let wanted = file
            .contexts
            .iter()
            .find(|c| Some(&c.name) == file.current_context.as_ref())
            .and_then(|c| c.context.as_ref().map(|x| x.cluster.clone()));
        let cluster = file
            .clusters
            .iter()
            .find(|c| wanted.as_ref().is_none_or(|w| *w == c.name))
            .and_then(|c| c.cluster.clone())
            .ok_or_else(|| failed("the kubeconfig names no cluster".into()))?;
        // A CA named by its file is read, relative to the kubeconfig as kubectl reads it.
        let ca_data = match (
            cluster.certificate_authority_data,
            cluster.certificate_authority,
        ) {
            (Some(data), _) => Some(data),
            (None, Some(file)) => {
                let file = path
                    .parent()
                    .map_or_else(|| file.clone().into(), |dir| dir.join(&file));
                let pem = std::fs::read(&file).map_err(|e| {
                    failed(format!("certificate-authority {}: {e}", file.display()))
                })?;
                Some(base64::engine::general_purpose::STANDARD.encode(pem))
            }
            (None, None) => None,
        };
        Ok(Self {
            server: cluster
                .server
                .ok_or_else(|| failed("the kubeconfig's cluster has no server".into()))?,
            ca_data,
        })
    }

    /// The address agents are told: `server` with the CA in the PEM file `ca`, else the
    /// cluster `kubeconfig` names (an admin's kubeconfig often names `127.0.0.1`, which a
    /// member cannot reach: then `server` is needed).
    pub fn from_flags(
        server: Option<&str>,
        ca: Option<&std::path::Path>,
        kubeconfig: Option<&std::path::Path>,
    ) -> Result<Option<Self>, Error> {
        let Some(server) = server else {
            return kubeconfig.map(Self::from_kubeconfig).transpose();
        };
        let ca_data = ca
            .map(|path| {
                std::fs::read(path)
                    .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem))
                    .map_err(|e| Error::Registration(format!("{}: {e}", path.display())))
            })
            .transpose()?;
        Ok(Some(Self {
            server: server.to_string(),
            ca_data,
        }))
    }

    /// A kubeconfig for `token`, defaulting to `namespace`, named `user`.
    pub fn kubeconfig(&self, user: &str, token: &str, namespace: &str) -> String {
        let ca = self
            .ca_data
            .as_deref()
            .map(|ca| format!("    certificate-authority-data: {ca}\n"))
            .unwrap_or_default();
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: hub\n  cluster:\n    server: {}\n{ca}contexts:\n- name: {user}\n  context:\n    cluster: hub\n    user: {user}\n    namespace: {namespace}\ncurrent-context: {user}\nusers:\n- name: {user}\n  user:\n    token: {token}\n",
            self.server
        )
    }
}

/// Creates a ClusterRegistrationToken in `namespace` (valid for `ttl`, a Go duration, if
/// given), waits up to 30 s for the controller to give it a credential, and returns the
/// kubeconfig agents register with.
pub async fn issue_token(
    client: &kube::Client,
    address: &HubAddress,
    namespace: &str,
    ttl: Option<String>,
) -> Result<String, Error> {
    let tokens: Api<ClusterRegistrationToken> = Api::namespaced(client.clone(), namespace);
    let mut token = ClusterRegistrationToken::new("", Default::default());
    token.metadata.name = None;
    token.metadata.generate_name = Some("token-".into());
    token.spec.ttl = ttl;
    let name = tokens
        .create(&post_params(FIELD_MANAGER), &token)
        .await?
        .name_any();
    let started = std::time::Instant::now();
    let secret_name = loop {
        if let Some(secret) = tokens.get(&name).await?.status.and_then(|s| s.secret_name) {
            break secret;
        }
        if started.elapsed() > Duration::from_secs(30) {
            return Err(Error::Registration(format!(
                "token {name} got no credential in 30 s: is `fleet controller` running?"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let value = filled_token(&secrets, &secret_name).await?;
    Ok(address.kubeconfig(&format!("import-{name}"), &value, namespace))
}

async fn create<K>(api: &Api<K>, value: Value) -> Result<(), Error>
where
    K: Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug + kube::Resource,
{
    let object: K =
        serde_json::from_value(value).map_err(|e| Error::Registration(e.to_string()))?;
    match api.create(&post_params(FIELD_MANAGER), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(response)) if response.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// The `token` of a service-account token Secret, made if missing.
async fn account_token(
    client: &kube::Client,
    namespace: &str,
    account: &str,
) -> Result<String, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let name = format!("{account}-token");
    create(&secrets, json!({
        "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}},
        "type": TOKEN_SECRET_TYPE,
    }))
    .await?;
    filled_token(&secrets, &name).await
}

/// How long a service-account token Secret may wait for its token: kube-controller-manager
/// fills it in after the Secret is made, usually within a second.
const TOKEN_PATIENCE: Duration = Duration::from_secs(30);

/// The `token` of the service-account token Secret `name`, once the token controller has
/// filled it in.
async fn filled_token(secrets: &Api<Secret>, name: &str) -> Result<String, Error> {
    let started = std::time::Instant::now();
    loop {
        let token = secrets
            .get(name)
            .await?
            .data
            .and_then(|d| d.get("token").cloned())
            .filter(|t| !t.0.is_empty());
        if let Some(token) = token {
            return String::from_utf8(token.0).map_err(|_| {
                Error::Registration(format!("secret {name}: the token is not UTF-8"))
            });
        }
        if started.elapsed() > TOKEN_PATIENCE {
            return Err(Error::Registration(format!(
                "secret {name} got no token in {} s: is the token controller (kube-controller-manager) running?",
                TOKEN_PATIENCE.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A service account bound to a Role of `rules` in `namespace`.
async fn account_with_role(
    client: &kube::Client,
    namespace: &str,
    account: &str,
    rules: Value,
) -> Result<(), Error> {
    create(
        &Api::<ServiceAccount>::namespaced(client.clone(), namespace),
        json!({"metadata": {"name": account}}),
    )
    .await?;
    create(
        &Api::<Role>::namespaced(client.clone(), namespace),
        json!({"metadata": {"name": account}, "rules": rules}),
    )
    .await?;
    create(
        &Api::<RoleBinding>::namespaced(client.clone(), namespace),
        json!({
            "metadata": {"name": account},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }),
    )
    .await
}

/// Gives a token its import account, or revokes it once it expired.
pub async fn token(token: Arc<ClusterRegistrationToken>, ctx: &Context) -> Result<Action, Error> {
    let namespace = token.namespace().unwrap_or_default();
    let account = format!("import-{}", token.name_any());
    let status = token.status.clone().unwrap_or_default();
    let now = jiff::Timestamp::now();
    let ttl = token
        .spec
        .ttl
        .as_deref()
        .and_then(fleet_objects::duration::parse_go_duration)
        .filter(|ttl| !ttl.is_zero());
    if ctx.options.require_token_ttl && ttl.is_none() {
        tracing::warn!(token = %token.name_any(), %namespace,
            "registration token refused and deleted: a TTL is required");
        let tokens: Api<ClusterRegistrationToken> = Api::namespaced(ctx.client.clone(), &namespace);
        delete_if_present(&tokens, &token.name_any(), &DeleteParams::default()).await?;
        return Ok(Action::await_change());
    }
    let expires = match status.expires.as_deref() {
        Some(text) => text.parse::<jiff::Timestamp>().ok(),
        None => ttl
            .and_then(|ttl| jiff::SignedDuration::try_from(ttl).ok())
            .map(|ttl| now + ttl),
    };
    if let Some(expires) = expires.filter(|e| *e <= now) {
        let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
        delete_if_present(
            &secrets,
            &format!("{account}-token"),
            &DeleteParams::default(),
        )
        .await?;
        tracing::info!(token = %token.name_any(), %expires, "registration token expired");
        return Ok(Action::await_change());
    }
    // Create only: a holder of the shared token must not read other agents' registrations
    // (their clientRandom names their credential's Secret).
    let rules = json!([
        {"apiGroups": ["fleet.cattle.io"], "resources": ["clusterregistrations"], "verbs": ["create"]},
    ]);
    account_with_role(&ctx.client, &namespace, &account, rules).await?;
    let secret_name = format!("{account}-token");
    account_token(&ctx.client, &namespace, &account).await?;
    if status.secret_name.as_deref() != Some(secret_name.as_str())
        || status.expires.is_none() && expires.is_some()
    {
        let patch = json!({"status": {"secretName": secret_name, "expires": expires.map(|e| e.to_string())}});
        Api::<ClusterRegistrationToken>::namespaced(ctx.client.clone(), &namespace)
            .patch_status(
                &token.name_any(),
                &patch_params(FIELD_MANAGER),
                &Patch::Merge(&patch),
            )
            .await?;
    }
    Ok(match expires {
        Some(expires) => {
            let left = now.duration_until(expires).unsigned_abs();
            Action::requeue(Duration::from_secs(left.as_secs() + 1))
        }
        None => Action::await_change(),
    })
}

/// Accepts a registration: Cluster, namespace, the agent's account and credential.
pub async fn registration(
    registration: Arc<ClusterRegistration>,
    ctx: &Context,
) -> Result<(), Error> {
    if registration.status.as_ref().is_some_and(|s| s.granted) {
        return Ok(());
    }
    let Some(hub) = ctx.options.hub.clone() else {
        return Err(Error::Registration(
            "the controller was started without the hub's address".into(),
        ));
    };
    let namespace = registration.namespace().unwrap_or_default();
    let spec = &registration.spec;
    let Some(secret_name) = spec.credential_secret_name() else {
        return Err(Error::Registration(format!(
            "ClusterRegistration {namespace}/{}: spec.clientRandom must be 32 to 64 lowercase hex digits",
            registration.name_any()
        )));
    };
    let Some(client_id) = spec.client_id.as_deref().filter(|id| !id.is_empty()) else {
        return refuse(&registration, "it names no spec.clientID");
    };
    let name = spec
        .cluster_name
        .clone()
        .unwrap_or_else(|| format!("c-{client_id}"));
    let clusters: Api<Cluster> = Api::namespaced(ctx.client.clone(), &namespace);
    create(
        &clusters,
        json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": registrant_labels(&spec.cluster_labels),
                         "finalizers": [CREDENTIAL_FINALIZER]},
            "spec": {"clientID": spec.client_id},
        }),
    )
    .await?;
    let cluster = clusters.get(&name).await?;
    // A Cluster belongs to the client that registered it first: anyone else holding the
    // shared registration token could otherwise take over its credential.
    if cluster.spec.client_id.as_deref() != Some(client_id) {
        return refuse(
            &registration,
            &format!("Cluster {namespace}/{name} exists and belongs to another client"),
        );
    }
    if cluster.spec.kube_config_secret.is_some() {
        return refuse(
            &registration,
            &format!("Cluster {namespace}/{name} is deployed to through a kubeconfig Secret"),
        );
    }
    let home = cluster_namespace(&cluster);
    ensure_namespace(&ctx.client, &home, FIELD_MANAGER).await?;
    let rules = json!([
        {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments/status"], "verbs": ["get", "update", "patch"]},
        // The copies of downstreamResources the controller places here.
        {"apiGroups": [""], "resources": ["secrets", "configmaps"], "verbs": ["get"]},
    ]);
    account_with_role(&ctx.client, &home, AGENT_ACCOUNT, rules).await?;
    create(
        &Api::<ClusterRole>::all(ctx.client.clone()),
        json!({"metadata": {"name": "fleet-agent-contents"},
               "rules": [{"apiGroups": ["fleet.cattle.io"], "resources": ["contents"], "verbs": ["get"]}]}),
    )
    .await?;
    create(
        &Api::<ClusterRoleBinding>::all(ctx.client.clone()),
        json!({
            "metadata": {"name": format!("fleet-agent-contents-{home}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "fleet-agent-contents"},
            "subjects": [{"kind": "ServiceAccount", "name": AGENT_ACCOUNT, "namespace": home}],
        }),
    )
    .await?;
    // What is made in the registration namespace for this cluster carries its name, so
    // that deleting the Cluster can find it (see `revoke`).
    let owned_by = json!({CLUSTER_LABEL: name});
    // Its heartbeat: the status of its own Cluster, and nothing else in this namespace.
    let heartbeat = format!("fleet-agent-{name}");
    create(
        &Api::<Role>::namespaced(ctx.client.clone(), &namespace),
        json!({"metadata": {"name": heartbeat, "labels": owned_by.clone()},
               "rules": [{"apiGroups": ["fleet.cattle.io"], "resources": ["clusters/status"],
                          "resourceNames": [name], "verbs": ["get", "patch", "update"]}]}),
    )
    .await?;
    create(
        &Api::<RoleBinding>::namespaced(ctx.client.clone(), &namespace),
        json!({
            "metadata": {"name": heartbeat, "labels": owned_by.clone()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": heartbeat},
            "subjects": [{"kind": "ServiceAccount", "name": AGENT_ACCOUNT, "namespace": home}],
        }),
    )
    .await?;
    let token = account_token(&ctx.client, &home, AGENT_ACCOUNT).await?;
    let kubeconfig = hub.kubeconfig(&format!("agent-{name}"), &token, &home);
    create(
        &Api::<Secret>::namespaced(ctx.client.clone(), &namespace),
        json!({"metadata": {"name": secret_name, "labels": owned_by.clone()}, "stringData": {
            "kubeconfig": kubeconfig, "namespace": home, "cluster": format!("{namespace}/{name}")}}),
    )
    .await?;
    // Only the token that registered may read the credential (a label naming no token
    // grants nobody).
    let registering_token = match registration.labels().get(TOKEN_LABEL) {
        Some(name) => Api::<ClusterRegistrationToken>::namespaced(ctx.client.clone(), &namespace)
            .get_opt(name)
            .await?
            .map(|_| name),
        None => None,
    };
    if let Some(token_name) = registering_token {
        let reader = format!("read-{secret_name}");
        create(
            &Api::<Role>::namespaced(ctx.client.clone(), &namespace),
            json!({"metadata": {"name": reader, "labels": owned_by.clone()},
                   "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret_name], "verbs": ["get"]}]}),
        )
        .await?;
        create(
            &Api::<RoleBinding>::namespaced(ctx.client.clone(), &namespace),
            json!({
                "metadata": {"name": reader, "labels": owned_by.clone()},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": reader},
                "subjects": [{"kind": "ServiceAccount", "name": format!("import-{token_name}"), "namespace": namespace}],
            }),
        )
        .await?;
    }
    let patch =
        json!({"status": {"clusterName": name, "secretName": secret_name, "granted": true}});
    Api::<ClusterRegistration>::namespaced(ctx.client.clone(), &namespace)
        .patch_status(
            &registration.name_any(),
            &patch_params(FIELD_MANAGER),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

/// The labels a registering agent asked for, without Fleet's reserved ones
/// (`fleet.cattle.io/...` and `management.cattle.io/...`, but for the agent pod's own
/// marker): those are for the management side to set, and targeting may rely on them.
fn registrant_labels(
    asked: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    let reserved = |key: &str| {
        (key.starts_with("fleet.cattle.io/") || key.starts_with("management.cattle.io/"))
            && key != "fleet.cattle.io/created-by-agent-pod"
    };
    (asked.iter())
        .filter(|(key, _)| !reserved(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Leaves `registration` ungranted, saying why in the controller's log: the agent, which
/// may not read its registration, waits and gives up.
fn refuse(registration: &ClusterRegistration, why: &str) -> Result<(), Error> {
    tracing::warn!(
        registration = %format!("{}/{}", registration.namespace().unwrap_or_default(), registration.name_any()),
        "registration refused: {why}"
    );
    Ok(())
}

/// Revokes what registering `cluster` granted, for its deletion: the agent's service account
/// (its token stops working at once) and its namespace, its cluster-wide binding, and in the
/// registration namespace its credential Secret and its Roles and RoleBindings. Then the
/// finalizer goes and the Cluster with it.
pub async fn revoke(cluster: &Cluster, ctx: &Context) -> Result<(), Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let home = cluster_namespace(cluster);
    let client = &ctx.client;
    delete_if_present(
        &Api::<ServiceAccount>::namespaced(client.clone(), &home),
        AGENT_ACCOUNT,
        &DeleteParams::default(),
    )
    .await?;
    // No agent will uninstall these any more: their finalizers must not hold the namespace.
    let deployments = Api::<fleet_api::BundleDeployment>::namespaced(client.clone(), &home);
    for deployment in deployments.list(&ListParams::default()).await? {
        remove_finalizer(
            &deployments,
            &deployment,
            fleet_api::labels::BUNDLE_DEPLOYMENT_FINALIZER,
            FIELD_MANAGER,
        )
        .await?;
    }
    delete_if_present(
        &Api::<Namespace>::all(client.clone()),
        &home,
        &DeleteParams::default(),
    )
    .await?;
    delete_if_present(
        &Api::<ClusterRoleBinding>::all(client.clone()),
        &format!("fleet-agent-contents-{home}"),
        &DeleteParams::default(),
    )
    .await?;
    let owned = ListParams::default().labels(&format!("{CLUSTER_LABEL}={name}"));
    let everything = DeleteParams::default();
    Api::<Secret>::namespaced(client.clone(), &namespace)
        .delete_collection(&everything, &owned)
        .await?;
    Api::<RoleBinding>::namespaced(client.clone(), &namespace)
        .delete_collection(&everything, &owned)
        .await?;
    Api::<Role>::namespaced(client.clone(), &namespace)
        .delete_collection(&everything, &owned)
        .await?;
    let clusters = Api::<Cluster>::namespaced(client.clone(), &namespace);
    remove_finalizer(&clusters, cluster, CREDENTIAL_FINALIZER, FIELD_MANAGER).await?;
    tracing::info!(cluster = %format!("{namespace}/{name}"), "agent credential revoked");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registrant_cannot_set_fleets_reserved_labels() {
        let asked = std::collections::BTreeMap::from(
            [
                ("env", "dev"),
                ("fleet.cattle.io/cluster-group", "prod"),
                ("management.cattle.io/cluster-display-name", "prod"),
                ("fleet.cattle.io/created-by-agent-pod", "agent-0"),
                ("example.com/fleet.cattle.io", "kept"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let kept: Vec<String> = registrant_labels(&asked).into_keys().collect();
        assert_eq!(
            kept,
            [
                "env",
                "example.com/fleet.cattle.io",
                "fleet.cattle.io/created-by-agent-pod"
            ]
        );
    }
}
