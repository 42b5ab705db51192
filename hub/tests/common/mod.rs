//! What the hub's tests share beside `fleet-testkit` (its hubs and kubectl): the
//! workspace's root, a table reader, a raw request sender and the options of a hub on
//! plain HTTP.
#![allow(dead_code)] // Each test binary uses its own part of these helpers.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The workspace's root directory.
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Options of a hub on plain HTTP at a free loopback port, with its data in `data`, the
/// logical `clusters`, of which `memory_only` are kept in memory only.
pub(crate) fn plain_http_options(
    data: &Path,
    clusters: &[&str],
    memory_only: &[&str],
) -> fleet_hub::Options {
    let names = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
    fleet_hub::Options {
        data: data.to_path_buf(),
        listen: ([127, 0, 0, 1], 0).into(),
        insecure_http: true,
        clusters: names(clusters),
        memory_only: names(memory_only),
    }
}

/// Lines of a table without the header, each split on whitespace.
pub(crate) fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// Sends a raw request; returns the status code, reason and message (200 and empty
/// strings on success).
pub(crate) async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, String, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", content_type)
        .body(body)
        .expect("request builds");
    match client.request::<Value>(request).await {
        Ok(_) => (200, String::new(), String::new()),
        Err(kube::Error::Api(status)) => {
            (status.code, status.reason.clone(), status.message.clone())
        }
        Err(other) => panic!("not an API error: {other}"),
    }
}
