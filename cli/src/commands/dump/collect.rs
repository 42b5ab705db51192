//! What a dump holds, chosen as Rancher Fleet chooses it: Fleet's objects of the namespace
//! (or all), the BundleDeployments of its Bundles wherever they are, the Contents and
//! Secrets asked for, and the events of the system namespaces and the dumped one.

use std::collections::BTreeSet;

use anyhow::{bail, Context as _, Result};
use fleet_api::labels::{BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL, HELMOP_LABEL, REPO_NAME_LABEL};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use super::{Include, Only, Options};

/// Namespaces whose events and Secrets are always dumped.
const SYSTEM_NAMESPACES: [&str; 4] = [
    "default",
    "kube-system",
    "cattle-fleet-system",
    "cattle-fleet-local-system",
];

/// The label naming the Content a BundleDeployment deploys, in Fleet.
const CONTENT_NAME_LABEL: &str = "fleet.cattle.io/content-name";

/// The namespaced Fleet kinds listed beside GitRepos and Bundles, in the archive's order
/// (the kinds a hub does not serve have no entries).
const SURROUNDING_KINDS: [(&str, &str); 5] = [
    ("Cluster", "clusters"),
    ("ClusterGroup", "clustergroups"),
    ("BundleNamespaceMapping", "bundlenamespacemappings"),
    ("GitRepoRestriction", "gitreporestrictions"),
    ("Policy", "policies"),
];

/// The archive's files, by name, in Fleet's order.
pub(super) async fn entries(
    client: &kube::Client,
    options: &Options,
) -> Result<Vec<(String, Vec<u8>)>> {
    let lister = Lister {
        client,
        page: options.page,
    };
    let namespace = options.namespace.as_deref();
    // A filter needs a namespace (the flags are checked so).
    let only = options.only.as_ref().zip(namespace);
    let mut out = Entries::default();

    let gitrepos = lister
        .limited("GitRepo", "gitrepos", only, namespace)
        .await?;
    let bundles = match (only, namespace) {
        (Some((Only::Bundle(name), ns)), _) => {
            match lister.get("Bundle", "bundles", ns, name).await? {
                Some(bundle) => vec![bundle],
                None => bail!("bundle {name:?} does not exist in namespace {ns:?}"),
            }
        }
        (Some((Only::GitRepo(name), ns)), _) => {
            lister
                .list(
                    "Bundle",
                    "bundles",
                    Some(ns),
                    Some(&format!("{REPO_NAME_LABEL}={name}")),
                )
                .await?
        }
        (Some((Only::HelmOp(name), ns)), _) => {
            lister
                .list(
                    "Bundle",
                    "bundles",
                    Some(ns),
                    Some(&format!("{HELMOP_LABEL}={name}")),
                )
                .await?
        }
        (None, ns) => lister.list("Bundle", "bundles", ns, None).await?,
    };
    out.objects("gitrepos", &gitrepos)?;
    out.objects("bundles", &bundles)?;
    let mut cluster_namespaces = BTreeSet::new();
    for (kind, plural) in SURROUNDING_KINDS {
        let listed = lister.list(kind, plural, namespace, None).await?;
        if kind == "Cluster" {
            cluster_namespaces.extend(listed.iter().map(|c| text(c, "/metadata/namespace")));
        }
        out.objects(plural, &listed)?;
    }

    let bundle_names: BTreeSet<String> =
        bundles.iter().map(|b| text(b, "/metadata/name")).collect();
    let deployments = match namespace {
        None => {
            lister
                .list("BundleDeployment", "bundledeployments", None, None)
                .await?
        }
        Some(_) if bundle_names.is_empty() => Vec::new(),
        Some(ns) => {
            let selector = format!("{BUNDLE_NAMESPACE_LABEL}={ns}");
            let listed = lister
                .list(
                    "BundleDeployment",
                    "bundledeployments",
                    None,
                    Some(&selector),
                )
                .await?;
            listed
                .into_iter()
                .filter(|d| bundle_names.contains(&text(d, &label_pointer(BUNDLE_NAME_LABEL))))
                .collect()
        }
    };
    out.objects("bundledeployments", &deployments)?;
    let helmops = lister.limited("HelmOp", "helmops", only, namespace).await?;
    out.objects("helmops", &helmops)?;

    if options.contents != Include::No {
        let mut contents = lister.list("Content", "contents", None, None).await?;
        if namespace.is_some() {
            let deployed: BTreeSet<String> = deployments.iter().map(content_of).collect();
            contents.retain(|c| deployed.contains(&text(c, "/metadata/name")));
        }
        if options.contents == Include::MetadataOnly {
            for content in &mut contents {
                content["content"] = Value::Null;
            }
        }
        for content in &contents {
            out.push(
                format!("contents_{}", text(content, "/metadata/name")),
                yaml(content)?,
            );
        }
    }

    let dumped_namespaces: Vec<String> = match namespace {
        None => {
            let mut all: BTreeSet<String> =
                SYSTEM_NAMESPACES.iter().map(|n| n.to_string()).collect();
            all.extend(cluster_namespaces);
            all.into_iter().collect()
        }
        Some(ns) => {
            let mut all: Vec<String> = SYSTEM_NAMESPACES.iter().map(|n| n.to_string()).collect();
            if !all.iter().any(|n| n == ns) {
                all.push(ns.to_string());
            }
            all
        }
    };
    if options.secrets != Include::No {
        let named = secret_names(&gitrepos, &helmops, &bundles);
        for ns in &dumped_namespaces {
            if namespace.is_some() && named.is_empty() {
                break;
            }
            let system = SYSTEM_NAMESPACES.contains(&ns.as_str());
            let mut secrets = lister
                .list_core::<k8s_openapi::api::core::v1::Secret>(ns)
                .await?;
            if namespace.is_some() && !system {
                secrets.retain(|s| named.contains(&text(s, "/metadata/name")));
            }
            for mut secret in secrets {
                if options.secrets == Include::MetadataOnly {
                    if let Some(object) = secret.as_object_mut() {
                        object.remove("data");
                        object.remove("stringData");
                    }
                }
                let name = format!("secrets_{ns}_{}", text(&secret, "/metadata/name"));
                out.push(name, yaml(&secret)?);
            }
        }
    }
    for ns in &dumped_namespaces {
        let events = lister
            .list_core::<k8s_openapi::api::core::v1::Event>(ns)
            .await?;
        if events.is_empty() {
            continue;
        }
        let lines: Vec<String> = events.iter().map(Value::to_string).collect();
        out.push(format!("events_{ns}"), lines.join("\n").into_bytes());
    }
    Ok(out.0)
}

