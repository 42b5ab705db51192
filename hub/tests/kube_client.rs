//! The hub driven by kube-rs: server-side apply, pagination, metadata-only requests, and a
//! reflector that survives hub restarts.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use fleet_testkit::TestHub;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, PartialObjectMeta, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use serde_json::json;

fn config_map(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"suite": "kube"}},
        "data": {"value": value},
    }))
    .expect("a ConfigMap")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_may_ask_for_objects_without_managed_fields() {
    let hub = TestHub::start(&["local"]).await;
    let client = hub.client("local").await;
    let lean: Api<ConfigMap> = Api::namespaced(
        fleet_objects::client::omitting_managed_fields(&client),
        "default",
    );
    let plain: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut events = lean
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    let apply = PatchParams::apply("lean-test");
    let applied = (lean.patch("lean", &apply, &Patch::Apply(config_map("lean", "1"))))
        .await
        .expect("applied");
    let managers = |object: &ConfigMap| -> Vec<String> {
        let entries = object.metadata.managed_fields.clone().unwrap_or_default();
        entries.into_iter().filter_map(|m| m.manager).collect()
    };
    let value = |object: &ConfigMap| object.data.as_ref().map(|d| d["value"].clone());
    assert!(applied.metadata.managed_fields.is_none(), "{applied:?}");
    assert_eq!(value(&applied).as_deref(), Some("1"));
    assert_eq!(
        applied.metadata.labels,
        config_map("lean", "1").metadata.labels
    );
    let stored = plain.get("lean").await.expect("get");
    assert_eq!(managers(&stored), ["lean-test"], "stored with them");
    let got = lean.get("lean").await.expect("get");
    assert!(got.metadata.managed_fields.is_none());
    assert_eq!(
        got.metadata.resource_version,
        stored.metadata.resource_version
    );
    let listed = lean.list(&ListParams::default()).await.expect("list");
    assert!(listed
        .items
        .iter()
        .all(|o| o.metadata.managed_fields.is_none()));
    assert_eq!(listed.items.len(), 1);
    let event = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event in time")
        .expect("an event")
        .expect("no error");
    let WatchEvent::Added(added) = event else {
        panic!("not an ADDED: {event:?}");
    };
    assert!(added.metadata.managed_fields.is_none());
    assert_eq!(value(&added).as_deref(), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_patches_create_update_and_conflict() {
    let hub = TestHub::start(&["local"]).await;
    let api: Api<ConfigMap> = Api::namespaced(hub.client("local").await, "default");
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "applied"}, "data": {"owner": "agent"}});
    let created = api
        .patch(
            "applied",
            &PatchParams::apply("fleet-agent"),
            &Patch::Apply(&applied),
        )
        .await
        .expect("apply creates");
    assert_eq!(
        created
            .data
            .as_ref()
            .and_then(|d| d.get("owner"))
            .map(String::as_str),
        Some("agent")
    );
    let managers: Vec<String> = created
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["fleet-agent"]);

    let rival = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "applied"}, "data": {"owner": "someone-else"}});
    let conflict = api
        .patch(
            "applied",
            &PatchParams::apply("intruder"),
            &Patch::Apply(&rival),
        )
        .await
        .expect_err("another manager conflicts");
    let kube::Error::Api(status) = conflict else {
        panic!("an API error: {conflict}")
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"fleet-agent\" using v1: .data.owner"
    );
    let forced = api
        .patch(
            "applied",
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(&rival),
        )
        .await
        .expect("force takes ownership");
    assert_eq!(
        forced.data.and_then(|d| d.get("owner").cloned()).as_deref(),
        Some("someone-else")
    );

    let stale = {
        let mut old = api.get("applied").await.expect("get");
        old.metadata.resource_version = Some("1".into());
        old
    };
    let error = api
        .replace("applied", &PostParams::default(), &stale)
        .await
        .expect_err("a stale resourceVersion conflicts");
    let kube::Error::Api(status) = error else {
        panic!("an API error")
    };
    assert_eq!(status.code, 409);
    assert!(
        status.message.contains("the object has been modified"),
        "{}",
        status.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_come_in_pages() {
    let hub = TestHub::start(&["local"]).await;
    let api: Api<ConfigMap> = Api::namespaced(hub.client("local").await, "default");
    for i in 0..7 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("page-{i}"), "x"),
        )
        .await
        .expect("created");
    }
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    let mut versions = Vec::new();
    loop {
        let mut params = ListParams::default().labels("suite=kube").limit(3);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = api.list(&params).await.expect("a page");
        pages += 1;
        assert!(page.items.len() <= 3);
        names.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        versions.push(page.metadata.resource_version.unwrap_or_default());
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if pages == 1 {
            // Made between pages, before the cursor: no later page holds it.
            (api.create(&PostParams::default(), &config_map("page-00", "x"))
                .await)
                .expect("created");
        }
        if token.is_none() {
            break;
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..7).map(|i| format!("page-{i}")).collect();
    assert_eq!(names, expected);
    // Every page is at the first page's resourceVersion, and a watch from it (what a
    // client starts after a paginated list) brings what was made between pages.
    assert!(versions.iter().all(|v| *v == versions[0]), "{versions:?}");
    let watch = WatchParams::default().labels("suite=kube").timeout(5);
    let mut events = api
        .watch(&watch, &versions[0])
        .await
        .expect("a watch")
        .boxed();
    let mut seen = Vec::new();
    while let Some(Ok(event)) = events.next().await {
        if let WatchEvent::Added(made) = event {
            seen.extend(made.metadata.name);
            break;
        }
    }
    assert_eq!(seen, ["page-00"]);
}

