//! fleet.yaml options the agent acts on, end to end: `namespaceLabels` and
//! `namespaceAnnotations` on the bundle's namespace, `ignore.conditions` for readiness,
//! `dependsOn[].acceptedStates`, and on removal CRDs kept unless `deleteCRDResources`,
//! as objects annotated `helm.sh/resource-policy: keep` are; `targetCustomizationMode:
//! AllMatches` merging every matching customization, `rolloutStrategy.maxNew` and the
//! GitRepo's `deleteNamespace`; `serviceAccount` impersonated by
//! the agent, so its RBAC bounds what a bundle may touch; and the Policy kind, enforced by
//! gitjob and the controller; `downstreamResources` copied to each target, per target;
//! the GitRepo's Helm credentials (`helmSecretName`, `helmSecretNameForPaths`,
//! `helmRepoURLRegex`) for a private chart repository; a driven scan (`bundles`); chart
//! dependencies fetched unless `helm.disableDependencyUpdate`; `getHostByName` resolved in
//! the member unless `helm.disableDNS`; GitRepoRestrictions and BundleNamespaceMappings.

mod common;

use common::{Fleet, NS, WAIT};
use fleet_testkit::eventually;
use serde_json::json;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
";

/// A Widget whose status (no status subresource: it is applied with it) says not Ready.
fn widget(name: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nstatus:\n  conditions:\n  - type: Ready\n    status: \"False\"\n"
    )
}

const KEPT: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  annotations:
    helm.sh/resource-policy: keep
