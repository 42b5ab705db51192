//! Who is calling and what they may do: an admin token per logical cluster, and service
//! account tokens authorised by the cluster's own Roles and RoleBindings (RBAC).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::store::Store;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// Full access to one logical cluster.
    Admin {
        /// The cluster.
        cluster: String,
    },
    /// A service account of one logical cluster, limited by RBAC.
    ServiceAccount {
        /// The cluster.
        cluster: String,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl Identity {
    /// The cluster the identity belongs to.
    pub fn cluster(&self) -> &str {
        match self {
            Identity::Admin { cluster } | Identity::ServiceAccount { cluster, .. } => cluster,
        }
    }

    /// The cluster, namespace and name of a service account; `None` for an admin.
    pub fn service_account(&self) -> Option<(&str, &str, &str)> {
        match self {
            Identity::ServiceAccount {
                cluster,
                namespace,
                name,
            } => Some((cluster, namespace, name)),
            Identity::Admin { .. } => None,
        }
    }

    /// The user name Kubernetes would report.
    pub fn user(&self) -> String {
        match self {
            Identity::Admin { cluster } => format!("system:admin:{cluster}"),
            Identity::ServiceAccount {
                namespace, name, ..
            } => {
                format!("system:serviceaccount:{namespace}:{name}")
            }
        }
    }
}

/// What a resource request asks to do, for authorisation.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    /// get, list, watch, create, update, patch, delete or deletecollection.
    pub verb: &'a str,
    /// API group.
    pub group: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, if any.
    pub subresource: Option<&'a str>,
    /// Namespace, empty for cluster scope.
    pub namespace: &'a str,
    /// Object name, if any.
    pub name: Option<&'a str>,
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn rule_allows(rule: &Value, attributes: &Attributes) -> bool {
    let has = |field: &str, wanted: &str| {
        strings(rule.get(field))
            .iter()
            .any(|v| *v == "*" || *v == wanted)
    };
    let resource = match attributes.subresource {
        Some(sub) => format!("{}/{sub}", attributes.resource),
        None => attributes.resource.to_string(),
    };
    let names = strings(rule.get("resourceNames"));
    has("verbs", attributes.verb)
        && has("apiGroups", attributes.group)
        && has("resources", &resource)
        && (names.is_empty() || attributes.name.is_some_and(|n| names.contains(&n)))
}

fn binds(binding: &Value, namespace: &str, name: &str) -> bool {
    let user = format!("system:serviceaccount:{namespace}:{name}");
    let groups = [
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{namespace}"),
    ];
    let binding_ns = crate::meta::meta_str(binding, "namespace").unwrap_or_default();
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| {
            let field = |f: &str| s.get(f).and_then(Value::as_str).unwrap_or_default();
            match field("kind") {
                "ServiceAccount" => {
                    let subject_ns = if field("namespace").is_empty() {
                        binding_ns
                    } else {
                        field("namespace")
                    };
                    field("name") == name && subject_ns == namespace
                }
                "User" => field("name") == user,
                "Group" => groups.iter().any(|g| g == field("name")),
                _ => false,
            }
        })
}

