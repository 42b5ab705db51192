//! The columns of `kubectl get`: what a column is, and those kube-apiserver's table
//! printers give built-in kinds (`kubectl get pods` shows READY, STATUS, RESTARTS, AGE),
//! computed from each object as they compute them.

use serde_json::{json, Value};

/// One column of `kubectl get` output.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// Header, e.g. `Repo`.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub kind: String,
    /// The JSONPath evaluated against each object.
    pub json_path: String,
    /// Shown only with `-o wide` when above zero.
    pub priority: i64,
    /// Column description.
    pub description: String,
    /// For built-in kinds, the cell computed from the object (`json_path` is then unused).
    pub compute: Option<Cell>,
}

/// A cell computed from an object, as kube-apiserver's printers compute it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Ready containers over containers (`1/2`).
    PodReady,
    /// The waiting reason, the pod's reason, or its phase; `Terminating` when deleted.
    PodStatus,
    /// Restarts of all containers.
    PodRestarts,
    /// A string field, or a default when unset.
    Text(&'static str, &'static str),
    /// An integer field, 0 when unset.
    Number(&'static str),
    /// `spec.replicas` (1 when unset).
    Desired,
    /// Ready replicas over `spec.replicas` (`2/3`).
    ReadyOfDesired,
    /// Entries of `data` and `binaryData` (a Secret has only `data`).
    DataEntries,
    /// A Service's external addresses, `<pending>` for a load balancer without one.
    ExternalIps,
    /// A Service's ports (`80/TCP,443:30443/TCP`).
    Ports,
}

impl Cell {
    /// The cell's value for `object`.
    pub fn of(self, object: &Value) -> Value {
        match self {
            Cell::PodReady => pod_ready(object),
            Cell::PodStatus => pod_status(object),
            Cell::PodRestarts => pod_restarts(object),
            Cell::Text(pointer, default) => text(object, pointer, default),
            Cell::Number(pointer) => json!(number(object, pointer)),
            Cell::Desired => json!(desired(object)),
            Cell::ReadyOfDesired => {
                json!(format!(
                    "{}/{}",
                    number(object, "/status/readyReplicas"),
                    desired(object)
                ))
            }
            Cell::DataEntries => json!(entries(object, "/data") + entries(object, "/binaryData")),
            Cell::ExternalIps => service_external_ips(object),
            Cell::Ports => service_ports(object),
        }
    }
}

fn computed(name: &str, kind: &str, cell: Cell) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        kind: kind.into(),
        json_path: String::new(),
        priority: 0,
        description: String::new(),
        compute: Some(cell),
    }
}

/// The columns before Age for a built-in kind, if it has any (`None`: Name and Age only).
pub(crate) fn for_kind(group: &str, kind: &str) -> Option<Vec<PrinterColumn>> {
    let text = |name: &str, cell: Cell| computed(name, "string", cell);
    let integer = |name: &str, cell: Cell| computed(name, "integer", cell);
    Some(match (group, kind) {
        ("", "Pod") => vec![
            text("Ready", Cell::PodReady),
            text("Status", Cell::PodStatus),
            integer("Restarts", Cell::PodRestarts),
        ],
        ("", "Service") => vec![
            text("Type", Cell::Text("/spec/type", "ClusterIP")),
            text("Cluster-IP", Cell::Text("/spec/clusterIP", "<none>")),
            text("External-IP", Cell::ExternalIps),
            text("Port(s)", Cell::Ports),
        ],
        ("", "ConfigMap") => vec![integer("Data", Cell::DataEntries)],
        ("", "Secret") => vec![
            text("Type", Cell::Text("/type", "Opaque")),
            integer("Data", Cell::DataEntries),
        ],
        ("apps", "Deployment") => vec![
            text("Ready", Cell::ReadyOfDesired),
            integer("Up-to-date", Cell::Number("/status/updatedReplicas")),
            integer("Available", Cell::Number("/status/availableReplicas")),
        ],
        ("apps", "StatefulSet") => vec![text("Ready", Cell::ReadyOfDesired)],
        ("apps", "ReplicaSet") | ("", "ReplicationController") => vec![
            integer("Desired", Cell::Desired),
            integer("Current", Cell::Number("/status/replicas")),
            integer("Ready", Cell::Number("/status/readyReplicas")),
        ],
        ("apps", "DaemonSet") => vec![
            integer("Desired", Cell::Number("/status/desiredNumberScheduled")),
            integer("Current", Cell::Number("/status/currentNumberScheduled")),
            integer("Ready", Cell::Number("/status/numberReady")),
            integer("Up-to-date", Cell::Number("/status/updatedNumberScheduled")),
            integer("Available", Cell::Number("/status/numberAvailable")),
        ],
        _ => return None,
    })
}

