//! Where a kustomization is and what it may read: its directory, its file, the repository
//! root bounding every path, and the load restrictor.

use std::path::{Path, PathBuf};

use fleet_files::RepoRoot;
use fleet_files::{Error, Result};

/// One kustomization's place in the repository.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Location<'a> {
    /// The repository root.
    pub root: &'a RepoRoot,
    /// The kustomization's directory.
    pub dir: &'a Path,
    /// The kustomization file.
    pub file: &'a Path,
    /// Plain files must be in or below `dir` (kustomize's default load restrictor).
    pub restrict: bool,
}

impl Location<'_> {
    /// The kustomization file as messages show it.
    pub(crate) fn shown(&self) -> String {
        self.root.display(self.file)
    }

    /// An error about `field` of the kustomization.
    pub(crate) fn error(&self, field: impl Into<String>, message: impl Into<String>) -> Error {
        Error::in_field(self.shown(), field, message)
    }

    /// Resolves a plain file the kustomization names (patch, generator source, resource
    /// file, configuration), under the load restrictor.
    pub(crate) fn file_path(&self, entry: &str) -> Result<PathBuf> {
        if self.restrict {
            self.root
                .resolve_within(self.dir, entry, self.file, self.dir)
        } else {
            self.root.resolve(self.dir, entry, self.file)
        }
    }

    /// Resolves a directory or file anywhere inside the repository (bases, components).
    pub(crate) fn any_path(&self, entry: &str) -> Result<PathBuf> {
        self.root.resolve(self.dir, entry, self.file)
    }

    /// Reads a plain file the kustomization names; returns its text and its name for
    /// messages.
    pub(crate) fn read(&self, entry: &str) -> Result<(String, String)> {
        let path = self.file_path(entry)?;
        Ok((self.root.read_to_string(&path)?, self.root.display(&path)))
    }
}
