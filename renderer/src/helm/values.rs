//! Values as Helm computes them: chart defaults < values files < values < `--set`, then
//! each enabled subchart gets its section of the parent's values over its own defaults,
//! with the parent's `global` merged in.

use serde_json::{Map, Value as Json};

use super::chart::Chart;

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

/// Coalesces user values over a chart's defaults: keys the user sets win, maps merge, and
/// a user `null` deletes the default.
pub fn coalesce(user: &Json, defaults: &Json) -> Json {
    let (Json::Object(user), Json::Object(defaults)) = (user, defaults) else {
        return if user.is_null() {
            defaults.clone()
        } else {
            user.clone()
        };
    };
    let mut out: Map<String, Json> = defaults.clone();
    for (key, value) in user {
        match (value, defaults.get(key)) {
            (Json::Null, _) => {
                out.remove(key);
            }
            (Json::Object(_), Some(default @ Json::Object(_))) => {
                out.insert(key.clone(), coalesce(value, default));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Json::Object(out)
}

/// Whether a dependency is enabled: its first resolvable `condition` path, else its tags
/// (any tag true enables it, all false disables it), else enabled.
pub fn enabled(dependency: &super::chart::Dependency, parent_values: &Json) -> bool {
    for path in dependency
        .condition
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let found = path.split('.').try_fold(parent_values, |v, key| v.get(key));
        if let Some(Json::Bool(on)) = found {
            return *on;
        }
    }
    if dependency.tags.is_empty() {
        return true;
    }
    let tags = parent_values.get("tags");
    let states: Vec<bool> = dependency
        .tags
        .iter()
        .filter_map(|t| tags.and_then(|tags| tags.get(t)).and_then(Json::as_bool))
        .collect();
    states.is_empty() || states.iter().any(|on| *on)
}

/// The final values of a chart and, recursively, of its enabled subcharts (stored under
/// each subchart's name, as `.Values.<sub>` in the parent).
pub fn compute(chart: &Chart, user: &Json) -> Json {
    let mut values = coalesce(user, &chart.values);
    let global = values
        .get("global")
        .cloned()
        .unwrap_or_else(|| Json::Object(Map::new()));
    for dependency in &chart.dependencies {
        let name = dependency.effective_name().to_string();
        let Some(sub) = chart.subcharts.iter().find(|s| s.name == dependency.name) else {
            continue;
        };
        if !enabled(dependency, &values) {
            continue;
        }
        let computed = compute(sub, &section_for(&values, &name, &global));
        import_values(&mut values, &computed, &dependency.import_values);
        if let Json::Object(map) = &mut values {
            map.insert(name, computed);
        }
    }
    // Subcharts in charts/ without a dependency entry are always enabled.
    for sub in &chart.subcharts {
        if chart.dependencies.iter().any(|d| d.name == sub.name) {
            continue;
        }
        let computed = compute(sub, &section_for(&values, &sub.name, &global));
        if let Json::Object(map) = &mut values {
            map.insert(sub.name.clone(), computed);
        }
    }
    if let Json::Object(map) = &mut values {
        map.entry("global")
            .or_insert_with(|| Json::Object(Map::new()));
    }
    drop_nulls(&mut values);
    values
}

/// A subchart's section of the parent's values, with the parent's `global` merged over the
/// section's own.
fn section_for(values: &Json, name: &str, global: &Json) -> Json {
    let mut section = values
        .get(name)
        .cloned()
        .unwrap_or_else(|| Json::Object(Map::new()));
    if let Json::Object(map) = &mut section {
        let mut sub_global = map
            .get("global")
            .cloned()
            .unwrap_or_else(|| Json::Object(Map::new()));
        merge_user(&mut sub_global, global);
        map.insert("global".into(), sub_global);
    }
    section
}

/// `import-values`: values a subchart exports, copied into the parent. A string `x` takes
/// the child's `exports.x` map into the parent's top level; `{child, parent}` copies one
/// path to another. Values the parent sets itself win.
fn import_values(parent: &mut Json, child: &Json, imports: &[Json]) {
    let at = |root: &Json, path: &str| -> Option<Json> {
        path.split('.')
            .filter(|p| !p.is_empty())
            .try_fold(root, |v, key| v.get(key))
            .cloned()
    };
    for import in imports {
        let (source, target) = match import {
            Json::String(name) => (format!("exports.{name}"), String::new()),
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
        let Some(imported) = at(child, &source) else {
            continue;
        };
        let mut slot = &mut *parent;
        for key in target.split('.').filter(|p| !p.is_empty()) {
            let Json::Object(map) = slot else {
                break;
            };
            slot = map
                .entry(key.to_string())
                .or_insert_with(|| Json::Object(Map::new()));
        }
        *slot = coalesce(slot, &imported);
    }
}

/// Helm removes keys whose value is null, from the defaults as from user values.
fn drop_nulls(value: &mut Json) {
    if let Json::Object(map) = value {
        map.retain(|_, v| !v.is_null());
        map.values_mut().for_each(drop_nulls);
    }
}

/// Parses `--set a.b=c,d[0]=e` into values: integers and booleans typed, as Helm's strvals.
pub fn parse_set(text: &str) -> Result<Json, String> {
    let mut out = Json::Object(Map::new());
    for assignment in split_unescaped(text, ',') {
        let (path, raw) = assignment
            .split_once('=')
            .ok_or_else(|| format!("key \"{assignment}\" has no value"))?;
        let value = typed(raw);
        set_path(&mut out, path, value)?;
    }
    Ok(out)
}

fn split_unescaped(text: &str, separator: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            c if c == separator => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    if !current.is_empty() || !parts.is_empty() {
        parts.push(current);
    }
    parts
}

fn typed(raw: &str) -> Json {
    match raw {
        "true" => Json::Bool(true),
        "false" => Json::Bool(false),
        "null" => Json::Null,
        _ => match raw.parse::<i64>() {
            Ok(i) if !(raw.len() > 1 && raw.starts_with('0')) => Json::from(i),
            _ => Json::String(raw.to_string()),
        },
    }
}

fn set_path(target: &mut Json, path: &str, value: Json) -> Result<(), String> {
    let mut current = target;
    let keys: Vec<&str> = path.split('.').collect();
    for (i, key) in keys.iter().enumerate() {
        let last = i + 1 == keys.len();
        let (name, index) = match key.split_once('[') {
            Some((name, rest)) => {
                let index: usize = rest
                    .trim_end_matches(']')
                    .parse()
                    .map_err(|_| format!("invalid index in {path}"))?;
                (name, Some(index))
            }
            None => (*key, None),
        };
        let map = current
            .as_object_mut()
            .ok_or_else(|| format!("{path}: not a map"))?;
        match index {
            None if last => {
                map.insert(name.to_string(), value);
                return Ok(());
            }
            None => {
                let entry = map
                    .entry(name.to_string())
                    .or_insert_with(|| Json::Object(Map::new()));
                if !entry.is_object() {
                    *entry = Json::Object(Map::new());
                }
                current = entry;
            }
            Some(index) => {
                let entry = map
                    .entry(name.to_string())
                    .or_insert_with(|| Json::Array(Vec::new()));
                let list = entry
                    .as_array_mut()
                    .ok_or_else(|| format!("{path}: not a list"))?;
                if index > 10_000 {
                    return Err(format!("{path}: index {index} is too large"));
                }
                while list.len() <= index {
                    list.push(Json::Null);
                }
                if last {
                    list[index] = value;
                    return Ok(());
                }
                if !list[index].is_object() {
                    list[index] = Json::Object(Map::new());
                }
                current = &mut list[index];
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_values_win_and_null_deletes() {
        let defaults =
            json!({"image": {"repo": "nginx", "tag": "1"}, "replicas": 1, "extra": {"a": 1}});
        let user = json!({"image": {"tag": "2"}, "extra": null});
        assert_eq!(
            coalesce(&user, &defaults),
            json!({"image": {"repo": "nginx", "tag": "2"}, "replicas": 1})
        );
    }

    #[test]
    fn set_strings_are_typed_as_helm_types_them() {
        assert_eq!(
            parse_set("a.b=1,c=true,d=x\\,y,e[1]=z,f=007").expect("parses"),
            json!({"a": {"b": 1}, "c": true, "d": "x,y", "e": [null, "z"], "f": "007"})
        );
    }
}
