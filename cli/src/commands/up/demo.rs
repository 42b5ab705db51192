//! The demo repository `fleet up` deploys: `testdata/demo/`, built into the binary so that
//! `fleet up` works from any directory.

use std::path::Path;

use anyhow::{Context as _, Result};

/// `(path, text)` of each named file of `testdata/demo/`, built in.
macro_rules! embedded {
    ($($path:literal,)*) => {
        &[$(($path, include_str!(concat!("../../../../testdata/demo/", $path))),)*]
    };
}

/// Every file of `testdata/demo/`, by path inside the repository.
const FILES: &[(&str, &str)] = embedded![
    "README.md",
    "hello-yaml/fleet.yaml",
    "hello-yaml/configmap.yaml",
    "hello-yaml/serviceaccount.yaml",
    "kustomize-overlays/fleet.yaml",
    "kustomize-overlays/base/kustomization.yaml",
    "kustomize-overlays/base/settings.yaml",
    "kustomize-overlays/base/service.yaml",
    "kustomize-overlays/overlays/dev/kustomization.yaml",
    "kustomize-overlays/overlays/prod/kustomization.yaml",
    "helm-chart/fleet.yaml",
    "helm-chart/chart/Chart.yaml",
    "helm-chart/chart/values.yaml",
    "helm-chart/chart/templates/_helpers.tpl",
    "helm-chart/chart/templates/configmap.yaml",
    "helm-chart/chart/templates/deployment.yaml",
    "helm-chart/chart/templates/service.yaml",
];

/// The bundle directories of the demo repository.
pub(super) const BUNDLES: [&str; 3] = ["hello-yaml", "kustomize-overlays", "helm-chart"];

/// Runs `git` in `dir` with the demo's identity, returning its trimmed output.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let identity = [
        "-c",
        "user.name=fleet demo",
        "-c",
        "user.email=demo@fleet-rs.invalid",
    ];
    let all: Vec<&str> = identity.iter().chain(args).copied().collect();
    super::super::git(dir, &all)
}

/// Creates the demo repository in `dir` (branch `main`, one commit) unless it is already a
/// Git repository, which is left as the user's commits made it. Returns true if created.
pub(super) fn create_repo(dir: &Path) -> Result<bool> {
    if dir.join(".git").exists() {
        return Ok(false);
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (path, text) in FILES {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    }
    git(dir, &["init", "-q", "-b", "main"])?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "The fleet-rs demo"])?;
    Ok(true)
}

/// The URL of the demo repository at `dir`: the GitRepo's `spec.repo`, and what a push
/// to gitjob's webhook names, so that the push finds the GitRepo.
pub(super) fn url(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

/// The commit `main` points at.
pub(super) fn head(dir: &Path) -> Result<String> {
    git(dir, &["rev-parse", "main"])
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn files_under(root: &Path, dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("testdata/demo is readable") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                files_under(root, &path, found);
            } else {
                let relative = path.strip_prefix(root).expect("under the root");
                found.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }

    #[test]
    fn every_file_of_testdata_demo_is_embedded() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/demo");
        let mut on_disk = Vec::new();
        files_under(&root, &root, &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<String> = super::FILES.iter().map(|(p, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
        for (path, text) in super::FILES {
            assert_eq!(
                *text,
                std::fs::read_to_string(root.join(path)).expect("file")
            );
        }
    }
}
