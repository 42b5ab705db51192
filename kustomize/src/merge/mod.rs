//! Strategic merge patches as kustomize applies them (its kyaml walk), which differs from the
//! API server's: the walk goes through the whole object, so every list the schema says
//! merges item by item loses its duplicate items even where the patch does not reach;
//! the patch's new items come first; and directives other than `$patch` (`$retainKeys`,
//! `$setElementOrder/…`) are copied into the object as plain fields.
//!
//! Values are walked in pairs, the object's (`dest`) and the patch's (`origin`); either
//! may be missing. A walk returns the value to keep, or `None` when the field goes. The
//! object's fields written with no value (`key:`) carry [`BARE`](super::written::BARE).

mod lists;

use serde_json::{Map, Value};

use super::openapi::MergeKeys;
use super::written::is_bare;

/// Why a patch could not be merged into an object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    /// The patch and the object disagree on what a field is (a map against a scalar).
    #[error("wrong node kind: expected {expected} but got {found}: node contents:\n{contents}")]
    WrongKind {
        expected: &'static str,
        found: &'static str,
        contents: String,
    },
    /// A `$patch` directive other than `merge`, `replace` or `delete`.
    #[error("unknown patch strategy '{0}'")]
    UnknownStrategy(String),
}

/// Merges `patch` into `target`; `None` when the patch deletes the object. `keys` names
/// the lists of the object's kind that merge item by item: without it, every list of the
/// patch replaces the object's.
pub(crate) fn merge(
    target: Value,
    patch: &Value,
    keys: Option<&MergeKeys>,
) -> Result<Option<Value>, MergeError> {
    Walk {
        keys,
        path: Vec::new(),
    }
    .value(Some(target), Some(patch.clone()))
}

struct Walk<'a> {
    keys: Option<&'a MergeKeys>,
    /// The field names from the object's root to the value being walked.
    path: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    List,
    Scalar,
}

impl Kind {
    fn of(value: &Value) -> Self {
        match value {
            Value::Object(_) => Kind::Map,
            Value::Array(_) => Kind::List,
            _ => Kind::Scalar,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Map => "MappingNode",
            Kind::List => "SequenceNode",
            Kind::Scalar => "ScalarNode",
        }
    }
}

/// What a `$patch` directive asks of a map or list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Merge,
    Replace,
    Delete,
}

impl Directive {
    fn parse(word: &str) -> Result<Self, MergeError> {
        match word {
            "merge" => Ok(Directive::Merge),
            "replace" => Ok(Directive::Replace),
            "delete" => Ok(Directive::Delete),
            other => Err(MergeError::UnknownStrategy(other.to_string())),
        }
    }
}

impl Walk<'_> {
    fn value(
        &mut self,
        dest: Option<Value>,
        origin: Option<Value>,
    ) -> Result<Option<Value>, MergeError> {
        let present = || {
            [&dest, &origin]
                .into_iter()
                .flatten()
                .filter(|v| !v.is_null() && !is_bare(v))
        };
        let kind = present().next().map(Kind::of);
        if let Some(expected) = kind {
            if let Some(odd) = present().find(|v| Kind::of(v) != expected) {
                return Err(MergeError::WrongKind {
                    expected: expected.name(),
                    found: Kind::of(odd).name(),
                    contents: serde_yaml_ng::to_string(odd).unwrap_or_default(),
                });
            }
        }
        match kind {
            None | Some(Kind::Map) => self.map(dest, origin),
            Some(Kind::List) => match self.list_keys() {
                Some(keys) => self.associative_list(dest, origin, &keys),
                None => Ok(patch_wins(dest, origin)),
            },
            Some(Kind::Scalar) => Ok(patch_wins(dest, origin)),
        }
    }

    /// The merge keys of the list being walked, when it merges item by item.
    fn list_keys(&self) -> Option<Vec<String>> {
        self.keys?.at(&self.path.join("/")).map(<[String]>::to_vec)
    }

    fn map(
        &mut self,
        dest: Option<Value>,
        origin: Option<Value>,
    ) -> Result<Option<Value>, MergeError> {
        let mut origin = match origin {
            Some(Value::Object(map)) => Some(map),
            // The patch's null clears the field (the walk checked nothing else is here).
            Some(_) => return Ok(None),
            None => None,
        };
        let mut merged = match (dest, origin.as_mut()) {
            (Some(Value::Object(dest)), None) => dest,
            (Some(Value::Object(dest)), Some(patch)) => match map_directive(patch)? {
                Directive::Delete => return Ok(None),
                Directive::Replace => patch.clone(),
                Directive::Merge => dest,
            },
            // A null the object wrote is kept when the patch says nothing of it; a field
            // written with no value is not.
            (Some(dest), None) if is_bare(&dest) => return Ok(None),
            (Some(_), None) => return Ok(Some(Value::Null)),
            (None, None) => return Ok(None),
            (_, Some(patch)) => {
                // A directive this walk cannot read stays in place, as kustomize leaves it.
                if map_directive(patch).ok() == Some(Directive::Delete) {
                    return Ok(None);
                }
                patch.clone()
            }
        };
        let origin = origin.unwrap_or_default();
        let mut names: Vec<String> = merged.keys().chain(origin.keys()).cloned().collect();
        names.sort();
        names.dedup();
        for name in names {
            let dest = merged.get_mut(&name).map(std::mem::take);
            self.path.push(name.clone());
            let value = self.value(dest, origin.get(&name).cloned());
            self.path.pop();
            match value? {
                Some(value) => {
                    merged.insert(name, value);
                }
                None => {
                    merged.shift_remove(&name);
                }
            }
        }
        Ok(Some(Value::Object(merged)))
    }
}

