//! Credentials for private Helm repositories and registries, as a GitRepo gives them:
//! `helmSecretName` (keys `username` and `password`) for every chart, limited to the
//! repositories matching `helmRepoURLRegex` when it is set; or `helmSecretNameForPaths`
//! (key `secrets-path.yaml`: bundle path to `username`/`password`) per bundle path, which
//! takes precedence, as in Fleet. Credentials go to no other repository.

use std::collections::BTreeMap;

use base64::Engine;
use regex::Regex;

/// A user name and password for HTTP basic authentication.
#[derive(Clone, PartialEq, Eq)]
pub struct Basic {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
}

impl std::fmt::Debug for Basic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Basic")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Basic {
    /// The `Authorization` header value.
    pub fn header(&self) -> String {
        let pair = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }
}

/// The credentials a bundle's charts may be fetched with.
#[derive(Clone, Debug, Default)]
pub struct HelmAuth {
    basic: Option<Basic>,
    only: Option<Regex>,
    tls: TlsTrust,
}

/// How a repository's TLS certificate is checked, when not against the usual roots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsTrust {
    /// Accept any certificate (Fleet's `insecureSkipTLSVerify`).
    pub insecure_skip_verify: bool,
    /// PEM certificates of the CAs trusted for the repository, in place of the usual roots
    /// (a Secret's `cacerts`).
    pub ca_pem: Option<Vec<u8>>,
}

impl HelmAuth {
    /// No credentials: public repositories only.
    pub fn none() -> Self {
        Self::default()
    }

    /// The credentials for a chart from `repository` (`helm.repo`, or the chart's own
    /// `oci://` or `https://` URL), if they may go there: only where `helmRepoURLRegex`
    /// matches from the URL's start, and nowhere when it is empty (as Fleet 0.16).
    pub fn for_repository(&self, repository: &str) -> Option<&Basic> {
        let basic = self.basic.as_ref()?;
        self.only
            .as_ref()
            .is_some_and(|only| only.is_match(repository))
            .then_some(basic)
    }

    /// The credentials in a Secret (`secret`, its name and decoded data: `username` and
    /// `password`, both or neither; `cacerts`, `insecureSkipVerify`) for the one
    /// repository `repository` (and what lies under it), as a HelmOp's `helmSecretName`
    /// gives them.
    pub fn for_one_repository(
        secret: (&str, &BTreeMap<String, Vec<u8>>),
        repository: &str,
    ) -> Result<Self, AuthError> {
        let (name, data) = secret;
        let pattern = format!("^{}", regex::escape(repository));
        let only = Regex::new(&pattern).map_err(|source| AuthError::Pattern { pattern, source })?;
        let basic = match (data.contains_key("username"), data.contains_key("password")) {
            (false, false) => None,
            (true, false) => {
                return Err(AuthError::Secret {
                    secret: name.to_string(),
                    message: "username is set in the secret, but password isn't".into(),
                })
            }
            _ => Some(basic_of(name, data)?),
        };
        let insecure = data.get("insecureSkipVerify").is_some_and(|v| {
            String::from_utf8_lossy(v)
                .trim()
                .eq_ignore_ascii_case("true")
        });
        Ok(Self {
            basic,
            only: Some(only),
            tls: TlsTrust {
                insecure_skip_verify: insecure,
                ca_pem: data.get("cacerts").filter(|pem| !pem.is_empty()).cloned(),
            },
        })
    }

    /// These credentials, accepting any certificate from the repository when `skip` (a
    /// HelmOp's `insecureSkipTLSVerify`, which decides it as in Fleet).
    pub fn skipping_tls_verify(mut self, skip: bool) -> Self {
        self.tls.insecure_skip_verify = skip;
        self
    }

    /// How the repository's certificate is checked.
    pub fn tls(&self) -> &TlsTrust {
        &self.tls
    }

    /// Whether credentials were held back only because `helmRepoURLRegex` is empty: then a
    /// failed fetch says so.
    pub fn held_back_for_empty_regex(&self) -> bool {
        self.basic.is_some() && self.only.is_none()
    }
}

