//! Git to member clusters: the hub with a management cluster (`local`) and members,
//! `git daemon`, gitjob, the targeting controller and one agent per member in one process;
//! what landed in each member is read with the real kubectl.

use std::time::Duration;

use fleet_api::GitRepo;
use fleet_testkit::eventually;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;

mod common;

use common::{Fleet, NS, WAIT};

/// The `mode` of the ConfigMap `settings` in a member's namespace `app`.
fn mode(fleet: &Fleet, member: &str) -> Option<String> {
    let found = fleet.get(member, &["get", "configmap", "settings", "-n", "app"])?;
    found["data"]["mode"].as_str().map(String::from)
}

/// Waits until the ConfigMap `settings` in `member` has `mode: wanted`.
async fn until_mode(fleet: &Fleet, member: &str, wanted: &str) {
    eventually(&format!("mode {wanted} in {member}"), WAIT, || async {
        (mode(fleet, member)? == wanted).then_some(())
    })
    .await;
}

/// Sets `mode` in dev's ConfigMap `settings` with kubectl, as a hand edit.
fn edit_by_hand(fleet: &Fleet, mode: &str) {
    let patch = json!({"data": {"mode": mode}}).to_string();
    fleet
        .kubectl("dev")
        .run_blocking(&["patch", "configmap", "settings", "-n", "app", "-p", &patch])
        .success();
}

/// Waits until the deployment `demo-app` reports drift, and returns its `modifiedStatus`.
async fn drift_reported(deployments: &Api<fleet_api::BundleDeployment>) -> Vec<serde_json::Value> {
    eventually("the drift reported", WAIT, || async {
        let status = deployments.get("demo-app").await.ok()?.status?;
        (!status.non_modified).then_some(status.modified_status)
    })
    .await
}

const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n";

fn settings(mode: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: {mode}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_reaches_the_member_cluster_and_a_removed_file_is_pruned() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .repo
        .write("app/fleet.yaml", "defaultNamespace: app\n")
        .write("app/settings.yaml", &settings("dev"))
        .write("app/web.yaml", WEB);
    fleet.repo.commit("first");
    fleet
        .gitrepo(json!({"targets": [{"clusterSelector": {"matchLabels": {"env": "dev"}}}]}))
        .await;

    let found = eventually("the ConfigMap in dev", WAIT, || async {
        fleet.get(
            "dev",
            &[
                "get",
                "configmap",
                "settings",
                "-n",
                "app",
                "--show-managed-fields",
            ],
        )
    })
    .await;
    assert_eq!(found["data"]["mode"], "dev");
    assert_eq!(
        found["metadata"]["labels"]["fleet.cattle.io/bundle-deployment"],
        "demo-app"
    );
    assert_eq!(managers(&found), ["fleet-agent Apply"]);
    let web = fleet
        .get("dev", &["get", "deployment", "web", "-n", "app"])
        .expect("the Deployment in dev");
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );

    // Applied, but not ready: no controller runs pods on the hub.
    let deployments = fleet.deployments("dev");
    let status = eventually("the agent's report", WAIT, || async {
        let deployment = deployments.get("demo-app").await.ok()?;
        let status = deployment.status.clone()?;
        (status.applied_deployment_id == deployment.spec.deployment_id).then_some(status)
    })
    .await;
    assert!(!status.ready);
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(
        ready.message.as_deref(),
        Some("Deployment app/web: rollout not observed yet")
    );
    let deployed = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Deployed")
        .expect("Deployed");
    assert_eq!(deployed.status, "True");
    assert_eq!(status.resources.len(), 2);
    assert_eq!(status.release.as_deref(), Some("app/demo-app:1"));

    // A file removed from Git is pruned from the cluster.
    fleet.repo.remove("app/settings.yaml");
    fleet.repo.commit("drop the ConfigMap");
    eventually("the ConfigMap pruned", WAIT, || async {
        fleet
            .get("dev", &["get", "configmap", "settings", "-n", "app"])
            .is_none()
            .then_some(())
    })
    .await;
    assert!(fleet
        .get("dev", &["get", "deployment", "web", "-n", "app"])
        .is_some());
    eventually("the second release", WAIT, || async {
        let status = deployments.get("demo-app").await.ok()?.status?;
        (status.release.as_deref() == Some("app/demo-app:2")).then_some(())
    })
    .await;
    // The agent's writes are recorded under its field manager: its reports on the hub, and
    // its release records in the member (the first one replaced when it was superseded).
    assert_eq!(
        managers_of(
            &fleet,
            "local",
            "bundledeployment/demo-app",
            NAMESPACE_OF_DEV
        ),
        ["fleet-controller Apply", "fleet-agent Update status"]
    );
    for record in [
        "secret/sh.helm.release.v1.demo-app.v1",
        "secret/sh.helm.release.v1.demo-app.v2",
    ] {
        let found = managers_of(&fleet, "dev", record, "app");
        assert_eq!(found, ["fleet-agent Update"], "{record}");
    }
    assert_eq!(
        managers_of(&fleet, "dev", "namespace/app", ""),
        ["fleet-agent Update"]
    );
    // So are the controllers': gitjob's bundle and its GitRepo's status, the controller's
    // finalizer and status of the bundle and its status of the cluster.
    assert_eq!(
        managers_of(&fleet, "local", "bundle/demo-app", "fleet-local"),
        [
            "fleet-gitjob Apply",
            "fleet-controller Update",
            "fleet-controller Update status"
        ]
    );
    let gitrepo = managers_of(&fleet, "local", "gitrepo/demo", "fleet-local");
    assert!(
        gitrepo.contains(&"fleet-gitjob Update status".to_string()),
        "{gitrepo:?}"
    );
    let cluster = managers_of(&fleet, "local", "cluster/dev", "fleet-local");
    assert!(
        cluster.contains(&"fleet-controller Update status".to_string()),
        "{cluster:?}"
    );
    fleet.stop().await;
}