/// The archive's files so far.
#[derive(Default)]
struct Entries(Vec<(String, Vec<u8>)>);

impl Entries {
    fn push(&mut self, name: String, bytes: Vec<u8>) {
        self.0.push((name, bytes));
    }

    /// Namespaced Fleet objects, each as `<plural>_<namespace>_<name>`.
    fn objects(&mut self, plural: &str, objects: &[Value]) -> Result<()> {
        for object in objects {
            let name = format!(
                "{plural}_{}_{}",
                text(object, "/metadata/namespace"),
                text(object, "/metadata/name")
            );
            self.push(name, yaml(object)?);
        }
        Ok(())
    }
}

/// Lists objects for the dump, `page` at a time.
struct Lister<'a> {
    client: &'a kube::Client,
    page: u32,
}

impl Lister<'_> {
    fn api(
        &self,
        kind: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> (Api<DynamicObject>, ApiResource) {
        let gvk = GroupVersionKind::gvk(fleet_api::GROUP, fleet_api::VERSION, kind);
        let resource = ApiResource {
            plural: plural.to_string(),
            ..ApiResource::from_gvk(&gvk)
        };
        let api = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        (api, resource)
    }

    /// Every `kind` object (in `namespace`, matching `selector`); none where the cluster
    /// does not serve the kind.
    async fn list(
        &self,
        kind: &str,
        plural: &str,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Value>> {
        let (api, resource) = self.api(kind, plural, namespace);
        let mut params = ListParams::default();
        if let Some(selector) = selector {
            params = params.labels(selector);
        }
        let mut out = Vec::new();
        loop {
            if self.page > 0 {
                params = params.limit(self.page);
            }
            let listed = match api.list(&params).await {
                Ok(listed) => listed,
                Err(kube::Error::Api(response)) if response.code == 404 => return Ok(Vec::new()),
                Err(error) => return Err(error).with_context(|| format!("listing {plural}")),
            };
            for object in listed.items {
                out.push(with_type(serde_json::to_value(object)?, &resource));
            }
            match listed.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => params = params.continue_token(&next),
                None => return Ok(out),
            }
        }
    }

    /// The GitRepos or HelmOps of a dump: the one a filter of their kind names, none under
    /// another filter, else those of `namespace` (or all).
    async fn limited(
        &self,
        kind: &str,
        plural: &str,
        only: Option<(&Only, &str)>,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>> {
        match only {
            Some((filter, ns)) => match filter.name_of(kind) {
                Some(name) => Ok(self
                    .get(kind, plural, ns, name)
                    .await?
                    .into_iter()
                    .collect()),
                None => Ok(Vec::new()),
            },
            None => self.list(kind, plural, namespace, None).await,
        }
    }

    /// The `kind` object `namespace/name`, if there is one.
    async fn get(
        &self,
        kind: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>> {
        let (api, resource) = self.api(kind, plural, Some(namespace));
        match api.get_opt(name).await {
            Ok(found) => Ok(found
                .map(|o| serde_json::to_value(o).map(|v| with_type(v, &resource)))
                .transpose()?),
            Err(kube::Error::Api(response)) if response.code == 404 => Ok(None),
            Err(error) => {
                Err(error).with_context(|| format!("reading {plural} {namespace}/{name}"))
            }
        }
    }

    /// The core objects of `namespace`; none if it does not exist.
    async fn list_core<K>(&self, namespace: &str) -> Result<Vec<Value>>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let listed = match api.list(&ListParams::default()).await {
            Ok(listed) => listed.items,
            Err(kube::Error::Api(response)) if response.code == 404 => return Ok(Vec::new()),
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("listing {} in {namespace}", K::plural(&())))
            }
        };
        let (api_version, kind) = (K::api_version(&()), K::kind(&()));
        listed
            .into_iter()
            .map(|item| {
                let mut value = serde_json::to_value(item)?;
                value["apiVersion"] = Value::String(api_version.to_string());
                value["kind"] = Value::String(kind.to_string());
                Ok(value)
            })
            .collect()
    }
}

