//! `meta.k8s.io/v1` Table output for `kubectl get`, built from printer columns.

use serde_json::{json, Value};

use crate::columns::PrinterColumn;
use crate::jsonpath;
use crate::registry::ResourceType;

/// What a Table row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl Include {
    /// Parses the `includeObject` query parameter.
    pub(crate) fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

/// Whether an `Accept` header asks for a Table.
pub(crate) fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

fn default_columns(resource: &ResourceType) -> Vec<PrinterColumn> {
    let column = |name: &str, kind: &str, path: &str| PrinterColumn {
        name: name.into(),
        kind: kind.into(),
        json_path: path.into(),
        priority: 0,
        description: String::new(),
        compute: None,
    };
    let mut columns = if resource.custom {
        Vec::new()
    } else {
        crate::columns::for_kind(&resource.group, &resource.kind).unwrap_or_default()
    };
    if resource.kind == "Namespace" {
        columns.push(column("Status", "string", ".status.phase"));
    }
    columns.push(column("Age", "date", ".metadata.creationTimestamp"));
    columns
}

/// The columns after Name for a resource version.
pub(crate) fn columns(resource: &ResourceType, version: &str) -> Vec<PrinterColumn> {
    match resource.version(version) {
        Some(v) if !v.columns.is_empty() => v.columns.clone(),
        _ => default_columns(resource),
    }
}

/// The column definitions, Name first.
pub(crate) fn column_definitions(columns: &[PrinterColumn]) -> Value {
    let mut definitions = vec![json!({
        "name": "Name", "type": "string", "format": "name", "priority": 0,
        "description": "Name must be unique within a namespace."
    })];
    definitions.extend(columns.iter().map(|c| {
        json!({"name": c.name, "type": c.kind, "format": "", "priority": c.priority,
               "description": c.description})
    }));
    Value::Array(definitions)
}

/// One row for an object.
pub(crate) fn row(object: &Value, columns: &[PrinterColumn], include: Include) -> Value {
    let name = crate::meta::meta_str(object, "name").unwrap_or_default();
    let mut cells = vec![json!(name)];
    cells.extend(columns.iter().map(|c| cell(object, c)));
    let mut row = json!({"cells": cells});
    match include {
        Include::None => {}
        Include::Metadata => {
            let metadata = object.get("metadata").cloned();
            row["object"] = crate::partial::object(metadata.unwrap_or_else(|| json!({})));
        }
        Include::Object => row["object"] = object.clone(),
    }
    row
}

fn cell(object: &Value, column: &PrinterColumn) -> Value {
    if let Some(computed) = column.compute {
        return computed.of(object);
    }
    let Some(value) = jsonpath::select(object, &column.json_path)
        .into_iter()
        .next()
    else {
        return Value::Null;
    };
    match (column.kind.as_str(), value) {
        ("date", Value::String(timestamp)) => json!(crate::meta::human_age(timestamp)),
        ("string", Value::String(_))
        | ("integer" | "number", Value::Number(_))
        | ("boolean", Value::Bool(_)) => value.clone(),
        (_, Value::Object(_) | Value::Array(_)) => json!(value.to_string()),
        (_, other) => json!(jsonpath::scalar_text(other)),
    }
}

/// A Table of `objects`.
pub(crate) fn table(
    objects: &[&Value],
    columns: &[PrinterColumn],
    include: Include,
    metadata: Value,
) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(columns),
        "rows": objects.iter().map(|o| row(o, columns, include)).collect::<Vec<_>>(),
    })
}
