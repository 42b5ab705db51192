//! The service account a deployment runs as. A bundle's `serviceAccount` names an account
//! in the agent's system namespace, and everything the agent does in its cluster for that
//! deployment (apply, prune, hooks, release records, uninstall) is done impersonating it,
//! so the account's RBAC bounds what the bundle may touch. As in Fleet, without
//! `serviceAccount` the account `fleet-default` is used when it exists there, and the
//! agent's own rights otherwise.

use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Api;

use crate::{Agent, Error};

/// The system namespace Fleet's agent runs in and looks accounts up in.
pub const SYSTEM_NAMESPACE: &str = "cattle-fleet-system";

/// The account used when a bundle names none, if it exists (Fleet's default).
pub const DEFAULT_SERVICE_ACCOUNT: &str = "fleet-default";

/// How old an answer about an account a change to the cluster may still use: the
/// deployments of one commit reach an agent together, and one reconcile answers for them all.
const FRESH: Duration = Duration::from_secs(1);

/// The user to impersonate for a deployment asking for `requested`
/// (`system:serviceaccount:<system namespace>:<name>`), or `None` to act as the agent.
/// A named account that does not exist is an error. With `fresh` (a change to the
/// cluster), an answer under [`FRESH`] old is reused; otherwise one under
/// [`crate::recent::RECHECK`] old.
pub async fn account_for(
    agent: &Agent,
    requested: Option<&str>,
    fresh: bool,
) -> Result<Option<String>, Error> {
    let requested = requested.filter(|name| !name.is_empty());
    let name = requested.unwrap_or(DEFAULT_SERVICE_ACCOUNT);
    let namespace = agent.system_namespace.as_str();
    let within = if fresh { FRESH } else { crate::recent::RECHECK };
    let exists = match agent.accounts.get(name, within) {
        Some(exists) => exists,
        None => {
            let accounts: Api<ServiceAccount> = Api::namespaced(agent.local.clone(), namespace);
            let exists = accounts.get_opt(name).await?.is_some();
            agent.accounts.remember(name, exists);
            exists
        }
    };
    match (exists, requested) {
        (true, _) => Ok(Some(format!("system:serviceaccount:{namespace}:{name}"))),
        (false, None) => Ok(None),
        (false, Some(_)) => Err(Error::Invalid(format!(
            "serviceAccount {name}: no such service account in {namespace}"
        ))),
    }
}

/// A client of the same cluster as `client` whose every request carries
/// `Impersonate-User: user`.
pub fn impersonating(client: &kube::Client, user: &str) -> Result<kube::Client, Error> {
    let value = http::HeaderValue::from_str(user)
        .map_err(|_| Error::Invalid(format!("{user:?} cannot be impersonated")))?;
    let name = http::HeaderName::from_static("impersonate-user");
    Ok(fleet_objects::client::with_header(client, name, value))
}
