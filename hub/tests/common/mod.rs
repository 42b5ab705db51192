//! What the hub's tests share beside `fleet-testkit` (its hubs and kubectl): the
//! workspace's root and a table reader.
#![allow(dead_code)] // Each test binary uses its own part of these helpers.

use std::path::{Path, PathBuf};

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Lines of a table without the header, each split on whitespace.
pub fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}
