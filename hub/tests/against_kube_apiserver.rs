//! The hub held to kube-apiserver: the same requests go to a hub and to a real
//! kube-apiserver 1.37 (built by `.ci/real-k8s.sh`), one after the other, and their answers
//! are compared with what differs by nature masked (uids, resourceVersions, times, tokens,
//! generated names). The requests are those the agent and the controllers depend on
//! (quantities, empty fields, token Secrets, CRDs, sizes) and those real clients make
//! (kubectl's tables and discovery, Helm's and the Python client's calls).
//!
//! Every difference left is listed in [`KNOWN`] with its reason (and in docs/hub.md); one
//! listed that no longer differs fails the test too, so that the list stays true.

mod common;

use std::time::Duration;

use fleet_testkit::{RealControlPlane, TestHub};
use serde_json::{json, Value};

/// One request: what it is called in a report, and what is sent.
struct Step {
    name: &'static str,
    method: &'static str,
    path: String,
    accept: &'static str,
    content_type: &'static str,
    body: String,
    /// Waits this long first (for something the server does in the background).
    after: Duration,
    /// Waits first until kube-apiserver's object at this path has the field at this JSON
    /// pointer (for what kube-controller-manager fills in, in its own time).
    real_has: Option<(String, &'static str)>,
    /// Whether the bodies are compared, not only the status codes.
    bodies: bool,
}

fn step(name: &'static str, method: &'static str, path: &str, body: Value) -> Step {
    Step {
        name,
        method,
        path: path.to_string(),
        accept: "application/json",
        content_type: "application/json",
        body: if body.is_null() {
            String::new()
        } else {
            body.to_string()
        },
        after: Duration::ZERO,
        real_has: None,
        bodies: true,
    }
}

/// `step` with only the status codes compared: where kube-apiserver's body depends on
/// timing (a kind asked for while its CRD is being set up is answered by the mux, `404
/// page not found`, or by the CRD handler, a Status, depending on how far it has come).
fn code_only(step: Step) -> Step {
    Step {
        bodies: false,
        ..step
    }
}

fn get(name: &'static str, path: &str) -> Step {
    step(name, "GET", path, Value::Null)
}

fn table(name: &'static str, path: &str) -> Step {
    Step {
        accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
        ..get(name, path)
    }
}

fn apply(name: &'static str, path: &str, body: Value) -> Step {
    Step {
        content_type: "application/apply-patch+yaml",
        ..step(name, "PATCH", path, body)
    }
}

fn later(step: Step, wait: Duration) -> Step {
    Step {
        after: wait,
        ..step
    }
}

/// `step` sent once kube-apiserver's object at `path` has the field at `pointer`.
fn once_real_has(step: Step, path: &str, pointer: &'static str) -> Step {
    Step {
        real_has: Some((path.to_string(), pointer)),
        ..step
    }
}

const NS: &str = "/api/v1/namespaces/diff";

/// The requests, in order, against a fresh cluster.
fn steps() -> Vec<Step> {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {}, "labels": {}},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}, "annotations": {}},
                "spec": {"nodeSelector": {}, "hostNetwork": false, "containers": [{
                    "name": "web", "image": "nginx:1.27", "args": [], "env": [],
                    "resources": {"requests": {"cpu": 0.5, "memory": "1024Mi"},
                                  "limits": {"cpu": 1, "memory": "2Gi"}}}]}}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"},
                        "interval": {"type": "string", "x-kubernetes-validations": [
                            {"rule": fleet_api::GO_DURATION_RULE, "message": fleet_api::GO_DURATION_MESSAGE}]}}}}}}}]}});
    let widget = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": name, "namespace": "diff"}, "spec": {"size": 3}})
    };
    let widget_every = |name: &str, interval: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": name, "namespace": "diff"}, "spec": {"interval": interval}})
    };
    let big = "x".repeat(700_000);
    vec![
        step(
            "namespace",
            "POST",
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "diff"}}),
        ),
        later(
            get(
                "kube-root-ca.crt in a new namespace",
                &format!("{NS}/configmaps/kube-root-ca.crt"),
            ),
            Duration::from_secs(2),
        ),
        step(
            "deployment with quantities and empty fields",
            "POST",
            "/apis/apps/v1/namespaces/diff/deployments",
            deployment.clone(),
        ),
        get(
            "deployment read back",
            "/apis/apps/v1/namespaces/diff/deployments/web",
        ),
        apply(
            "deployment applied",
            "/apis/apps/v1/namespaces/diff/deployments/web?fieldManager=diff&force=true",
            deployment,
        ),
        step(
            "pod",
            "POST",
            &format!("{NS}/pods"),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}}),
        ),
        step(
            "service",
            "POST",
            &format!("{NS}/services"),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
        ),
        step(
            "service named with a digit first",
            "POST",
            &format!("{NS}/services"),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1abc"},
            "spec": {"ports": [{"port": 80}]}}),
        ),
        step(
            "deployment with negative replicas",
            "POST",
            "/apis/apps/v1/namespaces/diff/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "negative"},
                "spec": {"replicas": -5, "selector": {"matchLabels": {"app": "n"}},
                    "template": {"metadata": {"labels": {"app": "n"}},
                        "spec": {"containers": [{"name": "n", "image": "nginx:1.27"}]}}}}),
        ),
        step(
            "secret whose data is not base64",
            "POST",
            &format!("{NS}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad-data"},
            "data": {"ok": "aGVsbG8=", "bad": "not base64!"}}),
        ),
        step(
            "secret whose data lacks its padding",
            "POST",
            &format!("{NS}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad-padding"},
            "data": {"short": "aGVsbG8"}}),
        ),
        step(
            "secret whose data is wrapped",
            "POST",
            &format!("{NS}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wrapped"},
            "data": {"wrapped": "aGVs\nbG8="}}),
        ),
        get("wrapped secret read back", &format!("{NS}/secrets/wrapped")),
        step(
            "service account",
            "POST",
            &format!("{NS}/serviceaccounts"),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        ),
        step(
            "token secret",
            "POST",
            &format!("{NS}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "robot-token", "annotations": {"kubernetes.io/service-account.name": "robot"}}}),
        ),
        later(
            get("token secret filled", &format!("{NS}/secrets/robot-token")),
            Duration::from_secs(2),
        ),
        step(
            "token secret without an account",
            "POST",
            &format!("{NS}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret",
            "type": "kubernetes.io/service-account-token", "metadata": {"name": "nobody-token"}}),
        ),
        step(
            "configmap without kind",
            "POST",
            &format!("{NS}/configmaps"),
            json!({"metadata": {"name": "kindless"}, "data": {"a": "b"}}),
        ),
        step(
            "configmap over 1 MiB",
            "POST",
            &format!("{NS}/configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "huge"}, "data": {"a": "x".repeat(1_100_000)}}),
        ),
        step(
            "crd",
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        ),
        code_only(step(
            "widget at once",
            "POST",
            "/apis/example.com/v1/namespaces/diff/widgets",
            widget("early"),
        )),
        later(
            get(
                "crd established",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            ),
            Duration::from_secs(3),
        ),
        step(
            "widget",
            "POST",
            "/apis/example.com/v1/namespaces/diff/widgets",
            widget("small"),
        ),
        step(
            "widget with a duration in days",
            "POST",
            "/apis/example.com/v1/namespaces/diff/widgets",
            widget_every("days", "1d"),
        ),
        step(
            "widget with a duration past Go's",
            "POST",
            "/apis/example.com/v1/namespaces/diff/widgets",
            widget_every("long", "5000000h"),
        ),
        step(
            "widget with a Go duration",
            "POST",
            "/apis/example.com/v1/namespaces/diff/widgets",
            widget_every("hours", "1h30m"),
        ),
        step(
            "widget without kind",
            "POST",
            "/apis/example.com/v1/namespaces/diff/widgets",
            json!({"apiVersion": "example.com/v1", "metadata": {"name": "kindless", "namespace": "diff"}}),
        ),
        step(
            "widget of 2.1 MB",
            "POST",
            "/apis/example.com/v1/namespaces/diff/widgets",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "big", "namespace": "diff",
                   "annotations": {"a": big, "b": big, "c": big}}}),
        ),
        get(
            "watch=True is a watch",
            &format!("{NS}/configmaps?watch=True&timeoutSeconds=1&resourceVersion=0"),
        ),
        get("a missing object", &format!("{NS}/configmaps/missing")),
        step(
            "a conflict",
            "POST",
            &format!("{NS}/serviceaccounts"),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        ),
        step(
            "an invalid object",
            "POST",
            &format!("{NS}/configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_Valid"}}),
        ),
        table("table of jobs", "/apis/batch/v1/namespaces/diff/jobs"),
        table(
            "table of service accounts",
            &format!("{NS}/serviceaccounts"),
        ),
        table(
            "table of roles",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/diff/roles",
        ),
        get("api groups", "/apis"),
        step(
            "delete service account",
            "DELETE",
            &format!("{NS}/serviceaccounts/robot"),
            Value::Null,
        ),
        step(
            "resource quota",
            "POST",
            &format!("{NS}/resourcequotas"),
            json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q"}, "spec": {"hard": {"pods": "1000", "requests.memory": "1024Mi"}}}),
        ),
        once_real_has(
            step(
                "delete resource quota",
                "DELETE",
                &format!("{NS}/resourcequotas/q"),
                Value::Null,
            ),
            &format!("{NS}/resourcequotas/q"),
            "/status/hard",
        ),
        step(
            "delete configmap",
            "DELETE",
            &format!("{NS}/configmaps/kindless"),
            Value::Null,
        ),
    ]
}

