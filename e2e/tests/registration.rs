//! Registration and its limits: an agent joins with a token and gets a credential that
//! reaches its own BundleDeployments only; an expired token is refused; deleting the
//! Cluster revokes the credential.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fleet_agent::register::{CredentialStore, Registered, Request};
use fleet_api::BundleDeployment;
use fleet_controller::registration::{issue_token, HubAddress};
use fleet_testkit::{client_for, eventually, FleetHub};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

const NS: &str = "fleet-local";
const WAIT: Duration = Duration::from_secs(30);
/// The member clusters that register.
const MEMBERS: [&str; 5] = ["a", "b", "early", "late", "gone"];

/// Registers `name`'s agent with the token kubeconfig `import`, keeping its credential in
/// its own cluster.
async fn register(
    hub: &FleetHub,
    import: &Path,
    name: &str,
    labels: BTreeMap<String, String>,
) -> Result<Registered, fleet_agent::Error> {
    let request = Request {
        token: import,
        cluster_name: name,
        labels,
    };
    let store = CredentialStore {
        member: hub.hub.client(name).await,
        namespace: "cattle-fleet-system".into(),
    };
    fleet_agent::register::register(request, &store, WAIT).await
}

/// A hub whose controller serves registrations, with the kubeconfig of a new token whose
/// credential lasts `ttl`.
async fn registering_hub(ttl: &str) -> (FleetHub, PathBuf) {
    let hub = FleetHub::start(&MEMBERS).await;
    let address = HubAddress::from_kubeconfig(&hub.kubeconfig("local")).expect("address");
    let ctx = fleet_controller::Context::registering(
        hub.client.clone(),
        hub.dir().join("controller"),
        address.clone(),
    );
    tokio::spawn(fleet_controller::run(ctx, std::future::pending()));
    let token = issue_token(&hub.client, &address, NS, Some(ttl.into()))
        .await
        .expect("a token");
    let path = hub.dir().join(format!("token-{ttl}.kubeconfig"));
    std::fs::write(&path, token).expect("write");
    (hub, path)
}

