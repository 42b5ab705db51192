//! Helpers shared by the engine's tests: where the inputs are, and `kustomize build` as
//! kubectl prints it.
#![allow(dead_code)] // Each test crate uses its own part of these helpers.

use std::path::Path;

use fleet_kustomize::RepoRoot;

/// What `kubectl kustomize DIR` prints, built by the library with the whole file system as
/// its root (kubectl's reach): the YAML stream, or the error.
pub(crate) fn kustomize_build(dir: &Path) -> Result<String, fleet_kustomize::Error> {
    let root = RepoRoot::new(Path::new("/"))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| fleet_kustomize::Error::in_file(dir.display().to_string(), e.to_string()))?;
    let resources = fleet_kustomize::build(&root, &dir)?;
    Ok(fleet_helm::yaml::to_kubectl_stream(&resources))
}

/// What `kubectl kustomize DIR` answers: the judge of every build (kubectl 1.37, with
/// kustomize 5.8.1 inside, as `.ci/real-tools.sh` installs it; not whatever `kubectl` the
/// machine has).
pub(crate) fn kubectl_kustomize(dir: &Path) -> std::process::Output {
    std::process::Command::new(fleet_testkit::real_tool("kubectl137"))
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl 1.37 runs: it is the judge of Kustomize output")
}
