//! A Helm bundle rendered in the member cluster, as Fleet's agent renders every chart,
//! when its output depends on that cluster: values read from the member's ConfigMaps and
//! Secrets (`helm.valuesFrom`), `.Capabilities` from the member's version and discovery,
//! and `lookup` answered by the member. The controller sends the bundle's files and any
//! fetched chart instead of resources; the pure renderer does the rest here.

use std::rc::Rc;
use std::sync::Arc;

use fleet_api::{BundleDeployment, BundleDeploymentOptions, FleetYaml, MemberRender, Payload};
use fleet_helm::template::Lookup;
use fleet_helm::ClusterLookup;
use fleet_helm::FetchedCharts;
use fleet_renderer::bundle::{self, BundleDir, ClusterInfo, MemberData, Sources};
use fleet_renderer::RepoRoot;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DynamicObject, ListParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use crate::served::ServedResources;
use crate::{Agent, Error};

/// The key `valuesFrom` reads when it names none, as Fleet's.
const DEFAULT_VALUES_KEY: &str = "values.yaml";

/// Renders `render` for `deployment` in the agent's cluster.
pub async fn render(
    agent: &Agent,
    deployment: &BundleDeployment,
    render: &MemberRender,
) -> Result<Payload, Error> {
    let options = deployment.spec.options.clone().unwrap_or_default();
    let values_from = values_from(agent, &options).await?;
    let kube_version = agent.local.apiserver_version().await?.git_version;
    let resources = agent.served_resources().await?;
    let api_versions = api_versions(&resources);
    let lookup = MemberLookup {
        runtime: tokio::runtime::Handle::current(),
        client: agent.local.clone(),
        resources,
    };
    let render = render.clone();
    let name = deployment.name_any();
    let bundle_name = bundle_name(&render, deployment);
    tokio::task::spawn_blocking(move || {
        let member = MemberData {
            values_from,
            kube_version: Some(kube_version),
            api_versions: Some(api_versions),
            lookup: Some(ClusterLookup(Rc::new(lookup))),
        };
        render_files(&render, &bundle_name, options, &member)
    })
    .await
    .map_err(|e| Error::Render(format!("rendering {name}: {e}")))?
}

/// The name the release is derived from: the Bundle's, which a Content written by Rancher
/// Fleet does not carry; its BundleDeployment is named after its Bundle.
pub fn bundle_name(render: &MemberRender, deployment: &BundleDeployment) -> String {
    if render.bundle_name.is_empty() {
        deployment.name_any()
    } else {
        render.bundle_name.clone()
    }
}

/// Writes the bundle's files to a scratch directory and renders them for the Bundle
/// `bundle_name` with `options`, the ones in force for the cluster, and what `member` knows.
pub fn render_files(
    render: &MemberRender,
    bundle_name: &str,
    options: BundleDeploymentOptions,
    member: &MemberData,
) -> Result<Payload, Error> {
    let failed = |e: &dyn std::fmt::Display| Error::Render(e.to_string());
    let scratch = tempfile::Builder::new()
        .prefix("fleet-agent-render-")
        .tempdir()
        .map_err(|e| failed(&e))?;
    let top = scratch.path().join("bundle");
    bundle::write_files(&render.files, &top).map_err(|e| failed(&e))?;
    let root = RepoRoot::new(&top).map_err(|e| failed(&e))?;
    let dir = BundleDir {
        dir: root.path().to_path_buf(),
        rel: ".".into(),
        fleet_yaml: None,
        left_out: Vec::new(),
        options: None,
    };
    let cluster: ClusterInfo =
        serde_json::from_value(render.cluster.clone()).map_err(|e| failed(&e))?;
    let fetched = FetchedCharts::from_json(&render.charts).map_err(|e| failed(&e))?;
    // The options are the ones in force for this cluster already.
    let fleet = FleetYaml {
        options,
        ..FleetYaml::default()
    };
    let sources = Sources {
        fetched: Some(&fetched),
        member: Some(member),
        // The controller templated the values already, as Fleet's controller does.
        preprocess: false,
        ..Default::default()
    };
    let variant = bundle::render_with(&root, &dir, bundle_name, &fleet, &cluster, &sources)
        .map_err(|e| failed(&e))?;
    Ok(variant.payload())
}

