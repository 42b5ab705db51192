//! The fleet on real Kubernetes: a management cluster and members, each a real etcd,
//! kube-apiserver and kube-controller-manager ([`RealControlPlane`]); gitjob and the
//! controller run against the management cluster; each pulled member's agent registers
//! with a token, as `fleet-agent --register` does; a pushed member is deployed to through
//! a kubeconfig Secret.
#![allow(dead_code)] // Each test uses its own part of the harness.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use clap::Parser;
use fleet_api::{BundleDeployment, GitRepo};
use fleet_controller::registration::{issue_token, HubAddress};
use fleet_testkit::{eventually, GitDaemon, Kubectl, RealCluster, RealControlPlane, TestRepo};
use kube::api::PostParams;
use kube::Api;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// The namespace of the GitRepos and Clusters.
pub(crate) const NS: &str = "fleet-default";
/// How long anything the fleet does may take on real clusters.
pub(crate) const WAIT: Duration = Duration::from_secs(90);

/// How often the controller looks for Contents nobody deploys.
pub(crate) const PURGE_EVERY: Duration = Duration::from_secs(1);

/// The management cluster's name.
pub(crate) const MANAGEMENT: &str = "management";

/// The agent's command line, parsed as `fleet-agent` parses it.
#[derive(Parser)]
struct AgentCli {
    #[command(flatten)]
    args: fleet_agent::command::AgentArgs,
}

/// Everything running on real clusters.
pub(crate) struct RealFleet {
    pub plane: RealControlPlane,
    /// An admin client of the management cluster.
    pub client: kube::Client,
    pub repo: TestRepo,
    pub daemon: GitDaemon,
    pub running: fleet_local::Fleet,
    pub dir: tempfile::TempDir,
    /// A registration token's kubeconfig, as `fleet token create` prints it.
    pub token: PathBuf,
    agents: Vec<(String, JoinHandle<()>)>,
}

