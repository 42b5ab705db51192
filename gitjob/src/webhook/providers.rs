//! Push payloads of the Git hosts: which host sent a request (by its headers), how it
//! signs, and what it says was pushed.

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// A Git host whose push webhooks we read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// GitHub: `X-Hub-Signature-256: sha256=<hmac>`.
    GitHub,
    /// GitLab: `X-Gitlab-Token: <secret>`.
    GitLab,
    /// Gitea: `X-Gitea-Signature: <hmac>`.
    Gitea,
    /// Gogs: `X-Gogs-Signature: <hmac>`.
    Gogs,
    /// Bitbucket Cloud: `X-Hub-Signature: sha256=<hmac>`, or the hook's UUID.
    Bitbucket,
    /// Bitbucket Server / Data Center: `X-Hub-Signature: sha256=<hmac>`.
    BitbucketServer,
    /// fleet-rs' own JSON (`{"repository", "branch", "commit"}`), for scripts and other
    /// hosts: `X-Fleet-Signature-256: sha256=<hmac>`.
    Generic,
}

/// What a push says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Push {
    /// URLs naming the repository (web, clone and SSH forms).
    pub repo_urls: Vec<String>,
    /// The branch pushed to, if a branch.
    pub branch: Option<String>,
    /// The tag pushed, if a tag.
    pub tag: Option<String>,
    /// The commit the ref now points to.
    pub commit: Option<String>,
}

impl Push {
    /// Refuses values no Git host sends: a commit id that is not 7 to 64 hex digits, refs
    /// and URLs longer than Git allows (they end up in the GitRepo's status).
    pub fn check(&self) -> Result<(), String> {
        if let Some(commit) = &self.commit {
            if !(7..=64).contains(&commit.len()) || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err("the pushed commit is not a commit id (7 to 64 hex digits)".into());
            }
        }
        let refs = self.branch.iter().chain(&self.tag);
        if refs.into_iter().any(|r| r.len() > 255) {
            return Err("the pushed ref is longer than 255 bytes".into());
        }
        if self.repo_urls.len() > 16 || self.repo_urls.iter().any(|u| u.len() > 2048) {
            return Err("the repository URLs are too many or too long".into());
        }
        Ok(())
    }
}

/// What a request is, once its provider is known.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A push (or tag push).
    Push,
    /// A ping or an event of another kind: acknowledged, nothing synced.
    Other(String),
}

