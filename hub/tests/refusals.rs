//! Bad input and forbidden access are refused with the right Status.

mod common;

use common::send;

use fleet_testkit::TestHub;
use serde_json::json;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_and_names_are_refused() {
    let hub = TestHub::start(&["local"]).await;
    let client = hub.client("local").await;

    let huge = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"},
                      "data": {"blob": "x".repeat(4 * 1024 * 1024)}});
    let (code, reason, _) = send(
        &client,
        "POST",
        CONFIGMAPS,
        "application/json",
        huge.to_string().into_bytes(),
    )
    .await;
    assert_eq!((code, reason.as_str()), (413, "RequestEntityTooLarge"));

    let (code, reason, message) = send(
        &client,
        "POST",
        CONFIGMAPS,
        "application/json",
        b"{\"kind\": ".to_vec(),
    )
    .await;
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert!(message.contains("invalid JSON at line 1"), "{message}");

    let broken_yaml = b"metadata:\n  name: [unclosed\n".to_vec();
    let path = format!("{CONFIGMAPS}/x?fieldManager=test");
    let (code, _, message) = send(
        &client,
        "PATCH",
        &path,
        "application/apply-patch+yaml",
        broken_yaml,
    )
    .await;
    assert_eq!(code, 400);
    assert!(message.contains("line"), "{message}");

    // One 64 KiB anchor aliased 2,000 times: 72 KiB that stand for 128 MiB.
    let alias_bomb = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: bomb}}\ndata: {{a: &a {}}}\nb: [{}]\n",
        "x".repeat(64 * 1024),
        "*a, ".repeat(2000)
    );
    let bomb_path = format!("{CONFIGMAPS}/bomb?fieldManager=test");
    let (code, _, message) = send(
        &client,
        "PATCH",
        &bomb_path,
        "application/apply-patch+yaml",
        alias_bomb.into_bytes(),
    )
    .await;
    assert_eq!(code, 400);
    assert!(message.contains("aliases expand"), "{message}");

    let not_base64 = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                            "data": {"key": "not base64!"}});
    let (code, _, message) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/secrets",
        "application/json",
        not_base64.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        message.ends_with("illegal base64 data at input byte 3"),
        "{message}"
    );

    let bad_name =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_DNS"}});
    let (code, reason, message) = send(
        &client,
        "POST",
        CONFIGMAPS,
        "application/json",
        bad_name.to_string().into_bytes(),
    )
    .await;
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(message.starts_with("ConfigMap \"Not_DNS\" is invalid: metadata.name: Invalid value: \"Not_DNS\": a lowercase RFC 1123 subdomain"), "{message}");

    let wrong_kind = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let (code, _, message) = send(
        &client,
        "POST",
        CONFIGMAPS,
        "application/json",
        wrong_kind.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        message,
        "the kind in the data (Secret) does not match the expected kind (ConfigMap)"
    );

    let (code, reason, _) = send(
        &client,
        "GET",
        "/apis/example.com/v1/widgets",
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!((code, reason.as_str()), (404, "NotFound"));

    let nowhere = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let (code, _, message) = send(
        &client,
        "POST",
        "/api/v1/namespaces/missing/configmaps",
        "application/json",
        nowhere.to_string().into_bytes(),
    )
    .await;
    assert_eq!(
        (code, message.as_str()),
        (404, "namespaces \"missing\" not found")
    );

    let (code, reason, _) = send(
        &client,
        "POST",
        CONFIGMAPS,
        "application/vnd.kubernetes.protobuf",
        b"k8s\0".to_vec(),
    )
    .await;
    assert_eq!((code, reason.as_str()), (415, "UnsupportedMediaType"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_work_only_for_their_own_cluster() {
    let hub = TestHub::start(&["local", "dev"]).await;
    let dev = hub.kubectl("dev");
    dev.run(&["get", "namespaces"]).await.success();

    // dev's token pointed at local's URL.
    let text = std::fs::read_to_string(hub.kubeconfig("dev")).expect("kubeconfig");
    let crossed = hub.dir.path().join("crossed.kubeconfig");
    std::fs::write(&crossed, text.replace("/clusters/dev", "/clusters/local")).expect("written");
    let client = fleet_testkit::client_for(&crossed).await;
    let (code, reason, _) = send(
        &client,
        "GET",
        "/api/v1/namespaces",
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!((code, reason.as_str()), (401, "Unauthorized"));

    let forged = hub.dir.path().join("forged.kubeconfig");
    let token_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("token:"))
        .expect("token");
    std::fs::write(&forged, text.replace(token_line, "    token: not-a-token")).expect("written");
    let error = fleet_testkit::Kubectl::from_kubeconfig(&forged, hub.dir.path())
        .run(&["get", "ns"])
        .await
        .failure();
    // The same words kubectl prints for a bad token against kube-apiserver.
    assert_eq!(
        error.lines().last(),
        Some("error: You must be logged in to the server (the server has asked for the client to provide credentials)")
    );
}

const AGENT_RBAC: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: cluster-a
---
apiVersion: v1
kind: Namespace
metadata:
  name: cluster-b
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: agent
  namespace: cluster-a
---
apiVersion: v1
kind: Secret
metadata:
  name: agent-token
  namespace: cluster-a
  annotations:
    kubernetes.io/service-account.name: agent
type: kubernetes.io/service-account-token
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: bundledeployments
  namespace: cluster-a
rules:
- apiGroups: [fleet.cattle.io]
  resources: [bundledeployments]
  verbs: [get, list, watch]
- apiGroups: [fleet.cattle.io]
  resources: [bundledeployments/status]
  verbs: [get, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: agent
  namespace: cluster-a
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: bundledeployments
subjects:
- kind: ServiceAccount
  name: agent
  namespace: cluster-a
";

/// `cluster-a`'s agent may impersonate `cluster-b`'s `reader`, which may read that
/// namespace's BundleDeployments.
const IMPERSONATION_RBAC: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: impersonate-reader
  namespace: cluster-b
rules:
- apiGroups: [\"\"]
  resources: [serviceaccounts]
  resourceNames: [reader]
  verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: agent-impersonates-reader
  namespace: cluster-b
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: impersonate-reader
subjects:
- kind: ServiceAccount
  name: agent
  namespace: cluster-a
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: read-bundledeployments
  namespace: cluster-b
rules:
- apiGroups: [fleet.cattle.io]
  resources: [bundledeployments]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: reader
  namespace: cluster-b
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: read-bundledeployments
subjects:
- kind: ServiceAccount
  name: reader
  namespace: cluster-b
";

const BUNDLE_DEPLOYMENT: &str = "apiVersion: fleet.cattle.io/v1alpha1
kind: BundleDeployment
metadata:
  name: web
  namespace: NAMESPACE
spec:
  deploymentID: s-1
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_token_reads_its_bundle_deployments_and_writes_their_status_only() {
    let hub = TestHub::start(&["local"]).await;
    let admin = hub.kubectl("local");
    let crds = common::workspace().join("deploy/crds");
    let crds = crds.to_str().expect("utf-8");
    admin.run(&["apply", "-f", crds]).await.success();
    // Served once Established, as on any cluster.
    admin
        .run(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            "-f",
            crds,
        ])
        .await
        .success();
    admin
        .run_with(&["apply", "-f", "-"], AGENT_RBAC)
        .await
        .success();
    for ns in ["cluster-a", "cluster-b"] {
        admin
            .run_with(
                &["apply", "-f", "-"],
                &BUNDLE_DEPLOYMENT.replace("NAMESPACE", ns),
            )
            .await
            .success();
    }
    let token = admin
        .run(&[
            "get",
            "secret",
            "agent-token",
            "-n",
            "cluster-a",
            "-o",
            "jsonpath={.data.token}",
        ])
        .await
        .success()
        .stdout;
    let token = String::from_utf8(base64_decode(&token)).expect("utf-8 token");
    let text = std::fs::read_to_string(hub.kubeconfig("local")).expect("kubeconfig");
    let admin_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("token:"))
        .expect("token");
    let agent_config = hub.dir.path().join("agent.kubeconfig");
    std::fs::write(
        &agent_config,
        text.replace(admin_line, &format!("    token: {token}")),
    )
    .expect("written");
    let agent = fleet_testkit::Kubectl::from_kubeconfig(&agent_config, hub.dir.path());

    let own = agent
        .run(&["get", "bundledeployments", "-n", "cluster-a", "-o", "name"])
        .await
        .success();
    assert_eq!(own.stdout, "bundledeployment.fleet.cattle.io/web\n");
    let status = r#"{"status":{"display":{"state":"Ready"}}}"#;
    agent
        .patch(
            "bundledeployment web -n cluster-a --subresource=status",
            "merge",
            status,
        )
        .await
        .success();

    let user = "system:serviceaccount:cluster-a:agent";
    let other = agent
        .run(&["get", "bundledeployments", "-n", "cluster-b"])
        .await
        .failure();
    assert_eq!(
        other,
        format!("Error from server (Forbidden): bundledeployments.fleet.cattle.io is forbidden: User \"{user}\" cannot list resource \"bundledeployments\" in API group \"fleet.cattle.io\" in the namespace \"cluster-b\"\n")
    );
    let spec = agent
        .patch(
            "bundledeployment web -n cluster-a",
            "merge",
            r#"{"spec":{"deploymentID":"s-2"}}"#,
        )
        .await
        .failure();
    assert!(
        spec.contains("cannot patch resource \"bundledeployments\""),
        "{spec}"
    );
    let secrets = agent
        .run(&["get", "secrets", "-n", "cluster-a"])
        .await
        .failure();
    assert!(
        secrets.contains("cannot list resource \"secrets\" in API group \"\""),
        "{secrets}"
    );
    let everywhere = agent
        .run(&["get", "bundledeployments", "-A"])
        .await
        .failure();
    assert!(everywhere.contains("at the cluster scope"), "{everywhere}");

    let written = admin
        .run(&[
            "get",
            "bundledeployment",
            "web",
            "-n",
            "cluster-a",
            "-o",
            "jsonpath={.status.display.state} {.spec.deploymentID}",
        ])
        .await
        .success()
        .stdout;
    assert_eq!(written, "Ready s-1");

    // Impersonation as kube-apiserver decides it: an admin may act as the account and
    // then has exactly its rights; the account may act as another one only when RBAC
    // grants it `impersonate` on that service account.
    let as_agent = admin
        .run(&[
            "--as",
            user,
            "get",
            "bundledeployments",
            "-n",
            "cluster-a",
            "-o",
            "name",
        ])
        .await
        .success();
    assert_eq!(as_agent.stdout, own.stdout);
    let as_agent_elsewhere = admin
        .run(&["--as", user, "get", "bundledeployments", "-n", "cluster-b"])
        .await
        .failure();
    assert_eq!(as_agent_elsewhere, other);
    let reader = "system:serviceaccount:cluster-b:reader";
    let read_as_reader = [
        "--as",
        reader,
        "get",
        "bundledeployments",
        "-n",
        "cluster-b",
        "-o",
        "name",
    ];
    let not_yet = agent.run(&read_as_reader).await.failure();
    assert_eq!(
        not_yet,
        format!("Error from server (Forbidden): serviceaccounts is forbidden: User \"{user}\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"cluster-b\"\n")
    );
    admin
        .run_with(&["apply", "-f", "-"], IMPERSONATION_RBAC)
        .await
        .success();
    let as_reader = agent.run(&read_as_reader).await.success();
    assert_eq!(as_reader.stdout, "bundledeployment.fleet.cattle.io/web\n");
    // The hub keeps what an account was granted until an RBAC object changes: taking the
    // binding away, then the rules of its Role, each refuses at once.
    let unbind = [
        "delete",
        "rolebinding",
        "agent-impersonates-reader",
        "-n",
        "cluster-b",
    ];
    admin.run(&unbind).await.success();
    assert_eq!(agent.run(&read_as_reader).await.failure(), not_yet);
    admin
        .run_with(&["apply", "-f", "-"], IMPERSONATION_RBAC)
        .await
        .success();
    agent.run(&read_as_reader).await.success();
    let no_rules = r#"{"rules":[]}"#;
    admin
        .patch("role impersonate-reader -n cluster-b", "merge", no_rules)
        .await
        .success();
    assert_eq!(agent.run(&read_as_reader).await.failure(), not_yet);
    admin
        .run_with(&["apply", "-f", "-"], IMPERSONATION_RBAC)
        .await
        .success();
    let groups = admin
        .run(&[
            "--as",
            user,
            "--as-group",
            "system:masters",
            "get",
            "bundledeployments",
            "-A",
        ])
        .await
        .failure();
    assert!(
        groups.contains("impersonates service accounts only"),
        "{groups}"
    );

    // Deleting the account revokes its token at once, and its token Secret goes with it.
    admin
        .run(&["delete", "serviceaccount", "agent", "-n", "cluster-a"])
        .await
        .success();
    let revoked = agent
        .run(&["get", "bundledeployments", "-n", "cluster-a"])
        .await
        .failure();
    assert!(revoked.contains("Unauthorized"), "{revoked}");
    let gone = admin
        .run(&["get", "secret", "agent-token", "-n", "cluster-a"])
        .await
        .failure();
    assert!(gone.contains("NotFound"), "{gone}");
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .expect("base64")
}
