//! The Helm engine: Go templates, sprig functions, charts and their values, rendered as
//! `helm template` renders them.

pub mod chart;
pub mod engine;
pub mod objects;
pub mod schema;
pub mod sprig;
pub mod template;
pub mod values;