impl RealFleet {
    /// Starts the management cluster and `members`, installs Fleet's CRDs, runs gitjob
    /// and the controller (serving registrations), and makes a registration token.
    pub(crate) async fn start(members: &[&str]) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let mut names = vec![MANAGEMENT];
        names.extend(members);
        let plane = RealControlPlane::start(&names).await;
        eprintln!(
            "real clusters {names:?} started in {:?}",
            plane.started_in()
        );
        let management = plane.cluster(MANAGEMENT);
        let client = management.client().await;
        fleet_objects::client::install_fleet(&client, "fleet-e2e")
            .await
            .expect("Fleet installed");
        let dir = tempfile::tempdir().expect("temp dir");
        let repos = dir.path().join("repos");
        let repo = TestRepo::in_dir(&repos, "app");
        let daemon = GitDaemon::start(&repos);
        let address = hub_address(management);
        let mut running = fleet_local::Fleet::new();
        running.run_pusher(&client, Duration::from_secs(1));
        running.run_gitjob(fleet_gitjob::controller::Gitjob::new(
            client.clone(),
            fleet_gitjob::controller::Settings::on_this_machine(dir.path().join("gitjob")),
            Default::default(),
        ));
        running.run_controller(fleet_controller::Context::with_options(
            client.clone(),
            dir.path().join("controller"),
            fleet_controller::Options {
                hub: Some(address.clone()),
                purge_every: PURGE_EVERY,
                ..Default::default()
            },
        ));
        let token = issue_token(&client, &address, NS, Some("1h".into()))
            .await
            .expect("a registration token");
        let token_path = dir.path().join("token.kubeconfig");
        std::fs::write(&token_path, token).expect("token written");
        Self {
            plane,
            client,
            repo,
            daemon,
            running,
            dir,
            token: token_path,
            agents: Vec::new(),
        }
    }

    /// [`RealFleet::start`] with one member, `dev` (label `env=dev`), whose agent runs.
    pub(crate) async fn with_dev() -> Self {
        let mut fleet = Self::start(&["dev"]).await;
        fleet.join("dev", &["--label", "env=dev"]);
        fleet
    }

    /// A real cluster.
    pub(crate) fn cluster(&self, name: &str) -> &RealCluster {
        self.plane.cluster(name)
    }

    /// kubectl as a cluster's admin.
    pub(crate) fn kubectl(&self, name: &str) -> Kubectl {
        self.cluster(name).kubectl()
    }

    /// `kubectl get ... -o json` against a cluster, or `None` if it failed.
    pub(crate) fn get(&self, cluster: &str, args: &[&str]) -> Option<Value> {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        let run = self.kubectl(cluster).run_blocking(&args);
        run.ok.then(|| run.json())
    }

    /// Runs `member`'s agent as `fleet-agent --register TOKEN --cluster-name MEMBER` with
    /// `args` added, its data in its own directory, deploying with the member's admin
    /// kubeconfig.
    pub(crate) fn join(&mut self, member: &str, args: &[&str]) {
        let kubeconfig = self.cluster(member).kubeconfig().to_path_buf();
        let mut argv: Vec<String> = vec![
            "fleet-agent".into(),
            "--register".into(),
            self.token.display().to_string(),
            "--cluster-name".into(),
            member.into(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--resync-seconds".into(),
            "2".into(),
        ];
        argv.extend(args.iter().map(|a| a.to_string()));
        let cli = AgentCli::try_parse_from(&argv).expect("agent arguments");
        let signal = self.running.signal();
        let name = member.to_string();
        let task = tokio::spawn(async move {
            if let Err(error) = fleet_agent::command::run(cli.args, signal).await {
                panic!("agent {name}: {error}");
            }
        });
        self.agents.push((member.to_string(), task));
    }

    /// Runs gitjob and the controller of shard `shard` too, as `--shard-id` runs them.
    pub(crate) fn run_shard(&mut self, shard: &str) {
        let mut settings = fleet_gitjob::controller::Settings::on_this_machine(
            self.dir.path().join(format!("gitjob-{shard}")),
        );
        settings.shard = Some(shard.to_string());
        self.running
            .run_gitjob(fleet_gitjob::controller::Gitjob::new(
                self.client.clone(),
                settings,
                Default::default(),
            ));
        self.running
            .run_controller(fleet_controller::Context::sharded(
                self.client.clone(),
                self.dir.path().join(format!("controller-{shard}")),
                shard,
            ));
    }

    /// Stops `member`'s agent at once, as a deleted Pod stops.
    pub(crate) async fn kill_agent(&mut self, member: &str) {
        let (killed, kept) = std::mem::take(&mut self.agents)
            .into_iter()
            .partition(|(name, _)| name == member);
        self.agents = kept;
        for (_, task) in killed {
            task.abort();
            let _ = task.await;
        }
    }

    /// Makes `member` a pushed cluster: a Cluster naming a Secret with its admin kubeconfig.
    pub(crate) async fn push(&self, member: &str, labels: Value) {
        let kubeconfig =
            std::fs::read_to_string(self.cluster(member).kubeconfig()).expect("kubeconfig");
        fleet_testkit::create_pushed_cluster(&self.client, NS, member, &kubeconfig, labels)
            .await
            .expect("pushed Cluster");
    }

    /// Creates the GitRepo `name` of `paths` of the test repository, targeting every
    /// cluster.
    pub(crate) async fn gitrepo_to_all(&self, name: &str, paths: &[&str]) {
        self.gitrepo(
            name,
            json!({"paths": paths, "targets": [{"clusterSelector": {}}]}),
        )
        .await;
    }

    /// Creates the GitRepo `name` on the test repository with `spec`'s other fields.
    pub(crate) async fn gitrepo(&self, name: &str, spec: Value) {
        self.gitrepo_labelled(name, json!({}), spec).await;
    }

    /// [`RealFleet::gitrepo`] with `labels`.
    pub(crate) async fn gitrepo_labelled(&self, name: &str, labels: Value, spec: Value) {
        let mut spec = spec;
        spec["repo"] = json!(self.daemon.url("app"));
        spec["branch"] = json!("main");
        spec["pollingInterval"] = json!("1s");
        let gitrepo: GitRepo = serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": spec,
        }))
        .expect("GitRepo");
        Api::<GitRepo>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &gitrepo)
            .await
            .expect("GitRepo");
    }

    /// The namespace of `member`'s BundleDeployments, once its Cluster has one.
    pub(crate) async fn cluster_namespace(&self, member: &str) -> String {
        let clusters: Api<fleet_api::Cluster> = Api::namespaced(self.client.clone(), NS);
        eventually(
            &format!("cluster {member} has a namespace"),
            WAIT,
            || async {
                clusters
                    .get(member)
                    .await
                    .ok()?
                    .status?
                    .namespace
                    .filter(|n| !n.is_empty())
            },
        )
        .await
    }

    /// `member`'s deployment `name` once `check` holds for it.
    pub(crate) async fn deployment_where(
        &self,
        member: &str,
        name: &str,
        what: &str,
        check: impl Fn(&BundleDeployment) -> bool,
    ) -> BundleDeployment {
        let namespace = self.cluster_namespace(member).await;
        let api: Api<BundleDeployment> = Api::namespaced(self.client.clone(), &namespace);
        let started = std::time::Instant::now();
        loop {
            let seen = match api.get_opt(name).await {
                Ok(seen) => seen,
                Err(error) => panic!("reading {member}/{name}: {error}"),
            };
            if let Some(deployment) = seen.as_ref().filter(|d| check(d)) {
                return deployment.clone();
            }
            if started.elapsed() > WAIT {
                let bundles = self.get(MANAGEMENT, &["get", "bundles,gitrepos", "-A"]);
                let statuses: Vec<&Value> = bundles
                    .iter()
                    .flat_map(|list| list["items"].as_array().into_iter().flatten())
                    .map(|bundle| &bundle["status"])
                    .collect();
                panic!(
                    "timed out waiting for {member}/{name}: {what}; last seen: {}\nbundles and gitrepos: {}",
                    serde_json::to_string_pretty(&seen.map(|d| d.status)).unwrap_or_default(),
                    serde_json::to_string_pretty(&statuses).unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops the agents and the controllers; the clusters stop when dropped.
    pub(crate) async fn stop(self) {
        self.running.stop().await;
        for (_, agent) in self.agents {
            agent.abort();
        }
    }
}

/// Where agents reach the management cluster: its URL and CA.
pub(crate) fn hub_address(cluster: &RealCluster) -> HubAddress {
    HubAddress {
        server: cluster.url().to_string(),
        ca_data: Some(base64::engine::general_purpose::STANDARD.encode(cluster.ca_pem())),
    }
}

/// Whether a deployment reports itself Ready at the deployment it is asked for now.
pub(crate) fn ready(deployment: &BundleDeployment) -> bool {
    let applied = deployment
        .status
        .as_ref()
        .and_then(|s| s.applied_deployment_id.as_ref());
    state(deployment).as_deref() == Some("Ready")
        && applied.is_some()
        && applied == deployment.spec.deployment_id.as_ref()
}

/// The state a deployment reports (`Ready`, `Modified`, ...), if it reported one.
pub(crate) fn state(deployment: &BundleDeployment) -> Option<String> {
    deployment.status.as_ref()?.display.as_ref()?.state.clone()
}
