//! The Content kind: a rendered bundle variant, stored once under its content id and
//! referenced by every BundleDeployment that deploys it (as Fleet's `contents`); and its
//! wire format, the resources as a JSON array, gzipped and base64-encoded.

use base64::Engine;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// Why a Content could not be packed or unpacked.
#[derive(Debug, thiserror::Error)]
#[error("content `{name}`: {message}")]
pub struct ContentError {
    /// The content id.
    pub name: String,
    /// What is wrong: broken base64, gzip or JSON.
    pub message: String,
}

/// Rendered resources, named by their content id (`s-<sha256>`), cluster-scoped. Like
/// Fleet's, it has no spec: `content` and `sha256sum` sit beside the metadata.
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    /// Object metadata; the name is the content id.
    pub metadata: ObjectMeta,
    /// The resources: a JSON array, gzipped, base64-encoded in JSON (a `[]byte` in Go).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    /// sha256 of the resources, as in the name.
    #[serde(
        rename = "sha256sum",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub sha256sum: String,
}

/// A Content as the API server takes it: with its `apiVersion` and `kind`, which
/// kube-apiserver requires of every object written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ContentWire<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: &'a ObjectMeta,
    #[serde(skip_serializing_if = "str::is_empty")]
    content: &'a str,
    #[serde(rename = "sha256sum", skip_serializing_if = "str::is_empty")]
    sha256sum: &'a str,
}

impl Serialize for Content {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ContentWire {
            api_version: crate::API_VERSION,
            kind: "Content",
            metadata: &self.metadata,
            content: &self.content,
            sha256sum: &self.sha256sum,
        }
        .serialize(serializer)
    }
}

specless_resource!(
    Content,
    "Content",
    "contents",
    k8s_openapi::ClusterResourceScope
);

/// A Helm bundle's release, as the agent records it in the member cluster beside the
/// resources it applies (Fleet deploys every bundle as a Helm release).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HelmRelease {
    /// The release name: `helm.releaseName`, else the bundle's name as Fleet limits it.
    pub name: String,
    /// The release namespace: `namespace`, else `defaultNamespace`, else `default`.
    pub namespace: String,
    /// The chart's metadata (Chart.yaml as JSON).
    pub chart: serde_json::Value,
    /// The chart's own values.
    #[serde(default)]
    pub values: serde_json::Value,
    /// The values the bundle supplied (`helm get values` shows them).
    #[serde(default)]
    pub config: serde_json::Value,
    /// The chart's rendered NOTES.txt, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// The chart's hooks, in the order Helm found them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HelmHook>,
}

/// One hook of a chart: an object annotated `helm.sh/hook`, run at its events rather than
/// applied with the release.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HelmHook {
    /// The template it came from (`chart/templates/job.yaml`).
    pub path: String,
    /// Its events (`pre-install`, `post-upgrade`, ...).
    pub events: Vec<String>,
    /// `helm.sh/hook-weight`: lighter hooks run first.
    #[serde(default)]
    pub weight: i64,
    /// `helm.sh/hook-delete-policy`, split.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_policies: Vec<String>,
    /// The object.
    pub object: serde_json::Value,
}

/// A Helm bundle the agent renders in its member cluster, as Fleet's agent renders every
/// chart: one that reads values from the member (`helm.valuesFrom`), `lookup` or
/// `.Capabilities`. The Content carries what the render needs instead of resources.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemberRender {
    /// The Bundle's name (it names the release).
    pub bundle_name: String,
    /// The Bundle's files, as in its `spec.resources`.
    pub files: Vec<crate::BundleResource>,
    /// Remote charts fetched for it, as the renderer serialises them.
    #[serde(default)]
    pub charts: serde_json::Value,
    /// The cluster, as the renderer's `${ }` templating sees it: `name`, `namespace`,
    /// `labels`, `groups`.
    pub cluster: serde_json::Value,
}

/// What a Content holds: the resources to apply and, for a Helm bundle, its release; or a
/// render the agent does in its member cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Payload {
    /// The resources, in install order.
    pub resources: Vec<serde_json::Value>,
    /// The Helm release they make up, for a Helm bundle.
    pub helm: Option<HelmRelease>,
    /// What the agent renders itself, when the resources depend on its cluster.
    pub member_render: Option<MemberRender>,
}

