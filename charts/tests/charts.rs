//! Remote charts from a Helm repository and an OCI registry on loopback, cached by digest.

use fleet_charts::{ChartCache, ChartError, HelmAuth, RemoteChart};
use fleet_testkit::ChartServer;

fn archive() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/charts/v1-requirements/charts/metrics-0.2.0.tgz"
    );
    std::fs::read(path).expect("the packaged test chart")
}

fn loaded_name(bytes: &[u8]) -> String {
    fleet_helm::Chart::from_archive("fetched", bytes)
        .expect("a chart")
        .name
}

#[test]
fn a_repository_chart_is_chosen_by_range_and_cached_by_digest() {
    let server = ChartServer::start("metrics", "0.2.0", archive()).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ChartCache::new(dir.path());
    let request = RemoteChart {
        repo: Some(server.url.clone()),
        chart: "metrics".into(),
        version: Some("~0.2".into()),
    };
    let bytes = cache.fetch(&request, &HelmAuth::none()).expect("fetched");
    assert_eq!(loaded_name(&bytes), "metrics");
    let latest = RemoteChart {
        version: None,
        ..request.clone()
    };
    assert_eq!(
        cache
            .fetch(&latest, &HelmAuth::none())
            .expect("latest release"),
        bytes,
        "9.0.0-rc.1 is a prerelease"
    );
    let downloads = |s: &ChartServer| {
        s.hits
            .lock()
            .expect("hits")
            .get("/metrics-0.2.0.tgz")
            .copied()
    };
    assert_eq!(
        downloads(&server),
        Some(1),
        "the second fetch came from the cache"
    );

    let missing = RemoteChart {
        version: Some(">=5.0".into()),
        ..request
    };
    let error = cache
        .fetch(&missing, &HelmAuth::none())
        .expect_err("no match");
    assert!(matches!(error, ChartError::NotFound(_)), "{error}");
    assert!(
        error
            .to_string()
            .contains("no chart version found for metrics->=5.0"),
        "{error}"
    );
}

#[test]
fn an_oci_chart_is_pulled_with_an_anonymous_token() {
    let server = ChartServer::start("metrics", "0.2.0", archive()).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ChartCache::new(dir.path());
    for version in [Some("0.2.0"), Some("^0.2.0"), None] {
        let request = RemoteChart {
            repo: None,
            chart: format!("oci://{}/charts/metrics", server.host),
            version: version.map(String::from),
        };
        assert_eq!(
            loaded_name(&cache.fetch(&request, &HelmAuth::none()).expect("pulled")),
            "metrics",
            "{version:?}"
        );
    }
    let hits = server.hits.lock().expect("hits").clone();
    assert!(
        hits.keys().any(|p| p.starts_with("/token")),
        "a token was asked for: {hits:?}"
    );
    // A reference may pin its tag, as `helm pull oci://host/chart:0.2.0` takes it; a
    // `version` other than that tag is Helm's mismatch error.
    for version in [None, Some("0.2.0")] {
        let request = RemoteChart {
            repo: None,
            chart: format!("oci://{}/charts/metrics:0.2.0", server.host),
            version: version.map(String::from),
        };
        assert_eq!(
            loaded_name(&cache.fetch(&request, &HelmAuth::none()).expect("pulled")),
            "metrics",
            "{version:?}"
        );
    }
    let mismatch = RemoteChart {
        repo: None,
        chart: format!("oci://{}/charts/metrics:0.2.0", server.host),
        version: Some("0.1.0".into()),
    };
    let error = cache
        .fetch(&mismatch, &HelmAuth::none())
        .expect_err("mismatch");
    assert!(
        error
            .to_string()
            .contains("chart reference and version mismatch"),
        "{error}"
    );
}

#[test]
fn a_chart_whose_digest_differs_from_the_index_is_taken_as_helm_takes_it() {
    let server = ChartServer::start("metrics", "0.2.0", archive()).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let request = RemoteChart {
        repo: Some(server.url.clone()),
        chart: "metrics".into(),
        version: Some("0.1.0".into()),
    };
    // The index announces digest 0000 for 0.1.0; the archive served is another.
    let fetched = ChartCache::new(dir.path())
        .fetch(&request, &HelmAuth::none())
        .expect("taken, with a warning");
    assert_eq!(loaded_name(&fetched), "metrics");
    let gone = RemoteChart {
        chart: "absent".into(),
        ..request
    };
    let error = ChartCache::new(dir.path())
        .fetch(&gone, &HelmAuth::none())
        .expect_err("no such chart");
    assert!(
        error.to_string().contains("chart `absent` is not in"),
        "{error}"
    );
}

