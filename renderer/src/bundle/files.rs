//! A Bundle's files (its `spec.resources`) written back into a directory for the renderer
//! to read: the controller renders bundles from there, and so does an agent that renders a
//! bundle in its member cluster.

use std::path::{Component, Path, PathBuf};

use base64::Engine;
use fleet_api::BundleResource;

/// Why a Bundle's files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// A resource name that would leave the bundle directory.
    #[error("resource `{0}` names a path outside the bundle")]
    UnsafeName(String),
    /// A resource whose base64 or gzip encoding is broken.
    #[error("resource `{name}`: {message}")]
    Encoding {
        /// The resource.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The files could not be written.
    #[error("writing the bundle's files: {0}")]
    Io(#[from] std::io::Error),
}

/// Writes every resource under `top`, decoded, at the path its name gives.
pub fn write_files(resources: &[BundleResource], top: &Path) -> Result<(), FilesError> {
    std::fs::create_dir_all(top)?;
    for resource in resources {
        let name = resource.name.clone().unwrap_or_default();
        let path = safe_join(top, &name)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, decode(&name, resource)?)?;
    }
    Ok(())
}

fn safe_join(top: &Path, name: &str) -> Result<PathBuf, FilesError> {
    let relative = Path::new(name);
    let normal = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if name.is_empty() || !normal {
        return Err(FilesError::UnsafeName(name.to_string()));
    }
    Ok(top.join(relative))
}

fn decode(name: &str, resource: &BundleResource) -> Result<Vec<u8>, FilesError> {
    let content = resource.content.clone().unwrap_or_default();
    let broken = |message: String| FilesError::Encoding {
        name: name.to_string(),
        message,
    };
    let base64 = || {
        base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|e| broken(e.to_string()))
    };
    match resource.encoding.as_deref().unwrap_or("") {
        "" => Ok(content.into_bytes()),
        "base64" => base64(),
        "base64+gz" => {
            let mut out = Vec::new();
            let bytes = base64()?;
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
                .map_err(|e| broken(e.to_string()))?;
            Ok(out)
        }
        other => Err(broken(format!("unknown encoding `{other}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_stay_inside_the_bundle() {
        let top = Path::new("/scratch/bundle");
        assert!(safe_join(top, "a/b.yaml").is_ok());
        assert!(safe_join(top, "../x").is_err());
        assert!(safe_join(top, "/etc/passwd").is_err());
        assert!(safe_join(top, "").is_err());
    }
}
