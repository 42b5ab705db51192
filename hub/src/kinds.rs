//! What a few built-in kinds do on write, standing in for their controllers:
//! namespaces become Active and carry their name as a label, CRDs become Established, Secrets get their default type and
//! token Secrets a token.

use base64::Engine;
use serde_json::{json, Value};

use crate::registry::ResourceType;
use crate::stored::Stored;

/// Whether deleting an object of this kind answers with the object, not a Status: so
/// kube-apiserver does for pods, services and volumes, and clients decode the answer as one.
pub fn returns_deleted_object(resource: &ResourceType) -> bool {
    match resource.group.as_str() {
        "" => matches!(
            resource.kind.as_str(),
            "Pod"
                | "Service"
                | "PersistentVolume"
                | "PersistentVolumeClaim"
                | "PodTemplate"
                | "ServiceAccount"
                | "ResourceQuota"
        ),
        "storage.k8s.io" => matches!(resource.kind.as_str(), "StorageClass" | "CSIDriver"),
        _ => false,
    }
}

/// Whether the kind keeps `metadata.generation`: custom resources, CRDs, and the built-in
/// kinds whose controllers report an observed generation.
pub fn tracks_generation(resource: &ResourceType, _version: &str) -> bool {
    resource.custom
        || matches!(
            (resource.group.as_str(), resource.kind.as_str()),
            ("", "Pod" | "ReplicationController")
                | (
                    "apps",
                    "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
                )
                | ("batch", "Job" | "CronJob")
                | ("autoscaling", "HorizontalPodAutoscaler")
                | ("policy", "PodDisruptionBudget")
                | ("networking.k8s.io", "Ingress" | "NetworkPolicy")
                | ("apiextensions.k8s.io", "CustomResourceDefinition")
        )
}

/// Fills in what the kind's controller would set on a new or changed object.
pub fn on_write(resource: &ResourceType, object: &mut Value) {
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => {
            // Every namespace carries its name as a label, as Kubernetes sets it (so that
            // selectors, network policies among them, can pick namespaces by name).
            if let Some(name) = crate::meta::meta_str(object, "name").map(String::from) {
                if let Some(meta) = crate::meta::metadata_mut(object) {
                    let labels = meta.entry("labels").or_insert_with(|| json!({}));
                    if let Some(labels) = labels.as_object_mut() {
                        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
                    }
                }
            }
            let phase = if crate::meta::is_deleting(object) {
                "Terminating"
            } else {
                "Active"
            };
            object["status"] = json!({"phase": phase});
            // The namespace controller's own finalizer, which it removes once the
            // namespace is empty.
            if object.pointer("/spec/finalizers").is_none() {
                object["spec"] = json!({"finalizers": ["kubernetes"]});
            }
        }
        ("", "Pod") if object.get("status").is_none() => {
            let qos = qos_class(object);
            object["status"] = json!({"phase": "Pending", "qosClass": qos});
        }
        ("", "Service") | ("networking.k8s.io", "Ingress") if object.get("status").is_none() => {
            object["status"] = json!({"loadBalancer": {}});
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => establish(object),
        ("", "Secret") => default_secret(object),
        // A status struct kube-apiserver writes even when nothing set it: its fields that
        // Go never omits, at zero.
        (group, kind) if !resource.custom && object.get("status").is_none() => {
            if let Some(status) = zero_status(group, kind) {
                object["status"] = status;
            }
        }
        _ => {}
    }
}

/// Keeps a CRD's status through writes: a new CRD gets its stored versions and no
/// conditions (it is not served until [`accept_names`] runs, a moment later).
fn establish(crd: &mut Value) {
    if crd.pointer("/status/conditions").is_some() {
        return;
    }
    crd["status"] = json!({
        "acceptedNames": {"kind": "", "plural": ""},
        "storedVersions": stored_versions(crd),
    });
}

/// The versions a CRD stores.
fn stored_versions(crd: &Value) -> Vec<Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// Accepts a CRD's names and establishes it, as kube-apiserver's naming and
/// establishing controllers do.
pub fn accept_names(crd: &mut Value) {
    let now = crate::meta::now();
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "lastTransitionTime": now,
               "reason": reason, "message": message})
    };
    crd["status"] = json!({
        "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({})),
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": stored_versions(crd),
    });
}

