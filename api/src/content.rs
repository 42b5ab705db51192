//! The Content kind: a rendered bundle variant, stored once under its content id and
//! referenced by every BundleDeployment that deploys it (as Fleet's `contents`).

use std::borrow::Cow;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

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
