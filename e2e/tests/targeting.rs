//! Git to BundleDeployments: the hub, `git daemon`, gitjob and the targeting controller in
//! one process; three clusters labelled env=dev, env=prod region=a, env=prod region=b.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleet_api::{BundleDeployment, Cluster, Content, GitRepo};
use fleet_testkit::{create_cluster, eventually, FleetHub, GitDaemon, TestRepo};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

const NS: &str = "fleet-local";
const WAIT: Duration = Duration::from_secs(30);

/// `(cluster namespace, content id, where the ConfigMap goes)` per BundleDeployment: its
/// forced namespace in the Content, else the `defaultNamespace` the agent applies.
async fn deployed(client: &kube::Client) -> Vec<(String, String, String)> {
    let contents: Api<Content> = Api::all(client.clone());
    let mut out = Vec::new();
    let all: Api<BundleDeployment> = Api::all(client.clone());
    for deployment in all.list(&ListParams::default()).await.expect("list").items {
        let id = deployment.spec.deployment_id.clone().unwrap_or_default();
        let content_id = id.split(':').next().unwrap_or_default().to_string();
        let Ok(content) = contents.get(&content_id).await else {
            continue;
        };
        let resources = content.unpack().expect("content unpacks").resources;
        let default = deployment
            .spec
            .options
            .as_ref()
            .and_then(|o| o.default_namespace.clone())
            .unwrap_or_default();
        let namespace = resources[0]["metadata"]["namespace"]
            .as_str()
            .map(String::from)
            .unwrap_or(default);
        out.push((
            deployment.namespace().unwrap_or_default(),
            content_id,
            namespace,
        ));
    }
    out.sort();
    out
}

