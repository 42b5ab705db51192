//! The fleet on real Kubernetes: kube-apiserver, kube-controller-manager and etcd built from
//! the upstream modules (`.ci/real-k8s.sh`) for the management cluster and each member.
//! What the embedded hub lets pass, these judge: canonical quantities, dropped empty
//! fields, token Secrets filled later by the token controller, CRDs served only once
//! Established, owner references checked against RBAC.

mod real;

use std::time::Duration;

use fleet_api::ClusterRegistration;
use fleet_testkit::{eventually, helm, real_tool};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::PostParams;
use kube::Api;
use real::{ready, state, RealFleet, NS, WAIT};
use serde_json::json;

/// A Deployment written as people write them: quantities the API server rewrites
/// (`cpu: 1` is stored as `"1"`, `0.5` as `500m`, `1024Mi` as `1Gi`) and empty fields it
/// drops (`args: []`, `nodeSelector: {}`, `annotations: {}`).
const WEB: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations: {}
    spec:
      nodeSelector: {}
      containers:
      - name: web
        image: nginx:1.27
        args: []
        env: []
        resources:
          requests: {cpu: 0.5, memory: 1024Mi}
          limits: {cpu: 1, memory: 2048Mi}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pulled_and_pushed_members_deploy_and_settle_ready() {
    let mut fleet = RealFleet::start(&["dev", "prod"]).await;
    fleet.join("dev", &["--label", "env=dev"]);
    fleet.push("prod", json!({"env": "prod"})).await;
    fleet
        .repo
        .write("app/fleet.yaml", "defaultNamespace: web\n")
        .write("app/web.yaml", WEB);
    fleet.repo.commit("app");
    fleet.gitrepo_to_all("demo", &["app"]).await;

    for member in ["dev", "prod"] {
        let deployment = fleet
            .deployment_where(member, "demo-app", "Ready", ready)
            .await;
        let status = deployment.status.expect("status");
        assert!(
            status.non_modified,
            "{member}: {:?}",
            status.modified_status
        );
        // Real controllers rolled the Deployment out on the fake node.
        let web = fleet
            .get(member, &["get", "deployment", "web", "-n", "web"])
            .expect("the Deployment");
        assert_eq!(web["status"]["availableReplicas"], 2, "{member}: {web}");
        assert_eq!(
            web["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "500m"
        );
    }
    // The release is Helm's: real Helm lists it.
    let listed = helm(
        &real_tool("helm4"),
        fleet.cluster("dev").kubeconfig(),
        &fleet.dir.path().join("helm"),
        &["list", "-n", "web", "-o", "json"],
    );
    let releases: serde_json::Value = serde_json::from_str(&listed).expect("helm's JSON");
    assert_eq!(releases[0]["name"], "demo-app", "{releases}");
    assert_eq!(releases[0]["status"], "deployed", "{releases}");

    // Drift on dev is reported, naming the field.
    fleet
        .kubectl("dev")
        .patch(
            "configmap settings -n web",
            "merge",
            r#"{"data":{"mode":"slow"}}"#,
        )
        .await
        .success();
    let modified = fleet
        .deployment_where("dev", "demo-app", "Modified", |d| {
            state(d).as_deref() == Some("Modified")
        })
        .await;
    let reported =
        serde_json::to_string(&modified.status.expect("status").modified_status).expect("JSON");
    assert!(reported.contains("/data/mode"), "{reported}");
    fleet.stop().await;
}

/// The registration hijack: holding only the shared registration token, ask for an existing
/// cluster's name. The controller refuses, and the credential stays its owner's; the owner,
/// rescheduled with no data of its own after the token is gone, goes on with the credential
/// it kept in its cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_keeps_its_credential_and_nobody_else_gets_it() {
    let mut fleet = RealFleet::with_dev().await;
    fleet.cluster_namespace("dev").await;
    let clusters: Api<fleet_api::Cluster> = Api::namespaced(fleet.client.clone(), NS);
    let dev = clusters.get("dev").await.expect("Cluster dev");
    let kube_system: Namespace = Api::all(fleet.cluster("dev").client().await)
        .get("kube-system")
        .await
        .expect("kube-system");
    assert_eq!(
        dev.spec.client_id, kube_system.metadata.uid,
        "registered as its cluster"
    );

    // Another holder of the token asks for `dev`.
    let thief = fleet_testkit::client_for(&fleet.token).await;
    let random = "ab".repeat(32);
    let token_file = kube::config::Kubeconfig::read_from(&fleet.token).expect("token file");
    let user = token_file.contexts[0]
        .context
        .clone()
        .expect("context")
        .user
        .expect("user");
    let token_name = user.trim_start_matches("import-").to_string();
    let request: ClusterRegistration = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistration",
        "metadata": {"name": "dev-stolen", "namespace": NS,
                     "labels": {fleet_api::labels::TOKEN_LABEL: token_name}},
        "spec": {"clientID": "guessed", "clusterName": "dev", "clientRandom": random},
    }))
    .expect("ClusterRegistration");
    Api::<ClusterRegistration>::namespaced(thief.clone(), NS)
        .create(&PostParams::default(), &request)
        .await
        .expect("the token may ask");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stolen = Api::<Secret>::namespaced(thief, NS)
        .get_opt(&format!("c-{random}"))
        .await;
    assert!(
        matches!(stolen, Err(kube::Error::Api(ref r)) if r.code == 403)
            || matches!(stolen, Ok(None)),
        "the thief reads no credential: {stolen:?}"
    );
    let asked = Api::<ClusterRegistration>::namespaced(fleet.client.clone(), NS)
        .get("dev-stolen")
        .await
        .expect("the request");
    assert!(!asked.status.is_some_and(|s| s.granted), "not granted");

    // dev's agent is rescheduled once its registration token is gone.
    fleet.kill_agent("dev").await;
    let tokens: Api<fleet_api::ClusterRegistrationToken> =
        Api::namespaced(fleet.client.clone(), NS);
    tokens
        .delete_collection(&Default::default(), &Default::default())
        .await
        .expect("tokens deleted");
    fleet.join("dev", &["--label", "env=dev"]);
    fleet.repo.write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\ndata:\n  a: b\n",
    );
    fleet.repo.commit("app");
    fleet.gitrepo_to_all("later", &["app"]).await;
    fleet
        .deployment_where("dev", "later-app", "Ready", ready)
        .await;
    fleet.stop().await;
}

