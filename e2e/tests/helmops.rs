//! HelmOps, as Fleet's own tests use them (`integrationtests/helmops/controller` and the
//! single-cluster e2e `helmop_test.go`, restated): a chart from a Helm repository that real
//! Helm packaged and indexed, deployed with no Git repository to a member by its agent, its
//! version range followed as new releases are published; Fleet's refusals in Fleet's words;
//! a private repository reached with `helmSecretName`. HelmOps are written with real
//! kubectl, as a user writes them, in the shape of Fleet's e2e assets.

mod common;

use std::path::Path;

use common::{Fleet, NS, WAIT};
use fleet_testkit::{eventually, publish_chart, ChartServer, FileServer};
use serde_json::{json, Value};

/// The chart's one template: ConfigMap `alpine-config` saying the chart's version.
const TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alpine-config\ndata:\n  version: {{ .Chart.Version | quote }}\n";

/// Publishes chart `alpine` at `version` into `repo` with real Helm.
fn publish(repo: &Path, version: &str) {
    publish_chart(repo, "alpine", version, TEMPLATE);
}

/// A Helm repository directory holding `alpine` 0.1.0 and 0.2.0, and its server.
fn alpine_repository() -> (tempfile::TempDir, FileServer) {
    let work = tempfile::tempdir().expect("repository dir");
    publish(work.path(), "0.1.0");
    publish(work.path(), "0.2.0");
    let server = FileServer::start(work.path()).expect("file server");
    (work, server)
}

/// A HelmOp in Fleet's e2e asset shape (`helmop/helmop.yaml`), applied with kubectl.
async fn apply_helmop(fleet: &Fleet, name: &str, helm: Value, extra: Value) {
    let mut spec = json!({"helm": helm, "namespace": "apps", "targets": [{"clusterSelector": {}}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let helmop = json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "HelmOp",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    });
    fleet
        .kubectl("local")
        .run_with(&["apply", "-f", "-"], &helmop.to_string())
        .await
        .success();
}

/// The HelmOp's status, once `ready` says it is as wanted.
async fn helmop_status(
    fleet: &Fleet,
    name: &str,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, WAIT, || async {
        let helmop = fleet.get("local", &["get", "helmop", name, "-n", NS])?;
        ready(&helmop["status"]).then(|| helmop["status"].clone())
    })
    .await
}

fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Waits until the member's ConfigMap in `namespace` says `version`.
async fn deployed_version(fleet: &Fleet, namespace: &str, version: &str) {
    eventually(&format!("alpine {version} deployed"), WAIT, || async {
        let config = fleet.get(
            "dev",
            &["get", "configmap", "alpine-config", "-n", namespace],
        )?;
        (config["data"]["version"] == version).then_some(())
    })
    .await;
}

