//! OpenAPI schemas of the built-in kinds, generated from k8s-openapi's types: for `kubectl
//! explain`, and to check, prune and reject built-in objects on write as kube-apiserver's
//! decoding does (types, required fields, unknown fields).

use std::collections::HashMap;
use std::sync::OnceLock;

use fleet_objects::schema::Schema;
use k8s_openapi::api::{apps, batch, core, networking, policy, rbac};
use schemars::JsonSchema;
use serde_json::Value;

fn inline<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::openapi3();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
    }
    mark_opaque_objects(&mut value);
    value
}

/// Marks objects whose schema names no fields (`FieldsV1` in managedFields, `RawExtension`)
/// as keeping unknown fields: Kubernetes stores them as they come, and pruning them against
/// an empty schema would empty them.
fn mark_opaque_objects(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let opaque = map.get("type").and_then(Value::as_str) == Some("object")
        && !map.contains_key("properties")
        && !map.contains_key("additionalProperties");
    if opaque {
        map.insert(
            "x-kubernetes-preserve-unknown-fields".into(),
            Value::Bool(true),
        );
    }
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" => value
                .as_object_mut()
                .into_iter()
                .flat_map(|p| p.values_mut())
                .for_each(mark_opaque_objects),
            "items" | "additionalProperties" => mark_opaque_objects(value),
            "allOf" | "anyOf" | "oneOf" => value
                .as_array_mut()
                .into_iter()
                .flatten()
                .for_each(mark_opaque_objects),
            _ => {}
        }
    }
}

fn all() -> HashMap<(&'static str, &'static str), Value> {
    let mut schemas = HashMap::new();
    schemas.insert(("", "Namespace"), inline::<core::v1::Namespace>());
    schemas.insert(("", "ConfigMap"), inline::<core::v1::ConfigMap>());
    schemas.insert(("", "Secret"), inline::<core::v1::Secret>());
    schemas.insert(("", "ServiceAccount"), inline::<core::v1::ServiceAccount>());
    schemas.insert(("", "Service"), inline::<core::v1::Service>());
    schemas.insert(("", "Pod"), inline::<core::v1::Pod>());
    schemas.insert(
        ("", "PersistentVolumeClaim"),
        inline::<core::v1::PersistentVolumeClaim>(),
    );
    schemas.insert(("apps", "Deployment"), inline::<apps::v1::Deployment>());
    schemas.insert(("apps", "StatefulSet"), inline::<apps::v1::StatefulSet>());
    schemas.insert(("apps", "DaemonSet"), inline::<apps::v1::DaemonSet>());
    schemas.insert(("batch", "Job"), inline::<batch::v1::Job>());
    schemas.insert(("batch", "CronJob"), inline::<batch::v1::CronJob>());
    schemas.insert(
        ("networking.k8s.io", "Ingress"),
        inline::<networking::v1::Ingress>(),
    );
    schemas.insert(
        ("policy", "PodDisruptionBudget"),
        inline::<policy::v1::PodDisruptionBudget>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "Role"),
        inline::<rbac::v1::Role>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "ClusterRole"),
        inline::<rbac::v1::ClusterRole>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "RoleBinding"),
        inline::<rbac::v1::RoleBinding>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        inline::<rbac::v1::ClusterRoleBinding>(),
    );
    schemas
}

/// The schema of a built-in kind, generated and compiled once.
pub fn schema(group: &str, kind: &str) -> Option<&'static Schema> {
    static SCHEMAS: OnceLock<HashMap<(&'static str, &'static str), Schema>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            let compile = |(key, schema): (_, Value)| (key, Schema::compile(&schema));
            all().into_iter().map(compile).collect()
        })
        .iter()
        .find(|((g, k), _)| *g == group && *k == kind)
        .map(|(_, schema)| schema)
}