const SETTINGS_V1: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: one\n";
const SETTINGS_V2: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: two\n";

/// Each commit makes new Contents; the ones no deployment names any more are deleted, so
/// that etcd does not keep every variant ever rendered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contents_nobody_deploys_are_deleted() {
    let fleet = RealFleet::with_dev().await;
    fleet.repo.write("app/cm.yaml", SETTINGS_V1);
    fleet.repo.commit("one");
    fleet.gitrepo_to_all("demo", &["app"]).await;
    let first = fleet
        .deployment_where("dev", "demo-app", "Ready", ready)
        .await;
    let first_content = content_of(&first);
    fleet.repo.write("app/cm.yaml", SETTINGS_V2);
    fleet.repo.commit("two");
    let second = fleet
        .deployment_where("dev", "demo-app", "Ready at the second commit", |d| {
            ready(d) && content_of(d) != first_content
        })
        .await;
    let contents: Api<fleet_api::Content> = Api::all(fleet.client.clone());
    eventually("the first commit's Content deleted", WAIT, || async {
        contents
            .get_opt(&first_content)
            .await
            .expect("read")
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        contents
            .get_opt(&content_of(&second))
            .await
            .expect("read")
            .is_some(),
        "the Content in use stays"
    );
    fleet.stop().await;
}

/// The Content a deployment names (its `deploymentID` up to the colon).
fn content_of(deployment: &fleet_api::BundleDeployment) -> String {
    let id = deployment.spec.deployment_id.clone().unwrap_or_default();
    id.split(':').next().unwrap_or_default().to_string()
}

const CRD_AND_OBJECT: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: big
spec:
  size: 3
  color: red
"#;

/// A CRD and an object of its kind in one bundle: a real API server serves the kind only
/// once the CRD is Established, and prunes what its schema does not know (`color`),
/// which is not drift.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crd_and_its_objects_deploy_together() {
    let fleet = RealFleet::with_dev().await;
    fleet
        .repo
        .write("widgets/fleet.yaml", "defaultNamespace: shop\n")
        .write("widgets/all.yaml", CRD_AND_OBJECT);
    fleet.repo.commit("widgets");
    fleet.gitrepo_to_all("demo", &["widgets"]).await;
    let deployment = fleet
        .deployment_where("dev", "demo-widgets", "Ready", ready)
        .await;
    assert!(deployment.status.expect("status").non_modified);
    let widget = fleet
        .get("dev", &["get", "widgets.example.com", "big", "-n", "shop"])
        .expect("the Widget");
    assert_eq!(widget["spec"], json!({"size": 3}), "pruned by its schema");
    fleet.stop().await;
}

