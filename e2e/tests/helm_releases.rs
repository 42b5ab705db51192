//! Helm bundles deployed as Helm releases, judged by real Helm 4 and Helm 3 reading the
//! member cluster: `helm list`, `history`, `status`, `get manifest` and `get values` show
//! fleet-rs's releases; a pre-install hook Job runs before the chart's Deployment and is
//! deleted as its policy says; a failing hook is reported as such; the chart's output goes
//! through the bundle's kustomization; and a release Helm made is taken over in place.
//! The member has no kubelet: the workload simulator completes Jobs and rolls out
//! Deployments.

mod common;

use std::time::Duration;

use common::{Fleet, WAIT};
use fleet_testkit::{client_for, eventually, helm, real_tool};
use serde_json::{json, Value};

/// The release: the bundle `web` of the GitRepo `demo`, as Fleet names it.
const RELEASE: &str = "demo-web";
/// Where it goes.
const NAMESPACE: &str = "web";

const CHART_YAML: &str =
    "apiVersion: v2\nname: web\nversion: 1.2.3\nappVersion: \"4.5\"\ndescription: a web app\n";
const VALUES: &str = "replicas: 1\nmessage: chart-default\nfailHook: false\napp: web\nhookEvents: pre-install,pre-upgrade\n";
const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Values.app }}}
  template:
    metadata:
      labels: {app: {{ .Values.app }}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
"#;
const CONFIGMAP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  message: {{ .Values.message | quote }}
"#;
const HOOK: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: {{ .Values.hookEvents }}
    helm.sh/hook-weight: "-1"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
    {{- if .Values.failHook }}
    simulate.fleet-rs.io/fail: "true"
    {{- end }}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: busybox:1.36
        command: ["true"]
"#;
/// The kustomization Fleet runs over the chart's output: it adds a key to the ConfigMap.
const OVERLAY: &str = r#"patches:
- target:
    kind: ConfigMap
  patch: |-
    - op: add
      path: /data/patched
      value: by-kustomize
"#;

fn fleet_yaml(message: &str, fail_hook: bool) -> String {
    format!(
        "defaultNamespace: {NAMESPACE}\nhelm:\n  chart: chart\n  values:\n    message: {message}\n    failHook: {fail_hook}\nkustomize:\n  dir: overlay\n"
    )
}

/// Writes the chart bundle `web/` into the test repository and commits it.
fn commit_chart(fleet: &Fleet, message: &str, fail_hook: bool) {
    fleet
        .repo
        .write("web/fleet.yaml", &fleet_yaml(message, fail_hook))
        .write("web/chart/Chart.yaml", CHART_YAML)
        .write("web/chart/values.yaml", VALUES)
        .write("web/chart/templates/deployment.yaml", DEPLOYMENT)
        .write("web/chart/templates/configmap.yaml", CONFIGMAP)
        .write("web/chart/templates/hook.yaml", HOOK)
        .write(
            "web/chart/templates/NOTES.txt",
            "{{ .Release.Name }} says {{ .Values.message }}.\n",
        )
        .write("web/overlay/kustomization.yaml", OVERLAY);
    fleet.repo.commit(message);
}

/// A fleet with one member `dev` whose workloads the simulator runs.
async fn start() -> Fleet {
    let mut fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let member = client_for(&fleet.hub.kubeconfig("dev")).await;
    fleet
        .running
        .run_simulator(member, Duration::from_millis(300));
    fleet
}

/// Runs a Helm command against the member `dev`, as JSON.
fn helm_json(fleet: &Fleet, tool: &str, args: &[&str]) -> Value {
    let home = fleet.hub.dir().join(format!("helm-home-{tool}"));
    let text = helm(&real_tool(tool), &fleet.hub.kubeconfig("dev"), &home, args);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{tool} {args:?} printed JSON ({e}): {text}"))
}

fn helm_text(fleet: &Fleet, tool: &str, args: &[&str]) -> String {
    let home = fleet.hub.dir().join(format!("helm-home-{tool}"));
    helm(&real_tool(tool), &fleet.hub.kubeconfig("dev"), &home, args)
}

/// The release's revisions as `helm history` shows them: `(revision, status)`.
fn history(fleet: &Fleet, tool: &str) -> Vec<(u64, String)> {
    let shown = helm_json(
        fleet,
        tool,
        &["history", RELEASE, "-n", NAMESPACE, "-o", "json"],
    );
    shown
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["revision"].as_u64().unwrap_or(0),
                r["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Waits until the member's BundleDeployment reports `release` applied and ready.
async fn wait_release(fleet: &Fleet, release: &str) {
    let wanted = format!("{NAMESPACE}/{RELEASE}:{release}");
    let deployments = fleet.deployments("dev");
    eventually(&format!("release {wanted} ready"), WAIT, || async {
        let status = deployments.get(RELEASE).await.ok()?.status?;
        (status.release.as_deref() == Some(wanted.as_str()) && status.ready).then_some(())
    })
    .await;
}

fn timestamp(text: &str) -> jiff::Timestamp {
    text.parse()
        .unwrap_or_else(|e| panic!("`{text}` is a timestamp: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_reads_the_releases_the_agent_records_and_hooks_run_first() {
    let fleet = start().await;
    commit_chart(&fleet, "first", false);
    fleet
        .gitrepo(json!({"paths": ["web"], "targets": [{"clusterSelector": {}}]}))
        .await;
    wait_release(&fleet, "1").await;

    for tool in ["helm4", "helm3"] {
        let listed = helm_json(&fleet, tool, &["list", "-A", "-o", "json"]);
        let release = listed
            .as_array()
            .and_then(|l| l.iter().find(|r| r["name"] == RELEASE))
            .unwrap_or_else(|| panic!("{tool} list shows {RELEASE}: {listed}"));
        assert_eq!(release["namespace"], NAMESPACE, "{tool}");
        assert_eq!(release["chart"], "web-1.2.3", "{tool}");
        assert_eq!(release["app_version"], "4.5", "{tool}");
        assert_eq!(release["revision"], "1", "{tool}");
        assert_eq!(release["status"], "deployed", "{tool}");

        let values = helm_json(
            &fleet,
            tool,
            &["get", "values", RELEASE, "-n", NAMESPACE, "-o", "json"],
        );
        assert_eq!(
            values,
            json!({"message": "first", "failHook": false}),
            "{tool}"
        );
        let manifest = helm_text(&fleet, tool, &["get", "manifest", RELEASE, "-n", NAMESPACE]);
        assert!(manifest.contains("kind: Deployment"), "{tool}: {manifest}");
        assert!(
            manifest.contains("patched: by-kustomize"),
            "{tool}: {manifest}"
        );
        let status = helm_json(
            &fleet,
            tool,
            &["status", RELEASE, "-n", NAMESPACE, "-o", "json"],
        );
        assert_eq!(status["info"]["status"], "deployed", "{tool}");
        assert_eq!(status["info"]["description"], "Install complete", "{tool}");
        assert_eq!(
            status["info"]["notes"], "demo-web says first.\n",
            "{tool}: NOTES.txt"
        );
    }

    // The chart's output went through the overlay, and every object carries Helm's marks.
    let config_map = settings(&fleet);
    assert_eq!(config_map["data"]["message"], "first");
    assert_eq!(config_map["data"]["patched"], "by-kustomize");
    assert_eq!(
        config_map["metadata"]["annotations"]["meta.helm.sh/release-name"],
        RELEASE
    );
    assert_eq!(
        config_map["metadata"]["annotations"]["meta.helm.sh/release-namespace"],
        NAMESPACE
    );
    assert_eq!(
        config_map["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "Helm"
    );
    // Fleet's object-set marks: the set id `default-<deployment>` and its SHA-1 (Python's
    // `hashlib.sha1(b"default-demo-web").hexdigest()`).
    assert_eq!(
        config_map["metadata"]["annotations"]["objectset.rio.cattle.io/id"],
        "default-demo-web"
    );
    assert_eq!(
        config_map["metadata"]["labels"]["objectset.rio.cattle.io/hash"],
        "5a0fcdd53a2fd73146a023ba07d97885bae82bf2"
    );

    // The pre-install hook ran to completion before the Deployment was created, then was
    // deleted under `hook-succeeded`.
    let status = helm_json(
        &fleet,
        "helm4",
        &["status", RELEASE, "-n", NAMESPACE, "-o", "json"],
    );
    let hook = &status["hooks"][0];
    assert_eq!(hook["name"], "demo-web-migrate");
    assert_eq!(hook["last_run"]["phase"], "Succeeded");
    let deployment = fleet
        .get("dev", &["get", "deployment", RELEASE, "-n", NAMESPACE])
        .expect("the Deployment");
    let created = timestamp(
        deployment["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or_default(),
    );
    let hook_done = timestamp(
        hook["last_run"]["completed_at"]
            .as_str()
            .unwrap_or_default(),
    );
    let hook_started = timestamp(hook["last_run"]["started_at"].as_str().unwrap_or_default());
    assert!(
        hook_done.as_second() <= created.as_second(),
        "the hook finished ({hook_done}) before the Deployment was created ({created})"
    );
    assert!(
        hook_done.duration_since(hook_started) >= jiff::SignedDuration::from_millis(250),
        "the agent waited for the Job to complete"
    );
    assert!(
        fleet
            .get("dev", &["get", "job", "demo-web-migrate", "-n", NAMESPACE])
            .is_none(),
        "the succeeded hook Job is deleted"
    );

    // A commit is a second revision; Fleet's default history keeps two.
    commit_chart(&fleet, "second", false);
    wait_release(&fleet, "2").await;
    for tool in ["helm4", "helm3"] {
        assert_eq!(
            history(&fleet, tool),
            [(1, "superseded".to_string()), (2, "deployed".to_string())],
            "{tool}"
        );
    }
    commit_chart(&fleet, "third", false);
    wait_release(&fleet, "3").await;
    assert_eq!(
        history(&fleet, "helm4"),
        [(2, "superseded".to_string()), (3, "deployed".to_string())],
        "maxHistory 2 keeps the last two"
    );
    let values = helm_json(
        &fleet,
        "helm3",
        &["get", "values", RELEASE, "-n", NAMESPACE, "-o", "json"],
    );
    assert_eq!(values["message"], "third");

    // A failing pre-upgrade hook: nothing is applied, the status says it was the hook.
    commit_chart(&fleet, "broken", true);
    let deployed = fleet.deploy_failure("dev", RELEASE).await;
    assert_eq!(deployed.reason.as_deref(), Some("HookFailed"));
    let message = deployed.message.unwrap_or_default();
    assert!(
        message.contains("pre-upgrade hook Job demo-web-migrate")
            && message.contains("BackoffLimitExceeded"),
        "{message}"
    );
    assert_eq!(
        settings_message(&fleet),
        "third",
        "the last good deployment stays"
    );
    let shown = history(&fleet, "helm4");
    assert_eq!(
        shown.last().map(|(_, s)| s.as_str()),
        Some("failed"),
        "{shown:?}"
    );
    assert!(
        shown.iter().any(|(r, s)| *r == 3 && s == "deployed"),
        "{shown:?}"
    );
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_helm_installed_is_taken_over_in_place() {
    // Rancher Fleet deployed this chart with Helm under the bundle's name: here real Helm
    // installs it, as Fleet's agent would have, before fleet-rs is pointed at the repo.
    let fleet = start().await;
    commit_chart(&fleet, "from-rancher", false);
    let chart = fleet.repo.path().join("web/chart");
    helm_text(
        &fleet,
        "helm4",
        &[
            "install",
            RELEASE,
            &chart.to_string_lossy(),
            "-n",
            NAMESPACE,
            "--create-namespace",
            "--no-hooks",
            "--set",
            "message=from-rancher",
        ],
    );
    let before = fleet
        .get("dev", &["get", "deployment", RELEASE, "-n", NAMESPACE])
        .expect("the Deployment Helm made");
    fleet
        .gitrepo(json!({"paths": ["web"], "targets": [{"clusterSelector": {}}]}))
        .await;
    wait_release(&fleet, "2").await;
    let after = fleet
        .get("dev", &["get", "deployment", RELEASE, "-n", NAMESPACE])
        .expect("the Deployment");
    assert_eq!(
        after["metadata"]["uid"], before["metadata"]["uid"],
        "taken over in place, not recreated"
    );
    assert_eq!(
        history(&fleet, "helm3"),
        [(1, "superseded".to_string()), (2, "deployed".to_string())]
    );
    let status = helm_json(
        &fleet,
        "helm4",
        &["status", RELEASE, "-n", NAMESPACE, "-o", "json"],
    );
    assert_eq!(status["info"]["description"], "Upgrade complete");
    fleet.stop().await;
}

const PROBE_CONFIGMAP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  secretMessage: {{ .Values.secretMessage | quote }}
  inline: {{ .Values.inline | quote }}
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
  servesDeployments: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
  {{- $existing := lookup "v1" "ConfigMap" "probe" "preexisting" }}
  lookedUp: {{ dig "data" "color" "none" $existing | quote }}
"#;

const PROBE_FLEET_YAML: &str = "defaultNamespace: probe
helm:
  chart: chart
  values:
    inline: from-fleet-yaml
    secretMessage: overridden-by-the-secret
  valuesFrom:
  - secretKeyRef:
      name: probe-values
      key: values.yaml
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_from_lookup_and_capabilities_come_from_the_member_cluster() {
    let fleet = start().await;
    // What only the member holds: a Secret of values, and an object the chart looks up.
    let member = fleet.hub.hub.kubectl("dev");
    member
        .run_blocking(&["create", "namespace", "probe"])
        .success();
    member
        .run_blocking(&[
            "create",
            "secret",
            "generic",
            "probe-values",
            "-n",
            "probe",
            "--from-literal=values.yaml=secretMessage: from-the-member-secret\n",
        ])
        .success();
    member
        .run_blocking(&[
            "create",
            "configmap",
            "preexisting",
            "-n",
            "probe",
            "--from-literal=color=teal",
        ])
        .success();
    fleet
        .repo
        .write("probe/fleet.yaml", PROBE_FLEET_YAML)
        .write(
            "probe/chart/Chart.yaml",
            "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
        )
        .write("probe/chart/templates/configmap.yaml", PROBE_CONFIGMAP);
    fleet.repo.commit("probe");
    fleet
        .gitrepo(json!({"paths": ["probe"], "targets": [{"clusterSelector": {}}]}))
        .await;
    let deployments = fleet.deployments("dev");
    eventually("the probe release ready", WAIT, || async {
        let status = deployments.get("demo-probe").await.ok()?.status?;
        (status.release.as_deref() == Some("probe/demo-probe:1") && status.ready).then_some(())
    })
    .await;

    let probe = fleet
        .get("dev", &["get", "configmap", "probe", "-n", "probe"])
        .expect("the ConfigMap");
    assert_eq!(probe["data"]["secretMessage"], "from-the-member-secret");
    assert_eq!(probe["data"]["inline"], "from-fleet-yaml");
    assert_eq!(probe["data"]["lookedUp"], "teal");
    assert_eq!(probe["data"]["servesDeployments"], "true");
    let version = fleet
        .get("dev", &["version"])
        .map(|v| v["serverVersion"]["gitVersion"].clone())
        .expect("the member's version");
    assert_eq!(probe["data"]["kubeVersion"], version);

    // The member's values never went to the hub: the Content holds the bundle's files.
    let contents = fleet
        .get("local", &["get", "contents.fleet.cattle.io"])
        .expect("Contents");
    for item in contents["items"].as_array().into_iter().flatten() {
        let content: fleet_api::Content = serde_json::from_value(item.clone()).expect("a Content");
        let payload = content.unpack().expect("unpacks");
        let text = serde_json::to_string(&payload.resources).unwrap_or_default();
        assert!(!text.contains("from-the-member-secret"));
        if let Some(render) = &payload.member_render {
            let text = serde_json::to_string(render).unwrap_or_default();
            assert!(!text.contains("from-the-member-secret"));
        }
    }
    let status = helm_json(
        &fleet,
        "helm4",
        &["status", "demo-probe", "-n", "probe", "-o", "json"],
    );
    assert_eq!(status["info"]["status"], "deployed");
    fleet.stop().await;
}

const GOODBYE_HOOK: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-goodbye
  annotations:
    helm.sh/hook: pre-delete
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: goodbye
        image: busybox:1.36
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_gitrepo_uninstalls_with_hooks_unless_resources_are_kept() {
    let fleet = start().await;
    commit_chart(&fleet, "first", false);
    fleet
        .repo
        .write("web/chart/templates/goodbye.yaml", GOODBYE_HOOK)
        .write("plain/fleet.yaml", "defaultNamespace: plain\n")
        .write(
            "plain/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  k: v\n",
        );
    fleet.repo.commit("a pre-delete hook and a plain bundle");
    let spec = json!({"paths": ["web", "plain"], "targets": [{"clusterSelector": {}}]});
    fleet.gitrepo(spec.clone()).await;
    wait_release(&fleet, "1").await;
    let deployments = fleet.deployments("dev");
    eventually("the plain bundle ready", WAIT, || async {
        let status = deployments.get("demo-plain").await.ok()?.status?;
        status.ready.then_some(())
    })
    .await;

    // Every bundle is a release, as in Fleet: the plain one's chart is named after it.
    let listed = helm_json(&fleet, "helm3", &["list", "-A", "-o", "json"]);
    let plain = listed
        .as_array()
        .and_then(|l| l.iter().find(|r| r["name"] == "demo-plain"))
        .unwrap_or_else(|| panic!("the plain bundle's release: {listed}"));
    assert_eq!(plain["namespace"], "plain");
    assert!(
        plain["chart"]
            .as_str()
            .is_some_and(|c| c.starts_with("demo-plain-v0.0.0+s-")),
        "{plain}"
    );

    fleet.delete_gitrepo().await;
    for (kind, name, namespace) in [
        ("deployment", RELEASE, NAMESPACE),
        ("configmap", "demo-web-settings", NAMESPACE),
        ("configmap", "plain", "plain"),
    ] {
        assert!(
            fleet
                .get("dev", &["get", kind, name, "-n", namespace])
                .is_none(),
            "{kind} {namespace}/{name} is uninstalled"
        );
    }
    let listed = helm_json(&fleet, "helm4", &["list", "-A", "-o", "json"]);
    assert_eq!(listed, json!([]), "no release is left");
    // The pre-delete hook ran (it has no hook-succeeded policy, so it stays, complete).
    let goodbye = fleet
        .get("dev", &["get", "job", "demo-web-goodbye", "-n", NAMESPACE])
        .expect("the pre-delete hook Job");
    assert!(
        goodbye["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Complete")),
        "{goodbye}"
    );

    // keepResources: the release goes, the objects stay.
    let mut kept = spec;
    kept["keepResources"] = json!(true);
    fleet.gitrepo(kept).await;
    wait_release(&fleet, "1").await;
    fleet.delete_gitrepo().await;
    assert!(fleet
        .get(
            "dev",
            &["get", "configmap", "demo-web-settings", "-n", NAMESPACE]
        )
        .is_some());
    assert!(fleet
        .get("dev", &["get", "configmap", "plain", "-n", "plain"])
        .is_some());
    let listed = helm_json(&fleet, "helm4", &["list", "-A", "-o", "json"]);
    assert_eq!(listed, json!([]), "the release records are removed");
    fleet.stop().await;
}

/// Commits `web/fleet.yaml` alone.
fn commit_fleet_yaml(fleet: &Fleet, text: &str, message: &str) {
    fleet.repo.write("web/fleet.yaml", text);
    fleet.repo.commit(message);
}

/// The chart's ConfigMap in the member.
fn settings(fleet: &Fleet) -> Value {
    fleet
        .get(
            "dev",
            &["get", "configmap", "demo-web-settings", "-n", NAMESPACE],
        )
        .expect("the ConfigMap")
}

fn settings_message(fleet: &Fleet) -> Value {
    settings(fleet)["data"]["message"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_rolls_a_failed_upgrade_back_and_force_replaces_what_cannot_change() {
    let fleet = start().await;
    commit_chart(&fleet, "first", false);
    fleet
        .gitrepo(json!({"paths": ["web"], "targets": [{"clusterSelector": {}}]}))
        .await;
    wait_release(&fleet, "1").await;

    // A post-upgrade hook fails after the upgrade changed the ConfigMap: `atomic` puts the
    // first revision back.
    let base = format!("defaultNamespace: {NAMESPACE}\nkustomize:\n  dir: overlay\n");
    commit_fleet_yaml(
        &fleet,
        &format!("{base}helm:\n  chart: chart\n  atomic: true\n  values:\n    message: second\n    failHook: true\n    hookEvents: post-upgrade\n"),
        "a failing post-upgrade hook",
    );
    let failed = fleet.deploy_failure("dev", RELEASE).await;
    assert_eq!(failed.reason.as_deref(), Some("RolledBack"), "{failed:?}");
    let message = failed.message.unwrap_or_default();
    assert!(
        message.contains("has been rolled back due to atomic being set"),
        "{message}"
    );
    assert_eq!(
        settings_message(&fleet),
        "first",
        "the first revision's objects are back"
    );
    let status = helm_json(
        &fleet,
        "helm4",
        &["status", RELEASE, "-n", NAMESPACE, "-o", "json"],
    );
    assert_eq!(status["info"]["status"], "deployed");
    assert_eq!(status["info"]["description"], "Rollback to 1");

    // The selector of a Deployment cannot change in place: refused without `force`...
    commit_fleet_yaml(
        &fleet,
        &format!("{base}helm:\n  chart: chart\n  values:\n    message: third\n    app: web2\n"),
        "a new selector",
    );
    let before = fleet
        .get("dev", &["get", "deployment", RELEASE, "-n", NAMESPACE])
        .expect("the Deployment");
    let refused = eventually("the immutable selector refused", WAIT, || async {
        let condition = fleet.deploy_failure("dev", RELEASE).await;
        let message = condition.message.clone().unwrap_or_default();
        message.contains("field is immutable").then_some(condition)
    })
    .await;
    assert_eq!(refused.reason.as_deref(), Some("ApplyFailed"));
    // ...and replaced with it.
    commit_fleet_yaml(
        &fleet,
        &format!("{base}helm:\n  chart: chart\n  force: true\n  values:\n    message: third\n    app: web2\n"),
        "force",
    );
    let after = eventually("the Deployment replaced", WAIT, || async {
        let after = fleet.get("dev", &["get", "deployment", RELEASE, "-n", NAMESPACE])?;
        (after["spec"]["selector"]["matchLabels"]["app"] == "web2").then_some(after)
    })
    .await;
    assert_ne!(
        after["metadata"]["uid"], before["metadata"]["uid"],
        "deleted and created again"
    );
    assert_eq!(settings_message(&fleet), "third");
    fleet.stop().await;
}
