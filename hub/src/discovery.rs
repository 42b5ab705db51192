//! Discovery documents: `/version`, `/api`, `/apis`, per-group resource lists and the
//! aggregated discovery (`apidiscovery.k8s.io/v2`) that kubectl asks for first.

use serde_json::{json, Value};

use crate::registry::{Registry, ResourceType};

/// The Kubernetes version the hub reports.
pub(crate) const KUBE_MINOR: &str = "32";

/// A version of aggregated discovery (`apidiscovery.k8s.io`): v2, or v2beta1, which clients
/// built on Kubernetes 1.26 to 1.29 libraries (kubectl, Helm 3.11 to 3.14) ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Aggregated {
    /// `apidiscovery.k8s.io/v2`.
    V2,
    /// `apidiscovery.k8s.io/v2beta1`: the same document under another version.
    V2beta1,
}

impl Aggregated {
    fn version(self) -> &'static str {
        match self {
            Aggregated::V2 => "v2",
            Aggregated::V2beta1 => "v2beta1",
        }
    }

    /// The `Content-Type` of an answer in this version.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Aggregated::V2 => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            }
            Aggregated::V2beta1 => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
        }
    }
}

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The aggregated discovery an `Accept` header asks for: its first media type that is
/// either aggregated discovery in a version the hub serves (then that version) or anything
/// else the hub can answer (then `None`, plain discovery).
pub(crate) fn wants_aggregated(accept: &str) -> Option<Aggregated> {
    for media in accept.split(',') {
        let mut parts = media.split(';').map(str::trim);
        let essence = parts.next().unwrap_or_default();
        let params: Vec<&str> = parts.collect();
        if !params.contains(&"as=APIGroupDiscoveryList") {
            if matches!(essence, "application/json" | "*/*" | "application/*") {
                return None;
            }
            continue;
        }
        if !params.contains(&"g=apidiscovery.k8s.io") {
            continue;
        }
        if params.contains(&"v=v2") {
            return Some(Aggregated::V2);
        }
        if params.contains(&"v=v2beta1") {
            return Some(Aggregated::V2beta1);
        }
    }
    None
}

/// `/version`.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "gitVersion": format!("v1.{KUBE_MINOR}.0"),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "n/a",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// `/api`.
pub(crate) fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": list, "preferredVersion": list.first()})
}

/// `/apis`.
pub(crate) fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|(group, versions)| group_json(group, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`, or `None` when the group is not served.
pub(crate) fn group(registry: &Registry, name: &str) -> Option<Value> {
    let (group, versions) = registry.groups().into_iter().find(|(g, _)| g == name)?;
    let mut document = group_json(&group, &versions);
    document["kind"] = json!("APIGroup");
    document["apiVersion"] = json!("v1");
    Some(document)
}

fn served<'a>(
    registry: &'a Registry,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'a ResourceType> {
    registry
        .all()
        .iter()
        .map(|t| &**t)
        .filter(move |t| t.group == group && t.version(version).is_some())
}

/// The verbs a resource takes: reviews are only created.
fn verbs(t: &ResourceType) -> &'static [&'static str] {
    if t.review {
        &["create"]
    } else {
        &VERBS
    }
}

/// `/api/v1` or `/apis/<group>/<version>`, or `None` when not served.
pub(crate) fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for t in served(registry, group, version) {
        resources.push(json!({
            "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
            "kind": t.kind, "verbs": verbs(t), "shortNames": t.short_names,
            "categories": t.categories,
        }));
        for sub in crate::subresources::of(t, version) {
            let mut entry = json!({
                "name": format!("{}/{}", t.plural, sub.name), "singularName": "",
                "namespaced": t.namespaced, "kind": t.kind, "verbs": sub.verbs,
            });
            if let Some((group, version, kind)) = sub.kind {
                entry["group"] = json!(group);
                entry["version"] = json!(version);
                entry["kind"] = json!(kind);
            }
            resources.push(entry);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": group_version, "resources": resources}))
}

fn aggregated_resource(t: &ResourceType, version: &str) -> Value {
    let kind = json!({"group": t.group, "version": version, "kind": t.kind});
    let scope = if t.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    };
    let mut resource = json!({
        "resource": t.plural, "responseKind": kind, "scope": scope,
        "singularResource": t.singular, "verbs": verbs(t),
        "shortNames": t.short_names, "categories": t.categories,
    });
    let subresources: Vec<Value> = crate::subresources::of(t, version)
        .into_iter()
        .map(|sub| {
            let response_kind = match sub.kind {
                Some((group, version, kind)) => {
                    json!({"group": group, "version": version, "kind": kind})
                }
                None => kind.clone(),
            };
            json!({"subresource": sub.name, "responseKind": response_kind, "verbs": sub.verbs})
        })
        .collect();
    if !subresources.is_empty() {
        resource["subresources"] = json!(subresources);
    }
    resource
}

fn aggregated_group(registry: &Registry, group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = served(registry, group, v)
                .map(|t| aggregated_resource(t, v))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({"metadata": {"name": group}, "versions": versions})
}

fn aggregated_list(version: Aggregated, items: Vec<Value>) -> Value {
    json!({"kind": "APIGroupDiscoveryList",
           "apiVersion": format!("apidiscovery.k8s.io/{}", version.version()),
           "metadata": {}, "items": items})
}

/// Aggregated discovery of the core group (`/api`).
pub(crate) fn aggregated_core(registry: &Registry, version: Aggregated) -> Value {
    aggregated_list(
        version,
        vec![aggregated_group(registry, "", &["v1".to_string()])],
    )
}

/// Aggregated discovery of every named group (`/apis`).
pub(crate) fn aggregated_groups(registry: &Registry, version: Aggregated) -> Value {
    let items = registry
        .groups()
        .iter()
        .map(|(group, versions)| aggregated_group(registry, group, versions))
        .collect();
    aggregated_list(version, items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_media_type_the_hub_serves_wins() {
        let v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        let plain = "application/json";
        assert_eq!(wants_aggregated(v2), Some(Aggregated::V2));
        assert_eq!(wants_aggregated(beta), Some(Aggregated::V2beta1));
        assert_eq!(
            wants_aggregated(&format!("{beta},{plain}")),
            Some(Aggregated::V2beta1)
        );
        assert_eq!(
            wants_aggregated(&format!("{v2},{beta},{plain}")),
            Some(Aggregated::V2)
        );
        assert_eq!(wants_aggregated(&format!("{plain},{v2}")), None);
        let v3 = "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList";
        assert_eq!(
            wants_aggregated(&format!("{v3},{beta}")),
            Some(Aggregated::V2beta1)
        );
        assert_eq!(wants_aggregated(""), None);
    }
}
