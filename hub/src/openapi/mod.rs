//! OpenAPI documents: v3 per group-version (what `kubectl explain` and kubectl's
//! field-validation check read) and a v2 document (what client-side validation and Helm 3
//! read), with the schemas of custom resources.

pub(crate) mod gnostic;

use serde_json::{json, Map, Value};

use crate::registry::{Registry, ResourceType};

/// The schema name Kubernetes gives a kind: the group reversed, then version and kind.
fn schema_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = if group.is_empty() {
        vec!["io", "k8s", "api", "core"]
    } else {
        group.split('.').rev().collect()
    };
    format!("{}.{version}.{kind}", reversed.join("."))
}

fn gvk(t: &ResourceType, version: &str) -> Value {
    json!([{"group": t.group, "version": version, "kind": t.kind}])
}

fn schema_of(t: &ResourceType, version: &str) -> Value {
    let mut schema = t
        .version(version)
        .and_then(|v| v.schema.as_deref())
        .or_else(|| crate::builtin_schemas::schema(&t.group, &t.kind))
        .map(|schema| schema.source().clone())
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if let Some(map) = schema.as_object_mut() {
        map.insert("x-kubernetes-group-version-kind".into(), gvk(t, version));
        if !map.contains_key("description") {
            map.insert(
                "description".into(),
                json!(format!("{} is served by fleet-hub.", t.kind)),
            );
        }
    }
    schema
}

/// Which OpenAPI a document is written in: a query parameter's type sits in a schema in v3
/// and beside its name in Swagger 2.0.
#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    V2,
    V3,
}

fn parameters(dialect: Dialect) -> Value {
    let query = |name: &str, description: &str| {
        let mut parameter = json!({"name": name, "in": "query", "description": description,
                                   "uniqueItems": true});
        let typed = json!({"type": "string", "uniqueItems": true});
        match dialect {
            Dialect::V3 => parameter["schema"] = typed,
            Dialect::V2 => parameter["type"] = json!("string"),
        }
        parameter
    };
    json!([
        query("dryRun", "When present, modifications are not persisted."),
        query("fieldManager", "The name of the actor making the change."),
        query(
            "fieldValidation",
            "Ignore, Warn or Strict handling of unknown fields."
        ),
    ])
}

fn paths_for(t: &ResourceType, version: &str, dialect: Dialect) -> Vec<(String, Value)> {
    let base = if t.group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{}/{version}", t.group)
    };
    let scope = if t.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let operation = |action: &str| {
        json!({"x-kubernetes-group-version-kind": gvk(t, version).get(0),
               "x-kubernetes-action": action,
               "parameters": parameters(dialect),
               "responses": {"200": {"description": "OK"}}})
    };
    vec![
        (
            format!("{base}{scope}/{}", t.plural),
            json!({"post": operation("post"), "get": operation("list")}),
        ),
        (
            format!("{base}{scope}/{}/{{name}}", t.plural),
            json!({"get": operation("get"), "put": operation("put"),
                   "patch": operation("patch"), "delete": operation("delete")}),
        ),
    ]
}

/// `/openapi/v3`: one entry per served group-version.
pub(crate) fn v3_index(registry: &Registry, prefix: String) -> Value {
    let mut paths = Map::new();
    paths.insert(
        "api/v1".into(),
        json!({"serverRelativeURL": format!("{prefix}/openapi/v3/api/v1")}),
    );
    for (group, versions) in registry.groups() {
        for version in versions {
            let path = format!("apis/{group}/{version}");
            let url = format!("{prefix}/openapi/v3/{path}");
            paths.insert(path, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths})
}

/// `/openapi/v3/apis/<group>/<version>`, or `None` when the group-version is not served.
pub(crate) fn v3(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceType> = registry
        .all()
        .iter()
        .map(|t| &**t)
        .filter(|t| t.group == group && t.version(version).is_some())
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for t in served {
        paths.extend(paths_for(t, version, Dialect::V3));
        schemas.insert(
            schema_name(&t.group, version, &t.kind),
            schema_of(t, version),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::discovery::KUBE_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// `/openapi/v2`: every served kind's schema in one Swagger 2.0 document.
pub(crate) fn v2(registry: &Registry) -> Value {
    let mut definitions = Map::new();
    let mut paths = Map::new();
    for t in registry.all() {
        for v in &t.versions {
            definitions.insert(
                schema_name(&t.group, &v.name, &t.kind),
                v2_schema(schema_of(t, &v.name)),
            );
            paths.extend(paths_for(t, &v.name, Dialect::V2));
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::discovery::KUBE_MINOR)},
        "paths": paths,
        "definitions": definitions,
    })
}

/// A structural (OpenAPI v3) schema in the subset Swagger 2.0 and kubectl's v2 reader take,
/// as kube-apiserver publishes custom resources in `/openapi/v2`: no `anyOf`, `oneOf`,
/// `allOf` or `not`; a nullable or unknown-preserving schema loses its type or its
/// properties and items (kubectl would refuse the values they allow); an array without
/// items loses its type; a property that may be null is not required.
fn v2_schema(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    for dropped in ["anyOf", "oneOf", "allOf", "not"] {
        map.remove(dropped);
    }
    let nullable = map.remove("nullable") == Some(Value::Bool(true));
    if nullable {
        map.remove("type");
    }
    let preserves = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if nullable || preserves {
        map.remove("items");
        map.remove("properties");
    }
    if map.get("type").and_then(Value::as_str) == Some("array") && !map.contains_key("items") {
        map.remove("type");
    }
    let mut nullable_properties = Vec::new();
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if property.get("nullable") == Some(&Value::Bool(true)) {
                nullable_properties.push(name.clone());
            }
            *property = v2_schema(property.take());
        }
    }
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|name| {
            !nullable_properties
                .iter()
                .any(|n| Some(n.as_str()) == name.as_str())
        });
    }
    for nested in ["items", "additionalProperties"] {
        if let Some(inner) = map.get_mut(nested).filter(|v| v.is_object()) {
            *inner = v2_schema(inner.take());
        }
    }
    Value::Object(map)
}
