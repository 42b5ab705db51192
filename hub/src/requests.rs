//! How many resource requests the hub served, by logical cluster, verb and resource: what
//! `fleet bench fleet` divides by the deployments it rolled out.

use std::collections::HashMap;
use std::sync::Mutex;

/// What a request was: its logical cluster, verb (`get`, `patch`, `watch`...) and resource
/// (plural).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestKind {
    /// The logical cluster.
    pub cluster: String,
    /// The verb.
    pub verb: String,
    /// The resource's plural.
    pub resource: String,
}

/// Counts of the requests served.
#[derive(Default)]
pub struct RequestCounts(Mutex<HashMap<RequestKind, u64>>);

impl RequestCounts {
    /// Counts one request.
    pub fn count(&self, cluster: &str, verb: &str, resource: &str) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let kind = RequestKind {
            cluster: cluster.to_string(),
            verb: verb.to_string(),
            resource: resource.to_string(),
        };
        *counts.entry(kind).or_default() += 1;
    }

    /// The counts so far.
    pub fn snapshot(&self) -> HashMap<RequestKind, u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