/// Bundles near etcd's object limit: one large but compressible is stored compressed
/// (`base64+gz`, as Fleet stores it) and deploys; one too large even compressed is refused
/// with a message naming it, and the GitRepo's other bundles deploy.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bundle_near_the_size_limit_is_compressed_and_one_over_it_is_named() {
    let fleet = RealFleet::with_dev().await;
    let config_map = |name: &str, text: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  text: {text}\n"
        )
    };
    // 1.8 MB of text that compresses well.
    let repetitive: String = (0..45_000).map(|i| format!("line{i:05} ")).collect();
    for part in 0..4 {
        fleet.repo.write(
            &format!("big/part{part}.yaml"),
            &config_map(&format!("big-{part}"), &repetitive),
        );
    }
    // 2.25 MB that does not.
    for part in 0..3 {
        let noise = fleet_testkit::incompressible(750_000, part + 1);
        fleet.repo.write(
            &format!("huge/part{part}.yaml"),
            &config_map(&format!("huge-{part}"), &noise),
        );
    }
    fleet.repo.commit("large");
    fleet.gitrepo_to_all("demo", &["big", "huge"]).await;
    fleet
        .deployment_where("dev", "demo-big", "Ready", ready)
        .await;
    let bundle = fleet
        .get("management", &["get", "bundle", "demo-big", "-n", NS])
        .expect("the Bundle");
    assert_eq!(bundle["spec"]["resources"][0]["encoding"], "base64+gz");
    let gitrepos: Api<fleet_api::GitRepo> = Api::namespaced(fleet.client.clone(), NS);
    let errors = eventually("the GitRepo names the bundle too large", WAIT, || async {
        let status = gitrepos.get("demo").await.ok()?.status?;
        (!status.resource_errors.is_empty()).then_some(status.resource_errors)
    })
    .await;
    let message = errors.join("\n");
    assert!(
        message.contains("huge/") && message.contains("demo-huge") && message.contains("1.5 MiB"),
        "{message}"
    );
    fleet.stop().await;
}

/// A Deployment whose selector (immutable) changes, with `helm.force`: replaced at once,
/// without waiting for its old Pods to take their 120 s to stop.
const FORCED_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web, track: TRACK}
  template:
    metadata:
      labels: {app: web, track: TRACK}
      annotations: {simulate.fleet-rs.io/slow-stop: "true"}
    spec:
      terminationGracePeriodSeconds: 120
      containers:
      - name: web
        image: nginx:1.27
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_forced_replace_does_not_wait_for_the_old_pods_to_stop() {
    let fleet = RealFleet::with_dev().await;
    fleet
        .repo
        .write(
            "app/fleet.yaml",
            "defaultNamespace: web\nhelm:\n  force: true\n",
        )
        .write("app/web.yaml", &FORCED_DEPLOYMENT.replace("TRACK", "blue"));
    fleet.repo.commit("blue");
    fleet.gitrepo_to_all("demo", &["app"]).await;
    let blue = fleet
        .deployment_where("dev", "demo-app", "Ready", ready)
        .await;
    fleet
        .repo
        .write("app/web.yaml", &FORCED_DEPLOYMENT.replace("TRACK", "green"));
    fleet.repo.commit("green");
    let started = std::time::Instant::now();
    fleet
        .deployment_where("dev", "demo-app", "Ready at the new selector", |d| {
            ready(d) && d.spec.deployment_id != blue.spec.deployment_id
        })
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "replaced in {:?}, not after the old Pods' grace period",
        started.elapsed()
    );
    let web = fleet
        .get("dev", &["get", "deployment", "web", "-n", "web"])
        .expect("the Deployment");
    assert_eq!(web["spec"]["selector"]["matchLabels"]["track"], "green");
    fleet.stop().await;
}

/// An aggregated API that is down, as metrics-server often is: the APIService is there,
/// its Service is not, and discovery of that one group version fails.
const METRICS_API_DOWN: &str = r#"apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service:
    name: metrics-server
    namespace: kube-system
"#;

const CAPABILITIES_CHART: &str = "apiVersion: v2\nname: caps\nversion: 0.1.0\n";
const CAPABILITIES_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: capabilities
data:
  widgets: {{ if .Capabilities.APIVersions.Has "example.com/v1" }}"served"{{ else }}"missing"{{ end }}
  round: {{ .Values.round | quote }}
"#;

