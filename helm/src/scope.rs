//! What each chart's templates see as `.`: `.Values` (the chart's section of the computed
//! values), `.Chart` (Chart.yaml with Go's field names), `.Files`, `.Release`,
//! `.Capabilities` and `.Subcharts`, built as Helm's `recAllTpls` builds them.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value as Json;

use super::chart::{Chart, Dependency};
use super::objects::Files;
use super::template::Value;
use super::values::Resolved;

/// One chart to render and the data its templates get.
pub(crate) struct Scope<'c> {
    /// The chart.
    pub chart: &'c Chart,
    /// Its path among the templates: `chart` or `parent/charts/sub`.
    pub prefix: String,
    /// `.` for its templates, without `.Template`: a map all its templates share, and
    /// the one its parent's `.Subcharts` holds.
    pub data: Value,
}

/// What every chart shares: `.Release` and `.Capabilities`.
pub(crate) struct Shared {
    /// `.Release`.
    pub release: Value,
    /// `.Capabilities`.
    pub capabilities: Value,
}

/// The scope of `node` (whose values are `values`) and of each of its dependencies, the
/// dependencies first; returns `node`'s data, for its parent's `.Subcharts`: the same map,
/// so that what a subchart's templates do to it the parent sees.
pub(crate) fn build<'c>(
    node: &Resolved<'c>,
    values: Value,
    prefix: String,
    is_root: bool,
    shared: &Shared,
    out: &mut Vec<Scope<'c>>,
) -> Value {
    let mut subcharts = BTreeMap::new();
    for dependency in &node.dependencies {
        // Helm's `vals.Table("Values." + name)`: the section when it is a map.
        let section = match values.get(&dependency.name) {
            section @ Value::Map(_) => section,
            _ => Value::empty_map(),
        };
        let data = build(
            dependency,
            section,
            format!("{prefix}/charts/{}", dependency.name),
            false,
            shared,
            out,
        );
        subcharts.insert(dependency.name.clone(), data);
    }
    let data = Value::from(BTreeMap::from([
        (
            "Chart".to_string(),
            chart_object(
                &node.chart.metadata,
                &node.name,
                is_root,
                &node.requirements,
            ),
        ),
        (
            "Files".to_string(),
            Value::Object(Rc::new(Files {
                files: Rc::new(node.chart.files.clone()),
            })),
        ),
        ("Release".to_string(), shared.release.clone()),
        ("Capabilities".to_string(), shared.capabilities.clone()),
        ("Values".to_string(), values),
        ("Subcharts".to_string(), Value::from(subcharts)),
    ]));
    out.push(Scope {
        chart: node.chart,
        prefix,
        data: data.clone(),
    });
    data
}

fn string_field(metadata: &Json, key: &str) -> Value {
    Value::from(metadata.get(key).and_then(Json::as_str).unwrap_or_default())
}

fn list_field(metadata: &Json, key: &str, convert: fn(&Json) -> Value) -> Value {
    Value::from(
        metadata
            .get(key)
            .and_then(Json::as_array)
            .map(|items| items.iter().map(convert).collect::<Vec<_>>())
            .unwrap_or_default(),
    )
}

/// `.Chart`: Helm 4's map of `chart.Metadata` with Go's field names, every field present
/// (strings empty, lists empty), `Name` the name the chart renders under.
fn chart_object(metadata: &Json, name: &str, is_root: bool, dependencies: &[Dependency]) -> Value {
    let maintainer = |m: &Json| {
        Value::from(BTreeMap::from([
            ("Name".to_string(), string_field(m, "name")),
            ("Email".to_string(), string_field(m, "email")),
            ("URL".to_string(), string_field(m, "url")),
        ]))
    };
    let dependency = |d: &Dependency| {
        Value::from(BTreeMap::from([
            ("Name".to_string(), Value::from(d.name.as_str())),
            ("Version".to_string(), Value::from(d.version.as_str())),
            ("Repository".to_string(), Value::from(d.repository.as_str())),
            ("Condition".to_string(), Value::from(d.condition.as_str())),
            (
                "Tags".to_string(),
                Value::from(
                    d.tags
                        .iter()
                        .map(|t| Value::from(t.as_str()))
                        .collect::<Vec<_>>(),
                ),
            ),
            ("Enabled".to_string(), Value::Bool(d.enabled)),
            (
                "ImportValues".to_string(),
                Value::from(
                    d.import_values
                        .iter()
                        .map(Value::from_json)
                        .collect::<Vec<_>>(),
                ),
            ),
            ("Alias".to_string(), Value::from(d.alias.as_str())),
        ]))
    };
    let annotations = metadata
        .get("annotations")
        .map(Value::from_json)
        .filter(|a| matches!(a, Value::Map(_)))
        .unwrap_or_else(Value::empty_map);
    Value::from(BTreeMap::from([
        (
            "APIVersion".to_string(),
            string_field(metadata, "apiVersion"),
        ),
        ("Annotations".to_string(), annotations),
        (
            "AppVersion".to_string(),
            string_field(metadata, "appVersion"),
        ),
        ("Condition".to_string(), string_field(metadata, "condition")),
        (
            "Dependencies".to_string(),
            Value::from(dependencies.iter().map(dependency).collect::<Vec<_>>()),
        ),
        (
            "Deprecated".to_string(),
            Value::Bool(
                metadata
                    .get("deprecated")
                    .and_then(Json::as_bool)
                    .unwrap_or(false),
            ),
        ),
        (
            "Description".to_string(),
            string_field(metadata, "description"),
        ),
        ("Home".to_string(), string_field(metadata, "home")),
        ("Icon".to_string(), string_field(metadata, "icon")),
        ("IsRoot".to_string(), Value::Bool(is_root)),
        (
            "Keywords".to_string(),
            list_field(metadata, "keywords", Value::from_json),
        ),
        (
            "KubeVersion".to_string(),
            string_field(metadata, "kubeVersion"),
        ),
        (
            "Maintainers".to_string(),
            list_field(metadata, "maintainers", maintainer),
        ),
        ("Name".to_string(), Value::from(name)),
        (
            "Sources".to_string(),
            list_field(metadata, "sources", Value::from_json),
        ),
        ("Tags".to_string(), string_field(metadata, "tags")),
        ("Type".to_string(), string_field(metadata, "type")),
        ("Version".to_string(), string_field(metadata, "version")),
    ]))
}