/// The HMAC-SHA256 of `body` under `secret`, in lower-case hex: what GitHub, Gitea, Gogs,
/// Bitbucket and fleet-rs' generic webhooks sign with.
pub fn hmac_sha256_hex(secret: &[u8], body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

impl Provider {
    /// The provider that sent a request, told by its headers (Gitea and Gogs before GitHub:
    /// they send GitHub's headers too). `generic` is the request's path being `/generic`.
    pub fn detect(headers: &HeaderMap, generic: bool) -> Option<Self> {
        if generic {
            return Some(Provider::Generic);
        }
        let has = |name: &str| headers.contains_key(name);
        if has("x-gitea-event") {
            Some(Provider::Gitea)
        } else if has("x-gogs-event") {
            Some(Provider::Gogs)
        } else if has("x-github-event") {
            Some(Provider::GitHub)
        } else if has("x-gitlab-event") {
            Some(Provider::GitLab)
        } else if has("x-hook-uuid") {
            Some(Provider::Bitbucket)
        } else if has("x-event-key") {
            Some(Provider::BitbucketServer)
        } else {
            None
        }
    }

    /// The keys of the webhook Secret this provider's secret is read from, in order
    /// (Fleet's names; Gitea falls back to Gogs').
    pub fn secret_keys(self) -> &'static [&'static str] {
        match self {
            Provider::GitHub => &["github"],
            Provider::GitLab => &["gitlab"],
            Provider::Gitea => &["gitea", "gogs"],
            Provider::Gogs => &["gogs"],
            Provider::Bitbucket => &["bitbucket"],
            Provider::BitbucketServer => &["bitbucket-server"],
            Provider::Generic => &["generic"],
        }
    }

    /// The event a request carries.
    pub fn event(self, headers: &HeaderMap) -> Event {
        let name = match self {
            Provider::GitHub => header(headers, "x-github-event"),
            Provider::GitLab => header(headers, "x-gitlab-event"),
            Provider::Gitea => header(headers, "x-gitea-event"),
            Provider::Gogs => header(headers, "x-gogs-event"),
            Provider::Bitbucket | Provider::BitbucketServer => header(headers, "x-event-key"),
            Provider::Generic => Some("push"),
        }
        .unwrap_or("")
        .to_string();
        let push = matches!(
            name.as_str(),
            "push" | "Push Hook" | "Tag Push Hook" | "repo:push" | "repo:refs_changed"
        );
        if push {
            Event::Push
        } else {
            Event::Other(name)
        }
    }

    /// The id of this delivery, for refusing replays.
    pub fn delivery_id(self, headers: &HeaderMap) -> Option<String> {
        let name = match self {
            Provider::GitHub => "x-github-delivery",
            Provider::GitLab => "x-gitlab-event-uuid",
            Provider::Gitea => "x-gitea-delivery",
            Provider::Gogs => "x-gogs-delivery",
            Provider::Bitbucket => "x-request-uuid",
            Provider::BitbucketServer => "x-request-id",
            Provider::Generic => "x-fleet-delivery",
        };
        header(headers, name).map(String::from)
    }

    /// Whether the request is signed (or carries the token) with `secret`; compared in
    /// constant time.
    pub fn verify(self, headers: &HeaderMap, body: &[u8], secret: &[u8]) -> bool {
        let hmac_hex = || hmac_sha256_hex(secret, body);
        let equal = |given: &str, expected: &str| -> bool {
            given.as_bytes().ct_eq(expected.as_bytes()).into()
        };
        let prefixed = |name: &str| {
            header(headers, name)
                .and_then(|v| v.strip_prefix("sha256="))
                .is_some_and(|given| equal(&given.to_ascii_lowercase(), &hmac_hex()))
        };
        let plain = |name: &str| {
            header(headers, name)
                .is_some_and(|given| equal(&given.to_ascii_lowercase(), &hmac_hex()))
        };
        let secret_text = String::from_utf8_lossy(secret);
        match self {
            Provider::GitHub => prefixed("x-hub-signature-256"),
            Provider::GitLab => {
                header(headers, "x-gitlab-token").is_some_and(|t| equal(t, &secret_text))
            }
            Provider::Gitea => plain("x-gitea-signature"),
            Provider::Gogs => plain("x-gogs-signature"),
            Provider::Bitbucket if headers.contains_key("x-hub-signature") => {
                prefixed("x-hub-signature")
            }
            Provider::Bitbucket => {
                header(headers, "x-hook-uuid").is_some_and(|u| equal(u, &secret_text))
            }
            Provider::BitbucketServer => prefixed("x-hub-signature"),
            Provider::Generic => prefixed("x-fleet-signature-256"),
        }
    }

    /// What a push payload says; `None` when the body is not such a payload.
    pub fn parse_push(self, body: &[u8]) -> Option<Push> {
        let json: Value = serde_json::from_slice(body).ok()?;
        let text = |v: &Value, path: &[&str]| -> Option<String> {
            let mut at = v;
            for key in path {
                at = at.get(key)?;
            }
            at.as_str().map(String::from).filter(|s| !s.is_empty())
        };
        let urls = |v: &Value, paths: &[&[&str]]| -> Vec<String> {
            paths.iter().filter_map(|p| text(v, p)).collect()
        };
        let mut push = match self {
            Provider::GitHub | Provider::Gitea | Provider::Gogs => Push {
                repo_urls: urls(
                    &json,
                    &[
                        &["repository", "html_url"],
                        &["repository", "clone_url"],
                        &["repository", "ssh_url"],
                        &["repository", "git_url"],
                    ],
                ),
                commit: text(&json, &["after"]),
                ..Push::default()
            },
            Provider::GitLab => Push {
                repo_urls: urls(
                    &json,
                    &[
                        &["project", "web_url"],
                        &["project", "git_http_url"],
                        &["project", "git_ssh_url"],
                        &["repository", "homepage"],
                    ],
                ),
                commit: text(&json, &["checkout_sha"]).or_else(|| text(&json, &["after"])),
                ..Push::default()
            },
            Provider::Bitbucket => {
                let change = json.pointer("/push/changes/0/new")?;
                let kind = text(change, &["type"]);
                let name = text(change, &["name"]);
                Push {
                    repo_urls: urls(&json, &[&["repository", "links", "html", "href"]]),
                    commit: text(change, &["target", "hash"]),
                    branch: name.clone().filter(|_| kind.as_deref() == Some("branch")),
                    tag: name.filter(|_| kind.as_deref() == Some("tag")),
                }
            }
            Provider::BitbucketServer => {
                let clone_links = json.pointer("/repository/links/clone")?.as_array()?;
                let change = json.pointer("/changes/0")?;
                let mut push = Push {
                    repo_urls: clone_links
                        .iter()
                        .filter_map(|l| text(l, &["href"]))
                        .collect(),
                    commit: text(change, &["toHash"]),
                    ..Push::default()
                };
                set_ref(&mut push, &text(change, &["refId"]).unwrap_or_default());
                return Some(push);
            }
            Provider::Generic => Push {
                repo_urls: urls(&json, &[&["repository"]]),
                commit: text(&json, &["commit"]),
                branch: text(&json, &["branch"]),
                tag: text(&json, &["tag"]),
            },
        };
        if let Some(reference) = text(&json, &["ref"]) {
            set_ref(&mut push, &reference);
        }
        (!push.repo_urls.is_empty()).then_some(push)
    }
}