/// A bundle rendered in the member (it reads `.Capabilities`) while one aggregated API is
/// down, and again after a CRD was installed there: the first render leaves the broken
/// group out, the second sees the new kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn member_rendering_survives_a_broken_api_and_sees_new_kinds() {
    let mut fleet = RealFleet::start(&["dev"]).await;
    let dev = fleet.kubectl("dev");
    dev.run_with(&["apply", "-f", "-"], METRICS_API_DOWN)
        .await
        .success();
    fleet.join("dev", &["--label", "env=dev"]);
    let write_round = |round: u32| {
        fleet
            .repo
            .write("caps/Chart.yaml", CAPABILITIES_CHART)
            .write("caps/templates/cm.yaml", CAPABILITIES_TEMPLATE)
            .write(
                "caps/fleet.yaml",
                &format!("defaultNamespace: caps\nhelm:\n  values:\n    round: {round}\n"),
            );
        fleet.repo.commit(&format!("round {round}"));
    };
    write_round(1);
    fleet.gitrepo_to_all("demo", &["caps"]).await;
    fleet
        .deployment_where("dev", "demo-caps", "Ready", ready)
        .await;
    let data = |fleet: &RealFleet| {
        fleet
            .get("dev", &["get", "configmap", "capabilities", "-n", "caps"])
            .map(|cm| cm["data"].clone())
    };
    assert_eq!(data(&fleet).expect("the ConfigMap")["widgets"], "missing");

    let crd = CRD_AND_OBJECT.split("---").next().expect("the CRD");
    dev.run_with(&["apply", "-f", "-"], crd).await.success();
    dev.run(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
    ])
    .await
    .success();
    // Longer than a discovery answers for.
    tokio::time::sleep(Duration::from_secs(6)).await;
    write_round(2);
    eventually("the second render sees example.com/v1", WAIT, || async {
        let data = data(&fleet)?;
        (data["round"] == "2" && data["widgets"] == "served").then_some(())
    })
    .await;
    fleet.stop().await;
}

/// A bundle copies a Secret downstream: a change to it redeploys, and the controller
/// watches that one Secret, not every Secret and ConfigMap of the management cluster (as
/// its audit log shows).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_the_secrets_bundles_name_are_watched() {
    let fleet = RealFleet::with_dev().await;
    let management = fleet.kubectl(real::MANAGEMENT);
    let secret = |value: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: {NS}\nstringData:\n  password: {value}\n")
    };
    management
        .run_with(&["apply", "-f", "-"], &secret("first"))
        .await
        .success();
    fleet
        .repo
        .write(
            "app/fleet.yaml",
            "defaultNamespace: shop\ndownstreamResources:\n- kind: Secret\n  name: creds\n",
        )
        .write("app/cm.yaml", SETTINGS_V1);
    fleet.repo.commit("app");
    fleet.gitrepo_to_all("demo", &["app"]).await;
    let password = |fleet: &RealFleet| {
        let copy = fleet.get("dev", &["get", "secret", "creds", "-n", "shop"])?;
        let encoded = copy["data"]["password"].as_str()?.to_string();
        use base64::Engine;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        String::from_utf8(decoded).ok()
    };
    eventually("the Secret copied to dev", WAIT, || async {
        (password(&fleet)? == "first").then_some(())
    })
    .await;
    management
        .run_with(&["apply", "-f", "-"], &secret("second"))
        .await
        .success();
    eventually("the changed Secret redeployed", WAIT, || async {
        (password(&fleet)? == "second").then_some(())
    })
    .await;
    // The controller follows what bundles name every 2 s: the change may have been
    // redeployed (a reconcile reads the Secret) before its watch started.
    let watches_creds = |uri: &str| {
        uri.starts_with(&format!("/api/v1/namespaces/{NS}/secrets"))
            && uri.contains("watch=true")
            && uri.contains("metadata.name%3Dcreds")
    };
    let audit = eventually("the one Secret watched", WAIT, || async {
        let audit = fleet.cluster(real::MANAGEMENT).audit();
        let watched = audit.iter().any(|entry| {
            entry["user"]["username"] == "admin"
                && entry["requestURI"].as_str().is_some_and(watches_creds)
        });
        watched.then_some(audit)
    })
    .await;
    let fleets: Vec<&str> = audit
        .iter()
        .filter(|entry| entry["user"]["username"] == "admin")
        .filter_map(|entry| entry["requestURI"].as_str())
        .collect();
    let wide: Vec<&&str> = fleets
        .iter()
        .filter(|uri| uri.starts_with("/api/v1/secrets") || uri.starts_with("/api/v1/configmaps"))
        .collect();
    assert!(wide.is_empty(), "cluster-wide lists and watches: {wide:?}");
    assert!(
        fleets.iter().any(|uri| watches_creds(uri)),
        "the one Secret is watched: {fleets:?}"
    );
    fleet.stop().await;
}