/// The packed form of a Helm bundle's payload (a plain bundle's is the resource array).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackedRelease {
    #[serde(default)]
    resources: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    helm: Option<HelmRelease>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    member_render: Option<MemberRender>,
}

/// The most a Content's packed resources may take: etcd stores an object in one request of
/// at most 1.5 MiB by default.
pub(crate) const MAX_CONTENT_BYTES: usize = 1_400_000;

impl Content {
    /// The Content holding `payload` under the content id `id` (`s-<sha256>`): a plain
    /// bundle's resources as a JSON array, a Helm bundle's as an object with its release.
    pub fn pack(id: &str, payload: &Payload) -> Result<Content, ContentError> {
        use std::io::Write;
        let broken = |message: String| ContentError {
            name: id.to_string(),
            message,
        };
        let json = match (&payload.helm, &payload.member_render) {
            (None, None) => serde_json::to_vec(&payload.resources),
            _ => serde_json::to_vec(&PackedRelease {
                resources: payload.resources.clone(),
                helm: payload.helm.clone(),
                member_render: payload.member_render.clone(),
            }),
        }
        .map_err(|e| broken(e.to_string()))?;
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(&json).map_err(|e| broken(e.to_string()))?;
        let packed = gzip.finish().map_err(|e| broken(e.to_string()))?;
        let content = base64::engine::general_purpose::STANDARD.encode(packed);
        if content.len() > MAX_CONTENT_BYTES {
            return Err(broken(format!(
                "the rendered resources take {} bytes compressed; Kubernetes keeps an object \
                 within 1.5 MiB (etcd's request limit), so a variant may take at most \
                 {MAX_CONTENT_BYTES}: split the bundle",
                content.len()
            )));
        }
        Ok(Content {
            metadata: ObjectMeta {
                name: Some(id.to_string()),
                ..Default::default()
            },
            content,
            sha256sum: id.trim_start_matches("s-").to_string(),
        })
    }

    /// What this Content holds.
    pub fn unpack(&self) -> Result<Payload, ContentError> {
        let broken = |message: String| ContentError {
            name: self.metadata.name.clone().unwrap_or_default(),
            message,
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.content)
            .map_err(|e| broken(e.to_string()))?;
        let mut json = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut json)
            .map_err(|e| broken(e.to_string()))?;
        let packed: serde_json::Value =
            serde_json::from_slice(&json).map_err(|e| broken(e.to_string()))?;
        if packed.is_array() {
            let resources = serde_json::from_value(packed).map_err(|e| broken(e.to_string()))?;
            return Ok(Payload {
                resources,
                ..Payload::default()
            });
        }
        if let Some(files) = fleet_manifest_files(&packed) {
            let files = serde_json::from_value(files).map_err(|e| broken(e.to_string()))?;
            return Ok(Payload {
                member_render: Some(MemberRender {
                    files,
                    cluster: serde_json::json!({}),
                    ..MemberRender::default()
                }),
                ..Payload::default()
            });
        }
        let release: PackedRelease =
            serde_json::from_value(packed).map_err(|e| broken(e.to_string()))?;
        Ok(Payload {
            resources: release.resources,
            helm: release.helm,
            member_render: release.member_render,
        })
    }

    /// The CustomResourceDefinition of `contents.fleet.cattle.io`.
    pub fn crd() -> CustomResourceDefinition {
        let string = |description: &str, format: Option<&str>| JSONSchemaProps {
            type_: Some("string".into()),
            format: format.map(String::from),
            description: Some(description.into()),
            ..JSONSchemaProps::default()
        };
        let schema = JSONSchemaProps {
            properties: Some(
                [
                    (
                        "content".to_string(),
                        string("The resources, gzipped JSON.", Some("byte")),
                    ),
                    (
                        "sha256sum".to_string(),
                        string("sha256 of the resources.", None),
                    ),
                ]
                .into_iter()
                .collect(),
            ),
            ..JSONSchemaProps::default()
        };
        let kind = crate::specless::Kind {
            kind: "Content",
            plural: "contents",
            description: "Rendered resources stored once under their content id.",
            columns: &[],
        };
        crate::specless::definition(kind, "Cluster", None, schema)
    }
}

