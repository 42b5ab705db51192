//! The Bundles gitjob builds from a commit, as Fleet's gitjob gets them by running `fleet
//! apply` on the checkout.

use fleet_api::GitRepo;
use fleet_charts::ChartCache;
use fleet_gitjob::bundles;
use fleet_testkit::TestRepo;
use serde_json::json;

/// Fleet's `fleet apply` skips a bundle directory whose fleet.yaml has nothing to deploy
/// (internal/cmd/cli/apply/apply.go:178, restated in cli/tests/fleet_cases/cli.yaml); its
/// gitjob therefore makes no Bundle of it, and neither does ours.
#[test]
fn a_bundle_with_nothing_to_deploy_gives_no_bundle() {
    let repo = TestRepo::new();
    repo.write("a/fleet.yaml", "namespace: a\n")
        .write("b/fleet.yaml", "namespace: b\n")
        .write(
            "b/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        )
        .write("c/fleet.yaml", "helm:\n  values: {replicas: 2}\n");
    let commit = repo.commit("bundles");
    let gitrepo: GitRepo = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1",
        "kind": "GitRepo",
        "metadata": {"name": "test", "namespace": "fleet-local"},
        "spec": {"repo": repo.url()}
    }))
    .expect("a GitRepo");
    let work = tempfile::tempdir().expect("temp dir");
    let rendered = bundles::for_commit(
        &gitrepo,
        repo.path(),
        &commit,
        &ChartCache::new(work.path().join("charts")),
        &fleet_charts::RepoHelmAuth::default(),
        &Default::default(),
    )
    .expect("bundles");
    let names: Vec<_> = rendered
        .bundles
        .iter()
        .filter_map(|bundle| bundle.metadata.name.as_deref())
        .collect();
    assert_eq!(names, ["test-b"]);
    assert!(rendered.failures.is_empty(), "{:?}", rendered.failures);
}