/// Leader election on a real Lease. A replica that stops lets the Lease go and the next
/// takes over at once; a holder whose clock is an hour behind keeps the Lease while it
/// renews and loses it a Lease duration after it stops; a leader that can no longer renew
/// stops working before its Lease runs out, so that two never work at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_election_hands_over_cleanly() {
    use fleet_objects::leader::Election;
    use k8s_openapi::api::coordination::v1::Lease;

    let plane = fleet_testkit::RealControlPlane::start(&["management"]).await;
    let cluster = plane.cluster("management");
    let admin = cluster.client().await;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "default");
    let holder = |name: &'static str| {
        let leases = leases.clone();
        async move {
            leases
                .get_opt(name)
                .await
                .ok()
                .flatten()
                .and_then(|l| l.spec?.holder_identity)
        }
    };
    let lease = Duration::from_secs(6);
    let replica = |client: kube::Client, lease_name: &str, name: &str| {
        Election::new(client, "default", lease_name, name, "fleet-e2e", lease)
    };

    // A leader whose work ends (its process got SIGTERM) lets the Lease go.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let one = replica(admin.clone(), "handover", "one");
    let first = tokio::spawn(async move {
        one.lead(async {
            let _ = stopped.await;
        })
        .await
    });
    eventually("one leading", WAIT, || async {
        (holder("handover").await.as_deref() == Some("one")).then_some(())
    })
    .await;
    let two = replica(admin.clone(), "handover", "two");
    let second = tokio::spawn(async move { two.lead(std::future::pending()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = stop.send(());
    let released = std::time::Instant::now();
    assert!(
        !first.await.expect("first replica"),
        "it stopped, it did not lose"
    );
    eventually("two leading", WAIT, || async {
        (holder("handover").await.as_deref() == Some("two")).then_some(())
    })
    .await;
    assert!(
        released.elapsed() < lease / 2,
        "taken over in {:?}, not after the {lease:?} Lease ran out",
        released.elapsed()
    );
    second.abort();

    // A holder whose clock is an hour behind ours renews its Lease: it stays its own.
    let skewed = |renewed: k8s_openapi::jiff::Timestamp| {
        serde_json::json!({"spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 6,
            "renewTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(renewed)}})
    };
    let an_hour_ago =
        || k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_hours(1);
    let ghost_lease: Lease = serde_json::from_value(serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skewed", "namespace": "default"},
        "spec": skewed(an_hour_ago())["spec"],
    }))
    .expect("Lease");
    leases
        .create(&PostParams::default(), &ghost_lease)
        .await
        .expect("the ghost's Lease");
    let ghost = tokio::spawn({
        let leases = leases.clone();
        async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let _ = leases
                    .patch(
                        "skewed",
                        &kube::api::PatchParams::default(),
                        &kube::api::Patch::Merge(skewed(an_hour_ago())),
                    )
                    .await;
            }
        }
    });
    let three = replica(admin.clone(), "skewed", "three");
    let third = tokio::spawn(async move { three.lead(std::future::pending()).await });
    tokio::time::sleep(lease * 2).await;
    assert_eq!(
        holder("skewed").await.as_deref(),
        Some("ghost"),
        "still the ghost's"
    );
    ghost.abort();
    let gone = std::time::Instant::now();
    eventually("three leading", WAIT, || async {
        (holder("skewed").await.as_deref() == Some("three")).then_some(())
    })
    .await;
    assert!(
        gone.elapsed() >= lease - Duration::from_secs(1),
        "not before the Lease ran out"
    );
    third.abort();

    // A leader whose renewals are refused stops before its Lease runs out.
    let account = "elector";
    let kubectl = cluster.kubectl();
    kubectl
        .run(&["create", "serviceaccount", account, "-n", "default"])
        .await
        .success();
    kubectl
        .run(&[
            "create",
            "role",
            account,
            "-n",
            "default",
            "--verb=get,create,update",
            "--resource=leases",
        ])
        .await
        .success();
    kubectl
        .run(&[
            "create",
            "rolebinding",
            account,
            "-n",
            "default",
            "--role",
            account,
            &format!("--serviceaccount=default:{account}"),
        ])
        .await
        .success();
    let token = cluster.account_token("default", account).await;
    let elector =
        fleet_testkit::client_for(&cluster.kubeconfig_for(account, &token, "default")).await;
    let four = replica(elector, "refused", "four");
    let fourth = tokio::spawn(async move { four.lead(std::future::pending()).await });
    eventually("four leading", WAIT, || async {
        (holder("refused").await.as_deref() == Some("four")).then_some(())
    })
    .await;
    kubectl
        .run(&["delete", "rolebinding", account, "-n", "default"])
        .await
        .success();
    let refused = std::time::Instant::now();
    let lost = tokio::time::timeout(lease * 2, fourth)
        .await
        .expect("it stopped")
        .expect("the replica");
    assert!(lost, "it lost the Lease");
    assert!(
        refused.elapsed() < lease,
        "it worked on for {:?} with a {lease:?} Lease",
        refused.elapsed()
    );
}

