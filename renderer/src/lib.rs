//! The pure renderer of fleet-rs: files in, Kubernetes resources out.
//!
//! No network and no Kubernetes: everything is read from a [`RepoRoot`] and every path is
//! kept inside it.

pub mod bundle;
pub mod emit;
pub mod error;
pub mod helm;
pub mod kustomize;
pub mod resource;
pub mod root;
pub mod yaml;

pub use error::{RenderError, Result};
pub use root::RepoRoot;
