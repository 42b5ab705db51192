//! gitjob, the targeting controller and the agents of a local fleet, as tasks of this
//! process that stop together.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, Shared};
use futures::FutureExt;
use tokio::task::JoinHandle;

/// Resolves once the fleet is told to stop; every task of a [`Fleet`] waits on a clone.
pub type StopSignal = Shared<BoxFuture<'static, ()>>;

/// How long [`Fleet::stop`] gives each task to finish.
const STOP_PATIENCE: Duration = Duration::from_secs(5);

/// The controllers and agents of a fleet, running until [`Fleet::stop`].
pub struct Fleet {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    signal: StopSignal,
    controllers: Vec<JoinHandle<()>>,
    agents: BTreeMap<String, RunningAgent>,
}

struct RunningAgent {
    task: JoinHandle<()>,
    heartbeat: Option<JoinHandle<()>>,
}

impl RunningAgent {
    /// Stops the agent at once, wherever it is (as a killed process would stop).
    async fn kill(self) {
        if let Some(heartbeat) = self.heartbeat {
            heartbeat.abort();
        }
        self.task.abort();
        let _ = self.task.await;
    }
}

impl Default for Fleet {
    fn default() -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let signal = async move {
            let _ = stopped.await;
        }
        .boxed()
        .shared();
        Self {
            stop: Some(stop),
            signal,
            controllers: Vec::new(),
            agents: BTreeMap::new(),
        }
    }
}

impl Fleet {
    /// A fleet with nothing running yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the fleet's tasks wait on to stop, for more tasks that should stop with them.
    pub fn signal(&self) -> StopSignal {
        self.signal.clone()
    }

    /// Runs gitjob until the fleet stops.
    pub fn run_gitjob(&mut self, gitjob: Arc<fleet_gitjob::controller::Gitjob>) {
        self.controllers
            .push(tokio::spawn(gitjob.run(self.signal.clone())));
    }

    /// Runs the targeting controller (and registration, if its context serves it) until the
    /// fleet stops.
    pub fn run_controller(&mut self, context: Arc<fleet_controller::Context>) {
        self.controllers.push(tokio::spawn(fleet_controller::run(
            context,
            self.signal.clone(),
        )));
    }

    /// Deploys to the pushed clusters of `hub` (`spec.kubeConfigSecret`), looking at each
    /// deployment again every `resync`, until the fleet stops ([`fleet_agent::push`]).
    pub fn run_pusher(&mut self, hub: &kube::Client, resync: Duration) {
        self.controllers.push(tokio::spawn(fleet_agent::push::run(
            hub.clone(),
            resync,
            self.signal.clone(),
        )));
    }

    /// Runs gitjob, the targeting controller and the pusher against `hub`, keeping their
    /// data under `data` (`gitjob/`, `controller/`), as a test or a benchmark runs them.
    /// With `registering` (where agents reach the hub), the controller also accepts
    /// cluster registrations.
    pub fn run_controllers(
        &mut self,
        hub: &kube::Client,
        data: &Path,
        registering: Option<fleet_controller::registration::HubAddress>,
    ) {
        self.run_pusher(hub, Duration::from_secs(1));
        self.run_gitjob(fleet_gitjob::controller::Gitjob::new(
            hub.clone(),
            fleet_gitjob::controller::Settings::on_this_machine(data.join("gitjob")),
            Arc::new(fleet_gitjob::metrics::Metrics::default()),
        ));
        let work = data.join("controller");
        self.run_controller(match registering {
            Some(address) => fleet_controller::Context::registering(hub.clone(), work, address),
            None => fleet_controller::Context::new(hub.clone(), work),
        });
    }

    /// Runs `agent` as the agent of `member` until the fleet stops, first killing the agent
    /// running for `member`, if any. With `heartbeat` (`namespace/name` of its Cluster and a
    /// period), it also reports itself alive.
    pub async fn run_agent(
        &mut self,
        member: &str,
        agent: Arc<fleet_agent::Agent>,
        heartbeat: Option<(String, Duration)>,
    ) {
        self.kill_agent(member).await;
        let heartbeat =
            heartbeat.map(|(cluster, every)| tokio::spawn(agent.clone().heartbeat(cluster, every)));
        let task = tokio::spawn(agent.run(self.signal.clone()));
        self.agents
            .insert(member.to_string(), RunningAgent { task, heartbeat });
    }

    /// Runs the workload simulator ([`crate::workloads`]) in the cluster `client` reaches,
    /// each status written `delay` after a change, until the fleet stops.
    pub fn run_simulator(&mut self, client: kube::Client, delay: Duration) {
        self.controllers
            .push(tokio::spawn(crate::workloads::simulate(
                client,
                delay,
                self.signal.clone(),
            )));
    }

    /// Stops the agent of `member` at once, if one runs.
    pub async fn kill_agent(&mut self, member: &str) {
        if let Some(running) = self.agents.remove(member) {
            running.kill().await;
        }
    }

    /// Tells every task to stop and gives each a few seconds: the agents first, then the
    /// controllers.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let agents = std::mem::take(&mut self.agents).into_values().map(|agent| {
            if let Some(heartbeat) = agent.heartbeat {
                heartbeat.abort();
            }
            agent.task
        });
        for task in agents.chain(self.controllers) {
            if tokio::time::timeout(STOP_PATIENCE, task).await.is_err() {
                tracing::warn!("a task of the fleet did not stop within {STOP_PATIENCE:?}");
            }
        }
    }
}
