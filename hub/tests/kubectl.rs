//! The hub driven by the real kubectl: every command's output is asserted.

mod common;

use common::rows;
use fleet_testkit::TestHub;
use serde_json::json;

const APP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web}
data:
  mode: fast
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_get_and_delete_round_trip() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");

    let run = kubectl.run_with(&["apply", "-f", "-"], APP).await.success();
    assert_eq!(
        run.stdout,
        "configmap/settings created\ndeployment.apps/web created\n"
    );
    let run = kubectl.run_with(&["apply", "-f", "-"], APP).await.success();
    assert_eq!(
        run.stdout,
        "configmap/settings unchanged\ndeployment.apps/web unchanged\n"
    );
    let changed = APP.replace("nginx:1.25", "nginx:1.26");
    let run = kubectl
        .run_with(&["apply", "-f", "-"], &changed)
        .await
        .success();
    assert_eq!(
        run.stdout,
        "configmap/settings unchanged\ndeployment.apps/web configured\n"
    );

    let deployment = kubectl
        .run(&["get", "deployment", "web", "-o", "json"])
        .await
        .success()
        .json();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    assert_eq!(deployment["metadata"]["generation"], 2);
    assert_eq!(deployment["metadata"]["namespace"], "default");
    assert!(deployment["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| u.len() == 36));

    let yaml = kubectl
        .run(&["get", "configmap", "settings", "-o", "yaml"])
        .await
        .success()
        .stdout;
    assert!(yaml.contains("data:\n  mode: fast\n"), "{yaml}");
    assert!(yaml.contains("kind: ConfigMap\n"), "{yaml}");

    let wide = kubectl
        .run(&["get", "configmap", "settings", "-o", "wide"])
        .await
        .success()
        .stdout;
    // kube-apiserver's ConfigMap printer: DATA counts the entries.
    assert!(
        wide.starts_with("NAME       DATA   AGE\nsettings   1      "),
        "{wide}"
    );
    let deployments = kubectl.run(&["get", "deployments"]).await.success().stdout;
    assert!(
        deployments.starts_with(
            "NAME   READY   UP-TO-DATE   AVAILABLE   AGE\nweb    0/2     0            0           "
        ),
        "{deployments}"
    );

    let names = kubectl
        .run(&["get", "cm,deploy", "-l", "app=web", "-o", "name"])
        .await
        .success()
        .stdout;
    assert_eq!(names, "configmap/settings\ndeployment.apps/web\n");
    let none = kubectl.run(&["get", "cm", "-l", "app=db"]).await.success();
    assert_eq!(none.stderr, "No resources found in default namespace.\n");

    let run = kubectl
        .run(&["delete", "deployment", "web"])
        .await
        .success();
    assert_eq!(run.stdout, "deployment.apps \"web\" deleted\n");
    let missing = kubectl.run(&["get", "deployment", "web"]).await.failure();
    assert_eq!(
        missing,
        "Error from server (NotFound): deployments.apps \"web\" not found\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_reports_conflicts_and_forces() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\ndata:\n  a: \"1\"\n  b: \"2\"\n";
    let run = kubectl
        .run_with(&["apply", "--server-side", "-f", "-"], config)
        .await
        .success();
    assert_eq!(run.stdout, "configmap/owned serverside-applied\n");

    let managed = kubectl
        .run(&["get", "cm", "owned", "-o", "json", "--show-managed-fields"])
        .await
        .success()
        .json();
    let entry = &managed["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["fieldsV1"], json!({"f:data": {"f:a": {}, "f:b": {}}}));

    kubectl
        .patch("cm owned", "merge", r#"{"data":{"a":"edited"}}"#)
        .await
        .success();
    let error = kubectl
        .run_with(&["apply", "--server-side", "-f", "-"], config)
        .await
        .failure();
    assert!(
        error.starts_with("error: Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1: .data.a\n"),
        "{error}"
    );
    kubectl
        .run_with(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            config,
        )
        .await
        .success();
    let fewer = config.replace("  b: \"2\"\n", "");
    kubectl
        .run_with(&["apply", "--server-side", "-f", "-"], &fewer)
        .await
        .success();
    let data = kubectl
        .run(&["get", "cm", "owned", "-o", "jsonpath={.data}"])
        .await
        .success()
        .stdout;
    assert_eq!(
        data, r#"{"a":"1"}"#,
        "b left the applied configuration, so it is removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_merge_and_strategic_patches() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    kubectl.run_with(&["apply", "-f", "-"], APP).await.success();

    let run = kubectl
        .patch(
            "deployment web",
            "json",
            r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#,
        )
        .await
        .success();
    assert_eq!(run.stdout, "deployment.apps/web patched\n");
    kubectl
        .patch(
            "deployment web",
            "merge",
            r#"{"metadata":{"labels":{"tier":"front"}}}"#,
        )
        .await
        .success();
    let sidecar = r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"},{"name":"web","image":"nginx:2"}]}}}}"#;
    kubectl
        .run(&["patch", "deployment", "web", "-p", sidecar])
        .await
        .success();
    let deployment = kubectl
        .run(&["get", "deployment", "web", "-o", "json"])
        .await
        .success()
        .json();
    assert_eq!(deployment["spec"]["replicas"], 5);
    assert_eq!(
        deployment["metadata"]["labels"],
        json!({"app": "web", "tier": "front"})
    );
    let containers = &deployment["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers.as_array().map(Vec::len),
        Some(2),
        "merged by name: {containers}"
    );
    assert_eq!(containers[0]["name"], "web");
    assert_eq!(containers[0]["image"], "nginx:2");
    // Kept by the merge, with the protocol Kubernetes defaults.
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );

    let error = kubectl
        .patch(
            "deployment web",
            "json",
            r#"[{"op":"test","path":"/spec/replicas","value":1}]"#,
        )
        .await
        .failure();
    assert!(error.contains("is invalid"), "{error}");
    let unchanged = kubectl
        .patch("deployment web", "merge", r#"{"spec":{"replicas":5}}"#)
        .await
        .success();
    assert_eq!(
        unchanged.stdout,
        "deployment.apps/web patched (no change)\n"
    );
}

async fn install_crds(hub: &TestHub) -> fleet_testkit::Kubectl {
    let kubectl = hub.kubectl("local");
    let crds = common::workspace().join("deploy/crds");
    let crds = crds.to_str().expect("utf-8 path");
    let run = kubectl.run(&["apply", "-f", crds]).await.success();
    assert_eq!(run.stdout.lines().count(), 13, "{}", run.stdout);
    kubectl
        .run(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=10s",
            "crd/gitrepos.fleet.cattle.io",
        ])
        .await
        .success();
    kubectl
        .run_with(
            &["apply", "-f", "-"],
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fleet-local\n",
        )
        .await
        .success();
    kubectl
}

const GITREPO: &str = "apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata:
  name: demo
  namespace: fleet-local
spec:
  repo: https://example.com/fleet-examples
  branch: main
  paths: [simple]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_crds_print_their_columns_and_explain() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = install_crds(&hub).await;

    let resources = kubectl
        .run(&["api-resources", "--api-group", "fleet.cattle.io"])
        .await
        .success()
        .stdout;
    let table = rows(&resources);
    let gitrepos = table
        .iter()
        .find(|r| r[0] == "gitrepos")
        .expect("gitrepos listed");
    assert_eq!(
        gitrepos[1..],
        ["fleet.cattle.io/v1alpha1", "true", "GitRepo"]
    );
    let clusters = table
        .iter()
        .find(|r| r[0] == "clusters")
        .expect("clusters listed");
    assert_eq!(clusters[2..], ["true", "Cluster"]);

    kubectl
        .run_with(&["apply", "-f", "-"], GITREPO)
        .await
        .success();
    let status = r#"{"status":{"commit":"4f2a9c1","display":{"readyBundleDeployments":"1/1"},"conditions":[{"type":"Ready","status":"True","message":"all ready"}]}}"#;
    kubectl
        .patch(
            "gitrepo demo -n fleet-local --subresource=status",
            "merge",
            status,
        )
        .await
        .success();
    let listing = kubectl
        .run(&["get", "gitrepos", "-A"])
        .await
        .success()
        .stdout;
    let mut lines = listing.lines();
    let header: Vec<&str> = lines.next().expect("header").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAMESPACE",
            "NAME",
            "REPO",
            "COMMIT",
            "BUNDLEDEPLOYMENTS-READY",
            "STATUS"
        ]
    );
    let row: Vec<&str> = lines.next().expect("row").split_whitespace().collect();
    assert_eq!(
        row,
        [
            "fleet-local",
            "demo",
            "https://example.com/fleet-examples",
            "4f2a9c1",
            "1/1",
            "all",
            "ready"
        ]
    );

    let everything = kubectl
        .run(&["get", "fleet", "-A", "-o", "name"])
        .await
        .success()
        .stdout;
    assert_eq!(everything, "gitrepo.fleet.cattle.io/demo\n");

    let explained = kubectl
        .run(&["explain", "gitrepo.spec.repo"])
        .await
        .success()
        .stdout;
    assert!(explained.contains("KIND:       GitRepo"), "{explained}");
    assert!(explained.contains("FIELD: repo <string>"), "{explained}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_are_validated_and_the_status_is_separate() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = install_crds(&hub).await;
    let bad = GITREPO.replace("paths: [simple]", "paths: simple");
    let error = kubectl
        .run_with(&["apply", "-f", "-"], &bad)
        .await
        .failure();
    // GitRepo's schema holds validation rules (its durations'), which kube-apiserver
    // says it left unchecked on an object invalid otherwise.
    assert_eq!(
        error,
        "The GitRepo \"demo\" is invalid: \n* spec.paths: Invalid value: \"string\": \
         spec.paths in body must be of type array: \"string\"\n* <nil>: Invalid value: null: \
         some validation rules were not checked because the object was invalid; correct the \
         existing errors to complete validation\n"
    );

    kubectl
        .run_with(&["apply", "-f", "-"], GITREPO)
        .await
        .success();
    let with_status = format!("{GITREPO}status:\n  commit: forged\n");
    kubectl
        .run_with(&["apply", "-f", "-"], &with_status)
        .await
        .success();
    let commit = kubectl
        .run(&[
            "get",
            "gitrepo",
            "demo",
            "-n",
            "fleet-local",
            "-o",
            "jsonpath={.status.commit}",
        ])
        .await
        .success()
        .stdout;
    assert_eq!(
        commit, "",
        "status is written through the status subresource only"
    );
    let generation = kubectl
        .run(&[
            "get",
            "gitrepo",
            "demo",
            "-n",
            "fleet-local",
            "-o",
            "jsonpath={.metadata.generation}",
        ])
        .await
        .success()
        .stdout;
    assert_eq!(generation, "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_and_wait_see_changes() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = install_crds(&hub).await;
    kubectl
        .run_with(&["apply", "-f", "-"], GITREPO)
        .await
        .success();

    // The watch starts with the namespace's kube-root-ca.crt, as on any cluster.
    let watcher = kubectl.spawn(&[
        "get",
        "configmaps",
        "-w",
        "--request-timeout=4s",
        "-o",
        "name",
    ]);
    let waiter = kubectl.spawn(&[
        "wait",
        "--for=condition=Ready",
        "gitrepo/demo",
        "-n",
        "fleet-local",
        "--timeout=10s",
    ]);
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    kubectl
        .run_with(
            &["apply", "-f", "-"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seen\n",
        )
        .await
        .success();
    kubectl
        .run(&["label", "configmap", "seen", "step=two"])
        .await
        .success();
    kubectl
        .run(&["delete", "configmap", "seen"])
        .await
        .success();
    let ready = r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#;
    kubectl
        .patch(
            "gitrepo demo -n fleet-local --subresource=status",
            "merge",
            ready,
        )
        .await
        .success();

    let waited = tokio::task::spawn_blocking(move || waiter.wait_with_output().expect("wait ends"))
        .await
        .expect("join");
    assert!(waited.status.success());
    assert_eq!(
        String::from_utf8_lossy(&waited.stdout),
        "gitrepo.fleet.cattle.io/demo condition met\n"
    );
    let watched =
        tokio::task::spawn_blocking(move || watcher.wait_with_output().expect("watch ends"))
            .await
            .expect("join");
    let lines = String::from_utf8_lossy(&watched.stdout).into_owned();
    assert_eq!(
        lines, "configmap/kube-root-ca.crt\nconfigmap/seen\nconfigmap/seen\nconfigmap/seen\n",
        "added, modified, deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_owners_and_namespaces_clean_up() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    kubectl
        .run_with(
            &["apply", "-f", "-"],
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n",
        )
        .await
        .success();
    kubectl
        .run_with(&["apply", "-n", "apps", "-f", "-"], APP)
        .await
        .success();
    let uid = kubectl
        .run(&[
            "get",
            "deployment",
            "web",
            "-n",
            "apps",
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .await
        .success()
        .stdout;
    let owned = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n  ownerReferences:\n  - apiVersion: apps/v1\n    kind: Deployment\n    name: web\n    uid: {uid}\n"
    );
    kubectl
        .run_with(&["apply", "-n", "apps", "-f", "-"], &owned)
        .await
        .success();
    let held = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n";
    kubectl
        .run_with(&["apply", "-n", "apps", "-f", "-"], held)
        .await
        .success();

    kubectl
        .run(&["delete", "deployment", "web", "-n", "apps"])
        .await
        .success();
    let left = kubectl
        .run(&["get", "cm", "-n", "apps", "-o", "name"])
        .await
        .success()
        .stdout;
    assert_eq!(
        left, "configmap/held\nconfigmap/kube-root-ca.crt\nconfigmap/settings\n",
        "the owned child went with its owner"
    );

    kubectl
        .run(&["delete", "cm", "held", "-n", "apps", "--wait=false"])
        .await
        .success();
    let deleting = kubectl
        .run(&["get", "cm", "held", "-n", "apps", "-o", "json"])
        .await
        .success()
        .json();
    assert!(deleting["metadata"]["deletionTimestamp"].is_string());
    kubectl
        .patch(
            "cm held -n apps",
            "json",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        )
        .await
        .success();
    kubectl
        .run(&["get", "cm", "held", "-n", "apps"])
        .await
        .failure();

    let run = kubectl
        .run(&["delete", "namespace", "apps", "--timeout=10s"])
        .await
        .success();
    assert_eq!(run.stdout, "namespace \"apps\" deleted\n");
    let error = kubectl
        .run(&["get", "cm", "settings", "-n", "apps"])
        .await
        .failure();
    assert!(error.contains("not found"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_create_commands_send_protobuf_and_work() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let run = kubectl
        .run(&["create", "namespace", "team-a"])
        .await
        .success();
    assert_eq!(run.stdout, "namespace/team-a created\n");
    kubectl
        .run(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "--from-literal=mode=fast",
            "--from-literal=empty=",
        ])
        .await
        .success();
    kubectl
        .run(&[
            "create",
            "secret",
            "generic",
            "login",
            "-n",
            "team-a",
            "--from-literal=password=hunter2",
        ])
        .await
        .success();
    kubectl
        .run(&["create", "serviceaccount", "agent", "-n", "team-a"])
        .await
        .success();
    let data = kubectl
        .run(&["get", "cm", "settings", "-n", "team-a", "-o", "json"])
        .await
        .success()
        .json();
    assert_eq!(data["data"], json!({"mode": "fast", "empty": ""}));
    let secret = kubectl
        .run(&["get", "secret", "login", "-n", "team-a", "-o", "json"])
        .await
        .success()
        .json();
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    assert_eq!(secret["type"], "Opaque");
    let namespace = kubectl
        .run(&["get", "ns", "team-a", "-o", "json"])
        .await
        .success()
        .json();
    assert_eq!(namespace["status"]["phase"], "Active");
    assert!(
        namespace["metadata"].get("generateName").is_none(),
        "zero values are unset: {namespace}"
    );

    let error = kubectl
        .run(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "-n",
            "team-a",
        ])
        .await
        .failure();
    assert!(
        error.contains("Deployment (apps/v1) is not readable as protobuf here"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_string_data_is_stored_as_data() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  username: fleet\n  password: s3cret\ndata:\n  password: b2xk\n";
    kubectl
        .run_with(&["apply", "-f", "-"], secret)
        .await
        .success();
    let stored = kubectl
        .run(&["get", "secret", "creds", "-o", "json"])
        .await
        .success()
        .json();
    // base64 of "fleet" and "s3cret" (as `base64` prints them); stringData wins over data.
    assert_eq!(stored["data"]["username"], "ZmxlZXQ=");
    assert_eq!(stored["data"]["password"], "czNjcmV0");
    assert!(stored.get("stringData").is_none());
    assert_eq!(stored["type"], "Opaque");
}

/// `kubectl get --raw /metrics` reads the requests a logical cluster has served and the
/// objects it holds, under kube-apiserver's metric names; another cluster's are not in
/// them, and a service account may not read them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_clusters_requests_and_objects_for_its_admin() {
    let hub = TestHub::start(&["local", "dev"]).await;
    let kubectl = hub.kubectl("local");
    kubectl.run_with(&["apply", "-f", "-"], APP).await.success();
    for _ in 0..3 {
        kubectl.run(&["get", "configmaps"]).await.success();
    }
    let dev = hub.kubectl("dev");
    for name in ["one", "two"] {
        dev.run(&["create", "configmap", name]).await.success();
    }

    let metrics = kubectl
        .run(&["get", "--raw", "/metrics"])
        .await
        .success()
        .stdout;
    // kubectl's table lists and the apply's look-ups, as kubectl made them.
    let listed = sample(
        &metrics,
        "apiserver_request_total{verb=\"LIST\",resource=\"configmaps\"}",
    );
    assert!(listed.is_some_and(|n| n >= 3), "{metrics}");
    let patched_or_created = ["POST", "PATCH"].iter().any(|verb| {
        sample(
            &metrics,
            &format!("apiserver_request_total{{verb=\"{verb}\",resource=\"deployments\"}}"),
        )
        .is_some()
    });
    assert!(patched_or_created, "{metrics}");
    // `local` holds the settings ConfigMap and each namespace's root CA ConfigMap, if any;
    // `dev`'s two ConfigMaps are not counted here.
    let config_maps = sample(
        &metrics,
        "apiserver_storage_objects{resource=\"configmaps\"}",
    );
    let deployments = sample(
        &metrics,
        "apiserver_storage_objects{resource=\"deployments.apps\"}",
    );
    assert_eq!(deployments, Some(1), "{metrics}");
    // `kubectl get --raw` sends its path as given, without the kubeconfig's
    // `/clusters/dev` prefix: the hub answers from the cluster of the caller's token.
    let dev_metrics = dev
        .run(&["get", "--raw", "/metrics"])
        .await
        .success()
        .stdout;
    let dev_config_maps = sample(
        &dev_metrics,
        "apiserver_storage_objects{resource=\"configmaps\"}",
    );
    assert_eq!(
        dev_config_maps.zip(config_maps).map(|(dev, local)| dev - local),
        Some(1),
        "dev holds one ConfigMap more than local (two created against one applied):\n{dev_metrics}\n{metrics}"
    );
    assert!(
        !dev_metrics.contains("resource=\"deployments\""),
        "{dev_metrics}"
    );

    kubectl
        .run(&["create", "serviceaccount", "watcher"])
        .await
        .success();
    let token = kubectl
        .run(&["create", "token", "watcher"])
        .await
        .success()
        .stdout;
    let refused = kubectl
        .run(&[
            &format!("--token={}", token.trim()),
            "get",
            "--raw",
            "/metrics",
        ])
        .await
        .failure();
    assert!(
        refused.contains("forbidden") && refused.contains("/metrics"),
        "{refused}"
    );
}

/// The value of the sample `series` (a metric with its labels) in the metrics `text`.
fn sample(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

/// Restated from Rancher Fleet v0.16
/// `integrationtests/controller/durationvalidation/duration_validation_test.go`: the CRDs
/// refuse durations Go cannot read (days, weeks, no unit, negative, beyond what a Go
/// duration holds) with Fleet's message, and accept Go's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_durations_are_checked_as_fleets_crds_check_them() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = install_crds(&hub).await;
    let object = |kind: &str, field: &str, value: &str| {
        let spec = match kind {
            "GitRepo" => format!("  repo: https://example.com/r\n  {field}: \"{value}\"\n"),
            _ => format!("  {field}: \"{value}\"\n"),
        };
        format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: {kind}\nmetadata:\n  generateName: dv-\n  namespace: fleet-local\nspec:\n{spec}"
        )
    };
    let cases = [
        ("GitRepo", "pollingInterval"),
        ("GitRepo", "imageScanInterval"),
        ("ClusterRegistrationToken", "ttl"),
    ];
    for (kind, field) in cases {
        for invalid in ["1d", "1w", "1y", "7d12h", "abc", "5x", "-1h", "5000000h"] {
            let refused = kubectl
                .run_with(&["create", "-f", "-"], &object(kind, field, invalid))
                .await
                .failure();
            assert!(
                refused.contains("must be a valid Go duration"),
                "{kind}.{field} {invalid}: {refused}"
            );
        }
        for valid in [
            "15s", "5m", "2h", "1h30m", "300ms", "1.5h", "100µs", "0", "0s",
        ] {
            kubectl
                .run_with(&["create", "-f", "-"], &object(kind, field, valid))
                .await
                .success();
        }
    }
}

/// A Cluster written with the agent fields of Fleet's CRD (`agentEnvVars`,
/// `agentTolerations`, `agentAffinity`, `agentResources`, `hostNetwork`,
/// `agentSchedulingCustomization`, `agentPullSecrets`) is accepted and kept as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_fleets_agent_fields_is_kept_as_written() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = install_crds(&hub).await;
    let cluster = r#"apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata:
  name: edge
  namespace: fleet-local
spec:
  agentEnvVars:
  - name: HTTPS_PROXY
    value: http://proxy:3128
  agentTolerations:
  - key: node-role.kubernetes.io/control-plane
    operator: Exists
    effect: NoSchedule
  agentAffinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference:
          matchExpressions:
          - {key: fleet.cattle.io/agent, operator: In, values: ["true"]}
  agentResources:
    limits: {cpu: 500m, memory: 256Mi}
  hostNetwork: true
  agentSchedulingCustomization:
    priorityClass: {value: 1000000000, preemptionPolicy: PreemptLowerPriority}
    podDisruptionBudget: {maxUnavailable: "1"}
  agentPullSecrets:
  - name: registry
"#;
    kubectl
        .run_with(&["apply", "-f", "-"], cluster)
        .await
        .success();
    let kept = kubectl
        .run(&["get", "cluster", "edge", "-n", "fleet-local", "-o", "json"])
        .await
        .success()
        .json();
    let spec = &kept["spec"];
    assert_eq!(
        spec["agentEnvVars"][0]["value"], "http://proxy:3128",
        "{spec}"
    );
    assert_eq!(spec["agentTolerations"][0]["effect"], "NoSchedule");
    assert_eq!(
        spec["agentAffinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
            ["weight"],
        1
    );
    assert_eq!(spec["agentResources"]["limits"]["memory"], "256Mi");
    assert_eq!(spec["hostNetwork"], true);
    assert_eq!(
        spec["agentSchedulingCustomization"]["podDisruptionBudget"]["maxUnavailable"],
        "1"
    );
    assert_eq!(spec["agentPullSecrets"][0]["name"], "registry");
}
