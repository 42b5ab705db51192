//! Which RBAC bindings name each subject, kept with the store's objects: what an account is
//! granted is then worked out from the bindings that name it, not by reading every binding
//! of the cluster (each registered agent adds its own, so 10,000 agents bring 10,000).

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

/// The storage keys of the resources that bind subjects to roles.
pub const BINDING_RESOURCES: [&str; 2] = [
    "rbac.authorization.k8s.io/clusterrolebindings",
    "rbac.authorization.k8s.io/rolebindings",
];

/// A binding: its resource, namespace and name in a cluster.
pub type BindingKey = (String, String, String);

/// The bindings naming each subject, by cluster.
#[derive(Debug, Default)]
pub struct SubjectIndex {
    clusters: HashMap<String, HashMap<String, BTreeSet<BindingKey>>>,
}

impl SubjectIndex {
    /// Whether objects of `resource` are indexed.
    pub fn indexes(resource: &str) -> bool {
        BINDING_RESOURCES.contains(&resource)
    }

    /// Records that the binding at `key` of `cluster` changed from `old` to `new` (either
    /// absent for a create or a delete).
    pub fn update(
        &mut self,
        cluster: &str,
        key: BindingKey,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        let namespace = key.1.clone();
        let before = old.map(|o| subjects_of(o, &namespace)).unwrap_or_default();
        let after = new.map(|n| subjects_of(n, &namespace)).unwrap_or_default();
        if before == after {
            return;
        }
        let subjects = self.clusters.entry(cluster.to_string()).or_default();
        for subject in before.difference(&after) {
            if let Some(bindings) = subjects.get_mut(subject) {
                bindings.remove(&key);
                if bindings.is_empty() {
                    subjects.remove(subject);
                }
            }
        }
        for subject in after.difference(&before) {
            subjects
                .entry(subject.clone())
                .or_default()
                .insert(key.clone());
        }
    }

    /// Keeps the entries of the clusters `keep` says to from `other` (the memory-only
    /// clusters, over a reload from the database that never had them).
    pub fn keep_from(&mut self, other: SubjectIndex, keep: impl Fn(&String) -> bool) {
        (self.clusters).extend(other.clusters.into_iter().filter(|(c, _)| keep(c)));
    }

    /// The bindings of `cluster` naming the service account `namespace`/`name`: as itself,
    /// as its user name, or by a group it is in.
    pub fn naming_account(&self, cluster: &str, namespace: &str, name: &str) -> Vec<BindingKey> {
        let Some(subjects) = self.clusters.get(cluster) else {
            return Vec::new();
        };
        let wanted = [
            format!("ServiceAccount:{namespace}:{name}"),
            format!("User:system:serviceaccount:{namespace}:{name}"),
            "Group:system:serviceaccounts".to_string(),
            format!("Group:system:serviceaccounts:{namespace}"),
        ];
        let found: BTreeSet<&BindingKey> = (wanted.iter())
            .filter_map(|subject| subjects.get(subject))
            .flatten()
            .collect();
        found.into_iter().cloned().collect()
    }
}

/// The subjects a binding in `namespace` names, as `Kind:name` (`ServiceAccount:ns:name`
/// for a service account, whose namespace defaults to the binding's).
fn subjects_of(binding: &Value, namespace: &str) -> BTreeSet<String> {
    let subjects = binding.get("subjects").and_then(Value::as_array);
    (subjects.into_iter().flatten())
        .filter_map(|subject| {
            let field = |f: &str| subject.get(f).and_then(Value::as_str).unwrap_or_default();
            let name = field("name");
            match field("kind") {
                "ServiceAccount" => {
                    let ns = Some(field("namespace")).filter(|n| !n.is_empty());
                    Some(format!("ServiceAccount:{}:{name}", ns.unwrap_or(namespace)))
                }
                kind @ ("User" | "Group") => Some(format!("{kind}:{name}")),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(resource: usize, namespace: &str, name: &str) -> BindingKey {
        let resource = BINDING_RESOURCES[resource].to_string();
        (resource, namespace.into(), name.into())
    }

    #[test]
    fn bindings_are_found_by_each_way_they_name_an_account_and_forgotten_when_changed() {
        let mut index = SubjectIndex::default();
        let account = json!({"subjects": [{"kind": "ServiceAccount", "name": "agent"}]});
        let elsewhere = json!({"subjects": [
            {"kind": "ServiceAccount", "name": "agent", "namespace": "other"}]});
        let group = json!({"subjects": [{"kind": "Group", "name": "system:serviceaccounts:ns"}]});
        let user = json!({"subjects": [
            {"kind": "User", "name": "system:serviceaccount:ns:agent"}]});
        index.update("c", key(1, "ns", "own"), None, Some(&account));
        index.update("c", key(1, "ns", "other"), None, Some(&elsewhere));
        index.update("c", key(0, "", "group"), None, Some(&group));
        index.update("c", key(0, "", "user"), None, Some(&user));
        index.update("d", key(1, "ns", "own"), None, Some(&account));
        let names = |index: &SubjectIndex| -> Vec<String> {
            let found = index.naming_account("c", "ns", "agent");
            found.into_iter().map(|(_, _, name)| name).collect()
        };
        assert_eq!(names(&index), ["group", "user", "own"]);

        index.update("c", key(1, "ns", "own"), Some(&account), Some(&elsewhere));
        index.update("c", key(0, "", "user"), Some(&user), None);
        assert_eq!(names(&index), ["group"]);
        assert_eq!(index.naming_account("c", "other", "agent").len(), 2);
        assert_eq!(index.naming_account("d", "ns", "agent").len(), 1);
    }
}
