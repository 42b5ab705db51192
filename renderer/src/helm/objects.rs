//! The objects a chart's templates see: `.Files` with its methods and
//! `.Capabilities.APIVersions`.

use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine;

use super::template::value::Object;
use super::template::Value;

/// `.Files`: the chart's non-template files.
#[derive(Debug, Clone)]
pub struct Files {
    /// Path and content, in path order.
    pub files: Rc<Vec<(String, Vec<u8>)>>,
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Files {
    /// A file's text; empty when there is no such file, as in Helm.
    fn text(&self, path: &str) -> String {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    }

    fn map_of(&self, encode: fn(&[u8]) -> String) -> Value {
        let map: BTreeMap<String, Value> = self
            .files
            .iter()
            .map(|(p, b)| (base_name(p).to_string(), Value::from(encode(b))))
            .collect();
        if map.is_empty() {
            return Value::from("");
        }
        Value::from(super::sprig::to_yaml(&Value::from(map)))
    }
}

fn string_arg(name: &str, args: &[Value]) -> Result<String, String> {
    match args {
        [Value::Str(s)] => Ok(s.to_string()),
        _ => Err(format!("{name} takes one string argument")),
    }
}

impl Object for Files {
    fn type_name(&self) -> &'static str {
        "chart.Files"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        match name {
            "Get" | "GetBytes" => Ok(Value::from(self.text(&string_arg(name, args)?))),
            "Lines" => {
                let text = self.text(&string_arg(name, args)?);
                let mut lines: Vec<Value> = text.split('\n').map(Value::from).collect();
                if text.ends_with('\n') {
                    lines.pop();
                }
                Ok(Value::from(lines))
            }
            "Glob" => {
                // An invalid pattern matches nothing.
                let matcher = globset::Glob::new(&string_arg(name, args)?)
                    .ok()
                    .map(|g| g.compile_matcher());
                let files = self
                    .files
                    .iter()
                    .filter(|(p, _)| matcher.as_ref().is_some_and(|m| m.is_match(p)))
                    .cloned()
                    .collect();
                Ok(Value::Object(Rc::new(Files {
                    files: Rc::new(files),
                })))
            }
            "AsConfig" => Ok(self.map_of(|b| String::from_utf8_lossy(b).into_owned())),
            "AsSecrets" => Ok(self.map_of(|b| base64::engine::general_purpose::STANDARD.encode(b))),
            other => Err(format!("can't evaluate field {other} in type chart.Files")),
        }
    }
}

/// `.Capabilities.APIVersions`: `Has "apps/v1"` or `Has "apps/v1/Deployment"`.
#[derive(Debug, Clone)]
pub struct ApiVersions {
    /// Group-versions and group-version/kinds the cluster serves.
    pub versions: Vec<String>,
}

impl Object for ApiVersions {
    fn type_name(&self) -> &'static str {
        "chartutil.VersionSet"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        match name {
            "Has" => {
                let wanted = string_arg(name, args)?;
                Ok(Value::Bool(self.versions.contains(&wanted)))
            }
            other => Err(format!(
                "can't evaluate field {other} in type chartutil.VersionSet"
            )),
        }
    }
}

/// The API versions a plain cluster serves, with each built-in kind, as Helm sees them
/// through discovery.
pub fn default_api_versions() -> Vec<String> {
    const KINDS: &[(&str, &[&str])] = &[
        (
            "v1",
            &[
                "ConfigMap",
                "Secret",
                "Service",
                "ServiceAccount",
                "Namespace",
                "Pod",
                "PersistentVolumeClaim",
                "PersistentVolume",
                "Endpoints",
                "Event",
                "LimitRange",
                "ResourceQuota",
                "Node",
            ],
        ),
        (
            "apps/v1",
            &[
                "Deployment",
                "StatefulSet",
                "DaemonSet",
                "ReplicaSet",
                "ControllerRevision",
            ],
        ),
        ("batch/v1", &["Job", "CronJob"]),
        ("autoscaling/v1", &["HorizontalPodAutoscaler"]),
        ("autoscaling/v2", &["HorizontalPodAutoscaler"]),
        ("policy/v1", &["PodDisruptionBudget"]),
        (
            "networking.k8s.io/v1",
            &["Ingress", "IngressClass", "NetworkPolicy"],
        ),
        (
            "rbac.authorization.k8s.io/v1",
            &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
        ),
        ("apiextensions.k8s.io/v1", &["CustomResourceDefinition"]),
        (
            "admissionregistration.k8s.io/v1",
            &[
                "ValidatingWebhookConfiguration",
                "MutatingWebhookConfiguration",
            ],
        ),
        ("coordination.k8s.io/v1", &["Lease"]),
        ("scheduling.k8s.io/v1", &["PriorityClass"]),
        (
            "storage.k8s.io/v1",
            &["StorageClass", "CSIDriver", "VolumeAttachment"],
        ),
        ("discovery.k8s.io/v1", &["EndpointSlice"]),
        ("certificates.k8s.io/v1", &["CertificateSigningRequest"]),
        ("events.k8s.io/v1", &["Event"]),
    ];
    let mut versions = Vec::new();
    for (group_version, kinds) in KINDS {
        versions.push(group_version.to_string());
        versions.extend(kinds.iter().map(|k| format!("{group_version}/{k}")));
    }
    versions
}
