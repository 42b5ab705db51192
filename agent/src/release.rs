//! Helm's release records in the member cluster, in Helm's own storage format, so that
//! `helm list`, `history`, `status`, `get manifest` and `get values` (Helm 3 and 4) show
//! what the agent deployed, and a cluster Rancher Fleet managed keeps its history: one
//! Secret `sh.helm.release.v1.<release>.v<revision>` per revision, of type
//! `helm.sh/release.v1`, labelled `name`, `owner=helm`, `status`, `version` and
//! `modifiedAt`, its `release` key the release as JSON, gzipped, then base64-encoded (see
//! [`crate::record_encoding`]).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use fleet_api::{BundleDeploymentResource, HelmRelease};
use fleet_objects::client::write_unread;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::ByteString;
use kube::api::{DeleteParams, ListParams, ObjectMeta};
use kube::Api;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::apply::post_params;
use crate::record_encoding::{self, decode, encode, encode_json, restatus};
use crate::Error;

/// The Secret type of a Helm release record.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";

/// Fleet's default `helm.maxHistory`: the revisions kept per release.
pub const DEFAULT_MAX_HISTORY: usize = 2;

/// Chart annotations Rancher Fleet's agent adds, so that Fleet tools recognise the release.
const BUNDLE_ID_ANNOTATION: &str = "fleet.cattle.io/bundle-id";
const AGENT_NAMESPACE_ANNOTATION: &str = "fleet.cattle.io/agent-namespace";
const SERVICE_ACCOUNT_ANNOTATION: &str = "fleet.cattle.io/service-account";
const KEEP_RESOURCES_ANNOTATION: &str = "fleet.cattle.io/keep-resources";

/// One stored revision of a release: its number and status read from the record's labels,
/// its body decoded only when asked for (a deployment reads the deployed one; a release
/// with a long history need not decode every revision).
#[derive(Debug, Clone)]
pub struct Revision {
    /// Its revision number.
    pub version: u64,
    /// Its status (`deployed`, `superseded`, `failed`, ...).
    pub status: String,
    /// The Secret holding it, named in errors.
    secret: String,
    /// The record as stored (base64 of gzipped JSON).
    encoded: Vec<u8>,
    /// The release as Helm stores it, once decoded.
    body: OnceLock<Value>,
}

impl Revision {
    /// The revision in `secret` (named `secret_name`), or `None` if it holds no record.
    pub(crate) fn read(secret_name: String, secret: Secret) -> Result<Option<Self>, Error> {
        let labels = secret.metadata.labels.unwrap_or_default();
        let Some(ByteString(encoded)) = secret.data.and_then(|mut d| d.remove("release")) else {
            return Ok(None);
        };
        let mut revision = Self {
            version: 0,
            status: String::new(),
            secret: secret_name,
            encoded,
            body: OnceLock::new(),
        };
        let labelled = labels.get("version").and_then(|v| v.parse().ok());
        match (labelled, labels.get("status")) {
            (Some(version), Some(status)) => {
                revision.version = version;
                revision.status = status.clone();
            }
            // Not labelled as Helm labels its records: the body says.
            _ => {
                let body = revision.body()?;
                let version = body.get("version").and_then(Value::as_u64).unwrap_or(0);
                let status = body.pointer("/info/status").and_then(Value::as_str);
                let status = status.unwrap_or_default().to_string();
                revision.version = version;
                revision.status = status;
            }
        }
        Ok(Some(revision))
    }

    /// When revision 1 was deployed, as this revision records it: read from the opening of
    /// a record the agent wrote, else from the whole release.
    pub fn first_deployed(&self) -> Result<Option<String>, Error> {
        if self.body.get().is_none() {
            if let Some(first) = record_encoding::first_deployed(&self.encoded) {
                return Ok(Some(first));
            }
        }
        let body = self.body()?;
        let first = body.pointer("/info/first_deployed").and_then(Value::as_str);
        Ok(first.map(String::from))
    }

