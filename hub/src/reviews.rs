//! The reviews a caller creates to ask about itself, answered and never stored:
//! `SelfSubjectReview` (`kubectl auth whoami`), `SelfSubjectAccessReview` (`kubectl auth
//! can-i`) and `SelfSubjectRulesReview` (`kubectl auth can-i --list`).

use serde_json::{json, Value};

use crate::auth::{self, Attributes, Identity};
use crate::status::{ApiError, ApiResult};

/// Paths every authenticated caller may read: the hub authorises resources only.
const OPEN_PATHS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/readyz",
    "/openapi",
    "/openapi/*",
    "/version",
    "/version/",
];

/// The groups Kubernetes reports for an identity.
fn groups(identity: &Identity) -> Vec<String> {
    let mut groups = match identity {
        Identity::Admin { .. } => vec!["system:masters".to_string()],
        Identity::ServiceAccount { namespace, .. } => vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ],
    };
    groups.push("system:authenticated".into());
    groups
}

/// Answers the review `kind` that `identity` created with `body`.
pub(crate) fn answer(
    rbac: &auth::Rbac,
    identity: &Identity,
    kind: &str,
    body: &Value,
) -> ApiResult<Value> {
    let status = match kind {
        "SelfSubjectReview" => {
            json!({"userInfo": {"username": identity.user(), "groups": groups(identity)}})
        }
        "SelfSubjectAccessReview" => access(rbac, identity, body)?,
        "SelfSubjectRulesReview" => rules(rbac, identity, body),
        other => return Err(ApiError::bad_request(format!("{other} is not a review"))),
    };
    let mut answer = body.clone();
    if !answer.is_object() {
        answer = json!({});
    }
    answer["status"] = status;
    if answer.get("metadata").is_none() {
        answer["metadata"] = json!({});
    }
    Ok(answer)
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn access(rbac: &auth::Rbac, identity: &Identity, body: &Value) -> ApiResult<Value> {
    let spec = body.get("spec").unwrap_or(&Value::Null);
    let (resource, non_resource) = (
        spec.get("resourceAttributes"),
        spec.get("nonResourceAttributes"),
    );
    let Some((cluster, namespace, name)) = identity.service_account() else {
        return Ok(json!({"allowed": true, "reason": "the cluster's admin token may do anything"}));
    };
    if let Some(path) = non_resource {
        let allowed = text(path, "verb") == "get"
            && OPEN_PATHS.iter().any(|open| match open.strip_suffix('*') {
                Some(prefix) => text(path, "path").starts_with(prefix),
                None => text(path, "path") == *open,
            });
        return Ok(json!({"allowed": allowed}));
    }
    let Some(attributes) = resource else {
        return Err(ApiError::bad_request(
            "SelfSubjectAccessReview: spec needs resourceAttributes or nonResourceAttributes",
        ));
    };
    let subresource = Some(text(attributes, "subresource")).filter(|s| !s.is_empty());
    let object = Some(text(attributes, "name")).filter(|s| !s.is_empty());
    let asked = Attributes {
        verb: text(attributes, "verb"),
        group: text(attributes, "group"),
        resource: text(attributes, "resource"),
        subresource,
        namespace: text(attributes, "namespace"),
        name: object,
    };
    let allowed = rbac.allows(cluster, namespace, name, &asked);
    Ok(if allowed {
        json!({"allowed": true, "reason": "allowed by the cluster's RBAC"})
    } else {
        json!({"allowed": false})
    })
}

fn rules(rbac: &auth::Rbac, identity: &Identity, body: &Value) -> Value {
    let open = json!({"verbs": ["get"], "nonResourceURLs": OPEN_PATHS});
    let Some((cluster, namespace, name)) = identity.service_account() else {
        return json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        });
    };
    let scope = body
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut resource_rules = vec![
        json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}),
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
               "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]}),
    ];
    let mut non_resource_rules = vec![open];
    for rule in rbac
        .granted_rules(cluster, namespace, name, scope)
        .iter()
        .cloned()
    {
        if rule.get("nonResourceURLs").is_some() {
            non_resource_rules.push(rule);
        } else {
            resource_rules.push(rule);
        }
    }
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
}
