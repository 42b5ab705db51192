//! A Helm engine in Rust: `helm template` in-process, with Helm's output and messages.
//!
//! It renders a chart as Helm 4 does: Go's `text/template` with every sprig function
//! Helm adds (`include`, `tpl`, `required`, `lookup`, `toYaml`, the crypto and semver
//! functions…), values coalesced through subcharts, `values.schema.json` checked,
//! manifests split and sorted in Helm's install order, hooks apart. No network and no
//! cluster: charts a repository serves are fetched by the caller ([`FetchedCharts`]), and
//! `lookup` asks a [`template::Lookup`] the caller gives, or finds nothing, as in
//! `helm template`.
//!
//! Start with [`Chart::load`], then [`render`] (or [`prepare`] and
//! [`Prepared::render`], to tell failing values from failing templates, as Helm does):
//!
//! ```
//! use fleet_helm::{Chart, Options};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("Chart.yaml"), "apiVersion: v2\nname: web\nversion: 1.0.0\n")?;
//! std::fs::write(dir.path().join("values.yaml"), "replicas: 1\n")?;
//! std::fs::create_dir(dir.path().join("templates"))?;
//! std::fs::write(
//!     dir.path().join("templates/config.yaml"),
//!     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
//! )?;
//!
//! let chart = Chart::load(dir.path())?;
//! let options = Options { release_name: "prod".into(), ..Options::default() };
//! let rendered = fleet_helm::render(&chart, &json!({"replicas": 3}), &options)?;
//! assert_eq!(rendered.manifests[0].source, "web/templates/config.yaml");
//! assert!(rendered.manifests[0].content.contains("name: prod"));
//! assert!(rendered.manifests[0].content.contains("replicas: \"3\""));
//! # Ok(())
//! # }
//! ```
//!
//! [`Rendered::to_template_output`] prints what `helm template` prints; the example
//! `examples/template.rs` is `helm template` in a dozen lines.

mod chart;
mod engine;
mod error;
mod fetched;
mod gojson;
mod goregex;
mod gotoml;
mod goyaml;
mod kubectl_yaml;
mod manifests;
mod objects;
mod parallel;
mod schema;
mod scope;
mod sprig;
mod strvals;
pub mod template;
mod value_options;
mod values;

pub use chart::{Chart, Dependency, MAX_CHART_BYTES};
pub use engine::{
    functions, prepare, render, sprig_functions, ClusterLookup, CrdFile, Options, Prepared,
    Rendered,
};
pub use error::{Error, ErrorKind, Result};
pub use fetched::{FetchedCharts, RemoteChartRef};
pub use manifests::{install_rank, split as split_manifests, Hook, Manifest};
pub use value_options::ValueOptions;
pub use values::merge_user as merge_values;

/// YAML as Go's libraries read and write it: what Helm's `fromYaml` and values files
/// read (goyaml, YAML 1.1 scalars), what `toYaml` writes, and what kubectl and
/// kustomize print (`sigs.k8s.io/yaml`).
pub mod yaml {
    pub use crate::goyaml::{parse_documents, to_yaml, YamlError};
    pub use crate::kubectl_yaml::{
        document as to_kubectl_yaml, kyaml_document as to_kyaml, stream as to_kubectl_stream,
        write_stream as write_kubectl_stream,
    };
}

/// Semantic versions and constraints as Masterminds/semver reads them (Helm's chart
/// versions, `semverCompare`).
pub mod semver {
    pub use crate::sprig::semver::{compare, satisfies, Version};
}
