//! OpenAPI schemas of the built-in kinds, generated from k8s-openapi's types: for `kubectl
//! explain`, and to check, prune and reject built-in objects on write as kube-apiserver's
//! decoding does (types, required fields, unknown fields).

use std::collections::HashMap;
use std::sync::OnceLock;

use fleet_objects::schema::{Schema, OMIT_EMPTY_EXTENSION, QUANTITY_EXTENSION};
use k8s_openapi::api::{apps, autoscaling, batch, core, networking, policy, rbac, storage};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// The schema of `T` with every reference resolved in place, quantities marked
/// ([`QUANTITY_EXTENSION`]) and the kind's empty lists and maps dropped on write
/// ([`OMIT_EMPTY_EXTENSION`]).
fn generated<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    let definitions = value
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        for key in ["$schema", "title", "components"] {
            map.remove(key);
        }
    }
    resolve(&mut value, &definitions, 0);
    mark_opaque_objects(&mut value);
    if let Some(map) = value.as_object_mut() {
        map.insert(OMIT_EMPTY_EXTENSION.into(), Value::Bool(true));
    }
    value
}

/// The definition kube-apiserver's quantities have.
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// Replaces each `$ref` in `schema` (and each `allOf` of one schema) by what it refers to,
/// the keys beside it (a field's description) kept; a quantity by a marked int-or-string.
fn resolve(schema: &mut Value, definitions: &Map<String, Value>, depth: usize) {
    // The built-in kinds nest a few levels deep and never refer to themselves.
    if depth > 64 {
        return;
    }
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(all)) = map.get("allOf") {
                if let [single] = all.as_slice() {
                    let single = single.clone();
                    map.remove("allOf");
                    merge_absent(map, single);
                }
            }
            if let Some(Value::String(reference)) = map.remove("$ref") {
                let name = reference.rsplit('/').next().unwrap_or_default();
                let target = if name == QUANTITY {
                    json!({"x-kubernetes-int-or-string": true, QUANTITY_EXTENSION: true})
                } else {
                    definitions.get(name).cloned().unwrap_or(Value::Null)
                };
                merge_absent(map, target);
            }
            for child in map.values_mut() {
                resolve(child, definitions, depth + 1);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| resolve(item, definitions, depth + 1)),
        _ => {}
    }
}

/// Adds to `map` the members of `from` it does not have.
fn merge_absent(map: &mut Map<String, Value>, from: Value) {
    if let Value::Object(from) = from {
        for (key, value) in from {
            map.entry(key).or_insert(value);
        }
    }
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
    schemas.insert(("", "Namespace"), generated::<core::v1::Namespace>());
    schemas.insert(("", "ConfigMap"), generated::<core::v1::ConfigMap>());
    schemas.insert(("", "Secret"), generated::<core::v1::Secret>());
    schemas.insert(
        ("", "ServiceAccount"),
        generated::<core::v1::ServiceAccount>(),
    );
    schemas.insert(("", "Service"), generated::<core::v1::Service>());
    schemas.insert(("", "Pod"), generated::<core::v1::Pod>());
    schemas.insert(
        ("", "PersistentVolumeClaim"),
        generated::<core::v1::PersistentVolumeClaim>(),
    );
    schemas.insert(("", "PodTemplate"), generated::<core::v1::PodTemplate>());
    schemas.insert(
        ("", "ReplicationController"),
        generated::<core::v1::ReplicationController>(),
    );
    schemas.insert(
        ("", "ResourceQuota"),
        generated::<core::v1::ResourceQuota>(),
    );
    schemas.insert(("", "LimitRange"), generated::<core::v1::LimitRange>());
    schemas.insert(
        ("", "PersistentVolume"),
        generated::<core::v1::PersistentVolume>(),
    );
    schemas.insert(("apps", "ReplicaSet"), generated::<apps::v1::ReplicaSet>());
    schemas.insert(
        ("autoscaling", "HorizontalPodAutoscaler"),
        generated::<autoscaling::v2::HorizontalPodAutoscaler>(),
    );
    schemas.insert(
        ("storage.k8s.io", "StorageClass"),
        generated::<storage::v1::StorageClass>(),
    );
    schemas.insert(("apps", "Deployment"), generated::<apps::v1::Deployment>());
    schemas.insert(
        ("apps", "StatefulSet"),
        generated::<apps::v1::StatefulSet>(),
    );
    schemas.insert(("apps", "DaemonSet"), generated::<apps::v1::DaemonSet>());
    schemas.insert(("batch", "Job"), generated::<batch::v1::Job>());
    schemas.insert(("batch", "CronJob"), generated::<batch::v1::CronJob>());
    schemas.insert(
        ("networking.k8s.io", "Ingress"),
        generated::<networking::v1::Ingress>(),
    );
    schemas.insert(
        ("policy", "PodDisruptionBudget"),
        generated::<policy::v1::PodDisruptionBudget>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "Role"),
        generated::<rbac::v1::Role>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "ClusterRole"),
        generated::<rbac::v1::ClusterRole>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "RoleBinding"),
        generated::<rbac::v1::RoleBinding>(),
    );
    schemas.insert(
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        generated::<rbac::v1::ClusterRoleBinding>(),
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
