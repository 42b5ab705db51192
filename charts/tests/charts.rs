//! Remote charts from a Helm repository and an OCI registry on loopback, cached by digest.

use fleet_charts::{ChartCache, ChartError, RemoteChart};
use fleet_testkit::ChartServer;

fn archive() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/charts/v1-requirements/charts/metrics-0.2.0.tgz"
    );
    std::fs::read(path).expect("the packaged test chart")
}

fn loaded_name(bytes: &[u8]) -> String {
    fleet_renderer::helm::chart::from_archive("fetched", bytes)
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
    let bytes = cache.fetch(&request).expect("fetched");
    assert_eq!(loaded_name(&bytes), "metrics");
    let latest = RemoteChart {
        version: None,
        ..request.clone()
    };
    assert_eq!(
        cache.fetch(&latest).expect("latest release"),
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
    let error = cache.fetch(&missing).expect_err("no match");
    assert!(matches!(error, ChartError::NotFound(_)), "{error}");
    assert!(error.to_string().contains("matches `>=5.0`"), "{error}");
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
            loaded_name(&cache.fetch(&request).expect("pulled")),
            "metrics",
            "{version:?}"
        );
    }
    let hits = server.hits.lock().expect("hits").clone();
    assert!(
        hits.keys().any(|p| p.starts_with("/token")),
        "a token was asked for: {hits:?}"
    );
}

#[test]
fn a_wrong_digest_is_refused() {
    let server = ChartServer::start("metrics", "0.2.0", archive()).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let request = RemoteChart {
        repo: Some(server.url.clone()),
        chart: "metrics".into(),
        version: Some("0.1.0".into()),
    };
    // The index announces digest 0000 for 0.1.0; the archive served is another.
    let error = ChartCache::new(dir.path())
        .fetch(&request)
        .expect_err("digest mismatch");
    assert!(matches!(error, ChartError::Digest { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("does not match the announced 0000"),
        "{error}"
    );
    let gone = RemoteChart {
        chart: "absent".into(),
        ..request
    };
    let error = ChartCache::new(dir.path())
        .fetch(&gone)
        .expect_err("no such chart");
    assert!(
        error.to_string().contains("chart `absent` is not in"),
        "{error}"
    );
}
