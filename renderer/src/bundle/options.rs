//! Merging a target customization's options over the bundle's, as Fleet does.

use fleet_api::{BundleDeploymentOptions, HelmOptions};
use serde_json::Value;

/// The bundle options with every field the customization sets taking its place; Helm values
/// are merged deeply, map-valued options key by key.
pub(super) fn merge(
    base: &BundleDeploymentOptions,
    custom: &BundleDeploymentOptions,
) -> BundleDeploymentOptions {
    BundleDeploymentOptions {
        default_namespace: pick(&base.default_namespace, &custom.default_namespace),
        target_namespace: pick(&base.target_namespace, &custom.target_namespace),
        kustomize: pick(&base.kustomize, &custom.kustomize),
        helm: merge_helm(base.helm.as_deref(), custom.helm.as_deref()).map(Box::new),
        service_account: pick(&base.service_account, &custom.service_account),
        allowed_target_namespace_selector: pick(
            &base.allowed_target_namespace_selector,
            &custom.allowed_target_namespace_selector,
        ),
        force_sync_generation: pick(&base.force_sync_generation, &custom.force_sync_generation),
        yaml: pick(&base.yaml, &custom.yaml),
        diff: pick(&base.diff, &custom.diff),
        keep_resources: pick(&base.keep_resources, &custom.keep_resources),
        delete_crd_resources: pick(&base.delete_crd_resources, &custom.delete_crd_resources),
        ignore: pick(&base.ignore, &custom.ignore),
        correct_drift: pick(&base.correct_drift, &custom.correct_drift),
        namespace_labels: merge_maps(&base.namespace_labels, &custom.namespace_labels),
        namespace_annotations: merge_maps(
            &base.namespace_annotations,
            &custom.namespace_annotations,
        ),
        delete_namespace: pick(&base.delete_namespace, &custom.delete_namespace),
        downstream_resources: if custom.downstream_resources.is_empty() {
            base.downstream_resources.clone()
        } else {
            custom.downstream_resources.clone()
        },
    }
}

/// The customization's value when it sets one, else the bundle's.
fn pick<T: Clone>(base: &Option<T>, custom: &Option<T>) -> Option<T> {
    custom.clone().or_else(|| base.clone())
}

fn merge_maps<K: Ord + Clone, V: Clone>(
    base: &Option<std::collections::BTreeMap<K, V>>,
    custom: &Option<std::collections::BTreeMap<K, V>>,
) -> Option<std::collections::BTreeMap<K, V>> {
    match (base, custom) {
        (Some(b), Some(c)) => {
            let mut out = b.clone();
            out.extend(c.clone());
            Some(out)
        }
        (b, c) => c.clone().or_else(|| b.clone()),
    }
}

fn merge_helm(base: Option<&HelmOptions>, custom: Option<&HelmOptions>) -> Option<HelmOptions> {
    let (base, custom) = match (base, custom) {
        (None, None) => return None,
        (Some(b), None) => return Some(b.clone()),
        (None, Some(c)) => return Some(c.clone()),
        (Some(b), Some(c)) => (b, c),
    };
    let base_json = serde_json::to_value(base).unwrap_or(Value::Null);
    let custom_json = serde_json::to_value(custom).unwrap_or(Value::Null);
    let mut merged = base_json;
    deep_merge(&mut merged, &custom_json);
    let mut merged: HelmOptions = serde_json::from_value(merged).unwrap_or_else(|_| custom.clone());
    // As Fleet merges them: a switch either side turns on stays on.
    let either = |b: Option<bool>, c: Option<bool>| match (b, c) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (b, c) => c.or(b),
    };
    merged.disable_pre_process = either(base.disable_pre_process, custom.disable_pre_process);
    merged.force = either(base.force, custom.force);
    merged.atomic = either(base.atomic, custom.atomic);
    merged.take_ownership = either(base.take_ownership, custom.take_ownership);
    merged.wait_for_jobs = either(base.wait_for_jobs, custom.wait_for_jobs);
    merged.disable_dns = either(base.disable_dns, custom.disable_dns);
    Some(merged)
}

/// Merges `over` into `into`: maps key by key, everything else replaced.
pub(super) fn deep_merge(into: &mut Value, over: &Value) {
    match (into, over) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, value) => *slot = value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_customization_cannot_turn_off_a_switch_the_bundle_turned_on() {
        let base = HelmOptions {
            disable_pre_process: Some(true),
            force: Some(false),
            ..Default::default()
        };
        let custom = HelmOptions {
            disable_pre_process: Some(false),
            force: Some(true),
            atomic: Some(false),
            ..Default::default()
        };
        let merged = merge_helm(Some(&base), Some(&custom)).expect("merged");
        assert_eq!(merged.disable_pre_process, Some(true));
        assert_eq!(merged.force, Some(true));
        assert_eq!(merged.atomic, Some(false));
        assert_eq!(merged.wait_for_jobs, None);
    }
}