data:
  k: v
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_marks_ignored_conditions_accepted_states_and_what_removal_keeps() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .repo
        .write(
            "crd/fleet.yaml",
            "defaultNamespace: widgets\nnamespaceLabels:\n  team: a\nnamespaceAnnotations:\n  owner: me\nignore:\n  conditions:\n  - type: Ready\n    status: \"False\"\n",
        )
        .write("crd/crd.yaml", CRD)
        .write("crd/widget.yaml", &widget("ignored"))
        .write("crd/kept.yaml", KEPT)
        .write(
            "slow/fleet.yaml",
            "defaultNamespace: widgets\ndependsOn:\n- name: demo-crd\n",
        )
        .write("slow/widget.yaml", &widget("not-ready"))
        .write(
            "after/fleet.yaml",
            "defaultNamespace: widgets\ndependsOn:\n- name: demo-slow\n  acceptedStates: [NotReady, Ready]\n",
        )
        .write(
            "after/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n",
        )
        .write("gadgets/fleet.yaml", "deleteCRDResources: true\n")
        .write(
            "gadgets/crd.yaml",
            &CRD.replace("widget", "gadget").replace("Widget", "Gadget"),
        );
    fleet.repo.commit("options");
    fleet
        .gitrepo(json!({"paths": ["crd", "slow", "after", "gadgets"], "targets": [{"clusterSelector": {}}]}))
        .await;
    let deployments = fleet.deployments("dev");
    let state = |name: &'static str| {
        let deployments = deployments.clone();
        async move {
            let status = deployments.get(name).await.ok()?.status?;
            status.display?.state
        }
    };
    eventually("the CRD bundle Ready despite its Widget", WAIT, || async {
        (state("demo-crd").await.as_deref() == Some("Ready")).then_some(())
    })
    .await;
    eventually("the slow bundle NotReady", WAIT, || async {
        (state("demo-slow").await.as_deref() == Some("NotReady")).then_some(())
    })
    .await;
    // `after` accepts a NotReady dependency: it is deployed anyway.
    eventually("the bundle after it deployed", WAIT, || async {
        fleet.get("dev", &["get", "configmap", "after", "-n", "widgets"])
    })
    .await;
    eventually("the gadgets CRD deployed", WAIT, || async {
        fleet.get("dev", &["get", "crd", "gadgets.example.com"])
    })
    .await;
    let namespace = fleet
        .get("dev", &["get", "namespace", "widgets"])
        .expect("the namespace");
    assert_eq!(namespace["metadata"]["labels"]["team"], "a");
    assert_eq!(namespace["metadata"]["annotations"]["owner"], "me");

    fleet.delete_gitrepo().await;
    assert!(
        fleet
            .get("dev", &["get", "configmap", "after", "-n", "widgets"])
            .is_none(),
        "uninstalled"
    );
    assert!(
        fleet
            .get("dev", &["get", "crd", "widgets.example.com"])
            .is_some(),
        "a CRD stays without deleteCRDResources"
    );
    assert!(
        fleet
            .get("dev", &["get", "crd", "gadgets.example.com"])
            .is_none(),
        "deleteCRDResources: true removes the bundle's CRD"
    );
    assert!(
        fleet
            .get("dev", &["get", "configmap", "kept", "-n", "widgets"])
            .is_some(),
        "helm.sh/resource-policy: keep"
    );
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_matches_merges_every_matching_customization_in_order() {
    let fleet = Fleet::start(&[
        ("eu", json!({"env": "prod", "region": "eu"})),
        ("us", json!({"env": "prod", "region": "us"})),
        ("lab", json!({"env": "prod", "stop": "yes"})),
    ])
    .await;
    fleet
        .repo
        .write(
            "app/fleet.yaml",
            "defaultNamespace: plain
rolloutStrategy: {maxNew: 1}
targetCustomizationMode: AllMatches
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  defaultNamespace: prod
  namespaceLabels: {tier: prod, region: none}
- name: eu
  clusterSelector: {matchLabels: {region: eu}}
  namespaceLabels: {region: eu}
- name: stop
  clusterSelector: {matchLabels: {stop: \"yes\"}}
  doNotDeploy: true
",
        )
        .write(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
        );
    fleet.repo.commit("all matches");
    fleet
        .gitrepo(json!({"paths": ["app"], "targets": [{"clusterSelector": {}}], "deleteNamespace": true}))
        .await;
    // maxNew: 1 creates one deployment per pass of the controller; both come.
    for member in ["eu", "us"] {
        eventually(&format!("the ConfigMap in {member}"), WAIT, || async {
            fleet.get(member, &["get", "configmap", "app", "-n", "prod"])
        })
        .await;
    }
    let namespace_labels = |member: &str| {
        let namespace = fleet
            .get(member, &["get", "namespace", "prod"])
            .expect("the namespace");
        namespace["metadata"]["labels"].clone()
    };
    // Both customizations apply in eu, the later one overriding `region`; only the
    // first in us.
    let eu = namespace_labels("eu");
    assert_eq!(
        (eu["tier"].as_str(), eu["region"].as_str()),
        (Some("prod"), Some("eu"))
    );
    let us = namespace_labels("us");
    assert_eq!(
        (us["tier"].as_str(), us["region"].as_str()),
        (Some("prod"), Some("none"))
    );
    let deployment = fleet
        .deployments("eu")
        .get("demo-app")
        .await
        .expect("the eu deployment");
    assert_eq!(
        deployment
            .spec
            .options
            .and_then(|o| o.default_namespace)
            .as_deref(),
        Some("prod")
    );
    // `stop` matches lab after `prod`: doNotDeploy holds, nothing goes there.
    assert!(
        fleet
            .deployments("lab")
            .get_opt("demo-app")
            .await
            .expect("list")
            .is_none(),
        "no deployment for a doNotDeploy match"
    );
    // The GitRepo's deleteNamespace: its bundles' namespaces go with it.
    fleet.delete_gitrepo().await;
    for member in ["eu", "us"] {
        eventually(
            &format!("the namespace gone from {member}"),
            WAIT,
            || async {
                fleet
                    .get(member, &["get", "namespace", "prod"])
                    .is_none_or(|n| n["status"]["phase"] == "Terminating")
                    .then_some(())
            },
        )
        .await;
    }
    fleet.stop().await;
}

/// In the member: the account `deployer` in the agent's system namespace, which may read
/// namespaces and do anything with ConfigMaps and Secrets in `allowed` only.
const DEPLOYER_RBAC: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: cattle-fleet-system
---
apiVersion: v1
kind: Namespace
metadata:
  name: allowed
---
apiVersion: v1
kind: Namespace
metadata:
  name: denied
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: deployer
  namespace: cattle-fleet-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: read-namespaces
rules:
- apiGroups: [\"\"]
  resources: [namespaces]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: deployer-reads-namespaces
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: read-namespaces
subjects:
- kind: ServiceAccount
  name: deployer
  namespace: cattle-fleet-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: deploy
  namespace: allowed
rules:
- apiGroups: [\"\"]
  resources: [configmaps, secrets]
  verbs: [\"*\"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: deployer
  namespace: allowed
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: deploy
subjects:
- kind: ServiceAccount
  name: deployer
  namespace: cattle-fleet-system
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_bounds_what_a_bundle_may_touch() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .kubectl("dev")
        .run_with(&["apply", "-f", "-"], DEPLOYER_RBAC)
        .await
        .success();
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n";
    fleet
        .repo
        .write(
            "ok/fleet.yaml",
            "defaultNamespace: allowed\nserviceAccount: deployer\n",
        )
        .write("ok/cm.yaml", config_map)
        .write(
            "denied/fleet.yaml",
            "defaultNamespace: denied\nserviceAccount: deployer\n",
        )
        .write("denied/cm.yaml", config_map)
        .write(
            "missing/fleet.yaml",
            "defaultNamespace: allowed\nserviceAccount: nobody\n",
        )
        .write("missing/cm.yaml", config_map);
    fleet.repo.commit("service accounts");
    fleet
        .gitrepo(
            json!({"paths": ["ok", "denied", "missing"], "targets": [{"clusterSelector": {}}]}),
        )
        .await;
    eventually("the permitted bundle deployed", WAIT, || async {
        fleet.get("dev", &["get", "configmap", "app", "-n", "allowed"])
    })
    .await;
    let release = fleet
        .get(
            "dev",
            &[
                "get",
                "secrets",
                "-n",
                "allowed",
                "-l",
                "owner=helm,name=demo-ok",
            ],
        )
        .expect("release records");
    assert_eq!(
        release["items"].as_array().map(Vec::len),
        Some(1),
        "{release}"
    );

    let denied = fleet.deploy_failure("dev", "demo-denied").await;
    let denied = denied.message.unwrap_or_default();
    assert!(
        denied.contains("system:serviceaccount:cattle-fleet-system:deployer")
            && denied.contains("forbidden"),
        "{denied}"
    );
    assert!(
        fleet
            .get("dev", &["get", "configmap", "app", "-n", "denied"])
            .is_none(),
        "nothing written where the account may not write"
    );
    let missing = fleet.deploy_failure("dev", "demo-missing").await;
    let missing = missing.message.unwrap_or_default();
    assert!(
        missing.contains("serviceAccount nobody: no such service account"),
        "{missing}"
    );
    fleet.stop().await;
}

/// In the member: the account `deployer`, which may make namespaces and do anything with
/// ConfigMaps and Secrets anywhere.
const POLICY_RBAC: &str = include_str!("fixtures/deployer-rbac.yaml");

/// The Policy `tenants` of `fleet-local`, allowing repositories matching `pattern`.
fn tenants_policy(pattern: &str, namespace_creation: bool) -> String {
    format!(
        "apiVersion: fleet.cattle.io/v1alpha1
kind: Policy
metadata:
  name: tenants
  namespace: fleet-local
requireServiceAccount: true
allowedServiceAccounts: [deployer]
allowNamespaceCreation: {namespace_creation}
gitRepo:
  defaultServiceAccount: deployer
  allowedRepoPatterns: [\"{pattern}\"]
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_default_refuse_and_gate_namespace_creation() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .kubectl("dev")
        .run_with(&["apply", "-f", "-"], POLICY_RBAC)
        .await
        .success();
    let apply_policy = |pattern: &'static str, namespace_creation: bool| {
        let policy = tenants_policy(pattern, namespace_creation);
        let hub = fleet.kubectl("local");
        async move {
            hub.run_with(&["apply", "-f", "-"], &policy).await.success();
        }
    };
    apply_policy("https://git\\\\.example\\\\.com/.*", false).await;
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n";
    fleet
        .repo
        .write("app/fleet.yaml", "defaultNamespace: cattle-fleet-system\n")
        .write("app/cm.yaml", config_map)
        .write(
            "rogue/fleet.yaml",
            "defaultNamespace: cattle-fleet-system\nserviceAccount: root\n",
        )
        .write("rogue/cm.yaml", config_map)
        .write("fresh/fleet.yaml", "defaultNamespace: fresh\n")
        .write("fresh/cm.yaml", config_map);
    fleet.repo.commit("tenants");
    fleet
        .gitrepo(json!({"paths": ["app", "rogue", "fresh"], "targets": [{"clusterSelector": {}}]}))
        .await;

    // gitjob refuses a repository the Policy does not allow, and says so.
    let refused = eventually("the GitRepo refused", WAIT, || async {
        let gitrepo = fleet.get("local", &["get", "gitrepo", "demo", "-n", NS])?;
        let conditions = gitrepo["status"]["conditions"].as_array()?.clone();
        let accepted = conditions.iter().find(|c| c["type"] == "Accepted")?;
        (accepted["status"] == "False").then(|| accepted.clone())
    })
    .await;
    assert_eq!(refused["reason"], "Refused");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("disallowed repo git://")
            && message.ends_with("not in allowed set [https://git\\.example\\.com/.*]"),
        "{message}"
    );
    assert!(fleet
        .get("local", &["get", "bundle", "demo-app", "-n", NS])
        .is_none());

    // Allowed: the GitRepo's bundles get the Policy's default account.
    apply_policy("git://.*", false).await;
    eventually("the allowed bundle deployed", WAIT, || async {
        fleet.get(
            "dev",
            &["get", "configmap", "app", "-n", "cattle-fleet-system"],
        )
    })
    .await;
    let app = fleet
        .get("local", &["get", "bundle", "demo-app", "-n", NS])
        .expect("the bundle");
    assert_eq!(app["spec"]["serviceAccount"], "deployer");

    // The controller refuses a bundle whose own account the Policy does not allow.
    let rogue = eventually("the rogue bundle refused", WAIT, || async {
        let bundle = fleet.get("local", &["get", "bundle", "demo-rogue", "-n", NS])?;
        let conditions = bundle["status"]["conditions"].as_array()?.clone();
        let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
        let message = ready["message"].as_str()?.to_string();
        message.starts_with("refused by Policy").then_some(message)
    })
    .await;
    assert_eq!(
        rogue,
        "refused by Policy tenants: serviceAccount root is not allowed (allowed: deployer)"
    );
    assert!(fleet
        .deployments("dev")
        .get_opt("demo-rogue")
        .await
        .expect("get")
        .is_none());

    // A required account without allowNamespaceCreation: the agent creates no namespace.
    let fresh = fleet.deploy_failure("dev", "demo-fresh").await;
    let fresh = fresh.message.unwrap_or_default();
    assert!(fresh.contains("namespaces \"fresh\" not found"), "{fresh}");
    assert!(fleet.get("dev", &["get", "namespace", "fresh"]).is_none());
    apply_policy("git://.*", true).await;
    eventually("the namespace made once allowed", WAIT, || async {
        fleet.get("dev", &["get", "configmap", "app", "-n", "fresh"])
    })
    .await;
    fleet.stop().await;
}

/// The Secret `db` and ConfigMap `settings` of `fleet-local` on the hub.
fn downstream_sources(password: &str) -> String {
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: fleet-local
stringData:
  password: {password}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: fleet-local
data:
  mode: fast
"
    )
}

const DOWNSTREAM_FLEET_YAML: &str = "defaultNamespace: apps
downstreamResources:
- {kind: Secret, name: db}
- {kind: ConfigMap, name: settings}
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  downstreamResources:
  - {kind: Secret, name: db}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downstream_resources_are_copied_per_target_and_follow_their_source() {
    let fleet = Fleet::start(&[
        ("dev", json!({"env": "dev"})),
        ("prod", json!({"env": "prod"})),
    ])
    .await;
    let hub = fleet.kubectl("local");
    hub.run_with(&["apply", "-f", "-"], &downstream_sources("one"))
        .await
        .success();
    fleet
        .repo
        .write("app/fleet.yaml", DOWNSTREAM_FLEET_YAML)
        .write(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
        );
    fleet.repo.commit("downstream");
    fleet
        .gitrepo(json!({"paths": ["app"], "targets": [{"clusterSelector": {}}]}))
        .await;
    let password = |member: &'static str| {
        let fleet = &fleet;
        async move {
            let secret = fleet.get(member, &["get", "secret", "db", "-n", "apps"])?;
            let encoded = secret["data"]["password"].as_str()?.to_string();
            Some(encoded)
        }
    };
    // base64("one"), base64("two")
    let (one, two) = ("b25l", "dHdv");
    for member in ["dev", "prod"] {
        let found = eventually(&format!("the Secret in {member}"), WAIT, || {
            password(member)
        })
        .await;
        assert_eq!(found, one);
    }
    let settings = fleet
        .get("dev", &["get", "configmap", "settings", "-n", "apps"])
        .expect("the ConfigMap in dev");
    assert_eq!(settings["data"]["mode"], "fast");
    assert!(
        fleet
            .get("prod", &["get", "configmap", "settings", "-n", "apps"])
            .is_none(),
        "prod's customization names the Secret only"
    );

    // A change to the source redeploys it everywhere.
    hub.run_with(&["apply", "-f", "-"], &downstream_sources("two"))
        .await
        .success();
    for member in ["dev", "prod"] {
        eventually(&format!("the new password in {member}"), WAIT, || async {
            (password(member).await.as_deref() == Some(two)).then_some(())
        })
        .await;
    }

    // Named no more: pruned in the member, and its copy on the hub goes.
    fleet.repo.write(
        "app/fleet.yaml",
        "defaultNamespace: apps\ndownstreamResources:\n- {kind: Secret, name: db}\n",
    );
    fleet.repo.commit("settings no more");
    eventually("the ConfigMap pruned in dev", WAIT, || async {
        fleet
            .get("dev", &["get", "configmap", "settings", "-n", "apps"])
            .is_none()
            .then_some(())
    })
    .await;
    let copies = fleet
        .get(
            "local",
            &[
                "get",
                "configmaps",
                "-n",
                "cluster-fleet-local-dev",
                "-l",
                "fleet.cattle.io/downstream-resource",
            ],
        )
        .expect("copies");
    assert_eq!(
        copies["items"].as_array().map(Vec::len),
        Some(0),
        "{copies}"
    );

    fleet.delete_gitrepo().await;
    for member in ["dev", "prod"] {
        assert!(
            fleet
                .get(member, &["get", "secret", "db", "-n", "apps"])
                .is_none(),
            "uninstalled from {member}"
        );
    }
    fleet.stop().await;
}

fn metrics_archive() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/charts/v1-requirements/charts/metrics-0.2.0.tgz"
    );
    std::fs::read(path).expect("the packaged test chart")
}

