//! The verbs on objects: get, list, create, update, patch, apply, delete, deletecollection.

use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Value};

use crate::call::{Call, Propagation};
use crate::event::Key;
use crate::hub::Hub;
use crate::managed;
use crate::meta;
use crate::status::{ApiError, ApiResult, Cause};
use crate::store::{Change, Version};
use crate::stored::Stored;

/// What a write produced.
pub struct Written {
    /// The object as stored (or as it would be, for a dry run).
    pub object: Arc<Stored>,
    /// Whether it was created by this request.
    pub created: bool,
}

/// `get`.
pub fn get(hub: &Hub, call: &Call) -> ApiResult<Arc<Stored>> {
    let name = call.required_name()?;
    let object = hub.store.get(&call.key(name))?;
    call.presented(object.ok_or_else(|| call.not_found(name))?)
}

/// A page of a list.
pub struct Page {
    /// The resourceVersion of the list.
    pub rv: u64,
    /// The items, presented at the requested version.
    pub items: Vec<Arc<Stored>>,
    /// The continue token, if more remain.
    pub next: Option<String>,
    /// How many items remain after this page.
    pub remaining: usize,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    namespace: String,
    name: String,
}

/// `list` with label and field selectors, limit and continue.
pub fn list(hub: &Hub, call: &Call) -> ApiResult<Page> {
    let selectors = call.selectors()?;
    let after = match call.param("continue").filter(|c| !c.is_empty()) {
        Some(token) => Some(decode_continue(token)?),
        None => None,
    };
    let storage_key = call.resource.storage_key();
    if let Some(token) = &after {
        // A later page is consistent with the first only if a watch from the first's
        // version can still bring what changed since, as Kubernetes refuses a token whose
        // version is compacted.
        let oldest = (hub.store).oldest_kept(&call.cluster, &storage_key, call.namespace_scope());
        if token.rv < oldest {
            return Err(ApiError::continue_expired(token.rv, oldest));
        }
    }
    let (rv, objects) = hub.store.list(
        &call.cluster,
        &storage_key,
        call.namespace_scope(),
        after
            .as_ref()
            .map(|a| (a.namespace.as_str(), a.name.as_str())),
    )?;
    let limit = call
        .param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    // Every page of a list is reported at the first page's resourceVersion, as Kubernetes
    // reports them, so that a watch from the last page's starts where the list started: a
    // page is read from the objects as they are now, and an object made between pages,
    // before the cursor, comes with the watch instead.
    let listed_at = after.as_ref().map_or(rv, |a| a.rv);
    let mut all = objects;
    all.retain(|o| selectors.selects(o));
    let taken = limit.unwrap_or(all.len()).min(all.len());
    let remaining = all.len() - taken;
    let items = (all.into_iter().take(taken))
        .map(|o| call.presented(o))
        .collect::<ApiResult<Vec<_>>>()?;
    let next = match (remaining, items.last()) {
        (1.., Some(last)) => {
            let last = last.value()?;
            Some(encode_continue(&ContinueToken {
                rv: listed_at,
                namespace: meta::meta_str(&last, "namespace")
                    .unwrap_or_default()
                    .into(),
                name: meta::meta_str(&last, "name").unwrap_or_default().into(),
            }))
        }
        _ => None,
    };
    Ok(Page {
        rv: listed_at,
        items,
        next,
        remaining,
    })
}

fn encode_continue(token: &ContinueToken) -> String {
    let json = serde_json::to_vec(token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_continue(token: &str) -> ApiResult<ContinueToken> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| ApiError::bad_request("invalid continue token"))
}

/// The List object for a page, as JSON text: the items' stored text, copied.
pub fn list_object(call: &Call, page: Page) -> Vec<u8> {
    let mut metadata = json!({"resourceVersion": page.rv.to_string()});
    if let Some(next) = page.next {
        metadata["continue"] = json!(next);
        metadata["remainingItemCount"] = json!(page.remaining);
    }
    let (kind, api_version) = if call.metadata_only {
        (
            crate::partial::LIST_KIND.to_string(),
            crate::partial::API_VERSION.to_string(),
        )
    } else {
        (format!("{}List", call.resource.kind), call.api_version())
    };
    let head = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
    let mut text = serde_json::to_vec(&head).unwrap_or_default();
    // `head` is an object: its text ends with the brace the items go before.
    text.pop();
    text.extend_from_slice(b",\"items\":[");
    for (index, item) in page.items.iter().enumerate() {
        if index > 0 {
            text.push(b',');
        }
        for part in call.wire_parts(item) {
            text.extend_from_slice(part);
        }
    }
    text.extend_from_slice(b"]}");
    text
}

