//! Rust types for Rancher Fleet's `fleet.cattle.io/v1alpha1` API and the `fleet.yaml` schema.
//!
//! Field names follow Fleet's spelling so that objects and files written for Rancher Fleet
//! deserialize unchanged. This crate holds types, the labels Fleet's objects carry, and the
//! Content wire format: no I/O, no controllers.

// kube's `printcolumn(type_ = "string", ...)` repeats the same key once per column by design.
#![allow(clippy::duplicated_attributes)]

/// `kube::Resource` for a Fleet kind whose fields sit beside its metadata, with no spec
/// (as Fleet's Content, Policy, GitRepoRestriction and BundleNamespaceMapping): `CustomResource` cannot derive those.
macro_rules! specless_resource {
    ($type:ty, $kind:literal, $plural:literal, $scope:ty) => {
        impl kube::Resource for $type {
            type DynamicType = ();
            type Scope = $scope;

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                $kind.into()
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                crate::GROUP.into()
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                crate::VERSION.into()
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(
                &mut self,
            ) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

mod bundle;
mod bundledeployment;
mod bundlenamespacemapping;
mod cluster;
mod common;
mod content;
pub mod crds;
mod fleetyaml;
mod gitrepo;
mod gitreporestriction;
mod helmop;
pub mod labels;
mod policy;
mod registration;
mod schedule;
mod specless;
pub mod strict;

pub use bundle::*;
pub use bundledeployment::*;
pub use bundlenamespacemapping::{BundleNamespaceMapping, BundleNamespaceMappingSelectors};
pub use cluster::*;
pub use common::*;
pub use content::{Content, ContentError, HelmHook, HelmRelease, MemberRender, Payload};
pub use fleetyaml::*;
pub use gitrepo::*;
pub use gitreporestriction::{GitRepoRestriction, GitRepoRestrictionRules};
pub use helmop::*;
pub use policy::{GitRepoPolicy, Policy, PolicyRules};
pub use registration::*;
pub use schedule::*;

/// The API group of every Fleet kind.
pub const GROUP: &str = "fleet.cattle.io";
/// The API version of every Fleet kind served here.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of every Fleet kind: [`GROUP`]/[`VERSION`].
pub const API_VERSION: &str = "fleet.cattle.io/v1alpha1";

/// Whether a flag Fleet keeps as a Go `bool` with `omitempty` is left out when written:
/// unset or `false`, as Fleet writes neither.
fn unset_or_false(flag: &Option<bool>) -> bool {
    *flag != Some(true)
}
