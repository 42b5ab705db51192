//! The JSONPath subset printer columns use: `.a.b`, `[0]`, `[*]`, `[?(@.k=="v")]`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter(Vec<String>, String),
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let (name, tail) = field_name(after);
            if !name.is_empty() {
                steps.push(Step::Field(name));
            }
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inner = &after[..end];
            rest = &after[end + 1..];
            steps.push(bracket(inner)?);
        } else {
            let (name, tail) = field_name(rest);
            if name.is_empty() {
                return None;
            }
            steps.push(Step::Field(name));
            rest = tail;
        }
    }
    Some(steps)
}

/// A field name up to the next unescaped `.` or `[`; `\.` is a literal dot.
fn field_name(text: &str) -> (String, &str) {
    let mut name = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    name.push(next);
                }
            }
            '.' | '[' => return (name, &text[i..]),
            c => name.push(c),
        }
    }
    (name, "")
}

fn bracket(inner: &str) -> Option<Step> {
    let inner = inner.trim();
    if inner == "*" {
        return Some(Step::All);
    }
    if let Ok(index) = inner.parse() {
        return Some(Step::Index(index));
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let (left, right) = filter.split_once("==")?;
        let field = left.trim().strip_prefix("@.")?;
        let value = right.trim().trim_matches(|c| c == '"' || c == '\'');
        return Some(Step::Filter(
            field.split('.').map(String::from).collect(),
            value.to_string(),
        ));
    }
    let quoted = inner.trim_matches(|c| c == '"' || c == '\'');
    Some(Step::Field(quoted.to_string()))
}

/// Every value the path selects in `root`, in document order; empty if the path is invalid.
pub(crate) fn select<'a>(root: &'a Value, path: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(path) else {
        return Vec::new();
    };
    let mut current = vec![root];
    for step in &steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => next.extend(value.get(name.as_str())),
                Step::Index(i) => next.extend(value.get(*i)),
                Step::All => match value {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Filter(field, wanted) => {
                    let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    next.extend(items.iter().filter(|item| {
                        let found = field.iter().try_fold(*item, |v, f| v.get(f.as_str()));
                        found.is_some_and(|v| scalar_text(v) == *wanted)
                    }));
                }
            }
        }
        current = next;
    }
    current
}

/// A scalar as JSONPath output prints it: strings bare, others as JSON.
pub(crate) fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printer_column_paths_select_what_kubectl_selects() {
        let object = json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
            "status": {"conditions": [
                {"type": "Accepted", "message": "a"},
                {"type": "Ready", "message": "all good"}],
              "counts": [1, 2]}});
        let first = |path: &str| select(&object, path).first().map(|v| scalar_text(v));
        assert_eq!(
            first(".status.conditions[?(@.type==\"Ready\")].message").as_deref(),
            Some("all good")
        );
        assert_eq!(first(".status.counts[1]").as_deref(), Some("2"));
        assert_eq!(
            first(".metadata.labels.app\\.kubernetes\\.io/name").as_deref(),
            Some("web")
        );
        assert_eq!(select(&object, ".status.conditions[*].type").len(), 2);
        assert!(first(".status.missing").is_none());
    }
}
