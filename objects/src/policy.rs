//! Policies as gitjob and the controller enforce them: the Policy objects of a namespace
//! combined (any may allow, any may require, the first by name gives a default), with the
//! namespace's GitRepoRestrictions for GitRepos, the defaults they set, and what they
//! refuse, in Rancher Fleet's words.

use fleet_api::{GitRepoRestriction, GitRepoSpec, HelmOpSpec, Policy};
use regex::Regex;

/// A Policy's pattern: the value itself, or a regular expression the whole value matches.
#[derive(Debug)]
struct Pattern {
    text: String,
    regex: Regex,
}

impl Pattern {
    fn allows(&self, value: &str) -> bool {
        self.text == value || self.regex.is_match(value)
    }
}

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
    allowed_repo_patterns: Vec<Pattern>,
    helm_op: HelmOpRules,
}

/// What the Policies of a namespace say of HelmOps, combined.
#[derive(Debug, Default)]
struct HelmOpRules {
    default_service_account: Option<String>,
    default_helm_secret_name: Option<String>,
    allowed_helm_secret_names: Vec<String>,
    allowed_repo_patterns: Vec<Pattern>,
    allowed_chart_patterns: Vec<Pattern>,
}

/// The first non-empty default offered, in the order the Policies are combined.
fn first_default(current: &mut Option<String>, offered: &Option<String>) {
    if current.is_none() {
        *current = offered.clone().filter(|v| !v.is_empty());
    }
}

/// `patterns` as anchored regular expressions (`^(?:p)$`, as Fleet reads a Policy's); one
/// that is not is an error naming its Policy and field.
fn compiled(patterns: &[String], policy: &str, field: &str) -> Result<Vec<Pattern>, String> {
    patterns
        .iter()
        .map(|pattern| {
            let regex = Regex::new(&format!("^(?:{pattern})$"))
                .map_err(|e| format!("Policy {policy}: {field} {pattern:?}: {e}"))?;
            Ok(Pattern {
                text: pattern.clone(),
                regex,
            })
        })
        .collect()
}

/// Go's `%v` of a list of texts: `[a b]`.
fn go_list<S: AsRef<str>>(items: &[S]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("[{}]", items.join(" "))
}

/// Fleet's `isAllowed`: an empty value, or any value when nothing is listed, or a value
/// listed.
fn is_allowed(value: &str, allowed: &[String]) -> Result<(), String> {
    if value.is_empty() || listed(value, allowed) {
        return Ok(());
    }
    Err(format!("{value} not in allowed set {}", go_list(allowed)))
}

/// Whether `value` may be used under an allow-list: anything when the list is empty.
fn listed(value: &str, allowed: &[String]) -> bool {
    allowed.is_empty() || allowed.iter().any(|a| a == value)
}

fn first_non_empty(values: &[Option<&str>]) -> String {
    values
        .iter()
        .flatten()
        .find(|v| !v.is_empty())
        .map_or_else(String::new, |v| v.to_string())
}

/// The GitRepoRestrictions of a namespace combined as Fleet combines them: in order of
/// name, the first non-empty default wins and the lists add up.
#[derive(Debug, Default)]
pub struct Restrictions {
    default_service_account: Option<String>,
    default_client_secret_name: Option<String>,
    allowed_service_accounts: Vec<String>,
    allowed_client_secret_names: Vec<String>,
    allowed_repo_patterns: Vec<String>,
    allowed_target_namespaces: Vec<String>,
    selects_target_namespaces: bool,
}

impl Restrictions {
    /// `restrictions` combined.
    pub fn combine(restrictions: &[GitRepoRestriction]) -> Self {
        let mut sorted: Vec<&GitRepoRestriction> = restrictions.iter().collect();
        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut combined = Self::default();
        for restriction in sorted {
            let rules = &restriction.rules;
            first_default(
                &mut combined.default_service_account,
                &rules.default_service_account,
            );
            first_default(
                &mut combined.default_client_secret_name,
                &rules.default_client_secret_name,
            );
            for (into, from) in [
                (
                    &mut combined.allowed_service_accounts,
                    &rules.allowed_service_accounts,
                ),
                (
                    &mut combined.allowed_client_secret_names,
                    &rules.allowed_client_secret_names,
                ),
                (
                    &mut combined.allowed_repo_patterns,
                    &rules.allowed_repo_patterns,
                ),
                (
                    &mut combined.allowed_target_namespaces,
                    &rules.allowed_target_namespaces,
                ),
            ] {
                into.extend(from.iter().flatten().cloned());
            }
            combined.selects_target_namespaces |= rules.allowed_target_namespace_selector.is_some();
        }
        combined
    }