const WEB_CHART: &str = "apiVersion: v2\nname: web\nversion: 1.0.0\n";
const WEB_TEMPLATES: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources:
          requests: {cpu: 0.1, memory: 64Mi}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  message: {{ .Values.message | quote }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: busybox:1.36
"#;

/// A Helm chart on two members picked by labels, each with its own values: its
/// pre-install hook Job runs to completion first (the real job controller, the fake
/// kubelet) and is deleted as its policy says; real Helm lists the release; a hand edit is
/// corrected; deleting the GitRepo uninstalls everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_chart_per_cluster_with_hooks_correction_and_uninstall() {
    let mut fleet = RealFleet::start(&["dev", "prod"]).await;
    fleet.join("dev", &["--label", "env=dev"]);
    fleet.join("prod", &["--label", "env=prod"]);
    fleet
        .repo
        .write("web/Chart.yaml", WEB_CHART)
        .write("web/templates/all.yaml", WEB_TEMPLATES)
        .write(
            "web/fleet.yaml",
            "defaultNamespace: web\nhelm:\n  values:\n    message: default\ncorrectDrift:\n  enabled: true\n\
             targetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels: {env: prod}\n  helm:\n    values:\n      message: from-prod\n",
        );
    fleet.repo.commit("web");
    fleet
        .gitrepo(
            "demo",
            json!({"paths": ["web"], "targets": [{"clusterSelector": {"matchExpressions": [
                {"key": "env", "operator": "In", "values": ["dev", "prod"]}]}}]}),
        )
        .await;
    for (member, message) in [("dev", "default"), ("prod", "from-prod")] {
        fleet
            .deployment_where(member, "demo-web", "Ready", ready)
            .await;
        let settings = fleet
            .get(member, &["get", "configmap", "web-settings", "-n", "web"])
            .expect("the ConfigMap");
        assert_eq!(settings["data"]["message"], message, "{member}");
        assert!(
            fleet
                .get(member, &["get", "job", "migrate", "-n", "web"])
                .is_none(),
            "{member}: the hook Job deleted once it succeeded"
        );
        let history = helm(
            &real_tool("helm4"),
            fleet.cluster(member).kubeconfig(),
            &fleet.dir.path().join("helm"),
            &["history", "demo-web", "-n", "web", "-o", "json"],
        );
        let history: serde_json::Value = serde_json::from_str(&history).expect("JSON");
        assert_eq!(history[0]["status"], "deployed", "{member}: {history}");
    }

    fleet
        .kubectl("dev")
        .patch(
            "configmap web-settings -n web",
            "merge",
            r#"{"data":{"message":"by-hand"}}"#,
        )
        .await
        .success();
    eventually("the hand edit corrected", WAIT, || async {
        let settings = fleet.get("dev", &["get", "configmap", "web-settings", "-n", "web"])?;
        (settings["data"]["message"] == "default").then_some(())
    })
    .await;

    fleet
        .kubectl(real::MANAGEMENT)
        .run(&["delete", "gitrepo", "demo", "-n", NS, "--wait=false"])
        .await
        .success();
    for member in ["dev", "prod"] {
        eventually(&format!("{member} uninstalled"), WAIT, || async {
            let left = fleet.get(
                member,
                &[
                    "get",
                    "deployments,configmaps,secrets",
                    "-n",
                    "web",
                    "-l",
                    "!kubernetes.io/service-account.name",
                ],
            )?;
            let names: Vec<String> = left["items"]
                .as_array()?
                .iter()
                .filter_map(|item| item["metadata"]["name"].as_str().map(String::from))
                .filter(|name| name != "kube-root-ca.crt")
                .collect();
            names.is_empty().then_some(())
        })
        .await;
    }
    eventually("the Bundles and deployments gone", WAIT, || async {
        let bundles = fleet.get(
            real::MANAGEMENT,
            &["get", "bundles,bundledeployments", "-A"],
        )?;
        bundles["items"].as_array()?.is_empty().then_some(())
    })
    .await;
    fleet.stop().await;
}