/// Fleet's "version resolution" and "polling" cases end to end: the newest version a range
/// admits is deployed, a release published later is followed within the polling interval,
/// `kubectl get helmops` shows it, pinning an exact version goes back to it, and the
/// Bundle (labelled, without files, owned by the HelmOp) goes with the HelmOp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helmop_deploys_the_newest_matching_release_and_follows_new_ones() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let (work, server) = alpine_repository();
    let repo = work.path().to_path_buf();
    let helm = |version: &str| json!({"releaseName": "testhelm", "repo": server.url, "chart": "alpine", "version": version});
    apply_helmop(
        &fleet,
        "alpine",
        helm("0.x.x"),
        json!({"pollingInterval": "1s", "labels": {"team": "a"}}),
    )
    .await;

    let status = helmop_status(&fleet, "alpine", "version 0.2.0 resolved", |s| {
        s["version"] == "0.2.0"
    })
    .await;
    assert_eq!(
        condition(&status, "Accepted").map(|c| c["status"].clone()),
        Some(json!("True")),
        "{status}"
    );
    let bundle = fleet
        .get("local", &["get", "bundle", "alpine", "-n", NS])
        .expect("the Bundle");
    assert_eq!(
        bundle["metadata"]["labels"]["fleet.cattle.io/fleet-helm-name"],
        "alpine"
    );
    assert_eq!(bundle["metadata"]["labels"]["team"], "a");
    assert_eq!(bundle["metadata"]["ownerReferences"][0]["kind"], "HelmOp");
    assert_eq!(bundle["spec"]["helm"]["version"], "0.2.0");
    assert!(bundle["spec"].get("resources").is_none(), "{bundle}");
    assert!(bundle["spec"]["helmOpOptions"].is_object(), "{bundle}");
    deployed_version(&fleet, "apps", "0.2.0").await;

    publish(&repo, "0.3.0");
    helmop_status(&fleet, "alpine", "the new release followed", |s| {
        s["version"] == "0.3.0"
            && condition(s, "Polled").is_some_and(|c| c["status"] == "True")
            && s["lastPollingTriggered"].is_string()
    })
    .await;
    deployed_version(&fleet, "apps", "0.3.0").await;
    // Each version deployed is an Event on the HelmOp, as Fleet's controller records it.
    let events = fleet.events_of("alpine");
    let versions: Vec<&str> = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["reason"] == "GotNewChartVersion" && e["involvedObject"]["kind"] == "HelmOp")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(versions, ["0.2.0", "0.3.0"], "{events}");
    eventually("kubectl's columns", WAIT, || async {
        let run = fleet
            .kubectl("local")
            .run_blocking(&["get", "helmops", "-n", NS]);
        let table = run.stdout;
        let header = table.lines().next()?.split_whitespace().collect::<Vec<_>>();
        let row = table.lines().nth(1)?.split_whitespace().collect::<Vec<_>>();
        (header[..5]
            == [
                "NAME",
                "REPO",
                "CHART",
                "VERSION",
                "BUNDLEDEPLOYMENTS-READY",
            ]
            && row[..5] == ["alpine", server.url.as_str(), "alpine", "0.3.0", "1/1"])
        .then_some(())
    })
    .await;

    apply_helmop(
        &fleet,
        "alpine",
        helm("0.1.0"),
        json!({"pollingInterval": "1s", "labels": {"team": "a"}}),
    )
    .await;
    helmop_status(&fleet, "alpine", "pinned back to 0.1.0", |s| {
        s["version"] == "0.1.0"
    })
    .await;
    deployed_version(&fleet, "apps", "0.1.0").await;

    fleet
        .kubectl("local")
        .run_blocking(&["delete", "helmop", "alpine", "-n", NS])
        .success();
    eventually("the Bundle gone with its HelmOp", WAIT, || async {
        let bundles = fleet.get("local", &["get", "bundles", "-n", NS])?;
        bundles["items"].as_array()?.is_empty().then_some(())
    })
    .await;
    fleet.stop().await;
}

