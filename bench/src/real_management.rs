//! `fleet bench fleet --real-management`: the management cluster on a real kube-apiserver
//! with its etcd and controller manager (built by `.ci/real-k8s.sh`, started on loopback),
//! the member clusters in the hub in this process, gitjob, the controller and the agents
//! in this process too.

use anyhow::{Context, Result};

use crate::processes::HubCounts;

/// A real management cluster for the benchmark.
pub(crate) struct RealManagement {
    plane: fleet_testkit::RealControlPlane,
    /// An admin client of it.
    pub admin: kube::Client,
}

impl RealManagement {
    /// Starts the cluster and installs Fleet's CRDs and namespaces on it.
    pub(crate) async fn start() -> Result<Self> {
        let plane = fleet_testkit::RealControlPlane::start(&["management"]).await;
        let admin = plane.cluster("management").client().await;
        fleet_objects::client::install_fleet(&admin, "fleet-bench")
            .await
            .context("installing Fleet on the real management cluster")?;
        println!(
            "real management cluster (kube-apiserver, kube-controller-manager, etcd) up in {:.1} s at {}",
            plane.started_in().as_secs_f64(),
            plane.cluster("management").url()
        );
        Ok(Self { plane, admin })
    }

    /// What kube-apiserver has served and holds, from its `/metrics`.
    pub(crate) async fn counts(&self) -> Result<HubCounts> {
        HubCounts::read(&self.admin).await
    }

    /// The CPU seconds each of the cluster's processes has used.
    pub(crate) fn cpu_seconds(&self) -> Vec<(&'static str, f64)> {
        self.pids()
            .into_iter()
            .map(|(name, pid)| (name, crate::measure::cpu_seconds(&pid.to_string())))
            .collect()
    }

    /// The peak resident memory of each of the cluster's processes, in KiB.
    pub(crate) fn peak_rss_kib(&self) -> Vec<(&'static str, u64)> {
        self.pids()
            .into_iter()
            .map(|(name, pid)| (name, crate::measure::peak_rss_kib(&pid.to_string())))
            .collect()
    }

    fn pids(&self) -> Vec<(&'static str, u32)> {
        self.plane.cluster("management").pids()
    }
}
