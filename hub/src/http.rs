//! The HTTP front: one handler that authenticates, routes and answers every request.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use crate::auth::{Attributes, Identity};
use crate::body::{parse_json, MAX_BODY};
use crate::call::Call;
use crate::discovery;
use crate::hub::Hub;
use crate::registry::Registry;
use crate::route::{self, ResourcePath, Route};
use crate::status::{self, ApiError, ApiResult};
use crate::table::{self, Include};
use crate::verbs::{self, Deleted, PatchKind};
use crate::watch::{self, TableFormat};

/// The router serving the whole API.
pub fn router(hub: Arc<Hub>) -> Router {
    Router::new().fallback(handle).with_state(hub)
}

fn json_response(code: StatusCode, value: &Value) -> Response {
    text_response(code, serde_json::to_vec(value).unwrap_or_default().into())
}

/// A response of JSON text, such as a stored object's.
fn text_response(code: StatusCode, text: Bytes) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

async fn handle(
    State(hub): State<Arc<Hub>>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = std::time::Instant::now();
    let mut body = Some(body);
    let result = answer(&hub, &method, &uri, query, &headers, &mut body).await;
    // A request answered before its body was read (refused: 401, 403, 404...) has it read
    // now, so that an HTTP/2 client gets the answer rather than a reset of the stream it is
    // still sending on.
    if let Some(unread) = body {
        drain(unread).await;
    }
    let response = result.unwrap_or_else(IntoResponse::into_response);
    tracing::debug!(%method, %uri, status = response.status().as_u16(), elapsed_us = started.elapsed().as_micros() as u64, "request");
    response
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

fn authenticate(hub: &Hub, headers: &HeaderMap, cluster: Option<&str>) -> ApiResult<Identity> {
    let token = header_str(headers, header::AUTHORIZATION)
        .strip_prefix("Bearer ")
        .map(str::trim)
        .ok_or_else(ApiError::unauthorized)?;
    let identity = hub.identify(token).ok_or_else(ApiError::unauthorized)?;
    if cluster.is_some_and(|cluster| identity.cluster() != cluster) {
        return Err(ApiError::unauthorized());
    }
    Ok(identity)
}

/// `/healthz`, `/readyz`, `/livez`: 503 with the reason while storage refuses writes.
fn health(hub: &Hub) -> Response {
    match hub.store.health() {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}

async fn answer(
    hub: &Arc<Hub>,
    method: &Method,
    uri: &Uri,
    query: HashMap<String, String>,
    headers: &HeaderMap,
    body: &mut Option<Body>,
) -> ApiResult<Response> {
    let (named, route) = route::parse(uri.path()).ok_or_else(|| ApiError::no_route(uri.path()))?;
    if route == Route::Health {
        return Ok(health(hub));
    }
    // A path without a cluster prefix (`kubectl get --raw` drops the kubeconfig's) goes
    // to the caller's own cluster: a token holds for one cluster only.
    let identity = authenticate(hub, headers, named.as_deref())?;
    let cluster = identity.cluster().to_owned();
    let identity = impersonated(hub, identity, headers)?;
    let registry = hub
        .registry(&cluster)
        .ok_or_else(|| ApiError::not_found("clusters", "", &cluster))?;
    let accept = header_str(headers, header::ACCEPT);
    let aggregated = discovery::wants_aggregated(accept);
    let discovery_answer = |value: Option<Value>,
                            aggregated_type: Option<discovery::Aggregated>|
     -> ApiResult<Response> {
        let value = value.ok_or_else(|| ApiError::no_route(uri.path()))?;
        let mut response = json_response(StatusCode::OK, &value);
        if let Some(version) = aggregated_type {
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(version.content_type()),
            );
        }
        Ok(response)
    };
    match route {
        Route::Health => Ok(health(hub)),
        Route::Metrics => crate::metrics::answer(hub, &identity, &cluster),
        Route::Version => discovery_answer(Some(discovery::version()), None),
        Route::CoreVersions => match aggregated {
            Some(version) => discovery_answer(
                Some(discovery::aggregated_core(&registry, version)),
                aggregated,
            ),
            None => discovery_answer(Some(discovery::core_versions()), None),
        },
        Route::Groups => match aggregated {
            Some(version) => discovery_answer(
                Some(discovery::aggregated_groups(&registry, version)),
                aggregated,
            ),
            None => discovery_answer(Some(discovery::groups(&registry)), None),
        },
        Route::Group(group) => discovery_answer(discovery::group(&registry, &group), None),
        Route::Resources(group, version) => {
            discovery_answer(discovery::resources(&registry, &group, &version), None)
        }
        Route::OpenApiV2 if crate::openapi::gnostic::wanted(accept) => {
            let body = crate::openapi::gnostic::encode(&crate::openapi::v2(&registry));
            Ok((
                [(header::CONTENT_TYPE, crate::openapi::gnostic::CONTENT_TYPE)],
                body,
            )
                .into_response())
        }
        Route::OpenApiV2 => discovery_answer(Some(crate::openapi::v2(&registry)), None),
        Route::OpenApiV3Index => discovery_answer(
            Some(crate::openapi::v3_index(
                &registry,
                cluster_prefix(named.as_deref()),
            )),
            None,
        ),
        Route::OpenApiV3(group, version) => {
            discovery_answer(crate::openapi::v3(&registry, &group, &version), None)
        }
        Route::Resource(path) => {
            let call = call_for(&registry, cluster, path, query, headers)?;
            let verb = verb(method, &call)?;
            if call.resource.review {
                return review(hub, &identity, &call, verb, headers, body).await;
            }
            authorize(hub, &identity, &call, verb)?;
            let bytes = read_body(taken(body)).await?;
            let bytes = decoded_body(header_str(headers, header::CONTENT_TYPE), bytes).await?;
            match call.subresource.as_deref() {
                Some("scale") => {
                    let kind = (verb == "patch")
                        .then(|| {
                            PatchKind::from_content_type(header_str(headers, header::CONTENT_TYPE))
                        })
                        .transpose()?;
                    let scale = crate::subresources::scale(hub, &call, verb, kind, &bytes).await?;
                    Ok(json_response(StatusCode::OK, &scale))
                }
                Some("token") => {
                    let answer = hub.request_token(&call, &parse_json(&bytes)?)?;
                    Ok(json_response(StatusCode::CREATED, &answer))
                }
                _ => resource(hub, call, verb, method, headers, accept, bytes).await,
            }
        }
    }
}

/// A review: every authenticated caller may ask about itself, as Kubernetes' default
/// `system:basic-user` role allows.
async fn review(
    hub: &Hub,
    identity: &Identity,
    call: &Call,
    verb: &str,
    headers: &HeaderMap,
    body: &mut Option<Body>,
) -> ApiResult<Response> {
    if verb != "create" {
        return Err(ApiError::method_not_allowed(verb));
    }
    let bytes = decoded_body(
        header_str(headers, header::CONTENT_TYPE),
        read_body(taken(body)).await?,
    )
    .await?;
    let asked: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the review is not JSON: {e}")))?;
    let answer = crate::reviews::answer(&hub.rbac, identity, &call.resource.kind, &asked)?;
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// The `/clusters/<name>` prefix the request's path had, for paths in the answer.
fn cluster_prefix(named: Option<&str>) -> String {
    named
        .map(|cluster| format!("/clusters/{cluster}"))
        .unwrap_or_default()
}

fn call_for(
    registry: &Registry,
    cluster: String,
    path: ResourcePath,
    query: HashMap<String, String>,
    headers: &HeaderMap,
) -> ApiResult<Call> {
    let missing = || {
        let plural = &path.plural;
        ApiError::no_route(&format!("{plural} in {}/{}", path.group, path.version))
    };
    let resource = registry
        .find(&path.group, &path.version, &path.plural)
        .ok_or_else(missing)?;
    if path.namespace.is_some() && !resource.namespaced {
        return Err(missing());
    }
    if let Some(sub) = path.subresource.as_deref() {
        if !crate::subresources::served(&resource, &path.version, sub) {
            return Err(missing());
        }
    }
    let agent = header_str(headers, header::USER_AGENT);
    let manager = query
        .get("fieldManager")
        .cloned()
        .unwrap_or_else(|| agent.split('/').next().unwrap_or_default().to_string());
    Ok(Call {
        cluster,
        resource,
        version: path.version,
        namespace: path.namespace.unwrap_or_default(),
        name: path.name,
        subresource: path.subresource,
        query,
        manager: if manager.is_empty() {
            "unknown".into()
        } else {
            manager
        },
        without_managed_fields: headers
            .get(fleet_objects::hints::MANAGED_FIELDS_HEADER)
            .is_some_and(|value| value == fleet_objects::hints::OMIT_MANAGED_FIELDS),
        metadata_only: crate::partial::wanted(header_str(headers, header::ACCEPT)),
    })
}

fn verb(method: &Method, call: &Call) -> ApiResult<&'static str> {
    let named = call.name.is_some();
    let watching = crate::call::flag(call.query.get("watch").map(String::as_str));
    Ok(match (method.as_str(), named) {
        ("GET", _) if watching => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("POST", true) if call.subresource.is_some() => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        (other, _) => return Err(ApiError::method_not_allowed(other)),
    })
}

/// The identity a request runs as: the caller's, or with `Impersonate-User:
/// system:serviceaccount:<namespace>:<name>` that service account's, when the caller may
/// `impersonate` it (an admin may; a service account needs RBAC's `impersonate` verb on
/// `serviceaccounts`), as kube-apiserver decides. Other users, groups, uids and extras
/// are refused: the hub knows no identities but its admins and service accounts, and
/// ignoring the headers would run the request as the caller unawares.
fn impersonated(hub: &Hub, identity: Identity, headers: &HeaderMap) -> ApiResult<Identity> {
    let mut asked = headers
        .keys()
        .filter(|name| name.as_str().starts_with("impersonate-"));
    let Some(first) = asked.next() else {
        return Ok(identity);
    };
    if first != "impersonate-user" || asked.next().is_some() {
        return Err(ApiError::impersonation_refused());
    }
    let user = header_str(headers, first.clone());
    let Some((namespace, name)) = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty())
    else {
        return Err(ApiError::impersonation_refused());
    };
    let target = Identity::ServiceAccount {
        cluster: identity.cluster().to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    };
    let Some((cluster, caller_namespace, caller)) = identity.service_account() else {
        return Ok(target);
    };
    let attributes = Attributes {
        verb: "impersonate",
        group: "",
        resource: "serviceaccounts",
        subresource: None,
        namespace,
        name: Some(name),
    };
    if hub
        .rbac
        .allows(cluster, caller_namespace, caller, &attributes)
    {
        return Ok(target);
    }
    Err(ApiError::forbidden(
        &identity.user(),
        "impersonate",
        "serviceaccounts",
        "",
        namespace,
    ))
}

