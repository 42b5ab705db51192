//! Built-in transformer runs. A kustomization's fields and the builtin plugin
//! configurations of `transformers:` both become these steps, as kustomize configures
//! its builtin plugins from either.

use std::collections::BTreeMap;

use super::config::FieldSpec;
use super::patches::{self, Allow, Patch, PatchSource};
use super::replacements::{self, Replacement};
use super::resmap::ResMap;
use super::transformers::{self, Affix};
use super::types::{ImageEntry, ReplicaEntry, Selector};
use super::value_add::ValueAdd;
use fleet_files::Result;

/// One configured run of a builtin transformer.
pub(crate) enum Transform {
    /// A patch, with the field that holds it (for messages).
    Patch {
        /// The parsed patch.
        patch: Patch,
        /// Resources it applies to (strategic merge patches may name their own).
        target: Option<Selector>,
        /// Name and kind changes allowed.
        allow: Allow,
        /// Run as kustomize's PatchStrategicMergeTransformer (`patchesStrategicMerge`),
        /// not its PatchTransformer (`patches`).
        from_patches_strategic_merge: bool,
        /// `patches[2]`, `patchesStrategicMerge[0]`...
        field: String,
    },
    /// `namespace:`.
    Namespace {
        /// The namespace.
        namespace: String,
        /// Fields set besides `metadata/namespace`.
        specs: Vec<FieldSpec>,
        /// Set only fields that are unset.
        unset_only: bool,
    },
    /// `namePrefix:` or `nameSuffix:`.
    Affix {
        /// Which end.
        affix: Affix,
        /// The text added.
        text: String,
        /// Where.
        specs: Vec<FieldSpec>,
    },
    /// Labels or annotations written into the maps the specs reach.
    Entries {
        /// The keys and values.
        entries: BTreeMap<String, String>,
        /// Where.
        specs: Vec<FieldSpec>,
    },
    /// One `replicas:` entry.
    Replicas {
        /// Name and count.
        entry: ReplicaEntry,
        /// Where counts are.
        specs: Vec<FieldSpec>,
    },
    /// One `images:` entry.
    Image {
        /// Name and replacement.
        entry: ImageEntry,
        /// Image fields besides container lists.
        specs: Vec<FieldSpec>,
    },
    /// `replacements:`.
    Replacements(Vec<Replacement>),
    /// A `ValueAddTransformer`.
    ValueAdd(ValueAdd),
}

impl Transform {
    /// Runs the step; `source` says where the kustomization is, for patch merge keys and
    /// messages.
    pub(crate) fn apply(&self, resources: &mut ResMap, source: &PatchSource<'_>) -> Result<()> {
        let file = source.location.shown();
        match self {
            Transform::Patch {
                patch,
                target,
                allow,
                from_patches_strategic_merge,
                field,
            } => {
                let source = PatchSource {
                    field: field.clone(),
                    ..*source
                };
                patches::apply(
                    resources,
                    patch,
                    target.as_ref(),
                    *allow,
                    *from_patches_strategic_merge,
                    &source,
                )
            }
            Transform::Namespace {
                namespace,
                specs,
                unset_only,
            } => {
                transformers::set_namespace(resources, namespace, specs, *unset_only);
                Ok(())
            }
            Transform::Affix { affix, text, specs } => {
                transformers::add_name_affix(resources, *affix, text, specs);
                Ok(())
            }
            Transform::Entries { entries, specs } => {
                transformers::apply_map(resources, specs, entries);
                Ok(())
            }
            Transform::Replicas { entry, specs } => {
                transformers::set_replicas(resources, entry, specs, &file)
            }
            Transform::Image { entry, specs } => {
                transformers::set_image(resources, entry, specs);
                Ok(())
            }
            Transform::Replacements(list) => list
                .iter()
                .try_for_each(|replacement| replacements::apply(resources, replacement, &file)),
            Transform::ValueAdd(value_add) => value_add.apply(resources, source),
        }
    }
}