/// In the member: the account `deployer`, which may make namespaces and write ConfigMaps
/// and Secrets anywhere, and nothing else.
const DEPLOYER: &str = include_str!("fixtures/deployer-rbac.yaml");

/// A GitRepo's `serviceAccount` bounds what its bundles may write on the member (the agent
/// impersonates it there: kube-apiserver's RBAC decides); a Policy of the GitRepo's
/// namespace refuses a bundle naming an account it does not allow; a sharded GitRepo is
/// left to its shard's gitjob and controller.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn service_accounts_policies_and_shards_bound_what_is_deployed() {
    let mut fleet = RealFleet::start(&["dev"]).await;
    fleet
        .kubectl("dev")
        .run_with(&["apply", "-f", "-"], DEPLOYER)
        .await
        .success();
    fleet.join("dev", &["--label", "env=dev"]);
    let deployment = FORCED_DEPLOYMENT.replace("TRACK", "blue");
    fleet
        .repo
        .write(
            "allowed/fleet.yaml",
            "defaultNamespace: shop\nserviceAccount: deployer\n",
        )
        .write("allowed/cm.yaml", SETTINGS_V1)
        .write(
            "denied/fleet.yaml",
            "defaultNamespace: shop\nserviceAccount: deployer\n",
        )
        .write("denied/web.yaml", &deployment)
        .write(
            "intruder/fleet.yaml",
            "defaultNamespace: other\nserviceAccount: intruder\n",
        )
        .write("intruder/cm.yaml", SETTINGS_V1);
    fleet.repo.commit("accounts");
    let policy = format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: Policy\nmetadata:\n  name: tenants\n  namespace: {NS}\n\
         requireServiceAccount: true\nallowedServiceAccounts: [deployer]\nallowNamespaceCreation: true\n"
    );
    fleet
        .kubectl(real::MANAGEMENT)
        .run_with(&["apply", "-f", "-"], &policy)
        .await
        .success();
    fleet
        .gitrepo(
            "demo",
            json!({"paths": ["allowed", "denied", "intruder"], "serviceAccount": "deployer",
                   "targets": [{"clusterSelector": {}}]}),
        )
        .await;
    fleet
        .deployment_where("dev", "demo-allowed", "Ready", ready)
        .await;
    let denied = fleet
        .deployment_where("dev", "demo-denied", "refused by RBAC", |d| {
            state(d).as_deref() == Some("ErrApplied")
        })
        .await;
    let message = serde_json::to_string(&denied.status).expect("JSON");
    assert!(
        message.contains("system:serviceaccount:cattle-fleet-system:deployer")
            && message.contains("forbidden"),
        "{message}"
    );
    let bundles: Api<fleet_api::Bundle> = Api::namespaced(fleet.client.clone(), NS);
    let refused = eventually("the Policy refusing the bundle's account", WAIT, || async {
        let status = bundles.get("demo-intruder").await.ok()?.status?;
        let message = serde_json::to_string(&status).ok()?;
        message
            .contains("refused by Policy tenants")
            .then_some(message)
    })
    .await;
    assert!(refused.contains("intruder"), "{refused}");

    // A GitRepo of shard `blue` waits for blue's gitjob and controller.
    fleet
        .repo
        .write(
            "blue/fleet.yaml",
            "defaultNamespace: shop\nserviceAccount: deployer\n",
        )
        .write("blue/cm.yaml", &SETTINGS_V1.replace("settings", "blue"));
    fleet.repo.commit("blue");
    fleet
        .gitrepo_labelled(
            "sharded",
            json!({"fleet.cattle.io/shard-ref": "blue"}),
            json!({"paths": ["blue"], "serviceAccount": "deployer",
                   "targets": [{"clusterSelector": {}}]}),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        fleet
            .get(
                real::MANAGEMENT,
                &["get", "bundle", "sharded-blue", "-n", NS]
            )
            .is_none(),
        "the unsharded gitjob leaves shard blue's GitRepo alone"
    );
    fleet.run_shard("blue");
    fleet
        .deployment_where("dev", "sharded-blue", "Ready", ready)
        .await;
    fleet.stop().await;
}