fn authorize(hub: &Hub, identity: &Identity, call: &Call, verb: &str) -> ApiResult<()> {
    let Some((cluster, namespace, name)) = identity.service_account() else {
        return Ok(());
    };
    let attributes = Attributes {
        verb,
        group: &call.resource.group,
        resource: &call.resource.plural,
        subresource: call.subresource.as_deref(),
        namespace: &call.namespace,
        name: call.name.as_deref(),
    };
    if hub.rbac.allows(cluster, namespace, name, &attributes) {
        return Ok(());
    }
    let resource = match &call.subresource {
        Some(sub) => format!("{}/{sub}", call.resource.plural),
        None => call.resource.plural.clone(),
    };
    Err(ApiError::forbidden(
        &identity.user(),
        verb,
        &resource,
        &call.resource.group,
        &call.namespace,
    ))
}

/// Bodies up to this size are read to the end even when refused, so that the client
/// gets the 413 answer instead of a reset connection.
const DRAIN_LIMIT: usize = 64 * 1024 * 1024;

/// The request body, taken from its slot: whatever is left there afterwards is drained.
fn taken(body: &mut Option<Body>) -> Body {
    body.take().unwrap_or_default()
}

/// Reads `body` to its end (at most [`DRAIN_LIMIT`], within [`BODY_TIMEOUT`]) and lets it
/// go.
async fn drain(body: Body) {
    let _ = tokio::time::timeout(BODY_TIMEOUT, read_keeping(body, 0)).await;
}

