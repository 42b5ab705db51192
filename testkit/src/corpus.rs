//! The shared real-world corpora beside the project and their manifests (`MANIFEST.tsv`
//! and the like), and writing test inputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shared real-world inputs beside the project (`../shared/real`).
pub fn shared_real() -> PathBuf {
    workspace_root().join("../shared/real")
}

/// The rows of a TSV manifest of a corpus; panics naming the file if it cannot be read.
pub fn corpus_rows(file: &Path) -> Vec<BTreeMap<String, String>> {
    tsv_rows(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Writes `text` to `path`, creating the directories above it; panics if it cannot.
pub fn write_file(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("creating {}: {e}", parent.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// The rows of a TSV file with a header, as maps of column to cell.
pub fn tsv_rows(file: &Path) -> std::io::Result<Vec<BTreeMap<String, String>>> {
    let text = std::fs::read_to_string(file)?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "no header line"))?
        .split('\t')
        .collect();
    Ok(lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            header
                .iter()
                .zip(line.split('\t'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect())
}