    /// The release as Helm stores it (decoded on first use).
    pub fn body(&self) -> Result<&Value, Error> {
        if let Some(body) = self.body.get() {
            return Ok(body);
        }
        let body = decode(&self.encoded).map_err(|message| {
            Error::Invalid(format!("Helm release record {}: {message}", self.secret))
        })?;
        Ok(self.body.get_or_init(|| body))
    }
}

/// Where a release's records live.
pub struct Store {
    api: Api<Secret>,
    name: String,
    namespace: String,
}

/// What a new revision records beside the release the renderer made.
pub struct NewRevision<'a> {
    /// The release.
    pub release: &'a HelmRelease,
    /// The revision number.
    pub version: u64,
    /// `deployed` or `failed`.
    pub status: &'a str,
    /// Helm's description (`Install complete`, `Upgrade complete`, `failed pre-install: ...`).
    pub description: String,
    /// The applied objects, as Helm's manifest.
    pub manifest: String,
    /// The hooks as run, in Helm's form.
    pub hooks: Vec<Value>,
    /// When revision 1 was deployed, if this is a later one.
    pub first_deployed: Option<String>,
    /// The BundleDeployment, its agent's namespace, service account and keepResources,
    /// recorded in the chart's annotations as Fleet records them.
    pub bundle_id: &'a str,
    /// The namespace of the agent's BundleDeployments on the hub.
    pub agent_namespace: &'a str,
    /// `serviceAccount` of the bundle.
    pub service_account: &'a str,
    /// `keepResources` of the bundle.
    pub keep_resources: bool,
}