/// How long a request's body may take to arrive, as kube-apiserver gives a request a
/// minute: a client that sends slowly (or never finishes) cannot hold a connection and
/// its buffer for ever.
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The request body, whole, within [`BODY_TIMEOUT`].
async fn read_body(body: Body) -> ApiResult<Bytes> {
    let read = tokio::time::timeout(BODY_TIMEOUT, read_keeping(body, MAX_BODY))
        .await
        .map_err(|_| ApiError::body_timeout(BODY_TIMEOUT))?;
    let (buffer, seen) =
        read.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
    if seen > MAX_BODY {
        return Err(ApiError::too_large(MAX_BODY));
    }
    Ok(Bytes::from(buffer))
}

/// Reads `body` to its end, or past [`DRAIN_LIMIT`] bytes, keeping it only while it is
/// within `keep` bytes; the bytes kept and how many were read.
async fn read_keeping(body: Body, keep: usize) -> Result<(Vec<u8>, usize), axum::Error> {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut buffer = Vec::new();
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        seen += chunk.len();
        if seen > DRAIN_LIMIT {
            break;
        }
        if seen <= keep {
            buffer.extend_from_slice(&chunk);
        }
    }
    Ok((buffer, seen))
}

/// Bodies above this size are decoded on a blocking thread, so that a client sending large
/// or costly bodies does not hold up the workers answering everyone else.
const BLOCKING_DECODE: usize = 64 * 1024;