fn check_identity(call: &Call, body: &Value) -> ApiResult<()> {
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or_default();
    if !kind.is_empty() && kind != call.resource.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            call.resource.kind
        )));
    }
    let version = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !version.is_empty() && version != call.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({version}) does not match the expected API version ({})",
            call.api_version()
        )));
    }
    let namespace = meta::meta_str(body, "namespace").unwrap_or_default();
    if call.resource.namespaced && !namespace.is_empty() && namespace != call.namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

fn check_namespace(hub: &Hub, call: &Call) -> ApiResult<()> {
    if !call.resource.namespaced {
        return Ok(());
    }
    if call.namespace.is_empty() {
        return Err(ApiError::bad_request(
            "a namespaced resource needs a namespace in the path",
        ));
    }
    let key = Key {
        cluster: call.cluster.clone(),
        resource: "/namespaces".into(),
        namespace: String::new(),
        name: call.namespace.clone(),
    };
    let deleting = |ns: &Stored| {
        ns.mentions("deletionTimestamp") && ns.value().is_ok_and(|ns| meta::is_deleting(&ns))
    };
    match hub.store.get(&key)? {
        None => Err(ApiError::not_found("namespaces", "", &call.namespace)),
        Some(ns) if deleting(&ns) => Err(ApiError {
            code: 403,
            reason: "Forbidden",
            message: format!(
                "unable to create new content in namespace {} because it is being terminated",
                call.namespace
            ),
            details: None,
        }),
        Some(_) => Ok(()),
    }
}

/// What a write's candidate object is checked and compared against.
enum Before<'a> {
    /// Nothing: the write creates the object.
    Nothing,
    /// The stored object.
    Object(&'a Value),
    /// The stored object's status (`None`: it has none), when the candidate is the stored
    /// object itself with only its status edited (see [`status_patched_in_place`]).
    Status(Option<Value>),
}

