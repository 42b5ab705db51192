//! Findings from driving the hub with clients nobody here wrote (kubectl, Helm's
//! protobuf deletes) and with malformed requests: each test failed before its fix.

mod common;

use common::send;

use std::os::unix::fs::PermissionsExt;

use fleet_testkit::TestHub;
use serde_json::{json, Value};

async fn configmap(client: &kube::Client, name: &str, labels: Value) {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": labels}, "data": {"a": "b"}});
    let (code, _, _) = send(
        client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        object.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "creating {name}");
}

async fn exists(client: &kube::Client, name: &str) -> bool {
    let path = format!("/api/v1/namespaces/default/configmaps/{name}");
    send(client, "GET", &path, "application/json", Vec::new())
        .await
        .0
        == 200
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_dry_run_server_deletes_nothing() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    kubectl
        .run(&["create", "namespace", "keep"])
        .await
        .success();
    kubectl
        .run(&[
            "create",
            "configmap",
            "inside",
            "-n",
            "keep",
            "--from-literal=a=b",
        ])
        .await
        .success();
    let run = kubectl
        .run(&["delete", "namespace", "keep", "--dry-run=server"])
        .await
        .success();
    assert!(
        run.stdout.contains("deleted (server dry run)"),
        "{}",
        run.stdout
    );
    kubectl.run(&["get", "namespace", "keep"]).await.success();
    kubectl
        .run(&["get", "configmap", "inside", "-n", "keep"])
        .await
        .success();
}

