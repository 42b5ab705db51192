//! Raw YAML bundles: the manifest files of a bundle directory and `yaml.overlays`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::discovery::BundleDir;
use crate::RepoRoot;
use crate::{RenderError, Result};
use fleet_files::yaml;
use fleet_objects::smp::{self, ListMerge};

/// Manifest files of a bundle by path relative to it, parsed; nested bundles, the
/// `overlays/` directory, `.fleetignore`d files and the bundle's left-out files are left
/// out.
pub(super) fn collect(root: &RepoRoot, bundle: &BundleDir) -> Result<BTreeMap<String, Vec<Value>>> {
    let bundle_dir = bundle.dir.as_path();
    let mut excluded = bundle.left_out.clone();
    excluded.push(bundle_dir.join("overlays"));
    let mut files = BTreeMap::new();
    for path in files_under(root, bundle_dir, &excluded)? {
        let rel = relative(bundle_dir, &path);
        files.insert(rel, read_documents(root, &path)?);
    }
    Ok(files)
}

/// Applies the named overlays in order: `<file>_patch.<ext>` patches `<file>.<ext>`, any
/// other file replaces (or adds) the file of the same path.
pub(super) fn apply_overlays(
    root: &RepoRoot,
    bundle_dir: &Path,
    names: &[String],
    files: &mut BTreeMap<String, Vec<Value>>,
    fleet_yaml: &str,
) -> Result<()> {
    for (index, name) in names.iter().enumerate() {
        let field = format!("yaml.overlays[{index}]");
        let overlay_dir = root.resolve(
            &bundle_dir.join("overlays"),
            name,
            &bundle_dir.join("fleet.yaml"),
        );
        let overlay_dir = match overlay_dir {
            Ok(dir) if dir.is_dir() => dir,
            _ => {
                return Err(RenderError::in_field(
                    fleet_yaml,
                    field,
                    format!("overlay `{name}` is not a directory under overlays/"),
                ))
            }
        };
        for path in files_under(root, &overlay_dir, &[])? {
            let rel = relative(&overlay_dir, &path);
            let documents = read_documents(root, &path)?;
            match patched_file(&rel) {
                Some(target) => {
                    let Some(base) = files.get_mut(&target) else {
                        return Err(RenderError::in_file(
                            root.display(&path),
                            format!("overlay patch has no base file `{target}` to patch"),
                        ));
                    };
                    for patch in &documents {
                        patch_documents(base, patch, &root.display(&path))?;
                    }
                }
                None => {
                    files.insert(rel, documents);
                }
            }
        }
    }
    Ok(())
}

fn patch_documents(base: &mut [Value], patch: &Value, file: &str) -> Result<()> {
    let [single] = base else {
        return Err(RenderError::in_file(
            file,
            "an overlay patch needs a base file holding exactly one object",
        ));
    };
    let lists = ListMerge::for_api_version(fleet_files::str_at(single, &["apiVersion"]));
    smp::merge(single, patch, lists);
    Ok(())
}

/// `dir/name_patch.yaml` -> `dir/name.yaml`.
fn patched_file(rel: &str) -> Option<String> {
    for ext in [".yaml", ".yml", ".json"] {
        if let Some(stem) = rel.strip_suffix(&format!("_patch{ext}")) {
            return Some(format!("{stem}{ext}"));
        }
    }
    None
}

/// Every file of a bundle (any type), by path relative to it, as stored in a Bundle; its
/// left-out files are not. As in Fleet, the files of bundles nested below it are among
/// them (their options files too); its manifests leave them out when it is rendered.
pub fn bundle_files(root: &RepoRoot, bundle: &BundleDir) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for path in walk_files(root, &bundle.dir, &bundle.left_out, Walk::Everything)? {
        out.push((relative(&bundle.dir, &path), root.read(&path)?));
    }
    Ok(out)
}

fn read_documents(root: &RepoRoot, path: &Path) -> Result<Vec<Value>> {
    let text = root.read_to_string(path)?;
    yaml::parse_documents(&text, &root.display(path))
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .map(|p| p.to_string_lossy().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// Manifest files under `dir`, skipping `excluded` entries, nested bundles and charts.
fn files_under(root: &RepoRoot, dir: &Path, excluded: &[PathBuf]) -> Result<Vec<PathBuf>> {
    walk_files(root, dir, excluded, Walk::Manifests)
}

/// Whether a path names a manifest file (`.yaml`, `.yml` or `.json`, not fleet.yaml).
fn is_manifest_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let manifest = name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json");
    manifest && path.is_file() && name != "fleet.yaml" && name != "fleet.yml"
}

/// Which files a walk of a bundle keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Every file, nested bundles' included: what a Bundle stores.
    Everything,
    /// Manifests outside nested bundles and charts (a directory holding a fleet.yaml or a
    /// Chart.yaml), as Fleet renders a raw YAML bundle.
    Manifests,
}

/// Whether `dir` holds a bundle or a chart of its own, which a raw YAML bundle above it
/// does not deploy.
fn is_nested_bundle_or_chart(dir: &Path) -> bool {
    super::discovery::fleet_yaml_in(dir).is_some() || dir.join("Chart.yaml").is_file()
}

/// Files under `dir` that `walk` keeps, skipping `excluded` entries (directories or
/// files), hidden and `.fleetignore`d entries. A symbolic link is a file of its own name
/// with its target's contents when its target is a file inside `dir`, and an error
/// otherwise, as in Fleet's bundle reader: a link may not read what lies outside the
/// bundle.
fn walk_files(
    root: &RepoRoot,
    dir: &Path,
    excluded: &[PathBuf],
    walk: Walk,
) -> Result<Vec<PathBuf>> {
    let enter = |path: &Path| {
        !(excluded.iter().any(|s| s == path)
            || (walk == Walk::Manifests && is_nested_bundle_or_chart(path)))
    };
    let keep = |path: &Path| walk == Walk::Everything || is_manifest_name(path);
    let walked = super::fleetignore::walk(root, dir, &enter)?;
    let bundle = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut files = Vec::new();
    for path in walked.files.iter().filter(|p| keep(p)) {
        let resolved = root.resolve(dir, &path.to_string_lossy(), path);
        if path.is_symlink() {
            let name = root.display(path);
            let escapes =
                || RenderError::in_file(&name, "symlink: target escapes bundle directory");
            let target = resolved.as_ref().map_err(|_| escapes())?;
            if !target.starts_with(&bundle) {
                return Err(escapes());
            }
            if target.is_dir() {
                return Err(RenderError::in_file(
                    name,
                    "symlink to a directory: a bundle's links must name files",
                ));
            }
        }
        let target = resolved?;
        if !excluded.contains(&target) && !excluded.contains(path) {
            files.push(path.clone());
        }
    }
    files.sort();
    Ok(files)
}