/// Completes a candidate object for storage: identity, status rules, schema, generation,
/// managed fields, finalizers. `applied` is set when server-side apply already recorded
/// the managed fields.
fn finish(call: &Call, before: Before<'_>, mut object: Value, applied: bool) -> ApiResult<Change> {
    let existing = match &before {
        Before::Object(old) => Some(*old),
        Before::Nothing | Before::Status(_) => None,
    };
    let resource = &call.resource;
    if !object.is_object() {
        // A body, or the result of a patch, that is a list, a string or a number.
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized: a {} is expected to be a JSON object",
            resource.kind
        )));
    }
    if resource.custom && matches!(before, Before::Nothing) && kind_missing(&object) {
        // kube-apiserver decodes a custom resource by its kind, which it must name.
        let text = object.to_string();
        let start: String = text.chars().take(30).collect();
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{text}' ({start} ...)",
            resource.kind
        )));
    }
    if !matches!(before, Before::Status(_)) {
        // A status write keeps them as stored (below, or as it edits the stored object).
        object["apiVersion"] = json!(call.api_version());
        object["kind"] = json!(resource.kind);
    }
    let has_status = resource.has_status(&call.version);
    let name = call
        .name
        .clone()
        .or_else(|| meta::meta_str(&object, "name").map(String::from))
        .unwrap_or_default();
    if let Some(old) = existing {
        if has_status && call.status_call() {
            keep_only_status(&mut object, old);
        } else if has_status {
            match old.get("status") {
                Some(status) => object["status"] = status.clone(),
                None => {
                    if let Some(map) = object.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
        }
        let meta = meta::metadata_mut(&mut object)
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match meta::meta_field(old, field) {
                Some(value) => meta.insert(field.into(), value.clone()),
                None => meta.remove(field),
            };
        }
        meta.insert("name".into(), json!(name));
    } else if let Before::Nothing = before {
        if has_status {
            if let Some(map) = object.as_object_mut() {
                map.remove("status");
            }
        }
        let generation = kinds_generation(call);
        let meta = meta::metadata_mut(&mut object)
            .ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
        meta.insert("uid".into(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".into(), json!(meta::now()));
        meta.remove("deletionTimestamp");
        meta.remove("resourceVersion");
        if let Some(generation) = generation {
            meta.insert("generation".into(), json!(generation));
        }
    }
    if let Some(meta) = meta::metadata_mut(&mut object) {
        if resource.namespaced {
            meta.insert("namespace".into(), json!(call.namespace));
        } else {
            meta.remove("namespace");
        }
    }
    let rule = meta::NameRule::of(&resource.group, &resource.kind, resource.custom);
    let mut causes = meta::name_causes(&name, rule);
    causes.extend(meta::label_and_annotation_causes(&object));
    causes.extend(crate::kinds::causes(resource, &object));
    if !resource.custom {
        // Go decodes a null as "not set": kube-apiserver never stores one in a built-in kind.
        strip_nulls(&mut object);
    }
    let builtin_schema = || {
        (!resource.custom)
            .then(|| crate::builtin_schemas::schema(&resource.group, &resource.kind))
            .flatten()
    };
    if let Some(schema) = resource
        .version(&call.version)
        .and_then(|v| v.schema.as_deref())
        .or_else(builtin_schema)
    {
        let checked = schema.prepare(&mut object);
        if call.param("fieldValidation") == Some("Strict") && !checked.pruned.is_empty() {
            let unknown: Vec<String> = checked
                .pruned
                .iter()
                .map(|p| format!("unknown field \"{p}\""))
                .collect();
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                unknown.join(", "),
                kind = resource.kind,
                version = call.version,
            )));
        }
        if let Some((path, found, wanted)) = checked.mistyped.first().filter(|_| !resource.custom) {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: json: cannot unmarshal {found} into Go struct field {path} of type {wanted}",
                kind = resource.kind,
                version = call.version,
            )));
        }
        if let Some((_, error)) = checked.malformed_bytes.first().filter(|_| !resource.custom) {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: {error}",
                kind = resource.kind,
                version = call.version,
            )));
        }
        if let Some(path) = checked.malformed_quantities.first() {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: {path}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                kind = resource.kind,
                version = call.version,
            )));
        }
        causes.extend(checked.causes);
        // Validation rules run only on an object valid otherwise; kube-apiserver says so.
        if causes.is_empty() {
            causes.extend(checked.rule_causes);
        } else if schema.has_rules() {
            causes.push(fleet_objects::schema::rules_not_checked());
        }
    }
    drop_empty_metadata(&mut object);
    let refuse = |causes| ApiError::invalid(&resource.kind, &resource.group, &name, causes);
    if !causes.is_empty() {
        return Err(refuse(causes));
    }
    if !resource.custom {
        crate::defaults::fill(&resource.group, &resource.kind, &mut object);
        crate::kinds::allocate(resource, &mut object, existing);
        if let Some(old) = existing {
            let causes = crate::immutable::causes(&resource.group, &resource.kind, old, &object);
            if !causes.is_empty() {
                return Err(refuse(causes));
            }
        }
    }
    crate::kinds::on_write(resource, &mut object);
    if !applied {
        let mut writer = call.writer();
        let api_version = call.api_version();
        writer.api_version = &api_version;
        match &before {
            Before::Status(old_status) => {
                managed::record_status_update(old_status.as_ref(), &mut object, &writer)
            }
            _ => managed::record_update(existing, &mut object, &writer),
        }
    }
    if let Before::Status(old_status) = &before {
        // Only the status changed, and the managedFields only with it.
        if crate::json::options_equal(old_status.as_ref(), object.get("status")) {
            return Ok(Change::Keep);
        }
    }
    if let Some(old) = existing {
        if same_content(old, &object) {
            return Ok(Change::Keep);
        }
        if crate::kinds::tracks_generation(resource, &call.version) && spec_changed(old, &object) {
            if let Some(meta) = meta::metadata_mut(&mut object) {
                meta.insert("generation".into(), json!(meta::generation(old) + 1));
            }
        }
        if meta::is_deleting(&object) && !meta::has_finalizers(&object) {
            return Ok(Change::Delete);
        }
    }
    if serde_json::to_vec(&object).map_or(0, |bytes| bytes.len()) > MAX_OBJECT_BYTES {
        // What etcd answers kube-apiserver, which passes it on as it is.
        return Err(ApiError::storage("etcdserver: request is too large"));
    }
    Ok(Change::Put(object))
}

/// The largest object stored: etcd takes a request of at most 1.5 MiB by default.
const MAX_OBJECT_BYTES: usize = 1_572_864;

/// Makes a write to the status subresource `object` the `old` object but for its status
/// and managedFields (the old ones when it sends none). Only the members that differ are
/// copied back: a status write leaves the rest of the object as it was.
fn keep_only_status(object: &mut Value, old: &Value) {
    let (Some(map), Some(old_map)) = (object.as_object_mut(), old.as_object()) else {
        *object = old.clone();
        return;
    };
    restore_members(map, old_map, &["status", "metadata"]);
    match (map.get_mut("metadata"), old_map.get("metadata")) {
        (Some(Value::Object(meta)), Some(Value::Object(old_meta))) => {
            let sent = meta.get("managedFields").is_some_and(|m| !m.is_null());
            let kept: &[&str] = if sent { &["managedFields"] } else { &[] };
            restore_members(meta, old_meta, kept);
        }
        (_, Some(old_meta)) => {
            map.insert("metadata".into(), old_meta.clone());
        }
        (_, None) => {
            map.remove("metadata");
        }
    }
}