/// The DeleteOptions Helm 4 and client-go send as protobuf: the envelope `k8s\0`, then
/// `Unknown{typeMeta{apiVersion, kind}, raw}`, raw holding `{propagationPolicy:
/// "Background", dryRun: ["All"]}` (fields 4 and 5).
fn protobuf_delete_options(dry_run: bool) -> Vec<u8> {
    fn field(number: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![
            (number << 3) | 2,
            u8::try_from(payload.len()).expect("short"),
        ];
        out.extend_from_slice(payload);
        out
    }
    let mut type_meta = field(1, b"v1");
    type_meta.extend(field(2, b"DeleteOptions"));
    let mut raw = field(4, b"Background");
    if dry_run {
        raw.extend(field(5, b"All"));
    }
    let mut body = b"k8s\0".to_vec();
    body.extend(field(1, &type_meta));
    body.extend(field(2, &raw));
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_delete_options_are_read() {
    let hub = TestHub::start(&["local"]).await;
    let client = hub.client("local").await;
    configmap(&client, "release", json!({})).await;
    let path = "/api/v1/namespaces/default/configmaps/release";
    let protobuf = "application/vnd.kubernetes.protobuf";
    let (code, _, body) = send(
        &client,
        "DELETE",
        path,
        protobuf,
        protobuf_delete_options(true),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(exists(&client, "release").await, "a dry run keeps it");
    let (code, _, body) = send(
        &client,
        "DELETE",
        path,
        protobuf,
        protobuf_delete_options(false),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(!exists(&client, "release").await, "deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_label_selectors_are_refused_and_delete_nothing() {
    let hub = TestHub::start(&["local"]).await;
    let client = hub.client("local").await;
    configmap(&client, "one", json!({"app": "a"})).await;
    configmap(&client, "two", json!({"app": "b"})).await;
    // (`app in ()` and `app notin ()` are not malformed: kube-apiserver takes them.)
    for selector in ["!!!", "app%20in%20(x", "bad%20key=x"] {
        let path = format!("/api/v1/namespaces/default/configmaps?labelSelector={selector}");
        let (code, _, body) = send(&client, "GET", &path, "application/json", Vec::new()).await;
        assert_eq!(code, 400, "list with {selector}: {body}");
        let (code, _, body) = send(&client, "DELETE", &path, "application/json", Vec::new()).await;
        assert_eq!(code, 400, "deletecollection with {selector}: {body}");
    }
    assert!(exists(&client, "one").await && exists(&client, "two").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_whose_result_is_not_an_object_are_refused() {
    let hub = TestHub::start(&["local"]).await;
    let client = hub.client("local").await;
    configmap(&client, "shape", json!({})).await;
    let path = "/api/v1/namespaces/default/configmaps/shape";
    let cases: [(&str, &str, &[u8]); 5] = [
        ("PATCH", "application/merge-patch+json", b"[1, 2]"),
        ("PATCH", "application/merge-patch+json", b"\"text\""),
        (
            "PATCH",
            "application/json-patch+json",
            b"[{\"op\": \"replace\", \"path\": \"\", \"value\": 7}]",
        ),
        ("PATCH", "application/strategic-merge-patch+json", b"[]"),
        ("PUT", "application/json", b"[\"not\", \"an\", \"object\"]"),
    ];
    for (method, content_type, body) in cases {
        let (code, _, answer) = send(&client, method, path, content_type, body.to_vec()).await;
        assert!(
            (400..500).contains(&code),
            "{method} {content_type} {}: {code} {answer}",
            String::from_utf8_lossy(body)
        );
    }
    // The connection and the object survived.
    assert!(exists(&client, "shape").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_objects_take_names_with_colons() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let rbac = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:metrics-server:aggregated-reader
rules:
- apiGroups: [metrics.k8s.io]
  resources: [pods]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:metrics-server
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:metrics-server:aggregated-reader
subjects:
- kind: ServiceAccount
  name: metrics-server
  namespace: kube-system
";
    kubectl
        .run_with(&["apply", "-f", "-"], rbac)
        .await
        .success();
    let run = kubectl
        .run(&[
            "get",
            "clusterrole",
            "system:metrics-server:aggregated-reader",
            "-o",
            "name",
        ])
        .await
        .success();
    assert_eq!(
        run.stdout.trim(),
        "clusterrole.rbac.authorization.k8s.io/system:metrics-server:aggregated-reader"
    );
    // Other kinds keep DNS names, and RBAC names still refuse what cannot be a path.
    let bad = kubectl
        .run_with(
            &["apply", "-f", "-"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: system:cm\n",
        )
        .await
        .failure();
    assert!(bad.contains("RFC 1123 subdomain"), "{bad}");
    let bad = kubectl
        .run_with(
            &["apply", "-f", "-"],
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: a%2fb\n",
        )
        .await
        .failure();
    assert!(bad.contains("may not contain"), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_and_the_tls_key_are_readable_by_the_owner_only() {
    let hub = TestHub::start(&["local"]).await;
    let data = hub.data();
    let mode = |name: &str| {
        std::fs::metadata(data.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("hub.db"), 0o600);
    assert_eq!(mode("tls/server.key"), 0o600);
    let dir_mode = std::fs::metadata(&data).expect("data").permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_bodies_impersonation_and_default_accounts() {
    let hub = TestHub::start(&["local"]).await;
    let client = hub.client("local").await;
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n";
    let (code, _, body) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/yaml",
        yaml.to_vec(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(exists(&client, "from-yaml").await);

    // Impersonation is refused, not silently ignored (which would run the request as the
    // caller).
    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("Impersonate-User", "someone-else")
        .body(Vec::new())
        .expect("request");
    match client.request::<Value>(request).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{}", status.message),
        other => panic!("impersonation must be refused: {other:?}"),
    }

    // Every namespace gets its `default` ServiceAccount, as in Kubernetes.
    let kubectl = hub.kubectl("local");
    kubectl
        .run(&["create", "namespace", "fresh"])
        .await
        .success();
    let started = std::time::Instant::now();
    loop {
        let run = kubectl
            .run(&[
                "get",
                "serviceaccount",
                "default",
                "-n",
                "fresh",
                "-o",
                "name",
            ])
            .await;
        if run.ok {
            assert_eq!(run.stdout.trim(), "serviceaccount/default");
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "no default account"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    kubectl
        .run(&["get", "serviceaccount", "default", "-n", "kube-system"])
        .await
        .success();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_are_selected_by_their_own_fields() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let objects = "apiVersion: v1
kind: Secret
metadata: {name: tls}
type: kubernetes.io/tls
data: {tls.crt: '', tls.key: ''}
---
apiVersion: v1
kind: Secret
metadata: {name: plain}
stringData: {a: b}
---
apiVersion: v1
kind: Event
metadata: {name: web.1}
involvedObject: {kind: Pod, name: web, namespace: default}
reason: Started
message: started
";
    kubectl
        .run_with(&["apply", "-f", "-"], objects)
        .await
        .success();
    let tls = kubectl
        .run(&[
            "get",
            "secrets",
            "--field-selector",
            "type=kubernetes.io/tls",
            "-o",
            "name",
        ])
        .await
        .success();
    assert_eq!(tls.stdout.trim(), "secret/tls");
    let events = kubectl
        .run(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.kind=Pod,involvedObject.name=web",
            "-o",
            "name",
        ])
        .await
        .success();
    assert_eq!(events.stdout.trim(), "event/web.1");
    let unknown = kubectl
        .run(&["get", "configmaps", "--field-selector", "type=x"])
        .await
        .failure();
    assert!(
        unknown.contains("field label not supported: type"),
        "{unknown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_the_protobuf_openapi_v2() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    // Applying a `kind: List` validates it client-side against `/openapi/v2` in protobuf.
    let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: listed, namespace: default}\n  data: {a: b}\n";
    let path = hub.dir.path().join("list.yaml");
    std::fs::write(&path, list).expect("list written");
    kubectl
        .run(&["apply", "-f", &path.to_string_lossy()])
        .await
        .success();
    assert!(exists(&hub.client("local").await, "listed").await);
    // The same validation catches a field the schema does not have.
    let wrong = list.replace("data: {a: b}", "dta: {a: b}");
    std::fs::write(&path, wrong).expect("list written");
    let refused = kubectl
        .run(&["apply", "--validate=true", "-f", &path.to_string_lossy()])
        .await
        .failure();
    assert!(refused.contains("dta"), "{refused}");

    let explained = kubectl
        .run(&[
            "explain",
            "deployment.spec.template.spec.containers",
            "--output=plaintext-openapiv2",
        ])
        .await
        .success()
        .stdout;
    assert!(
        explained.contains("RESOURCE: containers <[]Object>"),
        "{explained}"
    );
    assert!(explained.contains("livenessProbe"), "{explained}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_create_token_and_scale() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let whoami = kubectl.run(&["auth", "whoami"]).await.success().stdout;
    assert!(whoami.contains("system:admin:local"), "{whoami}");
    let can = kubectl.run(&["auth", "can-i", "delete", "nodes"]).await;
    assert_eq!(can.stdout.trim(), "yes");

    // kubectl's typed create commands send RBAC objects as protobuf.
    kubectl
        .run(&["create", "serviceaccount", "bot"])
        .await
        .success();
    kubectl
        .run(&[
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=configmaps",
        ])
        .await
        .success();
    kubectl
        .run(&[
            "create",
            "rolebinding",
            "reader",
            "--role=reader",
            "--serviceaccount=default:bot",
        ])
        .await
        .success();
    let token = kubectl
        .run(&["create", "token", "bot", "--duration=15m"])
        .await
        .success()
        .stdout;
    let token = format!("--token={}", token.trim());
    let whoami = kubectl
        .run(&[&token, "auth", "whoami"])
        .await
        .success()
        .stdout;
    assert!(
        whoami.contains("system:serviceaccount:default:bot"),
        "{whoami}"
    );
    let yes = kubectl
        .run(&[&token, "auth", "can-i", "list", "configmaps"])
        .await;
    assert_eq!(yes.stdout.trim(), "yes");
    let no = kubectl
        .run(&[&token, "auth", "can-i", "list", "secrets"])
        .await;
    assert_eq!(no.stdout.trim(), "no");
    kubectl.run(&[&token, "get", "configmaps"]).await.success();
    let refused = kubectl.run(&[&token, "get", "secrets"]).await.failure();
    assert!(refused.contains("forbidden"), "{refused}");
    let rules = kubectl
        .run(&[&token, "auth", "can-i", "--list"])
        .await
        .success()
        .stdout;
    assert!(
        rules
            .lines()
            .any(|l| l.starts_with("configmaps") && l.contains("[get list]")),
        "{rules}"
    );
    let short = kubectl
        .run(&["create", "token", "bot", "--duration=1m"])
        .await
        .failure();
    assert!(short.contains("600 seconds"), "{short}");
    // The token dies with its account, even if an account of the same name comes back.
    kubectl
        .run(&["delete", "serviceaccount", "bot"])
        .await
        .success();
    kubectl
        .run(&["create", "serviceaccount", "bot"])
        .await
        .success();
    let gone = kubectl.run(&[&token, "get", "configmaps"]).await.failure();
    assert!(gone.contains("Unauthorized"), "{gone}");

    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: nginx}]}\n";
    let path = hub.dir.path().join("deployment.yaml");
    std::fs::write(&path, deployment).expect("written");
    kubectl
        .run(&["apply", "-f", &path.to_string_lossy()])
        .await
        .success();
    kubectl
        .run(&["scale", "deployment", "web", "--replicas=5"])
        .await
        .success();
    let replicas = kubectl
        .run(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await
        .success()
        .stdout;
    assert_eq!(replicas, "5");
    let scale = kubectl
        .run(&[
            "get",
            "--raw",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
        ])
        .await
        .success()
        .json();
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(scale["status"]["selector"], "app=web");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_kinds_are_checked_against_their_schemas() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let path = hub.dir.path().join("deployment.yaml");
    let deployment = |replicas: &str, extra: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: default}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: c, image: nginx{extra}}}]\n      volumes: [{{name: v, configMap: {{name: c, defaultMode: 0755}}}}]\n      affinity: null\n")
    };
    let apply = |text: String| {
        std::fs::write(&path, text).expect("written");
        kubectl.run_blocking(&["apply", "-f", &path.to_string_lossy()])
    };
    // A wrong type is refused with the field named, as kube-apiserver refuses it (before,
    // it was stored and broke kubectl's typed commands).
    let refused = apply(deployment("two", "")).failure();
    assert!(refused.contains("spec.replicas"), "{refused}");
    // So is an unknown field under kubectl's default strict validation; without it the
    // field is dropped.
    let refused = apply(deployment("2", ", bogus: 1")).failure();
    assert!(refused.contains("unknown field"), "{refused}");
    std::fs::write(&path, deployment("2", ", bogus: 1")).expect("written");
    kubectl
        .run(&["apply", "--validate=false", "-f", &path.to_string_lossy()])
        .await
        .success();
    let stored = kubectl
        .run(&["get", "deployment", "web", "-o", "json"])
        .await
        .success()
        .json();
    let container = &stored["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "c");
    assert!(container.get("bogus").is_none(), "{container}");
    // Kubernetes' defaults are filled in, as `kubectl get -o yaml` shows them after a create.
    assert_eq!(stored["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(stored["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(container["imagePullPolicy"], "Always", "an untagged image");
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(
        stored["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
    // Nulls are dropped, and YAML's legacy octal is read as Go reads it.
    assert!(stored["spec"]["template"]["spec"].get("affinity").is_none());
    assert_eq!(
        stored["spec"]["template"]["spec"]["volumes"][0]["configMap"]["defaultMode"],
        493
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_fields_record_shared_owners_and_can_be_reset() {
    let hub = TestHub::start(&["local"]).await;
    let kubectl = hub.kubectl("local");
    let owners = || async {
        let object = kubectl
            .run(&[
                "get",
                "configmap",
                "shared",
                "-o",
                "json",
                "--show-managed-fields",
            ])
            .await
            .success()
            .json();
        let managers: Vec<String> = object["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["manager"].as_str().map(String::from))
            .collect();
        let version = object["metadata"]["resourceVersion"]
            .as_str()
            .map(String::from);
        (managers, version.unwrap_or_default())
    };
    kubectl
        .run(&["create", "configmap", "shared", "--from-literal=x=1"])
        .await
        .success();
    let path = hub.dir.path().join("shared.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {x: \"1\"}\n",
    )
    .expect("written");
    let apply = ["apply", "--server-side", "--field-manager=applier", "-f"];
    let file = path.to_string_lossy().into_owned();
    // Applying values that are already there makes the applier a co-owner (before, it was
    // not recorded, so it could never release them).
    kubectl
        .run(&[&apply[..], &[&file]].concat())
        .await
        .success();
    let (managers, version) = owners().await;
    assert_eq!(managers, ["kubectl-create", "applier"]);
    // Applying the same again writes nothing.
    kubectl
        .run(&[&apply[..], &[&file]].concat())
        .await
        .success();
    assert_eq!(owners().await.1, version, "a no-op apply does not write");
    // `[{}]` clears managedFields, as Kubernetes documents.
    kubectl
        .run(&[
            "patch",
            "configmap",
            "shared",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]"#,
        ])
        .await
        .success();
    assert!(owners().await.0.is_empty());
}
