//! Which RBAC bindings name each subject, and when one of them last changed, kept with the
//! store's objects: what an account is granted is worked out from the bindings that name
//! it, not by reading every binding of the cluster (each registered agent adds its own, so
//! 10,000 agents bring 10,000), and is kept until one of those changes, not until any
//! binding of the cluster does (a registration would otherwise make every agent's rules be
//! worked out again).

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

/// The storage keys of the resources that bind subjects to roles.
pub(crate) const BINDING_RESOURCES: [&str; 2] = [
    "rbac.authorization.k8s.io/clusterrolebindings",
    "rbac.authorization.k8s.io/rolebindings",
];

/// A binding: its resource, namespace and name in a cluster.
pub(crate) type BindingKey = (String, String, String);

/// The bindings naming each subject, by cluster.
#[derive(Debug, Default)]
pub(crate) struct SubjectIndex {
    clusters: HashMap<String, HashMap<String, Named>>,
}

/// The bindings naming a subject, and the resourceVersion of the last write to one of them
/// (kept when none is left: a grant worked out before the last one went is stale).
#[derive(Debug, Default)]
struct Named {
    bindings: BTreeSet<BindingKey>,
    changed: u64,
}

impl SubjectIndex {
    /// Whether objects of `resource` are indexed.
    pub(crate) fn indexes(resource: &str) -> bool {
        BINDING_RESOURCES.contains(&resource)
    }

    /// Records that the binding at `key` of `cluster` changed from `old` to `new` (either
    /// absent for a create or a delete) at resourceVersion `rv`.
    pub(crate) fn update(
        &mut self,
        cluster: &str,
        key: BindingKey,
        old: Option<&Value>,
        new: Option<&Value>,
        rv: u64,
    ) {
        let namespace = key.1.clone();
        let before = old.map(|o| subjects_of(o, &namespace)).unwrap_or_default();
        let after = new.map(|n| subjects_of(n, &namespace)).unwrap_or_default();
        let subjects = self.clusters.entry(cluster.to_string()).or_default();
        for subject in before.union(&after) {
            let named = subjects.entry(subject.clone()).or_default();
            named.changed = rv;
            if after.contains(subject) {
                named.bindings.insert(key.clone());
            } else {
                named.bindings.remove(&key);
            }
        }
    }

    /// Keeps the entries of the clusters `keep` says to from `other` (the memory-only
    /// clusters, over a reload from the database that never had them).
    pub(crate) fn keep_from(&mut self, other: SubjectIndex, keep: impl Fn(&String) -> bool) {
        (self.clusters).extend(other.clusters.into_iter().filter(|(c, _)| keep(c)));
    }

    /// The bindings of `cluster` naming the service account `namespace`/`name` (as itself,
    /// as its user name, or by a group it is in), and the resourceVersion of the last write
    /// to a binding that names or named it that way (0 if none since the index was made).
    pub(crate) fn naming_account(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> (Vec<BindingKey>, u64) {
        let named = self.named(cluster, namespace, name);
        let changed = named.iter().map(|n| n.changed).max().unwrap_or(0);
        let found: BTreeSet<&BindingKey> = named.iter().flat_map(|n| &n.bindings).collect();
        (found.into_iter().cloned().collect(), changed)
    }

    /// [`SubjectIndex::naming_account`]'s resourceVersion alone.
    pub(crate) fn account_changed(&self, cluster: &str, namespace: &str, name: &str) -> u64 {
        let named = self.named(cluster, namespace, name);
        named.iter().map(|n| n.changed).max().unwrap_or(0)
    }

    /// The entries of the subjects the service account `namespace`/`name` is.
    fn named(&self, cluster: &str, namespace: &str, name: &str) -> Vec<&Named> {
        let Some(subjects) = self.clusters.get(cluster) else {
            return Vec::new();
        };
        let wanted = [
            format!("ServiceAccount:{namespace}:{name}"),
            format!("User:system:serviceaccount:{namespace}:{name}"),
            "Group:system:serviceaccounts".to_string(),
            format!("Group:system:serviceaccounts:{namespace}"),
        ];
        (wanted.iter())
            .filter_map(|subject| subjects.get(subject))
            .collect()
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
        index.update("c", key(1, "ns", "own"), None, Some(&account), 1);
        index.update("c", key(1, "ns", "other"), None, Some(&elsewhere), 2);
        index.update("c", key(0, "", "group"), None, Some(&group), 3);
        index.update("c", key(0, "", "user"), None, Some(&user), 4);
        index.update("d", key(1, "ns", "own"), None, Some(&account), 5);
        let names = |index: &SubjectIndex| -> (Vec<String>, u64) {
            let (found, changed) = index.naming_account("c", "ns", "agent");
            (
                found.into_iter().map(|(_, _, name)| name).collect(),
                changed,
            )
        };
        assert_eq!(
            names(&index),
            (vec!["group".into(), "user".into(), "own".into()], 4)
        );

        index.update(
            "c",
            key(1, "ns", "other"),
            Some(&elsewhere),
            Some(&elsewhere),
            6,
        );
        assert_eq!(names(&index).1, 4, "a binding naming another account");
        index.update(
            "c",
            key(1, "ns", "own"),
            Some(&account),
            Some(&elsewhere),
            7,
        );
        index.update("c", key(0, "", "user"), Some(&user), None, 8);
        assert_eq!(names(&index), (vec!["group".into()], 8));
        index.update("c", key(0, "", "group"), Some(&group), None, 9);
        assert_eq!(
            names(&index),
            (vec![], 9),
            "the last one gone is a change too"
        );
        assert_eq!(index.naming_account("c", "other", "agent").0.len(), 2);
        assert_eq!(
            index.naming_account("d", "ns", "agent"),
            (vec![key(1, "ns", "own")], 5)
        );
    }

    #[test]
    fn bindings_name_service_accounts_users_and_groups() {
        let mut index = SubjectIndex::default();
        let binding = json!({"metadata": {"namespace": "ns"}, "subjects": [
            {"kind": "ServiceAccount", "name": "agent"}]});
        index.update("c", key(1, "ns", "b"), None, Some(&binding), 1);
        assert_eq!(index.naming_account("c", "ns", "agent").0.len(), 1);
        assert!(index.naming_account("c", "other", "agent").0.is_empty());
        let group = json!({"subjects": [{"kind": "Group", "name": "system:serviceaccounts:ns"}]});
        index.update("c", key(0, "", "g"), None, Some(&group), 2);
        assert_eq!(
            index.naming_account("c", "ns", "anyone").0,
            [key(0, "", "g")]
        );
    }
}
