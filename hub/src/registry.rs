//! Which resources a logical cluster serves: a table of built-in kinds plus the
//! CustomResourceDefinitions stored in that cluster.

use std::sync::{Arc, LazyLock};

use serde_json::Value;

use crate::columns::PrinterColumn;

/// One served version of a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    /// The version name, e.g. `v1alpha1`.
    pub name: String,
    /// Whether the `status` subresource is enabled.
    pub status: bool,
    /// Printer columns (after Name).
    pub columns: Vec<PrinterColumn>,
    /// The structural OpenAPI v3 schema, for custom resources, compiled.
    pub schema: Option<std::sync::Arc<fleet_objects::schema::Schema>>,
}

/// A resource the cluster serves.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: String,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
    /// Plural resource name used in paths.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Short names, e.g. `cm`.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all` or `fleet`.
    pub categories: Vec<String>,
    /// Namespaced or cluster scoped.
    pub namespaced: bool,
    /// Served versions; the first is the preferred one.
    pub versions: Vec<Version>,
    /// Defined by a CustomResourceDefinition.
    pub custom: bool,
    /// A question, never stored: created to be answered (`SelfSubjectReview` and the
    /// access reviews behind `kubectl auth whoami` and `kubectl auth can-i`).
    pub review: bool,
}

impl ResourceType {
    /// The storage key: group and plural, independent of version.
    pub fn storage_key(&self) -> String {
        format!("{}/{}", self.group, self.plural)
    }

    /// A served version by name.
    pub fn version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// Whether `version` serves status as a subresource.
    pub fn has_status(&self, version: &str) -> bool {
        self.version(version).is_some_and(|v| v.status)
    }

    /// `group/version` or `version` for the core group.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }
}

/// `(group, version, kind, plural, namespaced, short names, categories, status)`.
type BuiltIn = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    &'static [&'static str],
    bool,
);

