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

/// Counts by cluster, then verb, then resource: a request of a kind already seen is
/// counted without allocating.
type Counts = HashMap<String, HashMap<String, HashMap<String, u64>>>;

/// Counts of the requests served.
#[derive(Default)]
pub struct RequestCounts(Mutex<Counts>);

impl RequestCounts {
    /// Counts one request.
    pub fn count(&self, cluster: &str, verb: &str, resource: &str) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let seen = (counts.get_mut(cluster))
            .and_then(|by_verb| by_verb.get_mut(verb))
            .and_then(|by_resource| by_resource.get_mut(resource));
        match seen {
            Some(n) => *n += 1,
            None => {
                let by_verb = counts.entry(cluster.to_string()).or_default();
                let by_resource = by_verb.entry(verb.to_string()).or_default();
                by_resource.insert(resource.to_string(), 1);
            }
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> HashMap<RequestKind, u64> {
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut kinds = HashMap::new();
        for (cluster, by_verb) in counts.iter() {
            for (verb, by_resource) in by_verb {
                for (resource, n) in by_resource {
                    let kind = RequestKind {
                        cluster: cluster.clone(),
                        verb: verb.clone(),
                        resource: resource.clone(),
                    };
                    kinds.insert(kind, *n);
                }
            }
        }
        kinds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_counted_apart() {
        let counts = RequestCounts::default();
        counts.count("m1", "get", "configmaps");
        counts.count("m1", "get", "configmaps");
        counts.count("m1", "patch", "configmaps");
        counts.count("m2", "get", "configmaps");
        let kind = |cluster: &str, verb: &str| RequestKind {
            cluster: cluster.into(),
            verb: verb.into(),
            resource: "configmaps".into(),
        };
        let snapshot = counts.snapshot();
        assert_eq!(snapshot.len(), 3);
        assert_eq!(snapshot[&kind("m1", "get")], 2);
        assert_eq!(snapshot[&kind("m1", "patch")], 1);
        assert_eq!(snapshot[&kind("m2", "get")], 1);
    }
}