/// [`json_body`], on a blocking thread for a large body.
async fn decoded_body(content_type: &str, bytes: Bytes) -> ApiResult<Bytes> {
    if bytes.len() <= BLOCKING_DECODE {
        return json_body(content_type, bytes);
    }
    let content_type = content_type.to_string();
    tokio::task::spawn_blocking(move || json_body(&content_type, bytes))
        .await
        .map_err(|e| ApiError::internal(format!("decoding the body: {e}")))?
}

/// The body as JSON: protobuf bodies of the kinds kubectl's `create` commands send are
/// decoded; other binary encodings are refused.
fn json_body(content_type: &str, bytes: Bytes) -> ApiResult<Bytes> {
    let refuse = |why: String| {
        ApiError::unsupported_media_type(format!(
            "{why}; the hub reads JSON and YAML bodies (use `kubectl apply -f` or `kubectl create -f` with a manifest)"
        ))
    };
    if crate::protobuf::is_protobuf(content_type) {
        let object = crate::protobuf::decode(&bytes).map_err(refuse)?;
        return Ok(Bytes::from(serde_json::to_vec(&object).unwrap_or_default()));
    }
    if content_type.contains("cbor") {
        return Err(refuse(format!("{content_type} is not supported")));
    }
    // Create and update bodies may be YAML (`application/yaml`), as kube-apiserver takes
    // them, and apply patches are YAML: both are read here, where a large one is read off
    // the request workers (see `decoded_body`). JSON is YAML, so the apply path reads the
    // result as it read the original; a body already in JSON (what clients send) goes on
    // as it came, checked but not rebuilt.
    if content_type.starts_with("application/yaml")
        || content_type.starts_with("application/apply-patch+yaml")
    {
        if crate::body::is_json_object(&bytes) {
            return Ok(bytes);
        }
        let object = crate::body::parse_yaml_or_json(&bytes)?;
        return Ok(Bytes::from(serde_json::to_vec(&object).unwrap_or_default()));
    }
    Ok(bytes)
}