/// The status kube-apiserver gives a new object of a workload kind, before any controller
/// wrote one: the fields Go does not omit, at zero.
fn zero_status(group: &str, kind: &str) -> Option<Value> {
    Some(match (group, kind) {
        ("apps", "Deployment") | ("batch", "Job" | "CronJob") | ("", "ResourceQuota") => json!({}),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => json!({"replicas": 0}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                         "desiredNumberScheduled": 0, "numberReady": 0}),
        ("policy", "PodDisruptionBudget") => json!({"disruptionsAllowed": 0, "currentHealthy": 0,
                                                    "desiredHealthy": 0, "expectedPods": 0}),
        ("autoscaling", "HorizontalPodAutoscaler") => json!({"desiredReplicas": 0}),
        ("", "PersistentVolumeClaim" | "PersistentVolume") => json!({"phase": "Pending"}),
        _ => return None,
    })
}

/// A Pod's quality of service class, as the kubelet ranks it: `Guaranteed` when every
/// container limits CPU and memory and requests no less, `BestEffort` when none requests
/// or limits anything, `Burstable` otherwise.
fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|key| pod.pointer(&format!("/spec/{key}")))
        .filter_map(Value::as_array)
        .flatten()
        .collect();
    let resources = |container: &Value, kind: &str| {
        container
            .pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let any = containers
        .iter()
        .any(|c| !resources(c, "requests").is_empty() || !resources(c, "limits").is_empty());
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let (limits, requests) = (resources(c, "limits"), resources(c, "requests"));
        ["cpu", "memory"].iter().all(|name| {
            let limit = limits.get(*name).and_then(Value::as_str);
            let request = requests.get(*name).and_then(Value::as_str).or(limit);
            match (limit, request) {
                (Some(limit), Some(request)) => {
                    let parse = |t: &str| t.parse::<fleet_objects::quantity::Quantity>().ok();
                    parse(limit)
                        .zip(parse(request))
                        .is_some_and(|(l, r)| l.same_value(&r))
                }
                _ => false,
            }
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Gives a new Service of a type with a cluster IP one, and keeps a changed Service's: its
/// cluster IP is allocated once, and an update that leaves it out keeps it.
pub fn allocate(resource: &ResourceType, object: &mut Value, old: Option<&Value>) {
    if !(resource.group.is_empty() && resource.kind == "Service") {
        return;
    }
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let kept = old.and_then(|old| old.pointer("/spec/clusterIP")).cloned();
    let ip = match spec.get("clusterIP").and_then(Value::as_str) {
        Some(ip) if !ip.is_empty() => json!(ip),
        _ => kept.unwrap_or_else(|| json!(new_cluster_ip())),
    };
    spec.insert("clusterIPs".into(), json!([ip.clone()]));
    spec.insert("clusterIP".into(), ip);
    spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    spec.entry("ipFamilyPolicy")
        .or_insert_with(|| json!("SingleStack"));
    spec.entry("internalTrafficPolicy")
        .or_insert_with(|| json!("Cluster"));
}

/// A cluster IP in 10.96.0.0/16 (the hub routes nothing to it).
fn new_cluster_ip() -> String {
    let mut bytes = [0u8; 2];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = [0, 10];
    }
    format!("10.96.{}.{}", bytes[0], bytes[1].max(1))
}

/// The most a ConfigMap's or Secret's data may hold, as kube-apiserver counts it.
const MAX_DATA_BYTES: usize = 1024 * 1024;

/// The kinds whose `spec.replicas` kube-apiserver requires to be at least 0, by group.
const REPLICATED: [(&str, &str); 4] = [
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "ReplicaSet"),
    ("", "ReplicationController"),
];

/// What kube-apiserver's validation of the kind refuses beyond its schema: a negative
/// number of replicas, a ConfigMap or Secret holding more than 1 MiB, a token Secret naming
/// no service account.
pub fn causes(resource: &ResourceType, object: &Value) -> Vec<crate::status::Cause> {
    let mut causes = Vec::new();
    let replicated =
        (REPLICATED.iter()).any(|(group, kind)| resource.group == *group && resource.kind == *kind);
    if let Some(replicas) = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .filter(|r| replicated && *r < 0)
    {
        causes.push(crate::status::Cause {
            kind: "FieldValueInvalid".into(),
            message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            field: "spec.replicas".into(),
        });
    }
    if !resource.group.is_empty() || !matches!(resource.kind.as_str(), "ConfigMap" | "Secret") {
        return causes;
    }
    let size: usize = ["data", "binaryData", "stringData"]
        .iter()
        .filter_map(|key| object.get(*key).and_then(Value::as_object))
        .flatten()
        .map(|(key, value)| key.len() + value.as_str().map_or(0, data_len(resource)))
        .sum();
    if size > MAX_DATA_BYTES {
        causes.push(crate::status::Cause {
            kind: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {MAX_DATA_BYTES} bytes"),
            field: "[]".into(),
        });
    }
    let token = object.get("type").and_then(Value::as_str) == Some(TOKEN_SECRET_TYPE);
    let account = object
        .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty());
    if resource.kind == "Secret" && token && !account {
        causes.push(crate::status::Cause {
            kind: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: "metadata.annotations[kubernetes.io/service-account.name]".into(),
        });
    }
    causes
}

