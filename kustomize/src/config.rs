//! Transformer configuration: where each built-in transformer writes (field specs) and
//! which fields name other objects (name references), with kustomize's defaults for the
//! Kubernetes kinds, extended by a kustomization's `configurations:` files and by the
//! references its `crds:` declare.

use serde::Deserialize;
use serde_json::{Map, Value};

use fleet_files::str_at;
use fleet_objects::split_api_version;

/// Where in objects of some kind a transformer writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FieldSpec {
    /// API group (empty: any).
    #[serde(default)]
    pub group: String,
    /// API version (empty: any).
    #[serde(default)]
    pub version: String,
    /// Kind (empty: any).
    #[serde(default)]
    pub kind: String,
    /// Slash-separated path; lists on the way are walked item by item (`x[]` says so
    /// explicitly) and `\/` is a slash inside a key.
    #[serde(default)]
    pub path: String,
    /// Create missing fields on the way.
    #[serde(default)]
    pub create: bool,
}

impl FieldSpec {
    /// Reads `[group:version:]Kind path[ +]` (`*` for any kind; `+` to create).
    pub(crate) fn parse(line: &str) -> Self {
        let mut parts = line.split_whitespace();
        let gvk = parts.next().unwrap_or("*");
        let path = parts.next().unwrap_or_default().to_string();
        let create = parts.next() == Some("+");
        let (group, version, kind) = match gvk.split(':').collect::<Vec<_>>().as_slice() {
            [group, version, kind] => (*group, *version, *kind),
            [kind] => ("", "", *kind),
            _ => ("", "", ""),
        };
        Self {
            group: group.to_string(),
            version: version.to_string(),
            kind: if kind == "*" { "" } else { kind }.to_string(),
            path,
            create,
        }
    }

    /// Whether the spec applies to `object` (its group, version and kind).
    pub(crate) fn applies_to(&self, object: &Value) -> bool {
        let (group, version) = split_api_version(str_at(object, &["apiVersion"]));
        gvk_matches(
            &self.group,
            &self.version,
            &self.kind,
            group,
            version,
            str_at(object, &["kind"]),
        )
    }

    /// Calls `f` on every value at the path, creating missing maps when `create` is set.
    pub(crate) fn visit(&self, object: &mut Value, f: &mut dyn FnMut(&mut Value)) {
        let segments = split_path(&self.path);
        visit(object, &segments, self.create, f);
    }
}

/// Whether a spec's group, version and kind (empty: any) match an object's.
pub(crate) fn gvk_matches(
    group: &str,
    version: &str,
    kind: &str,
    object_group: &str,
    object_version: &str,
    object_kind: &str,
) -> bool {
    (group.is_empty() || group == object_group)
        && (version.is_empty() || version == object_version)
        && (kind.is_empty() || kind == object_kind)
}

/// A path's segments: split at `/`, except `\/`.
pub(crate) fn split_path(path: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'/') => {
                current.push('/');
                chars.next();
            }
            '/' => segments.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    if !current.is_empty() || !segments.is_empty() {
        segments.push(current);
    }
    segments.retain(|s| !s.is_empty());
    segments
}

fn visit(value: &mut Value, path: &[String], create: bool, f: &mut dyn FnMut(&mut Value)) {
    if let Value::Array(items) = value {
        for item in items {
            visit(item, path, create, f);
        }
        return;
    }
    let Some((first, rest)) = path.split_first() else {
        f(value);
        return;
    };
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let key = first.strip_suffix("[]").unwrap_or(first);
    match map.get_mut(key) {
        Some(next) if !next.is_null() => visit(next, rest, create, f),
        _ if create => {
            // A list is only walked, never made.
            if first.ends_with("[]") {
                return;
            }
            map.insert(key.to_string(), Value::Object(Map::new()));
            if let Some(next) = map.get_mut(key) {
                visit(next, rest, create, f);
            }
        }
        _ => {}
    }
}

/// Fields of some referrer kinds that name an object of the referral kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NameBackRef {
    /// The referral's group.
    #[serde(default)]
    pub group: String,
    /// The referral's version.
    #[serde(default)]
    pub version: String,
    /// The referral's kind.
    #[serde(default)]
    pub kind: String,
    /// Where referrers name it.
    #[serde(default)]
    pub field_specs: Vec<FieldSpec>,
}

