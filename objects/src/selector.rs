//! Kubernetes label selectors: the structured form Fleet's objects hold (`matchLabels`,
//! `matchExpressions`) and the string form (`a=b,c!=d,e in (f,g),!h`) that kustomize patch
//! targets and list requests write.

use std::collections::BTreeMap;

use fleet_api::LabelSelector;
use serde_json::Value;

/// Whether `labels` satisfy a selector. An empty selector matches everything.
pub fn matches_selector(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_match = selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_match = selector.match_expressions.iter().all(|e| {
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| e.values.contains(v)),
            "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_match && expressions_match
}

/// Two selectors as one, as Fleet merges GitRepoRestrictions' (its `labelselectors.Merge`):
/// the labels of both, `next`'s winning a clash, and the expressions of both, each once.
pub fn merged(first: Option<LabelSelector>, next: &LabelSelector) -> LabelSelector {
    let mut merged = first.unwrap_or_default();
    merged.match_labels.extend(next.match_labels.clone());
    for expression in &next.match_expressions {
        if !merged.match_expressions.contains(expression) {
            merged.match_expressions.push(expression.clone());
        }
    }
    merged
}

/// A selector in Kubernetes' text form (`labels.Selector`'s `String`): its requirements
/// sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by commas.
pub fn to_text(selector: &LabelSelector) -> String {
    let mut requirements: Vec<(String, String)> = selector
        .match_labels
        .iter()
        .map(|(key, value)| (key.clone(), format!("{key}={value}")))
        .collect();
    for expression in &selector.match_expressions {
        let mut values = expression.values.clone();
        values.sort();
        let key = &expression.key;
        let text = match expression.operator.as_str() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        };
        requirements.push((key.clone(), text));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    let texts: Vec<String> = requirements.into_iter().map(|(_, text)| text).collect();
    texts.join(",")
}

/// A parsed Kubernetes label selector string (`a=b,c!=d,e in (f,g),!h`).
pub struct LabelRequirements {
    requirements: Vec<(String, Requirement)>,
}

enum Requirement {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    Absent,
}

impl LabelRequirements {
    /// Whether it requires nothing (every object matches).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses a selector string.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let requirement = if let Some(key) = part.strip_prefix('!') {
                (key.trim().to_string(), Requirement::Absent)
            } else if let Some((key, value)) = part.split_once("!=") {
                (
                    key.trim().to_string(),
                    Requirement::NotEquals(value.trim().to_string()),
                )
            } else if let Some((key, value)) =
                part.split_once("==").or_else(|| part.split_once('='))
            {
                (
                    key.trim().to_string(),
                    Requirement::Equals(value.trim().to_string()),
                )
            } else if let Some((key, values)) = split_set(part, " notin ") {
                (key, Requirement::NotIn(values))
            } else if let Some((key, values)) = split_set(part, " in ") {
                (key, Requirement::In(values))
            } else if part
                .chars()
                .all(|c| c.is_alphanumeric() || "-_./".contains(c))
            {
                (part.to_string(), Requirement::Exists)
            } else {
                return Err(format!("invalid label selector `{text}`"));
            };
            validate(&requirement.0, &requirement.1)?;
            requirements.push(requirement);
        }
        Ok(Self { requirements })
    }

    /// The values some label must have for a match (`a=b`, `a==b`, `a in (b)`): a cheap
    /// test before labels are read, since an object without them cannot match.
    pub fn required_values(&self) -> impl Iterator<Item = &str> {
        self.requirements
            .iter()
            .filter_map(|(_, requirement)| match requirement {
                Requirement::Equals(value) => Some(value.as_str()),
                Requirement::In(values) if values.len() == 1 => values.first().map(String::as_str),
                _ => None,
            })
    }

    /// Whether a labels map satisfies every requirement.
    pub fn matches(&self, labels: Option<&Value>) -> bool {
        self.matches_labels(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
    }

    /// Whether labels, read one key at a time by `get`, satisfy every requirement.
    pub fn matches_labels<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements
            .iter()
            .all(|(key, requirement)| match requirement {
                Requirement::Equals(v) => get(key) == Some(v.as_str()),
                Requirement::NotEquals(v) => get(key) != Some(v.as_str()),
                Requirement::In(vs) => get(key).is_some_and(|have| vs.iter().any(|v| v == have)),
                Requirement::NotIn(vs) => get(key).is_none_or(|have| !vs.iter().any(|v| v == have)),
                Requirement::Exists => get(key).is_some(),
                Requirement::Absent => get(key).is_none(),
            })
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn split_set(part: &str, operator: &str) -> Option<(String, Vec<String>)> {
    let (key, rest) = part.split_once(operator)?;
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some((
        key.trim().to_string(),
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    ))
}

/// Kubernetes' checks of a requirement: a valid label key and valid values. An empty set
/// is allowed, as kube-apiserver allows it: `in ()` matches nothing, `notin ()` everything.
fn validate(key: &str, requirement: &Requirement) -> std::result::Result<(), String> {
    if let Some(problem) = label_key_problem(key) {
        return Err(problem);
    }
    let values: &[String] = match requirement {
        Requirement::Equals(v) | Requirement::NotEquals(v) => std::slice::from_ref(v),
        Requirement::In(vs) | Requirement::NotIn(vs) => vs,
        Requirement::Exists | Requirement::Absent => &[],
    };
    match values.iter().find_map(|v| label_value_problem(v)) {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// Why `key` is not a label key (or an annotation key), as Kubernetes checks it: an
/// optional DNS subdomain prefix and `/`, then a name of at most 63 characters.
pub fn label_key_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let valid = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            });
        if !valid {
            return Some(format!(
                "invalid label key \"{key}\": prefix part must be a lowercase DNS subdomain"
            ));
        }
    }
    (!is_qualified_name(name)).then(|| format!(
        "invalid label key \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63)"
    ))
}