/// A bundle `path` installing the private chart `metrics` from `repo`.
fn private_chart_bundle(fleet: &Fleet, path: &str, repo: &str) {
    fleet.repo.write(
        &format!("{path}/fleet.yaml"),
        &format!(
            "defaultNamespace: charts\nhelm:\n  repo: {repo}\n  chart: metrics\n  version: 0.2.0\n  releaseName: {path}\n"
        ),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_credentials_reach_the_private_repository_they_are_meant_for() {
    let server = fleet_testkit::ChartServer::start_private(
        "metrics",
        "0.2.0",
        metrics_archive(),
        "ci:s3cret",
    )
    .expect("the private chart repository");
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let hub = fleet.kubectl("local");
    let secrets = "apiVersion: v1
kind: Secret
metadata:
  name: helm-creds
  namespace: fleet-local
stringData:
  username: ci
  password: s3cret
---
apiVersion: v1
kind: Secret
metadata:
  name: helm-paths
  namespace: fleet-local
stringData:
  secrets-path.yaml: |
    good:
      username: ci
      password: s3cret
    bad:
      username: ci
      password: wrong
";
    hub.run_with(&["apply", "-f", "-"], secrets).await.success();
    private_chart_bundle(&fleet, "good", &server.url);
    private_chart_bundle(&fleet, "bad", &server.url);
    fleet.repo.commit("private charts");

    // helmSecretNameForPaths: each path its own credentials.
    fleet
        .gitrepo(
            json!({"paths": ["good", "bad"], "helmSecretNameForPaths": "helm-paths",
                        "helmRepoURLRegex": format!("^{}", server.url.replace('.', "\\.")),
                        "targets": [{"clusterSelector": {}}]}),
        )
        .await;
    eventually("the chart with good credentials deployed", WAIT, || async {
        fleet.get("dev", &["get", "service", "good-metrics", "-n", "charts"])
    })
    .await;
    let refused = eventually("the path with wrong credentials reported", WAIT, || async {
        let gitrepo = fleet.get("local", &["get", "gitrepo", "demo", "-n", NS])?;
        let message = gitrepo["status"]["display"]["message"]
            .as_str()?
            .to_string();
        message.contains("bad").then_some(message)
    })
    .await;
    assert!(refused.contains("HTTP 401"), "{refused}");
    // The password mended in its Secret is used at the next poll, though neither the
    // GitRepo nor its repository changed.
    let mended = secrets.replace("password: wrong", "password: s3cret");
    hub.run_with(&["apply", "-f", "-"], &mended).await.success();
    eventually("the mended path deployed", WAIT, || async {
        fleet.get("dev", &["get", "service", "bad-metrics", "-n", "charts"])
    })
    .await;
    fleet.delete_gitrepo().await;

    // helmSecretName limited by helmRepoURLRegex: sent to the matching repository.
    let matching = format!("^{}", server.url.replace('.', "\\."));
    fleet
        .gitrepo(
            json!({"paths": ["good", "bad"], "helmSecretName": "helm-creds",
                        "helmRepoURLRegex": matching, "targets": [{"clusterSelector": {}}]}),
        )
        .await;
    for release in ["good", "bad"] {
        eventually(&format!("{release} deployed"), WAIT, || async {
            fleet.get(
                "dev",
                &[
                    "get",
                    "service",
                    &format!("{release}-metrics"),
                    "-n",
                    "charts",
                ],
            )
        })
        .await;
    }
    fleet.delete_gitrepo().await;

    // A regex the repository does not match: the credentials are not sent.
    let before = server
        .with_credentials
        .load(std::sync::atomic::Ordering::Relaxed);
    fleet
        .gitrepo(json!({"paths": ["good"], "helmSecretName": "helm-creds",
                        "helmRepoURLRegex": "^https://charts\\.example\\.com/",
                        "targets": [{"clusterSelector": {}}]}))
        .await;
    let unsent = eventually("the chart refused without credentials", WAIT, || async {
        let gitrepo = fleet.get("local", &["get", "gitrepo", "demo", "-n", NS])?;
        let message = gitrepo["status"]["display"]["message"]
            .as_str()?
            .to_string();
        message.contains("HTTP 401").then_some(message)
    })
    .await;
    assert!(unsent.contains("good"), "{unsent}");
    assert_eq!(
        server
            .with_credentials
            .load(std::sync::atomic::Ordering::Relaxed),
        before,
        "no credentials sent to a repository the regex does not match"
    );
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driven_scan_makes_one_bundle_per_declaration() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .repo
        .write(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
        )
        .write("app/dev.yaml", "defaultNamespace: dev-ns\n")
        .write("app/prod.yaml", "defaultNamespace: prod-ns\n")
        // Not declared: a driven scan does not look for other bundles.
        .write("unlisted/fleet.yaml", "defaultNamespace: unlisted\n")
        .write(
            "unlisted/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unlisted\n",
        );
    fleet.repo.commit("driven");
    fleet
        .gitrepo(json!({"bundles": [{"base": "app", "options": "dev.yaml"},
                                    {"base": "app", "options": "prod.yaml"}],
                        "targets": [{"clusterSelector": {}}]}))
        .await;
    for namespace in ["dev-ns", "prod-ns"] {
        eventually(&format!("the ConfigMap in {namespace}"), WAIT, || async {
            fleet.get("dev", &["get", "configmap", "app", "-n", namespace])
        })
        .await;
    }
    let bundles = fleet
        .get("local", &["get", "bundles", "-n", NS])
        .expect("bundles");
    let names: Vec<&str> = bundles["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["demo-app-dev", "demo-app-prod"]);
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_chart_dependencies_are_fetched_unless_disabled() {
    let server = fleet_testkit::ChartServer::start("metrics", "0.2.0", metrics_archive())
        .expect("the chart repository");
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let chart = format!(
        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- name: metrics\n  version: 0.2.0\n  repository: {}\n",
        server.url
    );
    let template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-app\n";
    for (path, disabled) in [("fetched", false), ("vendored-only", true)] {
        fleet
            .repo
            .write(&format!("{path}/Chart.yaml"), &chart)
            .write(&format!("{path}/templates/cm.yaml"), template)
            .write(
                &format!("{path}/fleet.yaml"),
                &format!(
                    "defaultNamespace: deps\nhelm:\n  releaseName: {path}\n  disableDependencyUpdate: {disabled}\n"
                ),
            );
    }
    fleet.repo.commit("dependencies");
    fleet
        .gitrepo(
            json!({"paths": ["fetched", "vendored-only"], "targets": [{"clusterSelector": {}}]}),
        )
        .await;
    // The dependency charts/ lacks comes from its repository, as `helm dependency update`.
    eventually("the dependency's Service", WAIT, || async {
        fleet.get("dev", &["get", "service", "fetched-metrics", "-n", "deps"])
    })
    .await;
    assert!(fleet
        .get("dev", &["get", "configmap", "fetched-app", "-n", "deps"])
        .is_some());
    // disableDependencyUpdate: the chart must carry it; it does not, so it fails, saying so.
    let failed = eventually(
        "the bundle without its dependency reported",
        WAIT,
        || async {
            let gitrepo = fleet.get("local", &["get", "gitrepo", "demo", "-n", NS])?;
            let message = gitrepo["status"]["display"]["message"]
                .as_str()?
                .to_string();
            message.contains("vendored-only").then_some(message)
        },
    )
    .await;
    assert!(
        failed.contains("missing in charts/ directory: metrics"),
        "{failed}"
    );
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_names_resolve_in_the_member_unless_dns_is_disabled() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  ip: \"{{ getHostByName \"localhost\" }}\"\n";
    for (path, disabled) in [("dns", false), ("no-dns", true)] {
        fleet
            .repo
            .write(
                &format!("{path}/Chart.yaml"),
                "apiVersion: v2\nname: resolver\nversion: 0.1.0\n",
            )
            .write(&format!("{path}/templates/cm.yaml"), template)
            .write(
                &format!("{path}/fleet.yaml"),
                &format!(
                    "defaultNamespace: dns\nhelm:\n  releaseName: {path}\n  disableDNS: {disabled}\n"
                ),
            );
    }
    fleet.repo.commit("dns");
    fleet
        .gitrepo(json!({"paths": ["dns", "no-dns"], "targets": [{"clusterSelector": {}}]}))
        .await;
    let ip = |name: &'static str| {
        let fleet = &fleet;
        async move {
            let config_map = fleet.get("dev", &["get", "configmap", name, "-n", "dns"])?;
            config_map["data"]["ip"].as_str().map(String::from)
        }
    };
    // Fleet installs with DNS lookups on: the agent resolves the name in its cluster.
    let resolved = eventually("the resolved address", WAIT, || ip("dns")).await;
    assert!(
        resolved == "127.0.0.1" || resolved == "::1",
        "localhost resolved to {resolved:?}"
    );
    // disableDNS: Helm's answer with DNS off, the empty string.
    let unresolved = eventually("the unresolved address", WAIT, || ip("no-dns")).await;
    assert_eq!(unresolved, "");
    fleet.stop().await;
}

/// A fleet with member `dev` whose hub holds `restriction` (a GitRepoRestriction in
/// `fleet-local`), and the GitRepo `demo` of `spec` deploying one ConfigMap,
/// `simple-config`.
async fn fleet_under_restriction(restriction: &str, spec: serde_json::Value) -> Fleet {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .kubectl("local")
        .run_with(&["apply", "-f", "-"], restriction)
        .await
        .success();
    fleet.repo.write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: simple-config\n",
    );
    fleet.repo.commit("app");
    fleet.gitrepo(spec).await;
    fleet
}

/// Fleet's `bundle_namespace_mapping_test.go`, its GitRepoRestriction part, restated: a
/// restriction allowing one target namespace refuses a GitRepo that sets none or another,
/// in Fleet's words on the GitRepo's `Accepted` condition and in a `PolicyViolation`
/// event, and admits it once it names the allowed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_repo_restriction_refuses_target_namespaces_it_does_not_allow() {
    let fleet = fleet_under_restriction(
        "kind: GitRepoRestriction
apiVersion: fleet.cattle.io/v1alpha1
metadata:
  name: restriction
  namespace: fleet-local
allowedTargetNamespaces:
  - project1simpleapp
",
        json!({"paths": ["app"], "targets": [{"clusterSelector": {}}]}),
    )
    .await;
    let refusal = || async {
        let gitrepo = fleet.get("local", &["get", "gitrepo", "demo", "-n", NS])?;
        let conditions = gitrepo["status"]["conditions"].as_array()?.clone();
        let accepted = conditions.iter().find(|c| c["type"] == "Accepted")?;
        (accepted["status"] == "False").then(|| accepted["message"].as_str().map(String::from))?
    };
    let empty = eventually("the GitRepo refused", WAIT, refusal).await;
    assert_eq!(
        empty,
        "empty targetNamespace denied, because allowedTargetNamespaces restriction is present"
    );
    let events = fleet.events_of("demo");
    let violations: Vec<&str> = (events["items"].as_array().into_iter().flatten())
        .filter(|e| e["reason"] == "PolicyViolation" && e["type"] == "Warning")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(violations, [empty.as_str()], "{events}");

    let target = |namespace: &str| {
        let patch = json!({"spec": {"targetNamespace": namespace}}).to_string();
        let hub = fleet.kubectl("local");
        async move {
            hub.run(&[
                "patch", "gitrepo", "demo", "-n", NS, "--type", "merge", "-p", &patch,
            ])
            .await
            .success();
        }
    };
    target("denythisnamespace").await;
    let other = eventually("the other namespace refused", WAIT, || async {
        refusal().await.filter(|m| m.contains("denythisnamespace"))
    })
    .await;
    assert_eq!(
        other,
        "disallowed targetNamespace denythisnamespace: denythisnamespace not in allowed set [project1simpleapp]"
    );
    target("project1simpleapp").await;
    simple_config_arrives(
        &fleet,
        "project1simpleapp",
        "the allowed namespace deployed",
    )
    .await;
}

/// Waits for the ConfigMap `simple-config` on member `dev`, in `namespace`.
async fn simple_config_arrives(fleet: &Fleet, namespace: &str, what: &str) {
    eventually(what, WAIT, || async {
        fleet.get(
            "dev",
            &["get", "configmap", "simple-config", "-n", namespace],
        )
    })
    .await;
}

/// Fleet's `gitreporestriction_namespace_selector_test.go` and its agent integration test,
/// restated: a restriction's `allowedTargetNamespaceSelector` reaches the deployments of
/// the namespace's GitRepos, and each agent deploys only into a namespace of its cluster
/// that exists and has matching labels, saying why not in Fleet's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restriction_s_namespace_selector_is_checked_by_each_agent() {
    let fleet = fleet_under_restriction(
        "apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepoRestriction
metadata:
  name: ns-selector-restriction
  namespace: fleet-local
allowedTargetNamespaceSelector:
  matchLabels:
    team: frontend
",
        json!({"paths": ["app"], "targets": [{"clusterSelector": {}}],
            "targetNamespace": "frontend-apps"}),
    )
    .await;
    let failure = fleet.deploy_failure("dev", "demo-app").await;
    assert_eq!(
        failure.message.as_deref(),
        Some("target namespace frontend-apps does not exist on downstream cluster")
    );
    let dev = fleet.kubectl("dev");
    dev.run(&["create", "namespace", "frontend-apps"])
        .await
        .success();
    let deployments = fleet.deployments("dev");
    let mismatch = eventually("the unlabelled namespace refused", WAIT, || async {
        let status = deployments.get("demo-app").await.ok()?.status?;
        let deployed = status.conditions.iter().find(|c| c.type_ == "Deployed")?;
        let message = deployed.message.clone()?;
        message.contains("does not match").then_some(message)
    })
    .await;
    assert_eq!(
        mismatch,
        "target namespace frontend-apps does not match AllowedTargetNamespaceSelector \
         (team=frontend); namespace labels map[kubernetes.io/metadata.name:frontend-apps]"
    );
    assert!(fleet
        .get(
            "dev",
            &["get", "configmap", "simple-config", "-n", "frontend-apps"]
        )
        .is_none());
    dev.run(&["label", "namespace", "frontend-apps", "team=frontend"])
        .await
        .success();
    eventually("the labelled namespace deployed", WAIT, || async {
        fleet.get(
            "dev",
            &["get", "configmap", "simple-config", "-n", "frontend-apps"],
        )
    })
    .await;
}