    /// Fleet's check of a repository against the restrictions' patterns: each the value
    /// itself or an unanchored regular expression.
    fn check_repo(&self, repo: &str) -> Result<(), String> {
        for pattern in &self.allowed_repo_patterns {
            if pattern == repo {
                return Ok(());
            }
            let regex = Regex::new(pattern).map_err(|e| {
                format!("GitRepoRestriction failed to compile regex '{pattern}': {e}")
            })?;
            if regex.is_match(repo) {
                return Ok(());
            }
        }
        Err(format!(
            "{repo} not in allowed set {}",
            go_list(&self.allowed_repo_patterns)
        ))
    }
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

    /// `spec` as Fleet's gitjob admits it under these Policies and the namespace's
    /// GitRepoRestrictions: its service account and client secret defaulted (a
    /// restriction's default before a Policy's), then its target namespace, service
    /// account, repository and client secret checked against what both allow, in that
    /// order, the first refusal in Fleet's words.
    pub fn admit_git_repo(
        &self,
        spec: &GitRepoSpec,
        restrictions: &Restrictions,
    ) -> Result<GitRepoSpec, String> {
        let target = spec.target_namespace.as_deref().unwrap_or_default();
        if !restrictions.allowed_target_namespaces.is_empty() && target.is_empty() {
            return Err("empty targetNamespace denied, because allowedTargetNamespaces restriction is present".into());
        }
        if restrictions.selects_target_namespaces && target.is_empty() {
            return Err("empty targetNamespace denied, because allowedTargetNamespaceSelector restriction is present".into());
        }
        let account = first_non_empty(&[
            spec.service_account.as_deref(),
            restrictions.default_service_account.as_deref(),
            self.default_service_account.as_deref(),
        ]);
        let secret = first_non_empty(&[
            spec.client_secret_name.as_deref(),
            restrictions.default_client_secret_name.as_deref(),
            self.default_client_secret_name.as_deref(),
        ]);
        is_allowed(target, &restrictions.allowed_target_namespaces)
            .map_err(|e| format!("disallowed targetNamespace {target}: {e}"))?;
        let accounts = [
            restrictions.allowed_service_accounts.clone(),
            self.allowed_service_accounts.clone(),
        ]
        .concat();
        is_allowed(&account, &accounts)
            .map_err(|e| format!("disallowed serviceAccount {account}: {e}"))?;
        self.check_repo(&spec.repo, restrictions)
            .map_err(|e| format!("disallowed repo {}: {e}", spec.repo))?;
        let secrets = [
            restrictions.allowed_client_secret_names.clone(),
            self.allowed_client_secret_names.clone(),
        ]
        .concat();
        is_allowed(&secret, &secrets)
            .map_err(|e| format!("disallowed clientSecretName {secret}: {e}"))?;
        if self.require_service_account && account.is_empty() {
            return Err("serviceAccount is required by Policy but is not set".into());
        }
        let mut spec = spec.clone();
        spec.service_account = Some(account).filter(|a| !a.is_empty());
        spec.client_secret_name = Some(secret).filter(|s| !s.is_empty());
        Ok(spec)
    }

