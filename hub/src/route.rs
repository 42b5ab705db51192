//! Request paths: the `/clusters/<name>` prefix, discovery endpoints and resource paths.

/// The logical cluster every hub has: the management cluster, where Fleet's objects live.
pub const DEFAULT_CLUSTER: &str = "local";

/// A resource path: `/api/v1/...` or `/apis/<group>/<version>/...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group; empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub plural: String,
    /// Namespace from the path, if any.
    pub namespace: Option<String>,
    /// Object name, if any.
    pub name: Option<String>,
    /// Subresource, e.g. `status`.
    pub subresource: Option<String>,
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/readyz`, `/livez`.
    Health,
    /// `/metrics`.
    Metrics,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`.
    Resources(String, String),
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3Index,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
    OpenApiV3(String, String),
    /// A resource path.
    Resource(ResourcePath),
}

/// Splits a request path into the logical cluster its `/clusters/<name>` prefix names
/// (`None` without one: the caller's own cluster) and its route.
pub fn parse(path: &str) -> Option<(Option<String>, Route)> {
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let mut cluster = None;
    if segments.first() == Some(&"clusters") && segments.len() >= 2 {
        cluster = Some(segments[1].to_string());
        segments.drain(..2);
    }
    let route = match segments.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["metrics"] => Route::Metrics,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["api", version] => Route::Resources(String::new(), version.to_string()),
        ["apis", group, version] => Route::Resources(group.to_string(), version.to_string()),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", "api", version] => Route::OpenApiV3(String::new(), version.to_string()),
        ["openapi", "v3", "apis", group, version] => {
            Route::OpenApiV3(group.to_string(), version.to_string())
        }
        ["api", version, rest @ ..] => Route::Resource(resource(String::new(), version, rest)?),
        ["apis", group, version, rest @ ..] => {
            Route::Resource(resource(group.to_string(), version, rest)?)
        }
        _ => return None,
    };
    Some((cluster, route))
}

fn resource(group: String, version: &str, rest: &[&str]) -> Option<ResourcePath> {
    let owned = |s: &&str| s.to_string();
    let (namespace, rest) = match rest {
        ["namespaces", ns, tail @ ..] if !tail.is_empty() && !is_namespace_subresource(tail) => {
            (Some(ns.to_string()), tail)
        }
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (plural, None, None),
        [plural, name] => (plural, Some(owned(name)), None),
        [plural, name, sub] => (plural, Some(owned(name)), Some(owned(sub))),
        _ => return None,
    };
    Some(ResourcePath {
        group,
        version: version.to_string(),
        plural: plural.to_string(),
        namespace,
        name,
        subresource,
    })
}

/// `/api/v1/namespaces/<name>/status` and `/finalize` are subresources of the namespace.
fn is_namespace_subresource(tail: &[&str]) -> bool {
    matches!(tail, ["status" | "finalize"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_cluster_and_route() {
        let (cluster, route) =
            parse("/clusters/dev/apis/apps/v1/namespaces/web/deployments/api/status")
                .expect("parses");
        assert_eq!(cluster.as_deref(), Some("dev"));
        let Route::Resource(path) = route else {
            panic!("a resource path")
        };
        assert_eq!(path.group, "apps");
        assert_eq!(path.namespace.as_deref(), Some("web"));
        assert_eq!(path.name.as_deref(), Some("api"));
        assert_eq!(path.subresource.as_deref(), Some("status"));

        let (cluster, route) = parse("/api/v1/namespaces/web").expect("parses");
        assert_eq!(cluster, None);
        let Route::Resource(path) = route else {
            panic!("a resource path")
        };
        assert_eq!(
            (path.plural.as_str(), path.name.as_deref()),
            ("namespaces", Some("web"))
        );

        let (_, route) = parse("/api/v1/namespaces/web/status").expect("parses");
        let Route::Resource(path) = route else {
            panic!("a resource path")
        };
        assert_eq!(path.subresource.as_deref(), Some("status"));
        assert_eq!(
            parse("/apis/fleet.cattle.io"),
            Some((None, Route::Group("fleet.cattle.io".into())))
        );
        assert!(parse("/nothing/here").is_none());
    }
}
