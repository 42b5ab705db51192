//! The CRD of a Fleet kind whose fields sit beside its metadata, with no spec (Policy,
//! GitRepoRestriction): the schema of its fields, with `apiVersion`, `kind` and `metadata`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceValidation,
    JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;

/// How a spec-less kind is named and shown.
pub(crate) struct Kind<'a> {
    /// `Policy`.
    pub kind: &'a str,
    /// `policies`.
    pub plural: &'a str,
    /// What it is, for the schema's description.
    pub description: &'a str,
    /// `kubectl get` columns: name and JSON path.
    pub columns: &'a [(&'a str, &'a str)],
}

/// The CRD of a namespaced kind of the `fleet` category whose fields are `Fields`.
pub(crate) fn crd<Fields: JsonSchema>(kind: Kind<'_>) -> CustomResourceDefinition {
    let settings = schemars::generate::SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let fields = settings.into_generator().into_root_schema_for::<Fields>();
    let schema: JSONSchemaProps = serde_json::from_value(fields.to_value()).unwrap_or_default();
    definition(kind, "Namespaced", Some(vec!["fleet".into()]), schema)
}

/// The CRD of a kind whose fields `schema` describes, with `apiVersion`, `kind` and
/// `metadata` added to it.
pub(crate) fn definition(
    kind: Kind<'_>,
    scope: &str,
    categories: Option<Vec<String>>,
    mut schema: JSONSchemaProps,
) -> CustomResourceDefinition {
    schema.type_ = Some("object".into());
    schema.description = Some(kind.description.into());
    let properties = schema.properties.get_or_insert_with(Default::default);
    for (field, description) in [("apiVersion", "API version."), ("kind", "Kind.")] {
        properties.insert(
            field.into(),
            JSONSchemaProps {
                type_: Some("string".into()),
                description: Some(description.into()),
                ..JSONSchemaProps::default()
            },
        );
    }
    properties.insert(
        "metadata".into(),
        JSONSchemaProps {
            type_: Some("object".into()),
            ..JSONSchemaProps::default()
        },
    );
    let columns: Vec<CustomResourceColumnDefinition> = (kind.columns.iter())
        .map(|(name, path)| CustomResourceColumnDefinition {
            name: (*name).into(),
            json_path: (*path).into(),
            type_: "string".into(),
            ..CustomResourceColumnDefinition::default()
        })
        .collect();
    CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(format!("{}.{}", kind.plural, crate::GROUP)),
            ..ObjectMeta::default()
        },
        spec: CustomResourceDefinitionSpec {
            group: crate::GROUP.into(),
            names: CustomResourceDefinitionNames {
                kind: kind.kind.into(),
                plural: kind.plural.into(),
                singular: Some(kind.kind.to_lowercase()),
                list_kind: Some(format!("{}List", kind.kind)),
                categories,
                short_names: None,
            },
            scope: scope.into(),
            versions: vec![CustomResourceDefinitionVersion {
                name: crate::VERSION.into(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(schema),
                }),
                additional_printer_columns: (!columns.is_empty()).then_some(columns),
                ..CustomResourceDefinitionVersion::default()
            }],
            ..CustomResourceDefinitionSpec::default()
        },
        status: None,
    }
}