/// `object` with its `apiVersion` and `kind`, which a list's items may lack.
fn with_type(mut object: Value, resource: &ApiResource) -> Value {
    object["apiVersion"] = Value::String(resource.api_version.clone());
    object["kind"] = Value::String(resource.kind.clone());
    object
}

/// The Secrets a filtered dump includes from its namespace: those its GitRepos, HelmOps
/// and Bundles name.
fn secret_names(gitrepos: &[Value], helmops: &[Value], bundles: &[Value]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for gitrepo in gitrepos {
        for field in [
            "helmSecretName",
            "helmSecretNameForPaths",
            "clientSecretName",
        ] {
            names.insert(text(gitrepo, &format!("/spec/{field}")));
        }
    }
    for helmop in helmops {
        names.insert(text(helmop, "/spec/helmSecretName"));
    }
    for bundle in bundles {
        let sources = bundle
            .pointer("/spec/helm/valuesFrom")
            .and_then(Value::as_array);
        for source in sources.into_iter().flatten() {
            names.insert(text(source, "/secretKeyRef/name"));
        }
    }
    names.remove("");
    names
}

/// The Content a BundleDeployment deploys: Fleet's label, else its deployment id's first
/// part.
fn content_of(deployment: &Value) -> String {
    let labelled = text(deployment, &label_pointer(CONTENT_NAME_LABEL));
    if !labelled.is_empty() {
        return labelled;
    }
    let id = text(deployment, "/spec/deploymentID");
    id.split(':').next().unwrap_or_default().to_string()
}

/// The JSON pointer of the label `key`.
fn label_pointer(key: &str) -> String {
    format!(
        "/metadata/labels/{}",
        key.replace('~', "~0").replace('/', "~1")
    )
}

/// The string at `pointer` in `object`, or "".
fn text(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn yaml(object: &Value) -> Result<Vec<u8>> {
    Ok(serde_yaml_ng::to_string(object)?.into_bytes())
}
