//! Kubernetes `Status` errors: every refusal the hub sends has a reason and a code.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// One field-level cause of an `Invalid` or `Conflict` status.
pub(crate) use fleet_objects::schema::Cause;

/// An API error, rendered as a `meta.k8s.io/v1` `Status` object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason, e.g. `NotFound`.
    pub reason: &'static str,
    /// Human-readable message, worded as kube-apiserver words it.
    pub message: String,
    /// `details` of the Status: name, group, kind and causes.
    pub details: Option<Value>,
}

/// The result of an API operation.
pub(crate) type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, plural: &str, group: &str, name: &str) -> Self {
        let mut details = json!({"name": name, "kind": plural});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        self.details = Some(details);
        self
    }

    /// `404 NotFound` for a named object.
    pub fn not_found(plural: &str, group: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(plural, group)),
        )
        .with_details(plural, group, name)
    }

    /// `404 NotFound` for a path that names nothing the server knows.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// `409 AlreadyExists`.
    pub fn already_exists(plural: &str, group: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(plural, group)),
        )
        .with_details(plural, group, name)
    }

    /// `409 Conflict` for a stale resourceVersion.
    pub fn stale(plural: &str, group: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                qualified(plural, group)
            ),
        )
        .with_details(plural, group, name)
    }

    /// `409 Conflict` for server-side apply field ownership conflicts.
    pub fn apply_conflicts(causes: Vec<Cause>) -> Self {
        let noun = if causes.len() == 1 {
            "conflict"
        } else {
            "conflicts"
        };
        let listing: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.message, c.field))
            .collect();
        let message = format!(
            "Apply failed with {} {noun}: {}",
            causes.len(),
            listing.join("\n")
        );
        let mut error = Self::new(409, "Conflict", message);
        error.details = Some(json!({"causes": causes_json(&causes)}));
        error
    }

    /// `422 Invalid` with field causes.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        let listing: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let subject = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = match listing.as_slice() {
            [one] => format!("{subject} \"{name}\" is invalid: {one}"),
            many => format!("{subject} \"{name}\" is invalid: [{}]", many.join(", ")),
        };
        let mut error = Self::new(422, "Invalid", message);
        let mut details = json!({"name": name, "kind": kind, "causes": causes_json(&causes)});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        error.details = Some(details);
        error
    }

    /// `400 BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `401 Unauthorized`.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// `403 Forbidden`, worded as the RBAC authorizer words it.
    pub fn forbidden(user: &str, verb: &str, plural: &str, group: &str, namespace: &str) -> Self {
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{namespace}\"")
        };
        Self::new(
            403,
            "Forbidden",
            format!(
                "{} is forbidden: User \"{user}\" cannot {verb} resource \"{plural}\" \
                 in API group \"{group}\" {scope}",
                qualified(plural, group)
            ),
        )
    }

    /// `403 Forbidden` for a path that is not a resource's (`/metrics`), worded as the RBAC
    /// authorizer words it.
    pub fn forbidden_path(user: &str, verb: &str, path: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("forbidden: User \"{user}\" cannot {verb} path \"{path}\""),
        )
    }

    /// `403 Forbidden` for a request that asks to act as someone the hub cannot act as:
    /// it impersonates service accounts only (`Impersonate-User:
    /// system:serviceaccount:<namespace>:<name>`), and ignoring the headers would run the
    /// request as the caller unawares.
    pub fn impersonation_refused() -> Self {
        Self::new(
            403,
            "Forbidden",
            "the hub impersonates service accounts only (Impersonate-User: system:serviceaccount:<namespace>:<name>, without Impersonate-Group, -Uid or -Extra); send the request with the credentials of the user to act as",
        )
    }

    /// `405 MethodNotAllowed`.
    pub fn method_not_allowed(verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({verb})"),
        )
    }

    /// `410 Gone` for a watch from a resourceVersion older than the kept history.
    pub fn gone(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// `410 Gone` for a page of a list whose first page is older than the kept history:
    /// the changes between it and now are no longer known, so the list must start again.
    pub fn continue_expired(listed_at: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!(
                "the continue token is too old: its list was at resourceVersion {listed_at}, \
                 and changes are kept only after {oldest}; start the list again without it"
            ),
        )
    }

    /// `408`: the request's body did not arrive in time.
    pub fn body_timeout(limit: std::time::Duration) -> Self {
        Self::new(
            408,
            "Timeout",
            format!(
                "the request body did not arrive within {}s",
                limit.as_secs()
            ),
        )
    }

    /// `413 RequestEntityTooLarge`.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than {limit} bytes"),
        )
    }

    /// `415 UnsupportedMediaType`.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// `500` with no reason, as kube-apiserver passes on an error etcd gave it (an object
    /// over its request limit).
    pub fn storage(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    /// `500 InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        // In kube-apiserver's order: details before code.
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status["code"] = json!(self.code);
        status
    }
}

fn qualified(plural: &str, group: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

fn causes_json(causes: &[Cause]) -> Value {
    causes
        .iter()
        .map(|c| json!({"reason": c.kind, "message": c.message, "field": c.field}))
        .collect()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (code, axum::Json(self.to_status())).into_response()
    }
}

/// The `Status` a successful delete returns.
pub(crate) fn deleted(plural: &str, group: &str, name: &str, uid: &str) -> Value {
    let mut details = json!({"name": name, "kind": plural, "uid": uid});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