/// Serves `dir`/repos with `git daemon`, runs gitjob and the controller against `client`,
/// and creates the GitRepo `demo` deploying the repository `app` to every cluster; the
/// daemon and the controllers run until dropped and stopped.
async fn deploy_app(
    client: &kube::Client,
    dir: &std::path::Path,
) -> (GitDaemon, fleet_local::Fleet) {
    let daemon = GitDaemon::start(&dir.join("repos"));
    let mut fleet = fleet_local::Fleet::new();
    fleet.run_controllers(client, dir, None);
    let gitrepo: GitRepo = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
        "metadata": {"name": "demo", "namespace": NS},
        "spec": {
            "repo": daemon.url("app"),
            "branch": "main",
            "pollingInterval": "1s",
            "targets": [{"name": "all", "clusterSelector": {}}],
        },
    }))
    .expect("GitRepo");
    Api::<GitRepo>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &gitrepo)
        .await
        .expect("GitRepo");
    (daemon, fleet)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cluster_gets_its_variant_stored_once() {
    let hub = FleetHub::start(&[]).await;
    let client = hub.client.clone();
    let dir = hub.dir();
    let clusters: Api<Cluster> = Api::namespaced(client.clone(), NS);
    for (name, labels) in [
        ("dev", json!({"env": "dev"})),
        ("prod-a", json!({"env": "prod", "region": "a"})),
        ("prod-b", json!({"env": "prod", "region": "b"})),
    ] {
        create_cluster(&client, NS, name, labels)
            .await
            .expect("cluster");
    }

    let repos = dir.join("repos");
    let repo = TestRepo::in_dir(&repos, "app");
    repo.write(
        "web/fleet.yaml",
        "defaultNamespace: web\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels:\n      env: prod\n  namespace: web-prod\n",
    )
    .write("web/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: \"1\"\n");
    repo.commit("first");
    let (_daemon, fleet) = deploy_app(&client, dir).await;

    let placed = eventually("three BundleDeployments", WAIT, || async {
        let placed = deployed(&client).await;
        (placed.len() == 3).then_some(placed)
    })
    .await;
    let ns_of = |cluster: &str| format!("cluster-fleet-local-{cluster}");
    assert_eq!(
        placed
            .iter()
            .map(|p| (p.0.clone(), p.2.clone()))
            .collect::<Vec<_>>(),
        vec![
            (ns_of("dev"), "web".to_string()),
            (ns_of("prod-a"), "web-prod".to_string()),
            (ns_of("prod-b"), "web-prod".to_string()),
        ]
    );
    assert_eq!(
        placed[1].1, placed[2].1,
        "both prod clusters deploy one Content"
    );
    assert_ne!(placed[0].1, placed[1].1);
    let contents: Api<Content> = Api::all(client.clone());
    assert_eq!(
        contents
            .list(&ListParams::default())
            .await
            .expect("contents")
            .items
            .len(),
        2
    );
    let bundles: Api<fleet_api::Bundle> = Api::namespaced(client.clone(), NS);
    eventually("the Bundle's counts", WAIT, || async {
        let bundle = bundles.get("demo-web").await.ok()?;
        let display = bundle.status?.display?;
        (display.ready_clusters.as_deref() == Some("0/3")).then_some(())
    })
    .await;

    // Clusters and groups count their bundles, as kubectl shows them.
    let groups: Api<fleet_api::ClusterGroup> = Api::namespaced(client.clone(), NS);
    let group: fleet_api::ClusterGroup = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterGroup",
        "metadata": {"name": "prod", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"env": "prod"}}},
    }))
    .expect("group");
    groups
        .create(&PostParams::default(), &group)
        .await
        .expect("group");
    eventually("the counts of clusters and groups", WAIT, || async {
        let cluster = clusters.get("prod-a").await.ok()?.status?;
        let group = groups.get("prod").await.ok()?.status?;
        let shown = (
            cluster.display?.ready_bundles?,
            cluster.namespace?,
            group.cluster_count,
            group.display?.ready_bundles?,
        );
        (shown
            == (
                "0/1".into(),
                "cluster-fleet-local-prod-a".into(),
                2,
                "0/2".into(),
            ))
            .then_some(())
    })
    .await;

    // A cluster relabelled gets the other variant; a deleted cluster loses its deployment.
    clusters
        .patch(
            "prod-b",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"env": "dev"}}})),
        )
        .await
        .expect("relabel");
    clusters
        .delete("dev", &DeleteParams::default())
        .await
        .expect("delete");
    let placed = eventually("the new placement", WAIT, || async {
        let placed = deployed(&client).await;
        let wanted = vec![
            (ns_of("prod-a"), "web-prod".to_string()),
            (ns_of("prod-b"), "web".to_string()),
        ];
        (placed
            .iter()
            .map(|p| (p.0.clone(), p.2.clone()))
            .collect::<Vec<_>>()
            == wanted)
            .then_some(placed)
    })
    .await;
    assert_eq!(placed.len(), 2);

    // A deployment deleted by hand is made again: the controller does not trust a placement
    // it remembers over what its watches show.
    let prod_a: Api<BundleDeployment> = Api::namespaced(client.clone(), &ns_of("prod-a"));
    let name = prod_a
        .list(&ListParams::default())
        .await
        .expect("list")
        .items[0]
        .name_any();
    let uid = prod_a.get(&name).await.expect("get").metadata.uid;
    prod_a
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the deployment made again", WAIT, || async {
        let again = prod_a.get(&name).await.ok()?;
        (again.metadata.uid != uid && again.metadata.deletion_timestamp.is_none()).then_some(())
    })
    .await;
    fleet.stop().await;
}

/// The ready counts a watch saw written, and when.
type Writes = Arc<Mutex<Vec<(Instant, i32)>>>;

