//! Bundles: directories of a repository that become one deployable unit each.

pub mod content;
mod discovery;
mod files;
pub mod fleetignore;
mod fleetyaml;
mod helm;
mod manifests;
pub mod names;
mod object;
mod options;
mod preprocess;
mod render;
mod target;

pub use content::{content_id, helm_install_order};
pub use discovery::{discover, discover_driven, fleet_yaml_in, BundleDir};
pub use files::{write_files, FilesError};
pub use fleetyaml::{load_fleet_yaml, parse_fleet_yaml, LoadedFleetYaml};
pub use helm::{release_of, remote_chart, MemberData};
pub use manifests::bundle_files;
pub use names::bundle_name;
pub use object::{
    bundle_object, bundle_targets, has_nothing_to_deploy, label_value, name_for, ApplySettings,
    RepoTargets,
};
pub use render::{
    dependency_needs, kustomize_needs, not_deployed, options_for, render, render_with,
    templated_options, Sources, Variant,
};
pub use target::ClusterInfo;