#[rustfmt::skip]
const BUILT_INS: &[BuiltIn] = &[
    ("", "v1", "Namespace", "namespaces", false, &["ns"], &[], true),
    ("", "v1", "ConfigMap", "configmaps", true, &["cm"], &[], false),
    ("", "v1", "Secret", "secrets", true, &[], &[], false),
    ("", "v1", "ServiceAccount", "serviceaccounts", true, &["sa"], &[], false),
    ("", "v1", "Service", "services", true, &["svc"], &["all"], true),
    ("", "v1", "Pod", "pods", true, &["po"], &["all"], true),
    ("", "v1", "Event", "events", true, &["ev"], &[], false),
    ("", "v1", "Endpoints", "endpoints", true, &["ep"], &[], false),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, &["pvc"], &[], true),
    ("", "v1", "PersistentVolume", "persistentvolumes", false, &["pv"], &[], true),
    ("", "v1", "Node", "nodes", false, &["no"], &[], true),
    ("", "v1", "ResourceQuota", "resourcequotas", true, &["quota"], &[], true),
    ("", "v1", "LimitRange", "limitranges", true, &["limits"], &[], false),
    ("", "v1", "ReplicationController", "replicationcontrollers", true, &["rc"], &["all"], true),
    ("", "v1", "PodTemplate", "podtemplates", true, &[], &[], false),
    ("apps", "v1", "Deployment", "deployments", true, &["deploy"], &["all"], true),
    ("apps", "v1", "StatefulSet", "statefulsets", true, &["sts"], &["all"], true),
    ("apps", "v1", "DaemonSet", "daemonsets", true, &["ds"], &["all"], true),
    ("apps", "v1", "ReplicaSet", "replicasets", true, &["rs"], &["all"], true),
    ("apps", "v1", "ControllerRevision", "controllerrevisions", true, &[], &[], false),
    ("batch", "v1", "Job", "jobs", true, &[], &["all"], true),
    ("batch", "v1", "CronJob", "cronjobs", true, &["cj"], &["all"], true),
    ("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, &["hpa"], &["all"], true),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, &["pdb"], &[], true),
    ("networking.k8s.io", "v1", "Ingress", "ingresses", true, &["ing"], &[], true),
    ("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, &["netpol"], &[], false),
    ("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, &[], &[], false),
    ("coordination.k8s.io", "v1", "Lease", "leases", true, &[], &[], false),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, &["pc"], &[], false),
    ("storage.k8s.io", "v1", "StorageClass", "storageclasses", false, &["sc"], &[], false),
    ("storage.k8s.io", "v1", "CSIDriver", "csidrivers", false, &[], &[], false),
    ("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, &[], &[], false),
    ("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false, &[], &[], false),
    ("apiregistration.k8s.io", "v1", "APIService", "apiservices", false, &[], &[], true),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", true, &[], &[], false),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, &[], &[], false),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, &[], &[], false),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, &[], &[], false),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, &["crd", "crds"], &[], true),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false, &[], &[], false),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false, &[], &[], false),
];

/// `(group, version, kind, plural)` of a review.
type Review = (&'static str, &'static str, &'static str, &'static str);

/// The reviews: cluster scoped, `create` only.
const REVIEWS: &[Review] = &[
    (
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
    ),
];

fn review(&(group, version, kind, plural): &Review) -> ResourceType {
    ResourceType {
        review: true,
        ..built_in(&(group, version, kind, plural, false, &[], &[], false))
    }
}

/// The built-in kinds and the reviews, made once and shared by every cluster's registry
/// (a hub may serve ten thousand member clusters).
static BUILT_IN_TYPES: LazyLock<Vec<Arc<ResourceType>>> = LazyLock::new(|| {
    BUILT_INS
        .iter()
        .map(built_in)
        .chain(REVIEWS.iter().map(review))
        .map(Arc::new)
        .collect()
});

/// The resources one logical cluster serves.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<Arc<ResourceType>>,
}

impl Registry {
    /// The built-in kinds plus the custom resources defined by `crds`.
    pub fn new<'a>(crds: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut types = BUILT_IN_TYPES.clone();
        for crd in crds {
            if let Some(custom) = from_crd(crd) {
                if !types
                    .iter()
                    .any(|t| t.group == custom.group && t.plural == custom.plural)
                {
                    types.push(Arc::new(custom));
                }
            }
        }
        Self { types }
    }

    /// Every served resource.
    pub fn all(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    /// The resource served at `group/version/plural`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.group == group && t.plural == plural && t.version(version).is_some())
            .cloned()
    }

    /// The resource whose storage key is `key`.
    pub fn by_storage_key(&self, key: &str) -> Option<Arc<ResourceType>> {
        self.types.iter().find(|t| t.storage_key() == key).cloned()
    }

    /// The resource for an `apiVersion` and `kind`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.types
            .iter()
            .find(|t| t.group == group && t.kind == kind && t.version(version).is_some())
            .cloned()
    }

    /// The API groups with their versions, in the order they were registered.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            let index = match groups.iter().position(|(g, _)| *g == t.group) {
                Some(index) => index,
                None => {
                    groups.push((t.group.clone(), Vec::new()));
                    groups.len() - 1
                }
            };
            for v in &t.versions {
                if !groups[index].1.contains(&v.name) {
                    groups[index].1.push(v.name.clone());
                }
            }
        }
        groups
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn built_in(entry: &BuiltIn) -> ResourceType {
    let (group, version, kind, plural, namespaced, short, categories, status) = *entry;
    ResourceType {
        group: group.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        short_names: strings(short),
        categories: strings(categories),
        namespaced,
        versions: vec![Version {
            name: version.into(),
            status,
            columns: Vec::new(),
            schema: None,
        }],
        custom: false,
        review: false,
    }
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn str_of<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// A custom resource from a CRD object, or `None` if the CRD lacks names or versions.
pub(crate) fn from_crd(crd: &Value) -> Option<ResourceType> {
    // Served once established, as kube-apiserver serves it.
    if !is_established(crd) {
        return None;
    }
    let spec = crd.get("spec")?;
    let names = spec.get("names")?;
    let kind = str_of(names, "/kind")?.to_string();
    let plural = str_of(names, "/plural")?.to_string();
    let singular = str_of(names, "/singular")
        .map(String::from)
        .unwrap_or_else(|| kind.to_lowercase());
    let versions: Vec<Version> = spec
        .get("versions")?
        .as_array()?
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(true))
        .filter_map(|v| {
            Some(Version {
                name: str_of(v, "/name")?.to_string(),
                status: v.pointer("/subresources/status").is_some(),
                columns: v
                    .get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .map(|cols| cols.iter().filter_map(printer_column).collect())
                    .unwrap_or_default(),
                schema: (v.pointer("/schema/openAPIV3Schema")).map(|schema| {
                    std::sync::Arc::new(fleet_objects::schema::Schema::compile(schema))
                }),
            })
        })
        .collect();
    if versions.is_empty() {
        return None;
    }
    Some(ResourceType {
        group: str_of(spec, "/group")?.to_string(),
        kind,
        plural,
        singular,
        short_names: string_list(names.get("shortNames")),
        categories: string_list(names.get("categories")),
        namespaced: str_of(spec, "/scope") != Some("Cluster"),
        versions,
        custom: true,
        review: false,
    })
}

fn printer_column(column: &Value) -> Option<PrinterColumn> {
    Some(PrinterColumn {
        name: str_of(column, "/name")?.to_string(),
        kind: str_of(column, "/type").unwrap_or("string").to_string(),
        json_path: str_of(column, "/jsonPath")?.to_string(),
        priority: column.get("priority").and_then(Value::as_i64).unwrap_or(0),
        description: str_of(column, "/description")
            .unwrap_or_default()
            .to_string(),
        compute: None,
    })
}

/// Whether a CRD is Established: its kind is served.
pub(crate) fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_adds_a_resource_with_its_columns() {
        let crd = json!({"spec": {"group": "example.com", "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}]},
            "status": {"conditions": [{"type": "Established", "status": "True"}]}});
        let registry = Registry::new([&crd]);
        let mut pending = crd.clone();
        pending["status"] = json!({});
        assert!(
            Registry::new([&pending])
                .find("example.com", "v1", "widgets")
                .is_none(),
            "not served before it is Established"
        );
        let widget = registry
            .find("example.com", "v1", "widgets")
            .expect("registered");
        assert!(!widget.namespaced);
        assert_eq!(widget.short_names, ["wd"]);
        assert_eq!(widget.versions[0].columns[0].json_path, ".spec.size");
        assert!(registry.find("example.com", "v2", "widgets").is_none());
        assert!(registry.by_kind("apps/v1", "Deployment").is_some());
    }
}
