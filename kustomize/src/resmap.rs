//! The ordered set of resources a kustomization accumulates, with the history kustomize
//! keeps for each (earlier names, the kustomizations it came through, generator state).

use std::collections::HashSet;

use serde_json::Value;

use fleet_files::{str_at, ResId};
use fleet_files::{Error, Result};

use super::written::Later;

/// How a generated object is combined with one of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behavior {
    /// A new object; a clash is an error.
    Create,
    /// Keys are merged into the existing object.
    Merge,
    /// The existing object is replaced.
    Replace,
}

/// Generator bookkeeping of a generated ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Generated {
    /// Append the content hash to the name at the end of the build.
    pub hash_suffix: bool,
}

/// One resource and its history.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    /// The object.
    pub value: Value,
    /// Every `(namespace, name)` the object had, oldest first.
    pub names: Vec<(String, String)>,
    /// Name prefixes added, innermost kustomization first (name references prefer
    /// referrals renamed the same way).
    pub prefixes: Vec<String>,
    /// Name suffixes added, innermost first.
    pub suffixes: Vec<String>,
    /// Set when a generator made this resource.
    pub generated: Option<Generated>,
    /// The names kustomize stored as previous ids before the transformers that may rename
    /// (namespace, prefix and suffix, JSON patches, renaming patches, content hashes)
    /// ran; name references are only rewritten towards such resources.
    pub previous_names: Vec<String>,
    /// The vars bound to this object where they were declared.
    pub ref_var_names: Vec<String>,
    /// Rendered from a Helm chart: kustomize's namespace transformer leaves it alone.
    pub from_helm_chart: bool,
    /// What the object's text said that its value does not.
    pub written: Later,
}

impl Resource {
    /// Wraps a freshly loaded object.
    pub(crate) fn new(value: Value) -> Self {
        let id = ResId::of(&value);
        Self {
            names: vec![(id.namespace, id.name)],
            value,
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            generated: None,
            previous_names: Vec::new(),
            ref_var_names: Vec::new(),
            from_helm_chart: false,
            written: Later::default(),
        }
    }

    /// Wraps an object read from a file, with what its text said.
    pub(crate) fn read((value, written): (Value, Later)) -> Self {
        Self {
            written,
            ..Self::new(value)
        }
    }

    /// Notes the current name as a previous id, as kustomize does before a transformer
    /// that may rename the object runs.
    pub(crate) fn store_previous_id(&mut self) {
        let name = str_at(&self.value, &["metadata", "name"]).to_string();
        self.previous_names.push(name);
    }

    /// The current identity.
    pub(crate) fn id(&self) -> ResId {
        ResId::of(&self.value)
    }

    /// Records the current name and namespace after a transformer changed them.
    pub(crate) fn remember_name(&mut self) {
        let id = self.id();
        let entry = (id.namespace, id.name);
        if self.names.last() != Some(&entry) {
            self.names.push(entry);
        }
    }

    /// Whether the object was ever called `name`.
    pub(crate) fn was_named(&self, name: &str) -> bool {
        self.names.iter().any(|(_, n)| n == name)
    }

    /// The kind of the object.
    pub(crate) fn kind(&self) -> &str {
        str_at(&self.value, &["kind"])
    }
}

/// Resources in the order they were added.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResMap {
    /// The resources.
    pub items: Vec<Resource>,
}

impl ResMap {
    /// Adds a resource; an object with the same id already present is an error.
    pub(crate) fn push(&mut self, resource: Resource, file: &str) -> Result<()> {
        self.extend(std::iter::once(resource), file)
    }

    /// Adds every resource of another map.
    pub(crate) fn append(&mut self, other: ResMap, file: &str) -> Result<()> {
        self.extend(other.items, file)
    }

    /// Adds resources in order; one whose id is already present is an error. The ids in
    /// the map are read once per call, not once per added resource.
    pub(crate) fn extend(
        &mut self,
        resources: impl IntoIterator<Item = Resource>,
        file: &str,
    ) -> Result<()> {
        let mut seen: HashSet<[String; 4]> =
            self.items.iter().map(|r| identity(&r.value)).collect();
        for resource in resources {
            if !seen.insert(identity(&resource.value)) {
                return Err(Error::in_file(
                    file,
                    format!(
                        "may not add resource with an already registered id: {}",
                        resource.id()
                    ),
                ));
            }
            self.items.push(resource);
        }
        Ok(())
    }
}

/// The identity fields of an object: apiVersion, kind, namespace and name.
fn identity(object: &Value) -> [String; 4] {
    [
        str_at(object, &["apiVersion"]),
        str_at(object, &["kind"]),
        str_at(object, &["metadata", "namespace"]),
        str_at(object, &["metadata", "name"]),
    ]
    .map(str::to_string)
}
