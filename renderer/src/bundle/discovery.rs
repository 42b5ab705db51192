//! Finding bundle directories under a repository's paths, honouring `.fleetignore`.

use std::path::{Path, PathBuf};

use crate::RepoRoot;
use crate::{RenderError, Result};

/// A directory that is a bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BundleDir {
    /// Absolute path of the directory.
    pub dir: PathBuf,
    /// Path relative to the repository root (`.` for the root).
    pub rel: String,
    /// The bundle's options file: its fleet.yaml, or the one a driven scan names.
    pub fleet_yaml: Option<PathBuf>,
    /// Files of the directory that are not part of the bundle: the options file a driven
    /// scan names for it.
    pub left_out: Vec<PathBuf>,
    /// The options file as a driven scan names it (`dev.yaml`, `test/fleet.yaml`): part of
    /// the bundle's name, as in Fleet.
    pub options: Option<String>,
}

impl BundleDir {
    /// The path the bundle is named after: its directory, and, when a driven scan names
    /// its options file, that file's path without its extension (`app/test/fleet`), as
    /// Fleet names them.
    pub fn name_path(&self) -> String {
        match &self.options {
            Some(options) => {
                let stem = Path::new(options).with_extension("");
                format!(
                    "{}/{}",
                    self.rel.trim_end_matches('/'),
                    stem.to_string_lossy()
                )
            }
            None => self.rel.clone(),
        }
    }
}

/// The bundles a driven scan declares (a GitRepo's `bundles`, `fleet apply
/// --driven-scan`): each base directory as one bundle, not scanned for others, with its
/// options file (relative to the base; its fleet.yaml when none is named). Options files
/// are left out of the bundles of their directory. `field` names the declarations in
/// errors (`bundles`).
pub fn discover_driven(
    root: &RepoRoot,
    declared: &[fleet_api::BundlePath],
    field: &str,
) -> Result<Vec<BundleDir>> {
    let mut found = Vec::new();
    for (index, declaration) in declared.iter().enumerate() {
        let base = root.resolve(root.path(), &declaration.base, root.path())?;
        if !base.is_dir() {
            return Err(RenderError::in_field(
                field,
                format!("{field}[{index}].base"),
                format!("{} is not a directory", declaration.base),
            ));
        }
        let fleet_yaml = match declaration.options.as_deref().filter(|o| !o.is_empty()) {
            Some(options) => {
                let file = root.resolve(&base, options, &base)?;
                if !file.is_file() {
                    return Err(RenderError::in_field(
                        field,
                        format!("{field}[{index}].options"),
                        format!("{options} is not a file in {}", declaration.base),
                    ));
                }
                Some(file)
            }
            None => fleet_yaml_in(&base),
        };
        // Only the bundle's own options file is left out: another bundle's of the same
        // directory is one of its files, as in Fleet.
        found.push(BundleDir {
            rel: root.display(&base),
            dir: base,
            left_out: fleet_yaml.iter().cloned().collect(),
            fleet_yaml,
            options: declaration.options.clone().filter(|o| !o.is_empty()),
        });
    }
    Ok(found)
}

/// The name of the bundle file in a directory (`fleet.yaml`, or `fleet.yml`).
pub fn fleet_yaml_in(dir: &Path) -> Option<PathBuf> {
    ["fleet.yaml", "fleet.yml"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Every bundle under `paths` (the root when empty): each directory holding a fleet.yaml,
/// and each path itself when, as Fleet decides, a YAML file lies in it or in a directory
/// below it that no fleet.yaml makes a bundle of its own.
pub fn discover(root: &RepoRoot, paths: &[String]) -> Result<Vec<BundleDir>> {
    let defaults = [".".to_string()];
    let paths = if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    };
    let mut found: Vec<BundleDir> = Vec::new();
    let mut bases = Vec::new();
    for path in paths {
        if is_glob(path) {
            // As Fleet's `filepath.Glob`: the directories it matches (none is no error).
            bases.extend(glob_dirs(root, path)?);
            continue;
        }
        let base = root.resolve(root.path(), path, root.path())?;
        if !base.is_dir() {
            return Err(RenderError::in_file(
                root.display(&base),
                "bundle path is not a directory",
            ));
        }
        bases.push(base);
    }
    for base in bases {
        for dir in walk_dirs(root, &base)? {
            let fleet_yaml = fleet_yaml_in(&dir);
            let is_base = dir == base;
            if fleet_yaml.is_none() && !(is_base && has_yaml_outside_bundles(&dir)) {
                continue;
            }
            if found.iter().any(|b| b.dir == dir) {
                continue;
            }
            found.push(BundleDir {
                rel: root.display(&dir),
                dir,
                fleet_yaml,
                left_out: Vec::new(),
                options: None,
            });
        }
    }
    found.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(found)
}

/// Whether a `paths` entry is a glob pattern (`*`, `?` or `[`), as Fleet expands them.
fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// The directories `pattern` matches under the root, segment by segment (`*` never
/// crosses a `/`), as Go's `filepath.Glob` matches them; sorted.
fn glob_dirs(root: &RepoRoot, pattern: &str) -> Result<Vec<PathBuf>> {
    let mut current = vec![root.path().to_path_buf()];
    for segment in pattern.trim_start_matches('/').split('/') {
        if segment.is_empty() || segment == "." {
            continue;
        }
        let mut next = Vec::new();
        for dir in &current {
            if !is_glob(segment) {
                let child = root.resolve(dir, segment, root.path())?;
                if child.is_dir() {
                    next.push(child);
                }
                continue;
            }
            let matcher = globset::GlobBuilder::new(segment)
                .literal_separator(true)
                .build()
                .map_err(|e| RenderError::in_field("paths", "paths", format!("`{pattern}`: {e}")))?
                .compile_matcher();
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                if entry.path().is_dir() && matcher.is_match(&name) {
                    next.push(root.resolve(dir, &name.to_string_lossy(), root.path())?);
                }
            }
        }
        next.sort();
        current = next;
    }
    Ok(current)
}

/// Directories under `base` (itself included) that `.fleetignore` files do not exclude.
fn walk_dirs(root: &RepoRoot, base: &Path) -> Result<Vec<PathBuf>> {
    Ok(super::fleetignore::walk(root, base, &|_| true)?.dirs)
}

/// Whether a YAML file (`.yaml`, `.yml`) lies in `dir` or in a directory below it without
/// a fleet.yaml, Fleet's test for a path's own bundle (JSON files do not count there).
fn has_yaml_outside_bundles(dir: &Path) -> bool {
    if fleet_yaml_in(dir).is_some() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|entry| {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            entry.file_name() != ".git" && has_yaml_outside_bundles(&path)
        } else {
            path.extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        }
    })
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
        // `plain/` holds YAML and no fleet.yaml: the root is a bundle too, as in Fleet.
        assert_eq!(all, vec![".", "app", "app/sub"]);
        let plain: Vec<String> = discover(&root, &["plain".into()])
            .expect("discover")
            .into_iter()
            .map(|b| b.rel)
            .collect();
        assert_eq!(plain, vec!["plain"]);
        // Globs in paths match directories, as Fleet's `filepath.Glob` does.
        let globbed: Vec<String> = discover(&root, &["/a*".into(), "pl?in".into(), "none*".into()])
            .expect("discover")
            .into_iter()
            .map(|b| b.rel)
            .collect();
        assert_eq!(globbed, vec!["app", "app/sub", "plain"]);
    }
}