/// A scalar, or a list merged as a whole: the patch's value if it has one (its null
/// clears the field), else the object's.
fn patch_wins(dest: Option<Value>, origin: Option<Value>) -> Option<Value> {
    match origin {
        Some(Value::Null) => None,
        Some(origin) => Some(origin),
        None => dest,
    }
}

/// Reads and removes a map's `$patch` directive.
fn map_directive(map: &mut Map<String, Value>) -> Result<Directive, MergeError> {
    let Some(word) = map.get("$patch") else {
        return Ok(Directive::Merge);
    };
    let directive = Directive::parse(&lists::text(word))?;
    map.shift_remove("$patch");
    Ok(directive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys() -> MergeKeys {
        crate::openapi::builtin("apps/v1", "Deployment")
            .expect("built in")
            .clone()
    }

    fn deployment(containers: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "spec": {"template": {"spec": {"containers": containers}}}})
    }

    fn merged(target: Value, patch: Value) -> Value {
        merge(target, &patch, Some(&keys()))
            .expect("merges")
            .expect("kept")
    }

    fn containers(value: &Value) -> &Value {
        &value["spec"]["template"]["spec"]["containers"]
    }

    // The expectations below are kubectl 1.37's output for the same inputs.

    #[test]
    fn new_items_come_first_and_nulls_clear_fields() {
        let target = deployment(json!([{"name": "a", "image": "a:1", "tty": true}]));
        let patch = deployment(json!([{"name": "b"}, {"name": "a", "tty": null}]));
        assert_eq!(
            containers(&merged(target, patch)),
            &json!([{"name": "b"}, {"name": "a", "image": "a:1"}])
        );
    }

    #[test]
    fn a_duplicate_item_keeps_its_first_place_and_last_content_and_loses_the_patch() {
        let target = deployment(json!([
            {"name": "a", "image": "a:1"},
            {"name": "b"},
            {"name": "a", "image": "a:2", "args": ["dup"]}
        ]));
        let patch = deployment(json!([{"name": "a", "imagePullPolicy": "Always"}]));
        assert_eq!(
            containers(&merged(target, patch)),
            &json!([{"name": "a", "image": "a:2", "args": ["dup"]}, {"name": "b"}])
        );
    }

    #[test]
    fn ports_merge_and_delete_by_port_and_protocol_together() {
        let ports = json!([
            {"containerPort": 80, "protocol": "TCP", "name": "http"},
            {"containerPort": 80, "protocol": "UDP", "name": "dns"},
            {"containerPort": 443, "name": "https"}
        ]);
        let target = deployment(json!([{"name": "a", "ports": ports}]));
        let delete_udp = deployment(json!([{"name": "a", "ports": [
            {"containerPort": 80, "protocol": "UDP", "$patch": "delete"}
        ]}]));
        assert_eq!(
            containers(&merged(target.clone(), delete_udp))[0]["ports"],
            json!([
                {"containerPort": 80, "protocol": "TCP", "name": "http"},
                {"containerPort": 443, "name": "https"}
            ])
        );
        let port_alone = deployment(json!([{"name": "a", "ports": [
            {"containerPort": 80, "$patch": "delete"}
        ]}]));
        assert_eq!(
            containers(&merged(target, port_alone))[0]["ports"],
            ports,
            "a delete naming the port alone deletes nothing"
        );
    }

    #[test]
    fn kinds_without_a_schema_have_their_lists_replaced() {
        let target = json!({"spec": {"items": [{"name": "a", "x": 1}]}});
        let patch = json!({"spec": {"items": [{"name": "a", "y": 2}]}});
        let merged = merge(target, &patch, None).expect("merges").expect("kept");
        assert_eq!(merged["spec"]["items"], json!([{"name": "a", "y": 2}]));
    }

    #[test]
    fn a_scalar_against_a_map_is_an_error() {
        let target = json!({"spec": {"a": {"b": 1}}});
        let error = merge(target, &json!({"spec": {"a": "foo"}}), None).expect_err("refused");
        assert!(error.to_string().starts_with(
            "wrong node kind: expected MappingNode but got ScalarNode: node contents:\nfoo"
        ));
    }
}
