//! The objects a chart's templates see that are not plain maps: `.Files` with its
//! methods, `.Capabilities.APIVersions`, `.Capabilities.KubeVersion` and
//! `.Capabilities.HelmVersion`, printed and encoded as Helm's Go types are.

use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine;

use super::template::value::Object;
use super::template::Value;

/// `.Files`: the chart's non-template files (a `map[string][]byte` in Helm).
#[derive(Debug, Clone)]
pub(crate) struct Files {
    /// Path and content, in path order.
    pub files: Rc<Vec<(String, Vec<u8>)>>,
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Files {
    fn get(&self, path: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.as_slice())
    }

    /// `AsConfig` and `AsSecrets`: the files by base name, as YAML.
    fn map_of(&self, encode: fn(&[u8]) -> String) -> Value {
        let map: BTreeMap<String, Value> = self
            .files
            .iter()
            .map(|(p, b)| (base_name(p).to_string(), Value::from(encode(b))))
            .collect();
        Value::from(super::goyaml::to_yaml(&Value::from(map)))
    }

    fn glob(&self, pattern: &str) -> Files {
        // An invalid pattern matches nothing.
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .ok()
            .map(|g| g.compile_matcher());
        let files = self
            .files
            .iter()
            .filter(|(p, _)| matcher.as_ref().is_some_and(|m| m.is_match(p)))
            .cloned()
            .collect();
        Files {
            files: Rc::new(files),
        }
    }
}

fn string_arg(name: &str, args: &[Value]) -> Result<String, String> {
    match args {
        [Value::Str(s)] => Ok(s.to_string()),
        [other] => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
        _ => Err(format!(
            "wrong number of args for {name}: want 1 got {}",
            args.len()
        )),
    }
}

impl Object for Files {
    fn type_name(&self) -> &'static str {
        "common.Files"
    }

    fn kind(&self) -> &'static str {
        "map"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        match name {
            "Get" => Ok(Value::from(
                self.get(&string_arg(name, args)?)
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default(),
            )),
            "GetBytes" => Ok(Value::Bytes(Rc::from(
                self.get(&string_arg(name, args)?).unwrap_or_default(),
            ))),
            "Lines" => {
                let Some(bytes) = self.get(&string_arg(name, args)?) else {
                    return Ok(Value::from(Vec::new()));
                };
                let text = String::from_utf8_lossy(bytes);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                Ok(Value::from(
                    text.split('\n').map(Value::from).collect::<Vec<_>>(),
                ))
            }
            "Glob" => Ok(Value::Object(Rc::new(self.glob(&string_arg(name, args)?)))),
            "AsConfig" => Ok(self.map_of(|b| String::from_utf8_lossy(b).into_owned())),
            "AsSecrets" => Ok(self.map_of(|b| base64::engine::general_purpose::STANDARD.encode(b))),
            other => Err(format!("can't evaluate field {other} in type common.Files")),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        Value::from(self.as_map()).to_json()
    }

    fn go_string(&self) -> String {
        Value::from(self.as_map()).to_go_string()
    }

    fn len(&self) -> Option<usize> {
        Some(self.files.len())
    }

    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.files
                .iter()
                .map(|(p, b)| {
                    (
                        Value::from(p.as_str()),
                        Value::Bytes(Rc::from(b.as_slice())),
                    )
                })
                .collect(),
        )
    }
}

impl Files {
    fn as_map(&self) -> BTreeMap<String, Value> {
        self.files
            .iter()
            .map(|(p, b)| (p.clone(), Value::Bytes(Rc::from(b.as_slice()))))
            .collect()
    }
}

/// `.Capabilities.APIVersions`: `Has "apps/v1"` or `Has "apps/v1/Deployment"`.
#[derive(Debug, Clone)]
pub(crate) struct ApiVersions {
    /// Group-versions and group-version/kinds the cluster serves.
    pub versions: Vec<String>,
}

impl ApiVersions {
    fn as_list(&self) -> Value {
        Value::from(
            self.versions
                .iter()
                .map(|v| Value::from(v.as_str()))
                .collect::<Vec<_>>(),
        )
    }
}

impl Object for ApiVersions {
    fn type_name(&self) -> &'static str {
        "common.VersionSet"
    }

    fn kind(&self) -> &'static str {
        "slice"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        match name {
            "Has" => {
                let wanted = string_arg(name, args)?;
                Ok(Value::Bool(self.versions.contains(&wanted)))
            }
            other => Err(format!(
                "can't evaluate field {other} in type common.VersionSet"
            )),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        self.as_list().to_json()
    }

    fn go_string(&self) -> String {
        self.as_list().to_go_string()
    }

    fn len(&self) -> Option<usize> {
        Some(self.versions.len())
    }

    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.versions
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), Value::from(v.as_str())))
                .collect(),
        )
    }
}

/// `.Capabilities.KubeVersion`: prints as its version (`v1.37.0`).
#[derive(Debug, Clone)]
pub(crate) struct KubeVersion {
    /// `v1.37.0`.
    pub version: String,
    /// `1`.
    pub major: String,
    /// `37`.
    pub minor: String,
}

