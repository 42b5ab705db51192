//! The merge keys of strategic merge patches, held to kube-apiserver 1.37: every list
//! field its OpenAPI document (`/openapi/v2`) marks `x-kubernetes-patch-merge-key` is merged
//! by that key (`fleet_objects::smp::merge_key`, which the hub's patches and the Kustomize
//! engine share), and every field it names with a key of its own is one of them.

use std::collections::BTreeSet;

use fleet_testkit::RealControlPlane;
use serde_json::{json, Value};

/// Every (list field, merge key) the document's definitions declare.
fn declared(document: &Value) -> BTreeSet<(String, String)> {
    let mut pairs = BTreeSet::new();
    for definition in document["definitions"].as_object().into_iter().flatten() {
        for (field, schema) in definition.1["properties"].as_object().into_iter().flatten() {
            if let Some(key) = schema["x-kubernetes-patch-merge-key"].as_str() {
                pairs.insert((field.clone(), key.to_string()));
            }
        }
    }
    pairs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_merge_key_kube_apiserver_declares_is_ours() {
    let plane = RealControlPlane::start(&["real"]).await;
    let client = plane.cluster("real").client().await;
    let request = http::Request::get("/openapi/v2")
        .header("Accept", "application/json")
        .body(Vec::new())
        .expect("request builds");
    let text = client
        .request_text(request)
        .await
        .expect("the OpenAPI document");
    let document: Value = serde_json::from_str(&text).expect("JSON");
    let pairs = declared(&document);
    assert!(pairs.len() >= 15, "{} merge keys declared", pairs.len());
    let missing: Vec<String> = pairs
        .iter()
        .filter(|(field, key)| {
            let items = [json!({ key.as_str(): "x" })];
            fleet_objects::smp::merge_key(field, &items) != Some(key.as_str())
        })
        .map(|(field, key)| format!("{field} by {key}"))
        .collect();
    assert!(
        missing.is_empty(),
        "merged otherwise than kube-apiserver says: {missing:?}"
    );
}