impl Store {
    /// The records of release `name` in `namespace` of the cluster `client` reaches.
    pub fn new(client: &kube::Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client.clone(), namespace),
            name: name.to_string(),
            namespace: namespace.to_string(),
        }
    }

    fn secret_name(&self, version: u64) -> String {
        format!("sh.helm.release.v1.{}.v{version}", self.name)
    }

    /// Every stored revision, oldest first.
    pub async fn history(&self) -> Result<Vec<Revision>, Error> {
        let selector = format!("owner=helm,name={}", self.name);
        let secrets = self
            .api
            .list(&ListParams::default().labels(&selector))
            .await?;
        let mut revisions = Vec::new();
        for secret in secrets.items {
            let name = secret.metadata.name.clone().unwrap_or_default();
            revisions.extend(Revision::read(name, secret)?);
        }
        revisions.sort_by_key(|r| r.version);
        Ok(revisions)
    }

    /// Stores a new revision.
    pub async fn create(&self, revision: &NewRevision<'_>) -> Result<(), Error> {
        let json = release_json(&self.namespace, revision)
            .map_err(|e| Error::Invalid(format!("a release record: {e}")))?;
        let encoded = encode_json(&json).map_err(Error::Invalid)?;
        self.create_encoded(revision.version, revision.status, encoded)
            .await
    }

    /// Stores `body` as revision `version` with `status`.
    pub async fn create_body(&self, version: u64, status: &str, body: &Value) -> Result<(), Error> {
        let encoded = encode(body).map_err(Error::Invalid)?;
        self.create_encoded(version, status, encoded).await
    }

    /// Stores the release `encoded` as revision `version` with `status`.
    async fn create_encoded(
        &self,
        version: u64,
        status: &str,
        encoded: String,
    ) -> Result<(), Error> {
        let secret = self.secret(version, status, encoded)?;
        // The agent never reads the answers of its writes to the records.
        let create = |request: &kube::core::Request| request.create(&post_params(), secret.clone());
        match write_unread(&self.api, create).await {
            Ok(()) => Ok(()),
            Err(kube::Error::Api(response)) if response.code == 409 => {
                self.replace(version, secret).await
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Replaces the record of revision `version` with `secret` (its JSON).
    async fn replace(&self, version: u64, secret: Vec<u8>) -> Result<(), Error> {
        let name = self.secret_name(version);
        let replace =
            |request: &kube::core::Request| request.replace(&name, &post_params(), secret);
        write_unread(&self.api, replace).await?;
        Ok(())
    }

    /// Marks a stored revision `status` (as an upgrade marks the one it replaces
    /// `superseded`), in its labels and its body. A record the agent wrote has its status
    /// swapped in place; another is decoded first.
    pub async fn set_status(&self, revision: &Revision, status: &str) -> Result<(), Error> {
        let encoded = match restatus(&revision.encoded, &revision.status, status) {
            Some(encoded) => encoded,
            None => {
                let mut body = revision.body()?.clone();
                if let Some(info) = body.get_mut("info").and_then(Value::as_object_mut) {
                    info.insert("status".into(), Value::from(status));
                }
                encode(&body).map_err(Error::Invalid)?
            }
        };
        let secret = self.secret(revision.version, status, encoded)?;
        self.replace(revision.version, secret).await
    }

    /// Deletes the oldest revisions until at most `max` remain, as Helm's `--history-max`
    /// does (the deployed one is never deleted).
    pub async fn prune(&self, max: usize) -> Result<(), Error> {
        let history = self.history().await?;
        let held: Vec<(u64, &str)> = history
            .iter()
            .map(|r| (r.version, r.status.as_str()))
            .collect();
        self.prune_held(&held, max).await
    }

    /// [`Store::prune`] when the revisions held are known: `held` is each revision's number
    /// and status, oldest first.
    pub async fn prune_held(&self, held: &[(u64, &str)], max: usize) -> Result<(), Error> {
        let excess = held.len().saturating_sub(max.max(1));
        for (version, _) in held
            .iter()
            .filter(|(_, status)| *status != "deployed")
            .take(excess)
        {
            self.delete(*version).await?;
        }
        Ok(())
    }

    /// Deletes every revision of `history`, as `helm uninstall` does.
    pub async fn delete_all(&self, history: &[Revision]) -> Result<(), Error> {
        for revision in history {
            self.delete(revision.version).await?;
        }
        Ok(())
    }

    async fn delete(&self, version: u64) -> Result<(), Error> {
        let name = self.secret_name(version);
        fleet_objects::client::delete_if_present(&self.api, &name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// The record of revision `version` with `status` and the release `encoded`, as the
    /// JSON of a Secret.
    fn secret(&self, version: u64, status: &str, encoded: String) -> Result<Vec<u8>, Error> {
        let labels = BTreeMap::from([
            ("name".to_string(), self.name.clone()),
            ("owner".to_string(), "helm".to_string()),
            ("status".to_string(), status.to_string()),
            ("version".to_string(), version.to_string()),
            (
                "modifiedAt".to_string(),
                jiff::Timestamp::now().as_second().to_string(),
            ),
        ]);
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.secret_name(version)),
                namespace: Some(self.namespace.clone()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            type_: Some(SECRET_TYPE.into()),
            data: Some(BTreeMap::from([(
                "release".to_string(),
                ByteString(encoded.into_bytes()),
            )])),
            ..Secret::default()
        };
        serde_json::to_vec(&secret).map_err(|e| Error::Invalid(format!("a release record: {e}")))
    }
}

/// A new revision's release as Helm's `release.Release` serialises it, written from its
/// parts: `info` first, opening with `status` and `first_deployed`, as
/// [`record_encoding::encode_json`] wants it.
fn release_json(namespace: &str, revision: &NewRevision<'_>) -> serde_json::Result<Vec<u8>> {
    let release = revision.release;
    let now = jiff::Timestamp::now().to_string();
    let empty = Value::Object(serde_json::Map::new());
    let record = ReleaseRecord {
        info: ReleaseInfo {
            status: revision.status,
            first_deployed: revision.first_deployed.as_deref().unwrap_or(&now),
            last_deployed: &now,
            description: &revision.description,
            notes: Some(release.notes.as_str()).filter(|notes| !notes.is_empty()),
        },
        name: &release.name,
        chart: RecordChart {
            metadata: ChartMetadata {
                chart: &release.chart,
                annotations: [
                    (BUNDLE_ID_ANNOTATION, revision.bundle_id),
                    (AGENT_NAMESPACE_ANNOTATION, revision.agent_namespace),
                    (SERVICE_ACCOUNT_ANNOTATION, revision.service_account),
                    (
                        KEEP_RESOURCES_ANNOTATION,
                        if revision.keep_resources {
                            "true"
                        } else {
                            "false"
                        },
                    ),
                ],
            },
            lock: None,
            templates: &[],
            values: &release.values,
            schema: None,
            files: &[],
        },
        config: if release.config.is_object() {
            &release.config
        } else {
            &empty
        },
        manifest: &revision.manifest,
        hooks: &revision.hooks,
        version: revision.version,
        namespace,
    };
    serde_json::to_vec(&record)
}

/// The members of a release record, in the order the agent writes them.
#[derive(serde::Serialize)]
struct ReleaseRecord<'a> {
    info: ReleaseInfo<'a>,
    name: &'a str,
    chart: RecordChart<'a>,
    config: &'a Value,
    manifest: &'a str,
    hooks: &'a [Value],
    version: u64,
    namespace: &'a str,
}

/// A release record's `info`.
#[derive(serde::Serialize)]
struct ReleaseInfo<'a> {
    status: &'a str,
    first_deployed: &'a str,
    last_deployed: &'a str,
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    notes: Option<&'a str>,
}

/// A release record's `chart`: its metadata and values; Helm's templates and files are not
/// kept.
#[derive(serde::Serialize)]
struct RecordChart<'a> {
    metadata: ChartMetadata<'a>,
    lock: Option<()>,
    templates: &'a [Value],
    values: &'a Value,
    schema: Option<()>,
    files: &'a [Value],
}

