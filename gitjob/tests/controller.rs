//! The GitRepo controller end to end: the hub, `git daemon` on loopback, gitjob and its
//! webhook receiver in this process; GitRepos created and read through kube-rs and the
//! real kubectl.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_api::{Bundle, GitRepo};
use fleet_gitjob::controller::{Gitjob, Settings};
use fleet_gitjob::metrics::{Metrics, WebhookResult};
use fleet_gitjob::webhook;
use fleet_testkit::{eventually, incompressible, FleetHub, GitDaemon, TestRepo};
use hmac::{Hmac, Mac};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use sha2::Sha256;

const NS: &str = "fleet-local";

struct Env {
    hub: FleetHub,
    client: kube::Client,
    kubeconfig: PathBuf,
    webhook: String,
    metrics: Arc<Metrics>,
    repos: PathBuf,
    daemon: GitDaemon,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Env {
    async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    async fn start_with(tune: impl FnOnce(&mut Settings)) -> Self {
        let hub = FleetHub::start(&[]).await;
        let client = hub.client.clone();
        let kubeconfig = hub.kubeconfig("local");
        let metrics = Arc::new(Metrics::default());
        let mut settings = Settings::on_this_machine(hub.dir().join("gitjob"));
        settings.poll_cache = Duration::from_millis(200);
        tune(&mut settings);
        let gitjob = Gitjob::new(client.clone(), settings, metrics.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(gitjob.run(async move {
            let _ = stopped.await;
        }));
        let receiver = webhook::Receiver::new(
            client.clone(),
            "cattle-fleet-system",
            metrics.clone(),
            Some(&hub.dir().join("webhook-deliveries")),
        );
        let (bound, _) = fleet_objects::service::serve_http(
            ([127, 0, 0, 1], 0).into(),
            webhook::router(receiver),
            "webhooks",
        )
        .await
        .expect("webhook port");
        let webhook = format!("http://{bound}");
        let repos = hub.dir().join("repos");
        std::fs::create_dir_all(&repos).expect("repos dir");
        let daemon = GitDaemon::start(&repos);
        Self {
            hub,
            client,
            kubeconfig,
            webhook,
            metrics,
            repos,
            daemon,
            _stop: stop,
        }
    }

    fn repo(&self, name: &str) -> TestRepo {
        TestRepo::in_dir(&self.repos, name)
    }

    async fn gitrepo(&self, spec: serde_json::Value) -> GitRepo {
        self.gitrepo_named("demo", spec).await
    }

    async fn gitrepo_named(&self, name: &str, spec: serde_json::Value) -> GitRepo {
        let gitrepo: GitRepo = serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1",
            "kind": "GitRepo",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        }))
        .expect("GitRepo");
        self.gitrepos()
            .create(&PostParams::default(), &gitrepo)
            .await
            .expect("create GitRepo")
    }

    /// Waits up to `limit` until the one Bundle, `demo-app`, is labelled with `commit`.
    async fn app_at(&self, what: &str, limit: Duration, commit: &str) {
        eventually(what, limit, || async {
            (self.bundle_commits().await == vec![("demo-app".to_string(), commit.to_string())])
                .then_some(())
        })
        .await;
    }

    /// A repository `name` whose `app/` holds one ConfigMap, and the GitRepo deploying it
    /// from `main` (its spec: those fields and `spec`'s), once the first commit is synced.
    /// Returns the repository and that commit.
    async fn synced_app(&self, name: &str, spec: serde_json::Value) -> (TestRepo, String) {
        let repo = self.repo(name);
        repo.write("app/cm.yaml", &configmap("a", "1"));
        let first = repo.commit("first");
        let mut full = json!({"repo": self.daemon.url(name), "branch": "main", "paths": ["app"]});
        if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
            full.extend(extra.clone());
        }
        self.gitrepo(full).await;
        self.app_at("the first sync", WAIT, &first).await;
        (repo, first)
    }

    /// Creates a Secret from `body` (metadata, type, stringData) in `namespace`.
    async fn secret(&self, namespace: &str, body: serde_json::Value) {
        let secret: Secret = serde_json::from_value(body).expect("secret");
        Api::<Secret>::namespaced(self.client.clone(), namespace)
            .create(&PostParams::default(), &secret)
            .await
            .expect("secret");
    }

    /// Deletes the GitRepo `demo`, if there is one, and waits until it is gone.
    async fn delete_gitrepo(&self) {
        let _ = self.gitrepos().delete("demo", &Default::default()).await;
        eventually("the GitRepo is gone", WAIT, || async {
            (self.gitrepos().get_opt("demo").await)
                .expect("get")
                .is_none()
                .then_some(())
        })
        .await;
    }

    fn gitrepos(&self) -> Api<GitRepo> {
        Api::namespaced(self.client.clone(), NS)
    }

    fn bundles(&self) -> Api<Bundle> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Bundle names with the commit each is labelled with.
    async fn bundle_commits(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .bundles()
            .list(&ListParams::default())
            .await
            .expect("bundles")
            .items
            .into_iter()
            .map(|b| {
                let commit = b
                    .labels()
                    .get("fleet.cattle.io/commit")
                    .cloned()
                    .unwrap_or_default();
                (b.name_any(), commit)
            })
            .collect();
        out.sort();
        out
    }

    async fn status(&self) -> fleet_api::GitRepoStatus {
        self.gitrepos()
            .get("demo")
            .await
            .expect("GitRepo")
            .status
            .unwrap_or_default()
    }

    fn kubectl(&self, args: &[&str]) -> String {
        let output = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.hub.dir().join("kubectl-cache"))
            .args(args)
            .output()
            .expect("kubectl runs");
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// gitjob's `gitjob-webhook` Secret, holding `secret` for GitHub's pushes.
    async fn github_webhook_secret(&self, secret: &str) {
        self.secret(
            "cattle-fleet-system",
            json!({
                "metadata": {"name": "gitjob-webhook"},
                "stringData": {"github": secret},
            }),
        )
        .await;
    }

    async fn post_webhook(&self, headers: &[(&str, String)], body: &str) -> (u16, String) {
        let url = format!("{}/", self.webhook);
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let body = body.to_string();
        tokio::task::spawn_blocking(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let mut request = agent.post(&url);
            for (name, value) in &headers {
                request = request.header(name, value);
            }
            let mut response = request.send(body.as_bytes()).expect("webhook answers");
            let status = response.status().as_u16();
            let text = response.body_mut().read_to_string().unwrap_or_default();
            (status, text)
        })
        .await
        .expect("webhook task")
    }
}