fn set_ref(push: &mut Push, reference: &str) {
    if let Some(branch) = reference.strip_prefix("refs/heads/") {
        push.branch = Some(branch.to_string());
    } else if let Some(tag) = reference.strip_prefix("refs/tags/") {
        push.tag = Some(tag.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("header"));
        }
        map
    }

    // HMAC-SHA256 of "hello" with key "secret", computed independently with
    // `printf hello | openssl dgst -sha256 -hmac secret`.
    const HELLO_SECRET: &str = "88aab3ede8d3adf94d26ab90d3bafd4a2083070c3bcce9c014ee04a443847c0b";

    #[test]
    fn github_signatures_verify_and_forgeries_do_not() {
        let good = headers(&[
            ("x-github-event", "push"),
            ("x-hub-signature-256", &format!("sha256={HELLO_SECRET}")),
        ]);
        assert_eq!(Provider::detect(&good, false), Some(Provider::GitHub));
        assert!(Provider::GitHub.verify(&good, b"hello", b"secret"));
        assert!(!Provider::GitHub.verify(&good, b"hello!", b"secret"));
        assert!(!Provider::GitHub.verify(&good, b"hello", b"other"));
        let unsigned = headers(&[("x-github-event", "push")]);
        assert!(!Provider::GitHub.verify(&unsigned, b"hello", b"secret"));
    }

    #[test]
    fn gitea_is_told_apart_from_github_and_signs_without_prefix() {
        let gitea = headers(&[
            ("x-github-event", "push"),
            ("x-gitea-event", "push"),
            ("x-gitea-signature", HELLO_SECRET),
        ]);
        assert_eq!(Provider::detect(&gitea, false), Some(Provider::Gitea));
        assert!(Provider::Gitea.verify(&gitea, b"hello", b"secret"));
    }

    #[test]
    fn gitlab_token_and_payload() {
        let gitlab = headers(&[("x-gitlab-event", "Push Hook"), ("x-gitlab-token", "tok")]);
        assert!(Provider::GitLab.verify(&gitlab, b"{}", b"tok"));
        assert!(!Provider::GitLab.verify(&gitlab, b"{}", b"tok2"));
        assert_eq!(Provider::GitLab.event(&gitlab), Event::Push);
        let body = br#"{"ref":"refs/heads/main","checkout_sha":"abc","project":{"web_url":"https://gitlab.com/g/p","git_ssh_url":"git@gitlab.com:g/p.git"}}"#;
        let push = Provider::GitLab.parse_push(body).expect("push");
        assert_eq!(push.branch.as_deref(), Some("main"));
        assert_eq!(push.commit.as_deref(), Some("abc"));
        assert_eq!(push.repo_urls.len(), 2);
    }

    #[test]
    fn bitbucket_payloads() {
        let cloud = br#"{"push":{"changes":[{"new":{"type":"branch","name":"main","target":{"hash":"c1"}}}]},"repository":{"links":{"html":{"href":"https://bitbucket.org/w/r"}}}}"#;
        let push = Provider::Bitbucket.parse_push(cloud).expect("cloud");
        assert_eq!(
            (push.branch.as_deref(), push.commit.as_deref()),
            (Some("main"), Some("c1"))
        );
        let server = br#"{"changes":[{"refId":"refs/tags/v1","toHash":"c2"}],"repository":{"links":{"clone":[{"href":"ssh://git@bb:7999/p/r.git","name":"ssh"},{"href":"https://bb/scm/p/r.git","name":"http"}]}}}"#;
        let push = Provider::BitbucketServer
            .parse_push(server)
            .expect("server");
        assert_eq!(push.tag.as_deref(), Some("v1"));
        assert_eq!(push.repo_urls.len(), 2);
        let uuid = headers(&[("x-hook-uuid", "u-1"), ("x-event-key", "repo:push")]);
        assert_eq!(Provider::detect(&uuid, false), Some(Provider::Bitbucket));
        assert!(Provider::Bitbucket.verify(&uuid, b"", b"u-1"));
        assert!(!Provider::Bitbucket.verify(&uuid, b"", b"u-2"));
    }
}