/// What a fetch that failed without the credentials an empty regex held back adds to its
/// error (Fleet's hint).
pub(crate) const EMPTY_REGEX_HINT: &str = "helmRepoURLRegex is empty, so Helm credentials were not forwarded; set spec.helmRepoURLRegex to allow credential forwarding";

/// Why a GitRepo's Helm credentials cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// `helmRepoURLRegex` is not a regular expression.
    #[error("helmRepoURLRegex {pattern:?}: {source}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// The cause.
        source: regex::Error,
    },
    /// A Secret lacks what it must hold, or holds it unreadably.
    #[error("secret {secret}: {message}")]
    Secret {
        /// The Secret's name.
        secret: String,
        /// What is wrong.
        message: String,
    },
}

/// A GitRepo's Helm credentials, from which each bundle's are chosen by its path.
#[derive(Clone, Debug, Default)]
pub struct RepoHelmAuth {
    default: HelmAuth,
    by_path: Option<BTreeMap<String, Basic>>,
}

impl RepoHelmAuth {
    /// From the decoded data of the `helmSecretName` Secret (`secret`), the
    /// `helmSecretNameForPaths` Secret (`for_paths`) and `helmRepoURLRegex`.
    pub fn new(
        secret: Option<(&str, &BTreeMap<String, Vec<u8>>)>,
        for_paths: Option<(&str, &BTreeMap<String, Vec<u8>>)>,
        url_regex: Option<&str>,
    ) -> Result<Self, AuthError> {
        // Anchored at the start, as Fleet anchors it: a trusted host named in a query
        // parameter of another URL does not match.
        let only = url_regex
            .filter(|p| !p.is_empty())
            .map(|pattern| {
                Regex::new(pattern)
                    .and_then(|_| Regex::new(&format!("^(?:{pattern})")))
                    .map_err(|source| AuthError::Pattern {
                        pattern: pattern.to_string(),
                        source,
                    })
            })
            .transpose()?;
        let basic = secret
            .map(|(name, data)| basic_of(name, data))
            .transpose()?;
        let by_path = for_paths
            .map(|(name, data)| paths_of(name, data))
            .transpose()?;
        Ok(Self {
            default: HelmAuth {
                basic,
                only,
                tls: TlsTrust::default(),
            },
            by_path,
        })
    }

    /// The credentials of the bundle at `path` (relative to the repository's root; matched
    /// as written in `secrets-path.yaml`, or as the bundle's path label writes it).
    pub fn for_path(&self, path: &str) -> HelmAuth {
        let Some(by_path) = &self.by_path else {
            return self.default.clone();
        };
        let wanted = path.trim_matches('/');
        let exact = by_path.iter().find(|(key, _)| {
            let key = key.trim_matches('/');
            key == wanted || fleet_renderer::bundle::label_value(key) == wanted
        });
        // No key names the path: the first key, in lexical order, that matches it as a
        // glob (Go's `filepath.Match`, as Fleet's), such as `apps/*`.
        let glob = || {
            by_path.iter().find(|(key, _)| {
                globset::GlobBuilder::new(key.trim_matches('/'))
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .is_ok_and(|glob| glob.compile_matcher().is_match(wanted))
            })
        };
        let basic = exact.or_else(glob).map(|(_, basic)| basic.clone());
        HelmAuth {
            basic,
            ..self.default.clone()
        }
    }
}

fn text(secret: &str, data: &BTreeMap<String, Vec<u8>>, key: &str) -> Result<String, AuthError> {
    let bytes = data.get(key).ok_or_else(|| AuthError::Secret {
        secret: secret.to_string(),
        message: format!("no `{key}`"),
    })?;
    String::from_utf8(bytes.clone()).map_err(|_| AuthError::Secret {
        secret: secret.to_string(),
        message: format!("`{key}` is not UTF-8"),
    })
}

