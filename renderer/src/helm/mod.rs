//! The Helm engine: Go templates, sprig functions and charts.

pub mod sprig;
pub mod template;
