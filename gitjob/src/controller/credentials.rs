//! A GitRepo's access to its repository: the Secret named by `clientSecretName` (Fleet's
//! key names), `caBundle` and `insecureSkipTLSVerify`.

use base64::Engine;
use fleet_api::GitRepo;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::git::{Access, Credentials, SshKey};

/// Why a GitRepo's access could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The Secret could not be read.
    #[error("secret {namespace}/{name}: {source}")]
    Read {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The cause.
        source: kube::Error,
    },
    /// The Secret holds no credentials we know.
    #[error("secret {namespace}/{name} holds neither `ssh-privatekey`, `username`/`password` nor `token`")]
    Unusable {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// How to reach `gitrepo`'s repository.
pub async fn access_for(
    client: &kube::Client,
    gitrepo: &GitRepo,
    skip_host_key_check: bool,
) -> Result<Access, AccessError> {
    let spec = &gitrepo.spec;
    let mut access = Access {
        url: spec.repo.clone(),
        ca_bundle: spec.ca_bundle.as_deref().map(ca_bundle_bytes),
        insecure_skip_tls_verify: spec.insecure_skip_tls_verify,
        skip_host_key_check,
        credentials: None,
    };
    let Some(name) = spec.client_secret_name.as_deref().filter(|n| !n.is_empty()) else {
        return Ok(access);
    };
    let namespace = gitrepo.metadata.namespace.clone().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let secret = secrets
        .get(name)
        .await
        .map_err(|source| AccessError::Read {
            namespace: namespace.clone(),
            name: name.to_string(),
            source,
        })?;
    access.credentials = Some(
        credentials_in(&secret).ok_or_else(|| AccessError::Unusable {
            namespace,
            name: name.to_string(),
        })?,
    );
    Ok(access)
}

/// `caBundle` arrives base64-encoded (a `[]byte` in Fleet's Go types); PEM text written
/// directly is taken as it is.
fn ca_bundle_bytes(text: &str) -> Vec<u8> {
    if text.contains("-----BEGIN") {
        return text.as_bytes().to_vec();
    }
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .unwrap_or_else(|_| text.as_bytes().to_vec())
}

/// The credentials a Secret holds: `ssh-privatekey` (with `known_hosts`), `username` and
/// `password` (basic auth; a token goes in `password`), or `token` (bearer).
pub fn credentials_in(secret: &Secret) -> Option<Credentials> {
    let data = secret.data.as_ref();
    let value = |key: &str| -> Option<String> {
        let from_data = data
            .and_then(|d| d.get(key))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned());
        from_data.or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key).cloned())
        })
    };
    if let Some(private_key) = value("ssh-privatekey") {
        return Some(Credentials::Ssh(SshKey {
            private_key,
            known_hosts: value("known_hosts"),
        }));
    }
    if let (Some(username), Some(password)) = (value("username"), value("password")) {
        return Some(Credentials::Basic { username, password });
    }
    value("token").map(Credentials::Bearer)
}

/// The resource versions of the Secrets holding `gitrepo`'s Helm credentials
/// (`helmSecretName`, `helmSecretNameForPaths`), none when it names none: a change of them
/// (a rotated password) calls for rendering its commit again. A Secret not found counts
/// as a version of its own.
pub async fn helm_secrets_version(
    client: &kube::Client,
    gitrepo: &GitRepo,
) -> Result<Option<String>, kube::Error> {
    let spec = &gitrepo.spec;
    let names: Vec<&str> = [&spec.helm_secret_name, &spec.helm_secret_name_for_paths]
        .into_iter()
        .filter_map(|n| n.as_deref().filter(|n| !n.is_empty()))
        .collect();
    if names.is_empty() {
        return Ok(None);
    }
    let namespace = gitrepo.metadata.namespace.clone().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let mut versions = Vec::new();
    for name in names {
        let version = secrets
            .get_opt(name)
            .await?
            .and_then(|s| s.metadata.resource_version)
            .unwrap_or_else(|| "none".into());
        versions.push(format!("{name}@{version}"));
    }
    Ok(Some(versions.join(",")))
}
