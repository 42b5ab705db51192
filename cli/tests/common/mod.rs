//! Helpers shared by the CLI tests: run the built `fleet` binary.
#![allow(dead_code)] // Each test crate uses its own part of these helpers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shared real-world inputs beside the project.
pub fn shared_real() -> PathBuf {
    workspace().join("../shared/real")
}

/// Runs `fleet` with arguments.
pub fn fleet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(args)
        .output()
        .expect("run fleet")
}

/// Runs `fleet`, asserts success and returns stdout.
pub fn fleet_ok(args: &[&str]) -> String {
    let output = fleet(args);
    assert!(
        output.status.success(),
        "fleet {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// Parses multi-document YAML output.
pub fn documents(text: &str) -> Vec<serde_json::Value> {
    fleet_renderer::yaml::parse_documents(text, "stdout").expect("valid YAML output")
}

/// The `metadata.name` of each document.
#[allow(dead_code)] // each test binary compiles this module and uses a subset of it
pub fn names(documents: &[serde_json::Value]) -> Vec<&str> {
    documents
        .iter()
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect()
}
