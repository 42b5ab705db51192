//! Kubernetes' defaults for the built-in workload kinds and Services, filled in on write as
//! kube-apiserver fills them: what `kubectl get -o yaml` shows after a create (a
//! Deployment's strategy, a container's `imagePullPolicy`, a Service's `type`...). Only
//! fields left unset are filled; nothing a client set is changed.

use serde_json::{json, Map, Value};

/// Sets `key` in `map` to `value` unless it is there already.
fn default_to(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.entry(key).or_insert(value);
}

/// The object under `key`, made empty if missing (`None` if something else is there).
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.entry(key).or_insert_with(|| json!({})).as_object_mut()
}

/// The items of the list under `key` that are objects.
fn items<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// `Always` for an image without a tag or tagged `latest` (and no digest), else
/// `IfNotPresent`.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn container(container: &mut Map<String, Value>) {
    default_to(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    default_to(container, "terminationMessagePolicy", json!("File"));
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    default_to(container, "imagePullPolicy", json!(pull_policy(&image)));
    default_to(container, "resources", json!({}));
    for port in items(container, "ports") {
        default_to(port, "protocol", json!("TCP"));
    }
}

/// A pod's spec; `restart` is the restart policy to default to (none for Jobs, which must
/// name theirs).
fn pod_spec(spec: &mut Map<String, Value>, restart: Option<&str>) {
    if let Some(policy) = restart {
        default_to(spec, "restartPolicy", json!(policy));
    }
    default_to(spec, "dnsPolicy", json!("ClusterFirst"));
    default_to(spec, "schedulerName", json!("default-scheduler"));
    default_to(spec, "terminationGracePeriodSeconds", json!(30));
    default_to(spec, "securityContext", json!({}));
    for key in ["initContainers", "containers"] {
        items(spec, key).for_each(container);
    }
    for volume in items(spec, "volumes") {
        for source in ["configMap", "secret"] {
            if let Some(source) = volume.get_mut(source).and_then(Value::as_object_mut) {
                default_to(source, "defaultMode", json!(420));
            }
        }
    }
}

/// What kube-apiserver's admission plugins add to a Pod (not to a template): its service
/// account and the projected volume of its token (ServiceAccount), its priority
/// (Priority), the tolerations of a node gone unready (DefaultTolerationSeconds), service
/// links on.
fn pod_admission(spec: &mut Map<String, Value>) {
    let account = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_string();
    default_to(spec, "serviceAccountName", json!(account));
    default_to(spec, "serviceAccount", json!(account));
    default_to(spec, "enableServiceLinks", json!(true));
    default_to(spec, "priority", json!(0));
    default_to(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(tolerations) = tolerations.as_array_mut() {
        for taint in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            if !tolerations.iter().any(|t| t["key"] == taint) {
                tolerations.push(json!({"key": taint, "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool);
    let mount_path = "/var/run/secrets/kubernetes.io/serviceaccount";
    // Once, at creation: an update carries what the creation added.
    let mounted = ["initContainers", "containers"].iter().any(|key| {
        spec.get(*key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("volumeMounts").and_then(Value::as_array))
            .flatten()
            .any(|m| m["mountPath"] == mount_path)
    });
    if automount == Some(false) || mounted {
        return;
    }
    let volume = format!("kube-api-access-{}", random_suffix());
    for key in ["initContainers", "containers"] {
        for container in items(spec, key) {
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            if let Some(mounts) = mounts.as_array_mut() {
                mounts.push(json!({"name": volume, "readOnly": true, "mountPath": mount_path}));
            }
        }
    }
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(volumes) = volumes.as_array_mut() {
        volumes.push(json!({"name": volume, "projected": {"sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
            "defaultMode": 420}}));
    }
}

/// Five characters of the alphabet Kubernetes draws generated name suffixes from.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = [0u8; 5];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = [1, 2, 3, 4, 5];
    }
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

fn template(spec: &mut Map<String, Value>, restart: Option<&str>) {
    if let Some(pod) = spec
        .get_mut("template")
        .and_then(Value::as_object_mut)
        .and_then(|t| object_at(t, "spec"))
    {
        pod_spec(pod, restart);
    }
}

fn service(spec: &mut Map<String, Value>) {
    default_to(spec, "type", json!("ClusterIP"));
    default_to(spec, "sessionAffinity", json!("None"));
    for port in items(spec, "ports") {
        default_to(port, "protocol", json!("TCP"));
        if let Some(number) = port.get("port").cloned() {
            default_to(port, "targetPort", number);
        }
    }
}

/// Fills in the defaults of a built-in object of `group`/`kind`.
pub(crate) fn fill(group: &str, kind: &str, object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match (group, kind) {
        ("", "Pod") => {
            pod_spec(spec, Some("Always"));
            pod_admission(spec);
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            default_to(spec, "conversion", json!({"strategy": "None"}));
        }
        ("", "Service") => service(spec),
        ("apps", "Deployment") => {
            default_to(spec, "replicas", json!(1));
            default_to(spec, "revisionHistoryLimit", json!(10));
            default_to(spec, "progressDeadlineSeconds", json!(600));
            default_to(
                spec,
                "strategy",
                json!({"type": "RollingUpdate",
                       "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
            );
            template(spec, Some("Always"));
        }
        ("apps", "StatefulSet") => {
            default_to(spec, "replicas", json!(1));
            default_to(spec, "revisionHistoryLimit", json!(10));
            default_to(spec, "podManagementPolicy", json!("OrderedReady"));
            default_to(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            );
            template(spec, Some("Always"));
        }
        ("apps", "DaemonSet") => {
            default_to(spec, "revisionHistoryLimit", json!(10));
            default_to(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate",
                       "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            template(spec, Some("Always"));
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            default_to(spec, "replicas", json!(1));
            template(spec, Some("Always"));
        }
        ("batch", "Job") => template(spec, None),
        ("batch", "CronJob") => {
            default_to(spec, "concurrencyPolicy", json!("Allow"));
            default_to(spec, "suspend", json!(false));
            default_to(spec, "successfulJobsHistoryLimit", json!(3));
            default_to(spec, "failedJobsHistoryLimit", json!(1));
            if let Some(job) = spec
                .get_mut("jobTemplate")
                .and_then(Value::as_object_mut)
                .and_then(|t| object_at(t, "spec"))
            {
                template(job, None);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_gets_the_defaults_kubectl_shows_after_a_create() {
        let mut deployment = json!({"spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
                {"name": "tool", "image": "busybox", "imagePullPolicy": "Never"}],
                "volumes": [{"name": "c", "configMap": {"name": "c"}}]}}}});
        fill("apps", "Deployment", &mut deployment);
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(
            pod["containers"][1]["imagePullPolicy"], "Never",
            "kept as set"
        );
        assert_eq!(pod["volumes"][0]["configMap"]["defaultMode"], 420);
    }

    #[test]
    fn pull_policies_follow_the_tag() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("registry:5000/team/app"), "Always");
        assert_eq!(pull_policy("registry:5000/team/app:v2"), "IfNotPresent");
        assert_eq!(pull_policy("app@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn a_service_port_targets_itself_unless_told() {
        let mut service =
            json!({"spec": {"ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}});
        fill("", "Service", &mut service);
        assert_eq!(service["spec"]["type"], "ClusterIP");
        assert_eq!(service["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(service["spec"]["ports"][1]["targetPort"], "https");
    }
}