async fn resource(
    hub: &Arc<Hub>,
    call: Call,
    verb: &str,
    method: &Method,
    headers: &HeaderMap,
    accept: &str,
    bytes: Bytes,
) -> ApiResult<Response> {
    hub.requests
        .count(&call.cluster, verb, &call.resource.plural);
    let as_table = table::wants_table(accept);
    let include = Include::parse(call.query.get("includeObject").map(String::as_str));
    let columns = || table::columns(&call.resource, &call.version);
    match verb {
        "get" => {
            let object = verbs::get(hub, &call)?;
            if as_table {
                let t = table::table(&[&object.value()?], &columns(), include, json!({}));
                return Ok(json_response(StatusCode::OK, &t));
            }
            Ok(text_response(StatusCode::OK, call.wire_text(&object)))
        }
        "list" => {
            let page = verbs::list(hub, &call)?;
            if as_table {
                let mut metadata = json!({"resourceVersion": page.rv.to_string()});
                if let Some(next) = &page.next {
                    metadata["continue"] = json!(next);
                }
                let items = (page.items.iter())
                    .map(|item| item.value())
                    .collect::<ApiResult<Vec<_>>>()?;
                let items: Vec<&Value> = items.iter().collect();
                let t = table::table(&items, &columns(), include, metadata);
                return Ok(json_response(StatusCode::OK, &t));
            }
            let list = verbs::list_object(&call, page);
            Ok(text_response(StatusCode::OK, list.into()))
        }
        "watch" => {
            let format = as_table.then(|| TableFormat {
                columns: columns(),
                include,
            });
            let receiver = watch::start(hub.store.clone(), call, format)?;
            let stream = futures::stream::unfold(receiver, |mut receiver| async move {
                receiver
                    .recv()
                    .await
                    .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), receiver))
            });
            let mut response = Response::new(Body::from_stream(stream));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/json"),
            );
            Ok(response)
        }
        "create" => {
            let written = verbs::create(hub, &call, parse_json(&bytes)?).await?;
            Ok(text_response(
                StatusCode::CREATED,
                call.wire_text(&written.object),
            ))
        }
        "update" => {
            let written = verbs::update(hub, &call, parse_json(&bytes)?).await?;
            Ok(text_response(
                StatusCode::OK,
                call.wire_text(&written.object),
            ))
        }
        "patch" => {
            let kind = PatchKind::from_content_type(header_str(headers, header::CONTENT_TYPE))?;
            let written = verbs::patch(hub, &call, kind, &bytes).await?;
            let code = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(text_response(code, call.wire_text(&written.object)))
        }
        "delete" => {
            let options = parse_json(&bytes)?;
            match verbs::delete(hub, &call, &options).await? {
                Deleted::Pending(object) => Ok(json_response(StatusCode::OK, &object)),
                Deleted::Gone(object) if crate::kinds::returns_deleted_object(&call.resource) => {
                    Ok(json_response(StatusCode::OK, &object))
                }
                Deleted::Gone(object) => {
                    let uid = crate::meta::meta_str(&object, "uid").unwrap_or_default();
                    let name = crate::meta::meta_str(&object, "name").unwrap_or_default();
                    let done =
                        status::deleted(&call.resource.plural, &call.resource.group, name, uid);
                    Ok(json_response(StatusCode::OK, &done))
                }
            }
        }
        "deletecollection" => {
            let options = parse_json(&bytes)?;
            let list = verbs::delete_collection(hub, &call, &options).await?;
            Ok(text_response(StatusCode::OK, list.into()))
        }
        _ => Err(ApiError::method_not_allowed(method.as_str())),
    }
}
