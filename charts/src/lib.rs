//! Remote Helm charts: from a Helm HTTP repository (`index.yaml`, semver ranges), from an
//! OCI registry (`oci://`, anonymous bearer tokens as public registries hand out), or from
//! a `.tgz` URL. Archives are cached by their sha256 digest, so a chart a repository lists
//! with a digest is downloaded once.

mod auth;
mod egress;

use std::path::PathBuf;

#[cfg(feature = "client")]
pub use auth::ReadAuthError;
pub use auth::{AuthError, Basic, HelmAuth, RepoHelmAuth, TlsTrust};
pub use egress::Egress;

use fleet_helm::semver::{self, Version};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The largest chart archive accepted.
pub const MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;

/// What `fleet.yaml` names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RemoteChart {
    /// `helm.repo`, for a Helm HTTP repository.
    pub repo: Option<String>,
    /// `helm.chart`: a name in `repo`, an `oci://` reference or a `.tgz` URL.
    pub chart: String,
    /// `helm.version`: a version or a range; empty means the latest release.
    pub version: Option<String>,
}

/// Errors fetching a chart.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// A request failed.
    #[error("{url}: {message}")]
    Http {
        /// The URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// Nothing matched the name or version.
    #[error("{0}")]
    NotFound(String),
    /// The target is somewhere the cache's egress rule does not go.
    #[error("{0}")]
    Refused(String),
    /// The cache directory could not be used.
    #[error("chart cache {path}: {source}")]
    Cache {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// A directory of chart archives named by digest.
#[derive(Debug, Clone)]
pub struct ChartCache {
    dir: PathBuf,
    agent: ureq::Agent,
    egress: Egress,
}

/// The most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

fn http(url: &str, error: impl std::fmt::Display) -> ChartError {
    ChartError::Http {
        url: url.to_string(),
        message: error.to_string(),
    }
}

/// Where a redirect from `from` to `location` (absolute, or absolute-path) leads.
fn redirected(from: &str, location: &str) -> Option<String> {
    if location.contains("://") {
        return Some(location.to_string());
    }
    let (scheme, rest) = from.split_once("://")?;
    let authority = rest.split('/').next()?;
    location
        .starts_with('/')
        .then(|| format!("{scheme}://{authority}{location}"))
}

/// The HTTP client for `egress`: redirects are followed by the cache, each target checked
/// against the rule, and names are resolved by a resolver that checks them too;
/// certificates are checked as `tls` says.
fn agent(egress: Egress, tls: &TlsTrust) -> ureq::Agent {
    let mut trust = ureq::tls::TlsConfig::builder().disable_verification(tls.insecure_skip_verify);
    if let Some(pem) = &tls.ca_pem {
        let roots: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
                _ => None,
            })
            .collect();
        trust = trust.root_certs(ureq::tls::RootCerts::new_with_certs(&roots));
    }
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .tls_config(trust.build())
        .build();
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        egress::CheckedResolver::new(egress),
    )
}