/// Makes `map` equal to `old` but for the members `kept`, cloning only the members that
/// differ.
fn restore_members(
    map: &mut serde_json::Map<String, Value>,
    old: &serde_json::Map<String, Value>,
    kept: &[&str],
) {
    map.retain(|key, _| kept.contains(&key.as_str()) || old.contains_key(key));
    for (key, value) in old.iter().filter(|(key, _)| !kept.contains(&key.as_str())) {
        match map.get_mut(key) {
            Some(current) if current == value => {}
            Some(current) => *current = value.clone(),
            None => {
                map.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Removes every null member of an object, at any depth, as Go's decoding of a built-in
/// kind drops them.
pub fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

fn kinds_generation(call: &Call) -> Option<i64> {
    crate::kinds::tracks_generation(&call.resource, &call.version).then_some(1)
}

/// Whether a write changes nothing, managedFields included (a change of owners is a write,
/// as in Kubernetes).
fn same_content(old: &Value, new: &Value) -> bool {
    equal_except(old, new, &[], &["resourceVersion"])
}

fn spec_changed(old: &Value, new: &Value) -> bool {
    !equal_except(old, new, &["metadata", "status"], &[])
}

/// Whether two objects are equal, leaving out the members `top` and the metadata members
/// `metadata`, without copying either.
fn equal_except(a: &Value, b: &Value, top: &[&str], metadata: &[&str]) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return crate::json::equal(a, b);
    };
    maps_equal_except(a, b, top, |key, x, y| match (key, x, y) {
        ("metadata", Value::Object(x), Value::Object(y)) => {
            maps_equal_except(x, y, metadata, |_, x, y| crate::json::equal(x, y))
        }
        _ => crate::json::equal(x, y),
    })
}

/// Whether two maps have the same members, leaving out `skip`, each pair compared by
/// `equal` (given the member's name).
fn maps_equal_except(
    a: &serde_json::Map<String, Value>,
    b: &serde_json::Map<String, Value>,
    skip: &[&str],
    equal: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    let kept = |map: &serde_json::Map<String, Value>| {
        map.keys().filter(|k| !skip.contains(&k.as_str())).count()
    };
    kept(a) == kept(b)
        && crate::json::zip_members(a, b, |k| skip.contains(&k))
            .all(|(k, x, y)| y.is_some_and(|y| equal(k, x, y)))
}

fn check_resource_version(
    call: &Call,
    existing: &Value,
    body: &Value,
    name: &str,
) -> ApiResult<()> {
    let wanted = meta::meta_str(body, "resourceVersion").unwrap_or_default();
    if !wanted.is_empty() && Some(wanted) != meta::meta_str(existing, "resourceVersion") {
        return Err(ApiError::stale(
            &call.resource.plural,
            &call.resource.group,
            name,
        ));
    }
    Ok(())
}

async fn commit(
    hub: &Hub,
    call: &Call,
    name: &str,
    mut decide: impl FnMut(&mut Option<Value>) -> ApiResult<(Change, bool)>,
) -> ApiResult<Written> {
    let dry_run = call.dry_run();
    let ((dry, created, deleted), committed) = hub
        .store
        .write(&call.key(name), |existing| {
            let (change, created) = decide(existing)?;
            match change {
                Change::Put(object) if dry_run => {
                    Ok((Change::Keep, (Some(object), created, false)))
                }
                Change::Delete if dry_run => Ok((Change::Keep, (existing.clone(), created, false))),
                Change::Delete => Ok((Change::Delete, (None, created, true))),
                change => Ok((change, (None, created, false))),
            }
        })
        .await?;
    let Version { stored, value } = match (dry, committed) {
        (Some(dry), _) => Version {
            stored: Arc::new(Stored::new(&dry)),
            value: dry,
        },
        (None, Some(version)) => version,
        (None, None) => return Err(call.not_found(name)),
    };
    if deleted {
        hub.after_delete(call, &value, Propagation::Background)
            .await;
    } else if !dry_run {
        hub.after_write(call, &value);
    }
    let object = call.presented(stored.clone())?;
    if !deleted && !dry_run && awaits_status(call) {
        hub.store.keep_parsed(Version { stored, value });
    }
    Ok(Written { object, created })
}

/// Whether a write is one that a write of the object's status often follows soon (its
/// controller or agent reporting on it): a write of the main resource of a type whose
/// status is a subresource. Only such writes hand their trees back to the store: trees
/// nobody takes would wait to be dropped, colder.
fn awaits_status(call: &Call) -> bool {
    !call.status_call() && call.resource.has_status(&call.version)
}

/// `create`.
pub async fn create(hub: &Hub, call: &Call, mut body: Value) -> ApiResult<Written> {
    check_identity(call, &body)?;
    if meta::meta_str(&body, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut name = meta::meta_str(&body, "name")
        .unwrap_or_default()
        .to_string();
    if name.is_empty() {
        if let Some(prefix) = meta::meta_str(&body, "generateName") {
            name = format!("{prefix}{}", meta::random_suffix());
            if let Some(meta) = meta::metadata_mut(&mut body) {
                meta.insert("name".into(), json!(name));
            }
        }
    }
    if name.is_empty() {
        let causes = meta::name_causes("", meta::NameRule::Subdomain);
        return Err(ApiError::invalid(
            &call.resource.kind,
            &call.resource.group,
            "",
            causes,
        ));
    }
    check_namespace(hub, call)?;
    let call = Call {
        name: Some(name.clone()),
        ..call.clone()
    };
    commit(hub, &call, &name, |existing| {
        if existing.is_some() {
            return Err(ApiError::already_exists(
                &call.resource.plural,
                &call.resource.group,
                &name,
            ));
        }
        Ok((finish(&call, Before::Nothing, body.clone(), false)?, true))
    })
    .await
}

/// `update` (PUT) of the object or its status.
pub async fn update(hub: &Hub, call: &Call, body: Value) -> ApiResult<Written> {
    check_identity(call, &body)?;
    let name = call.required_name()?.to_string();
    if meta::meta_str(&body, "name").is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    commit(hub, call, &name, |existing| {
        let existing = existing.as_ref().ok_or_else(|| call.not_found(&name))?;
        check_resource_version(call, existing, &body, &name)?;
        let change = finish(call, Before::Object(existing), body.clone(), false)?;
        Ok((change, false))
    })
    .await
}

/// The patch formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// RFC 6902.
    Json,
    /// RFC 7386.
    Merge,
    /// Kubernetes strategic merge patch (built-in kinds only).
    Strategic,
    /// Server-side apply.
    Apply,
}

impl PatchKind {
    /// The kind for a `Content-Type`.
    pub fn from_content_type(content_type: &str) -> ApiResult<Self> {
        match content_type.split(';').next().unwrap_or_default().trim() {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Ok(Self::Apply),
            other => Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml"
            ))),
        }
    }
}