/// The BundleDeployments' namespace of member `dev`.
const NAMESPACE_OF_DEV: &str = "cluster-fleet-local-dev";

/// The managedFields entries of `object` (`kind/name`, in `namespace` unless it is empty)
/// in `cluster`, as [`managers`] lists them.
fn managers_of(fleet: &Fleet, cluster: &str, object: &str, namespace: &str) -> Vec<String> {
    let mut args = vec!["get", object, "--show-managed-fields"];
    if !namespace.is_empty() {
        args.extend(["-n", namespace]);
    }
    let found = fleet
        .get(cluster, &args)
        .unwrap_or_else(|| panic!("{object} in {cluster}"));
    managers(&found)
}

/// The managedFields entries of `object`, each as `manager operation [subresource]`.
fn managers(object: &serde_json::Value) -> Vec<String> {
    let entries = object["metadata"]["managedFields"].as_array();
    let text = |entry: &serde_json::Value, field: &str| {
        entry[field].as_str().unwrap_or_default().to_string()
    };
    entries
        .into_iter()
        .flatten()
        .map(|entry| {
            let fields = [
                text(entry, "manager"),
                text(entry, "operation"),
                text(entry, "subresource"),
            ];
            fields.join(" ").trim_end().to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cluster_gets_its_variant_and_a_hand_edit_is_reported_then_corrected() {
    let fleet = Fleet::start(&[
        ("dev", json!({"env": "dev"})),
        ("prod-a", json!({"env": "prod", "region": "a"})),
        ("prod-b", json!({"env": "prod", "region": "b"})),
    ])
    .await;
    fleet
        .repo
        .write(
            "app/fleet.yaml",
            "defaultNamespace: app\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels:\n      env: prod\n  defaultNamespace: app-prod\n",
        )
        .write("app/settings.yaml", &settings("shared"));
    fleet.repo.commit("first");
    fleet
        .gitrepo(json!({"targets": [{"clusterSelector": {}}]}))
        .await;
    for (member, namespace) in [
        ("dev", "app"),
        ("prod-a", "app-prod"),
        ("prod-b", "app-prod"),
    ] {
        eventually(
            &format!("the ConfigMap in {member}/{namespace}"),
            WAIT,
            || async { fleet.get(member, &["get", "configmap", "settings", "-n", namespace]) },
        )
        .await;
        assert!(
            fleet
                .get(
                    member,
                    &[
                        "get",
                        "configmap",
                        "settings",
                        "-n",
                        if namespace == "app" {
                            "app-prod"
                        } else {
                            "app"
                        }
                    ]
                )
                .is_none(),
            "{member} holds only its own variant"
        );
    }

    // A hand edit in dev is reported as Modified, naming the field.
    edit_by_hand(&fleet, "hacked");
    let dev = fleet.deployments("dev");
    let modified = drift_reported(&dev).await;
    assert_eq!(modified[0]["paths"], json!(["/data/mode"]));
    assert_eq!(modified[0]["name"], "settings");
    // The patch holds what the cluster has instead, as Fleet's modifiedStatus does.
    assert_eq!(modified[0]["patch"], r#"{"data":{"mode":"hacked"}}"#);
    let bundles: Api<fleet_api::Bundle> = Api::namespaced(fleet.hub.client.clone(), NS);
    eventually("the Bundle counting it", WAIT, || async {
        let summary = bundles.get("demo-app").await.ok()?.status?.summary?;
        (summary.modified == 1 && summary.desired_ready == 3).then_some(())
    })
    .await;

    // correctDrift on the GitRepo puts the field back.
    Api::<GitRepo>::namespaced(fleet.hub.client.clone(), NS)
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"correctDrift": {"enabled": true}}})),
        )
        .await
        .expect("patch GitRepo");
    eventually("the drift corrected", WAIT, || async {
        let found = fleet.get("dev", &["get", "configmap", "settings", "-n", "app"])?;
        (found["data"]["mode"] == "shared").then_some(())
    })
    .await;
    eventually("the report cleared", WAIT, || async {
        let status = dev.get("demo-app").await.ok()?.status?;
        status.non_modified.then_some(())
    })
    .await;
    // With correctDrift on, a later hand edit is undone by the agent's next look (the
    // deployment itself did not change).
    let before = dev
        .get("demo-app")
        .await
        .expect("deployment")
        .spec
        .deployment_id;
    edit_by_hand(&fleet, "again");
    eventually("the second edit undone", WAIT, || async {
        let found = fleet.get("dev", &["get", "configmap", "settings", "-n", "app"])?;
        (found["data"]["mode"] == "shared").then_some(())
    })
    .await;
    assert_eq!(
        dev.get("demo-app")
            .await
            .expect("deployment")
            .spec
            .deployment_id,
        before
    );
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depends_on_holds_a_bundle_until_its_dependency_is_ready_on_that_cluster() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: migrate\n        image: busybox\n";
    fleet
        .repo
        .write("db/fleet.yaml", "defaultNamespace: db\n")
        .write("db/migrate.yaml", job)
        .write(
            "app/fleet.yaml",
            "defaultNamespace: app\ndependsOn:\n- name: demo-db\n",
        )
        .write("app/settings.yaml", &settings("dev"));
    fleet.repo.commit("two bundles");
    fleet
        .gitrepo(json!({"targets": [{"clusterSelector": {}}]}))
        .await;
    let deployments = fleet.deployments("dev");
    let waiting = eventually("app waiting for db", WAIT, || async {
        let status = deployments.get("demo-app").await.ok()?.status?;
        let deployed = status.conditions.iter().find(|c| c.type_ == "Deployed")?;
        deployed.message.clone()
    })
    .await;
    assert_eq!(waiting, "waiting for dependencies to be ready: demo-db");
    eventually("the Job in dev", WAIT, || async {
        fleet.get("dev", &["get", "job", "migrate", "-n", "db"])
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        fleet
            .get("dev", &["get", "configmap", "settings", "-n", "app"])
            .is_none(),
        "app is not applied while db is not ready"
    );

    // The Job completes (no controller runs it here: its status is set by hand).
    fleet
        .kubectl("dev")
        .run_blocking(&[
            "patch",
            "job",
            "migrate",
            "-n",
            "db",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}}"#,
        ])
        .success();
    eventually("app applied after db is ready", WAIT, || async {
        fleet.get("dev", &["get", "configmap", "settings", "-n", "app"])
    })
    .await;
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_restart_and_a_killed_agent_are_survived() {
    let mut fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .repo
        .write("app/fleet.yaml", "defaultNamespace: app\n")
        .write("app/settings.yaml", &settings("one"));
    fleet.repo.commit("one");
    fleet
        .gitrepo(json!({"targets": [{"clusterSelector": {}}]}))
        .await;
    until_mode(&fleet, "dev", "one").await;

    // The hub goes away for two seconds; a commit lands meanwhile. gitjob, the controller
    // and the agent reconnect and carry it through.
    fleet.repo.write("app/settings.yaml", &settings("two"));
    fleet.repo.commit("two");
    fleet.hub.restart(Duration::from_secs(2)).await;
    let back = std::time::Instant::now();
    until_mode(&fleet, "dev", "two").await;
    eprintln!("converged {:?} after the hub came back", back.elapsed());

    // The agent is killed as a new deployment arrives, and a new one converges.
    fleet.repo.write("app/settings.yaml", &settings("three"));
    fleet.repo.commit("three");
    let deployments = fleet.deployments("dev");
    let before = deployments
        .get("demo-app")
        .await
        .expect("deployment")
        .spec
        .deployment_id;
    eventually("the new deployment", WAIT, || async {
        let now = deployments.get("demo-app").await.ok()?.spec.deployment_id;
        (now != before).then_some(())
    })
    .await;
    fleet.start_agent("dev").await;
    until_mode(&fleet, "dev", "three").await;
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_rollout_stops_at_a_failing_partition() {
    let fleet = Fleet::start(&[
        ("dev", json!({"env": "dev"})),
        ("prod-a", json!({"env": "prod"})),
        ("prod-b", json!({"env": "prod"})),
    ])
    .await;
    let fleet_yaml = "defaultNamespace: app\nrolloutStrategy:\n  maxUnavailablePartitions: 0\n  partitions:\n  - name: canary\n    clusterName: dev\n    maxUnavailable: 0\n  - name: prod\n    clusterSelector:\n      matchLabels:\n        env: prod\n";
    fleet
        .repo
        .write("app/fleet.yaml", fleet_yaml)
        .write("app/settings.yaml", &settings("v1"));
    fleet.repo.commit("v1");
    fleet
        .gitrepo(json!({"targets": [{"clusterSelector": {}}]}))
        .await;
    for member in ["dev", "prod-a", "prod-b"] {
        until_mode(&fleet, member, "v1").await;
    }

    // v2 adds a Deployment that never becomes ready on its own: the canary takes it and
    // fails, so prod stays at v1 with v2 staged.
    fleet
        .repo
        .write("app/settings.yaml", &settings("v2"))
        .write("app/web.yaml", WEB);
    fleet.repo.commit("v2");
    until_mode(&fleet, "dev", "v2").await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    for member in ["prod-a", "prod-b"] {
        assert_eq!(
            mode(&fleet, member).as_deref(),
            Some("v1"),
            "{member} held back"
        );
        let held = fleet
            .deployments(member)
            .get("demo-app")
            .await
            .expect("deployment")
            .spec;
        assert_ne!(
            held.staged_deployment_id, held.deployment_id,
            "{member} has v2 staged"
        );
    }

    // The canary's Deployment becomes ready (its status set by hand: no controller runs
    // pods here), and the rollout goes on.
    fleet.kubectl("dev").run_blocking(&[
            "patch",
            "deployment",
            "web",
            "-n",
            "app",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"observedGeneration":1,"replicas":1,"readyReplicas":1,"updatedReplicas":1,"availableReplicas":1}}"#,
        ]).success();
    for member in ["prod-a", "prod-b"] {
        until_mode(&fleet, member, "v2").await;
    }
    fleet.stop().await;
}

