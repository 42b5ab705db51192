//! Values as Helm computes them: user values (files, then `--set`) over the chart's
//! defaults, each enabled dependency's section over its own defaults with the parent's
//! `global` passed down, and values imported from dependencies beneath the parent's. A
//! port of Helm's `ProcessDependenciesWithMerge` and `CoalesceValues`, so that nulls,
//! aliases, tags, conditions and import-values behave as in Helm.

use serde_json::{Map, Value as Json};

use super::chart::{Chart, Dependency};

/// Merges `overlay` over `base` (maps deeply, everything else replaced), as Helm merges
/// values files and `--set` into one set of user values.
pub fn merge_user(base: &mut Json, overlay: &Json) {
    match (base, overlay) {
        (Json::Object(base), Json::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        merge_user(existing, value)
                    }
                    _ => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

/// A chart as it renders: its dependencies enabled or disabled by the values, aliases
/// applied, and its default values after those imported from its dependencies.
#[derive(Debug, Clone)]
pub(crate) struct Resolved<'c> {
    /// The chart.
    pub chart: &'c Chart,
    /// The name it renders under: its alias, or its own name.
    pub name: String,
    /// Its default values.
    pub values: Map<String, Json>,
    /// Its dependencies, enabled ones only once resolved, in Helm's order.
    pub dependencies: Vec<Resolved<'c>>,
    /// Chart.yaml's dependency entries still enabled, their alias as their name.
    pub requirements: Vec<Dependency>,
}

impl<'c> Resolved<'c> {
    /// A chart as loaded: every chart under `charts/` a dependency, nothing decided yet.
    fn loaded(chart: &'c Chart, name: &str) -> Self {
        Self {
            chart,
            name: name.to_string(),
            values: chart.values.as_object().cloned().unwrap_or_default(),
            dependencies: chart
                .subcharts
                .iter()
                .map(|sub| Resolved::loaded(sub, &sub.name))
                .collect(),
            requirements: chart.dependencies.clone(),
        }
    }
}

/// Why the values could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ValuesError {
    /// A subchart's section of the values is not a map.
    #[error("type mismatch on {name}: %!t({value})")]
    NotATable {
        /// The subchart.
        name: String,
        /// What its section holds, as Go prints it.
        value: String,
    },
}

/// Resolves `chart`'s dependencies for `user` values and computes the values every
/// template sees, as Helm's install does: `ProcessDependenciesWithMerge`, then
/// `CoalesceValues`.
pub(crate) fn resolve<'c>(chart: &'c Chart, user: &Json) -> Result<Coalesced<'c>, ValuesError> {
    let user = user.as_object().cloned().unwrap_or_default();
    let mut root = Resolved::loaded(chart, &chart.name);
    let mut warnings = Vec::new();
    process_enabled(&mut root, &user, "", &mut warnings)?;
    process_imports(&mut root, &mut warnings)?;
    let mut values = user;
    coalesce(&root, &mut values, "", false, &mut warnings)?;
    Ok(Coalesced {
        root,
        values: Json::Object(values),
        warnings,
    })
}

/// The values every template sees, with the chart tree they were computed for.
pub(crate) struct Coalesced<'c> {
    /// The chart and its enabled dependencies.
    pub root: Resolved<'c>,
    /// The values.
    pub values: Json,
    /// What Helm warns of while it computes them, in its words.
    pub warnings: Vec<String>,
}