/// `patch`, including server-side apply.
pub async fn patch(hub: &Hub, call: &Call, kind: PatchKind, body: &[u8]) -> ApiResult<Written> {
    let name = call.required_name()?.to_string();
    if kind == PatchKind::Strategic && call.resource.custom {
        return Err(ApiError::unsupported_media_type(
            "strategic merge patch is not supported for custom resources; use a JSON merge patch \
             or server-side apply",
        ));
    }
    let patch: Value = match kind {
        PatchKind::Apply => crate::body::parse_yaml_or_json(body)?,
        _ => crate::json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
    };
    if kind == PatchKind::Apply {
        if !patch.is_object() {
            return Err(ApiError::bad_request(
                "the object provided is unrecognized: an applied configuration must be an object",
            ));
        }
        check_identity(call, &patch)?;
        if call.manager.is_empty() || call.param("fieldManager").is_none() {
            return Err(ApiError::bad_request(
                "PATCH requests with apply-patch content type require fieldManager to be set",
            ));
        }
        if hub.store.get(&call.key(&name))?.is_none() {
            check_namespace(hub, call)?;
        }
    }
    let force = call.flag("force");
    // What an apply sets, worked out once for every try of the write (a patch is applied
    // as it was sent).
    let (patch, applied) = match kind {
        PatchKind::Apply => (Value::Null, without_status_of(call, patch)),
        _ => (patch, Value::Null),
    };
    commit(hub, call, &name, |existing| {
        if kind == PatchKind::Merge {
            if let Some(change) = status_patched_in_place(call, existing, &patch, &name) {
                return Ok((change?, false));
            }
        }
        let Some(existing) = existing.as_ref() else {
            if kind != PatchKind::Apply {
                return Err(call.not_found(&name));
            }
            let mut writer = call.writer();
            let api_version = call.api_version();
            writer.api_version = &api_version;
            let mut object = managed::apply(None, &applied, &writer, force)?;
            if let Some(meta) = meta::metadata_mut(&mut object) {
                meta.insert("name".into(), json!(name));
            }
            return Ok((finish(call, Before::Nothing, object, true)?, true));
        };
        let candidate = match kind {
            PatchKind::Apply => {
                let mut writer = call.writer();
                let api_version = call.api_version();
                writer.api_version = &api_version;
                let object = managed::apply(Some(existing), &applied, &writer, force)?;
                let change = finish(call, Before::Object(existing), object, true)?;
                return Ok((change, false));
            }
            other => patched(existing, other, &patch).map_err(|failure| match failure {
                PatchFailure::Unreadable(message) => ApiError::bad_request(message),
                PatchFailure::Inapplicable(message) => ApiError::invalid(
                    &call.resource.kind,
                    &call.resource.group,
                    &name,
                    vec![Cause {
                        kind: "FieldValueInvalid".into(),
                        message,
                        field: String::new(),
                    }],
                ),
            })?,
        };
        check_resource_version(call, existing, &patch, &name)?;
        let change = finish(call, Before::Object(existing), candidate, false)?;
        Ok((change, false))
    })
    .await
}