/// `count` ConfigMaps, `settings-0000` on, as one multi-document file.
fn many_settings(count: usize) -> String {
    (0..count)
        .map(|i| {
            format!(
                "---\n{}",
                settings(&format!("n{i}"))
                    .replace("name: settings", &format!("name: settings-{i:04}"))
            )
        })
        .collect()
}

/// The names of the ConfigMaps a member holds in namespace `app`.
fn config_maps(fleet: &Fleet, member: &str) -> Vec<String> {
    fleet
        .get(member, &["get", "configmaps", "-n", "app"])
        .and_then(|list| {
            list["items"].as_array().map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
                    .filter(|n| n.starts_with("settings-"))
                    .collect()
            })
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_bundle_keeps_a_small_status_and_still_prunes_what_it_does_not_list() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .repo
        .write("app/fleet.yaml", "defaultNamespace: app\n")
        .write("app/settings.yaml", &many_settings(600));
    fleet.repo.commit("six hundred ConfigMaps");
    fleet
        .gitrepo(json!({"targets": [{"clusterSelector": {}}]}))
        .await;
    let deployments = fleet.deployments("dev");
    let status = eventually("600 applied", WAIT, || async {
        let deployment = deployments.get("demo-app").await.ok()?;
        let status = deployment.status.clone()?;
        (status.applied_deployment_id == deployment.spec.deployment_id && status.ready)
            .then_some(status)
    })
    .await;
    assert_eq!(config_maps(&fleet, "dev").len(), 600);
    // The status lists the first objects only, and counts the rest.
    assert!(status.resources_omitted > 0, "{}", status.resources.len());
    assert_eq!(
        status.resources.len() as u64 + status.resources_omitted,
        600
    );
    assert_eq!(status.resources[0].name, "settings-0000");
    let raw = fleet
        .get(
            "local",
            &[
                "get",
                "bundledeployment",
                "demo-app",
                "-n",
                "cluster-fleet-local-dev",
            ],
        )
        .expect("the BundleDeployment");
    let size = raw["status"].to_string().len();
    assert!(size < 32 * 1024, "status of {size} bytes");

    // Objects past the listed ones leave the bundle: they are pruned all the same, from the
    // release's own record in the member.
    fleet.repo.write("app/settings.yaml", &many_settings(500));
    fleet.repo.commit("one hundred fewer");
    eventually("the last 100 pruned", WAIT, || async {
        (config_maps(&fleet, "dev").len() == 500).then_some(())
    })
    .await;
    assert!(config_maps(&fleet, "dev").contains(&"settings-0499".to_string()));

    // Uninstalling removes every object, listed or not.
    fleet.delete_gitrepo().await;
    eventually("all removed", WAIT, || async {
        config_maps(&fleet, "dev").is_empty().then_some(())
    })
    .await;
    fleet.stop().await;
}

