//! `downstreamResources` on the hub: the Secrets and ConfigMaps a bundle names are read
//! from its namespace, and copied into the namespace of each cluster that deploys it, where
//! that cluster's agent reads them. Their content is part of the deployment id, so a
//! change to one redeploys.

use std::collections::BTreeMap;

use fleet_api::labels::{BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL};
use fleet_api::{Bundle, DownstreamResource};
use fleet_objects::downstream::{api, copy_name, copy_of, plural, COPY_LABEL, KINDS};
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::FIELD_MANAGER;

/// The objects a bundle's `downstreamResources` (its own and its targets') name, as read
/// from the bundle's namespace; those missing are absent.
#[derive(Debug, Default)]
pub struct Sources {
    found: BTreeMap<(String, String), Value>,
    namespace: String,
}

/// A reference with the object it names.
pub type Copy = (DownstreamResource, Value);

impl Sources {
    /// Reads every object `bundle` names (none for most bundles: then nothing is read).
    pub async fn read(client: &kube::Client, bundle: &Bundle) -> Result<Self, kube::Error> {
        let namespace = bundle.namespace().unwrap_or_default();
        let references = crate::placement::every_options(bundle)
            .flat_map(|options| options.downstream_resources.iter());
        let mut found = BTreeMap::new();
        for reference in references {
            let key = (reference.kind.clone(), reference.name.clone());
            if found.contains_key(&key) {
                continue;
            }
            let object = match api(client, &namespace, &reference.kind) {
                Ok(api) => api
                    .get_opt(&reference.name)
                    .await?
                    .and_then(|o| serde_json::to_value(o).ok()),
                Err(_) => None,
            };
            if let Some(object) = object {
                found.insert(key, object);
            }
        }
        Ok(Self { found, namespace })
    }

    /// What was read, for the placement fingerprint: a change redeploys.
    pub fn fingerprint(&self) -> String {
        self.found
            .values()
            .map(|o| payload(o).to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The objects `references` name, or why one cannot be copied.
    pub fn for_variant(&self, references: &[DownstreamResource]) -> Result<Vec<Copy>, String> {
        references
            .iter()
            .map(|reference| {
                plural(reference).map_err(|e| e.to_string())?;
                let key = (reference.kind.clone(), reference.name.clone());
                self.found
                    .get(&key)
                    .map(|object| (reference.clone(), object.clone()))
                    .ok_or_else(|| {
                        format!(
                            "downstreamResources: {} {} not found in {}",
                            reference.kind, reference.name, self.namespace
                        )
                    })
            })
            .collect()
    }
}

/// A digest of what `copies` hold, folded into the deployment id (empty for none, so
/// bundles without downstream resources keep their ids).
pub fn digest(copies: &[Copy]) -> String {
    if copies.is_empty() {
        return String::new();
    }
    let mut hasher = Sha256::new();
    for (reference, object) in copies {
        hasher.update(reference.kind.as_bytes());
        hasher.update(reference.name.as_bytes());
        hasher.update(payload(object).to_string().as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What a Secret or ConfigMap carries that a copy keeps.
fn payload(object: &Value) -> Value {
    let keep = ["data", "binaryData", "stringData", "type", "immutable"];
    keep.iter()
        .filter_map(|field| object.get(field).map(|v| (field.to_string(), v.clone())))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Writes the copies `bundle` places in `namespace` and, when `prune`, deletes its copies
/// there that `copies` no longer name.
pub async fn sync(
    client: &kube::Client,
    bundle: &Bundle,
    namespace: &str,
    copies: &[Copy],
    prune: bool,
) -> Result<(), kube::Error> {
    let name = bundle.name_any();
    let bundle_namespace = bundle.namespace().unwrap_or_default();
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let mut wanted = Vec::new();
    for (reference, source) in copies {
        let copy = copy_of(source, reference, &name, &bundle_namespace, namespace);
        let copy_name = copy_name(&name, reference);
        // `for_variant` let only supported kinds through.
        if let Ok(api) = api(client, namespace, &reference.kind) {
            api.patch(&copy_name, &apply, &Patch::Apply(&copy)).await?;
        }
        wanted.push(copy_name);
    }
    if prune {
        let selector = format!(
            "{BUNDLE_NAME_LABEL}={name},{BUNDLE_NAMESPACE_LABEL}={bundle_namespace},{COPY_LABEL}"
        );
        let listed = ListParams::default().labels(&selector);
        for kind in KINDS {
            if let Ok(api) = api(client, namespace, kind) {
                prune_copies(&api, &listed, &wanted).await?;
            }
        }
    }
    Ok(())
}

/// Deletes the copies `listed` finds in `api` that are not `wanted`.
async fn prune_copies(
    api: &Api<DynamicObject>,
    listed: &ListParams,
    wanted: &[String],
) -> Result<(), kube::Error> {
    for stale in api.list(listed).await?.items {
        let name = stale.name_any();
        if !wanted.contains(&name) {
            fleet_objects::client::delete_if_present(api, &name, &DeleteParams::default()).await?;
        }
    }
    Ok(())
}
