//! A repository root that every path opened must stay inside.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// The directory that bounds all file access: the checked-out repository.
#[derive(Debug, Clone)]
pub struct RepoRoot {
    root: PathBuf,
}

impl RepoRoot {
    /// Opens a root directory; the path is canonicalised so symlinks cannot hide an escape.
    pub fn new(path: &Path) -> Result<Self> {
        let root = path
            .canonicalize()
            .map_err(|e| Error::in_file(path.display().to_string(), e.to_string()).with_cause(e))?;
        Ok(Self { root })
    }

    /// The canonical root path.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// A path shown in messages: relative to the root when inside it (absolute when the
    /// root is the whole file system).
    pub fn display(&self, path: &Path) -> String {
        if self.root == Path::new("/") {
            return path.display().to_string();
        }
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    /// Resolves `reference` (as written in `referrer`) against `base`, refusing any path that
    /// leaves the root, directly or through a symlink. The target must exist.
    pub fn resolve(&self, base: &Path, reference: &str, referrer: &Path) -> Result<PathBuf> {
        let escape = || {
            Error::in_file(
                self.display(referrer),
                format!("path `{reference}` leaves the repository root"),
            )
        };
        let joined = lexical_join(base, Path::new(reference));
        if !joined.starts_with(&self.root) {
            return Err(escape());
        }
        let real = joined.canonicalize().map_err(|e| {
            Error::in_file(
                self.display(referrer),
                format!("cannot read `{reference}`: {e}"),
            )
        })?;
        if !real.starts_with(&self.root) {
            return Err(escape());
        }
        Ok(real)
    }

    /// Resolves as [`resolve`](Self::resolve) does, and also refuses a file outside
    /// `within` (kustomize's load restrictor: a kustomization reads plain files only from
    /// its own directory and below).
    pub fn resolve_within(
        &self,
        base: &Path,
        reference: &str,
        referrer: &Path,
        within: &Path,
    ) -> Result<PathBuf> {
        let real = self.resolve(base, reference, referrer)?;
        if !real.starts_with(within) {
            return Err(Error::in_file(
                self.display(referrer),
                format!(
                    "security; file '{}' is not in or below '{}'",
                    real.display(),
                    within.display()
                ),
            ));
        }
        Ok(real)
    }

    /// Reads a file inside the root as text.
    pub fn read_to_string(&self, path: &Path) -> Result<String> {
        std::fs::read_to_string(path)
            .map_err(|e| Error::in_file(self.display(path), e.to_string()).with_cause(e))
    }

    /// Reads a file inside the root as bytes.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>> {
        std::fs::read(path)
            .map_err(|e| Error::in_file(self.display(path), e.to_string()).with_cause(e))
    }
}

/// `reference` joined to `base`, `..` and `.` resolved without touching the file system
/// (an absolute `reference` starts again from `/`).
pub fn lexical_join(base: &Path, reference: &Path) -> PathBuf {
    let mut out = if reference.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    for part in reference.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_and_symlinks_leaving_the_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("a")).expect("mkdir");
        std::fs::write(dir.path().join("secret"), "x").expect("write");
        std::fs::write(repo.join("a/ok.yaml"), "x").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret"), repo.join("a/link"))
            .expect("symlink");
        let root = RepoRoot::new(&repo).expect("root");
        let base = root.path().join("a");
        let referrer = base.join("kustomization.yaml");
        assert!(root.resolve(&base, "ok.yaml", &referrer).is_ok());
        let err = root
            .resolve(&base, "../../etc/passwd", &referrer)
            .expect_err("escape");
        assert_eq!(
            err.to_string(),
            "a/kustomization.yaml: path `../../etc/passwd` leaves the repository root"
        );
        assert!(root.resolve(&base, "link", &referrer).is_err());
        assert!(root.resolve(&base, "/etc/passwd", &referrer).is_err());
    }
}
