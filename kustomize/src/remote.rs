//! Remote references in `resources`, `bases` and `components`, in kustomize's URL grammar:
//! Git repositories (`github.com/org/repo//path?ref=v1`, `https://host/org/repo.git//dir`,
//! `git@host:org/repo.git//dir`, `ssh://`, `git::` prefixes, `?ref=`/`?version=`) and plain
//! HTTP(S) URLs to a file. The renderer never downloads: in a bundle, gitjob fetches each
//! into the bundle's [`REMOTE_DIR`] first (where the controller finds it again in the
//! Bundle's files); `fleet kustomize build` refuses them.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use fleet_files::Error;

/// The directory, inside a bundle, where fetched remote resources are kept.
pub const REMOTE_DIR: &str = "_fleet_remote";

/// A remote resource, as kustomize reads its URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RemoteResource {
    /// A directory (a kustomization) in a Git repository.
    Git {
        /// The URL to clone.
        repo: String,
        /// The directory inside the repository (empty: its root).
        path: String,
        /// The branch, tag or commit (`?ref=` or `?version=`); none means the default
        /// branch.
        reference: Option<String>,
    },
    /// A file served over HTTP(S).
    File {
        /// The URL.
        url: String,
    },
}

impl RemoteResource {
    /// Reads a `resources`/`components` entry; `None` when it is a local path.
    pub fn parse(entry: &str) -> Option<Self> {
        let text = entry.trim();
        let text = text.strip_prefix("git::").unwrap_or(text);
        let (text, query) = match text.split_once('?') {
            Some((url, query)) => (url, Some(query)),
            None => (text, None),
        };
        let reference = query.and_then(|q| {
            q.split('&').find_map(|pair| match pair.split_once('=') {
                Some(("ref" | "version", value)) if !value.is_empty() => Some(value.to_string()),
                _ => None,
            })
        });
        let shorthand = ["github.com/", "gitlab.com/", "bitbucket.org/"]
            .iter()
            .any(|host| text.starts_with(host));
        let url = if shorthand {
            format!("https://{text}")
        } else if text.contains("://") || text.starts_with("git@") {
            text.to_string()
        } else {
            return None;
        };
        let scheme_end = url.find("://").map_or(0, |i| i + 3);
        let (repo, path) = if let Some(at) = url[scheme_end..].find("//") {
            let at = scheme_end + at;
            (url[..at].to_string(), url[at + 2..].to_string())
        } else if let Some(at) = url.find(".git/") {
            (url[..at + 4].to_string(), url[at + 5..].to_string())
        } else if let Some(at) = url.find("/_git/") {
            // Azure DevOps: the repository name follows `_git/`.
            let rest = &url[at + 6..];
            let end = rest.find('/').map_or(url.len(), |i| at + 6 + i);
            (
                url[..end].to_string(),
                url[end..].trim_start_matches('/').to_string(),
            )
        } else if url.ends_with(".git") || url.starts_with("git@") {
            (url.clone(), String::new())
        } else if shorthand {
            // `github.com/org/repo/path`: the first two segments name the repository.
            let segments: Vec<&str> = url[scheme_end..].splitn(4, '/').collect();
            if segments.len() < 3 {
                return None;
            }
            let repo = format!("https://{}/{}/{}", segments[0], segments[1], segments[2]);
            (
                repo,
                segments.get(3).copied().unwrap_or_default().to_string(),
            )
        } else if reference.is_some() {
            (url.clone(), String::new())
        } else if url.starts_with("http://") || url.starts_with("https://") {
            return Some(RemoteResource::File { url });
        } else {
            (url.clone(), String::new())
        };
        Some(RemoteResource::Git {
            repo,
            path: path.trim_matches('/').to_string(),
            reference,
        })
    }

    /// Where the fetched copy lives under [`REMOTE_DIR`]: one directory per repository
    /// and reference (holding the whole tree), one `.yaml` file per file URL.
    pub fn local_name(&self) -> String {
        match self {
            RemoteResource::Git {
                repo, reference, ..
            } => digest(&format!("{repo}\n{}", reference.as_deref().unwrap_or(""))),
            RemoteResource::File { url } => format!("{}.yaml", digest(url)),
        }
    }

    /// The fetched copy of this resource under `remote_dir`: the directory (or file) the
    /// entry names.
    pub fn local_path(&self, remote_dir: &Path) -> PathBuf {
        let top = remote_dir.join(self.local_name());
        match self {
            RemoteResource::Git { path, .. } if !path.is_empty() => top.join(path),
            _ => top,
        }
    }