/// How many bytes a data value counts for: a Secret's `data` is base64 of the bytes kept.
fn data_len(resource: &ResourceType) -> impl Fn(&str) -> usize + '_ {
    move |text| {
        if resource.kind == "Secret" {
            text.len() / 4 * 3
        } else {
            text.len()
        }
    }
}

/// The type of Secret that carries a service account token.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

/// Generates a random bearer token.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        // Two v4 uuids come from the same source; this only runs if it failed once.
        bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn default_secret(secret: &mut Value) {
    fold_string_data(secret);
    if secret
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .is_empty()
    {
        secret["type"] = json!("Opaque");
    }
}

/// Whether a Secret is a token Secret still waiting for its token.
pub fn awaits_token(secret: &Value) -> bool {
    secret.get("type").and_then(Value::as_str) == Some(TOKEN_SECRET_TYPE)
        && secret.pointer("/data/token").is_none()
        && !crate::meta::is_deleting(secret)
}

/// The merge patch that fills a token Secret in: a new token, its namespace, the CA (when
/// the hub has one) and its account's uid.
pub fn token_data(namespace: &str, account_uid: &str, ca_pem: Option<&str>) -> Value {
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let mut data = json!({"token": encode(&new_token()), "namespace": encode(namespace)});
    if let Some(ca) = ca_pem {
        data["ca.crt"] = json!(encode(ca));
    }
    json!({"metadata": {"annotations": {"kubernetes.io/service-account.uid": account_uid}},
           "data": data})
}

/// Moves `stringData` into `data`, base64-encoded, as kube-apiserver does: a key in both
/// takes the `stringData` value, and `stringData` is never stored.
fn fold_string_data(secret: &mut Value) {
    let Some(Value::Object(strings)) = secret.as_object_mut().and_then(|m| m.remove("stringData"))
    else {
        return;
    };
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let data = secret.as_object_mut().map(|m| {
        let data = m.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        data
    });
    if let Some(Value::Object(data)) = data {
        for (key, value) in strings {
            data.insert(key, json!(encode(value.as_str().unwrap_or_default())));
        }
    }
}

/// [`token_of`] for a stored Secret, read only when its text names the token type.
pub fn stored_token_of(secret: &Stored) -> Option<(String, String, String)> {
    if !secret.mentions(TOKEN_SECRET_TYPE) {
        return None;
    }
    token_of(&secret.value().ok()?)
}

/// The token, namespace and service account of a token Secret, if it is one.
pub fn token_of(secret: &Value) -> Option<(String, String, String)> {
    if secret.get("type").and_then(Value::as_str) != Some(TOKEN_SECRET_TYPE) {
        return None;
    }
    let encoded = secret.pointer("/data/token")?.as_str()?;
    let token = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let account = secret
        .pointer("/metadata/annotations/kubernetes.io~1service-account.name")?
        .as_str()?;
    Some((
        String::from_utf8(token).ok()?,
        crate::meta::meta_str(secret, "namespace")?.to_string(),
        account.to_string(),
    ))
}
