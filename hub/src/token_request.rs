//! Service account tokens made on request (`POST .../serviceaccounts/<name>/token`, what
//! `kubectl create token` and kubelets ask for): bound to the account's uid, expiring, and
//! never stored. A token carries who and until when, signed with HMAC-SHA256 under the
//! cluster's admin token, so it stays valid across restarts and dies with the account, at
//! its expiry, or when the cluster's admin token changes.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::status::{ApiError, ApiResult};

/// What every token made here starts with.
const PREFIX: &str = "fleet-sa.";

/// Kubernetes refuses requests for less than ten minutes.
const MIN_SECONDS: i64 = 600;
/// The lifetime when the request names none, as in Kubernetes.
const DEFAULT_SECONDS: i64 = 3_600;
/// The longest lifetime granted: a year.
const MAX_SECONDS: i64 = 365 * 24 * 3_600;

/// Who a token stands for and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// Logical cluster.
    #[serde(rename = "c")]
    pub cluster: String,
    /// The account's namespace.
    #[serde(rename = "n")]
    pub namespace: String,
    /// The account's name.
    #[serde(rename = "s")]
    pub name: String,
    /// The account's uid: a new account of the same name does not inherit the token.
    #[serde(rename = "u")]
    pub uid: String,
    /// Expiry, in seconds since the epoch.
    #[serde(rename = "e")]
    pub expires: i64,
    /// When it was made, in seconds since the epoch (0 in tokens made before it was kept).
    #[serde(rename = "i", default)]
    pub issued: i64,
}

/// How far in the future a token may say it was made (clocks of one host drift little).
const ISSUED_LEEWAY: i64 = 60;

fn signature(key: &str, payload: &str) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).ok()?;
    mac.update(payload.as_bytes());
    Some(mac)
}

/// A signed token for `claims`, keyed by the cluster's admin token.
pub(crate) fn sign(claims: &Claims, key: &str) -> ApiResult<String> {
    let json = serde_json::to_vec(claims).map_err(|e| ApiError::internal(e.to_string()))?;
    let payload = URL_SAFE_NO_PAD.encode(json);
    let mac = signature(key, &payload).ok_or_else(|| ApiError::internal("no signing key"))?;
    let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    Ok(format!("{PREFIX}{payload}.{tag}"))
}

/// A token made here as a client presents it: its claims are read before the signature is
/// checked, since they name the cluster whose key signed it.
pub(crate) struct Presented<'a> {
    payload: &'a str,
    tag: &'a str,
    /// What the token claims, not yet verified.
    pub claims: Claims,
}

/// `token` read as one made here, or `None` for any other token.
pub(crate) fn presented(token: &str) -> Option<Presented<'_>> {
    let (payload, tag) = token.strip_prefix(PREFIX)?.split_once('.')?;
    let claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    Some(Presented {
        payload,
        tag,
        claims,
    })
}

impl Presented<'_> {
    /// The claims, if `key` signed them and they have not expired at `now`. A token
    /// made later than now, or expiring further off than any made now could (more than the
    /// longest lifetime), was made while the clock was ahead: it is refused, not honoured
    /// for as long again.
    pub(crate) fn verify(self, key: &str, now: i64) -> Option<Claims> {
        let tag = URL_SAFE_NO_PAD.decode(self.tag).ok()?;
        signature(key, self.payload)?.verify_slice(&tag).ok()?;
        let left = self.claims.expires.saturating_sub(now);
        let made_in_the_future = self.claims.issued > now.saturating_add(ISSUED_LEEWAY);
        (left > 0 && left <= MAX_SECONDS && !made_in_the_future).then_some(self.claims)
    }
}

/// The lifetime a TokenRequest asks for, checked as Kubernetes checks it.
pub(crate) fn lifetime(request: &Value) -> ApiResult<i64> {
    let asked = request
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_SECONDS);
    if asked < MIN_SECONDS {
        return Err(ApiError::bad_request(format!(
            "TokenRequest spec.expirationSeconds: may not specify a duration less than {MIN_SECONDS} seconds"
        )));
    }
    Ok(asked.min(MAX_SECONDS))
}

/// The answer to a TokenRequest: the request with its status filled in.
pub(crate) fn answer(request: &Value, token: &str, claims: &Claims, lifetime: i64) -> Value {
    let expires = jiff::Timestamp::from_second(claims.expires)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    let audiences = request
        .pointer("/spec/audiences")
        .cloned()
        .unwrap_or_else(|| json!([]));
    json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": claims.name, "namespace": claims.namespace},
        "spec": {"audiences": audiences, "expirationSeconds": lifetime,
                 "boundObjectRef": request.pointer("/spec/boundObjectRef")},
        "status": {"token": token, "expirationTimestamp": expires},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(expires: i64) -> Claims {
        Claims {
            cluster: "dev".into(),
            namespace: "ns".into(),
            name: "bot".into(),
            uid: "u-1".into(),
            expires,
            issued: expires - 600,
        }
    }

    #[test]
    fn tokens_verify_only_with_their_key_before_expiry_and_unaltered() {
        let token = sign(&claims(1_000), "key").expect("signed");
        let verify = |token: &str, key: &str, now: i64| presented(token)?.verify(key, now);
        assert_eq!(
            presented(&token).map(|p| p.claims.cluster).as_deref(),
            Some("dev")
        );
        assert_eq!(verify(&token, "key", 999), Some(claims(1_000)));
        assert_eq!(verify(&token, "key", 1_000), None, "expired");
        let from_the_future =
            sign(&claims(1_000 + MAX_SECONDS + 400 * 86_400), "key").expect("signed");
        assert_eq!(
            verify(&from_the_future, "key", 1_000),
            None,
            "made with the clock 400 days ahead"
        );
        let made_later = Claims {
            issued: 5_000,
            ..claims(5_600)
        };
        let made_later = sign(&made_later, "key").expect("signed");
        assert_eq!(
            verify(&made_later, "key", 1_000),
            None,
            "made 4,000 s from now"
        );
        assert_eq!(verify(&token, "other", 999), None, "wrong key");
        let forged = sign(&claims(9_999), "guess").expect("signed");
        let (_, forged_payload) = forged.split_at(PREFIX.len());
        let (_, tag) = token.rsplit_once('.').expect("tag");
        let spliced = format!(
            "{PREFIX}{}.{tag}",
            forged_payload.split('.').next().expect("payload")
        );
        assert_eq!(verify(&spliced, "key", 999), None, "payload swapped");
        assert_eq!(verify("not-a-token", "key", 0), None);
    }

    #[test]
    fn lifetimes_are_bounded_as_kubernetes_bounds_them() {
        assert_eq!(lifetime(&json!({})).expect("default"), 3_600);
        assert_eq!(
            lifetime(&json!({"spec": {"expirationSeconds": 7_200}})).expect("asked"),
            7_200
        );
        assert!(lifetime(&json!({"spec": {"expirationSeconds": 60}})).is_err());
        assert_eq!(
            lifetime(&json!({"spec": {"expirationSeconds": i64::MAX}})).expect("capped"),
            MAX_SECONDS
        );
    }
}
