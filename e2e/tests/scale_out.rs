//! Scale-out on the hub: two replicas of gitjob elect a leader on a Lease, and when the
//! leader is killed the other takes over within the Lease's duration; two shards split
//! the GitRepos (and their Bundles) between them, and neither touches the other's.

use std::sync::Arc;
use std::time::Duration;

use fleet_api::{Bundle, BundleDeployment, GitRepo};
use fleet_gitjob::controller::{Gitjob, Settings};
use fleet_testkit::{create_cluster, eventually, FleetHub, GitDaemon, TestRepo};
use kube::api::{ListParams, PostParams};
use kube::Api;
use serde_json::json;

const NS: &str = "fleet-local";
const WAIT: Duration = Duration::from_secs(30);

/// Creates the GitRepo `name` on `url`, labelled for `shard` when given.
async fn gitrepo(client: &kube::Client, name: &str, url: &str, shard: Option<&str>) {
    let mut labels = json!({});
    if let Some(shard) = shard {
        labels["fleet.cattle.io/shard-ref"] = json!(shard);
    }
    let gitrepo: GitRepo = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"repo": url, "branch": "main", "pollingInterval": "1s",
                 "targets": [{"clusterSelector": {}}]},
    }))
    .expect("GitRepo");
    Api::<GitRepo>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &gitrepo)
        .await
        .expect("GitRepo created");
}

/// The commit `name` is synced at, if any.
async fn synced(client: &kube::Client, name: &str) -> Option<String> {
    let gitrepo = Api::<GitRepo>::namespaced(client.clone(), NS)
        .get(name)
        .await
        .ok()?;
    gitrepo.status?.commit
}

/// A gitjob for `shard` (none: the unsharded one), keeping its data under `data`.
fn gitjob(client: &kube::Client, data: &std::path::Path, shard: Option<&str>) -> Arc<Gitjob> {
    let mut settings = Settings::on_this_machine(data);
    settings.shard = shard.map(String::from);
    Gitjob::new(client.clone(), settings, Arc::default())
}

fn repo(dir: &std::path::Path, name: &str) -> TestRepo {
    let repo = TestRepo::in_dir(dir, name);
    repo.write("app/fleet.yaml", "defaultNamespace: app\n")
        .write(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
        );
    repo.commit("first");
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_replica_takes_over_when_the_leader_is_killed() {
    let hub = FleetHub::start(&[]).await;
    let repos = hub.dir().join("repos");
    let _first = repo(&repos, "first");
    let _second = repo(&repos, "second");
    let daemon = GitDaemon::start(&repos);
    let lease = Duration::from_secs(2);
    let replica = |name: &str| {
        let election = fleet_objects::leader::Election::new(
            hub.client.clone(),
            NS,
            "fleet-rs-gitjob",
            name,
            fleet_gitjob::controller::FIELD_MANAGER,
            lease,
        );
        let gitjob = gitjob(&hub.client, &hub.dir().join(name), None);
        tokio::spawn(async move {
            election.lead(gitjob.run(futures_pending())).await;
        })
    };
    let one = replica("replica-one");
    // The first replica leads before the second starts.
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(hub.client.clone(), NS);
    let holder = || async {
        let lease = leases.get_opt("fleet-rs-gitjob").await.ok()??;
        lease.spec?.holder_identity
    };
    eventually("a leader", WAIT, holder).await;
    let two = replica("replica-two");
    gitrepo(&hub.client, "first", &daemon.url("first"), None).await;
    eventually("the first GitRepo synced", WAIT, || {
        synced(&hub.client, "first")
    })
    .await;
    assert_eq!(holder().await.as_deref(), Some("replica-one"));

    // Killed: it does not let go of the Lease; the other takes it once it runs out.
    one.abort();
    let killed = tokio::time::Instant::now();
    gitrepo(&hub.client, "second", &daemon.url("second"), None).await;
    eventually("the second replica leading", WAIT, || async {
        (holder().await.as_deref() == Some("replica-two")).then_some(())
    })
    .await;
    eventually("the second GitRepo synced by it", WAIT, || {
        synced(&hub.client, "second")
    })
    .await;
    assert!(
        killed.elapsed() < lease * 3,
        "taken over in {:?} with a {lease:?} lease",
        killed.elapsed()
    );
    // Both replicas wrote the Lease as gitjob, not under a name the server guessed.
    let written = leases.get("fleet-rs-gitjob").await.expect("the Lease");
    let managers: Vec<_> = (written.metadata.managed_fields.iter().flatten())
        .map(|entry| entry.manager.clone().unwrap_or_default())
        .collect();
    assert_eq!(managers, ["fleet-gitjob"]);
    two.abort();
}

/// A future that never resolves: the work runs until its task is aborted.
fn futures_pending() -> impl std::future::Future<Output = ()> + Send + Sync + 'static {
    std::future::pending()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_split_the_gitrepos_and_their_bundles() {
    let hub = FleetHub::start(&["dev"]).await;
    create_cluster(&hub.client, NS, "dev", json!({"env": "dev"}))
        .await
        .expect("cluster");
    let repos = hub.dir().join("repos");
    let _a = repo(&repos, "ra");
    let _b = repo(&repos, "rb");
    let daemon = GitDaemon::start(&repos);
    gitrepo(&hub.client, "ra", &daemon.url("ra"), Some("a")).await;
    gitrepo(&hub.client, "rb", &daemon.url("rb"), Some("b")).await;
    let mut fleet = fleet_local::Fleet::new();
    fleet.run_gitjob(gitjob(&hub.client, &hub.dir().join("gitjob-a"), Some("a")));
    fleet.run_controller(fleet_controller::Context::sharded(
        hub.client.clone(),
        hub.dir().join("controller-a"),
        "a",
    ));
    let deployments = |repo: &'static str| {
        let client = hub.client.clone();
        async move {
            let listed = Api::<BundleDeployment>::all(client)
                .list(&ListParams::default().labels(&format!("fleet.cattle.io/repo-name={repo}")))
                .await
                .ok()?;
            (!listed.items.is_empty()).then_some(listed.items)
        }
    };
    eventually("shard a's GitRepo synced", WAIT, || {
        synced(&hub.client, "ra")
    })
    .await;
    let placed = eventually("shard a's bundle placed", WAIT, || deployments("ra")).await;
    assert_eq!(
        placed[0]
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("fleet.cattle.io/shard-ref")),
        Some(&"a".to_string())
    );
    let bundles = Api::<Bundle>::namespaced(hub.client.clone(), NS)
        .list(&ListParams::default().labels("fleet.cattle.io/shard-ref=a"))
        .await
        .expect("bundles");
    assert_eq!(bundles.items.len(), 1, "shard a's bundle carries its shard");
    // Shard a's gitjob and controller never touch shard b's GitRepo.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        synced(&hub.client, "rb").await,
        None,
        "shard b's GitRepo untouched"
    );
    assert!(deployments("rb").await.is_none());

    // Shard b's own replicas take it.
    fleet.run_gitjob(gitjob(&hub.client, &hub.dir().join("gitjob-b"), Some("b")));
    fleet.run_controller(fleet_controller::Context::sharded(
        hub.client.clone(),
        hub.dir().join("controller-b"),
        "b",
    ));
    eventually("shard b's GitRepo synced", WAIT, || {
        synced(&hub.client, "rb")
    })
    .await;
    eventually("shard b's bundle placed", WAIT, || deployments("rb")).await;
    fleet.stop().await;
}
