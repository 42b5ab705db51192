//! The whole fleet of the end-to-end tests: the hub with a management cluster (`local`)
//! and members, `git daemon`, gitjob, the targeting controller and one agent per member in
//! one process.
#![allow(dead_code)] // Each test crate uses its own part of the harness.

use std::time::Duration;

use fleet_api::{BundleDeployment, GitRepo};
use fleet_testkit::{client_for, create_cluster, FleetHub, GitDaemon, Kubectl, TestRepo};
use kube::api::PostParams;
use kube::Api;
use serde_json::{json, Value};

pub(crate) const NS: &str = "fleet-local";
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// Creates the Cluster `name` with `labels`, pushed to through the kubeconfig of the hub's
/// logical cluster `name`, kept in the Secret `<name>-kubeconfig` (key `value`).
pub(crate) async fn push_cluster(hub: &FleetHub, name: &str, labels: Value) {
    let kubeconfig = std::fs::read_to_string(hub.kubeconfig(name)).expect("the kubeconfig");
    fleet_testkit::create_pushed_cluster(&hub.client, NS, name, &kubeconfig, labels)
        .await
        .expect("the pushed Cluster");
}

/// Everything running, with members named and labelled as given.
pub(crate) struct Fleet {
    pub hub: FleetHub,
    pub repo: TestRepo,
    pub daemon: GitDaemon,
    pub running: fleet_local::Fleet,
}

impl Fleet {
    /// Starts the hub, `git daemon`, the controllers and one agent per member.
    pub(crate) async fn start(members: &[(&str, Value)]) -> Self {
        Self::start_with_pushed(members, &[]).await
    }

    /// [`Fleet::start`], plus `pushed` members that run no agent: each Cluster names a
    /// Secret holding its kubeconfig (`spec.kubeConfigSecret`), and the controllers'
    /// process deploys to it (the push model).
    pub(crate) async fn start_with_pushed(
        members: &[(&str, Value)],
        pushed: &[(&str, Value)],
    ) -> Self {
        let names: Vec<&str> = members.iter().chain(pushed).map(|(n, _)| *n).collect();
        let hub = FleetHub::start(&names).await;
        for (name, labels) in members {
            create_cluster(&hub.client, NS, name, labels.clone())
                .await
                .expect("cluster");
        }
        for (name, labels) in pushed {
            push_cluster(&hub, name, labels.clone()).await;
        }
        let repos = hub.dir().join("repos");
        let repo = TestRepo::in_dir(&repos, "app");
        let daemon = GitDaemon::start(&repos);
        let mut running = fleet_local::Fleet::new();
        running.run_controllers(&hub.client, hub.dir(), None);
        let mut fleet = Self {
            hub,
            repo,
            daemon,
            running,
        };
        for (name, _) in members {
            fleet.start_agent(name).await;
        }
        fleet
    }

    /// Starts (or starts again, killing the running one wherever it is) a member's agent,
    /// looking at each deployment again every second.
    pub(crate) async fn start_agent(&mut self, name: &str) {
        self.start_agent_resyncing(name, Duration::from_secs(1))
            .await;
    }

    /// [`Fleet::start_agent`], the agent looking at each ready deployment again every
    /// `resync` (beyond the looks a change to its objects brings).
    pub(crate) async fn start_agent_resyncing(&mut self, name: &str, resync: Duration) {
        let agent = fleet_agent::Agent::new(
            self.hub.client.clone(),
            client_for(&self.hub.kubeconfig(name)).await,
            &format!("cluster-fleet-local-{name}"),
            resync,
        );
        self.running.run_agent(name, agent, None).await;
    }

    /// Creates the GitRepo `demo` on the test repository with `spec`'s other fields.
    pub(crate) async fn gitrepo(&self, spec: Value) {
        let mut spec = spec;
        spec["repo"] = json!(self.daemon.url("app"));
        spec["branch"] = json!("main");
        spec["pollingInterval"] = json!("1s");
        let gitrepo: GitRepo = serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
            "metadata": {"name": "demo", "namespace": NS},
            "spec": spec,
        }))
        .expect("GitRepo");
        Api::<GitRepo>::namespaced(self.hub.client.clone(), NS)
            .create(&PostParams::default(), &gitrepo)
            .await
            .expect("GitRepo");
    }

    /// kubectl against a member cluster.
    pub(crate) fn kubectl(&self, member: &str) -> Kubectl {
        self.hub.hub.kubectl(member)
    }

    /// `kubectl get ... -o json` against a member, or `None` if it failed.
    pub(crate) fn get(&self, member: &str, args: &[&str]) -> Option<Value> {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        let run = self.kubectl(member).run_blocking(&args);
        run.ok.then(|| run.json())
    }

    /// The Events of the hub's `fleet-local` about the object `name`, as `kubectl` lists
    /// them.
    pub(crate) fn events_of(&self, name: &str) -> Value {
        let about = format!("involvedObject.name={name}");
        self.get(
            "local",
            &["get", "events", "-n", NS, "--field-selector", &about],
        )
        .expect("events")
    }

    /// The `Deployed` condition of a member's deployment `name`, once it says False.
    pub(crate) async fn deploy_failure(&self, member: &str, name: &str) -> fleet_api::Condition {
        let deployments = self.deployments(member);
        fleet_testkit::eventually("a failed deployment reported", WAIT, || async {
            let status = deployments.get(name).await.ok()?.status?;
            let deployed = status.conditions.iter().find(|c| c.type_ == "Deployed")?;
            (deployed.status == "False").then(|| deployed.clone())
        })
        .await
    }

    /// The BundleDeployments of a member on the hub.
    pub(crate) fn deployments(&self, member: &str) -> Api<BundleDeployment> {
        Api::namespaced(
            self.hub.client.clone(),
            &format!("cluster-fleet-local-{member}"),
        )
    }

    /// Deletes the GitRepo `demo` and waits until it, its Bundles and its
    /// BundleDeployments are gone from the hub (uninstalled by the agents).
    pub(crate) async fn delete_gitrepo(&self) {
        self.hub
            .hub
            .kubectl("local")
            .run_blocking(&["delete", "gitrepo", "demo", "-n", NS, "--wait=false"])
            .success();
        fleet_testkit::eventually("the bundles uninstalled and gone", WAIT, || async {
            let empty = |args: &[&str]| {
                self.get("local", args)
                    .is_some_and(|v| v["items"].as_array().is_some_and(Vec::is_empty))
            };
            (empty(&["get", "bundles", "-A"])
                && empty(&["get", "bundledeployments", "-A"])
                && empty(&["get", "gitrepos", "-A"]))
            .then_some(())
        })
        .await;
    }

    /// Stops every task.
    pub(crate) async fn stop(self) {
        self.running.stop().await;
    }
}
