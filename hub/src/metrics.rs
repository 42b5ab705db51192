//! `/metrics`: what the hub has served and holds, in Prometheus' text format and under
//! kube-apiserver's metric names, for a logical cluster's admin: the requests served
//! (`apiserver_request_total`, by verb and resource) and the objects stored
//! (`apiserver_storage_objects`, by resource). Another logical cluster's figures are not
//! shown.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::Identity;
use crate::hub::Hub;
use crate::status::{ApiError, ApiResult};

/// The content type of Prometheus' text format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Answers `GET /metrics` for `identity` in `cluster`: its admin only, as kube-apiserver
/// grants the path to cluster admins and monitoring.
pub fn answer(hub: &Hub, identity: &Identity, cluster: &str) -> ApiResult<Response> {
    if !matches!(identity, Identity::Admin { .. }) {
        return Err(ApiError::forbidden_path(
            &identity.user(),
            "get",
            "/metrics",
        ));
    }
    let body = render(hub, cluster);
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response())
}

/// The metrics of `cluster`, one sample a line, sorted.
fn render(hub: &Hub, cluster: &str) -> String {
    let mut requests: Vec<String> = (hub.request_counts().into_iter())
        .filter(|(kind, _)| kind.cluster == cluster)
        .map(|(kind, n)| {
            format!(
                "apiserver_request_total{{verb=\"{}\",resource=\"{}\"}} {n}",
                http_verb(&kind.verb),
                kind.resource
            )
        })
        .collect();
    requests.sort();
    let mut objects: Vec<String> = (hub.store.object_counts(cluster).into_iter())
        .map(|(resource, n)| {
            format!(
                "apiserver_storage_objects{{resource=\"{}\"}} {n}",
                qualified(&resource)
            )
        })
        .collect();
    objects.sort();
    let mut text = String::new();
    text.push_str(
        "# HELP apiserver_request_total Resource requests served, by verb and resource.\n",
    );
    text.push_str("# TYPE apiserver_request_total counter\n");
    for line in requests {
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str("# HELP apiserver_storage_objects Objects stored, by resource.\n");
    text.push_str("# TYPE apiserver_storage_objects gauge\n");
    for line in objects {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// How kube-apiserver's metrics name a verb: the HTTP method, or the verb for those that
/// share one (`LIST`, `WATCH`, `DELETECOLLECTION`).
fn http_verb(verb: &str) -> String {
    match verb {
        "create" => "POST".into(),
        "update" => "PUT".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// A store's resource (`group/plural`, the group empty for the core group) as
/// kube-apiserver's storage metrics name it: `plural.group`, or the plural alone.
fn qualified(resource: &str) -> String {
    match resource.split_once('/') {
        Some(("", plural)) => plural.to_string(),
        Some((group, plural)) => format!("{plural}.{group}"),
        None => resource.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_and_resources_are_named_as_kube_apiserver_names_them() {
        assert_eq!(http_verb("create"), "POST");
        assert_eq!(http_verb("update"), "PUT");
        assert_eq!(http_verb("list"), "LIST");
        assert_eq!(http_verb("patch"), "PATCH");
        assert_eq!(
            qualified("fleet.cattle.io/bundles"),
            "bundles.fleet.cattle.io"
        );
        assert_eq!(qualified("/secrets"), "secrets");
    }
}
