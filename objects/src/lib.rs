//! Kubernetes object plumbing that the hub, the renderer and the controllers share:
//! strategic merge patch with the merge keys of built-in kinds, label selectors,
//! structural-schema pruning and defaulting, status conditions, Go durations, YAML's legacy
//! octal integers as Go reads them, a linear bound on YAML nesting, YAML read with a bound on
//! what its aliases expand to, and (with the
//! `client` feature) what a kube-rs client needs: clients from kubeconfig files, namespaces
//! made on demand, Fleet's CRDs installed, the watch backoff, reconciles on their own
//! tasks and Events recorded; with `service`, what a
//! long-running process needs: the stop signal and `/healthz`.
//!
//! Nothing here renders, fetches or deploys: it sits below every crate that does.

#[cfg(feature = "client")]
pub mod backoff;
pub mod base64;
#[cfg(feature = "client")]
pub mod client;
pub mod conditions;
pub mod downstream;
pub mod duration;
#[cfg(feature = "client")]
pub mod events;
pub mod hints;
#[cfg(feature = "client")]
pub mod leader;
pub mod policy;
pub mod quantity;
pub mod schema;
pub mod secret_file;
pub mod selector;
#[cfg(feature = "service")]
pub mod service;
pub mod smp;
#[cfg(feature = "client")]
pub mod task;
pub mod yaml_depth;
pub mod yaml_octal;
pub mod yaml_value;

/// Splits `group/version` (or a bare core `version`) into its group and version.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}
