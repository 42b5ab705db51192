//! Name references: after renames (prefix, suffix, namespace, content hash), fields that
//! name another object are updated to its new name, as kustomize's name reference
//! transformer does, for every reference the transformer configuration lists.
//!
//! The referral is chosen as kustomize chooses it: among the objects the referrer may see,
//! those of the referral's kind ever called by the name in the field, in the referrer's
//! namespace (cluster-scoped objects and ServiceAccounts are seen from anywhere); when
//! several remain, those renamed by the same prefixes and suffixes as the referrer. A
//! field holding a map (role binding subjects, webhook services) names the referral by
//! its `name` and `namespace`, and both are rewritten.

use serde_json::Value;

use super::config::{NameBackRef, TransformerConfig};
use super::resmap::{ResMap, Resource};
use fleet_files::{is_cluster_scoped, str_at};
use fleet_files::{Error, Result};
use fleet_objects::split_api_version;

/// Updates every reference to a renamed object.
pub(crate) fn fix_references(
    resources: &mut ResMap,
    config: &TransformerConfig,
    file: &str,
) -> Result<()> {
    let candidates: Vec<Candidate> = resources.items.iter().map(Candidate::of).collect();
    for (index, resource) in resources.items.iter_mut().enumerate() {
        let referrer = Referrer::of(&resource.value, &candidates[index], &candidates);
        for reference in &config.name_reference {
            for spec in &reference.field_specs {
                if !spec.applies_to(&resource.value) {
                    continue;
                }
                let lookup = Lookup {
                    candidates: &candidates,
                    referrer: &referrer,
                    reference,
                    role_ref: spec.path.ends_with("roleRef/name"),
                };
                let mut failure = None;
                spec.visit(&mut resource.value, &mut |slot| {
                    if failure.is_none() {
                        failure = lookup.rename(slot).err();
                    }
                });
                if let Some(message) = failure {
                    return Err(Error::in_file(
                        file,
                        format!(
                            "updating name reference in '{}' field of {}: {message}",
                            spec.path,
                            resource.id()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// What name references need of a possible referral, read once per build.
struct Candidate {
    group: String,
    version: String,
    kind: String,
    namespace: String,
    name: String,
    previous_names: Vec<String>,
    original_namespace: String,
    cluster_scoped: bool,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
}

impl Candidate {
    fn of(resource: &Resource) -> Self {
        let (group, version) = split_api_version(str_at(&resource.value, &["apiVersion"]));
        let kind = resource.kind().to_string();
        let cluster_scoped = is_cluster_scoped(&kind);
        Self {
            group: group.to_string(),
            version: version.to_string(),
            namespace: str_at(&resource.value, &["metadata", "namespace"]).to_string(),
            name: str_at(&resource.value, &["metadata", "name"]).to_string(),
            previous_names: resource.previous_names.clone(),
            original_namespace: resource
                .names
                .first()
                .map(|(ns, _)| ns.clone())
                .unwrap_or_default(),
            cluster_scoped,
            kind,
            prefixes: resource.prefixes.clone(),
            suffixes: resource.suffixes.clone(),
        }
    }

    /// The namespace as kustomize compares it: cluster-scoped objects have none, an unset
    /// namespace is `default`.
    fn effective(&self, namespace: &str) -> String {
        effective_namespace(self.cluster_scoped, namespace)
    }
}

fn effective_namespace(cluster_scoped: bool, namespace: &str) -> String {
    match (cluster_scoped, namespace) {
        (true, _) => "~X".into(),
        (false, "") => "default".into(),
        (false, namespace) => namespace.into(),
    }
}

/// The referrer as its lookups see it.
struct Referrer<'c> {
    candidate: &'c Candidate,
    /// The objects it may refer to.
    visible: Vec<usize>,
    /// `roleRef`'s group and kind.
    role_ref: Option<(String, String)>,
}

impl<'c> Referrer<'c> {
    fn of(value: &Value, candidate: &'c Candidate, all: &[Candidate]) -> Self {
        let namespace = candidate.effective(&candidate.namespace);
        // A RoleBinding also sees the namespaces of its ServiceAccount subjects.
        let subject_namespaces: Vec<&str> = if candidate.kind == "RoleBinding" {
            value
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|s| str_at(s, &["kind"]) == "ServiceAccount")
                .filter_map(|s| s.get("namespace").and_then(Value::as_str))
                .collect()
        } else {
            Vec::new()
        };
        let visible = all
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                candidate.cluster_scoped
                    || c.cluster_scoped
                    || c.effective(&c.namespace) == namespace
                    || subject_namespaces.contains(&c.namespace.as_str())
            })
            .map(|(i, _)| i)
            .collect();
        let role_ref = value.get("roleRef").and_then(|r| {
            let group = r.get("apiGroup")?.as_str()?;
            let kind = r.get("kind")?.as_str()?;
            Some((group.to_string(), kind.to_string()))
        });
        Self {
            candidate,
            visible,
            role_ref,
        }
    }
}

/// One name reference being fixed in one referrer.
struct Lookup<'a> {
    candidates: &'a [Candidate],
    referrer: &'a Referrer<'a>,
    reference: &'a NameBackRef,
    /// The field is a `roleRef/name`: the referral must be of roleRef's kind.
    role_ref: bool,
}

impl Lookup<'_> {
    /// Renames the name (or names, or name and namespace) in a field's value.
    fn rename(&self, slot: &mut Value) -> std::result::Result<(), String> {
        match slot {
            Value::String(_) => self.rename_scalar(slot),
            Value::Object(_) => self.rename_mapping(slot),
            _ => Ok(()),
        }
    }

    fn rename_scalar(&self, slot: &mut Value) -> std::result::Result<(), String> {
        let Some(old) = slot.as_str() else {
            return Ok(());
        };
        let pool = self.referrer.visible.iter().copied();
        if let Some(found) = self.select(old, pool, false)? {
            let new = &self.candidates[found].name;
            if new != old {
                *slot = Value::String(new.clone());
            }
        }
        Ok(())
    }

    fn rename_mapping(&self, slot: &mut Value) -> std::result::Result<(), String> {
        let Some(map) = slot.as_object_mut() else {
            return Ok(());
        };
        let Some(old) = map.get("name").and_then(Value::as_str).map(str::to_string) else {
            return Err("path config error; no 'name' field in node".into());
        };
        let pool: Vec<usize> = match map.get("namespace").and_then(Value::as_str) {
            None => self.referrer.visible.clone(),
            Some(namespace) => {
                let in_namespace = |original: bool| -> Vec<usize> {
                    self.referrer
                        .visible
                        .iter()
                        .copied()
                        .filter(|&i| {
                            let c = &self.candidates[i];
                            let ns = if original {
                                &c.original_namespace
                            } else {
                                &c.namespace
                            };
                            c.effective(ns) == namespace
                        })
                        .collect()
                };
                let original = in_namespace(true);
                if original.is_empty() {
                    in_namespace(false)
                } else {
                    original
                }
            }
        };
        let Some(found) = self.select(&old, pool.into_iter(), true)? else {
            return Ok(());
        };
        let referral = &self.candidates[found];
        if referral.name == old && referral.namespace.is_empty() {
            return Ok(());
        }
        map.insert("name".into(), Value::String(referral.name.clone()));
        if !referral.namespace.is_empty() {
            map.insert(
                "namespace".into(),
                Value::String(referral.namespace.clone()),
            );
        }
        Ok(())
    }

    /// kustomize's choice of referral among `pool` for a field naming `old`.
    fn select(
        &self,
        old: &str,
        pool: impl Iterator<Item = usize>,
        with_namespace: bool,
    ) -> std::result::Result<Option<usize>, String> {
        let reference = self.reference;
        let referrer = self.referrer.candidate;
        let referrer_namespace = referrer.effective(&referrer.namespace);
        let matching: Vec<usize> = pool
            .filter(|&i| {
                let c = &self.candidates[i];
                c.previous_names.iter().any(|n| n == old)
                    && selects(&reference.group, &c.group)
                    && selects(&reference.version, &c.version)
                    && selects(&reference.kind, &c.kind)
                    && (!self.role_ref
                        || self
                            .referrer
                            .role_ref
                            .as_ref()
                            .is_none_or(|(g, k)| *g == c.group && *k == c.kind))
                    && (referrer.cluster_scoped
                        || c.cluster_scoped
                        || c.kind == "ServiceAccount"
                        || c.effective(&c.namespace) == referrer_namespace)
            })
            .collect();
        if matching.len() == 1 {
            return Ok(matching.first().copied());
        }
        let same_affixes: Vec<usize> = matching
            .into_iter()
            .filter(|&i| {
                let c = &self.candidates[i];
                same_ending(&c.prefixes, &referrer.prefixes)
                    && same_ending(&c.suffixes, &referrer.suffixes)
            })
            .collect();
        let Some(&first) = same_affixes.first() else {
            return Ok(None);
        };
        let head = &self.candidates[first];
        let identical = same_affixes.iter().all(|&i| {
            let c = &self.candidates[i];
            c.name == head.name && (!with_namespace || c.namespace == head.namespace)
        });
        if identical {
            return Ok(Some(first));
        }
        let ids: Vec<String> = same_affixes
            .iter()
            .map(|&i| {
                let c = &self.candidates[i];
                format!("{}/{}/{}", c.kind, c.namespace, c.name)
            })
            .collect();
        Err(format!(
            "found multiple possible referrals: {}",
            ids.join(", ")
        ))
    }
}

/// An empty selector field selects anything.
fn selects(want: &str, have: &str) -> bool {
    want.is_empty() || want == have
}

/// Whether the shorter list is the end of the longer one (two empty lists are; one empty
/// and one not are not).
fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    long.ends_with(short)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resources(values: Vec<Value>) -> ResMap {
        let mut map = ResMap::default();
        map.items = values.into_iter().map(Resource::new).collect();
        map
    }

    /// Renames as a transformer does: the old id stored first.
    fn rename(map: &mut ResMap, index: usize, name: &str) {
        map.items[index].store_previous_id();
        fleet_files::set_metadata(&mut map.items[index].value, "name", name);
        map.items[index].remember_name();
    }

    #[test]
    fn objects_never_renamed_are_not_referral_targets() {
        // kustomize rewrites references only towards objects with stored previous ids: a
        // subject without a namespace stays as written when its account kept its name.
        let mut map = resources(vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "system"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b", "namespace": "system"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                   "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
        ]);
        fix_references(&mut map, &crate::defaults::transformer_config(), "k").expect("fixes");
        assert_eq!(
            map.items[1].value["subjects"][0],
            json!({"kind": "ServiceAccount", "name": "sa"})
        );
    }

    #[test]
    fn subjects_take_the_service_accounts_name_and_namespace() {
        let mut map = resources(vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "system"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
                   "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "system"}]}),
        ]);
        rename(&mut map, 0, "p-sa");
        let config = crate::defaults::transformer_config();
        fix_references(&mut map, &config, "kustomization.yaml").expect("fixes");
        assert_eq!(map.items[1].value["subjects"][0]["name"], "p-sa");
        assert_eq!(map.items[1].value["subjects"][0]["namespace"], "system");
    }

    #[test]
    fn ambiguous_referrals_prefer_the_same_prefixes() {
        let mut map = resources(vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod"},
                   "spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}}]}}),
        ]);
        rename(&mut map, 0, "a-cm");
        map.items[0].prefixes.push("a-".into());
        rename(&mut map, 1, "b-cm");
        map.items[1].prefixes.push("b-".into());
        rename(&mut map, 2, "b-pod");
        map.items[2].prefixes.push("b-".into());
        fix_references(&mut map, &crate::defaults::transformer_config(), "k").expect("fixes");
        assert_eq!(
            map.items[2].value["spec"]["volumes"][0]["configMap"]["name"],
            "b-cm"
        );
    }

    #[test]
    fn endings_compare_from_the_outermost_kustomization() {
        let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(same_ending(&list(&["a", "b"]), &list(&["b"])));
        assert!(!same_ending(&list(&["a", "b"]), &list(&["a"])));
        assert!(!same_ending(&list(&["a"]), &list(&[])));
        assert!(same_ending(&list(&[]), &list(&[])));
    }
}