/// The chart's metadata with Fleet's annotations set among its own.
struct ChartMetadata<'a> {
    chart: &'a Value,
    annotations: [(&'static str, &'a str); 4],
}

impl Serialize for ChartMetadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(metadata) = self.chart.as_object() else {
            return self.chart.serialize(serializer);
        };
        let annotations = Annotations {
            chart: metadata.get("annotations"),
            fleet: &self.annotations,
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in metadata {
            if key == "annotations" {
                map.serialize_entry(key, &annotations)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        if !metadata.contains_key("annotations") {
            map.serialize_entry("annotations", &annotations)?;
        }
        map.end()
    }
}

/// A chart's annotations (when they are an object) with Fleet's set: each in its place
/// when the chart has it, else after the chart's.
struct Annotations<'a> {
    chart: Option<&'a Value>,
    fleet: &'a [(&'static str, &'a str)],
}

impl Serialize for Annotations<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let own = match self.chart {
            Some(Value::Object(own)) => Some(own),
            Some(other) => return other.serialize(serializer),
            None => None,
        };
        let fleet = |key: &str| self.fleet.iter().find(|(name, _)| *name == key);
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in own.into_iter().flatten() {
            match fleet(key) {
                Some((_, set)) => map.serialize_entry(key, set)?,
                None => map.serialize_entry(key, value)?,
            }
        }
        for (key, value) in self.fleet {
            if !own.is_some_and(|own| own.contains_key(*key)) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// The objects of a stored release's `manifest`, as JSON.
pub fn manifest_objects(manifest: &str) -> Result<Vec<Value>, Error> {
    let mut objects = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(manifest) {
        let value = <Value as serde::Deserialize>::deserialize(document)
            .map_err(|e| Error::Invalid(format!("the stored release's manifest: {e}")))?;
        if !value.is_null() {
            objects.push(value);
        }
    }
    Ok(objects)
}

/// What a stored release `body` applied, as the records a deployment's status lists: the
/// full set, which the status may list only in part. Each document is read only for its
/// identity; the rest of it is passed over.
pub fn applied(body: &Value) -> Result<Vec<BundleDeploymentResource>, Error> {
    let manifest = body["manifest"].as_str().unwrap_or_default();
    let mut resources = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(manifest) {
        let identity = <Option<Identity> as serde::Deserialize>::deserialize(document)
            .map_err(|e| Error::Invalid(format!("the stored release's manifest: {e}")))?;
        let Some(identity) = identity else {
            continue;
        };
        let metadata = identity.metadata.unwrap_or_default();
        resources.push(BundleDeploymentResource {
            api_version: text(identity.api_version),
            kind: text(identity.kind),
            namespace: text(metadata.namespace),
            name: text(metadata.name),
        });
    }
    Ok(resources)
}

/// What [`applied`] reads of a manifest's document. A field that is not a string is read
/// as empty, as it would be from the whole object.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    #[serde(default)]
    api_version: Option<Value>,
    #[serde(default)]
    kind: Option<Value>,
    #[serde(default)]
    metadata: Option<IdentityMetadata>,
}