/// The values of every `helm.valuesFrom` entry, in order (a ConfigMap's before a Secret's
/// within one entry, as Fleet merges them), read in the release's namespace unless the
/// entry names one.
async fn values_from(
    agent: &Agent,
    options: &BundleDeploymentOptions,
) -> Result<Vec<Value>, Error> {
    let Some(helm) = &options.helm else {
        return Ok(Vec::new());
    };
    let (_, release_namespace) = bundle::release_of(options, "");
    let mut found = Vec::new();
    for entry in &helm.values_from {
        let sources = [
            (Source::ConfigMap, &entry.config_map_key_ref),
            (Source::Secret, &entry.secret_key_ref),
        ];
        for (source, selector) in sources {
            if let Some(selector) = selector {
                found.push(source.read(agent, selector, &release_namespace).await?);
            }
        }
    }
    Ok(found)
}

/// Where a `valuesFrom` entry reads.
#[derive(Clone, Copy)]
enum Source {
    ConfigMap,
    Secret,
}

impl Source {
    /// The values under the selector's key (default `values.yaml`), in its namespace
    /// (default the release's).
    async fn read(
        self,
        agent: &Agent,
        selector: &fleet_api::KeySelector,
        release_namespace: &str,
    ) -> Result<Value, Error> {
        let namespace = selector.namespace.as_deref().unwrap_or(release_namespace);
        let key = selector.key.as_deref().unwrap_or(DEFAULT_VALUES_KEY);
        let name = &selector.name;
        let kind = match self {
            Source::ConfigMap => "configmap",
            Source::Secret => "secret",
        };
        let unreadable = |e: kube::Error| {
            Error::Invalid(format!(
                "valuesFrom {kind} {namespace}/{name} cannot be read: {e}"
            ))
        };
        let text = match self {
            Source::ConfigMap => Api::<ConfigMap>::namespaced(agent.local.clone(), namespace)
                .get(name)
                .await
                .map_err(unreadable)?
                .data
                .and_then(|d| d.get(key).cloned()),
            Source::Secret => Api::<Secret>::namespaced(agent.local.clone(), namespace)
                .get(name)
                .await
                .map_err(unreadable)?
                .data
                .and_then(|d| {
                    d.get(key)
                        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                }),
        };
        let text = text.ok_or_else(|| {
            Error::Invalid(format!(
                "key {key} is missing from {kind} {namespace}/{name}, can't use it in valuesFrom"
            ))
        })?;
        let parsed = fleet_objects::yaml_value::read_document(&text).map_err(|e| {
            Error::Invalid(format!(
                "valuesFrom {kind} {namespace}/{name} does not hold YAML values: {e}"
            ))
        })?;
        Ok(if parsed.is_null() { json!({}) } else { parsed })
    }
}

/// `.Capabilities.APIVersions` as Helm builds it from discovery: every `group/version`,
/// and every `group/version/Kind`.
fn api_versions(resources: &ServedResources) -> Vec<String> {
    let mut versions: Vec<String> = resources
        .keys()
        .flat_map(|(api_version, kind)| [api_version.clone(), format!("{api_version}/{kind}")])
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// `lookup` answered by the member cluster, from the blocking thread the render runs on.
struct MemberLookup {
    runtime: tokio::runtime::Handle,
    client: kube::Client,
    resources: Arc<ServedResources>,
}

impl Lookup for MemberLookup {
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Value, String> {
        let (resource, namespaced) = self
            .resources
            .get(&(api_version.to_string(), kind.to_string()))
            .ok_or_else(|| {
                format!("unable to get apiresource from unstructured: {api_version}, Kind={kind}")
            })?;
        let api: Api<DynamicObject> = match (namespaced, namespace.is_empty()) {
            (true, false) => Api::namespaced_with(self.client.clone(), namespace, resource),
            _ => Api::all_with(self.client.clone(), resource),
        };
        self.runtime.block_on(async {
            if name.is_empty() {
                let list = api
                    .list(&ListParams::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let items: Vec<Value> = list
                    .items
                    .iter()
                    .filter_map(|o| serde_json::to_value(o).ok())
                    .collect();
                return Ok(
                    json!({"apiVersion": "v1", "kind": format!("{kind}List"), "items": items}),
                );
            }
            match api.get_opt(name).await.map_err(|e| e.to_string())? {
                Some(object) => serde_json::to_value(&object).map_err(|e| e.to_string()),
                None => Ok(json!({})),
            }
        })
    }

    /// Resolves `name` where the agent runs (the member cluster), as Helm's
    /// `getHostByName` with DNS lookups on: the first address, or an error naming the host.
    fn host_by_name(&self, name: &str) -> Result<String, String> {
        use std::net::ToSocketAddrs;
        let mut addresses = (name, 0)
            .to_socket_addrs()
            .map_err(|e| format!("lookup {name}: {e}"))?;
        addresses
            .next()
            .map(|a| a.ip().to_string())
            .ok_or_else(|| format!("lookup {name}: no such host"))
    }
}
