//! The Content kind: a rendered bundle variant, stored once under its content id and
//! referenced by every BundleDeployment that deploys it (as Fleet's `contents`); and its
//! wire format, the resources as a JSON array, gzipped and base64-encoded.

use std::borrow::Cow;

use base64::Engine;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
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
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
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

impl kube::Resource for Content {
    type DynamicType = ();
    type Scope = k8s_openapi::ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Content".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        crate::GROUP.into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        crate::VERSION.into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "contents".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Content {
    /// The Content holding `resources` under the content id `id` (`s-<sha256>`).
    pub fn pack(id: &str, resources: &[serde_json::Value]) -> Result<Content, ContentError> {
        use std::io::Write;
        let broken = |message: String| ContentError {
            name: id.to_string(),
            message,
        };
        let json = serde_json::to_vec(resources).map_err(|e| broken(e.to_string()))?;
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(&json).map_err(|e| broken(e.to_string()))?;
        let packed = gzip.finish().map_err(|e| broken(e.to_string()))?;
        Ok(Content {
            metadata: ObjectMeta {
                name: Some(id.to_string()),
                ..Default::default()
            },
            content: base64::engine::general_purpose::STANDARD.encode(packed),
            sha256sum: id.trim_start_matches("s-").to_string(),
        })
    }

    /// The resources this Content holds.
    pub fn unpack(&self) -> Result<Vec<serde_json::Value>, ContentError> {
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
        serde_json::from_slice(&json).map_err(|e| broken(e.to_string()))
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
            type_: Some("object".into()),
            description: Some("Rendered resources stored once under their content id.".into()),
            properties: Some(
                [
                    ("apiVersion".to_string(), string("API version.", None)),
                    ("kind".to_string(), string("Kind.", None)),
                    (
                        "metadata".to_string(),
                        JSONSchemaProps {
                            type_: Some("object".into()),
                            ..JSONSchemaProps::default()
                        },
                    ),
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
        CustomResourceDefinition {
            metadata: ObjectMeta {
                name: Some(format!("contents.{}", crate::GROUP)),
                ..ObjectMeta::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: crate::GROUP.into(),
                names: CustomResourceDefinitionNames {
                    kind: "Content".into(),
                    plural: "contents".into(),
                    singular: Some("content".into()),
                    list_kind: Some("ContentList".into()),
                    categories: None,
                    short_names: None,
                },
                scope: "Cluster".into(),
                versions: vec![CustomResourceDefinitionVersion {
                    name: crate::VERSION.into(),
                    served: true,
                    storage: true,
                    schema: Some(CustomResourceValidation {
                        open_api_v3_schema: Some(schema),
                    }),
                    ..CustomResourceDefinitionVersion::default()
                }],
                ..CustomResourceDefinitionSpec::default()
            },
            status: None,
        }
    }
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
        let content = Content::pack("s-abc", &resources).expect("packs");
        assert_eq!(content.metadata.name.as_deref(), Some("s-abc"));
        assert_eq!(content.sha256sum, "abc");
        assert_eq!(content.unpack().expect("unpacks"), resources);
    }

    #[test]
    fn broken_encodings_are_named() {
        let mut content = Content::pack("s-1", &[]).expect("packs");
        content.content = "not base64!".into();
        let error = content.unpack().expect_err("broken base64");
        assert!(error.to_string().starts_with("content `s-1`:"), "{error}");
        content.content = base64::engine::general_purpose::STANDARD.encode(b"not gzip");
        assert!(content.unpack().is_err());
    }
}