/// Why `value` is not a label value: empty, or at most 63 characters of `[A-Za-z0-9._-]`
/// with an alphanumeric at both ends.
pub fn label_value_problem(value: &str) -> Option<String> {
    (!value.is_empty() && !is_qualified_name(value)).then(|| format!(
        "invalid label value: \"{value}\": must be 63 characters or less and consist of alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character"
    ))
}

/// A label name or value: at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at
/// both ends.
fn is_qualified_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Parses a `key=value` label, as command lines take them (`-l env=prod`).
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{text}` is not key=value"))
}

/// The label selector of the objects a controller shard handles: those labelled with its
/// id, or for the unsharded controller those not labelled with any
/// ([`fleet_api::labels::SHARD_LABEL`]).
pub fn shard(id: Option<&str>) -> String {
    let label = fleet_api::labels::SHARD_LABEL;
    match id {
        Some(id) => format!("{label}={id}"),
        None => format!("!{label}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::LabelSelectorRequirement;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn malformed_selectors_are_refused_as_the_api_server_refuses_them() {
        for bad in ["!!!", "a=b c", "-a=b", "a=-b", "Example.com/a=b", "a/b/c=d"] {
            assert!(
                LabelRequirements::parse(bad).is_err(),
                "{bad} must be refused"
            );
        }
        for good in [
            "a",
            "!a",
            "a=b",
            "a!=",
            "example.com/a in (x, y)",
            "a.b_c-d==e",
            "a notin (x)",
        ] {
            assert!(LabelRequirements::parse(good).is_ok(), "{good} must parse");
        }
    }

    #[test]
    fn an_empty_set_matches_nothing_in_it_as_kube_apiserver_reads_it() {
        let labels = serde_json::json!({"a": "x"});
        let parse = |text| LabelRequirements::parse(text).expect(text);
        assert!(!parse("a in ()").matches(Some(&labels)));
        assert!(parse("a notin ()").matches(Some(&labels)));
        assert!(parse("a notin ()").matches(None));
    }

    #[test]
    fn selectors_with_expressions() {
        let selector = LabelSelector {
            match_labels: labels(&[("env", "prod")]),
            match_expressions: vec![
                LabelSelectorRequirement {
                    key: "region".into(),
                    operator: "In".into(),
                    values: vec!["a".into(), "b".into()],
                },
                LabelSelectorRequirement {
                    key: "legacy".into(),
                    operator: "DoesNotExist".into(),
                    values: vec![],
                },
            ],
        };
        assert!(matches_selector(
            &selector,
            &labels(&[("env", "prod"), ("region", "a")])
        ));
        assert!(!matches_selector(
            &selector,
            &labels(&[("env", "prod"), ("region", "c")])
        ));
        assert!(!matches_selector(
            &selector,
            &labels(&[("env", "prod"), ("region", "a"), ("legacy", "1")])
        ));
        assert!(matches_selector(&LabelSelector::default(), &labels(&[])));
    }

    #[test]
    fn command_line_labels() {
        assert_eq!(parse_label("env=prod"), Ok(("env".into(), "prod".into())));
        assert_eq!(parse_label("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_label("env").is_err());
    }

    #[test]
    fn label_selector_strings() {
        let labels = json!({"app": "web", "tier": "front"});
        let check = |s: &str| {
            LabelRequirements::parse(s)
                .expect("parse")
                .matches(Some(&labels))
        };
        assert!(check("app=web"));
        assert!(check("app==web,tier!=back"));
        assert!(check("tier in (front, back)"));
        assert!(!check("tier notin (front)"));
        assert!(check("app,!missing"));
        assert!(!check("app=db"));
    }

    #[test]
    fn restriction_selectors_merge_and_print_as_kubernetes_prints_them() {
        let selector = |body: serde_json::Value| -> LabelSelector {
            serde_json::from_value(body).expect("a selector")
        };
        let first = selector(
            serde_json::json!({"matchLabels": {"team": "a", "env": "prod"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]}),
        );
        let next = selector(serde_json::json!({"matchLabels": {"team": "b"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]},
                {"key": "gone", "operator": "DoesNotExist"}, {"key": "zone", "operator": "Exists"}]}));
        let merged = merged(Some(first), &next);
        assert_eq!(
            merged.match_labels.get("team").map(String::as_str),
            Some("b")
        );
        assert_eq!(
            merged.match_expressions.len(),
            3,
            "the same expression kept once"
        );
        assert_eq!(
            to_text(&merged),
            "env=prod,!gone,team=b,tier in (api,web),zone"
        );
    }
}