/// Every transformer's field specs and the name references.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransformerConfig {
    /// Where `namePrefix` goes.
    #[serde(default)]
    pub name_prefix: Vec<FieldSpec>,
    /// Where `nameSuffix` goes.
    #[serde(default)]
    pub name_suffix: Vec<FieldSpec>,
    /// Where `namespace` goes.
    #[serde(default)]
    pub namespace: Vec<FieldSpec>,
    /// Where `commonLabels` (and `labels` with `includeSelectors`) go.
    #[serde(default)]
    pub common_labels: Vec<FieldSpec>,
    /// Where `labels` with `includeTemplates` go, besides metadata.
    #[serde(default)]
    pub template_labels: Vec<FieldSpec>,
    /// Where `commonAnnotations` go.
    #[serde(default)]
    pub common_annotations: Vec<FieldSpec>,
    /// Fields naming other objects.
    #[serde(default)]
    pub name_reference: Vec<NameBackRef>,
    /// Fields where `$(VAR)` is replaced.
    #[serde(default)]
    pub var_reference: Vec<FieldSpec>,
    /// Fields holding container images.
    #[serde(default)]
    pub images: Vec<FieldSpec>,
    /// Fields holding replica counts.
    #[serde(default)]
    pub replicas: Vec<FieldSpec>,
}

impl TransformerConfig {
    /// Adds another configuration's specs and references (duplicates dropped).
    pub(crate) fn merge(&mut self, other: TransformerConfig) {
        fn extend(into: &mut Vec<FieldSpec>, from: Vec<FieldSpec>) {
            for spec in from {
                if !into.contains(&spec) {
                    into.push(spec);
                }
            }
        }
        extend(&mut self.name_prefix, other.name_prefix);
        extend(&mut self.name_suffix, other.name_suffix);
        extend(&mut self.namespace, other.namespace);
        extend(&mut self.common_labels, other.common_labels);
        extend(&mut self.template_labels, other.template_labels);
        extend(&mut self.common_annotations, other.common_annotations);
        extend(&mut self.var_reference, other.var_reference);
        extend(&mut self.images, other.images);
        extend(&mut self.replicas, other.replicas);
        for reference in other.name_reference {
            let same = self.name_reference.iter_mut().find(|r| {
                r.kind == reference.kind
                    && r.group == reference.group
                    && r.version == reference.version
            });
            match same {
                Some(existing) => extend(&mut existing.field_specs, reference.field_specs),
                None => self.name_reference.push(reference),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_match_kinds_and_walk_lists() {
        let spec = FieldSpec::parse("apps:v1:Deployment spec/template/spec/containers/image");
        let mut deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"template": {"spec": {"containers": [{"image": "a"}, {"image": "b"}]}}}
        });
        assert!(spec.applies_to(&deployment));
        assert!(!spec.applies_to(&json!({"apiVersion": "v1", "kind": "Deployment"})));
        let mut seen = Vec::new();
        spec.visit(&mut deployment, &mut |v| seen.push(v.clone()));
        assert_eq!(seen, [json!("a"), json!("b")]);
    }

    #[test]
    fn paths_create_maps_and_escape_slashes() {
        assert_eq!(
            split_path("metadata/annotations/example.com\\/key"),
            ["metadata", "annotations", "example.com/key"]
        );
        let spec = FieldSpec::parse("* metadata/labels +");
        let mut object = json!({"kind": "X"});
        spec.visit(&mut object, &mut |v| {
            if let Some(map) = v.as_object_mut() {
                map.insert("a".into(), json!("b"));
            }
        });
        assert_eq!(
            object,
            json!({"kind": "X", "metadata": {"labels": {"a": "b"}}})
        );
    }

    #[test]
    fn configurations_merge_without_duplicates() {
        let mut config = crate::defaults::transformer_config();
        let before = config.common_labels.len();
        let custom: TransformerConfig = serde_yaml_ng::from_str(
            "commonLabels:\n- path: spec/selector\n  kind: MyKind\n  create: true\n- path: metadata/labels\n  create: true\nnameReference:\n- kind: ConfigMap\n  fieldSpecs:\n  - path: spec/configRef\n    kind: MyKind\n",
        )
        .expect("a configuration");
        config.merge(custom);
        assert_eq!(config.common_labels.len(), before + 1);
        assert!(config
            .name_reference
            .iter()
            .filter(|r| r.kind == "ConfigMap")
            .any(|r| r.field_specs.iter().any(|s| s.kind == "MyKind")));
    }
}
