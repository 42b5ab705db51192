//! Who is calling and what they may do: an admin token per logical cluster, and service
//! account tokens authorised by the cluster's own Roles and RoleBindings (RBAC).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::pair::Pair;
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
pub(crate) struct Attributes<'a> {
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

/// The strings in the list `field` of `rule`.
fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    (rule.get(field).and_then(Value::as_array).into_iter())
        .flatten()
        .filter_map(Value::as_str)
}

fn rule_allows(rule: &Value, attributes: &Attributes) -> bool {
    let has = |field: &str, wanted: &str| strings(rule, field).any(|v| v == "*" || v == wanted);
    // Whether a rule's resource is the one asked for: `resource/subresource` for a
    // subresource, or `*/subresource` for that subresource of every resource, as in
    // Kubernetes.
    let is_resource = |v: &str| match attributes.subresource {
        Some(sub) => v.split_once('/').is_some_and(|(resource, named)| {
            (resource == attributes.resource || resource == "*") && named == sub
        }),
        None => v == attributes.resource,
    };
    let names_allow = strings(rule, "resourceNames").next().is_none()
        || attributes
            .name
            .is_some_and(|name| strings(rule, "resourceNames").any(|v| v == name));
    has("verbs", attributes.verb)
        && has("apiGroups", attributes.group)
        && strings(rule, "resources").any(|v| v == "*" || is_resource(v))
        && names_allow
}