/// `fleet_objects::quantity` writes quantities as kube-apiserver stores them (the agent's
/// drift comparison relies on it): many quantities written every way, stored by a real
/// API server as a PodTemplate's emptyDir size limits, and read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quantities_are_written_as_the_api_server_writes_them() {
    let plane = fleet_testkit::RealControlPlane::start(&["management"]).await;
    let client = plane.cluster("management").client().await;
    let templates: Api<k8s_openapi::api::core::v1::PodTemplate> =
        Api::namespaced(client, "default");
    let suffixes = [
        "", "", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "n", "u", "e3", "E6", "e-3", "e0",
    ];
    let mut state = 0x2545_f491_u64;
    let mut random = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut written = Vec::new();
    while written.len() < 400 {
        let digits: String = (0..1 + random(7))
            .map(|_| char::from(b'0' + random(10) as u8))
            .collect();
        let whole = if random(5) == 0 {
            format!("0{digits}")
        } else {
            digits
        };
        let fraction: String = match random(3) {
            0 => String::new(),
            _ => format!(
                ".{}",
                (0..1 + random(4))
                    .map(|_| char::from(b'0' + random(10) as u8))
                    .collect::<String>()
            ),
        };
        let sign = if random(10) == 0 { "+" } else { "" };
        let suffix = suffixes[random(suffixes.len() as u64) as usize];
        let text = format!("{sign}{whole}{fraction}{suffix}");
        if fleet_objects::quantity::canonical(&text).is_some() {
            written.push(text);
        }
    }
    for (batch, texts) in written.chunks(50).enumerate() {
        let volumes: Vec<serde_json::Value> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| json!({"name": format!("v{i}"), "emptyDir": {"sizeLimit": text}}))
            .collect();
        let template: k8s_openapi::api::core::v1::PodTemplate = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": format!("quantities-{batch}")},
            "template": {"spec": {"containers": [{"name": "c", "image": "x"}], "volumes": volumes}},
        }))
        .expect("PodTemplate");
        let stored = serde_json::to_value(
            templates
                .create(&PostParams::default(), &template)
                .await
                .unwrap_or_else(|e| panic!("the API server refused one of {texts:?}: {e}")),
        )
        .expect("JSON");
        for (i, text) in texts.iter().enumerate() {
            let kept = &stored["template"]["spec"]["volumes"][i]["emptyDir"]["sizeLimit"];
            let ours = fleet_objects::quantity::canonical(text);
            assert_eq!(kept.as_str(), ours.as_deref(), "{text:?}");
        }
    }
}

/// A HelmOp on real clusters: kube-apiserver serves its CRD and takes it from kubectl,
/// the chart comes from a repository real Helm made, the registered agent deploys it, and
/// a release published later is followed within the polling interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_helmop_deploys_its_chart_and_follows_new_releases() {
    const TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  version: {{ .Chart.Version | quote }}\n";
    let fleet = RealFleet::with_dev().await;
    let repo = tempfile::tempdir().expect("repository dir");
    fleet_testkit::publish_chart(repo.path(), "web", "1.0.0", TEMPLATE);
    let server = fleet_testkit::FileServer::start(repo.path()).expect("file server");
    let helmop = json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "HelmOp",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "helm": {"repo": server.url, "chart": "web", "version": "^1.0.0"},
            "pollingInterval": "1s",
            "namespace": "web",
            "targets": [{"clusterSelector": {"matchLabels": {"env": "dev"}}}],
        },
    });
    fleet
        .kubectl(real::MANAGEMENT)
        .run_with(&["apply", "-f", "-"], &helmop.to_string())
        .await
        .success();
    let deployed = |version: &'static str| {
        let fleet = &fleet;
        async move {
            eventually(&format!("web {version} on dev"), WAIT, || async {
                let config = fleet.get("dev", &["get", "configmap", "web-config", "-n", "web"])?;
                (config["data"]["version"] == version).then_some(())
            })
            .await;
        }
    };
    deployed("1.0.0").await;
    fleet_testkit::publish_chart(repo.path(), "web", "1.1.0", TEMPLATE);
    deployed("1.1.0").await;
    let status = fleet
        .get(real::MANAGEMENT, &["get", "helmop", "web", "-n", NS])
        .expect("the HelmOp")["status"]
        .clone();
    assert_eq!(status["version"], "1.1.0", "{status}");
    fleet.stop().await;
}
