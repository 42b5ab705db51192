//! `vars`: values read from objects after every transformer ran, put where `$(NAME)`
//! stands in the fields the transformer configuration's `varReference` lists.

use std::collections::BTreeMap;

use serde_json::Value;

use super::config::TransformerConfig;
use super::fieldpath;
use super::resmap::ResMap;
use super::types::Var;
use fleet_files::str_at;
use fleet_files::{Error, Result};
use fleet_objects::split_api_version;

/// Adds `more` to the vars seen so far (a base's, absorbed by the kustomization that
/// lists it); a name given twice is an error, as in kustomize.
pub(crate) fn merge(into: &mut Vec<Var>, more: &[Var], file: &str) -> Result<()> {
    for var in more {
        if into.iter().any(|v| v.name == var.name) {
            return Err(Error::in_field(
                file,
                "vars",
                format!("var '{}' already encountered", var.name),
            ));
        }
        into.push(var.clone());
    }
    Ok(())
}

fn field_path(var: &Var) -> &str {
    var.fieldref
        .as_ref()
        .and_then(|f| f.field_path.as_deref())
        .filter(|p| !p.is_empty())
        .unwrap_or("metadata.name")
}

/// The group and version a var's object reference names (`apiVersion` wins).
fn group_version(var: &Var) -> (String, String) {
    match var.objref.api_version.as_deref().filter(|v| !v.is_empty()) {
        Some(api_version) => {
            let (group, version) = split_api_version(api_version);
            (group.to_string(), version.to_string())
        }
        None => (
            var.objref.group.clone().unwrap_or_default(),
            var.objref.version.clone().unwrap_or_default(),
        ),
    }
}

/// A var as kustomize prints it in messages: `{NAME Kind.version.group {fieldPath}}`.
fn describe(var: &Var) -> String {
    let (group, version) = group_version(var);
    let or = |text: String, empty: &str| {
        if text.is_empty() {
            empty.to_string()
        } else {
            text
        }
    };
    format!(
        "{{{} {}.{}.{} {{{}}}}}",
        var.name,
        var.objref.kind,
        or(version, "[noVer]"),
        or(group, "[noGrp]"),
        field_path(var)
    )
}

/// Declares a kustomization's vars after its transformers ran, as kustomize does: each
/// is bound to the one object among `resources` (this level's) that it names (the same
/// group, version and kind, a name the object ever had, and its namespace when the var
/// gives one); naming several is an error, naming none leaves the var unbound.
pub(crate) fn declare(
    into: &mut Vec<Var>,
    more: &[Var],
    resources: &mut ResMap,
    file: &str,
) -> Result<()> {
    for var in more {
        let (want_group, want_version) = group_version(var);
        let effective = |ns: &str| if ns.is_empty() { "default" } else { ns }.to_string();
        let want_namespace = var.objref.namespace.as_deref().filter(|n| !n.is_empty());
        let matches: Vec<usize> = resources
            .items
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                let (group, version) = split_api_version(str_at(&r.value, &["apiVersion"]));
                r.kind() == var.objref.kind
                    && group == want_group
                    && version == want_version
                    && r.names.iter().any(|(ns, name)| {
                        *name == var.objref.name
                            && want_namespace.is_none_or(|want| effective(ns) == effective(want))
                    })
            })
            .map(|(index, _)| index)
            .collect();
        match matches.as_slice() {
            [] => {}
            [one] => resources.items[*one].ref_var_names.push(var.name.clone()),
            _ => {
                return Err(Error::in_field(
                    file,
                    "vars",
                    format!(
                        "found {} resId matches for var {} (unable to disambiguate)",
                        matches.len(),
                        describe(var)
                    ),
                ))
            }
        }
    }
    merge(into, more, file)
}

/// Reads each var's value from the object it was bound to where it was declared.
fn values(vars: &[Var], resources: &ResMap, file: &str) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    for var in vars {
        let Some(resource) = resources
            .items
            .iter()
            .find(|r| r.ref_var_names.contains(&var.name))
        else {
            return Err(Error::in_field(
                file,
                "vars",
                format!(
                    "var '{}' cannot be mapped to a field in the set of known resources",
                    describe(var)
                ),
            ));
        };
        let path = fieldpath::parse(field_path(var));
        let value = fieldpath::get(&resource.value, &path)
            .into_iter()
            .next()
            .cloned()
            .ok_or_else(|| {
                Error::in_field(
                    file,
                    "vars",
                    format!(
                        "field specified in var '{}' not found in corresponding resource",
                        describe(var)
                    ),
                )
            })?;
        out.insert(var.name.clone(), value);
    }
    Ok(out)
}

/// Replaces `$(NAME)` in the var reference fields of every resource.
pub(crate) fn resolve(
    resources: &mut ResMap,
    vars: &[Var],
    config: &TransformerConfig,
    file: &str,
) -> Result<()> {
    if vars.is_empty() {
        return Ok(());
    }
    let values = values(vars, resources, file)?;
    for resource in &mut resources.items {
        for spec in &config.var_reference {
            if spec.applies_to(&resource.value) {
                spec.visit(&mut resource.value, &mut |slot| substitute(slot, &values));
            }
        }
    }
    Ok(())
}

/// Expands a string, each value of a map or item of a list.
fn substitute(slot: &mut Value, values: &BTreeMap<String, Value>) {
    match slot {
        Value::String(text) => {
            if let Some(new) = expand(text, values) {
                *slot = new;
            }
        }
        Value::Object(map) => map.values_mut().for_each(|v| substitute(v, values)),
        Value::Array(items) => items.iter_mut().for_each(|v| substitute(v, values)),
        _ => {}
    }
}

/// Kubernetes' `$(VAR)` expansion: known vars replaced, `$$` is a `$`, unknown references
/// kept. A text that is one reference to a non-string value becomes that value.
fn expand(text: &str, values: &BTreeMap<String, Value>) -> Option<Value> {
    if !text.contains('$') {
        return None;
    }
    if let Some(name) = text.strip_prefix("$(").and_then(|t| t.strip_suffix(')')) {
        if let Some(value) = values
            .get(name)
            .filter(|v| fieldpath::scalar_text(v).is_some())
        {
            return Some(value.clone());
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(end) => {
                    let name = &inner[..end];
                    match values.get(name).and_then(fieldpath::scalar_text) {
                        Some(value) => out.push_str(&value),
                        None => out.push_str(&format!("$({name})")),
                    }
                    rest = &inner[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = inner;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    (out != text).then_some(Value::String(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expansion_follows_kubernetes_rules() {
        let values = BTreeMap::from([
            ("NAME".to_string(), json!("svc")),
            ("PORT".to_string(), json!(8080)),
        ]);
        assert_eq!(expand("$(NAME).ns", &values), Some(json!("svc.ns")));
        assert_eq!(expand("$(PORT)", &values), Some(json!(8080)));
        assert_eq!(expand("port-$(PORT)", &values), Some(json!("port-8080")));
        assert_eq!(expand("$$(NAME)", &values), Some(json!("$(NAME)")));
        assert_eq!(expand("$(OTHER)", &values), None);
        assert_eq!(expand("plain", &values), None);
    }
}