/// The GitRepo's `helmSecretName` credentials, limited by `regex` when given.
fn gitrepo_auth(username: &str, password: &str, regex: Option<&str>) -> HelmAuth {
    let data = [("username", username), ("password", password)]
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
    fleet_charts::RepoHelmAuth::new(Some(("helm-creds", &data)), None, regex)
        .expect("credentials")
        .for_path("app")
}

#[test]
fn private_repositories_and_registries_take_the_gitrepo_credentials_and_no_others_do() {
    let server =
        ChartServer::start_private("metrics", "0.2.0", archive(), "ci:s3cret").expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let from_repo = RemoteChart {
        repo: Some(server.url.clone()),
        chart: "metrics".into(),
        version: Some("0.2.0".into()),
    };
    let from_registry = RemoteChart {
        repo: None,
        chart: format!("oci://{}/charts/metrics", server.host),
        version: Some("0.2.0".into()),
    };
    for request in [&from_repo, &from_registry] {
        // A fresh cache each time: a cached archive would hide what the server asks.
        let cache = ChartCache::new(dir.path().join(request.chart.replace(['/', ':'], "-")));
        let refused = cache
            .fetch(request, &HelmAuth::none())
            .expect_err("credentials are needed");
        assert!(refused.to_string().contains("HTTP 401"), "{refused}");
        let trusted = Some("http://127\\.0\\.0\\.1:|oci://127\\.0\\.0\\.1:");
        let wrong = cache
            .fetch(request, &gitrepo_auth("ci", "wrong", trusted))
            .expect_err("wrong password");
        assert!(wrong.to_string().contains("HTTP 401"), "{wrong}");
        // Without helmRepoURLRegex the credentials go nowhere, and the failure says why.
        let held_back = cache
            .fetch(request, &gitrepo_auth("ci", "s3cret", None))
            .expect_err("credentials held back");
        assert!(
            held_back
                .to_string()
                .ends_with("set spec.helmRepoURLRegex to allow credential forwarding"),
            "{held_back}"
        );
        let fetched = cache
            .fetch(request, &gitrepo_auth("ci", "s3cret", trusted))
            .expect("fetched with the credentials");
        assert_eq!(loaded_name(&fetched), "metrics");
    }
    let sent = server
        .with_credentials
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(sent > 0);

    // helmRepoURLRegex: a repository it does not match never sees the credentials.
    let elsewhere = ChartServer::start("metrics", "0.2.0", archive()).expect("server");
    let cache = ChartCache::new(dir.path().join("elsewhere"));
    let public = RemoteChart {
        repo: Some(elsewhere.url.clone()),
        ..from_repo.clone()
    };
    let limited = gitrepo_auth("ci", "s3cret", Some("^https://charts\\.example\\.com/"));
    cache.fetch(&public, &limited).expect("a public chart");
    assert_eq!(
        elsewhere
            .with_credentials
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "no credentials sent where the regex does not match"
    );
    let unmatched = cache.fetch(&from_repo, &limited).expect_err("not matched");
    assert!(unmatched.to_string().contains("HTTP 401"), "{unmatched}");
}

/// A cache that fetches only from remote hosts refuses a repository on loopback before
/// asking it: the server sees no request.
#[test]
fn a_public_only_cache_refuses_a_repository_on_this_machine() {
    let server = ChartServer::start("metrics", "0.2.0", archive()).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ChartCache::new(dir.path()).with_egress(fleet_charts::Egress::Public);
    let request = RemoteChart {
        repo: Some(server.url.clone()),
        chart: "metrics".into(),
        version: None,
    };
    match cache.fetch(&request, &HelmAuth::none()) {
        Err(ChartError::Refused(why)) => {
            assert!(why.contains("an address of this machine"), "{why}")
        }
        other => panic!("refused, not {:?}", other.map(|b| b.len())),
    }
    let allowed = ChartCache::new(dir.path()).fetch(&request, &HelmAuth::none());
    assert!(allowed.is_ok(), "the default cache fetches it");
}