/// Fleet's refusals, in Fleet's words, with no Bundle written: a range nothing matches, a
/// version that is no range (mended by pinning one), a chart named by neither a chart nor a
/// repository; and a private repository, refused without its credentials and deployed from
/// with them (`helmSecretName`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helmops_are_refused_as_fleet_refuses_them_and_reach_private_repositories() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let (work, server) = alpine_repository();
    let repo = work.path().to_path_buf();
    let accepted_says = |status: &Value, says: &str| {
        condition(status, "Accepted").is_some_and(|c| {
            c["status"] == "False"
                && c["reason"] == "Error"
                && c["message"].as_str().is_some_and(|m| m.contains(says))
        })
    };

    for (name, helm, says) in [
        (
            "no-match",
            json!({"repo": server.url, "chart": "alpine", "version": "0.9.x"}),
            "no chart version found for alpine-0.9.x",
        ),
        (
            "improper",
            json!({"repo": server.url, "chart": "alpine", "version": "foo"}),
            "improper constraint: \"foo\"",
        ),
        (
            "empty",
            json!({"version": "1.0.0"}),
            "helm options invalid: non-OCI repository with an empty chart field",
        ),
    ] {
        apply_helmop(&fleet, name, helm, json!({})).await;
        helmop_status(&fleet, name, says, |s| accepted_says(s, says)).await;
    }
    apply_helmop(
        &fleet,
        "improper",
        json!({"repo": server.url, "chart": "alpine", "version": "0.1.0"}),
        json!({}),
    )
    .await;
    let mended = helmop_status(&fleet, "improper", "accepted once mended", |s| {
        condition(s, "Accepted").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(mended["version"], "0.1.0");
    let bundles = fleet
        .get("local", &["get", "bundles", "-n", NS])
        .expect("bundles");
    let names: Vec<&str> = bundles["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["improper"], "only the mended HelmOp has a Bundle");

    let archive = std::fs::read(repo.join("alpine-0.2.0.tgz")).expect("archive");
    let private = ChartServer::start_private("alpine", "0.2.0", archive, "fleet:s3cret")
        .expect("private repo");
    let helm = json!({"repo": private.url, "chart": "alpine", "version": "0.2.x"});
    // Its own namespace: `improper`'s release holds the ConfigMap in `apps`.
    apply_helmop(
        &fleet,
        "private",
        helm.clone(),
        json!({"namespace": "private"}),
    )
    .await;
    helmop_status(&fleet, "private", "refused without credentials", |s| {
        accepted_says(s, "401")
    })
    .await;
    fleet
        .kubectl("local")
        .run_blocking(&[
            "create",
            "secret",
            "generic",
            "helm-creds",
            "-n",
            NS,
            "--from-literal=username=fleet",
            "--from-literal=password=s3cret",
        ])
        .success();
    apply_helmop(
        &fleet,
        "private",
        helm,
        json!({"helmSecretName": "helm-creds", "namespace": "private"}),
    )
    .await;
    helmop_status(&fleet, "private", "resolved with credentials", |s| {
        s["version"] == "0.2.0"
    })
    .await;
    deployed_version(&fleet, "private", "0.2.0").await;

    // Fleet's policy e2e case: a helmSecretName the namespace's Policy does not allow.
    let policy = json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Policy",
        "metadata": {"name": "helm-secrets", "namespace": NS},
        "helmOp": {"allowedHelmSecretNames": ["approved-secret"]},
    });
    fleet
        .kubectl("local")
        .run_with(&["apply", "-f", "-"], &policy.to_string())
        .await
        .success();
    apply_helmop(
        &fleet,
        "policed",
        json!({"repo": server.url, "chart": "alpine", "version": "0.1.0"}),
        json!({"helmSecretName": "unapproved-secret"}),
    )
    .await;
    let says = "disallowed helmSecretName unapproved-secret";
    helmop_status(&fleet, "policed", says, |s| accepted_says(s, says)).await;
    fleet.stop().await;
}

/// Fleet's TLS cases for HelmOps: a repository whose certificate no usual root signed is
/// refused; it is reached with `insecureSkipTLSVerify`, or with its CA in the
/// `helmSecretName` Secret's `cacerts`, and the chart is deployed either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helmop_reaches_an_https_repository_by_its_ca_or_skipping_verification() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    let work = tempfile::tempdir().expect("repository dir");
    publish(work.path(), "0.2.0");
    let tls = tempfile::tempdir().expect("tls dir");
    let (server, ca) = FileServer::start_tls(work.path(), tls.path()).expect("https server");
    let helm = json!({"repo": server.url, "chart": "alpine", "version": "0.2.x"});
    apply_helmop(
        &fleet,
        "unknown-ca",
        helm.clone(),
        json!({"namespace": "one"}),
    )
    .await;
    helmop_status(&fleet, "unknown-ca", "a certificate refused", |s| {
        condition(s, "Accepted").is_some_and(|c| {
            c["status"] == "False"
                && c["message"]
                    .as_str()
                    .is_some_and(|m| m.to_lowercase().contains("certificate"))
        })
    })
    .await;
    apply_helmop(
        &fleet,
        "insecure",
        helm.clone(),
        json!({"namespace": "two", "insecureSkipTLSVerify": true}),
    )
    .await;
    let ca_secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "repo-ca", "namespace": NS},
        "stringData": {"cacerts": ca},
    });
    fleet
        .kubectl("local")
        .run_with(&["apply", "-f", "-"], &ca_secret.to_string())
        .await
        .success();
    apply_helmop(
        &fleet,
        "trusted",
        helm,
        json!({"namespace": "three", "helmSecretName": "repo-ca"}),
    )
    .await;
    for (name, namespace) in [("insecure", "two"), ("trusted", "three")] {
        helmop_status(&fleet, name, "resolved over HTTPS", |s| {
            s["version"] == "0.2.0"
        })
        .await;
        deployed_version(&fleet, namespace, "0.2.0").await;
    }
    fleet.stop().await;
}