fn hex_digest(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

impl ChartCache {
    /// A cache in `dir`, created when first written.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let egress = Egress::default();
        Self {
            dir: dir.into(),
            agent: agent(egress, &TlsTrust::default()),
            egress,
        }
    }

    /// This cache, its requests checking certificates as `tls` says.
    fn trusting(&self, tls: &TlsTrust) -> std::borrow::Cow<'_, Self> {
        if *tls == TlsTrust::default() {
            return std::borrow::Cow::Borrowed(self);
        }
        std::borrow::Cow::Owned(Self {
            agent: agent(self.egress, tls),
            ..self.clone()
        })
    }

    /// The same cache, fetching only from where `egress` allows (every request, each
    /// redirect it answers with, and every address a name resolves to when connecting).
    pub fn with_egress(mut self, egress: Egress) -> Self {
        self.egress = egress;
        self.agent = agent(egress, &TlsTrust::default());
        self
    }

    /// The archive of a chart, from the cache or the network, with the credentials `auth`
    /// gives for its repository. A failure without credentials that an empty
    /// `helmRepoURLRegex` held back says so.
    pub fn fetch(&self, chart: &RemoteChart, auth: &HelmAuth) -> Result<Vec<u8>, ChartError> {
        let cache = self.trusting(auth.tls());
        cache.fetch_with(chart, auth).map_err(|error| match error {
            ChartError::Http { url, message } if auth.held_back_for_empty_regex() => {
                ChartError::Http {
                    url,
                    message: format!("{message}: {}", auth::EMPTY_REGEX_HINT),
                }
            }
            other => other,
        })
    }

    fn fetch_with(&self, chart: &RemoteChart, auth: &HelmAuth) -> Result<Vec<u8>, ChartError> {
        let version = chart.version.clone().unwrap_or_default();
        let repo = chart.repo.as_deref().filter(|r| !r.is_empty());
        let credentials = credentials(chart, auth);
        if let Some(reference) = chart.chart.strip_prefix("oci://") {
            return self.oci(reference, &version, &credentials);
        }
        match repo {
            Some(repo) => self.repository(repo, &chart.chart, &version, &credentials),
            None if chart.chart.contains("://") => self.download(&chart.chart, None, &credentials),
            None => Err(ChartError::NotFound(format!(
                "chart `{}` is neither local, nor in a repository, nor a URL",
                chart.chart
            ))),
        }
    }

    fn cached(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.dir.join(format!("sha256-{digest}.tgz"));
        let bytes = std::fs::read(path).ok()?;
        (hex_digest(&bytes) == digest).then_some(bytes)
    }

    fn store(&self, bytes: &[u8]) -> Result<(), ChartError> {
        let cache = |source| ChartError::Cache {
            path: self.dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(cache)?;
        let path = self.dir.join(format!("sha256-{}.tgz", hex_digest(bytes)));
        let partial = path.with_extension("partial");
        std::fs::write(&partial, bytes).map_err(cache)?;
        std::fs::rename(&partial, &path).map_err(cache)
    }

    fn get(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<(u16, String, Vec<u8>), ChartError> {
        let mut target = url.to_string();
        let mut response = self.get_one(&target, headers)?;
        for _ in 0..MAX_REDIRECTS {
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok());
            let Some(next) = location.filter(|_| response.status().is_redirection()) else {
                break;
            };
            target = redirected(&target, next).ok_or_else(|| http(url, "bad redirect"))?;
            // Credentials go to the host they were given for, not to where it sends us.
            let same_host = host_of(&target) == host_of(url);
            response = self.get_one(&target, if same_host { headers } else { &[] })?;
        }
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_CHART_BYTES)
            .read_to_vec()
            .map_err(|e| http(url, e))?;
        Ok((status, challenge, body))
    }

    /// One request to `url`, if the egress rule allows it.
    fn get_one(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<ureq::http::Response<ureq::Body>, ChartError> {
        self.egress.check(url).map_err(ChartError::Refused)?;
        let mut request = self.agent.get(url);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        request.call().map_err(|e| http(url, e))
    }

    /// A file over HTTP(S) (a remote Kustomize resource), not cached: the caller keeps it
    /// with the commit that named it.
    pub fn fetch_file(&self, url: &str) -> Result<Vec<u8>, ChartError> {
        self.ok(url, &[])
    }

    fn ok(&self, url: &str, headers: &[(&str, String)]) -> Result<Vec<u8>, ChartError> {
        match self.get(url, headers)? {
            (200, _, body) => Ok(body),
            (status, _, _) => Err(http(url, format!("HTTP {status}"))),
        }
    }

    /// Downloads an archive, checking the announced digest and keeping it in the cache.
    fn download(
        &self,
        url: &str,
        digest: Option<&str>,
        headers: &[(&str, String)],
    ) -> Result<Vec<u8>, ChartError> {
        if let Some(bytes) = digest.and_then(|d| self.cached(d)) {
            return Ok(bytes);
        }
        let bytes = self.ok(url, headers)?;
        let actual = hex_digest(&bytes);
        // Helm and Fleet take the archive whatever the index announces (Fleet's own fixture
        // repository announces stale digests); a mismatch is worth a warning, not a failure.
        if let Some(expected) = digest.filter(|d| !d.is_empty() && *d != actual) {
            tracing::warn!(
                %url,
                %expected,
                %actual,
                "the chart archive's digest is not the one its repository's index announces"
            );
        }
        self.store(&bytes)?;
        Ok(bytes)
    }

    fn repository(
        &self,
        repo: &str,
        name: &str,
        version: &str,
        credentials: &[(&str, String)],
    ) -> Result<Vec<u8>, ChartError> {
        let base = repo.trim_end_matches('/');
        let entry = self.index_entry(base, name, version, credentials)?;
        let url = entry.url.ok_or_else(|| {
            ChartError::NotFound(format!("no URLs found for chart {name}-{}", entry.version))
        })?;
        let url = if url.contains("://") {
            url
        } else {
            format!("{base}/{url}")
        };
        // As Helm does, the repository's credentials go to archives on its own host only.
        let same_host = host_of(&url) == host_of(base);
        let credentials = if same_host { credentials } else { &[] };
        self.download(&url, entry.digest.as_deref(), credentials)
    }

    /// The entry of `name` in the repository at `base` whose version is the highest
    /// `version` (a version or a range; empty for the newest release) admits.
    fn index_entry(
        &self,
        base: &str,
        name: &str,
        version: &str,
        credentials: &[(&str, String)],
    ) -> Result<IndexEntry, ChartError> {
        refuse_improper(version)?;
        let index_url = format!("{base}/index.yaml");
        let text = String::from_utf8(self.ok(&index_url, credentials)?)
            .map_err(|e| http(&index_url, e))?;
        // The repository's author writes it: read with a bound on what aliases expand to.
        let index =
            fleet_objects::yaml_value::read_document(&text).map_err(|e| http(&index_url, e))?;
        let entries = index
            .pointer(&format!("/entries/{name}"))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                ChartError::NotFound(format!(
                    "no chart name found: chart `{name}` is not in {index_url}"
                ))
            })?;
        let candidates = entries.iter().filter_map(|e| {
            let text = e.get("version")?.as_str()?;
            Some((Version::parse(text).ok()?, e))
        });
        let (found, entry) = best(candidates, version).ok_or_else(|| {
            ChartError::NotFound(format!(
                "no chart version found for {name}-{version} in {index_url}: no version matches `{version}`"
            ))
        })?;
        Ok(IndexEntry {
            version: entry
                .get("version")
                .and_then(Value::as_str)
                .map_or_else(|| found.to_string(), str::to_string),
            url: entry
                .pointer("/urls/0")
                .and_then(Value::as_str)
                .map(str::to_string),
            digest: entry
                .get("digest")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// The version of `chart` its `version` (a version or a range; empty for the newest
    /// release) resolves to in its repository or registry now, with the credentials `auth`
    /// gives: what a HelmOp deploys, looked at again to follow new releases. A chart named
    /// by a URL has no versions to choose from: its `version` is returned as given.
    pub fn resolve_version(
        &self,
        chart: &RemoteChart,
        auth: &HelmAuth,
    ) -> Result<String, ChartError> {
        let version = chart.version.clone().unwrap_or_default();
        let repo = chart.repo.as_deref().filter(|r| !r.is_empty());
        let credentials = credentials(chart, auth);
        let cache = self.trusting(auth.tls());
        if let Some(reference) = chart.chart.strip_prefix("oci://") {
            let mut granted = Vec::new();
            return cache
                .oci_tag(reference, &version, &credentials, &mut granted)
                .map(|(_, tag)| tag);
        }
        match repo {
            Some(repo) => Ok(cache
                .index_entry(
                    repo.trim_end_matches('/'),
                    &chart.chart,
                    &version,
                    &credentials,
                )?
                .version),
            None => Ok(version),
        }
    }

    fn oci(
        &self,
        reference: &str,
        version: &str,
        credentials: &[(&str, String)],
    ) -> Result<Vec<u8>, ChartError> {
        let mut auth: Vec<(&str, String)> = Vec::new();
        let (base, tag) = self.oci_tag(reference, version, credentials, &mut auth)?;
        let url = format!("{base}/manifests/{tag}");
        let accept = (
            "Accept",
            "application/vnd.oci.image.manifest.v1+json".to_string(),
        );
        let body = self.authorized(&url, &[accept], credentials, &mut auth)?;
        let manifest: Value = serde_json::from_slice(&body).map_err(|e| http(&url, e))?;
        let digest = manifest
            .get("layers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|l| {
                l.get("mediaType").and_then(Value::as_str)
                    == Some("application/vnd.cncf.helm.chart.content.v1.tar+gzip")
            })
            .and_then(|l| l.get("digest").and_then(Value::as_str))
            .ok_or_else(|| ChartError::NotFound(format!("{url} holds no Helm chart layer")))?;
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.download(&format!("{base}/blobs/{digest}"), Some(hex), &auth)
    }

    /// The registry's base URL for `reference`, and the tag `version` (or the reference's
    /// own pin) resolves to; `auth` keeps the token a challenge gave.
    fn oci_tag<'h>(
        &self,
        reference: &str,
        version: &str,
        credentials: &[(&'h str, String)],
        auth: &mut Vec<(&'h str, String)>,
    ) -> Result<(String, String), ChartError> {
        let (host, repository, pinned) = split_oci_reference(reference).ok_or_else(|| {
            ChartError::NotFound(format!("oci://{reference} names no repository"))
        })?;
        if let Some(pinned) = pinned.filter(|p| !version.is_empty() && p != &version) {
            return Err(ChartError::NotFound(format!(
                "chart reference and version mismatch: {version} is not {pinned}"
            )));
        }
        refuse_improper(version)?;
        let local = host.starts_with("localhost") || host.starts_with("127.0.0.1");
        let base = format!(
            "{}://{host}/v2/{repository}",
            if local { "http" } else { "https" }
        );
        let tag = if let Some(pinned) = pinned {
            pinned.to_string()
        } else if Version::parse(version).is_ok_and(|_| !is_range(version)) {
            version.to_string()
        } else {
            let url = format!("{base}/tags/list");
            let body = self.authorized(&url, &[], credentials, auth)?;
            let tags: Value = serde_json::from_slice(&body).map_err(|e| http(&url, e))?;
            let candidates = tags
                .get("tags")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str())
                .filter_map(|t| Some((Version::parse(t).ok()?, t)));
            best(candidates, version)
                .map(|(_, t)| t.to_string())
                .ok_or_else(|| {
                    ChartError::NotFound(format!(
                        "could not find tag matching constraint `{version}` in registry oci://{reference}"
                    ))
                })?
        };
        Ok((base, tag))
    }

    /// A GET that answers a registry's challenge once: a bearer challenge with a token
    /// (asked for with `credentials`, anonymous without), a basic one with `credentials`.
    fn authorized<'h>(
        &self,
        url: &str,
        headers: &[(&'h str, String)],
        credentials: &[(&'h str, String)],
        auth: &mut Vec<(&'h str, String)>,
    ) -> Result<Vec<u8>, ChartError> {
        let mut all: Vec<(&str, String)> = headers.to_vec();
        all.extend(auth.iter().cloned());
        let (status, challenge, body) = self.get(url, &all)?;
        if status == 200 {
            return Ok(body);
        }
        if status == 401 && challenge.starts_with("Basic") && !credentials.is_empty() {
            auth.extend(credentials.iter().cloned());
            all.extend(credentials.iter().cloned());
            return self.ok(url, &all);
        }
        if status != 401 || !challenge.starts_with("Bearer ") {
            return Err(http(url, format!("HTTP {status}")));
        }
        let field = |name: &str| {
            challenge
                .split(',')
                .find_map(|part| {
                    part.trim()
                        .trim_start_matches("Bearer ")
                        .strip_prefix(&format!("{name}="))
                })
                .map(|v| v.trim_matches('"').to_string())
        };
        let realm =
            field("realm").ok_or_else(|| http(url, "the bearer challenge names no realm"))?;
        let token_url = format!(
            "{realm}?service={}&scope={}",
            field("service").unwrap_or_default(),
            field("scope").unwrap_or_default()
        );
        let token: Value = serde_json::from_slice(&self.ok(&token_url, credentials)?)
            .map_err(|e| http(&token_url, e))?;
        let token = token
            .get("token")
            .or_else(|| token.get("access_token"))
            .and_then(Value::as_str)
            .ok_or_else(|| http(&token_url, "no token in the answer"))?;
        auth.push(("Authorization", format!("Bearer {token}")));
        all.extend(auth.iter().cloned());
        self.ok(url, &all)
    }
}

/// An OCI reference without its scheme, in its parts: the registry (`host[:port]`), the
/// repository, and the tag or digest it pins, if any (`r.io/charts/web:1.2.0`,
/// `r.io/charts/web@sha256:...`).
fn split_oci_reference(reference: &str) -> Option<(&str, &str, Option<&str>)> {
    let (host, path) = reference.split_once('/')?;
    let (repository, pinned) = match path.split_once('@') {
        Some((repository, digest)) => (repository, Some(digest)),
        None => {
            let start = path.rfind('/').map_or(0, |slash| slash + 1);
            match path[start..].split_once(':') {
                Some((name, tag)) => (&path[..start + name.len()], Some(tag)),
                None => (path, None),
            }
        }
    };
    (!repository.is_empty() && pinned != Some("")).then_some((host, repository, pinned))
}

/// The `host[:port]` of a URL.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or_default()
}

/// The `Authorization` header `auth` gives for `chart`'s repository (or its own URL), if
/// any may go there.
fn credentials(chart: &RemoteChart, auth: &HelmAuth) -> Vec<(&'static str, String)> {
    let repo = chart.repo.as_deref().filter(|r| !r.is_empty());
    auth.for_repository(repo.unwrap_or(&chart.chart))
        .map(|basic| ("Authorization", basic.header()))
        .into_iter()
        .collect()
}

/// An entry of a repository's index: the version it holds, where its archive is, and
/// the digest announced for it.
struct IndexEntry {
    version: String,
    url: Option<String>,
    digest: Option<String>,
}

/// Refuses a `version` that is neither a version nor a range, in Helm's words.
fn refuse_improper(version: &str) -> Result<(), ChartError> {
    let probe = Version::parse("0.0.0").map_err(|e| ChartError::NotFound(e.to_string()))?;
    if version.trim().is_empty() || semver::satisfies(&probe, version).is_ok() {
        Ok(())
    } else {
        Err(ChartError::NotFound(format!(
            "improper constraint: \"{version}\""
        )))
    }
}

fn is_range(version: &str) -> bool {
    version.is_empty() || version.contains(['^', '~', '<', '>', '=', '*', 'x', ',', ' ', '|'])
}

/// The highest version matching `constraint`; with no constraint, the highest release.
fn best<T>(
    candidates: impl Iterator<Item = (Version, T)>,
    constraint: &str,
) -> Option<(Version, T)> {
    candidates
        .filter(|(v, _)| {
            if constraint.trim().is_empty() {
                !v.is_prerelease()
            } else {
                semver::satisfies(v, constraint).unwrap_or(false)
            }
        })
        .max_by(|(a, _), (b, _)| semver::compare(a, b))
}

/// Errors getting the remote chart a bundle's options name.
#[derive(Debug, thiserror::Error)]
pub enum FetchForError {
    /// The download failed.
    #[error("fetching Helm chart `{chart}`: {source}")]
    Fetch {
        /// The chart as fleet.yaml names it.
        chart: String,
        /// The cause.
        source: ChartError,
    },
    /// The archive is not a chart.
    #[error(transparent)]
    Chart(#[from] fleet_helm::Error),
    /// The bundle's kustomizations cannot be read.
    #[error(transparent)]
    Kustomization(#[from] fleet_renderer::RenderError),
}

/// Downloads (or takes from `cache`) the remote chart that `options` name, if any, ready for
/// the renderer, which stays offline.
pub fn fetch_for(
    cache: &ChartCache,
    options: &fleet_api::BundleDeploymentOptions,
    auth: &HelmAuth,
) -> Result<fleet_helm::FetchedCharts, FetchForError> {
    let mut fetched = fleet_helm::FetchedCharts::default();
    if let Some(remote) = fleet_renderer::bundle::remote_chart(options) {
        fetch_into(cache, remote, auth, &mut fetched)?;
    }
    Ok(fetched)
}

/// [`fetch_for`], plus the charts the bundle's kustomizations take from repositories
/// (`helmCharts` with `repo`), so that Kustomize bundles render offline too, and the
/// dependencies its local chart lacks (as `helm dependency update` fetches them).
pub fn fetch_for_bundle(
    cache: &ChartCache,
    root: &fleet_renderer::RepoRoot,
    bundle: &fleet_renderer::bundle::BundleDir,
    fleet: &fleet_api::FleetYaml,
    options: &fleet_api::BundleDeploymentOptions,
    auth: &HelmAuth,
) -> Result<fleet_helm::FetchedCharts, FetchForError> {
    let mut fetched = fetch_for(cache, options, auth)?;
    for remote in fleet_renderer::bundle::kustomize_needs(root, bundle, fleet)?.charts {
        fetch_into(cache, remote, auth, &mut fetched)?;
    }
    for remote in fleet_renderer::bundle::dependency_needs(root, bundle, options)? {
        fetch_into(cache, remote, auth, &mut fetched)?;
    }
    Ok(fetched)
}

fn fetch_into(
    cache: &ChartCache,
    remote: fleet_helm::RemoteChartRef,
    auth: &HelmAuth,
    fetched: &mut fleet_helm::FetchedCharts,
) -> Result<(), FetchForError> {
    let request = RemoteChart {
        repo: Some(remote.repo.clone()).filter(|r| !r.is_empty()),
        chart: remote.chart.clone(),
        version: Some(remote.version.clone()).filter(|v| !v.is_empty()),
    };
    let archive = cache
        .fetch(&request, auth)
        .map_err(|source| FetchForError::Fetch {
            chart: remote.chart.clone(),
            source,
        })?;
    let chart = fleet_helm::Chart::from_archive(&remote.chart, &archive)?;
    fetched.insert(remote, chart);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{agent, split_oci_reference, Egress, TlsTrust};

    /// The check before a request is not the only one: a name that resolves to this
    /// machine when the request connects (rebound after the check) is refused there, and
    /// the server is never reached.
    #[test]
    fn a_public_client_refuses_to_connect_to_this_machine_whatever_the_check_before_said() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!(
            "http://localhost:{}/index.yaml",
            listener.local_addr().expect("addr").port()
        );
        let error = agent(Egress::Public, &TlsTrust::default())
            .get(&url)
            .call()
            .expect_err("refused");
        assert!(
            error.to_string().contains("an address of this machine"),
            "{error}"
        );
        assert!(listener.accept().is_err(), "the server was reached");
        let reached = std::thread::spawn(move || {
            listener.set_nonblocking(false).expect("blocking");
            listener.accept().is_ok()
        });
        let _ = agent(Egress::Anywhere, &TlsTrust::default())
            .get(&url)
            .config()
            .timeout_global(Some(std::time::Duration::from_secs(2)))
            .build()
            .call();
        assert!(
            reached.join().expect("thread"),
            "an unrestricted client connects"
        );
    }

    #[test]
    fn an_oci_reference_splits_into_registry_repository_and_pin() {
        let cases = [
            ("r.io/web", Some(("r.io", "web", None))),
            (
                "r.io:5000/charts/web:1.2.0",
                Some(("r.io:5000", "charts/web", Some("1.2.0"))),
            ),
            (
                "r.io/charts/web@sha256:ab",
                Some(("r.io", "charts/web", Some("sha256:ab"))),
            ),
            ("localhost:5000/web", Some(("localhost:5000", "web", None))),
            ("r.io", None),
            ("r.io/", None),
            ("r.io/web:", None),
        ];
        for (reference, parts) in cases {
            assert_eq!(split_oci_reference(reference), parts, "{reference}");
        }
    }
}
