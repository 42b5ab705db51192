//! The manifests of the shared real-world corpora (`MANIFEST.tsv` and the like).

use std::collections::BTreeMap;
use std::path::Path;

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