/// The rules the cluster's RBAC objects grant a service account in `scope` (a namespace, or
/// empty for cluster scope): its ClusterRoleBindings' roles, and in a namespace also the
/// roles of that namespace's RoleBindings.
fn granted_rules(
    store: &Arc<Store>,
    cluster: &str,
    namespace: &str,
    name: &str,
    scope: &str,
) -> Vec<Value> {
    let role = |kind: &str, role_name: &str, binding_ns: &str| -> Option<Value> {
        let (resource, ns) = match kind {
            "ClusterRole" => ("clusterroles", ""),
            _ => ("roles", binding_ns),
        };
        let key = crate::store::Key {
            cluster: cluster.to_string(),
            resource: format!("rbac.authorization.k8s.io/{resource}"),
            namespace: ns.to_string(),
            name: role_name.to_string(),
        };
        store.get(&key).ok().flatten()?.value().ok()
    };
    let bindings: Vec<Value> = (store.bindings_naming_account(cluster, namespace, name, scope))
        .iter()
        .filter_map(|b| b.value().ok())
        .collect();
    let mut rules = Vec::new();
    for binding in bindings.iter().filter(|b| binds(b, namespace, name)) {
        let reference = |field: &str| {
            binding
                .pointer(&format!("/roleRef/{field}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let binding_ns = crate::meta::meta_str(binding, "namespace").unwrap_or_default();
        if let Some(found) = role(reference("kind"), reference("name"), binding_ns) {
            if let Some(Value::Array(granted)) = found.get("rules") {
                rules.extend(granted.iter().cloned());
            }
        }
    }
    rules
}

/// The RBAC objects whose changes change what an account is granted.
const RBAC_RESOURCES: [&str; 4] = [
    "rbac.authorization.k8s.io/clusterrolebindings",
    "rbac.authorization.k8s.io/rolebindings",
    "rbac.authorization.k8s.io/clusterroles",
    "rbac.authorization.k8s.io/roles",
];

/// The most accounts and scopes whose rules are kept; past it they are worked out afresh.
const GRANTS_KEPT: usize = 100_000;

/// Who is granted rules: a service account of a cluster, in a scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Grantee {
    cluster: String,
    namespace: String,
    name: String,
    scope: String,
}

/// The rules granted, and the versions of the RBAC objects they were worked out from.
struct Granted {
    versions: [u64; RBAC_RESOURCES.len()],
    rules: Arc<Vec<Value>>,
}

/// The hub's RBAC for service accounts. The rules each account is granted in each scope are
/// worked out once and kept until an RBAC object of its cluster changes: a registered agent
/// makes every request as its account, and each registration adds a ClusterRoleBinding
/// naming the same account name, so working them out reads every registration's binding.
pub struct Rbac {
    store: Arc<Store>,
    granted: Mutex<HashMap<Grantee, Granted>>,
}

impl Rbac {
    /// The RBAC of the objects in `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            granted: Mutex::new(HashMap::new()),
        }
    }

    /// The rules the cluster's RBAC objects grant the service account `namespace`/`name`
    /// in `scope` (a namespace, or empty for cluster scope): its ClusterRoleBindings'
    /// roles, and in a namespace also the roles of that namespace's RoleBindings.
    pub fn granted_rules(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        scope: &str,
    ) -> Arc<Vec<Value>> {
        // Read before the rules: a change while they are worked out makes them stale at once.
        let versions = self.store.last_changes(cluster, RBAC_RESOURCES);
        let grantee = Grantee {
            cluster: cluster.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            scope: scope.to_string(),
        };
        let lock = || self.granted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(granted) = lock().get(&grantee).filter(|g| g.versions == versions) {
            return granted.rules.clone();
        }
        let rules = Arc::new(granted_rules(&self.store, cluster, namespace, name, scope));
        let mut granted = lock();
        if granted.len() >= GRANTS_KEPT {
            granted.clear();
        }
        let kept = Granted {
            versions,
            rules: rules.clone(),
        };
        granted.insert(grantee, kept);
        rules
    }

    /// Whether the cluster's RBAC objects let the service account `namespace`/`name` do
    /// what `attributes` asks.
    pub fn allows(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        attributes: &Attributes,
    ) -> bool {
        self.granted_rules(cluster, namespace, name, attributes.namespace)
            .iter()
            .any(|rule| rule_allows(rule, attributes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_match_verbs_groups_resources_and_names() {
        let attributes = Attributes {
            verb: "update",
            group: "fleet.cattle.io",
            resource: "bundledeployments",
            subresource: Some("status"),
            namespace: "cluster-a",
            name: Some("web"),
        };
        let status_writer = json!({"verbs": ["update", "patch"], "apiGroups": ["fleet.cattle.io"],
                                   "resources": ["bundledeployments/status"]});
        let reader = json!({"verbs": ["get", "list", "watch"], "apiGroups": ["fleet.cattle.io"],
                            "resources": ["bundledeployments"]});
        assert!(rule_allows(&status_writer, &attributes));
        assert!(!rule_allows(&reader, &attributes));
        let named = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status", "bundledeployments/status"],
                           "resourceNames": ["other"]});
        assert!(!rule_allows(&named, &attributes));
    }

    #[test]
    fn bindings_name_service_accounts_users_and_groups() {
        let binding = json!({"metadata": {"namespace": "ns"}, "subjects": [
            {"kind": "ServiceAccount", "name": "agent"}]});
        assert!(binds(&binding, "ns", "agent"));
        assert!(!binds(&binding, "other", "agent"));
        let group = json!({"subjects": [{"kind": "Group", "name": "system:serviceaccounts:ns"}]});
        assert!(binds(&group, "ns", "anyone"));
    }
}