/// The rules the cluster's RBAC objects grant a service account in `scope` (a namespace, or
/// empty for cluster scope): its ClusterRoleBindings' roles, and in a namespace also the
/// roles of that namespace's RoleBindings; with what they were worked out from.
fn granted_rules(
    store: &Arc<Store>,
    cluster: &str,
    namespace: &str,
    name: &str,
    scope: &str,
) -> Granted {
    // The store's index gives exactly the bindings that name the account (as itself, by
    // its user name or a group of it; see `crate::subjects`).
    let (bindings_changed, bindings) =
        store.bindings_naming_account(cluster, namespace, name, scope);
    let bindings: Vec<Value> = bindings.iter().filter_map(|b| b.value().ok()).collect();
    let mut roles = Vec::new();
    let mut rules = Vec::new();
    for binding in &bindings {
        let reference = |field: &str| {
            binding
                .pointer(&format!("/roleRef/{field}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (resource, role_ns) = match reference("kind") {
            "ClusterRole" => ("clusterroles", ""),
            _ => (
                "roles",
                crate::meta::meta_str(binding, "namespace").unwrap_or_default(),
            ),
        };
        let key = crate::event::Key {
            cluster: cluster.to_string(),
            resource: format!("rbac.authorization.k8s.io/{resource}"),
            namespace: role_ns.to_string(),
            name: reference("name").to_string(),
        };
        let role = store.get(&key).ok().flatten();
        if let Some(Value::Array(found)) = role
            .as_ref()
            .and_then(|r| r.value().ok())
            .and_then(|mut r| r.get_mut("rules").map(Value::take))
        {
            rules.extend(found);
        }
        // A role missing now may be made later: that too is kept against.
        roles.push((key, role));
    }
    Granted {
        bindings_changed,
        roles,
        rules: Arc::new(rules),
    }
}

/// The most accounts and scopes whose rules are kept; past it they are worked out afresh.
const GRANTS_KEPT: usize = 100_000;

/// The grants of the accounts of one namespace of a cluster, by account name and scope.
type NamespaceGrants = HashMap<(String, String), Arc<Granted>>;

/// The grants kept, by service account: its cluster and namespace, then its name and the
/// scope. Found by borrowed names ([`Pair`]): a request's look-up copies none.
#[derive(Default)]
struct Grants {
    kept: HashMap<(String, String), NamespaceGrants>,
    count: usize,
}

impl Grants {
    /// The grant of `namespace`/`name` of `cluster` in `scope`, if kept.
    fn get(&self, cluster: &str, namespace: &str, name: &str, scope: &str) -> Option<Arc<Granted>> {
        let account = self.kept.get(&(cluster, namespace) as &dyn Pair)?;
        account.get(&(name, scope) as &dyn Pair).cloned()
    }

    /// Keeps `granted` as the grant of `namespace`/`name` of `cluster` in `scope`; past
    /// [`GRANTS_KEPT`], the others are forgotten first.
    fn keep(
        &mut self,
        cluster: &str,
        namespace: &str,
        name: &str,
        scope: &str,
        granted: Arc<Granted>,
    ) {
        if self.count >= GRANTS_KEPT {
            *self = Self::default();
        }
        let account = (self.kept)
            .entry((cluster.to_string(), namespace.to_string()))
            .or_default();
        if account
            .insert((name.to_string(), scope.to_string()), granted)
            .is_none()
        {
            self.count += 1;
        }
    }
}

/// The rules granted, and what they were worked out from: the version of the bindings
/// naming the account ([`Store::account_bindings_changed`]) and each role they refer to, as
/// it was (or its absence).
struct Granted {
    bindings_changed: u64,
    roles: Vec<(crate::event::Key, Option<Arc<crate::stored::Stored>>)>,
    rules: Arc<Vec<Value>>,
}

impl Granted {
    /// Whether nothing they were worked out from, for the service account
    /// `namespace`/`name` of `cluster`, has changed since.
    fn is_current(&self, store: &Store, cluster: &str, namespace: &str, name: &str) -> bool {
        store.account_bindings_changed(cluster, namespace, name) == self.bindings_changed
            && self
                .roles
                .iter()
                .all(|(key, seen)| match (store.get(key).ok().flatten(), seen) {
                    (Some(now), Some(seen)) => Arc::ptr_eq(&now, seen),
                    (None, None) => true,
                    _ => false,
                })
    }
}

/// The hub's RBAC for service accounts. The rules each account is granted in each scope are
/// worked out once, from the bindings that name it (the store indexes them by subject), and
/// kept until one of those bindings or their roles changes: a registered agent makes every
/// request as its account, and other agents' registrations do not concern it.
pub(crate) struct Rbac {
    store: Arc<Store>,
    granted: Mutex<Grants>,
}

impl Rbac {
    /// The RBAC of the objects in `store`.
    pub(crate) fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            granted: Mutex::new(Grants::default()),
        }
    }

    /// The rules the cluster's RBAC objects grant the service account `namespace`/`name`
    /// in `scope` (a namespace, or empty for cluster scope): its ClusterRoleBindings'
    /// roles, and in a namespace also the roles of that namespace's RoleBindings.
    pub(crate) fn granted_rules(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        scope: &str,
    ) -> Arc<Vec<Value>> {
        let lock = || self.granted.lock().unwrap_or_else(|p| p.into_inner());
        let kept = lock().get(cluster, namespace, name, scope);
        if let Some(kept) = kept.filter(|g| g.is_current(&self.store, cluster, namespace, name)) {
            return kept.rules.clone();
        }
        let granted = Arc::new(granted_rules(&self.store, cluster, namespace, name, scope));
        let rules = granted.rules.clone();
        lock().keep(cluster, namespace, name, scope, granted);
        rules
    }

    /// Whether the cluster's RBAC objects let the service account `namespace`/`name` do
    /// what `attributes` asks.
    pub(crate) fn allows(
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
        let named_web = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                               "resourceNames": ["other", "web"]});
        assert!(rule_allows(&named_web, &attributes));
        let every_status =
            json!({"verbs": ["patch"], "apiGroups": ["*"], "resources": ["*/status"]});
        let patch = Attributes {
            verb: "patch",
            ..attributes.clone()
        };
        assert!(rule_allows(&every_status, &patch));
        let scale = Attributes {
            subresource: Some("scale"),
            ..patch.clone()
        };
        assert!(!rule_allows(&every_status, &scale));
        let main_patch = Attributes {
            subresource: None,
            ..patch.clone()
        };
        assert!(!rule_allows(&every_status, &main_patch));
        // The main resource is not its status, nor the other way round.
        let main = Attributes {
            subresource: None,
            ..attributes.clone()
        };
        let main_writer = json!({"verbs": ["update"], "apiGroups": ["fleet.cattle.io"],
                                 "resources": ["bundledeployments"]});
        assert!(rule_allows(&main_writer, &main));
        assert!(!rule_allows(&main_writer, &attributes));
        assert!(!rule_allows(&status_writer, &main));
        let listing = Attributes {
            name: None,
            ..main.clone()
        };
        assert!(!rule_allows(&named_web, &listing));
    }

    #[tokio::test]
    async fn a_grant_is_kept_until_its_own_bindings_or_roles_change() {
        use crate::event::Key;
        use crate::store::{Change, ClusterRecord};
        let dir = tempfile::tempdir().expect("temp dir");
        let store =
            Arc::new(Store::open(&dir.path().join("db"), Default::default()).expect("store"));
        let record = ClusterRecord {
            name: "c".into(),
            token: "t".into(),
        };
        store.put_cluster(record).await.expect("cluster");
        let put = |resource: &str, namespace: &str, name: &str, object: Value| {
            let store = store.clone();
            let key = Key {
                cluster: "c".into(),
                resource: format!("rbac.authorization.k8s.io/{resource}"),
                namespace: namespace.into(),
                name: name.into(),
            };
            async move {
                (store.write(&key, |_| Ok((Change::Put(object.clone()), ()))))
                    .await
                    .expect("written");
            }
        };
        let binding = |account: &str| {
            json!({"metadata": {"namespace": "home"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                   "subjects": [{"kind": "ServiceAccount", "name": account}]})
        };
        let reader = |verbs: Value| {
            json!({"metadata": {"namespace": "home"},
                   "rules": [{"verbs": verbs, "apiGroups": [""], "resources": ["configmaps"]}]})
        };
        let rbac = Rbac::new(store.clone());
        let rules = || rbac.granted_rules("c", "home", "agent", "home");
        put("rolebindings", "home", "agent", binding("agent")).await;
        assert!(rules().is_empty(), "its role is not there yet");
        put("roles", "home", "reader", reader(json!(["get"]))).await;
        let granted = rules();
        assert_eq!(
            granted.len(),
            1,
            "the role made after the grant was worked out counts"
        );

        put("rolebindings", "home", "other", binding("other")).await;
        put("clusterrolebindings", "", "other", binding("other")).await;
        assert!(
            Arc::ptr_eq(&granted, &rules()),
            "others' bindings leave the grant kept"
        );

        put("roles", "home", "reader", reader(json!(["list"]))).await;
        assert_eq!(rules()[0]["verbs"], json!(["list"]), "its role changed");
        let kept = rules();
        put("rolebindings", "home", "agent", binding("someone-else")).await;
        assert!(rules().is_empty(), "its binding no longer names it");
        assert!(!Arc::ptr_eq(&kept, &rules()));
    }
}