/// Helm's `concatPrefix`: `a.b`, or `b` without a prefix.
fn full_key(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// A value as Go's `%v` prints it.
fn go_value(value: &Json) -> String {
    super::template::Value::from_json(value).to_go_string()
}

/// `processDependencyEnabled`: Chart.yaml's dependencies matched to the charts in
/// `charts/` (aliased copies made), then disabled by tags and conditions.
fn process_enabled(
    node: &mut Resolved<'_>,
    values: &Map<String, Json>,
    path: &str,
    warnings: &mut Vec<String>,
) -> Result<(), ValuesError> {
    if node.requirements.is_empty() {
        return Ok(());
    }
    let loaded = std::mem::take(&mut node.dependencies);
    let compatible = |req: &Dependency, chart: &Chart| {
        req.name == chart.name && compatible_range(&req.version, &chart_version(chart))
    };
    let mut dependencies: Vec<Resolved<'_>> = loaded
        .iter()
        .filter(|sub| {
            !node
                .requirements
                .iter()
                .any(|req| compatible(req, sub.chart))
        })
        .cloned()
        .collect();
    for req in &mut node.requirements {
        if let Some(found) = loaded.iter().find(|sub| compatible(req, sub.chart)) {
            let mut copy = found.clone();
            if !req.alias.is_empty() {
                copy.name = req.alias.clone();
            }
            dependencies.push(copy);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
        req.enabled = true;
    }
    node.dependencies = dependencies;
    let mut computed = values.clone();
    coalesce(node, &mut computed, "", false, warnings)?;
    apply_tags(&mut node.requirements, &computed);
    apply_conditions(&mut node.requirements, &computed, path);
    let disabled: Vec<String> = node
        .requirements
        .iter()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    node.dependencies.retain(|d| !disabled.contains(&d.name));
    node.requirements.retain(|r| !disabled.contains(&r.name));
    for dependency in &mut node.dependencies {
        let sub_path = format!("{path}{}.", dependency.name);
        process_enabled(dependency, &computed, &sub_path, warnings)?;
    }
    Ok(())
}

fn chart_version(chart: &Chart) -> String {
    chart
        .metadata
        .get("version")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Helm's `IsCompatibleRange`: the version satisfies the constraint (an empty or invalid
/// constraint satisfies nothing).
fn compatible_range(constraint: &str, version: &str) -> bool {
    let Ok(parsed) = super::sprig::semver::Version::parse(version) else {
        return false;
    };
    !constraint.trim().is_empty()
        && super::sprig::semver::satisfies(&parsed, constraint).unwrap_or(false)
}

/// `processDependencyTags`: a dependency with a true tag is enabled, with only false tags
/// disabled.
fn apply_tags(requirements: &mut [Dependency], values: &Map<String, Json>) {
    let Some(Json::Object(tags)) = values.get("tags") else {
        return;
    };
    for requirement in requirements {
        let states: Vec<bool> = requirement
            .tags
            .iter()
            .filter_map(|t| tags.get(t).and_then(Json::as_bool))
            .collect();
        let (any_true, any_false) = (states.contains(&true), states.contains(&false));
        requirement.enabled = any_true || !any_false;
    }
}

/// `processDependencyConditions`: the first condition path that holds a boolean decides.
fn apply_conditions(requirements: &mut [Dependency], values: &Map<String, Json>, path: &str) {
    for requirement in requirements {
        for condition in requirement.condition.trim().split(',') {
            if condition.is_empty() {
                continue;
            }
            if let Some(Json::Bool(on)) = path_value(values, &format!("{path}{condition}")) {
                requirement.enabled = on;
                break;
            }
        }
    }
}

/// Helm's `Values.PathValue`: the non-table value at a dotted path.
fn path_value(values: &Map<String, Json>, path: &str) -> Option<Json> {
    let (parents, key) = match path.rsplit_once('.') {
        Some((parents, key)) => (Some(parents), key),
        None => (None, path),
    };
    let table = match parents {
        Some(parents) => table(values, parents)?,
        None => values,
    };
    table.get(key).filter(|v| !v.is_object()).cloned()
}

/// Helm's `Values.Table`: the map at a dotted path.
fn table<'v>(values: &'v Map<String, Json>, path: &str) -> Option<&'v Map<String, Json>> {
    path.split('.')
        .try_fold(values, |map, key| map.get(key)?.as_object())
}

/// `processDependencyImportValues` with merge: each chart's values become its coalesced
/// values (subcharts' sections included) with what its dependencies export beneath them.
fn process_imports(node: &mut Resolved<'_>, warnings: &mut Vec<String>) -> Result<(), ValuesError> {
    for dependency in &mut node.dependencies {
        process_imports(dependency, warnings)?;
    }
    if node.requirements.is_empty() {
        return Ok(());
    }
    let mut computed = Map::new();
    coalesce(node, &mut computed, "", true, warnings)?;
    let mut imported = Map::new();
    for requirement in &node.requirements {
        for import in &requirement.import_values {
            let (child, parent) = match import {
                Json::String(name) => (format!("exports.{name}"), ".".to_string()),
                Json::Object(map) => (
                    map.get("child")
                        .and_then(Json::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    map.get("parent")
                        .and_then(Json::as_str)
                        .unwrap_or_default()
                        .to_string(),
                ),
                _ => continue,
            };
            let Some(found) = table(&computed, &format!("{}.{child}", requirement.name)) else {
                continue;
            };
            let placed = path_to_map(&parent, found.clone());
            coalesce_tables(&mut imported, placed, "", true, warnings);
        }
    }
    coalesce_tables(&mut computed, imported, "", true, warnings);
    node.values = computed;
    Ok(())
}

/// Helm's `pathToMap`: `a.b` and a map become `{a: {b: map}}`; `.` is the map itself.
fn path_to_map(path: &str, data: Map<String, Json>) -> Map<String, Json> {
    if path == "." {
        return data;
    }
    path.split('.').rev().fold(data, |inner, key| {
        let mut outer = Map::new();
        outer.insert(key.to_string(), Json::Object(inner));
        outer
    })
}

/// Helm's `coalesce`: a chart's defaults under `dest`, then each dependency's under its
/// section, with the globals passed down. With `merge`, nulls are kept instead of deleting.
fn coalesce(
    node: &Resolved<'_>,
    dest: &mut Map<String, Json>,
    prefix: &str,
    merge: bool,
    warnings: &mut Vec<String>,
) -> Result<(), ValuesError> {
    let prefix = full_key(prefix, &node.chart.name);
    coalesce_values(node, dest, &prefix, merge, warnings);
    for dependency in &node.dependencies {
        let section = dest
            .entry(dependency.name.clone())
            .or_insert_with(|| Json::Object(Map::new()));
        let Json::Object(section) = section else {
            return Err(ValuesError::NotATable {
                name: dependency.name.clone(),
                value: go_value(section),
            });
        };
        let mut section = std::mem::take(section);
        coalesce_globals(&mut section, dest, warnings);
        coalesce(dependency, &mut section, &prefix, merge, warnings)?;
        dest.insert(dependency.name.clone(), Json::Object(section));
    }
    Ok(())
}

/// Helm's `coalesceValues`: the chart's defaults fill what `dest` lacks; a null in `dest`
/// deletes the key (unless merging); maps merge, a dependency's section always merging.
fn coalesce_values(
    node: &Resolved<'_>,
    dest: &mut Map<String, Json>,
    prefix: &str,
    merge: bool,
    warnings: &mut Vec<String>,
) {
    for (key, default) in &node.values {
        match dest.get_mut(key) {
            Some(Json::Null) if !merge => {
                dest.remove(key);
            }
            Some(Json::Object(table)) => match default {
                Json::Object(default) => {
                    let merge = merge || node.dependencies.iter().any(|d| &d.name == key);
                    let full = full_key(prefix, key);
                    coalesce_tables(table, default.clone(), &full, merge, warnings);
                }
                Json::Null => {}
                _ => warnings.push(format!(
                    "warning: skipped value for {}: Not a table.",
                    full_key(prefix, key)
                )),
            },
            Some(_) => {}
            None => {
                if let Some(default) = copied(default, merge) {
                    dest.insert(key.clone(), default);
                }
            }
        }
    }
}

/// A default as it is copied into values that lack it: when coalescing (not merging)
/// Helm 4 copies no nulls, in maps at any depth (a list keeps its nulls).
fn copied(value: &Json, merge: bool) -> Option<Json> {
    if merge {
        return Some(value.clone());
    }
    match value {
        Json::Null => None,
        Json::Object(map) => Some(Json::Object(
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), copied(v, false)?)))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

/// Helm's `coalesceGlobals`: the parent's `global` merged into the section's own.
fn coalesce_globals(
    section: &mut Map<String, Json>,
    parent: &Map<String, Json>,
    warnings: &mut Vec<String>,
) {
    let mut globals = match section.get("global") {
        None => Map::new(),
        Some(Json::Object(globals)) => globals.clone(),
        Some(_) => return,
    };
    let parent_globals = match parent.get("global") {
        None => Map::new(),
        Some(Json::Object(globals)) => globals.clone(),
        Some(_) => return,
    };
    for (key, value) in parent_globals {
        match (&value, globals.get_mut(&key)) {
            (Json::Object(table), None) => {
                globals.insert(key, Json::Object(table.clone()));
            }
            (Json::Object(table), Some(Json::Object(existing))) => {
                let mut merged = table.clone();
                coalesce_tables(&mut merged, existing.clone(), "", true, warnings);
                globals.insert(key, Json::Object(merged));
            }
            (Json::Object(_), Some(_)) => warnings.push(format!(
                "Conflict: cannot merge map onto non-map for {key:?}. Skipping."
            )),
            (_, Some(Json::Object(_))) => warnings.push(format!("key {key} is table. Skipping")),
            (_, _) => {
                globals.insert(key, value);
            }
        }
    }
    section.insert("global".into(), Json::Object(globals));
}

/// Helm's `coalesceTablesFullKey`: `src` under `dst`, `dst` winning. When coalescing, a
/// null in `dst` deletes a key `src` gives a value (the user removing a default), and
/// nulls of `src` are not copied; when merging, nulls are kept.
fn coalesce_tables(
    dst: &mut Map<String, Json>,
    mut src: Map<String, Json>,
    prefix: &str,
    merge: bool,
    warnings: &mut Vec<String>,
) {
    let src_non_null: std::collections::HashSet<String> = src
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    for (key, value) in dst.iter() {
        if value.is_null() {
            src.insert(key.clone(), Json::Null);
        }
    }
    for (key, value) in src {
        match dst.get_mut(&key) {
            Some(Json::Null) if !merge && src_non_null.contains(&key) => {
                dst.remove(&key);
            }
            None => {
                if let Some(value) = copied(&value, merge) {
                    dst.insert(key, value);
                }
            }
            Some(Json::Object(existing)) => match value {
                Json::Object(table) => {
                    coalesce_tables(existing, table, &full_key(prefix, &key), merge, warnings)
                }
                Json::Null => {}
                other => warnings.push(format!(
                    "warning: destination for {} is a table. Ignoring non-table value ({})",
                    full_key(prefix, &key),
                    go_value(&other)
                )),
            },
            Some(_) if value.is_object() => warnings.push(format!(
                "warning: cannot overwrite table with non table for {} ({})",
                full_key(prefix, &key),
                go_value(&value)
            )),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_deletes_unless_merging() {
        // coalesceTablesFullKey's documented behaviour: dst wins, a null in dst deletes.
        let mut dst = json!({"image": {"tag": "2"}, "extra": null})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let src = json!({"image": {"repo": "nginx", "tag": "1"}, "replicas": 1, "extra": {"a": 1}});
        coalesce_tables(
            &mut dst,
            src.as_object().cloned().unwrap_or_default(),
            "",
            false,
            &mut Vec::new(),
        );
        assert_eq!(
            Json::Object(dst),
            json!({"image": {"repo": "nginx", "tag": "2"}, "replicas": 1})
        );
        let mut kept = json!({"extra": null})
            .as_object()
            .cloned()
            .unwrap_or_default();
        coalesce_tables(
            &mut kept,
            src.as_object().cloned().unwrap_or_default(),
            "",
            true,
            &mut Vec::new(),
        );
        assert_eq!(kept.get("extra"), Some(&Json::Null));
    }
}