/// The `status.summary.ready` of each status write of `kind` `name` in `NS` that changed it,
/// with when it was seen; until the task is aborted.
fn summary_writes<K>(
    client: &kube::Client,
    name: &'static str,
    ready_of: fn(&K) -> Option<i32>,
) -> (tokio::task::JoinHandle<()>, Writes)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    use futures::StreamExt;
    let writes = Arc::new(Mutex::new(Vec::new()));
    let seen = writes.clone();
    let api: Api<K> = Api::namespaced(client.clone(), NS);
    let task = tokio::spawn(async move {
        let params = kube::api::WatchParams::default().fields(&format!("metadata.name={name}"));
        let mut events = api.watch(&params, "0").await.expect("watch").boxed();
        let mut last = None;
        while let Some(event) = events.next().await {
            // Bookmarks (kube asks for them) carry no object: the watch goes on.
            let (Ok(kube::api::WatchEvent::Added(object))
            | Ok(kube::api::WatchEvent::Modified(object))) = event
            else {
                continue;
            };
            let ready = ready_of(&object);
            if ready != last {
                last = ready;
                if let Some(ready) = ready {
                    seen.lock().expect("lock").push((Instant::now(), ready));
                }
            }
        }
    });
    (task, writes)
}

/// Six bundles' reports reach one cluster 700 ms apart, more than the controller's
/// debounce: the Cluster's status, and its group's, are written a few times rather than
/// once per report, and the last state is written all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_writes_of_a_cluster_and_its_group_are_paced() {
    const BUNDLES: usize = 6;
    let hub = FleetHub::start(&[]).await;
    let client = hub.client.clone();
    let dir = hub.dir();
    create_cluster(&client, NS, "edge", json!({"env": "edge"}))
        .await
        .expect("cluster");
    let group: fleet_api::ClusterGroup = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterGroup",
        "metadata": {"name": "edges", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"env": "edge"}}},
    }))
    .expect("ClusterGroup");
    Api::<fleet_api::ClusterGroup>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &group)
        .await
        .expect("group");

    let repos = dir.join("repos");
    let repo = TestRepo::in_dir(&repos, "app");
    for n in 0..BUNDLES {
        repo.write(&format!("b{n}/fleet.yaml"), "defaultNamespace: web\n")
            .write(
                &format!("b{n}/cm.yaml"),
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b{n}\n"),
            );
    }
    repo.commit("first");
    let (_daemon, fleet) = deploy_app(&client, dir).await;
    let deployments: Api<BundleDeployment> =
        Api::namespaced(client.clone(), "cluster-fleet-local-edge");
    let placed = eventually("the BundleDeployments", WAIT, || async {
        let placed = deployments.list(&ListParams::default()).await.ok()?.items;
        let complete = placed.iter().all(|d| d.spec.deployment_id.is_some());
        (placed.len() == BUNDLES && complete).then_some(placed)
    })
    .await;
    let (cluster_task, cluster_writes) = summary_writes::<Cluster>(&client, "edge", |c| {
        Some(c.status.as_ref()?.summary.as_ref()?.ready)
    });
    let (group_task, group_writes) =
        summary_writes::<fleet_api::ClusterGroup>(&client, "edges", |g| {
            Some(g.status.as_ref()?.summary.as_ref()?.ready)
        });

    // Report each deployment ready, as its agent would, one every 700 ms.
    let reports_began = Instant::now();
    for deployment in &placed {
        let status = json!({"status": {
            "appliedDeploymentID": deployment.spec.deployment_id,
            "ready": true,
            "nonModified": true,
        }});
        deployments
            .patch_status(
                &deployment.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await
            .expect("report");
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    let all_ready = BUNDLES as i32;
    for (what, writes) in [
        ("Cluster", &cluster_writes),
        ("ClusterGroup", &group_writes),
    ] {
        eventually(
            &format!("the {what} counting every bundle ready"),
            WAIT,
            || async {
                let writes = writes.lock().expect("lock");
                (writes.last().map(|w| w.1) == Some(all_ready)).then_some(())
            },
        )
        .await;
        let during: Vec<i32> = writes
            .lock()
            .expect("lock")
            .iter()
            .filter(|(at, _)| *at >= reports_began)
            .map(|w| w.1)
            .collect();
        assert!(
            during.len() <= 3,
            "{what} status written {} times for {BUNDLES} reports: ready {during:?}",
            during.len()
        );
    }
    cluster_task.abort();
    group_task.abort();
    fleet.stop().await;
}

/// Restated from Rancher Fleet's e2e `single-cluster/status_test.go` with its asset
/// `status/chart-with-template-vars`: a Helm value templated from a label the cluster does
/// not have fails the bundle's targeting (no deployment anywhere), saying so in Fleet's
/// words on the Bundle; once the cluster has the label, the bundle deploys the value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_values_template_missing_its_label_fails_the_bundles_targeting() {
    let hub = FleetHub::start(&[]).await;
    let client = hub.client.clone();
    let dir = hub.dir();
    create_cluster(&client, NS, "local", json!({"env": "dev"}))
        .await
        .expect("cluster");
    let repo = TestRepo::in_dir(&dir.join("repos"), "app");
    repo.write(
        "chart/Chart.yaml",
        "apiVersion: v2\nname: chart-with-template-vars\nversion: 0.1.0\n",
    )
    .write(
        "chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata:\n  label: {{ .Values.templatedLabel | quote }}\n",
    )
    .write(
        "chart/fleet.yaml",
        "defaultNamespace: vars\nhelm:\n  values:\n    templatedLabel: \"${ .ClusterLabels.foo }-foo\"\n",
    );
    repo.commit("template vars");
    let (_daemon, fleet) = deploy_app(&client, dir).await;

    let bundles: Api<fleet_api::Bundle> = Api::namespaced(client.clone(), NS);
    let message = eventually("the targeting error on the Bundle", WAIT, || async {
        let bundle = bundles.get("demo-chart").await.ok()?;
        let ready = (bundle.status?.conditions.into_iter()).find(|c| c.type_ == "Ready")?;
        (ready.status == "False")
            .then_some(ready.message?)
            .filter(|m| m.contains("targeting error"))
    })
    .await;
    assert!(
        message.starts_with("targeting error: cluster local in namespace fleet-local: "),
        "{message}"
    );
    assert!(
        message.contains("<.ClusterLabels.foo>: map has no entry for key \"foo\""),
        "{message}"
    );
    assert!(deployed(&client).await.is_empty(), "nothing deployed");

    Api::<Cluster>::namespaced(client.clone(), NS)
        .patch(
            "local",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"foo": "bar"}}})),
        )
        .await
        .expect("label");
    let value = eventually("the deployment with the label's value", WAIT, || async {
        let deployments: Api<BundleDeployment> = Api::all(client.clone());
        let deployment = deployments
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .pop()?;
        let helm = deployment.spec.options?.helm?;
        helm.values?
            .get("templatedLabel")?
            .as_str()
            .map(String::from)
    })
    .await;
    assert_eq!(value, "bar-foo");
    fleet.stop().await;
}