/// The bundle's files, when `packed` is a Content as Rancher Fleet's controller writes it:
/// `{"resources": [{"name", "content", "encoding"}]}`, the files themselves, which its
/// agent renders. fleet-rs's own Contents hold objects (with a `kind`) instead.
fn fleet_manifest_files(packed: &serde_json::Value) -> Option<serde_json::Value> {
    let object = packed.as_object()?;
    if object.keys().any(|key| key != "resources") {
        return None;
    }
    let resources = object.get("resources")?.as_array()?;
    let all_files = resources.iter().all(|resource| {
        resource
            .get("name")
            .is_some_and(serde_json::Value::is_string)
            && resource.get("kind").is_none()
    });
    all_files.then(|| serde_json::Value::Array(resources.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_come_back_as_they_were_packed() {
        let resources = vec![
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            serde_json::json!({"kind": "Secret", "data": {"k": "dg=="}}),
        ];
        let payload = Payload {
            resources,
            ..Payload::default()
        };
        let content = Content::pack("s-abc", &payload).expect("packs");
        assert_eq!(content.metadata.name.as_deref(), Some("s-abc"));
        assert_eq!(content.sha256sum, "abc");
        assert_eq!(content.unpack().expect("unpacks"), payload);
        let with_release = Payload {
            helm: Some(HelmRelease {
                name: "web".into(),
                namespace: "apps".into(),
                chart: serde_json::json!({"name": "web", "version": "1.0.0"}),
                hooks: vec![HelmHook {
                    path: "web/templates/job.yaml".into(),
                    events: vec!["pre-install".into()],
                    object: serde_json::json!({"kind": "Job"}),
                    ..HelmHook::default()
                }],
                ..HelmRelease::default()
            }),
            ..payload
        };
        let content = Content::pack("s-abc", &with_release).expect("packs");
        assert_eq!(content.unpack().expect("unpacks"), with_release);
        let rendered_there = Payload {
            member_render: Some(MemberRender {
                bundle_name: "web".into(),
                cluster: serde_json::json!({"name": "dev"}),
                ..MemberRender::default()
            }),
            ..Payload::default()
        };
        let content = Content::pack("s-abc", &rendered_there).expect("packs");
        assert_eq!(content.unpack().expect("unpacks"), rendered_there);
    }

    #[test]
    fn a_content_of_rancher_fleet_holds_files_the_agent_renders() {
        use std::io::Write;
        let manifest = serde_json::json!({"resources": [
            {"name": "fleet.yaml", "content": "helm:\n  chart: c\n"},
            {"name": "c/Chart.yaml", "content": "name: c\nversion: 0.1.0\n"},
        ]});
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(manifest.to_string().as_bytes())
            .expect("gzip");
        let content = Content {
            content: base64::engine::general_purpose::STANDARD.encode(gzip.finish().expect("gzip")),
            ..Content::default()
        };
        let payload = content.unpack().expect("unpacks");
        assert!(payload.resources.is_empty());
        let render = payload.member_render.expect("rendered by the agent");
        let names: Vec<_> = render.files.iter().filter_map(|f| f.name.clone()).collect();
        assert_eq!(names, ["fleet.yaml", "c/Chart.yaml"]);
    }

    #[test]
    fn a_variant_too_large_to_store_is_refused() {
        // Letters that do not compress (xorshift).
        let mut state = 7u64;
        let noise: String = (0..1_800_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect();
        let payload = Payload {
            resources: vec![serde_json::json!({"kind": "ConfigMap", "data": {"noise": noise}})],
            helm: None,
            member_render: None,
        };
        let refused = Content::pack("s-big", &payload).expect_err("too large");
        assert!(refused.to_string().contains("1.5 MiB"), "{refused}");
    }

    #[test]
    fn broken_encodings_are_named() {
        let mut content = Content::pack("s-1", &Payload::default()).expect("packs");
        content.content = "not base64!".into();
        let error = content.unpack().expect_err("broken base64");
        assert!(error.to_string().starts_with("content `s-1`:"), "{error}");
        content.content = base64::engine::general_purpose::STANDARD.encode(b"not gzip");
        assert!(content.unpack().is_err());
    }
}
