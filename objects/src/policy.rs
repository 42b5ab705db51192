//! Policies as gitjob and the controller enforce them: the Policy objects of a namespace
//! combined (any may allow, any may require, the first by name gives a default), the
//! defaults they set on a GitRepo, and what they refuse.

use fleet_api::{GitRepoSpec, HelmOpSpec, Policy};
use regex::Regex;

/// What the Policies of one namespace allow, require and default, combined.
#[derive(Debug, Default)]
pub struct Policies {
    /// Names of the Policies combined, sorted.
    names: Vec<String>,
    require_service_account: bool,
    allowed_service_accounts: Vec<String>,
    allow_namespace_creation: bool,
    default_service_account: Option<String>,
    default_client_secret_name: Option<String>,
    allowed_client_secret_names: Vec<String>,
    allowed_repo_patterns: Vec<Regex>,
    helm_op: HelmOpRules,
}

/// What the Policies of a namespace say of HelmOps, combined.
#[derive(Debug, Default)]
struct HelmOpRules {
    default_service_account: Option<String>,
    default_helm_secret_name: Option<String>,
    allowed_helm_secret_names: Vec<String>,
    allowed_repo_patterns: Vec<Regex>,
    allowed_chart_patterns: Vec<Regex>,
}

/// The first non-empty default offered, in the order the Policies are combined.
fn first_default(current: &mut Option<String>, offered: &Option<String>) {
    if current.is_none() {
        *current = offered.clone().filter(|v| !v.is_empty());
    }
}

/// `patterns` as regular expressions; one that is not is an error naming its Policy and
/// field.
fn compiled(patterns: &[String], policy: &str, field: &str) -> Result<Vec<Regex>, String> {
    patterns
        .iter()
        .map(|pattern| {
            Regex::new(pattern).map_err(|e| format!("Policy {policy}: {field} {pattern:?}: {e}"))
        })
        .collect()
}

impl Policies {
    /// The Policies `policies` combined, in order of name. A repository pattern that is not
    /// a regular expression is an error naming its Policy.
    pub fn combine<P: std::borrow::Borrow<Policy>>(policies: &[P]) -> Result<Self, String> {
        let mut sorted: Vec<&Policy> = policies.iter().map(P::borrow).collect();
        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut combined = Self::default();
        for policy in sorted {
            let name = policy.metadata.name.clone().unwrap_or_default();
            let rules = &policy.rules;
            combined.require_service_account |= rules.require_service_account;
            combined.allow_namespace_creation |= rules.allow_namespace_creation;
            combined
                .allowed_service_accounts
                .extend(rules.allowed_service_accounts.iter().cloned());
            if let Some(git) = &rules.git_repo {
                first_default(
                    &mut combined.default_service_account,
                    &git.default_service_account,
                );
                first_default(
                    &mut combined.default_client_secret_name,
                    &git.default_client_secret_name,
                );
                combined
                    .allowed_client_secret_names
                    .extend(git.allowed_client_secret_names.iter().cloned());
                combined.allowed_repo_patterns.extend(compiled(
                    &git.allowed_repo_patterns,
                    &name,
                    "gitRepo.allowedRepoPatterns",
                )?);
            }
            if let Some(helm) = &rules.helm_op {
                let into = &mut combined.helm_op;
                first_default(
                    &mut into.default_service_account,
                    &helm.default_service_account,
                );
                first_default(
                    &mut into.default_helm_secret_name,
                    &helm.default_helm_secret_name,
                );
                into.allowed_helm_secret_names
                    .extend(helm.allowed_helm_secret_names.iter().cloned());
                into.allowed_repo_patterns.extend(compiled(
                    &helm.allowed_helm_repo_patterns,
                    &name,
                    "helmOp.allowedHelmRepoPatterns",
                )?);
                into.allowed_chart_patterns.extend(compiled(
                    &helm.allowed_chart_patterns,
                    &name,
                    "helmOp.allowedChartPatterns",
                )?);
            }
            combined.names.push(name);
        }
        Ok(combined)
    }

    /// Whether no Policy applies.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether the agent may create namespaces: unless a service account is required, or a
    /// Policy allows it anyway.
    pub fn namespace_creation_allowed(&self) -> bool {
        !self.require_service_account || self.allow_namespace_creation
    }