/// A JSON merge patch of the status of a custom resource, applied to the stored tree itself
/// (taken from `existing`) rather than to a copy, as agents and controllers report status
/// on every deployment: the result is the one [`patched`] and [`finish`] give, since such a
/// write keeps everything but the status as stored. `None` when the write is not one of
/// those (the object is missing or being deleted, the patch is not an object or sends
/// managedFields): the general path handles it.
fn status_patched_in_place(
    call: &Call,
    existing: &mut Option<Value>,
    patch: &Value,
    name: &str,
) -> Option<ApiResult<Change>> {
    let resource = &call.resource;
    if !(call.status_call() && resource.custom && resource.has_status(&call.version)) {
        return None;
    }
    let edits_status_only = patch.is_object() && patch.pointer("/metadata/managedFields").is_none();
    let stored = existing.as_ref()?;
    if !edits_status_only || !stored.is_object() || meta::is_deleting(stored) {
        return None;
    }
    if let Err(stale) = check_resource_version(call, stored, patch, name) {
        return Some(Err(stale));
    }
    let mut object = existing.take()?;
    let map = object.as_object_mut()?;
    let old_status = map.get("status").cloned();
    // A merge patch of the whole object, as far as the status goes; `finish` would put back
    // every other member as stored.
    match patch.get("status") {
        None => {}
        Some(Value::Null) => {
            map.remove("status");
        }
        Some(status) => json_patch::merge(map.entry("status").or_insert(Value::Null), status),
    }
    Some(finish(call, Before::Status(old_status), object, false))
}

/// Why a patch could not be applied.
pub enum PatchFailure {
    /// The patch itself is not one (a JSON patch that is not a list of operations).
    Unreadable(String),
    /// The patch does not apply to the object (a JSON patch `test` failing, a missing path).
    Inapplicable(String),
}

/// `doc` with a JSON, merge or strategic merge `patch` applied. A server-side apply is not
/// one: it needs the object's owners (see [`managed::apply`]).
pub fn patched(doc: &Value, kind: PatchKind, patch: &Value) -> Result<Value, PatchFailure> {
    let mut doc = doc.clone();
    match kind {
        PatchKind::Json => {
            let operations: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| PatchFailure::Unreadable(format!("invalid JSON patch: {e}")))?;
            json_patch::patch(&mut doc, &operations).map_err(|e| {
                PatchFailure::Inapplicable(format!("the JSON patch could not be applied: {e}"))
            })?;
        }
        PatchKind::Merge => json_patch::merge(&mut doc, patch),
        PatchKind::Strategic => {
            fleet_objects::smp::merge(&mut doc, patch, fleet_objects::smp::ListMerge::BuiltIn)
        }
        PatchKind::Apply => {
            return Err(PatchFailure::Unreadable(
                "a server-side apply is not a patch of the object".into(),
            ))
        }
    }
    Ok(doc)
}

/// What an apply to the main resource may set: everything but status, when status is a
/// subresource; on the status subresource, only status.
fn without_status_of(call: &Call, mut applied: Value) -> Value {
    let has_status = call.resource.has_status(&call.version);
    if let Some(map) = applied.as_object_mut() {
        if call.status_call() {
            map.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
            if let Some(Value::Object(meta)) = map.get_mut("metadata") {
                meta.retain(|k, _| k == "name" || k == "namespace");
            }
        } else if has_status {
            map.remove("status");
        }
    }
    applied
}

/// The outcome of a delete.
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Value),
    /// The object waits for finalizers; this is its state.
    Pending(Value),
}

