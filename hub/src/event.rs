//! The vocabulary of changes: where an object lives ([`Key`]) and what happened to it
//! ([`Event`]), shared by the store that commits changes and the topics that fan them out.

use std::sync::Arc;

use crate::stored::Stored;

/// Where an object lives: logical cluster, resource (`group/plural`), namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Logical cluster name.
    pub cluster: String,
    /// Storage key of the resource: `group/plural`.
    pub resource: String,
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl Key {
    /// Whether the key is in a watch's scope: `resource` of `cluster`, in `namespace` or
    /// (`None`) in every namespace.
    pub fn in_scope(&self, cluster: &str, resource: &str, namespace: Option<&str>) -> bool {
        self.cluster == cluster
            && self.resource == resource
            && namespace.is_none_or(|namespace| self.namespace == namespace)
    }
}

/// The kind of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed; the event carries its last state.
    Deleted,
}

impl EventType {
    /// The wire name: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// A committed change.
#[derive(Debug)]
pub struct Event {
    /// What happened.
    pub kind: EventType,
    /// Which object.
    pub key: Key,
    /// The resourceVersion of the change.
    pub rv: u64,
    /// The object after the change (its last state, for deletes).
    pub object: Arc<Stored>,
    /// The object before a modification, so that selector watches can tell an object that
    /// stopped matching (a DELETED for them) from one that started (an ADDED).
    pub previous: Option<Arc<Stored>>,
}
