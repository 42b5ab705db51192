//! The Helm engine: Go templates, sprig functions, charts and their values, rendered as
//! `helm template` renders them.

pub mod chart;
pub mod engine;
pub mod gojson;
pub mod goregex;
pub mod gotoml;
pub mod goyaml;
pub mod manifests;
pub mod objects;
pub mod schema;
pub mod scope;
pub mod sprig;
pub mod strvals;
pub mod template;
pub mod values;