/// A Bundle whose chart loops for ever, targeting four clusters, costs the controller its
/// render budget once, not the chart's minute-long limit per cluster: the render in
/// flight stops at the budget, the clusters left are not rendered, and the Bundle says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_chart_costs_the_controller_one_render_budget() {
    let hub = FleetHub::start(&[]).await;
    for n in 1..=4 {
        create_cluster(&hub.client, NS, &format!("c{n}"), json!({}))
            .await
            .expect("cluster");
    }
    let bundles = create_bundle(
        &hub,
        "loops",
        json!({
            "resources": [
                {"name": "Chart.yaml", "content": "apiVersion: v2\nname: loops\nversion: 0.1.0\n"},
                {"name": "templates/loop.yaml",
                 "content": "{{- range until 1000000 }}{{- range until 1000000 }}{{- end }}{{- end }}\n"},
            ],
            "targets": [{"clusterSelector": {}}],
        }),
    )
    .await;
    let started = Instant::now();
    let mut fleet = fleet_local::Fleet::new();
    fleet.run_controller(fleet_controller::Context::with_options(
        hub.client.clone(),
        hub.dir().join("controller"),
        fleet_controller::Options {
            render_budget: Duration::from_secs(3),
            ..Default::default()
        },
    ));
    let message = eventually("the Bundle's render failure", WAIT, || async {
        let bundle = bundles.get("loops").await.ok()?;
        let conditions = bundle.status?.conditions;
        let ready = conditions.into_iter().find(|c| c.type_ == "Ready")?;
        ready.message.filter(|m| m.contains("render failed"))
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        message.matches("ran past their budget of 3 s").count(),
        4,
        "{message}"
    );
}

