//! Dotted field paths, as `vars` (`spec.ports[0].port`) and `replacements`
//! (`spec.template.spec.containers.[name=app].image`) write them.

use serde_json::{Map, Value};

/// One step of a dotted path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A map key.
    Key(String),
    /// The list item whose field equals a value (`[name=app]`), or the primitive item equal
    /// to a value (`[=x]`).
    Match(String, String),
    /// The list item at an index (`[0]`, `ports[0]`).
    Index(usize),
    /// Every item of a list, or every value of a map (`*`).
    All,
}

/// Parses a dotted path; text in brackets is one step (`[a.b/c]` is a key with dots).
pub(crate) fn parse(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars().peekable();
    let flush = |current: &mut String, steps: &mut Vec<Step>| {
        if !current.is_empty() {
            let text = std::mem::take(current);
            steps.push(if text == "*" {
                Step::All
            } else {
                Step::Key(text)
            });
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '.' => flush(&mut current, &mut steps),
            '[' => {
                flush(&mut current, &mut steps);
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    inner.push(c);
                }
                steps.push(match inner.split_once('=') {
                    Some((field, value)) => Step::Match(field.to_string(), value.to_string()),
                    None => match inner.parse::<usize>() {
                        Ok(index) => Step::Index(index),
                        Err(_) if inner == "*" => Step::All,
                        Err(_) => Step::Key(inner),
                    },
                });
            }
            c => current.push(c),
        }
    }
    flush(&mut current, &mut steps);
    steps
}

/// The values at `steps` (several where `*` or a list walk).
pub(crate) fn get<'v>(value: &'v Value, steps: &[Step]) -> Vec<&'v Value> {
    let Some((step, rest)) = steps.split_first() else {
        return vec![value];
    };
    match (step, value) {
        (Step::Key(key), Value::Object(map)) => {
            map.get(key).map(|v| get(v, rest)).unwrap_or_default()
        }
        (Step::Key(key), Value::Array(items)) => key
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get(i))
            .map(|v| get(v, rest))
            .unwrap_or_default(),
        (Step::Index(i), Value::Array(items)) => {
            items.get(*i).map(|v| get(v, rest)).unwrap_or_default()
        }
        (Step::Match(field, wanted), Value::Array(items)) => items
            .iter()
            .filter(|item| matches_item(item, field, wanted))
            .flat_map(|item| get(item, rest))
            .collect(),
        (Step::All, Value::Array(items)) => items.iter().flat_map(|i| get(i, rest)).collect(),
        (Step::All, Value::Object(map)) => map.values().flat_map(|v| get(v, rest)).collect(),
        _ => Vec::new(),
    }
}

fn matches_item(item: &Value, field: &str, wanted: &str) -> bool {
    if field.is_empty() {
        return scalar_text(item).as_deref() == Some(wanted);
    }
    item.get(field)
        .and_then(scalar_text)
        .is_some_and(|text| text == wanted)
}

/// A scalar as text (strings as they are, numbers and booleans as YAML writes them).
pub(crate) fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Calls `f` on every slot at `steps`; with `create`, missing map keys (and list items a
/// `[field=value]` step names) are made on the way. Returns how many slots it reached.
pub(crate) fn visit_mut(
    value: &mut Value,
    steps: &[Step],
    create: bool,
    f: &mut dyn FnMut(&mut Value),
) -> usize {
    let Some((step, rest)) = steps.split_first() else {
        f(value);
        return 1;
    };
    if value.is_null() && create {
        *value = match step {
            Step::Key(_) => Value::Object(Map::new()),
            _ => Value::Array(Vec::new()),
        };
    }
    match (step, value) {
        (Step::Key(key), Value::Object(map)) => {
            if !map.contains_key(key) {
                if !create {
                    return 0;
                }
                let empty = match rest.first() {
                    None => Value::Null,
                    Some(Step::Key(_)) => Value::Object(Map::new()),
                    Some(_) => Value::Array(Vec::new()),
                };
                map.insert(key.clone(), empty);
            }
            map.get_mut(key)
                .map_or(0, |next| visit_mut(next, rest, create, f))
        }
        (Step::Index(i), Value::Array(items)) => items
            .get_mut(*i)
            .map_or(0, |next| visit_mut(next, rest, create, f)),
        (Step::Key(key), Value::Array(items)) => key
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get_mut(i))
            .map_or(0, |next| visit_mut(next, rest, create, f)),
        (Step::Match(field, wanted), Value::Array(items)) => {
            let mut reached = 0;
            for item in items.iter_mut() {
                if matches_item(item, field, wanted) {
                    reached += visit_mut(item, rest, create, f);
                }
            }
            if reached == 0 && create && !field.is_empty() {
                let mut item = Map::new();
                item.insert(field.clone(), Value::String(wanted.clone()));
                items.push(Value::Object(item));
                if let Some(last) = items.last_mut() {
                    reached += visit_mut(last, rest, create, f);
                }
            }
            reached
        }
        (Step::All, Value::Array(items)) => items
            .iter_mut()
            .map(|i| visit_mut(i, rest, create, f))
            .sum(),
        (Step::All, Value::Object(map)) => map
            .values_mut()
            .map(|v| visit_mut(v, rest, create, f))
            .sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_parse_keys_selectors_and_indexes() {
        assert_eq!(
            parse("spec.template.spec.containers.[name=app].image"),
            [
                Step::Key("spec".into()),
                Step::Key("template".into()),
                Step::Key("spec".into()),
                Step::Key("containers".into()),
                Step::Match("name".into(), "app".into()),
                Step::Key("image".into()),
            ]
        );
        assert_eq!(
            parse("spec.ports[0].port"),
            [
                Step::Key("spec".into()),
                Step::Key("ports".into()),
                Step::Index(0),
                Step::Key("port".into()),
            ]
        );
        assert_eq!(
            parse("metadata.annotations.[cert-manager.io/inject-ca-from]"),
            [
                Step::Key("metadata".into()),
                Step::Key("annotations".into()),
                Step::Key("cert-manager.io/inject-ca-from".into()),
            ]
        );
        assert_eq!(
            parse("spec.*.x"),
            [Step::Key("spec".into()), Step::All, Step::Key("x".into())]
        );
    }

    #[test]
    fn reads_and_writes_through_selectors() {
        let mut object = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        let steps = parse("spec.containers.[name=b].image");
        assert_eq!(get(&object, &steps), [&json!("y")]);
        let reached = visit_mut(&mut object, &steps, false, &mut |v| *v = json!("z"));
        assert_eq!(reached, 1);
        assert_eq!(object["spec"]["containers"][1]["image"], "z");
        let created = visit_mut(
            &mut object,
            &parse("spec.containers.[name=c].image"),
            true,
            &mut |v| *v = json!("new"),
        );
        assert_eq!(created, 1);
        assert_eq!(
            object["spec"]["containers"][2],
            json!({"name": "c", "image": "new"})
        );
        assert_eq!(
            visit_mut(
                &mut object,
                &parse("metadata.labels.app"),
                false,
                &mut |_| {}
            ),
            0
        );
    }
}