/// `delete` of one object.
pub async fn delete(hub: &Hub, call: &Call, options: &Value) -> ApiResult<Deleted> {
    let name = call.required_name()?.to_string();
    let propagation = match options
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or_else(|| call.param("propagationPolicy"))
    {
        Some("Orphan") => Propagation::Orphan,
        _ => Propagation::Background,
    };
    let wanted_rv = options
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
        .map(String::from);
    let wanted_uid = options
        .pointer("/preconditions/uid")
        .and_then(Value::as_str)
        .map(String::from);
    // kubectl sends `--dry-run=server` for deletes in the DeleteOptions body.
    let dry_run = call.dry_run()
        || options
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|modes| modes.iter().any(|m| m == "All"));
    let (pending, last) = hub
        .store
        .write(&call.key(&name), |existing| {
            let existing = existing.as_ref().ok_or_else(|| call.not_found(&name))?;
            if wanted_rv
                .as_deref()
                .is_some_and(|rv| Some(rv) != meta::meta_str(existing, "resourceVersion"))
                || wanted_uid
                    .as_deref()
                    .is_some_and(|uid| Some(uid) != meta::meta_str(existing, "uid"))
            {
                return Err(ApiError::stale(
                    &call.resource.plural,
                    &call.resource.group,
                    &name,
                ));
            }
            if dry_run {
                return Ok((Change::Keep, false));
            }
            let waits = meta::has_finalizers(existing)
                || call.resource.kind == "Namespace" && !call.resource.custom;
            if !waits {
                return Ok((Change::Delete, false));
            }
            if meta::is_deleting(existing) {
                return Ok((Change::Keep, true));
            }
            let mut object = existing.clone();
            if let Some(meta) = meta::metadata_mut(&mut object) {
                meta.insert("deletionTimestamp".into(), json!(meta::now()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            crate::kinds::on_write(&call.resource, &mut object);
            Ok((Change::Put(object), true))
        })
        .await?;
    let last = last
        .map(|version| version.value)
        .ok_or_else(|| call.not_found(&name))?;
    if dry_run {
        return Ok(Deleted::Gone(call.present(&last)));
    }
    if pending {
        hub.after_delete_requested(call, &last);
        return Ok(Deleted::Pending(call.present(&last)));
    }
    hub.after_delete(call, &last, propagation).await;
    Ok(Deleted::Gone(call.present(&last)))
}

/// `deletecollection`: deletes every object the selectors match; returns how many.
pub async fn delete_collection(hub: &Hub, call: &Call, options: &Value) -> ApiResult<Vec<u8>> {
    let page = list(
        hub,
        &Call {
            query: call
                .query
                .iter()
                .filter(|(k, _)| *k != "limit" && *k != "continue")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            ..call.clone()
        },
    )?;
    let mut items = Vec::new();
    for item in page.items {
        let item = item.value()?;
        let name = meta::meta_str(&item, "name")
            .unwrap_or_default()
            .to_string();
        let namespace = meta::meta_str(&item, "namespace")
            .unwrap_or_default()
            .to_string();
        let one = Call {
            name: Some(name),
            namespace,
            ..call.clone()
        };
        match delete(hub, &one, options).await {
            Ok(Deleted::Gone(object) | Deleted::Pending(object)) => {
                items.push(Arc::new(Stored::new(&object)))
            }
            Err(error) if error.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(list_object(
        call,
        Page {
            rv: hub.store.current_rv(),
            items,
            next: None,
            remaining: 0,
        },
    ))
}

/// Whether `object` names no kind.
fn kind_missing(object: &Value) -> bool {
    object
        .get("kind")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
}

/// Drops the metadata members kube-apiserver never stores empty (`omitempty` maps and
/// lists of ObjectMeta).
fn drop_empty_metadata(object: &mut Value) {
    if let Some(meta) = meta::metadata_mut(object) {
        meta.retain(|key, value| {
            let empty = match value {
                Value::Object(map) => map.is_empty(),
                Value::Array(items) => items.is_empty(),
                Value::String(text) => text.is_empty() && key == "generateName",
                _ => false,
            };
            !(empty
                && matches!(
                    key.as_str(),
                    "labels" | "annotations" | "finalizers" | "ownerReferences" | "generateName"
                ))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::ResourceType;
    use std::collections::HashMap;

    #[test]
    fn a_status_write_keeps_everything_else_as_it_was() {
        let old = json!({
            "kind": "Thing",
            "metadata": {"name": "a", "labels": {"x": "1"}, "managedFields": [{"manager": "m"}]},
            "spec": {"size": 1},
            "status": {"ready": false},
        });
        let mut sent = json!({
            "kind": "Thing",
            "metadata": {"name": "a", "labels": {"x": "2"}, "annotations": {"y": "z"}},
            "spec": {"size": 5},
            "extra": true,
            "status": {"ready": true},
        });
        keep_only_status(&mut sent, &old);
        let mut expected = old.clone();
        expected["status"] = json!({"ready": true});
        assert_eq!(sent, expected);

        let managed = json!([{"manager": "n"}]);
        let mut sent = old.clone();
        sent["metadata"]["managedFields"] = managed.clone();
        sent.as_object_mut().map(|o| o.remove("status"));
        keep_only_status(&mut sent, &old);
        assert_eq!(sent.get("status"), None);
        assert_eq!(sent["metadata"]["managedFields"], managed);
        assert_eq!(sent["spec"], old["spec"]);
    }

    /// A status call on a custom resource with a status subresource, by `manager`, in
    /// `version`.
    fn status_call(manager: &str, version: &str) -> Call {
        let resource = ResourceType {
            group: "fleet.cattle.io".into(),
            kind: "BundleDeployment".into(),
            plural: "bundledeployments".into(),
            singular: "bundledeployment".into(),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced: true,
            versions: ["v1alpha1", "v1beta1"]
                .map(|name| crate::registry::Version {
                    name: name.into(),
                    status: true,
                    columns: Vec::new(),
                    schema: None,
                })
                .to_vec(),
            custom: true,
            review: false,
        };
        Call {
            cluster: "local".into(),
            resource: Arc::new(resource),
            version: version.into(),
            namespace: "ns".into(),
            name: Some("a".into()),
            subresource: Some("status".into()),
            query: HashMap::from([("fieldManager".to_string(), manager.to_string())]),
            manager: manager.into(),
            without_managed_fields: false,
            metadata_only: false,
        }
    }

    /// A change as compared in tests: its kind, and the object without the times of its
    /// managedFields entries (a write stamps them with the current second).
    fn outcome(change: ApiResult<Change>) -> Result<(&'static str, Value), String> {
        match change {
            Ok(Change::Put(mut object)) => {
                let entries = object.pointer_mut("/metadata/managedFields");
                for entry in entries.and_then(Value::as_array_mut).into_iter().flatten() {
                    entry.as_object_mut().map(|e| e.remove("time"));
                }
                Ok(("put", object))
            }
            Ok(Change::Keep) => Ok(("keep", Value::Null)),
            Ok(Change::Delete) => Ok(("delete", Value::Null)),
            Err(error) => Err(format!("{error:?}")),
        }
    }

    #[test]
    fn a_status_patch_made_in_place_stores_what_a_patch_of_a_copy_stores() {
        let stored = json!({
            "apiVersion": "fleet.cattle.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {
                "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                "generation": 2, "creationTimestamp": "2026-12-06T01:56:00Z",
                "labels": {"x": "1"},
                "managedFields": [
                    {"manager": "fleet-controller", "operation": "Apply",
                     "apiVersion": "fleet.cattle.io/v1alpha1", "time": "2026-12-06T01:56:00Z",
                     "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:deploymentID": {}}}},
                    {"manager": "fleet-agent", "operation": "Update", "subresource": "status",
                     "apiVersion": "fleet.cattle.io/v1alpha1", "time": "2026-12-06T01:56:00Z",
                     "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:status": {"f:ready": {}, "f:display": {"f:state": {}}}}}
                ]
            },
            "spec": {"deploymentID": "d:1"},
            "status": {"ready": false, "display": {"state": "NotReady"}},
        });
        let patches = [
            json!({"status": {"ready": true, "display": {"state": "Ready"}}}),
            json!({"status": {"display": null, "release": "ns/a:2"}}),
            json!({"status": null}),
            json!({"status": {"ready": false}}),
            json!({"metadata": {"labels": {"x": "2"}}, "spec": {"deploymentID": "d:9"},
                   "status": {"ready": true}}),
            json!({"metadata": {"resourceVersion": "7"}, "status": {"ready": true}}),
            json!({"metadata": {"resourceVersion": "6"}, "status": {"ready": true}}),
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({}),
        ];
        let callers = [
            ("fleet-agent", "v1alpha1"),
            ("someone-else", "v1alpha1"),
            ("fleet-agent", "v1beta1"),
        ];
        for (manager, version) in callers {
            let call = status_call(manager, version);
            for patch in &patches {
                let copied = check_resource_version(&call, &stored, patch, "a").and_then(|()| {
                    let candidate = patched(&stored, PatchKind::Merge, patch)
                        .map_err(|_| ApiError::bad_request("unpatchable"))?;
                    finish(&call, Before::Object(&stored), candidate, false)
                });
                let mut taken = Some(stored.clone());
                let in_place = status_patched_in_place(&call, &mut taken, patch, "a")
                    .unwrap_or_else(|| panic!("{patch} made in place"));
                assert_eq!(
                    outcome(in_place),
                    outcome(copied),
                    "{manager} patching {version} with {patch}"
                );
            }
        }
    }

    #[test]
    fn a_status_patch_not_only_of_the_status_or_of_a_deleting_object_is_not_made_in_place() {
        let call = status_call("fleet-agent", "v1alpha1");
        let patch = json!({"metadata": {"managedFields": [{}]}, "status": {"ready": true}});
        let mut stored = Some(json!({"metadata": {"name": "a"}, "status": {}}));
        assert!(status_patched_in_place(&call, &mut stored, &patch, "a").is_none());
        assert!(stored.is_some(), "left for the general path");
        let deleting = json!({"metadata": {"name": "a", "deletionTimestamp": "2026-12-06T01:56:00Z",
            "finalizers": ["f"]}, "status": {}});
        let mut stored = Some(deleting);
        let patch = json!({"status": {"ready": true}});
        assert!(status_patched_in_place(&call, &mut stored, &patch, "a").is_none());
        for not_an_object in [json!([]), json!("status")] {
            let mut stored = Some(json!({"metadata": {"name": "a"}, "status": {}}));
            let taken = status_patched_in_place(&call, &mut stored, &not_an_object, "a");
            assert!(
                taken.is_none(),
                "{not_an_object} is refused by the general path"
            );
        }
        let mut main = status_call("fleet-agent", "v1alpha1");
        main.subresource = None;
        let mut stored = Some(json!({"metadata": {"name": "a"}, "status": {}}));
        assert!(status_patched_in_place(&main, &mut stored, &patch, "a").is_none());
    }
}
