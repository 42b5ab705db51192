//! How to reach a repository: its URL, credentials, trusted CA and TLS and SSH checks,
//! turned into gix configuration and a credential callback.

use std::path::{Path, PathBuf};

use super::GitError;

/// Credentials for a repository, as a GitRepo's `clientSecretName` Secret holds them.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Credentials {
    /// HTTP basic auth (`username`, `password`; a token goes in `password`).
    Basic {
        /// User name.
        username: String,
        /// Password or personal access token.
        password: String,
    },
    /// An HTTP bearer token.
    Bearer(String),
    /// An SSH private key.
    Ssh(SshKey),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret.
        match self {
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
            Credentials::Bearer(_) => f.write_str("Bearer(***)"),
            Credentials::Ssh(key) => write!(f, "Ssh(known_hosts: {})", key.known_hosts.is_some()),
        }
    }
}

/// An SSH private key and the host keys it may talk to.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SshKey {
    /// The private key (OpenSSH or PEM format).
    pub private_key: String,
    /// `known_hosts` lines; without them every host key is refused unless
    /// [`Access::skip_host_key_check`] is set.
    pub known_hosts: Option<String>,
}

/// Everything needed to talk to one repository.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access {
    /// The repository URL (`https://`, `http://`, `ssh://`, `git@host:path`, `git://`,
    /// `file://`).
    pub url: String,
    /// Credentials, if the repository needs some.
    pub credentials: Option<Credentials>,
    /// PEM certificates trusted for HTTPS instead of the system's.
    pub ca_bundle: Option<Vec<u8>>,
    /// Accept any HTTPS certificate (only when the GitRepo says so).
    pub insecure_skip_tls_verify: bool,
    /// Accept any SSH host key (only when the operator says so).
    pub skip_host_key_check: bool,
}

impl Access {
    /// Access to a public repository.
    pub fn public(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }

    /// gix configuration values for this access; files they name (CA bundle, SSH key,
    /// known_hosts) are written under `private_dir`, readable by us only.
    pub(crate) fn config_overrides(&self, private_dir: &Path) -> Result<Vec<String>, GitError> {
        let mut overrides = Vec::new();
        if let Some(ca) = &self.ca_bundle {
            let path = write_private(private_dir, "ca.pem", ca)?;
            overrides.push(format!("http.sslCAInfo={}", path.display()));
        }
        if self.insecure_skip_tls_verify {
            overrides.push("http.sslVerify=false".to_string());
        }
        if let Some(Credentials::Ssh(key)) = &self.credentials {
            let key_path = write_private(private_dir, "id", ensure_newline(&key.private_key))?;
            let known = key.known_hosts.as_deref().unwrap_or("");
            let known_path = write_private(private_dir, "known_hosts", ensure_newline(known))?;
            let host_keys = if self.skip_host_key_check {
                "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no".to_string()
            } else {
                format!(
                    "-o UserKnownHostsFile={} -o StrictHostKeyChecking=yes",
                    known_path.display()
                )
            };
            overrides.push(format!(
                "core.sshCommand=ssh -i {} -o IdentitiesOnly=yes -o BatchMode=yes -o LogLevel=ERROR {host_keys}",
                key_path.display()
            ));
        }
        Ok(overrides)
    }

    /// The answer to gix's credential requests: ours, or none.
    pub(crate) fn credential_answer(
        &self,
        action: gix::credentials::helper::Action,
    ) -> gix::Result<Option<gix::credentials::protocol::Outcome>> {
        use gix::credentials::helper::Action;
        use gix::sec::identity::Credentials as Identity;
        let Action::Get(context) = action else {
            return Ok(None);
        };
        let credentials = match &self.credentials {
            Some(Credentials::Basic { username, password }) => Identity::UsernamePassword {
                username: username.clone(),
                password: password.clone(),
                oauth_refresh_token: None,
            },
            Some(Credentials::Bearer(token)) => Identity::Encoded {
                authtype: "Bearer".into(),
                credential: token.clone(),
                oauth_refresh_token: None,
            },
            // No credentials: gix reports the server's refusal instead of prompting.
            Some(Credentials::Ssh(_)) | None => return Ok(None),
        };
        Ok(Some(gix::credentials::protocol::Outcome {
            credentials,
            next: context.into(),
        }))
    }
}

fn ensure_newline(text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes
}

/// Writes `bytes` to `dir/name` with mode 0600, unless it already holds them.
fn write_private(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> Result<PathBuf, GitError> {
    use std::os::unix::fs::PermissionsExt;
    let bytes = bytes.as_ref();
    let path = dir.join(name);
    if std::fs::read(&path).is_ok_and(|existing| existing == bytes) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| GitError::local(dir, e))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| GitError::local(dir, e))?;
    fleet_objects::secret_file::write(&path, bytes).map_err(|e| GitError::local(&path, e))?;
    Ok(path)
}