fn text(object: &Value, pointer: &str, default: &str) -> Value {
    json!(object
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(default))
}

fn number(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// `spec.replicas`, 1 when unset, as the API server defaults it.
fn desired(object: &Value) -> i64 {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn entries(object: &Value, pointer: &str) -> usize {
    object
        .pointer(pointer)
        .and_then(Value::as_object)
        .map_or(0, |map| map.len())
}

fn list<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn pod_ready(pod: &Value) -> Value {
    let ready = list(pod, "/status/containerStatuses")
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    json!(format!("{ready}/{}", list(pod, "/spec/containers").len()))
}

fn pod_status(pod: &Value) -> Value {
    if crate::meta::is_deleting(pod) {
        return json!("Terminating");
    }
    let waiting = list(pod, "/status/containerStatuses").iter().find_map(|s| {
        s.pointer("/state/waiting/reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
    });
    let reason = pod.pointer("/status/reason").and_then(Value::as_str);
    json!(waiting
        .or(reason)
        .or_else(|| pod.pointer("/status/phase").and_then(Value::as_str))
        .unwrap_or("Pending"))
}

fn pod_restarts(pod: &Value) -> Value {
    let restarts: i64 = list(pod, "/status/containerStatuses")
        .iter()
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum();
    json!(restarts)
}

fn service_external_ips(service: &Value) -> Value {
    let mut ips: Vec<String> = list(service, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            i.get("ip")
                .or_else(|| i.get("hostname"))
                .and_then(Value::as_str)
                .map(String::from)
        })
        .collect();
    ips.extend(
        list(service, "/spec/externalIPs")
            .iter()
            .filter_map(Value::as_str)
            .map(String::from),
    );
    if let Some(name) = service
        .pointer("/spec/externalName")
        .and_then(Value::as_str)
    {
        ips.push(name.to_string());
    }
    let load_balancer =
        service.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer");
    match (ips.is_empty(), load_balancer) {
        (false, _) => json!(ips.join(",")),
        (true, true) => json!("<pending>"),
        (true, false) => json!("<none>"),
    }
}

fn service_ports(service: &Value) -> Value {
    let ports: Vec<String> = list(service, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) => format!("{port}:{node}/{protocol}"),
                None => format!("{port}/{protocol}"),
            }
        })
        .collect();
    json!(if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(group: &str, kind: &str, object: &Value) -> Vec<Value> {
        for_kind(group, kind)
            .expect("columns")
            .iter()
            .map(|c| c.compute.expect("computed").of(object))
            .collect()
    }

    #[test]
    fn cells_read_as_kubectl_prints_them() {
        let pod = json!({"spec": {"containers": [{}, {}]}, "status": {"phase": "Running",
            "containerStatuses": [{"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        assert_eq!(
            cells("", "Pod", &pod),
            vec![json!("1/2"), json!("CrashLoopBackOff"), json!(3)]
        );
        let service = json!({"spec": {"clusterIP": "10.0.0.1",
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "nodePort": 30443}]}});
        assert_eq!(
            cells("", "Service", &service),
            vec![
                json!("ClusterIP"),
                json!("10.0.0.1"),
                json!("<none>"),
                json!("80/TCP,443:30443/TCP")
            ]
        );
        let deployment =
            json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 2, "updatedReplicas": 3}});
        assert_eq!(
            cells("apps", "Deployment", &deployment),
            vec![json!("2/3"), json!(3), json!(0)]
        );
        let configmap = json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
        assert_eq!(cells("", "ConfigMap", &configmap), vec![json!(3)]);
        assert!(for_kind("example.com", "Widget").is_none());
    }
}
