//! Servers and repositories for tests (feature `test-support`): Git repositories in temp
//! directories, `git daemon`, `git http-backend` behind a small HTTP(S) server with basic
//! auth, `sshd`, and a Helm chart server.

mod charts;
mod fleet_hub;
mod git_http;
mod repos;
mod sshd;

pub use charts::ChartServer;
pub use fleet_hub::{client_for, create_cluster, eventually, incompressible, FleetHub};
pub use git_http::GitHttpServer;
pub use repos::{free_port, git, wait_for_port, GitDaemon, TestRepo};
pub use sshd::SshServer;
