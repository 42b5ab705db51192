//! The in-process client speaks to the hub's router as a client over HTTPS would: writes,
//! reads, watches and refusals, each in its own logical cluster.

use std::time::Duration;

use fleet_local::{LocalHub, MemberStorage};
use fleet_objects::hints::ManagedFields;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "b"}}))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_client_reaches_its_own_cluster() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let members = ["east".to_string(), "west".to_string()];
    let local = LocalHub::start(
        dir.path(),
        "127.0.0.1:0".parse().expect("addr"),
        &members,
        MemberStorage::Durable,
        "test",
    )
    .await
    .unwrap_or_else(|e| panic!("hub: {e}"));
    assert!(local
        .in_process_client("nowhere", ManagedFields::Included)
        .is_none());
    let east: Api<ConfigMap> = Api::namespaced(
        local
            .in_process_client("east", ManagedFields::Included)
            .expect("east"),
        "default",
    );
    let west: Api<ConfigMap> = Api::namespaced(
        local
            .in_process_client("west", ManagedFields::Omitted)
            .expect("west"),
        "default",
    );

    let watched = east.clone();
    let watch = tokio::spawn(async move {
        let params = WatchParams::default().timeout(10);
        let stream = watched.watch(&params, "0").await.expect("watch");
        let mut stream = stream.boxed();
        while let Some(event) = stream.try_next().await.expect("event") {
            // The namespace's own kube-root-ca.crt comes first.
            match event {
                WatchEvent::Added(object)
                    if object.metadata.name.as_deref() == Some("settings") =>
                {
                    return object.metadata.name;
                }
                _ => {}
            }
        }
        None
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    east.create(&PostParams::default(), &config_map("settings"))
        .await
        .expect("created in east");
    assert_eq!(
        watch.await.expect("watch task").as_deref(),
        Some("settings"),
        "the watch streams through the in-process transport"
    );
    assert!(east.get_opt("settings").await.expect("read").is_some());
    assert!(
        west.get_opt("settings").await.expect("read").is_none(),
        "each client reaches its own logical cluster"
    );
    let refused = east
        .create(&PostParams::default(), &config_map("settings"))
        .await
        .expect_err("exists");
    assert!(
        matches!(refused, kube::Error::Api(ref s) if s.code == 409),
        "{refused}"
    );
    let with = east.get("settings").await.expect("read");
    assert!(with.metadata.managed_fields.is_some(), "{with:?}");
    let created = (west.create(&PostParams::default(), &config_map("settings")))
        .await
        .expect("created in west");
    assert!(created.metadata.managed_fields.is_none(), "{created:?}");
    local.shutdown().await;
}