fn basic_of(secret: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<Basic, AuthError> {
    Ok(Basic {
        username: text(secret, data, "username")?,
        password: text(secret, data, "password")?,
    })
}

fn paths_of(
    secret: &str,
    data: &BTreeMap<String, Vec<u8>>,
) -> Result<BTreeMap<String, Basic>, AuthError> {
    let file = text(secret, data, "secrets-path.yaml")?;
    let entries: BTreeMap<String, serde_json::Value> =
        serde_yaml_ng::from_str(&file).map_err(|e| AuthError::Secret {
            secret: secret.to_string(),
            message: format!("secrets-path.yaml: {e}"),
        })?;
    entries
        .into_iter()
        .map(|(path, entry)| {
            let field = |name: &str| {
                entry
                    .get(name)
                    .and_then(serde_json::Value::as_str)
                    .map(String::from)
                    .ok_or_else(|| AuthError::Secret {
                        secret: secret.to_string(),
                        message: format!("secrets-path.yaml: {path}: no `{name}`"),
                    })
            };
            Ok((
                path.clone(),
                Basic {
                    username: field("username")?,
                    password: field("password")?,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn credentials_go_only_where_the_regex_lets_them() {
        let secret = data(&[("username", "u"), ("password", "p")]);
        let auth = RepoHelmAuth::new(
            Some(("helm", &secret)),
            None,
            Some("^https://charts\\.example\\.com/"),
        )
        .expect("valid");
        let for_bundle = auth.for_path("apps/web");
        assert!(for_bundle
            .for_repository("https://charts.example.com/stable")
            .is_some());
        assert!(for_bundle
            .for_repository("https://elsewhere.example.org/charts.example.com/")
            .is_none());
        let unanchored = RepoHelmAuth::new(
            Some(("helm", &secret)),
            None,
            Some("charts\\.example\\.com|oci://r"),
        )
        .expect("valid");
        for elsewhere in [
            "https://evil.example.org/?u=charts.example.com",
            "https://evil.example.org/oci://r",
        ] {
            assert!(
                unanchored.for_path("x").for_repository(elsewhere).is_none(),
                "{elsewhere}"
            );
        }
        assert_eq!(
            unanchored
                .for_path("x")
                .for_repository("oci://r/x")
                .map(Basic::header),
            Some("Basic dTpw".to_string())
        );
        let empty = RepoHelmAuth::new(Some(("helm", &secret)), None, None).expect("valid");
        assert!(empty.for_path("x").for_repository("oci://r/x").is_none());
        assert!(empty.for_path("x").held_back_for_empty_regex());
        assert!(RepoHelmAuth::new(None, None, Some("(")).is_err());
    }

    /// Fleet's `setAuthByPath`: a key naming the path wins; else the first key in lexical
    /// order that matches it as a glob, `*` not crossing a `/`.
    #[test]
    fn per_path_keys_may_be_globs() {
        let paths = data(&[(
            "secrets-path.yaml",
            "apps/*:\n  username: any-app\n  password: a\napps/web:\n  username: web\n  password: w\n\
             apps/[bc]*:\n  username: b-or-c\n  password: b\n",
        )]);
        let auth =
            RepoHelmAuth::new(None, Some(("paths", &paths)), Some("https://r")).expect("valid");
        let user = |path: &str| {
            auth.for_path(path)
                .for_repository("https://r")
                .map(|b| b.username.clone())
        };
        assert_eq!(user("apps/web").as_deref(), Some("web"));
        assert_eq!(
            user("apps/db").as_deref(),
            Some("any-app"),
            "`apps/*` sorts before `apps/[bc]*`"
        );
        assert_eq!(user("apps/db/nested"), None, "`*` does not cross a `/`");
        assert_eq!(user("tools"), None);
    }

    #[test]
    fn per_path_credentials_take_precedence() {
        let secret = data(&[("username", "u"), ("password", "p")]);
        let paths = data(&[(
            "secrets-path.yaml",
            "apps/web:\n  username: web\n  password: w\nother:\n  username: o\n  password: o\n\
             ./tools_:\n  username: t\n  password: t\n",
        )]);
        let auth = RepoHelmAuth::new(
            Some(("helm", &secret)),
            Some(("paths", &paths)),
            Some("https://r"),
        )
        .expect("valid");
        let web = auth.for_path("apps/web");
        assert_eq!(
            web.for_repository("https://r").map(|b| b.username.as_str()),
            Some("web")
        );
        // The bundle path label's form of the path finds it too.
        assert!(auth
            .for_path("apps-web")
            .for_repository("https://r")
            .is_some());
        // ...trimmed at both ends, as the label is.
        assert!(auth.for_path("tools").for_repository("https://r").is_some());
        assert!(auth
            .for_path("unlisted")
            .for_repository("https://r")
            .is_none());
        let broken = data(&[("secrets-path.yaml", "apps: {username: a}\n")]);
        let error = RepoHelmAuth::new(None, Some(("paths", &broken)), None).expect_err("password");
        assert_eq!(
            error.to_string(),
            "secret paths: secrets-path.yaml: apps: no `password`"
        );
    }
}

/// Reading a GitRepo's Helm credentials from its namespace.
#[cfg(feature = "client")]
mod read {
    use std::collections::BTreeMap;

    use fleet_api::GitRepo;
    use k8s_openapi::api::core::v1::Secret;

    use super::{AuthError, HelmAuth, RepoHelmAuth};

    /// Why a GitRepo's Helm credentials could not be read.
    #[derive(Debug, thiserror::Error)]
    pub enum ReadAuthError {
        /// A Secret could not be read, or is missing.
        #[error("secret {namespace}/{name}: {message}")]
        Read {
            /// Its namespace.
            namespace: String,
            /// Its name.
            name: String,
            /// What went wrong.
            message: String,
        },
        /// What the Secrets hold cannot be used.
        #[error(transparent)]
        Auth(#[from] AuthError),
    }

    /// The decoded data of the Secret `namespace`/`name`, or none for no name.
    async fn secret_data(
        client: &kube::Client,
        namespace: &str,
        name: Option<&str>,
    ) -> Result<Option<(String, BTreeMap<String, Vec<u8>>)>, ReadAuthError> {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Ok(None);
        };
        let failed = |message: String| ReadAuthError::Read {
            namespace: namespace.to_string(),
            name: name.to_string(),
            message,
        };
        let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
        let secret = secrets
            .get_opt(name)
            .await
            .map_err(|e| failed(e.to_string()))?
            .ok_or_else(|| failed("not found".into()))?;
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        Ok(Some((name.to_string(), data)))
    }

    impl HelmAuth {
        /// The credentials of the Secret `namespace`/`name` (a HelmOp's `helmSecretName`)
        /// for `repository` alone; none for no name.
        pub async fn read_for_repository(
            client: &kube::Client,
            namespace: &str,
            name: Option<&str>,
            repository: &str,
        ) -> Result<Self, ReadAuthError> {
            match secret_data(client, namespace, name).await? {
                Some((name, data)) => Ok(Self::for_one_repository((&name, &data), repository)?),
                None => Ok(Self::none()),
            }
        }
    }

    impl RepoHelmAuth {
        /// The Helm credentials `gitrepo` names (`helmSecretName`,
        /// `helmSecretNameForPaths`, `helmRepoURLRegex`), read from its namespace.
        pub async fn read(client: &kube::Client, gitrepo: &GitRepo) -> Result<Self, ReadAuthError> {
            let spec = &gitrepo.spec;
            let namespace = gitrepo.metadata.namespace.clone().unwrap_or_default();
            let secret = secret_data(client, &namespace, spec.helm_secret_name.as_deref()).await?;
            let for_paths = secret_data(
                client,
                &namespace,
                spec.helm_secret_name_for_paths.as_deref(),
            )
            .await?;
            Ok(Self::new(
                secret.as_ref().map(|(n, d)| (n.as_str(), d)),
                for_paths.as_ref().map(|(n, d)| (n.as_str(), d)),
                spec.helm_repo_url_regex.as_deref(),
            )?)
        }

        /// Whether `gitrepo` names any Helm credentials.
        pub fn named_by(gitrepo: &GitRepo) -> bool {
            let named = |n: &Option<String>| n.as_deref().is_some_and(|n| !n.is_empty());
            named(&gitrepo.spec.helm_secret_name) || named(&gitrepo.spec.helm_secret_name_for_paths)
        }
    }
}

#[cfg(feature = "client")]
pub use read::ReadAuthError;