/// Differences kept, each with its reason: the step's name, and why the hub answers
/// otherwise.
const KNOWN: &[(&str, &str)] = &[
    (
        "deployment with quantities and empty fields",
        "a false or zero scalar that Go omits (`hostNetwork: false`) is kept: the hub's schemas \
         cannot tell a Go value field from a pointer",
    ),
    (
        "deployment read back",
        "no deployment controller on the hub: no revision annotation, no status conditions \
         (fleet up's workload simulator fills member clusters' statuses)",
    ),
    (
        "deployment applied",
        "no deployment controller on the hub (as above), and `hostNetwork: false` kept",
    ),
    (
        "crd",
        "a new CRD's status has no `conditions: null`: the hub stores no nulls in built-in kinds",
    ),
    (
        "crd established",
        "the hub's establishing write is recorded as an update of the CRD, not of its status \
         subresource by kube-apiserver",
    ),
    (
        "token secret filled",
        "the token is filled in by `fleet-hub`, not `kube-controller-manager`",
    ),
    (
        "kube-root-ca.crt in a new namespace",
        "published by `fleet-hub`, not `kube-controller-manager`",
    ),
    (
        "watch=True is a watch",
        "kube-root-ca.crt is published by `fleet-hub` (as above)",
    ),
    (
        "table of jobs",
        "Job, Role, ServiceAccount and most other kinds have the Name and Age columns only",
    ),
    ("table of service accounts", "as above"),
    ("table of roles", "as above"),
    (
        "api groups",
        "events.k8s.io, certificates.k8s.io, flowcontrol.apiserver.k8s.io, resource.k8s.io and \
         autoscaling/v1 are not served (the hub converts no built-in kind between versions)",
    ),
    (
        "delete resource quota",
        "no quota controller on the hub: the quota's status stays empty",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_answers_as_kube_apiserver_does() {
    let plane = RealControlPlane::start(&["real"]).await;
    let real = plane.cluster("real").client().await;
    let hub = TestHub::start(&["local"]).await;
    let ours = hub.client("local").await;
    let mut differences = Vec::new();
    for step in steps() {
        tokio::time::sleep(step.after).await;
        if let Some((path, pointer)) = &step.real_has {
            until_real_has(&real, path, pointer).await;
        }
        let (real_code, real_body) = send(&real, &step).await;
        let (our_code, our_body) = send(&ours, &step).await;
        let (real_body, our_body) = (normalised(real_body), normalised(our_body));
        if real_code != our_code || (step.bodies && real_body != our_body) {
            let mut paths = Vec::new();
            diff_paths(&real_body, &our_body, "", &mut paths);
            differences.push((
                step.name,
                format!(
                    "kube-apiserver {real_code}, hub {our_code}; differing at:\n  {}",
                    paths.join("\n  ")
                ),
            ));
        }
    }
    let unexplained: Vec<String> = differences
        .iter()
        .filter(|(name, _)| !KNOWN.iter().any(|(known, _)| known == name))
        .map(|(name, detail)| format!("== {name}\n{detail}"))
        .collect();
    let gone: Vec<&str> = KNOWN
        .iter()
        .filter(|(known, _)| !differences.iter().any(|(name, _)| name == known))
        .map(|(known, _)| *known)
        .collect();
    assert!(
        unexplained.is_empty() && gone.is_empty(),
        "{} differences not listed:\n{}\nlisted but gone: {gone:?}",
        unexplained.len(),
        unexplained.join("\n")
    );
}

/// Waits (at most 30 s) until the object at `path` has the field at `pointer`.
async fn until_real_has(client: &kube::Client, path: &str, pointer: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = send(client, &get("poll", path)).await;
        if body.pointer(pointer).is_some() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} has no {pointer} after 30 s: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends `step`; returns the status code and the body (JSON when it is).
async fn send(client: &kube::Client, step: &Step) -> (u16, Value) {
    let request = http::Request::builder()
        .method(step.method)
        .uri(&step.path)
        .header("Accept", step.accept)
        .header("Content-Type", step.content_type)
        .body(step.body.clone().into_bytes())
        .expect("request builds");
    let response = client.send(request.map(kube::client::Body::from)).await;
    let response = match response {
        Ok(response) => response,
        Err(error) => return (0, Value::String(error.to_string())),
    };
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let body = serde_json::from_str(&text).unwrap_or_else(|_| {
        // A watch answers one event per line.
        let events: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if events.is_empty() {
            Value::String(text.into_owned())
        } else {
            Value::Array(events)
        }
    });
    (code, body)
}

/// `value` with what differs between any two servers masked: uids, resourceVersions,
/// times, tokens and certificates, generated suffixes, managedFields' times.
fn normalised(mut value: Value) -> Value {
    mask(&mut value);
    value
}

fn mask(value: &mut Value) {
    match value {
        Value::Object(map) => {
            // Who wrote, and how; the fields each owns differ in detail (see KNOWN).
            if let Some(Value::Array(entries)) = map.get_mut("managedFields") {
                for entry in entries.iter_mut() {
                    let keep = ["manager", "operation", "subresource"];
                    if let Some(fields) = entry.as_object_mut() {
                        fields.retain(|key, _| keep.contains(&key.as_str()));
                    }
                }
            }
            // A table's column descriptions are documentation, shortened in the hub.
            if let Some(Value::Array(columns)) = map.get_mut("columnDefinitions") {
                for column in columns.iter_mut().filter_map(Value::as_object_mut) {
                    column.remove("description");
                }
            }
            for key in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "selfLink",
                "continue",
                "remainingItemCount",
            ] {
                if let Some(v) = map.get_mut(key) {
                    *v = json!("<masked>");
                }
            }
            for (key, v) in map.iter_mut() {
                match key.as_str() {
                    "token" | "ca.crt" | "namespace" if v.is_string() && looks_encoded(v) => {
                        *v = json!("<secret>");
                    }
                    "time" | "lastTransitionTime" | "deletionTimestamp" | "startTime" => {
                        *v = json!("<time>");
                    }
                    "kubernetes.io/service-account.uid" => *v = json!("<masked>"),
                    // Allocated at random by each server.
                    "clusterIP" => *v = json!("<ip>"),
                    "clusterIPs" => *v = json!(["<ip>"]),
                    _ => mask(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        Value::String(text) => {
            if text.len() >= 20 && jiff_like_time(text) {
                *text = "<time>".into();
            } else if text.starts_with("kube-api-access-") {
                // A generated volume name.
                *text = "kube-api-access-<suffix>".into();
            }
        }
        _ => {}
    }
}

fn looks_encoded(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.len() > 8)
}

/// Whether `text` starts like an RFC 3339 time (`2026-12-07T04:00:00`).
fn jiff_like_time(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 19
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && bytes[..4].iter().all(u8::is_ascii_digit)
}

/// Where `real` and `ours` differ: each path with both values, shortened.
fn diff_paths(real: &Value, ours: &Value, path: &str, out: &mut Vec<String>) {
    match (real, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let child = format!("{path}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff_paths(x, y, &child, out),
                    (x, y) => out.push(format!(
                        "{child}: kube-apiserver {} | hub {}",
                        x.map_or("-".into(), short),
                        y.map_or("-".into(), short)
                    )),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff_paths(x, y, &format!("{path}/{i}"), out);
            }
        }
        (x, y) if x != y => out.push(format!(
            "{path}: kube-apiserver {} | hub {}",
            short(x),
            short(y)
        )),
        _ => {}
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}