    /// Where a fetch that failed leaves its message, for the render to report.
    pub fn failure_path(&self, remote_dir: &Path) -> PathBuf {
        remote_dir.join(format!("{}.error", self.local_name()))
    }
}

fn digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Whether a resource or component entry names something outside the repository.
pub(crate) fn is_remote(entry: &str) -> bool {
    RemoteResource::parse(entry).is_some()
}

/// The local copy of a remote entry, or why there is none: not fetched (outside a
/// bundle), or the fetch failed.
pub(crate) fn resolve(
    entry: &str,
    remote_dir: Option<&Path>,
    file: &str,
    field: &str,
) -> Result<PathBuf, Error> {
    let (Some(remote), Some(remote_dir)) = (RemoteResource::parse(entry), remote_dir) else {
        return Err(refused(file, field, entry));
    };
    if let RemoteResource::Git { path, .. } = &remote {
        if path.split('/').any(|segment| segment == "..") {
            return Err(Error::in_field(
                file,
                field,
                format!("remote resource `{entry}` names a path that leaves its repository"),
            ));
        }
    }
    let local = remote.local_path(remote_dir);
    if local.exists() {
        return Ok(local);
    }
    if let Ok(message) = std::fs::read_to_string(remote.failure_path(remote_dir)) {
        return Err(Error::in_field(
            file,
            field,
            format!("fetching remote resource `{entry}`: {}", message.trim()),
        ));
    }
    Err(Error::in_field(
        file,
        field,
        format!("remote resource `{entry}` was not fetched (gitjob fetches remote bases before rendering)"),
    ))
}

/// The error for a remote reference the build cannot fetch.
pub(crate) fn refused(file: &str, field: &str, entry: &str) -> Error {
    Error::in_field(
        file,
        field,
        format!(
            "remote reference `{entry}` is not fetched by `fleet kustomize build`, which reads only local files; vendor it into the repository, or deploy it in a bundle, where gitjob fetches remote bases"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(repo: &str, path: &str, reference: Option<&str>) -> Option<RemoteResource> {
        Some(RemoteResource::Git {
            repo: repo.into(),
            path: path.into(),
            reference: reference.map(String::from),
        })
    }

    /// The forms kustomize's remote build documentation gives.
    #[test]
    fn reads_kustomize_url_forms() {
        assert_eq!(
            RemoteResource::parse(
                "github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v3.3.1"
            ),
            git(
                "https://github.com/kubernetes-sigs/kustomize",
                "examples/multibases",
                Some("v3.3.1")
            )
        );
        assert_eq!(
            RemoteResource::parse("github.com/org/repo/deploy/base?version=v1"),
            git("https://github.com/org/repo", "deploy/base", Some("v1"))
        );
        assert_eq!(
            RemoteResource::parse("https://github.com/org/repo.git/deploy?ref=main"),
            git("https://github.com/org/repo.git", "deploy", Some("main"))
        );
        assert_eq!(
            RemoteResource::parse("git::https://gitlab.com/org/repo.git//base?ref=v2&timeout=90s"),
            git("https://gitlab.com/org/repo.git", "base", Some("v2"))
        );
        assert_eq!(
            RemoteResource::parse("git@github.com:org/repo.git//overlays/prod"),
            git("git@github.com:org/repo.git", "overlays/prod", None)
        );
        assert_eq!(
            RemoteResource::parse("ssh://git@example.com/org/repo.git"),
            git("ssh://git@example.com/org/repo.git", "", None)
        );
        assert_eq!(
            RemoteResource::parse(
                "https://dev.azure.com/org/project/_git/repo/path/to/base?ref=main"
            ),
            git(
                "https://dev.azure.com/org/project/_git/repo",
                "path/to/base",
                Some("main")
            )
        );
        assert_eq!(
            RemoteResource::parse("https://raw.githubusercontent.com/org/repo/main/deploy.yaml"),
            Some(RemoteResource::File {
                url: "https://raw.githubusercontent.com/org/repo/main/deploy.yaml".into()
            })
        );
        assert_eq!(RemoteResource::parse("../base"), None);
        assert_eq!(RemoteResource::parse("deployment.yaml"), None);
    }

    #[test]
    fn one_checkout_per_repository_and_reference() {
        let a = RemoteResource::parse("github.com/org/repo//a?ref=v1").expect("remote");
        let b = RemoteResource::parse("github.com/org/repo//b?ref=v1").expect("remote");
        let c = RemoteResource::parse("github.com/org/repo//a?ref=v2").expect("remote");
        assert_eq!(a.local_name(), b.local_name());
        assert_ne!(a.local_name(), c.local_name());
        assert!(a.local_path(Path::new("/r")).ends_with("a"));
    }
}
