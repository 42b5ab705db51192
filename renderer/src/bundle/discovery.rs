//! Finding bundle directories under a repository's paths, honouring `.fleetignore`.

use std::path::{Path, PathBuf};

use crate::error::{RenderError, Result};
use crate::root::RepoRoot;

/// A directory that is a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleDir {
    /// Absolute path of the directory.
    pub dir: PathBuf,
    /// Path relative to the repository root (`.` for the root).
    pub rel: String,
    /// The directory's fleet.yaml, if it has one.
    pub fleet_yaml: Option<PathBuf>,
}

/// The name of the bundle file in a directory (`fleet.yaml`, or `fleet.yml`).
pub fn fleet_yaml_in(dir: &Path) -> Option<PathBuf> {
    ["fleet.yaml", "fleet.yml"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Every bundle under `paths` (the root when empty): each directory holding a fleet.yaml,
/// and each path itself when it holds manifests but no fleet.yaml.
pub fn discover(root: &RepoRoot, paths: &[String]) -> Result<Vec<BundleDir>> {
    let defaults = [".".to_string()];
    let paths = if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    };
    let mut found: Vec<BundleDir> = Vec::new();
    for path in paths {
        let base = root.resolve(root.path(), path, root.path())?;
        if !base.is_dir() {
            return Err(RenderError::in_file(
                root.display(&base),
                "bundle path is not a directory",
            ));
        }
        for dir in walk_dirs(root, &base)? {
            let fleet_yaml = fleet_yaml_in(&dir);
            let is_base = dir == base;
            if fleet_yaml.is_none() && !(is_base && has_manifests(&dir)) {
                continue;
            }
            if found.iter().any(|b| b.dir == dir) {
                continue;
            }
            found.push(BundleDir {
                rel: root.display(&dir),
                dir,
                fleet_yaml,
            });
        }
    }
    found.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(found)
}

/// Directories under `base` (itself included) that `.fleetignore` files do not exclude.
fn walk_dirs(root: &RepoRoot, base: &Path) -> Result<Vec<PathBuf>> {
    Ok(super::fleetignore::walk(root, base, &|_| true)?.dirs)
}

/// Whether a directory directly holds YAML or JSON files.
fn has_manifests(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .any(|e| super::manifests::is_manifest_name(&e.path()))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_bundles_and_honours_fleetignore() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = dir.path();
        for d in ["app", "app/sub", "ignored", "plain", "plain/deeper"] {
            std::fs::create_dir_all(r.join(d)).expect("mkdir");
        }
        std::fs::write(r.join("app/fleet.yaml"), "{}").expect("write");
        std::fs::write(r.join("app/sub/fleet.yaml"), "{}").expect("write");
        std::fs::write(r.join("ignored/fleet.yaml"), "{}").expect("write");
        std::fs::write(r.join("plain/cm.yaml"), "kind: ConfigMap").expect("write");
        std::fs::write(r.join(".fleetignore"), "ignored\n").expect("write");
        let root = RepoRoot::new(r).expect("root");
        let all: Vec<String> = discover(&root, &[])
            .expect("discover")
            .into_iter()
            .map(|b| b.rel)
            .collect();
        assert_eq!(all, vec!["app", "app/sub"]);
        let plain: Vec<String> = discover(&root, &["plain".into()])
            .expect("discover")
            .into_iter()
            .map(|b| b.rel)
            .collect();
        assert_eq!(plain, vec!["plain"]);
    }
}
