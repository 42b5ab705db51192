//! The `-o/--output` format every read command takes.

use anyhow::Result;
use serde::Serialize;

/// How a read command prints what it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Format {
    /// For people: a table or a tree.
    #[value(alias = "table", alias = "tree")]
    Text,
    /// JSON, for scripts.
    Json,
    /// YAML, for scripts.
    Yaml,
}

/// Prints `value` as JSON or YAML and returns true, or returns false for [`Format::Text`],
/// which the command prints its own way.
pub(super) fn print_structured<T: Serialize>(format: Format, value: &T) -> Result<bool> {
    match format {
        Format::Text => Ok(false),
        Format::Json => {
            println!("{}", serde_json::to_string_pretty(value)?);
            Ok(true)
        }
        Format::Yaml => {
            print!("{}", serde_yaml_ng::to_string(value)?);
            Ok(true)
        }
    }
}