/// The part of `metadata` an [`Identity`] reads.
#[derive(serde::Deserialize, Default)]
struct IdentityMetadata {
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    namespace: Option<Value>,
}

fn text(value: Option<Value>) -> String {
    match value {
        Some(Value::String(text)) => text,
        _ => String::new(),
    }
}

/// The applied objects as one manifest: YAML documents, each after `---`, as Fleet's
/// post-renderer hands them to Helm.
pub fn manifest<'a>(objects: impl IntoIterator<Item = &'a Value>) -> String {
    let mut text = String::new();
    for object in objects {
        text.push_str("---\n");
        text.push_str(&serde_yaml_ng::to_string(object).unwrap_or_default());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stored_manifest_is_read_for_the_identity_of_each_document() {
        let manifest = "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n\
            metadata:\n  name: web\n  namespace: apps\n  labels: {a: b}\ndata:\n  k: [1, 2]\n\
            ---\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n\
            metadata:\n  name: 7\nrules: []\n";
        let resources = applied(&json!({ "manifest": manifest })).expect("reads");
        let identities: Vec<[&str; 4]> = (resources.iter())
            .map(|r| [&*r.api_version, &*r.kind, &*r.namespace, &*r.name])
            .collect();
        assert_eq!(
            identities,
            [
                ["v1", "ConfigMap", "apps", "web"],
                // A name that is not a string reads as none, as from the whole object.
                ["rbac.authorization.k8s.io/v1", "ClusterRole", "", ""],
            ]
        );
        let broken = applied(&json!({ "manifest": "kind: [unclosed" }));
        assert!(broken.is_err());
    }

    fn record(labels: &[(&str, &str)], release: &[u8]) -> Secret {
        let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Secret {
            metadata: ObjectMeta {
                labels: Some(labels.collect()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(
                "release".to_string(),
                ByteString(release.to_vec()),
            )])),
            ..Secret::default()
        }
    }

    #[test]
    fn a_revision_is_read_from_its_labels_and_decoded_only_when_asked() {
        let labelled = record(&[("version", "4"), ("status", "superseded")], b"!!");
        let revision = Revision::read("r.v4".into(), labelled)
            .expect("labels suffice")
            .expect("a record");
        assert_eq!(
            (revision.version, revision.status.as_str()),
            (4, "superseded")
        );
        let error = revision.body().expect_err("not base64").to_string();
        assert!(error.contains("r.v4"), "{error}");

        let body = json!({"version": 7, "info": {"status": "deployed"}});
        let encoded = encode(&body).expect("encodes");
        let unlabelled = record(&[("owner", "helm")], encoded.as_bytes());
        let revision = Revision::read("r.v7".into(), unlabelled)
            .expect("decoded")
            .expect("a record");
        assert_eq!(
            (revision.version, revision.status.as_str()),
            (7, "deployed")
        );
        assert_eq!(revision.body().expect("decoded"), &body);
        let empty = Secret::default();
        assert!(Revision::read("none".into(), empty)
            .expect("no error")
            .is_none());
    }

    /// A new revision of `release`, deployed with `first_deployed`.
    fn new_revision<'a>(release: &'a HelmRelease, first: Option<&str>) -> NewRevision<'a> {
        NewRevision {
            release,
            version: 2,
            status: "deployed",
            description: "Upgrade complete".into(),
            manifest: "---\nkind: ConfigMap\n".into(),
            hooks: vec![json!({"name": "job"})],
            first_deployed: first.map(String::from),
            bundle_id: "web-demo",
            agent_namespace: "cattle-fleet-system",
            service_account: "",
            keep_resources: true,
        }
    }

    #[test]
    fn a_release_is_written_as_helm_records_it_with_fleets_annotations_among_the_charts() {
        let release = HelmRelease {
            name: "web".into(),
            chart: json!({
                "name": "web",
                "annotations": {"a": "1", "fleet.cattle.io/bundle-id": "old", "z": "2"},
                "version": "1.0.0",
            }),
            values: json!({"replicas": 1}),
            config: json!({"replicas": 3}),
            notes: "Thanks".into(),
            ..HelmRelease::default()
        };
        let first = "2026-12-05T10:00:00Z";
        let json = release_json("apps", &new_revision(&release, Some(first))).expect("writes");
        let text = std::str::from_utf8(&json).expect("UTF-8");
        assert!(
            text.starts_with(r#"{"info":{"status":"deployed","first_deployed":"2026-12-05"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#""annotations":{"a":"1","fleet.cattle.io/bundle-id":"web-demo","z":"2","fleet.cattle.io/agent-namespace":"cattle-fleet-system","fleet.cattle.io/service-account":"","fleet.cattle.io/keep-resources":"true"},"version":"1.0.0""#
            ),
            "{text}"
        );
        let mut body: Value = serde_json::from_slice(&json).expect("JSON");
        let last = body["info"]["last_deployed"].take();
        assert!(last.as_str().is_some_and(|t| t.starts_with("20")), "{last}");
        assert_eq!(
            body,
            json!({
                "name": "web",
                "info": {
                    "first_deployed": first,
                    "last_deployed": null,
                    "description": "Upgrade complete",
                    "status": "deployed",
                    "notes": "Thanks",
                },
                "chart": {
                    "metadata": {
                        "name": "web",
                        "version": "1.0.0",
                        "annotations": {
                            "a": "1",
                            "z": "2",
                            "fleet.cattle.io/bundle-id": "web-demo",
                            "fleet.cattle.io/agent-namespace": "cattle-fleet-system",
                            "fleet.cattle.io/service-account": "",
                            "fleet.cattle.io/keep-resources": "true",
                        },
                    },
                    "lock": null,
                    "templates": [],
                    "values": {"replicas": 1},
                    "schema": null,
                    "files": [],
                },
                "config": {"replicas": 3},
                "manifest": "---\nkind: ConfigMap\n",
                "hooks": [{"name": "job"}],
                "version": 2,
                "namespace": "apps",
            })
        );
        let encoded = encode_json(&json).expect("encodes");
        assert_eq!(
            record_encoding::first_deployed(encoded.as_bytes()).as_deref(),
            Some(first)
        );
    }

    #[test]
    fn a_chart_without_annotations_gets_fleets_and_a_first_revision_is_first_deployed_now() {
        let release = HelmRelease {
            name: "web".into(),
            chart: json!({"name": "web"}),
            config: Value::Null,
            ..HelmRelease::default()
        };
        let json = release_json("apps", &new_revision(&release, None)).expect("writes");
        let body: Value = serde_json::from_slice(&json).expect("JSON");
        let annotations = &body["chart"]["metadata"]["annotations"];
        assert_eq!(annotations["fleet.cattle.io/bundle-id"], "web-demo");
        assert_eq!(body["config"], json!({}));
        assert_eq!(body["info"].get("notes"), None);
        assert_eq!(
            body["info"]["first_deployed"],
            body["info"]["last_deployed"]
        );
    }

    #[test]
    fn the_manifest_is_yaml_documents() {
        let text = manifest(&[
            json!({"kind": "ConfigMap", "metadata": {"name": "a"}}),
            json!({"kind": "Service"}),
        ]);
        assert_eq!(
            text,
            "---\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: Service\n"
        );
    }
}