/// A project namespace with a GitRepo labelled `team: <team>` deploying `app` (one
/// ConfigMap, `simple-config`) to clusters labelled `env: dev`, and a
/// BundleNamespaceMapping there mapping `team: one` bundles to `fleet-local`, where the
/// member `dev` is registered, as Fleet's e2e asset `bundle-namespace-mapping.yaml` has it.
fn project_with_mapping(project: &str, team: &str, repo: &str) -> String {
    format!(
        "apiVersion: v1
kind: Namespace
metadata:
  name: {project}
---
apiVersion: fleet.cattle.io/v1alpha1
kind: BundleNamespaceMapping
metadata:
  name: mapping
  namespace: {project}
bundleSelector:
  matchLabels:
    team: one
namespaceSelector:
  matchLabels:
    kubernetes.io/metadata.name: fleet-local
---
apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata:
  name: simpleapp
  namespace: {project}
  labels:
    team: {team}
spec:
  repo: {repo}
  branch: main
  pollingInterval: 1s
  paths: [app]
  targetNamespace: {project}simpleapp
  targets:
  - name: test
    clusterSelector:
      matchLabels:
        env: dev
"
    )
}

/// Fleet's `bundle_namespace_mapping_test.go`, its mapping part, restated: a GitRepo's
/// bundles reach a cluster registered in another namespace only through a mapping of
/// their own namespace that selects them (here by the GitRepo's label); beyond Fleet,
/// which reads mappings only when something else changes, deleting the mapping removes
/// the deployment at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_namespace_mapping_lets_bundles_reach_another_namespace_s_clusters() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet.repo.write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: simple-config\n",
    );
    fleet.repo.commit("app");
    let hub = fleet.kubectl("local");
    let repo = fleet.daemon.url("app");
    let deployments_of = |project: &str| {
        let selector = format!("fleet.cattle.io/bundle-namespace={project}");
        fleet.get(
            "local",
            &["get", "bundledeployments", "-A", "-l", selector.as_str()],
        )
    };
    // A bundle the mapping does not select stays home.
    hub.run_with(
        &["apply", "-f", "-"],
        &project_with_mapping("nomatch", "mismatch", &repo),
    )
    .await
    .success();
    eventually("the unmapped bundle", WAIT, || async {
        fleet.get(
            "local",
            &["get", "bundle", "simpleapp-app", "-n", "nomatch"],
        )
    })
    .await;
    hub.run_with(
        &["apply", "-f", "-"],
        &project_with_mapping("project1", "one", &repo),
    )
    .await
    .success();
    simple_config_arrives(
        &fleet,
        "project1simpleapp",
        "the mapped bundle deployed on dev",
    )
    .await;
    let deployed = deployments_of("project1").expect("deployments");
    let names: Vec<&str> = (deployed["items"].as_array().into_iter().flatten())
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["simpleapp-app"], "{deployed}");
    let unmapped = deployments_of("nomatch").expect("deployments");
    assert_eq!(unmapped["items"], json!([]), "{unmapped}");

    hub.run(&[
        "delete",
        "bundlenamespacemapping",
        "mapping",
        "-n",
        "project1",
    ])
    .await
    .success();
    eventually("the deployment removed with the mapping", WAIT, || async {
        let left = deployments_of("project1")?;
        (left["items"] == json!([])).then_some(())
    })
    .await;
    fleet.stop().await;
}
