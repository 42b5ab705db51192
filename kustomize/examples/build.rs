//! `kustomize build DIR` in a dozen lines:
//! `cargo run -p fleet-kustomize --example build -- ../shared/real/podinfo-kustomize`.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    match build(Path::new(&dir)) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("Error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Builds `dir` as kubectl does, which may read bases anywhere on the file system.
fn build(dir: &Path) -> Result<String, fleet_kustomize::Error> {
    let root = fleet_kustomize::RepoRoot::new(Path::new("/"))?;
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let resources = fleet_kustomize::build(&root, &dir)?;
    Ok(fleet_helm::yaml::to_kubectl_stream(&resources))
}
