//! Test support, and only that: a dev-dependency of the crates whose tests need servers,
//! never a dependency of a release binary. Hubs in temporary directories (bare, or with
//! Fleet installed), kubectl against them, Git repositories in temp directories,
//! `git daemon`, `git http-backend` behind a small HTTP(S) server with basic auth, `sshd`,
//! a Helm chart server, and the paths of the real tools installed from PyPI.
//!
//! It depends on the hub and nothing that deploys, so the tests of gitjob, the controller
//! and the agent can all use it without linking each other.

mod charts;
mod corpus;
mod fake_kubelet;
mod fleet_hub;
mod git_http;
mod hub;
mod pod;
mod real_k8s;
mod real_tools;
mod repos;
mod sshd;

pub use charts::{ChartServer, FileServer};
pub use corpus::{corpus_rows, shared_real, tsv_rows, workspace_root, write_file};
pub use fake_kubelet::{FAIL_ANNOTATION, SLOW_STOP_ANNOTATION};
pub use fleet_hub::{create_cluster, create_pushed_cluster, eventually, incompressible, FleetHub};
pub use git_http::GitHttpServer;
pub use hub::{client_for, Kubectl, Run, TestHub};
pub use pod::PodProcess;
pub use real_k8s::{RealCluster, RealControlPlane};
pub use real_tools::{helm, publish_chart, real_tool};
pub use repos::{free_address, free_port, git, wait_for_port, GitDaemon, TestRepo};
pub use sshd::SshServer;