fn code(error: kube::Error) -> u16 {
    match error {
        kube::Error::Api(response) => response.code,
        other => panic!("not an API refusal: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_agent_reaches_only_its_own_deployments() {
    let (hub, import) = registering_hub("1h").await;
    let join = |name: &'static str| {
        let (hub, import) = (&hub, import.clone());
        async move {
            let labels = BTreeMap::from([("env".to_string(), name.to_string())]);
            register(hub, &import, name, labels)
                .await
                .expect("registered")
        }
    };
    let a: Registered = join("a").await;
    let b: Registered = join("b").await;
    assert_ne!(a.namespace, b.namespace);
    // Every agent holds the same registration token; with it, nobody can find another
    // agent's credential: registrations cannot be read (their clientRandom names the
    // Secret) and Secrets cannot be listed.
    let shared = client_for(&import).await;
    let registrations: Api<fleet_api::ClusterRegistration> = Api::namespaced(shared.clone(), NS);
    let listed = registrations.list(&ListParams::default()).await;
    assert_eq!(code(listed.expect_err("registrations listed")), 403);
    let made: Vec<fleet_api::ClusterRegistration> = Api::namespaced(hub.client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("admin lists")
        .items;
    assert_eq!(made.len(), 2);
    for registration in &made {
        let name = registration.metadata.name.clone().expect("name");
        assert_eq!(
            code(
                registrations
                    .get(&name)
                    .await
                    .expect_err("registration read")
            ),
            403
        );
        let secret = registration
            .spec
            .credential_secret_name()
            .expect("a credential name");
        assert_eq!(secret.len(), "c-".len() + 64, "{secret}");
        assert!(
            !secret.contains(&name),
            "the Secret's name is not the registration's"
        );
    }
    let secrets: Api<Secret> = Api::namespaced(shared, NS);
    let listed = secrets.list(&ListParams::default()).await;
    assert_eq!(code(listed.expect_err("secrets listed")), 403);
    let clusters: Api<fleet_api::Cluster> = Api::namespaced(hub.client.clone(), NS);
    let made = clusters.get("a").await.expect("cluster a");
    assert_eq!(made.metadata.labels.expect("labels")["env"], "a");

    // The admin puts one deployment in each cluster's namespace.
    for namespace in [&a.namespace, &b.namespace] {
        let deployment: BundleDeployment = serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {"name": "app", "namespace": namespace}, "spec": {"deploymentID": "s-1:x"},
        }))
        .expect("deployment");
        Api::<BundleDeployment>::namespaced(hub.client.clone(), namespace)
            .create(&PostParams::default(), &deployment)
            .await
            .expect("create deployment");
    }
    let agent_a = a.client().await.expect("client");
    let own: Api<BundleDeployment> = Api::namespaced(agent_a.clone(), &a.namespace);
    let other: Api<BundleDeployment> = Api::namespaced(agent_a.clone(), &b.namespace);
    assert_eq!(
        own.list(&ListParams::default())
            .await
            .expect("own list")
            .items
            .len(),
        1
    );
    let report = Patch::Merge(json!({"status": {"ready": true}}));
    own.patch_status("app", &PatchParams::default(), &report)
        .await
        .expect("own status");
    assert_eq!(
        code(
            other
                .list(&ListParams::default())
                .await
                .expect_err("B's list")
        ),
        403
    );
    assert_eq!(
        code(other.get("app").await.expect_err("B's deployment")),
        403
    );
    assert_eq!(
        code(
            other
                .patch_status("app", &PatchParams::default(), &report)
                .await
                .expect_err("B's status")
        ),
        403
    );
    assert_eq!(
        code(
            own.patch(
                "app",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"paused": true}}))
            )
            .await
            .expect_err("own spec")
        ),
        403,
        "an agent writes status only"
    );
    // Its heartbeat reaches its own Cluster's status only.
    assert_eq!(a.cluster, format!("{NS}/a"));
    let own_cluster: Api<fleet_api::Cluster> = Api::namespaced(agent_a.clone(), NS);
    let beat = Patch::Merge(json!({"status": {"agent": {"lastSeen": "2026-01-01T00:00:00Z"}}}));
    own_cluster
        .patch_status("a", &PatchParams::default(), &beat)
        .await
        .expect("own heartbeat");
    assert_eq!(
        code(
            own_cluster
                .patch_status("b", &PatchParams::default(), &beat)
                .await
                .expect_err("B's heartbeat")
        ),
        403
    );
    for namespace in [&a.namespace, &b.namespace, &NS.to_string()] {
        let secrets: Api<Secret> = Api::namespaced(agent_a.clone(), namespace);
        assert_eq!(
            code(
                secrets
                    .list(&ListParams::default())
                    .await
                    .expect_err("secrets")
            ),
            403,
            "{namespace}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused() {
    let (hub, import) = registering_hub("2s").await;
    let first = register(&hub, &import, "early", BTreeMap::new()).await;
    assert!(first.is_ok(), "used before it expires");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let late = register(&hub, &import, "late", BTreeMap::new()).await;
    let message = late
        .err()
        .map(|e| e.to_string())
        .expect("refused after it expired");
    assert!(
        message.contains("401") || message.contains("Unauthorized"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_ttl_required_a_token_without_one_is_deleted() {
    let hub = FleetHub::start(&[]).await;
    let address = HubAddress::from_kubeconfig(&hub.kubeconfig("local")).expect("address");
    let options = fleet_controller::Options {
        hub: Some(address.clone()),
        require_token_ttl: true,
        ..Default::default()
    };
    let ctx = fleet_controller::Context::with_options(
        hub.client.clone(),
        hub.dir().join("controller"),
        options,
    );
    tokio::spawn(fleet_controller::run(ctx, std::future::pending()));
    let tokens: Api<fleet_api::ClusterRegistrationToken> = Api::namespaced(hub.client.clone(), NS);
    for (name, ttl) in [
        ("forever", None),
        ("zero", Some("0s")),
        ("hour", Some("1h")),
    ] {
        let token = json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistrationToken",
            "metadata": {"name": name}, "spec": {"ttl": ttl},
        });
        tokens
            .create(
                &PostParams::default(),
                &serde_json::from_value(token).expect("token"),
            )
            .await
            .expect("created");
    }
    eventually("the tokens without a TTL deleted", WAIT, || async {
        let left: Vec<String> = tokens
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .iter()
            .filter_map(|token| token.metadata.name.clone())
            .collect();
        (left == ["hour"]).then_some(())
    })
    .await;
    let secrets: Api<Secret> = Api::namespaced(hub.client.clone(), NS);
    eventually("the token with a TTL served", WAIT, || async {
        secrets.get_opt("import-hour-token").await.expect("read")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_cluster_revokes_its_agent_credential() {
    let (hub, import) = registering_hub("1h").await;
    let agent = register(&hub, &import, "gone", BTreeMap::new())
        .await
        .expect("registered");
    let agent_client = agent.client().await.expect("client");
    let own: Api<BundleDeployment> = Api::namespaced(agent_client.clone(), &agent.namespace);
    own.list(&ListParams::default())
        .await
        .expect("the credential works");

    let clusters: Api<fleet_api::Cluster> = Api::namespaced(hub.client.clone(), NS);
    clusters
        .delete("gone", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("the Cluster to go", WAIT, || async {
        clusters
            .get_opt("gone")
            .await
            .expect("read")
            .is_none()
            .then_some(())
    })
    .await;
    let refused = own
        .list(&ListParams::default())
        .await
        .expect_err("the credential is revoked");
    assert_eq!(code(refused), 401);
    let namespaces: Api<Namespace> = Api::all(hub.client.clone());
    let home = namespaces.get_opt(&agent.namespace).await.expect("read");
    assert!(
        home.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the cluster namespace is deleted"
    );
    let bindings: Api<ClusterRoleBinding> = Api::all(hub.client.clone());
    let binding = format!("fleet-agent-contents-{}", agent.namespace);
    assert!(bindings.get_opt(&binding).await.expect("read").is_none());
    let owned = ListParams::default().labels("fleet.cattle.io/cluster=gone");
    let secrets: Api<Secret> = Api::namespaced(hub.client.clone(), NS);
    let roles: Api<Role> = Api::namespaced(hub.client.clone(), NS);
    assert!(secrets.list(&owned).await.expect("list").items.is_empty());
    assert!(roles.list(&owned).await.expect("list").items.is_empty());
}
