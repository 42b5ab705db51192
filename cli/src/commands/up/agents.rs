//! The demo's agents: registered once with a token, then run with their kept credential.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::{Fleet, FIELD_MANAGER, MEMBERS, NAMESPACE, PUSHED};

/// Registers each member's agent with a token (once: a later start finds the credential
/// kept in the member's `fleet-agent` Secret), then runs it with its heartbeat.
pub(super) async fn register_agents(fleet: &mut Fleet, data: &Path) -> Result<()> {
    let token_file = data.join("token.kubeconfig");
    let address = fleet.hub.address()?;
    let token = fleet_controller::registration::issue_token(
        &fleet.hub.client,
        &address,
        NAMESPACE,
        Some("1h".into()),
    )
    .await?;
    fleet_objects::secret_file::write(&token_file, token.as_bytes())
        .with_context(|| format!("writing {}", token_file.display()))?;
    for (name, env) in MEMBERS {
        let omitting = fleet_objects::client::omitting_managed_fields;
        let member = omitting(&fleet.hub.client_of(name).await?);
        let request = fleet_agent::register::Request {
            token: &token_file,
            cluster_name: name,
            labels: BTreeMap::from([("env".to_string(), env.to_string())]),
        };
        let store = fleet_agent::register::CredentialStore {
            member: member.clone(),
            namespace: AGENT_NAMESPACE.into(),
        };
        let mut registered =
            fleet_agent::register::register(request, &store, Duration::from_secs(60))
                .await
                .with_context(|| format!("registering cluster {name}"))?;
        point_at(&mut registered.kubeconfig, &fleet.hub.running.url);
        let hub = omitting(&registered.client().await?);
        let agent = fleet_agent::Agent::new(hub, member, &registered.namespace, RESYNC);
        let heartbeat = (registered.cluster, Duration::from_secs(10));
        fleet.running.run_agent(name, agent, Some(heartbeat)).await;
        // The members have no kubelet: the simulator rolls their workloads out.
        let workloads = fleet.hub.client_of(name).await?;
        fleet.running.run_simulator(workloads, WORKLOAD_DELAY);
    }
    Ok(())
}

/// Registers `edge` the push way: a Secret holding its kubeconfig (key `value`, as Fleet's
/// manager-initiated registration keeps it) and a Cluster naming it; the controllers'
/// process then deploys to it. Written again on every start, since the hub's address may
/// have changed.
pub(super) async fn push_to_edge(fleet: &mut Fleet) -> Result<()> {
    let (name, env) = PUSHED;
    let path = fleet.hub.kubeconfig(name);
    let kubeconfig =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let secret_name = format!("{name}-kubeconfig");
    let apply = kube::api::PatchParams::apply(FIELD_MANAGER).force();
    let secret = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret_name, "namespace": NAMESPACE},
        "stringData": {fleet_agent::push::KUBECONFIG_KEY: kubeconfig},
    });
    kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
        fleet.hub.client.clone(),
        NAMESPACE,
    )
    .patch(&secret_name, &apply, &kube::api::Patch::Apply(&secret))
    .await
    .context("writing edge's kubeconfig Secret")?;
    let cluster = serde_json::json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"env": env}},
        "spec": {"kubeConfigSecret": secret_name},
    });
    kube::Api::<fleet_api::Cluster>::namespaced(fleet.hub.client.clone(), NAMESPACE)
        .patch(name, &apply, &kube::api::Patch::Apply(&cluster))
        .await
        .context("writing the Cluster edge")?;
    fleet.running.run_pusher(&fleet.hub.client, RESYNC);
    let workloads = fleet.hub.client_of(name).await?;
    fleet.running.run_simulator(workloads, WORKLOAD_DELAY);
    Ok(())
}

/// How long the simulated kubelet takes to roll a workload out.
const WORKLOAD_DELAY: Duration = Duration::from_secs(1);

/// How often an agent reconciles again what it applied (drift, readiness).
const RESYNC: Duration = Duration::from_secs(15);

/// The agents' namespace in their clusters, where each keeps its credential.
const AGENT_NAMESPACE: &str = "cattle-fleet-system";

/// Points a kept agent kubeconfig at the hub's current address (the port may have changed
/// since it registered).
fn point_at(kubeconfig: &mut kube::config::Kubeconfig, url: &str) {
    for cluster in kubeconfig
        .clusters
        .iter_mut()
        .filter_map(|c| c.cluster.as_mut())
    {
        cluster.server = Some(url.to_string());
    }
}