    /// A repository passes when either the restrictions' patterns or the Policies' accept
    /// it (none listed: no restriction); when both refuse, the restrictions' refusal.
    fn check_repo(&self, repo: &str, restrictions: &Restrictions) -> Result<(), String> {
        if repo.is_empty() {
            return Ok(());
        }
        let policies = &self.allowed_repo_patterns;
        let by_restrictions =
            (!restrictions.allowed_repo_patterns.is_empty()).then(|| restrictions.check_repo(repo));
        let by_policies = (!policies.is_empty()).then(|| {
            if policies.iter().any(|p| p.allows(repo)) {
                return Ok(());
            }
            let listed: Vec<&str> = policies.iter().map(|p| p.text.as_str()).collect();
            Err(format!("{repo} not in allowed set {}", go_list(&listed)))
        });
        match (by_restrictions, by_policies) {
            (Some(Ok(())), _) | (_, Some(Ok(()))) | (None, None) => Ok(()),
            (Some(refused), _) | (None, Some(refused)) => refused,
        }
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
            if !listed(secret, allowed) {
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
            if !patterns.is_empty() && !patterns.iter().any(|p| p.allows(&value)) {
                let listed: Vec<&str> = patterns.iter().map(|p| p.text.as_str()).collect();
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
            Some(account) if !listed(account, &self.allowed_service_accounts) => {
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

    fn restriction(name: &str, body: serde_json::Value) -> GitRepoRestriction {
        let mut value = body;
        value["metadata"] = serde_json::json!({"name": name, "namespace": "fleet-local"});
        serde_json::from_value(value).expect("a GitRepoRestriction")
    }

    fn no_restrictions() -> Restrictions {
        Restrictions::default()
    }

    #[test]
    fn policies_combine_by_union_and_the_first_default_wins() {
        let policies = Policies::combine(&[
            policy(
                "b",
                serde_json::json!({"allowedServiceAccounts": ["ops"],
                    "gitRepo": {"defaultServiceAccount": "ops", "allowedRepoPatterns": ["https://git\\.example\\.com/.*"]}}),
            ),
            policy(
                "a",
                serde_json::json!({"requireServiceAccount": true, "allowedServiceAccounts": ["tenant"],
                    "gitRepo": {"defaultServiceAccount": "tenant"}}),
            ),
        ])
        .expect("valid");
        let admit = |repo: &str, account: Option<&str>| {
            policies.admit_git_repo(&spec(repo, account), &no_restrictions())
        };
        let admitted = admit("https://git.example.com/app", None).expect("admitted");
        assert_eq!(admitted.service_account.as_deref(), Some("tenant"));
        assert!(admit("https://git.example.com/app", Some("ops")).is_ok());
        assert_eq!(
            admit("https://git.example.com/app", Some("root")).expect_err("not allowed"),
            "disallowed serviceAccount root: root not in allowed set [tenant ops]"
        );
        assert_eq!(
            admit("https://evil.example.org/app", Some("ops")).expect_err("repo"),
            "disallowed repo https://evil.example.org/app: https://evil.example.org/app not in allowed set [https://git\\.example\\.com/.*]"
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
            .admit_git_repo(&spec("https://x/y", None), &no_restrictions())
            .expect_err("required");
        assert_eq!(none, "serviceAccount is required by Policy but is not set");
        let mut other_secret = spec("https://x/y", Some("sa"));
        other_secret.client_secret_name = Some("stolen".into());
        let refused = required
            .admit_git_repo(&other_secret, &no_restrictions())
            .expect_err("secret");
        assert_eq!(
            refused,
            "disallowed clientSecretName stolen: stolen not in allowed set [git-creds]"
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

    /// The cases of Fleet's `restrictions_test.go`, restated: each GitRepoRestriction (and
    /// Policy) with a GitRepo, and what Fleet admits or the start of its refusal.
    #[test]
    fn git_repo_restrictions_admit_and_refuse_as_fleet_does() {
        let git_repo = |body: serde_json::Value| -> GitRepoSpec {
            serde_json::from_value(body).expect("a GitRepo spec")
        };
        let everything = serde_json::json!({"allowedClientSecretNames": ["csn"],
            "allowedRepoPatterns": [".*foo.bar.*"], "allowedServiceAccounts": ["sacc"],
            "allowedTargetNamespaces": ["tns"]});
        let mut with_defaults = everything.clone();
        with_defaults["defaultClientSecretName"] = "dcsn".into();
        with_defaults["defaultServiceAccount"] = "dsacc".into();
        // (restriction, Policy, GitRepo spec, what is set on it or how the refusal starts)
        type Case = (
            serde_json::Value,
            Option<serde_json::Value>,
            serde_json::Value,
            Result<serde_json::Value, &'static str>,
        );
        let cases: Vec<Case> = vec![
            (serde_json::json!({}), None, serde_json::json!({"repo": "http://foo.bar/baz"}), Ok(serde_json::json!({}))),
            (serde_json::json!({"allowedTargetNamespaces": ["foo"]}), None,
                serde_json::json!({"repo": "r"}),
                Err("empty targetNamespace denied, because allowedTargetNamespaces restriction is present")),
            (serde_json::json!({"allowedTargetNamespaceSelector": {"matchLabels": {"team": "frontend"}}}), None,
                serde_json::json!({"repo": "r"}),
                Err("empty targetNamespace denied, because allowedTargetNamespaceSelector restriction is present")),
            (serde_json::json!({"allowedTargetNamespaces": ["foo"]}), None,
                serde_json::json!({"repo": "r", "targetNamespace": "not-foo"}),
                Err("disallowed targetNamespace not-foo: not-foo not in allowed set [foo]")),
            (serde_json::json!({"allowedServiceAccounts": ["foo"]}), None,
                serde_json::json!({"repo": "r", "serviceAccount": "not-foo"}),
                Err("disallowed serviceAccount not-foo")),
            (serde_json::json!({"allowedRepoPatterns": ["baz"]}), None,
                serde_json::json!({"repo": "bar"}), Err("disallowed repo bar")),
            (serde_json::json!({"allowedClientSecretNames": ["foo"]}), None,
                serde_json::json!({"repo": "r", "clientSecretName": "not-foo"}),
                Err("disallowed clientSecretName not-foo")),
            (everything.clone(), None,
                serde_json::json!({"repo": "http://foo.bar/baz", "clientSecretName": "csn", "serviceAccount": "sacc", "targetNamespace": "tns"}),
                Ok(serde_json::json!({"clientSecretName": "csn", "serviceAccount": "sacc"}))),
            // Defaults are checked against the allowed lists too (Fleet 0.16).
            (with_defaults, None,
                serde_json::json!({"repo": "http://foo.bar/baz", "targetNamespace": "tns"}),
                Err("disallowed serviceAccount dsacc")),
            (serde_json::json!({"defaultClientSecretName": "dcsn", "defaultServiceAccount": "dsacc"}), None,
                serde_json::json!({"repo": "http://foo.bar/baz"}),
                Ok(serde_json::json!({"clientSecretName": "dcsn", "serviceAccount": "dsacc"}))),
            (serde_json::json!({}), Some(serde_json::json!({"gitRepo": {"allowedRepoPatterns": ["github\\.com/myorg/.*"]}})),
                serde_json::json!({"repo": "https://evil.example.com/redirect?to=github.com/myorg/repo"}),
                Err("disallowed repo")),
            (serde_json::json!({}), Some(serde_json::json!({"gitRepo": {"allowedRepoPatterns": ["https://github\\.com/myorg/.*"]}})),
                serde_json::json!({"repo": "https://github.com/myorg/myrepo"}), Ok(serde_json::json!({}))),
            (serde_json::json!({"allowedRepoPatterns": ["foo\\.bar"]}), None,
                serde_json::json!({"repo": "http://foo.bar/baz"}), Ok(serde_json::json!({}))),
            (serde_json::json!({"allowedRepoPatterns": [".*github\\.com.*"]}),
                Some(serde_json::json!({"gitRepo": {"allowedRepoPatterns": ["gitlab\\.com/.*"]}})),
                serde_json::json!({"repo": "https://github.com/myorg/myrepo"}), Ok(serde_json::json!({}))),
        ];
        for (index, (grr, pol, repo, expected)) in cases.into_iter().enumerate() {
            let restrictions = Restrictions::combine(&[restriction("r", grr)]);
            let policies =
                Policies::combine(&pol.map(|p| vec![policy("p", p)]).unwrap_or_default())
                    .expect("valid");
            let spec = git_repo(repo);
            match (policies.admit_git_repo(&spec, &restrictions), expected) {
                (Ok(admitted), Ok(set)) => {
                    let want = |key: &str| set.get(key).and_then(|v| v.as_str()).map(String::from);
                    assert_eq!(
                        admitted.service_account,
                        want("serviceAccount"),
                        "case {index}"
                    );
                    assert_eq!(
                        admitted.client_secret_name,
                        want("clientSecretName"),
                        "case {index}"
                    );
                }
                (Err(refused), Err(start)) => {
                    assert!(refused.starts_with(start), "case {index}: {refused}")
                }
                (got, want) => panic!("case {index}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn restrictions_combine_in_order_of_name() {
        let restrictions = Restrictions::combine(&[
            restriction(
                "b",
                serde_json::json!({"defaultServiceAccount": "from-b", "allowedServiceAccounts": ["x"]}),
            ),
            restriction(
                "a",
                serde_json::json!({"defaultServiceAccount": null, "allowedServiceAccounts": null,
                "allowedTargetNamespaces": ["t"]}),
            ),
        ]);
        let admitted = Policies::default()
            .admit_git_repo(
                &GitRepoSpec {
                    repo: "r".into(),
                    target_namespace: Some("t".into()),
                    ..GitRepoSpec::default()
                },
                &restrictions,
            )
            .expect_err("the default is not in the allowed list");
        assert_eq!(
            admitted,
            "disallowed serviceAccount from-b: from-b not in allowed set [x]"
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
                "allowedHelmRepoPatterns": ["https://charts\\.example\\.com"],
                "allowedChartPatterns": ["place.*"]}}),
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
