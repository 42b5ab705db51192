//! OpenAPI schemas of the built-in kinds, generated from k8s-openapi's types, for
//! `kubectl explain`. They document; they do not validate (the hub stores built-in kinds as
//! sent, as its docs say).

use std::collections::HashMap;
use std::sync::OnceLock;

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
    value
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

/// The schema of a built-in kind, generated once.
pub fn schema(group: &str, kind: &str) -> Option<&'static Value> {
    static SCHEMAS: OnceLock<HashMap<(&'static str, &'static str), Value>> = OnceLock::new();
    SCHEMAS
        .get_or_init(all)
        .iter()
        .find(|((g, k), _)| *g == group && *k == kind)
        .map(|(_, schema)| schema)
}