    /// `spec` with the Policies' defaults for what it leaves unset (service account,
    /// client secret), then checked: the service account, the client secret and the
    /// repository must be allowed.
    pub fn admit_git_repo(&self, spec: &GitRepoSpec) -> Result<GitRepoSpec, String> {
        let mut spec = spec.clone();
        if spec
            .service_account
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            spec.service_account = self.default_service_account.clone();
        }
        if spec
            .client_secret_name
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            spec.client_secret_name = self.default_client_secret_name.clone();
        }
        self.check_service_account(spec.service_account.as_deref())?;
        if let Some(secret) = spec.client_secret_name.as_deref() {
            let allowed = &self.allowed_client_secret_names;
            if !allowed.is_empty() && !allowed.iter().any(|a| a == secret) {
                return Err(self.refusal(format!(
                    "clientSecretName {secret} is not allowed (allowed: {})",
                    allowed.join(", ")
                )));
            }
        }
        let patterns = &self.allowed_repo_patterns;
        if !patterns.is_empty() && !patterns.iter().any(|p| p.is_match(&spec.repo)) {
            let listed: Vec<&str> = patterns.iter().map(Regex::as_str).collect();
            return Err(self.refusal(format!(
                "repo {} matches none of the allowed patterns ({})",
                spec.repo,
                listed.join(", ")
            )));
        }
        Ok(spec)
    }

    /// `spec` with the Policies' defaults for what it leaves unset (service account,
    /// `helmSecretName`), then checked: the service account, the secret, the repository and
    /// the chart must be allowed.
    pub fn admit_helm_op(&self, spec: &HelmOpSpec) -> Result<HelmOpSpec, String> {
        let rules = &self.helm_op;
        let mut spec = spec.clone();
        let account = &mut spec.bundle.options.service_account;
        if account.as_deref().unwrap_or_default().is_empty() {
            account.clone_from(&rules.default_service_account);
        }
        if spec
            .helm_secret_name
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            spec.helm_secret_name
                .clone_from(&rules.default_helm_secret_name);
        }
        self.check_service_account(spec.bundle.options.service_account.as_deref())?;
        if let Some(secret) = spec.helm_secret_name.as_deref().filter(|s| !s.is_empty()) {
            let allowed = &rules.allowed_helm_secret_names;
            if !allowed.is_empty() && !allowed.iter().any(|a| a == secret) {
                return Err(self.refusal(format!(
                    "disallowed helmSecretName {secret} (allowed: {})",
                    allowed.join(", ")
                )));
            }
        }
        let helm = spec.bundle.options.helm.as_deref();
        let field = |value: Option<&Option<String>>| value.cloned().flatten().unwrap_or_default();
        for (what, value, patterns) in [
            (
                "helm.repo",
                field(helm.map(|h| &h.repo)),
                &rules.allowed_repo_patterns,
            ),
            (
                "helm.chart",
                field(helm.map(|h| &h.chart)),
                &rules.allowed_chart_patterns,
            ),
        ] {
            if !patterns.is_empty() && !patterns.iter().any(|p| p.is_match(&value)) {
                let listed: Vec<&str> = patterns.iter().map(Regex::as_str).collect();
                return Err(self.refusal(format!(
                    "{what} {value} matches none of the allowed patterns ({})",
                    listed.join(", ")
                )));
            }
        }
        Ok(spec)
    }

    /// Refuses a service account (`None` or empty: none) the Policies do not allow: none
    /// when one is required, or one not listed when a list is given.
    pub fn check_service_account(&self, account: Option<&str>) -> Result<(), String> {
        let account = account.filter(|a| !a.is_empty());
        match account {
            None if self.require_service_account => {
                Err(self
                    .refusal("a service account is required (serviceAccount is empty)".to_string()))
            }
            Some(account)
                if !self.allowed_service_accounts.is_empty()
                    && !self.allowed_service_accounts.iter().any(|a| a == account) =>
            {
                Err(self.refusal(format!(
                    "serviceAccount {account} is not allowed (allowed: {})",
                    self.allowed_service_accounts.join(", ")
                )))
            }
            _ => Ok(()),
        }
    }

    fn refusal(&self, what: String) -> String {
        format!("refused by Policy {}: {what}", self.names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(name: &str, body: serde_json::Value) -> Policy {
        let mut value = body;
        value["metadata"] = serde_json::json!({"name": name, "namespace": "fleet-local"});
        serde_json::from_value(value).expect("a Policy")
    }

    fn spec(repo: &str, account: Option<&str>) -> GitRepoSpec {
        GitRepoSpec {
            repo: repo.into(),
            service_account: account.map(String::from),
            ..GitRepoSpec::default()
        }
    }

    #[test]
    fn policies_combine_by_union_and_the_first_default_wins() {
        let policies = Policies::combine(&[
            policy(
                "b",
                serde_json::json!({"allowedServiceAccounts": ["ops"],
                    "gitRepo": {"defaultServiceAccount": "ops", "allowedRepoPatterns": ["^https://git\\.example\\.com/"]}}),
            ),
            policy(
                "a",
                serde_json::json!({"requireServiceAccount": true, "allowedServiceAccounts": ["tenant"],
                    "gitRepo": {"defaultServiceAccount": "tenant"}}),
            ),
        ])
        .expect("valid");
        let admitted = policies
            .admit_git_repo(&spec("https://git.example.com/app", None))
            .expect("admitted");
        assert_eq!(admitted.service_account.as_deref(), Some("tenant"));
        assert!(policies
            .admit_git_repo(&spec("https://git.example.com/app", Some("ops")))
            .is_ok());
        let refused = policies
            .admit_git_repo(&spec("https://git.example.com/app", Some("root")))
            .expect_err("not allowed");
        assert_eq!(
            refused,
            "refused by Policy a, b: serviceAccount root is not allowed (allowed: tenant, ops)"
        );
        let elsewhere = policies
            .admit_git_repo(&spec("https://evil.example.org/app", Some("ops")))
            .expect_err("repo");
        assert!(
            elsewhere.contains("matches none of the allowed patterns"),
            "{elsewhere}"
        );
        assert!(!policies.namespace_creation_allowed());
    }

    #[test]
    fn required_accounts_client_secrets_and_bad_patterns() {
        let required = Policies::combine(&[policy(
            "p",
            serde_json::json!({"requireServiceAccount": true, "allowNamespaceCreation": true,
                "gitRepo": {"allowedClientSecretNames": ["git-creds"]}}),
        )])
        .expect("valid");
        assert!(required.namespace_creation_allowed());
        let none = required
            .admit_git_repo(&spec("https://x/y", None))
            .expect_err("required");
        assert!(none.contains("a service account is required"), "{none}");
        let mut other_secret = spec("https://x/y", Some("sa"));
        other_secret.client_secret_name = Some("stolen".into());
        let refused = required.admit_git_repo(&other_secret).expect_err("secret");
        assert!(
            refused.contains("clientSecretName stolen is not allowed"),
            "{refused}"
        );
        assert!(Policies::combine::<Policy>(&[]).expect("none").is_empty());
        let broken = Policies::combine(&[policy(
            "broken",
            serde_json::json!({"gitRepo": {"allowedRepoPatterns": ["("]}}),
        )])
        .expect_err("bad regex");
        assert!(
            broken.starts_with("Policy broken: gitRepo.allowedRepoPatterns \"(\""),
            "{broken}"
        );
    }

    /// Fleet's `policy_test.go` HelmOp cases: a required service account, and a
    /// `helmSecretName` outside the allowed ones, each refused naming the field; defaults
    /// filled in; repository and chart patterns checked.
    #[test]
    fn helm_ops_get_defaults_and_are_refused_as_fleet_refuses_them() {
        let helmop = |body: serde_json::Value| -> HelmOpSpec {
            serde_json::from_value(body).expect("a HelmOp spec")
        };
        let required = Policies::combine(&[policy(
            "strict",
            serde_json::json!({"requireServiceAccount": true}),
        )])
        .expect("valid");
        let refused = required
            .admit_helm_op(&helmop(serde_json::json!({"helm": {"repo": "https://charts.example.com", "chart": "placeholder"}})))
            .expect_err("no service account");
        assert!(refused.contains("serviceAccount"), "{refused}");

        let secrets = Policies::combine(&[policy(
            "secrets",
            serde_json::json!({"helmOp": {"allowedHelmSecretNames": ["approved-secret"],
                "defaultServiceAccount": "deployer",
                "allowedHelmRepoPatterns": ["^https://charts\\.example\\.com"],
                "allowedChartPatterns": ["^place"]}}),
        )])
        .expect("valid");
        let refused = secrets
            .admit_helm_op(&helmop(
                serde_json::json!({"helmSecretName": "unapproved-secret",
                "helm": {"repo": "https://charts.example.com", "chart": "placeholder"}}),
            ))
            .expect_err("secret");
        assert!(
            refused.contains("disallowed helmSecretName unapproved-secret"),
            "{refused}"
        );
        let admitted = secrets
            .admit_helm_op(&helmop(
                serde_json::json!({"helmSecretName": "approved-secret",
                "helm": {"repo": "https://charts.example.com", "chart": "placeholder"}}),
            ))
            .expect("admitted");
        assert_eq!(
            admitted.bundle.options.service_account.as_deref(),
            Some("deployer")
        );
        for (repo, chart) in [
            ("https://evil.example.org", "placeholder"),
            ("https://charts.example.com", "other"),
        ] {
            let refused = secrets
                .admit_helm_op(&helmop(
                    serde_json::json!({"helm": {"repo": repo, "chart": chart}}),
                ))
                .expect_err("pattern");
            assert!(
                refused.contains("matches none of the allowed patterns"),
                "{refused}"
            );
        }
    }
}
