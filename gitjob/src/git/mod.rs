//! Git with gix: one bare mirror per repository URL, polled with a ref advertisement only
//! (the cheap poll), fetched shallow when the commit moved, and extracted tree by tree into
//! a plain directory with limits and path checks, submodules included.

mod access;
mod checkout;
mod extract;
mod mirror;

pub use access::{Access, Credentials, SshKey};
pub use checkout::{checkout, resolve_url, MAX_SUBMODULE_DEPTH};
pub use extract::{extract, Extracted, Gitlink, Limits};
pub use mirror::{Mirror, MirrorCache, Wanted};

/// Errors talking to a Git remote or reading what it sent.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The remote could not be reached or refused us.
    #[error("{url}: {message}")]
    Remote {
        /// The repository URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The remote refused our credentials (or wanted some and we had none).
    #[error("{url}: authentication failed: {message}")]
    Auth {
        /// The repository URL.
        url: String,
        /// What the transport said.
        message: String,
    },
    /// The branch, tag or commit does not exist on the remote.
    #[error("{url}: no branch, tag or commit `{reference}`")]
    NoSuchRef {
        /// The repository URL.
        url: String,
        /// What was asked for.
        reference: String,
    },
    /// The repository or its tree is over a limit.
    #[error("{url}: {message}")]
    Limit {
        /// The repository URL.
        url: String,
        /// Which limit, and by how much.
        message: String,
    },
    /// A tree entry would write outside the checkout or into `.git`.
    #[error("{url}: refusing tree entry `{path}`: {reason}")]
    UnsafePath {
        /// The repository URL.
        url: String,
        /// The entry's path as stored in the tree.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// The local cache or checkout directory could not be written.
    #[error("{path}: {source}")]
    Local {
        /// The directory or file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// `bytes` in MiB, or KiB below one MiB, for limit messages.
pub(crate) fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

impl GitError {
    /// A failure of gix, with the causes under it (gix's top message is often only
    /// "Transport handshake failed"), told apart as [`GitError::remote`] does.
    pub(crate) fn from_gix(url: &str, error: &dyn std::error::Error) -> Self {
        let mut message = error.to_string();
        let mut cause = error.source();
        while let Some(inner) = cause {
            let text = inner.to_string();
            if !message.contains(&text) {
                message = format!("{message}: {text}");
            }
            cause = inner.source();
        }
        Self::remote(url, message)
    }

    /// A transport failure, told apart as an authentication failure when the transport
    /// says so.
    pub(crate) fn remote(url: &str, error: impl std::fmt::Display) -> Self {
        let message = error.to_string();
        let lower = message.to_lowercase();
        let auth = [
            "authentic",
            "401",
            "403",
            "credentials",
            "permission denied",
        ];
        if auth.iter().any(|word| lower.contains(word)) {
            return GitError::Auth {
                url: url.to_string(),
                message,
            };
        }
        GitError::Remote {
            url: url.to_string(),
            message,
        }
    }

    pub(crate) fn local(path: &std::path::Path, source: std::io::Error) -> Self {
        GitError::Local {
            path: path.display().to_string(),
            source,
        }
    }
}