/// A later page of a list whose first page is older than the changes the hub keeps is
/// refused with 410 Expired, as Kubernetes refuses a continue token it has compacted: what
/// changed since could no longer come with a watch from the list's version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_a_list_older_than_the_kept_changes_is_expired() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Kept in memory only: the writes that push the history on need no fsync.
    let options = common::plain_http_options(dir.path(), &["sim"], &["sim"]);
    let hub = fleet_hub::start(options).await.expect("the hub starts");
    let kubeconfig = fleet_hub::serve::kubeconfig_path(dir.path(), "sim");
    let api: Api<ConfigMap> =
        Api::namespaced(fleet_testkit::client_for(&kubeconfig).await, "default");
    for name in ["a", "b", "c"] {
        (api.create(&PostParams::default(), &config_map(name, "x"))
            .await)
            .expect("created");
    }
    let first_page = ListParams::default().labels("suite=kube").limit(2);
    let page = api.list(&first_page).await.expect("a page");
    let token = page.metadata.continue_.expect("more to come");
    let next_page = first_page.clone().continue_token(&token);
    // A change after the list: a watch from the list's version must bring it.
    (api.create(&PostParams::default(), &config_map("d", "x"))
        .await)
        .expect("created");
    let rest = api
        .list(&next_page)
        .await
        .expect("the next page, while kept");
    let names: Vec<_> = rest
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names.first().map(String::as_str), Some("c"));
    // Enough later changes that the hub forgets that one.
    let fillers = futures::stream::iter(0..fleet_hub::store::HISTORY)
        .map(|i| {
            let api = api.clone();
            async move {
                let filler = config_map(&format!("filler-{i}"), "x");
                api.create(&PostParams::default(), &filler).await
            }
        })
        .buffer_unordered(64);
    let failed = fillers.filter(|made| futures::future::ready(made.is_err()));
    assert_eq!(failed.count().await, 0, "every filler made");
    match api.list(&next_page).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(status.message.contains("continue token"), "{status:?}");
        }
        other => panic!("expected 410 Expired, got {other:?}"),
    }
    // A list started again is served.
    let again = api.list(&first_page).await.expect("a new list");
    assert_eq!(again.items.len(), 2);
    hub.shutdown().await;
}

async fn wait_for(store: &reflector::Store<ConfigMap>, wanted: &BTreeSet<String>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let seen: BTreeSet<String> = store
            .state()
            .iter()
            .filter(|c| {
                c.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("suite"))
            })
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        if &seen == wanted {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reflector saw {seen:?}, wanted {wanted:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflector_follows_changes_across_hub_restarts() {
    let mut hub = TestHub::start(&["local"]).await;
    let api: Api<ConfigMap> = Api::namespaced(hub.client("local").await, "default");
    let (store, writer) = reflector::store();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .applied_objects();
    let follower = tokio::spawn(stream.for_each(|_| async {}));
    store.wait_until_ready().await.expect("reflector ready");

    for name in ["one", "two"] {
        api.create(&PostParams::default(), &config_map(name, "a"))
            .await
            .expect("created");
    }
    wait_for(&store, &["one", "two"].map(String::from).into()).await;

    hub.restart(std::time::Duration::ZERO).await;
    api.create(&PostParams::default(), &config_map("three", "b"))
        .await
        .expect("created after restart");
    api.delete("one", &DeleteParams::default())
        .await
        .expect("deleted after restart");
    wait_for(&store, &["two", "three"].map(String::from).into()).await;

    // A write while the hub is down is missed by the watch, so the reflector must re-list.
    hub.stop().await;
    hub.start_again().await;
    api.create(&PostParams::default(), &config_map("four", "c"))
        .await
        .expect("created");
    wait_for(&store, &["two", "three", "four"].map(String::from).into()).await;
    follower.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_collection_and_a_too_old_watch() {
    let mut hub = TestHub::start(&["local"]).await;
    let api: Api<ConfigMap> = Api::namespaced(hub.client("local").await, "default");
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &config_map(name, "x"))
            .await
            .expect("created");
    }
    let first_rv = api
        .get("a")
        .await
        .expect("get")
        .metadata
        .resource_version
        .expect("resourceVersion");
    let removed = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("suite=kube"),
        )
        .await
        .expect("deletecollection");
    let count = removed.left().map(|list| list.items.len());
    assert_eq!(count, Some(3));
    assert!(api
        .list(&ListParams::default().labels("suite=kube"))
        .await
        .expect("list")
        .items
        .is_empty());

    // History starts afresh with each start of the hub, so the old version is gone.
    hub.restart(std::time::Duration::ZERO).await;
    let api: Api<ConfigMap> = Api::namespaced(hub.client("local").await, "default");
    let mut stream = api
        .watch(&WatchParams::default(), &first_rv)
        .await
        .expect("watch opens")
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(status))) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
        }
        other => panic!("expected 410 Gone, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_watch_sees_objects_leave_and_enter_the_selection() {
    let hub = TestHub::start(&["local"]).await;
    let api: Api<ConfigMap> = Api::namespaced(hub.client("local").await, "default");
    api.create(&PostParams::default(), &config_map("moving", "a"))
        .await
        .expect("created");
    let rv = api
        .get("moving")
        .await
        .expect("get")
        .metadata
        .resource_version
        .expect("rv");
    let mut stream = api
        .watch(&WatchParams::default().labels("suite=kube"), &rv)
        .await
        .expect("watch opens")
        .boxed();
    let relabel = |value: &str| Patch::Merge(json!({"metadata": {"labels": {"suite": value}}}));
    api.patch("moving", &PatchParams::default(), &relabel("other"))
        .await
        .expect("left");
    api.patch("moving", &PatchParams::default(), &relabel("kube"))
        .await
        .expect("back");
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("an event in time")
            .expect("the stream goes on")
            .expect("no error");
        seen.push(match event {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            _ => continue,
        });
    }
    assert_eq!(
        seen,
        ["DELETED", "ADDED"],
        "as kube-apiserver's watch cache reports them"
    );
}