fn configmap(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  value: \"{value}\"\n"
    )
}

fn sign(secret: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_become_bundles_and_force_pushes_and_removals_follow() {
    let env = Env::start().await;
    let repo = env.repo("app");
    repo.write("one/fleet.yaml", "defaultNamespace: one\n")
        .write("one/cm.yaml", &configmap("one", "1"))
        .write("two/cm.yaml", &configmap("two", "2"))
        .write("two/fleet.yaml", "labels:\n  team: blue\n");
    let first = repo.commit("first");
    env.gitrepo(json!({
        "repo": env.daemon.url("app"),
        "branch": "main",
        "pollingInterval": "1s",
    }))
    .await;
    let want = |commit: &str| {
        vec![
            ("demo-one".to_string(), commit.to_string()),
            ("demo-two".to_string(), commit.to_string()),
        ]
    };
    eventually("the first commit's bundles", WAIT, || async {
        (env.bundle_commits().await == want(&first)).then_some(())
    })
    .await;
    let two = env.bundles().get("demo-two").await.expect("bundle");
    assert_eq!(two.labels().get("team").map(String::as_str), Some("blue"));
    assert_eq!(
        two.labels()
            .get("fleet.cattle.io/repo-name")
            .map(String::as_str),
        Some("demo")
    );
    let files: Vec<_> = two
        .spec
        .resources
        .iter()
        .filter_map(|r| r.name.clone())
        .collect();
    assert_eq!(files, vec!["cm.yaml"], "fleet.yaml configures, as in Fleet");
    assert_eq!(
        two.owner_references().first().map(|o| o.kind.as_str()),
        Some("GitRepo")
    );

    // A new commit updates every bundle's commit label.
    repo.write("one/cm.yaml", &configmap("one", "changed"));
    let second = repo.commit("second");
    eventually("the second commit", WAIT, || async {
        (env.bundle_commits().await == want(&second)).then_some(())
    })
    .await;
    let one = env.bundles().get("demo-one").await.expect("bundle");
    assert!(one
        .spec
        .resources
        .iter()
        .any(|r| r.content.as_deref().is_some_and(|c| c.contains("changed"))));

    // A force-push replacing that commit is followed too.
    repo.git(&["reset", "-q", "--hard", &first]);
    repo.write("two/cm.yaml", &configmap("two", "rewritten"));
    let rewritten = repo.commit("rewritten history");
    eventually("the force-pushed commit", WAIT, || async {
        (env.bundle_commits().await == want(&rewritten)).then_some(())
    })
    .await;

    // A directory that leaves the repository takes its bundle with it.
    repo.remove("two");
    let third = repo.commit("remove two");
    eventually("bundle two deleted", WAIT, || async {
        (env.bundle_commits().await == vec![("demo-one".to_string(), third.clone())]).then_some(())
    })
    .await;

    // kubectl shows Fleet's columns (the status is written just after the Bundles).
    eventually("the status at the third commit", WAIT, || async {
        (env.status().await.commit.as_deref() == Some(third.as_str())).then_some(())
    })
    .await;
    let table = env.kubectl(&["get", "gitrepos", "-A"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .expect("header")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAMESPACE",
            "NAME",
            "REPO",
            "COMMIT",
            "BUNDLEDEPLOYMENTS-READY",
            "STATUS"
        ]
    );
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .expect("row")
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        [
            NS,
            "demo",
            env.daemon.url("app").as_str(),
            third.as_str(),
            "0/0"
        ]
    );
    assert!(env.metrics.fetches() >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitrepo_polling_every_second_is_not_handed_an_older_shared_poll_answer() {
    // Poll answers are shared for a minute, but this GitRepo polls every second: it must
    // see a new commit within seconds, not when the shared answer expires.
    let env = Env::start_with(|settings| settings.poll_cache = Duration::from_secs(60)).await;
    let (repo, _) = env
        .synced_app("prompt", json!({"pollingInterval": "1s"}))
        .await;
    repo.write("app/cm.yaml", &configmap("a", "2"));
    let second = repo.commit("second");
    env.app_at("the second commit", Duration::from_secs(10), &second)
        .await;
}

/// A GitRepo pinned to a tag follows pushes of that tag: moved to a new commit and pushed,
/// it syncs at once though it polls hourly; a push to a branch leaves it alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_tag_syncs_the_gitrepos_pinned_to_it() {
    let env = Env::start().await;
    env.github_webhook_secret("hook-secret").await;
    let repo = env.repo("tagged");
    repo.write("app/cm.yaml", &configmap("a", "1"));
    let first = repo.commit("first");
    repo.git(&["tag", "v1"]);
    let url = env.daemon.url("tagged");
    env.gitrepo(json!({"repo": url, "revision": "v1", "paths": ["app"], "pollingInterval": "1h"}))
        .await;
    env.app_at("the tagged commit", WAIT, &first).await;
    repo.write("app/cm.yaml", &configmap("a", "2"));
    let second = repo.commit("second");
    repo.git(&["tag", "-f", "v1"]);
    let post = |reference: &str, delivery: &str| {
        let body = json!({
            "ref": reference,
            "after": second,
            "repository": {"html_url": "https://127.0.0.1/tagged", "clone_url": url},
        })
        .to_string();
        let headers = [
            ("X-GitHub-Event", "push".to_string()),
            ("X-GitHub-Delivery", delivery.to_string()),
            ("X-Hub-Signature-256", sign("hook-secret", &body)),
        ];
        let env = &env;
        async move { env.post_webhook(&headers, &body).await }
    };
    let branch = post("refs/heads/main", "d-branch").await;
    assert_eq!(branch.0, 200, "{}", branch.1);
    assert!(branch.1.contains("no GitRepo follows"), "{}", branch.1);
    let tag = post("refs/tags/v1", "d-tag").await;
    assert_eq!(tag.0, 200, "{}", tag.1);
    assert!(tag.1.contains("fleet-local/demo"), "{}", tag.1);
    env.app_at("the moved tag's commit", Duration::from_secs(5), &second)
        .await;
    // Each commit synced is an Event on the GitRepo, as Fleet's gitjob records it (after
    // it writes the bundles, so possibly after the agent applied them).
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(env.client.clone(), NS);
    let said = eventually("an event for each commit", WAIT, || async {
        let said: Vec<(String, String)> = events
            .list(&ListParams::default().fields("involvedObject.name=demo"))
            .await
            .ok()?
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("GotNewCommit"))
            .map(|e| (e.type_.unwrap_or_default(), e.message.unwrap_or_default()))
            .collect();
        (said.len() >= 2).then_some(said)
    })
    .await;
    assert_eq!(
        said,
        [
            ("Normal".to_string(), first),
            ("Normal".to_string(), second)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_webhook_syncs_at_once_and_forgeries_and_replays_do_not() {
    let env = Env::start().await;
    env.github_webhook_secret("hook-secret").await;
    let (repo, _) = env
        .synced_app("hooked", json!({"pollingInterval": "1h"}))
        .await;

    repo.write("app/cm.yaml", &configmap("a", "2"));
    let second = repo.commit("second");
    // GitHub names the repository by its web URL; the GitRepo uses git://. Same repository.
    let body = json!({
        "ref": "refs/heads/main",
        "after": second,
        "repository": {"html_url": format!("https://127.0.0.1/hooked"), "clone_url": env.daemon.url("hooked")},
    })
    .to_string();
    let forged = env
        .post_webhook(
            &[
                ("X-GitHub-Event", "push".into()),
                ("X-GitHub-Delivery", "d-forged".into()),
                ("X-Hub-Signature-256", sign("not-the-secret", &body)),
            ],
            &body,
        )
        .await;
    assert_eq!(forged.0, 401, "{}", forged.1);

    let signed = [
        ("X-GitHub-Event", "push".to_string()),
        ("X-GitHub-Delivery", "d-1".to_string()),
        ("X-Hub-Signature-256", sign("hook-secret", &body)),
    ];
    let sent = Instant::now();
    let accepted = env.post_webhook(&signed, &body).await;
    assert_eq!(accepted.0, 200, "{}", accepted.1);
    assert!(accepted.1.contains("fleet-local/demo"), "{}", accepted.1);
    env.app_at("the webhook's commit", Duration::from_secs(1), &second)
        .await;
    eprintln!("webhook to synced bundle: {:?}", sent.elapsed());

    // The same delivery again is refused, with its id, with a new one or with none (the
    // signature covers the body, not the id); a forged one changed nothing.
    let replayed = env.post_webhook(&signed, &body).await;
    assert_eq!(replayed.0, 401, "{}", replayed.1);
    let mut new_id = signed.clone();
    new_id[1].1 = "d-2".into();
    let replayed = env.post_webhook(&new_id, &body).await;
    assert_eq!(replayed.0, 401, "{}", replayed.1);
    let replayed = env
        .post_webhook(&[signed[0].clone(), signed[2].clone()], &body)
        .await;
    assert_eq!(replayed.0, 401, "{}", replayed.1);
    // A commit id no Git host sends is refused before anything is marked.
    let huge = json!({
        "ref": "refs/heads/main",
        "after": "a".repeat(100_000),
        "repository": {"clone_url": env.daemon.url("hooked")},
    })
    .to_string();
    let refused = env
        .post_webhook(
            &[
                ("X-GitHub-Event", "push".into()),
                ("X-GitHub-Delivery", "d-huge".into()),
                ("X-Hub-Signature-256", sign("hook-secret", &huge)),
            ],
            &huge,
        )
        .await;
    assert_eq!(refused.0, 400, "{}", refused.1);
    assert_eq!(env.metrics.webhooks(WebhookResult::Unauthorized), 1);
    assert_eq!(env.metrics.webhooks(WebhookResult::Replayed), 3);
    assert_eq!(env.metrics.webhooks(WebhookResult::Synced), 1);
    assert_eq!(
        env.status().await.webhook_commit.as_deref(),
        Some(second.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_webhooks_are_refused_when_no_secret_is_configured() {
    let env = Env::start().await;
    env.synced_app("open", json!({"pollingInterval": "1h"}))
        .await;
    let push = |repository: String, delivery: &'static str| {
        let body = json!({
            "ref": "refs/heads/main",
            "after": "0123456789abcdef0123456789abcdef01234567",
            "repository": {"clone_url": repository},
        })
        .to_string();
        let headers = [
            ("X-GitHub-Event", "push".to_string()),
            ("X-GitHub-Delivery", delivery.to_string()),
        ];
        let env = &env;
        async move { env.post_webhook(&headers, &body).await }
    };
    let answer = push(env.daemon.url("open"), "d-unsigned").await;
    assert_eq!(answer.0, 401, "{}", answer.1);
    assert!(
        answer
            .1
            .contains("the push is not signed with a webhook secret gitjob holds"),
        "{}",
        answer.1
    );
    assert_eq!(env.status().await.webhook_commit, None);

    // A push for a repository nobody follows gets the very same answer: an unsigned
    // sender learns nothing of which repositories are followed.
    let other = push("git://example.com/other".into(), "d-unsigned-2").await;
    assert_eq!(other, answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_bundle_keeps_its_last_good_version_among_200() {
    let env = Env::start().await;
    let repo = env.repo("many");
    for i in 0..200 {
        repo.write(
            &format!("b{i:03}/fleet.yaml"),
            &format!("defaultNamespace: ns{i}\n"),
        )
        .write(
            &format!("b{i:03}/cm.yaml"),
            &configmap(&format!("cm{i}"), "1"),
        );
    }
    let first = repo.commit("200 bundles");
    env.gitrepo(json!({"repo": env.daemon.url("many"), "branch": "main", "pollingInterval": "1s"}))
        .await;
    eventually("200 bundles", Duration::from_secs(60), || async {
        let all = env.bundle_commits().await;
        (all.len() == 200 && all.iter().all(|(_, c)| *c == first)).then_some(())
    })
    .await;

    repo.write(
        "b007/fleet.yaml",
        "defaultNamespace: ns7\nhelm:\n  values: [1\n",
    );
    repo.write("b008/cm.yaml", &configmap("cm8", "2"));
    let second = repo.commit("break b007");
    let status = eventually("the broken bundle reported", WAIT, || async {
        let status = env.status().await;
        (status.commit.as_deref() == Some(second.as_str())).then_some(status)
    })
    .await;
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(ready.status, "False");
    let message = ready.message.clone().unwrap_or_default();
    assert!(
        message.contains("demo-b007: b007/fleet.yaml:4: invalid YAML"),
        "{message}"
    );
    assert!(message.contains("199 synced"), "{message}");
    let commits = env.bundle_commits().await;
    assert_eq!(commits.len(), 200, "nothing deleted");
    for (name, commit) in &commits {
        let expected = if name == "demo-b007" { &first } else { &second };
        assert_eq!(commit, expected, "{name}");
    }
    let broken = env.bundles().get("demo-b007").await.expect("kept");
    let condition = broken.status.expect("status").conditions;
    assert_eq!(condition[0].reason.as_deref(), Some("RenderFailed"));
    let table = env.kubectl(&["get", "gitrepo", "demo", "-n", NS]);
    assert!(table.contains("b007/fleet.yaml:4"), "{table}");

    // Fixing it clears the error.
    repo.write("b007/fleet.yaml", "defaultNamespace: ns7\n");
    let third = repo.commit("fix b007");
    eventually("the fix", WAIT, || async {
        let status = env.status().await;
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
        (status.commit.as_deref() == Some(third.as_str()) && ready.status == "True").then_some(())
    })
    .await;
    let fixed = env.bundles().get("demo-b007").await.expect("bundle");
    assert!(fixed
        .status
        .map(|s| s.conditions)
        .unwrap_or_default()
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_branch_or_unreachable_host_is_an_error_and_deletes_nothing() {
    let env = Env::start().await;
    let repo = env.repo("branches");
    repo.write("app/cm.yaml", &configmap("a", "1"));
    repo.commit("first");
    repo.git(&["branch", "feature"]);
    env.gitrepo(json!({
        "repo": env.daemon.url("branches"),
        "branch": "feature",
        "paths": ["app"],
        "pollingInterval": "1s",
    }))
    .await;
    eventually("the bundle", WAIT, || async {
        (env.bundle_commits().await.len() == 1).then_some(())
    })
    .await;
    repo.git(&["branch", "-D", "feature"]);
    let message = eventually("the error in status", WAIT, || async {
        let status = env.status().await;
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
        let message = ready.message.clone()?;
        message
            .contains("no branch, tag or commit `feature`")
            .then_some(message)
    })
    .await;
    assert!(message.contains("retrying in"), "{message}");
    assert_eq!(env.bundle_commits().await.len(), 1, "the bundle stays");

    // An address nothing listens on: the status says so, and retries back off.
    env.gitrepos()
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"repo": "git://127.0.0.1:9/nothing", "branch": "main"}})),
        )
        .await
        .expect("patch");
    let message = eventually("the unreachable host in status", WAIT, || async {
        let status = env.status().await;
        let accepted = status.conditions.iter().find(|c| c.type_ == "Accepted")?;
        let message = accepted.message.clone()?;
        (accepted.status == "False" && message.contains("127.0.0.1:9")).then_some(message)
    })
    .await;
    assert!(message.contains("retrying in"), "{message}");
    assert_eq!(env.bundle_commits().await.len(), 1, "the bundle stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_https_repositories_use_the_secret_and_ca_bundle() {
    use base64::Engine;
    let env = Env::start().await;
    let served = env.hub.dir().join("https");
    let repo = TestRepo::in_dir(&served, "private");
    repo.write("app/cm.yaml", &configmap("a", "1"));
    let head = repo.commit("first");
    let server = fleet_testkit::GitHttpServer::start(
        &served,
        Some(&env.hub.dir().join("tls")),
        Some(("fleet", "s3cret")),
    );
    env.secret(
        NS,
        json!({
            "metadata": {"name": "git-auth"},
            "type": "kubernetes.io/basic-auth",
            "stringData": {"username": "fleet", "password": "wrong"},
        }),
    )
    .await;
    let ca = server.ca_pem.clone().expect("CA");
    env.gitrepo(json!({
        "repo": format!("{}/private", server.url),
        "branch": "main",
        "paths": ["app"],
        "pollingInterval": "1s",
        "clientSecretName": "git-auth",
        "caBundle": base64::engine::general_purpose::STANDARD.encode(ca),
    }))
    .await;
    let message = eventually("the authentication failure in status", WAIT, || async {
        let status = env.status().await;
        let accepted = status.conditions.iter().find(|c| c.type_ == "Accepted")?;
        accepted
            .message
            .clone()
            .filter(|m| m.contains("authentication failed"))
    })
    .await;
    assert!(message.contains("retrying in"), "{message}");
    assert!(env.bundle_commits().await.is_empty());

    // The right password: synced on the next retry.
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .patch(
            "git-auth",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": "s3cret"}})),
        )
        .await
        .expect("patch secret");
    env.app_at("the bundle over HTTPS", WAIT, &head).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_stops_syncing_and_force_sync_generation_redeploys() {
    let env = Env::start().await;
    let (repo, first) = env
        .synced_app("pausable", json!({"pollingInterval": "1s"}))
        .await;
    let patch = |spec: serde_json::Value| {
        let gitrepos = env.gitrepos();
        async move {
            gitrepos
                .patch(
                    "demo",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": spec})),
                )
                .await
                .expect("patch GitRepo")
        }
    };
    patch(json!({"paused": true})).await;
    eventually("paused in status", WAIT, || async {
        let status = env.status().await;
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
        (ready.reason.as_deref() == Some("Paused")).then_some(())
    })
    .await;
    repo.write("app/cm.yaml", &configmap("a", "2"));
    let second = repo.commit("second");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        env.bundle_commits().await,
        vec![("demo-app".to_string(), first.clone())],
        "nothing synced while paused"
    );
    patch(json!({"paused": false})).await;
    env.app_at("the second commit after unpausing", WAIT, &second)
        .await;

    patch(json!({"forceSyncGeneration": 7})).await;
    eventually("forceSyncGeneration passed to the bundle", WAIT, || async {
        let bundle = env.bundles().get("demo-app").await.ok()?;
        (bundle.spec.options.force_sync_generation == Some(7)).then_some(())
    })
    .await;
    // The status is written just after the Bundles.
    eventually("updateGeneration 7 in status", WAIT, || async {
        (env.status().await.update_generation == Some(7)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_push_with_its_token_syncs_a_gitrepo_with_its_own_webhook_secret() {
    let env = Env::start().await;
    env.secret(
        NS,
        json!({
            "metadata": {"name": "hooks"},
            "stringData": {"gitlab": "gl-token"},
        }),
    )
    .await;
    let (repo, _) = env
        .synced_app(
            "gl",
            json!({"disablePolling": true, "webhookSecret": "hooks"}),
        )
        .await;
    repo.write("app/cm.yaml", &configmap("a", "2"));
    let second = repo.commit("second");
    let body = json!({
        "ref": "refs/heads/main",
        "checkout_sha": second,
        "project": {"git_ssh_url": "git@127.0.0.1:gl.git"},
    })
    .to_string();
    let wrong = env
        .post_webhook(
            &[
                ("X-Gitlab-Event", "Push Hook".into()),
                ("X-Gitlab-Token", "guess".into()),
            ],
            &body,
        )
        .await;
    assert_eq!(wrong.0, 401, "{}", wrong.1);
    let right = env
        .post_webhook(
            &[
                ("X-Gitlab-Event", "Push Hook".into()),
                ("X-Gitlab-Token", "gl-token".into()),
            ],
            &body,
        )
        .await;
    assert_eq!(right.0, 200, "{}", right.1);
    env.app_at("the pushed commit", WAIT, &second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_over_the_transfer_limit_is_refused_with_a_clear_status() {
    let env = Env::start_with(|settings| settings.max_fetch_bytes = 64 * 1024).await;
    let repo = env.repo("huge");
    let noise = incompressible(300_000, 0x2545_f491_4f6c_dd1d);
    repo.write("app/cm.yaml", &configmap("a", &noise));
    repo.commit("too big");
    env.gitrepo(json!({"repo": env.daemon.url("huge"), "branch": "main", "paths": ["app"]}))
        .await;
    let message = eventually("the limit in status", WAIT, || async {
        let status = env.status().await;
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
        ready
            .message
            .clone()
            .filter(|m| m.contains("fetch stopped"))
    })
    .await;
    assert!(
        message.contains("more than 64 KiB (the limit)"),
        "{message}"
    );
    assert!(env.bundle_commits().await.is_empty());
}

/// A chart whose template loops for ever (nested `range`, no output) holds its Git slot
/// only until its GitRepo is deleted: the render is cancelled, and a GitRepo made after it
/// syncs at once, though gitjob has a single slot and the render's own time limit is a
/// minute away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_gitrepo_cancels_its_runaway_render() {
    let env = Env::start_with(|settings| settings.git_concurrency = 1).await;
    let runaway = env.repo("runaway");
    runaway.write(
        "app/Chart.yaml",
        "apiVersion: v2\nname: runaway\nversion: 0.1.0\n",
    );
    runaway.write(
        "app/templates/loop.yaml",
        "{{- range until 1000000 }}{{- range until 1000000 }}{{- end }}{{- end }}\n",
    );
    runaway.commit("loops");
    env.gitrepo(json!({"repo": env.daemon.url("runaway"), "branch": "main", "paths": ["app"]}))
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    env.delete_gitrepo().await;
    let started = Instant::now();
    let repo = env.repo("good");
    repo.write("app/cm.yaml", &configmap("a", "1"));
    let first = repo.commit("first");
    env.gitrepo(json!({"repo": env.daemon.url("good"), "branch": "main", "paths": ["app"]}))
        .await;
    env.app_at(
        "the next GitRepo syncs on the freed slot",
        Duration::from_secs(20),
        &first,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Charts that loop for ever in a GitRepo nobody deletes neither hold the single Git slot
/// nor render past the commit's budget: a GitRepo made after it syncs at once, and the
/// looping bundles are marked broken when the budget is spent, long before their own
/// minute-long limits (four charts on two cores would take two minutes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_gitrepo_does_not_starve_another() {
    let env = Env::start_with(|settings| {
        settings.git_concurrency = 1;
        settings.sync_render_budget = Duration::from_secs(4);
    })
    .await;
    let runaway = env.repo("runaway");
    let mut paths = Vec::new();
    for n in 1..=4 {
        runaway.write(
            &format!("app{n}/Chart.yaml"),
            &format!("apiVersion: v2\nname: runaway{n}\nversion: 0.1.0\n"),
        );
        runaway.write(
            &format!("app{n}/templates/loop.yaml"),
            "{{- range until 1000000 }}{{- range until 1000000 }}{{- end }}{{- end }}\n",
        );
        paths.push(format!("app{n}"));
    }
    runaway.commit("loops");
    let started = Instant::now();
    env.gitrepo(json!({"repo": env.daemon.url("runaway"), "branch": "main", "paths": paths}))
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let good = env.repo("good");
    good.write("app/cm.yaml", &configmap("a", "1"));
    let first = good.commit("first");
    env.gitrepo_named(
        "good",
        json!({"repo": env.daemon.url("good"), "branch": "main", "paths": ["app"]}),
    )
    .await;
    eventually(
        "the other GitRepo syncs meanwhile",
        Duration::from_secs(15),
        || async {
            (env.bundle_commits().await == vec![("good-app".to_string(), first.clone())])
                .then_some(())
        },
    )
    .await;
    let message = eventually(
        "the budget in the runaway's status",
        Duration::from_secs(30),
        || async {
            let status = env.status().await;
            let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
            ready
                .message
                .clone()
                .filter(|m| m.contains("budget of 4 s"))
        },
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    for n in 1..=4 {
        assert!(message.contains(&format!("demo-app{n}")), "{message}");
    }
}

/// The mirrors and checkouts of private repositories are for gitjob's eyes only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitjobs_data_is_readable_by_its_user_alone() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::start().await;
    env.synced_app("private", json!({})).await;
    let data = env.hub.dir().join("gitjob");
    let mode = std::fs::metadata(&data)
        .expect("data dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{}", data.display());
}

/// A production gitjob (`Egress::Public`, its default) fetches nothing from its own host: a
/// GitRepo naming a path on its disk, or a repository on a loopback address, is refused
/// with the reason in its status, and no Bundle appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitrepo_cannot_make_gitjob_read_its_own_host() {
    let env = Env::start_with(|settings| settings.egress = fleet_charts::Egress::Public).await;
    let repo = env.repo("local");
    repo.write("app/cm.yaml", &configmap("a", "1"));
    repo.commit("first");
    let on_disk = env.repos.join("local").display().to_string();
    for (url, refusal) in [
        (env.daemon.url("local"), "an address of this machine"),
        (on_disk, "local paths are not fetched"),
    ] {
        env.delete_gitrepo().await;
        env.gitrepo(json!({"repo": url, "branch": "main", "paths": ["app"]}))
            .await;
        eventually(&format!("{url} refused"), WAIT, || async {
            let status = env.status().await;
            let accepted = status.conditions.iter().find(|c| c.type_ == "Accepted")?;
            let message = accepted.message.clone()?;
            (accepted.status == "False" && message.contains(refusal)).then_some(())
        })
        .await;
        assert!(
            env.bundle_commits().await.is_empty(),
            "{url}: nothing deployed"
        );
    }
}
