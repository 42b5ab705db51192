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
    let requests = (hub.request_counts().into_iter())
        .filter(|(kind, _)| kind.cluster == cluster)
        .map(|(kind, n)| {
            format!(
                "apiserver_request_total{{verb=\"{}\",resource=\"{}\"}} {n}",
                metric_verb(&kind.verb),
                kind.resource
            )
        });
    let objects = (hub.store.object_counts(cluster).into_iter()).map(|(resource, n)| {
        format!(
            "apiserver_storage_objects{{resource=\"{}\"}} {n}",
            qualified(&resource)
        )
    });
    let mut text = String::new();
    family(
        &mut text,
        ("apiserver_request_total", "counter"),
        "Resource requests served, by verb and resource.",
        requests,
    );
    family(
        &mut text,
        ("apiserver_storage_objects", "gauge"),
        "Objects stored, by resource.",
        objects,
    );
    text
}

/// Appends a metric family to `text`: the help and type lines of the metric (`name` and
/// `kind`: `counter`, `gauge`), then `samples`, sorted, a line each.
fn family(
    text: &mut String,
    (name, kind): (&str, &str),
    help: &str,
    samples: impl Iterator<Item = String>,
) {
    let mut samples: Vec<String> = samples.collect();
    samples.sort();
    text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
    for sample in samples {
        text.push_str(&sample);
        text.push('\n');
    }
}

/// How kube-apiserver's metrics name a verb: the HTTP method, or the verb for those that
/// share one (`LIST`, `WATCH`, `DELETECOLLECTION`).
pub fn metric_verb(verb: &str) -> String {
    match verb {
        "create" => "POST".into(),
        "update" => "PUT".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// The hub's verb (as [`crate::requests::RequestKind`] counts it) that a metric's verb
/// names: the inverse of [`metric_verb`].
pub fn verb_of_metric(metric_verb: &str) -> String {
    match metric_verb {
        "POST" => "create".into(),
        "PUT" => "update".into(),
        other => other.to_ascii_lowercase(),
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
        assert_eq!(metric_verb("create"), "POST");
        assert_eq!(metric_verb("update"), "PUT");
        assert_eq!(metric_verb("list"), "LIST");
        assert_eq!(metric_verb("patch"), "PATCH");
        for verb in [
            "create", "update", "list", "watch", "patch", "delete", "get",
        ] {
            assert_eq!(verb_of_metric(&metric_verb(verb)), verb);
        }
        assert_eq!(
            qualified("fleet.cattle.io/bundles"),
            "bundles.fleet.cattle.io"
        );
        assert_eq!(qualified("/secrets"), "secrets");
    }
}
