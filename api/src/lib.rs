//! Rust types for Rancher Fleet's `fleet.cattle.io/v1alpha1` API and the `fleet.yaml` schema.
//!
//! Field names follow Fleet's spelling so that objects and files written for Rancher Fleet
//! deserialize unchanged. This crate holds types, the labels Fleet's objects carry, and the
//! Content wire format: no I/O, no controllers.

// kube's `printcolumn(type_ = "string", ...)` repeats the same key once per column by design.
#![allow(clippy::duplicated_attributes)]

mod bundle;
mod bundledeployment;
mod cluster;
mod common;
mod content;
pub mod crds;
mod fleetyaml;
mod gitrepo;
pub mod labels;
mod policy;
mod registration;
pub mod strict;

pub use bundle::*;
pub use bundledeployment::*;
pub use cluster::*;
pub use common::*;
pub use content::{Content, ContentError, HelmHook, HelmRelease, MemberRender, Payload};
pub use fleetyaml::*;
pub use gitrepo::*;
pub use policy::{GitRepoPolicy, Policy, PolicyRules};
pub use registration::*;

/// The API group of every Fleet kind.
pub const GROUP: &str = "fleet.cattle.io";
/// The API version of every Fleet kind served here.
pub const VERSION: &str = "v1alpha1";