/// A raw GET of `path` with `accept`, parsed (a watch's lines as a JSON array).
async fn get_accepting(client: &kube::Client, path: &str, accept: &str) -> serde_json::Value {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .expect("a request");
    let text = client.request_text(request).await.expect("an answer");
    if path.contains("watch=") {
        let lines: Vec<serde_json::Value> = (text.lines())
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        return serde_json::Value::from(lines);
    }
    serde_json::from_str(&text).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_may_ask_for_metadata_only() {
    let hub = TestHub::start(&["local"]).await;
    let client = hub.client("local").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let apply = PatchParams::apply("metadata-test");
    for name in ["first", "second"] {
        (api.patch(name, &apply, &Patch::Apply(config_map(name, "1"))))
            .await
            .expect("applied");
    }
    // The media types client-go's metadata informers send, protobuf first.
    let list_accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;\
                       g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;\
                       g=meta.k8s.io;v=v1,application/json";
    // Only this test's: the namespace also holds kube-root-ca.crt.
    let path = "/api/v1/namespaces/default/configmaps?labelSelector=suite%3Dkube";
    let list = get_accepting(&client, path, list_accept).await;
    assert_eq!(list["kind"], "PartialObjectMetadataList", "{list}");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(list["metadata"]["resourceVersion"].is_string());
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(item["kind"], "PartialObjectMetadata", "{item}");
        assert_eq!(item["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(item["metadata"]["labels"]["suite"], "kube");
        assert_eq!(
            item["metadata"]["managedFields"][0]["manager"],
            "metadata-test"
        );
        assert_eq!(
            item.as_object().map(|o| o.len()),
            Some(3),
            "no data: {item}"
        );
    }

    // kube-rs reads the same objects' metadata as a full GET shows it.
    let full = api.get("first").await.expect("get");
    let got = api.get_metadata("first").await.expect("get_metadata");
    assert_eq!(got.metadata, full.metadata);
    let listed = api
        .list_metadata(&ListParams::default().labels("suite=kube"))
        .await
        .expect("list_metadata");
    let names: Vec<_> = listed
        .items
        .iter()
        .map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(names, [Some("first".into()), Some("second".into())]);

    // A watch's events carry metadata only, without managedFields when asked so.
    let lean = fleet_objects::client::omitting_managed_fields(&client);
    let watch = format!("{path}&watch=1&resourceVersion=0&timeoutSeconds=1");
    let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let events = get_accepting(&lean, &watch, accept).await;
    let events = events.as_array().expect("lines");
    assert_eq!(events.len(), 2, "{events:?}");
    for event in events {
        let object = &event["object"];
        assert_eq!(event["type"], "ADDED");
        assert_eq!(object["kind"], "PartialObjectMetadata", "{event}");
        assert!(object["metadata"]["resourceVersion"].is_string());
        assert!(object.get("data").is_none() && object["metadata"].get("managedFields").is_none());
    }

    // kube-rs watches an `Api<PartialObjectMeta<_>>` with metadata-only requests; it sees a
    // change to the data as a new resourceVersion.
    let metadata: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client.clone(), "default");
    let mut seen = watcher(metadata, watcher::Config::default())
        .applied_objects()
        .boxed();
    let changed = (api.patch("second", &apply, &Patch::Apply(config_map("second", "2"))))
        .await
        .expect("applied");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let next = tokio::time::timeout_at(deadline, seen.next()).await;
        let object = next
            .expect("the change in time")
            .expect("an event")
            .expect("no error");
        if object.metadata.resource_version == changed.metadata.resource_version {
            assert_eq!(object.metadata.name.as_deref(), Some("second"));
            break;
        }
    }
}