impl KubeVersion {
    /// The Kubernetes version `text` (`v1.30.2`, `1.30`) as Helm reads `--kube-version`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let version = super::sprig::semver::Version::parse(text)
            .map_err(|_| format!("invalid kube version {text:?}"))?;
        Ok(Self {
            version: format!("v{version}"),
            major: version.major().to_string(),
            minor: version.minor().to_string(),
        })
    }
}

impl Object for KubeVersion {
    fn type_name(&self) -> &'static str {
        "*common.KubeVersion"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        if !args.is_empty() {
            return Err(format!("{name} is not a method but has arguments"));
        }
        match name {
            "Version" | "GitVersion" | "String" => Ok(Value::from(self.version.as_str())),
            "Major" => Ok(Value::from(self.major.as_str())),
            "Minor" => Ok(Value::from(self.minor.as_str())),
            other => Err(format!(
                "can't evaluate field {other} in type *common.KubeVersion"
            )),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"Version": self.version, "Major": self.major, "Minor": self.minor})
    }

    fn go_string(&self) -> String {
        self.version.clone()
    }
}

/// `.Capabilities.HelmVersion`: the Helm release this engine renders as.
#[derive(Debug, Clone)]
pub(crate) struct HelmVersion;

/// The fields of Helm 4.3.1's build information, in their order.
const HELM_BUILD: [(&str, &str, &str); 5] = [
    ("Version", "version", "v4.3.1"),
    (
        "GitCommit",
        "git_commit",
        "c0d08d0d6d9424d4a14febb5e8a3e51b0dd00dff",
    ),
    ("GitTreeState", "git_tree_state", "clean"),
    ("GoVersion", "go_version", "go1.27.2"),
    ("KubeClientVersion", "kube_client_version", "v1.37"),
];

impl Object for HelmVersion {
    fn type_name(&self) -> &'static str {
        "version.BuildInfo"
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn call(&self, name: &str, _: &[Value]) -> Result<Value, String> {
        HELM_BUILD
            .iter()
            .find(|(field, _, _)| *field == name)
            .map(|(_, _, value)| Value::from(*value))
            .ok_or_else(|| format!("can't evaluate field {name} in type version.BuildInfo"))
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            HELM_BUILD
                .iter()
                .map(|(_, key, value)| (key.to_string(), serde_json::Value::from(*value)))
                .collect(),
        )
    }

    fn go_string(&self) -> String {
        let fields: Vec<&str> = HELM_BUILD.iter().map(|(_, _, v)| *v).collect();
        format!("{{{}}}", fields.join(" "))
    }
}

/// The API versions `helm template` assumes a cluster serves (Helm 4.3.1's default set).
pub(crate) fn default_api_versions() -> Vec<String> {
    [
        "v1",
        "admissionregistration.k8s.io/v1",
        "admissionregistration.k8s.io/v1alpha1",
        "admissionregistration.k8s.io/v1beta1",
        "internal.apiserver.k8s.io/v1alpha1",
        "apps/v1",
        "apps/v1beta1",
        "apps/v1beta2",
        "authentication.k8s.io/v1",
        "authentication.k8s.io/v1alpha1",
        "authentication.k8s.io/v1beta1",
        "authorization.k8s.io/v1",
        "authorization.k8s.io/v1beta1",
        "autoscaling/v1",
        "autoscaling/v2",
        "batch/v1",
        "batch/v1beta1",
        "certificates.k8s.io/v1",
        "certificates.k8s.io/v1beta1",
        "certificates.k8s.io/v1alpha1",
        "coordination.k8s.io/v1alpha2",
        "coordination.k8s.io/v1beta1",
        "coordination.k8s.io/v1",
        "discovery.k8s.io/v1",
        "discovery.k8s.io/v1beta1",
        "events.k8s.io/v1",
        "events.k8s.io/v1beta1",
        "extensions/v1beta1",
        "flowcontrol.apiserver.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "lifecycle.k8s.io/v1alpha1",
        "networking.k8s.io/v1",
        "networking.k8s.io/v1beta1",
        "node.k8s.io/v1",
        "node.k8s.io/v1alpha1",
        "node.k8s.io/v1beta1",
        "policy/v1",
        "policy/v1beta1",
        "rbac.authorization.k8s.io/v1",
        "rbac.authorization.k8s.io/v1beta1",
        "rbac.authorization.k8s.io/v1alpha1",
        "resource.k8s.io/v1",
        "resource.k8s.io/v1beta2",
        "resource.k8s.io/v1beta1",
        "resource.k8s.io/v1alpha3",
        "scheduling.k8s.io/v1alpha3",
        "scheduling.k8s.io/v1beta1",
        "scheduling.k8s.io/v1",
        "storage.k8s.io/v1beta1",
        "storage.k8s.io/v1",
        "storage.k8s.io/v1alpha1",
        "storagemigration.k8s.io/v1",
        "storagemigration.k8s.io/v1beta1",
        "apiextensions.k8s.io/v1beta1",
        "apiextensions.k8s.io/v1",
    ]
    .iter()
    .map(|v| v.to_string())
    .collect()
}