/// The requests the hub served of `verb` on `resource` in its logical cluster `cluster`.
fn served(fleet: &Fleet, cluster: &str, verb: &str, resource: &str) -> u64 {
    let running = fleet.hub.hub.running.as_ref().expect("the hub runs");
    let counts = running.hub.request_counts();
    counts
        .iter()
        .filter(|(kind, _)| {
            kind.cluster == cluster && kind.verb == verb && kind.resource == resource
        })
        .map(|(_, n)| n)
        .sum()
}

/// A fleet with one member, `dev`, and a GitRepo whose one bundle puts the ConfigMap
/// `settings` (`mode: dev`) in its namespace `app`.
async fn settings_in_dev() -> Fleet {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .repo
        .write("app/fleet.yaml", "defaultNamespace: app\n")
        .write("app/settings.yaml", &settings("dev"));
    fleet.repo.commit("first");
    fleet
        .gitrepo(json!({"targets": [{"clusterSelector": {"matchLabels": {"env": "dev"}}}]}))
        .await;
    fleet
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_looks_read_the_objects_again_but_not_the_content_or_the_service_account() {
    let fleet = settings_in_dev().await;
    let deployments = fleet.deployments("dev");
    eventually("the deployment ready", WAIT, || async {
        let status = deployments.get("demo-app").await.ok()?.status?;
        status.ready.then_some(())
    })
    .await;

    // The agent looks again every second (the harness's resync). The controller reads the
    // Content too, on its bundle passes, until the bundle's status settles: three looks in
    // a row must come with no Content or account read (with one per look, they never do).
    let quiet_looks = || async {
        let contents = served(&fleet, "local", "get", "contents");
        let accounts = served(&fleet, "dev", "get", "serviceaccounts");
        let looks = served(&fleet, "dev", "get", "configmaps");
        while served(&fleet, "dev", "get", "configmaps") < looks + 3 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let quiet = served(&fleet, "local", "get", "contents") == contents
            && served(&fleet, "dev", "get", "serviceaccounts") == accounts;
        quiet.then_some((contents, accounts))
    };
    let (contents, accounts) = eventually(
        "three drift looks reading neither Content nor account",
        WAIT,
        quiet_looks,
    )
    .await;

    // A commit is a new deployment: its Content is read, the account asked again.
    fleet.repo.write("app/settings.yaml", &settings("prod"));
    fleet.repo.commit("second");
    until_mode(&fleet, "dev", "prod").await;
    assert!(served(&fleet, "local", "get", "contents") > contents);
    assert!(served(&fleet, "dev", "get", "serviceaccounts") > accounts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_a_deployed_object_brings_a_look_at_once_and_the_agents_own_do_not() {
    let mut fleet = settings_in_dev().await;
    until_mode(&fleet, "dev", "dev").await;
    // An agent whose resync is an hour: only a change can bring a look in this test.
    fleet
        .start_agent_resyncing("dev", Duration::from_secs(3600))
        .await;
    let looks = || served(&fleet, "dev", "get", "configmaps");
    // The new agent looks at its deployment once as it starts; then it is quiet.
    let settled = eventually("the restarted agent quiet", WAIT, || async {
        let before = looks();
        tokio::time::sleep(Duration::from_secs(2)).await;
        (looks() == before && before > 0).then_some(before)
    })
    .await;

    // A commit is applied; the watch event of the agent's own apply brings no look.
    let deployments = fleet.deployments("dev");
    let first = deployments
        .get("demo-app")
        .await
        .expect("deployment")
        .spec
        .deployment_id;
    fleet.repo.write("app/settings.yaml", &settings("prod"));
    fleet.repo.commit("second");
    // (Not read with kubectl, whose GETs would count as looks.)
    eventually("the commit reported ready", WAIT, || async {
        let deployment = deployments.get("demo-app").await.ok()?;
        let status = deployment.status?;
        let new = deployment.spec.deployment_id != first;
        let applied = status.applied_deployment_id == deployment.spec.deployment_id;
        (new && applied && status.ready).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(looks(), settled, "the agent's own apply brought a look");
    assert_eq!(mode(&fleet, "dev").as_deref(), Some("prod"));

    // A hand edit brings one at once, and is reported.
    edit_by_hand(&fleet, "hacked");
    let modified = drift_reported(&deployments).await;
    assert_eq!(modified[0]["paths"], json!(["/data/mode"]));
    assert!(looks() > settled, "the edit was read by a look");
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_deleted_by_hand_is_made_again_by_the_next_commit() {
    let fleet = settings_in_dev().await;
    until_mode(&fleet, "dev", "dev").await;

    // The agent remembers for a minute that the namespace exists: the apply that finds it
    // gone fails, and the retry makes it again.
    fleet
        .kubectl("dev")
        .run(&["delete", "namespace", "app", "--wait=false"])
        .await
        .success();
    eventually("the namespace gone", WAIT, || async {
        fleet
            .get("dev", &["get", "namespace", "app"])
            .is_none()
            .then_some(())
    })
    .await;
    fleet.repo.write("app/settings.yaml", &settings("prod"));
    fleet.repo.commit("second");
    eventually(
        "the second commit applied in a new namespace",
        WAIT,
        || async {
            fleet.get("dev", &["get", "namespace", "app"])?;
            (mode(&fleet, "dev").as_deref() == Some("prod")).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clusters_namespace_is_made_with_it_before_any_bundle() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    // No GitRepo, no bundle: the controller makes the namespace for the Cluster itself.
    eventually("the cluster's namespace", WAIT, || async {
        fleet.get("local", &["get", "namespace", "cluster-fleet-local-dev"])
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_adding_an_object_someone_else_owns_is_refused_and_leaves_it_alone() {
    let fleet = settings_in_dev().await;
    until_mode(&fleet, "dev", "dev").await;
    fleet
        .kubectl("dev")
        .run(&[
            "create",
            "configmap",
            "other",
            "-n",
            "app",
            "--from-literal=owner=someone",
        ])
        .await
        .success();

    // The upgrade checks the objects the release it replaces did not apply.
    fleet.repo.write(
        "app/other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  owner: fleet\n",
    );
    fleet.repo.commit("take another's ConfigMap");
    let failure = fleet.deploy_failure("dev", "demo-app").await;
    assert_eq!(failure.reason.as_deref(), Some("NotOwned"));
    assert!(
        failure.message.as_deref().is_some_and(|m| m.contains(
            "ConfigMap app/other exists and is not managed by this bundle (set helm.takeOwnership to adopt it)"
        )),
        "{failure:?}"
    );
    let other = fleet
        .get("dev", &["get", "configmap", "other", "-n", "app"])
        .expect("the other ConfigMap");
    assert_eq!(other["data"]["owner"], "someone");
}
