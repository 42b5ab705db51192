//! Remote Kustomize bases in bundles, against a real `git daemon` on loopback: gitjob
//! fetches them into the bundle before it renders; the Bundle then carries them, so the
//! controller renders offline; a base that cannot be fetched fails its bundle alone, with
//! the reason.

use fleet_api::GitRepo;
use fleet_charts::ChartCache;
use fleet_gitjob::bundles;
use fleet_gitjob::git::{Access, Limits, MirrorCache};
use fleet_gitjob::remote_bases::Fetcher;
use fleet_kustomize::{self as kustomize, RepoRoot};
use fleet_testkit::{git, GitDaemon, TestRepo};
use serde_json::json;

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: example/web:IMAGE\n";

#[test]
fn remote_bases_are_fetched_into_the_bundle_and_render_offline_from_it() {
    // A repository of bases, served by git daemon: tag v1 holds image 1, main holds 2.
    let served = tempfile::tempdir().expect("temp dir");
    let bases = TestRepo::new();
    bases
        .write("base/kustomization.yaml", "resources:\n- deployment.yaml\n")
        .write("base/deployment.yaml", &DEPLOYMENT.replace("IMAGE", "1"));
    bases.commit("v1");
    bases.git(&["tag", "v1"]);
    bases.write("base/deployment.yaml", &DEPLOYMENT.replace("IMAGE", "2"));
    bases.commit("v2");
    git(
        served.path(),
        &["clone", "-q", "--bare", &bases.url(), "bases.git"],
    );
    let daemon = GitDaemon::start(served.path());
    let base_url = daemon.url("bases.git");

    // The deployed repository: one bundle on the tag, one on the default branch, one on
    // a repository that does not exist.
    let app = TestRepo::new();
    app.write("tagged/fleet.yaml", "defaultNamespace: shop\n")
        .write(
            "tagged/kustomization.yaml",
            &format!("resources:\n- {base_url}//base?ref=v1\nnamePrefix: tagged-\n"),
        );
    app.write("head/fleet.yaml", "defaultNamespace: shop\n")
        .write(
            "head/kustomization.yaml",
            &format!("resources:\n- {base_url}//base\nnamePrefix: head-\n"),
        );
    app.write("broken/fleet.yaml", "defaultNamespace: shop\n")
        .write(
            "broken/kustomization.yaml",
            &format!("resources:\n- {}//base?ref=v1\n", daemon.url("missing.git")),
        );
    let commit = app.commit("bundles");
    let gitrepo: GitRepo = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1",
        "kind": "GitRepo",
        "metadata": {"name": "shop", "namespace": "fleet-local"},
        "spec": {"repo": app.url()}
    }))
    .expect("a GitRepo");

    let work = tempfile::tempdir().expect("temp dir");
    let mirrors = MirrorCache::new(work.path().join("mirrors"));
    let charts = ChartCache::new(work.path().join("charts"));
    let access = Access::public(app.url());
    let fetcher = Fetcher {
        mirrors: &mirrors,
        access: &access,
        http: &charts,
        limits: Limits::default(),
        max_fetch_bytes: 10 << 20,
    };
    fetcher.fetch_all(&gitrepo, app.path());
    let rendered = bundles::for_commit(
        &gitrepo,
        app.path(),
        &commit,
        &charts,
        &fleet_charts::RepoHelmAuth::default(),
        &Default::default(),
    )
    .expect("bundles");
    // What follows must not need the Git server.
    drop(daemon);

    let failure = &rendered.failures["shop-broken"];
    assert!(
        failure.message.contains("broken/kustomization.yaml")
            && failure.message.contains("fetching remote resource")
            && failure.message.contains("missing.git"),
        "{}",
        failure.message
    );
    for (bundle, prefix, image) in [("shop-tagged", "tagged-", "1"), ("shop-head", "head-", "2")] {
        let object = rendered
            .bundles
            .iter()
            .find(|b| b.metadata.name.as_deref() == Some(bundle))
            .unwrap_or_else(|| panic!("{bundle} rendered: {:?}", rendered.failures));
        // Rebuild from the Bundle's files alone, as the controller does: no network.
        let copy = tempfile::tempdir().expect("temp dir");
        for resource in &object.spec.resources {
            let name = resource.name.as_deref().expect("a name");
            let path = copy.path().join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(&path, resource.content.as_deref().unwrap_or_default()).expect("write");
        }
        assert!(
            object.spec.resources.iter().any(|r| r
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("_fleet_remote/"))),
            "{bundle} carries its remote base"
        );
        let root = RepoRoot::new(copy.path()).expect("root");
        let remote_dir = copy.path().join(kustomize::REMOTE_DIR);
        let options = kustomize::BuildOptions {
            remote_dir: Some(&remote_dir),
            ..kustomize::BuildOptions::default()
        };
        let objects = kustomize::build_with(&root, copy.path(), options).expect("offline build");
        assert_eq!(objects.len(), 1, "{objects:?}");
        assert_eq!(objects[0]["metadata"]["name"], format!("{prefix}web"));
        assert_eq!(
            objects[0]["spec"]["template"]["spec"]["containers"][0]["image"],
            format!("example/web:{image}")
        );
    }
    assert_eq!(rendered.bundles.len(), 2);
}
