//! Remote references (`github.com/org/repo//path?ref=v1`, `https://host/repo.git//dir`,
//! plain URLs to files): the renderer reads only the repository, so it refuses them; in a
//! bundle gitjob fetches them first.

use crate::error::RenderError;

/// Whether a resource or component entry names something outside the repository.
pub fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("github.com/")
        || entry.starts_with("gitlab.com/")
        || entry.starts_with("bitbucket.org/")
        || entry.starts_with("git@")
        || entry.starts_with("git::")
}

/// The error for a remote reference the build cannot fetch.
pub fn refused(file: &str, field: &str, entry: &str) -> RenderError {
    RenderError::in_field(
        file,
        field,
        format!(
            "remote reference `{entry}` is not fetched by `fleet kustomize build`, which reads only local files; vendor it into the repository, or deploy it in a bundle, where gitjob fetches remote bases"
        ),
    )
}
