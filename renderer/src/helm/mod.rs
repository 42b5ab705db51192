//! The Helm engine: Go templates, sprig functions and charts.

pub mod template;
