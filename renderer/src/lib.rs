//! The pure renderer of fleet-rs: a Fleet repository's files in, Bundles and their
//! resources out.
//!
//! No network and no Kubernetes: everything is read from a [`RepoRoot`] and every path is
//! kept inside it. [`bundle`] finds the bundles (`fleet.yaml`, `gitRepo.spec.paths`,
//! `.fleetignore`) and renders each for a cluster with the engines [`fleet_helm`] and
//! [`fleet_kustomize`].

pub mod bundle;

pub use fleet_files::{Error as RenderError, Location, RepoRoot, Result};