/// Creates the Bundle `name` with `spec` in the namespace; returns its namespace's Bundles.
async fn create_bundle(
    hub: &FleetHub,
    name: &str,
    spec: serde_json::Value,
) -> Api<fleet_api::Bundle> {
    let bundle: fleet_api::Bundle = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }))
    .expect("Bundle");
    let bundles: Api<fleet_api::Bundle> = Api::namespaced(hub.client.clone(), NS);
    bundles
        .create(&PostParams::default(), &bundle)
        .await
        .expect("create Bundle");
    bundles
}

/// Creates the Bundle `settings` (ConfigMap `settings` in `apps`) for every cluster;
/// returns the Bundles of the namespace.
async fn create_settings_bundle(hub: &FleetHub) -> Api<fleet_api::Bundle> {
    let spec = json!({
        "resources": [{"name": "cm.yaml", "content": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"}],
        "defaultNamespace": "apps",
        "targets": [{"clusterSelector": {}}],
    });
    create_bundle(hub, "settings", spec).await
}

/// Runs the agent of `dev`, reporting itself alive every second.
async fn start_dev_agent(fleet: &mut fleet_local::Fleet, hub: &FleetHub) {
    let agent = fleet_agent::Agent::new(
        hub.client.clone(),
        fleet_testkit::client_for(&hub.kubeconfig("dev")).await,
        "cluster-fleet-local-dev",
        Duration::from_secs(1),
    );
    let heartbeat = Some((format!("{NS}/dev"), Duration::from_secs(1)));
    fleet.run_agent("dev", agent, heartbeat).await;
}

/// A cluster whose agent stops reporting is shown offline, in its own status and in the
/// status of the bundles deployed to it, instead of its last report passing for today's;
/// once the agent reports again both are ready again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_whose_agent_stops_reporting_is_shown_offline() {
    let hub = FleetHub::start(&["dev"]).await;
    create_cluster(&hub.client, NS, "dev", json!({}))
        .await
        .expect("cluster");
    let bundles = create_settings_bundle(&hub).await;
    let mut fleet = fleet_local::Fleet::new();
    fleet.run_controller(fleet_controller::Context::with_options(
        hub.client.clone(),
        hub.dir().join("controller"),
        fleet_controller::Options {
            offline_after: Duration::from_secs(3),
            ..Default::default()
        },
    ));
    start_dev_agent(&mut fleet, &hub).await;
    let clusters: Api<Cluster> = Api::namespaced(hub.client.clone(), NS);
    let ready_of = |conditions: &[fleet_api::Condition]| {
        conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    let both = |want_ready: bool| {
        let (clusters, bundles) = (&clusters, &bundles);
        async move {
            let cluster = clusters.get("dev").await.ok()?.status?;
            let bundle = bundles.get("settings").await.ok()?.status?;
            let cluster_ready = ready_of(&cluster.conditions)?;
            let bundle_ready = ready_of(&bundle.conditions)?;
            ((cluster_ready.0 == "True") == want_ready && (bundle_ready.0 == "True") == want_ready)
                .then_some((cluster, cluster_ready, bundle, bundle_ready))
        }
    };
    eventually("deployed and ready", WAIT, || both(true)).await;

    fleet.kill_agent("dev").await;
    // Both say so once the bundle has seen the cluster go offline (its deployment may say
    // not ready meanwhile, for the agent was stopped mid-look).
    let (cluster, cluster_ready, bundle, bundle_ready) =
        eventually("shown offline", WAIT, || async {
            let seen = both(false).await?;
            seen.3
                 .2
                .as_deref()
                .is_some_and(|m| m.contains("Offline(1) [Cluster fleet-local/dev]"))
                .then_some(seen)
        })
        .await;
    assert_eq!(
        cluster_ready.1.as_deref(),
        Some("Offline"),
        "{cluster_ready:?}"
    );
    assert!(
        cluster_ready
            .2
            .as_deref()
            .is_some_and(|m| m.starts_with("Offline: its agent last reported at ")),
        "{cluster_ready:?}"
    );
    assert_eq!(
        cluster.display.and_then(|d| d.state).as_deref(),
        Some("Offline")
    );
    assert_eq!(bundle_ready.0, "False", "{bundle_ready:?}");
    let state = bundle.display.and_then(|d| d.state).unwrap_or_default();
    assert!(state == "Offline" || state == "NotReady", "{state}");

    start_dev_agent(&mut fleet, &hub).await;
    eventually("ready again once the agent reports", WAIT, || both(true)).await;
    fleet.stop().await;
}

/// Fleet's Schedules (its e2e `schedules` case, restated): a cluster a Schedule targets
/// gets nothing new while no window is open (its deployment says `offSchedule` and the
/// agent leaves it), and what waited is deployed once a window opens; `kubectl get
/// schedules` shows Fleet's columns. A Schedule deleted leaves the cluster unscheduled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_holds_deployments_back_until_its_window_opens() {
    let hub = FleetHub::start(&["dev"]).await;
    create_cluster(&hub.client, NS, "dev", json!({"env": "dev"}))
        .await
        .expect("cluster");
    let mut fleet = fleet_local::Fleet::new();
    fleet.run_controller(fleet_controller::Context::new(
        hub.client.clone(),
        hub.dir().join("controller"),
    ));
    start_dev_agent(&mut fleet, &hub).await;
    let kubectl = hub.hub.kubectl("local");
    let schedule = |cron: &str, duration: &str| {
        json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Schedule",
            "metadata": {"name": "window", "namespace": NS},
            "spec": {"schedule": cron, "duration": duration,
                     "targets": {"clusters": [{"clusterSelector": {"matchLabels": {"env": "dev"}}}]}},
        })
        .to_string()
    };
    // A window that opens in 2099 only.
    kubectl
        .run_with(&["apply", "-f", "-"], &schedule("0 0 0 1 1 ? 2099", "1h"))
        .await
        .success();
    let clusters: Api<Cluster> = Api::namespaced(hub.client.clone(), NS);
    let flags = || async {
        let status = clusters.get("dev").await.ok()?.status?;
        Some((status.scheduled, status.active_schedule))
    };
    eventually("dev scheduled, off its window", WAIT, || async {
        (flags().await? == (true, false)).then_some(())
    })
    .await;
    let listing = eventually("kubectl's columns", WAIT, || async {
        let run = kubectl.run(&["get", "schedules", "-n", NS]).await;
        run.stdout
            .contains("2099-01-01T00:00:00Z")
            .then_some(run.stdout)
    })
    .await;
    let rows: Vec<Vec<&str>> = listing
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        ["NAME", "SCHEDULE", "DURATION", "ACTIVE", "NEXTSTART"],
        "{listing}"
    );

    create_settings_bundle(&hub).await;
    let deployments: Api<BundleDeployment> =
        Api::namespaced(hub.client.clone(), "cluster-fleet-local-dev");
    eventually("the deployment made, off schedule", WAIT, || async {
        deployments
            .get("settings")
            .await
            .ok()
            .filter(|d| d.spec.off_schedule)
    })
    .await;
    let member = hub.hub.kubectl("dev");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !member
            .run(&["get", "configmap", "settings", "-n", "apps"])
            .await
            .ok,
        "nothing is deployed off schedule"
    );

    // A window every minute, open 59 seconds of it.
    kubectl
        .run_with(&["apply", "-f", "-"], &schedule("0 * * * * ?", "59s"))
        .await
        .success();
    eventually("deployed once the window opens", WAIT, || async {
        member
            .run(&["get", "configmap", "settings", "-n", "apps"])
            .await
            .ok
            .then_some(())
    })
    .await;
    kubectl
        .run(&["delete", "schedule", "window", "-n", NS])
        .await
        .success();
    eventually("dev unscheduled", WAIT, || async {
        (flags().await? == (false, false)).then_some(())
    })
    .await;
    fleet.stop().await;
}
