//! Waiting for the demo to be Ready, saying what to try, and following later commits.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use fleet_api::labels::{BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL, COMMIT_LABEL, REPO_NAME_LABEL};
use fleet_api::{Bundle, BundleDeployment, GitRepo};
use kube::api::{Api, ListParams};
use kube::ResourceExt;

use super::super::status::{RepoNode, Snapshot};
use super::{demo, progress::Progress, Fleet, GITREPO, MEMBERS, NAMESPACE};

/// The demo GitRepo's node, if the hub has it.
async fn demo_repo(client: &kube::Client) -> Result<Option<RepoNode>> {
    let snapshot = Snapshot::load(client, Some(NAMESPACE)).await?;
    Ok(snapshot
        .repos
        .into_iter()
        .find(|r| r.name.as_deref() == Some(GITREPO)))
}

/// How many BundleDeployments hold what the repository's head asks for and are Ready: their
/// Bundle is of that commit and its status is of its latest generation, and the agent has
/// applied the deployment id the controller last gave it. Statuses written before a restart
/// (for an older commit or content) do not count, however Ready they say they are.
async fn current_and_ready(client: &kube::Client, head: &str) -> Result<usize> {
    let bundles: Vec<Bundle> = Api::<Bundle>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default().labels(&format!("{REPO_NAME_LABEL}={GITREPO}")))
        .await?
        .items;
    let deployments: Vec<BundleDeployment> = Api::<BundleDeployment>::all(client.clone())
        .list(&ListParams::default().labels(&format!("{BUNDLE_NAMESPACE_LABEL}={NAMESPACE}")))
        .await?
        .items;
    Ok(count_current_and_ready(&bundles, &deployments, head))
}

/// Whether the GitRepo's own status counts `wanted` deployments, all Ready: what `kubectl
/// get gitrepos` shows. gitjob writes it after the deployments' and Bundles' statuses, and
/// may not have caught up with them yet.
async fn repo_counts_ready(client: &kube::Client, wanted: usize) -> Result<bool> {
    let repo = Api::<GitRepo>::namespaced(client.clone(), NAMESPACE)
        .get_opt(GITREPO)
        .await?;
    let summary = repo.and_then(|r| r.status).and_then(|s| s.summary);
    let counts = |n: i32| usize::try_from(n).is_ok_and(|n| n == wanted);
    Ok(summary.is_some_and(|s| counts(s.ready) && counts(s.desired_ready)))
}

/// [`current_and_ready`] on listed objects.
fn count_current_and_ready(
    bundles: &[Bundle],
    deployments: &[BundleDeployment],
    head: &str,
) -> usize {
    let current: Vec<String> = bundles
        .iter()
        .filter(|b| b.labels().get(COMMIT_LABEL).map(String::as_str) == Some(head))
        .filter(|b| b.status.as_ref().and_then(|s| s.observed_generation) == b.metadata.generation)
        .map(|b| b.name_any())
        .collect();
    deployments
        .iter()
        .filter(|d| {
            d.labels()
                .get(BUNDLE_NAME_LABEL)
                .is_some_and(|bundle| current.contains(bundle))
        })
        .filter(|d| {
            let status = d.status.as_ref();
            d.spec.deployment_id.is_some()
                && status.and_then(|s| s.applied_deployment_id.as_ref())
                    == d.spec.deployment_id.as_ref()
                && status.is_some_and(|s| s.ready)
        })
        .count()
}

/// Waits until the GitRepo is synced at the repository's head, every bundle is Ready on
/// every member, and the GitRepo's status counts them all, showing how far along it is.
pub(super) async fn wait_until_ready(
    client: &kube::Client,
    data: &Path,
    progress: &Progress,
    timeout: u64,
) -> Result<()> {
    let started = Instant::now();
    let wanted = demo::BUNDLES.len() * (MEMBERS.len() + 1);
    loop {
        let head = demo::head(&data.join("repo"))?;
        let repo = demo_repo(client).await?;
        let synced = repo.as_ref().and_then(|r| r.commit.as_deref()) == Some(head.as_str());
        let ready = repo
            .as_ref()
            .map_or(0, |r| r.bundles.iter().map(|b| b.ready).sum::<usize>());
        let waiting = repo
            .as_ref()
            .map(|r| {
                r.bundles
                    .iter()
                    .filter(|b| !b.is_ready())
                    .map(|b| b.name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let message = if !synced {
            "waiting for gitjob to sync the repository".to_string()
        } else {
            format!("waiting for {waiting}")
        };
        progress.deployments(ready, wanted, &message);
        let current = if synced && ready >= wanted {
            current_and_ready(client, &head).await?
        } else {
            0
        };
        let counted = current >= wanted && repo_counts_ready(client, wanted).await?;
        if synced && repo.as_ref().is_some_and(RepoNode::is_ready) && counted {
            progress.done(&format!(
                "all {} bundles Ready on dev, prod and edge in {:.1} s",
                demo::BUNDLES.len(),
                started.elapsed().as_secs_f64()
            ));
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(timeout) {
            bail!("the bundles were not all Ready within {timeout} s");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// What to look at, and how to make a change roll out.
pub(super) async fn print_ready(fleet: &Fleet, data: &Path) -> Result<()> {
    let snapshot = Snapshot::load(&fleet.hub.client, Some(NAMESPACE)).await?;
    let hub = data.join("hub");
    let local = hub.join("local.kubeconfig");
    let repo = data.join("repo");
    println!();
    print!("{}", snapshot.render(80, false));
    println!(
        "
fleet-rs is up. Data: {data}

Look around (the hub's management cluster, then a member):
  kubectl --kubeconfig {local} get gitrepos,bundles,clusters -A
  kubectl --kubeconfig {local} get bundledeployments -A
  kubectl --kubeconfig {dev} get configmaps -A -l app.kubernetes.io/name
  kubectl --kubeconfig {prod} get deployment,service greeter -n demo-helm
  helm --kubeconfig {prod} list -n demo-helm    (Helm 3 or 4: the release the agent recorded)
  {fleet} status --kubeconfig {local} --watch

Make a change and watch it roll out (each commit is pushed to gitjob's webhook; it also polls every 5 s):
  sed -i 's/color: blue/color: green/' {repo}/helm-chart/fleet.yaml && git -C {repo} commit -qam 'Green'
  kubectl --kubeconfig {prod} get configmap greeter -n demo-helm -o jsonpath='{{.data.color}}'
",
        data = data.display(),
        fleet = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "fleet".into()),
        local = local.display(),
        dev = hub.join("dev.kubeconfig").display(),
        prod = hub.join("prod.kubeconfig").display(),
        repo = repo.display(),
    );
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Ok(());
    }
    println!(
        "Ctrl-C stops everything; `fleet up --data {}` starts it again.",
        data.display()
    );
    Ok(())
}

/// Pushes each new commit of the demo repository to gitjob's webhook, as a Git host would,
/// and prints a line whenever the GitRepo's commit or readiness changes.
pub(super) async fn watch_changes(fleet: &Fleet, data: &Path) {
    let repo = data.join("repo");
    // What the GitRepo has synced, not the head now: a commit made since is to be pushed.
    let mut pushed = demo_repo(&fleet.hub.client)
        .await
        .ok()
        .flatten()
        .and_then(|node| node.commit)
        .unwrap_or_default();
    let mut last = String::new();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Ok(head) = demo::head(&repo) {
            if head != pushed {
                match fleet.hook.push(&demo::url(&repo), &head).await {
                    Ok(()) => println!("pushed {} to gitjob's webhook", short(&head)),
                    Err(error) => println!("could not push {}: {error:#}", short(&head)),
                }
                pushed = head;
            }
        }
        let Ok(Some(node)) = demo_repo(&fleet.hub.client).await else {
            continue;
        };
        let ready = node.bundles.iter().map(|b| b.ready).sum::<usize>();
        let desired = node.bundles.iter().map(|b| b.desired).sum::<usize>();
        let commit = short(&node.commit.unwrap_or_default());
        let line = format!("commit {commit}: {ready}/{desired} deployments ready");
        if line != last {
            println!("{line}");
            last = line;
        }
    }
}

fn short(commit: &str) -> String {
    commit.chars().take(7).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundle(name: &str, commit: &str, generation: i64, observed: i64) -> Bundle {
        serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
            "metadata": {"name": name, "namespace": NAMESPACE, "generation": generation,
                         "labels": {COMMIT_LABEL: commit}},
            "spec": {}, "status": {"observedGeneration": observed},
        }))
        .expect("bundle")
    }

    fn deployment(bundle: &str, wanted: &str, applied: &str, ready: bool) -> BundleDeployment {
        serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {"name": bundle, "namespace": "cluster-x",
                         "labels": {BUNDLE_NAME_LABEL: bundle}},
            "spec": {"deploymentID": wanted},
            "status": {"appliedDeploymentID": applied, "ready": ready},
        }))
        .expect("deployment")
    }

    #[test]
    fn only_deployments_of_the_head_applied_at_their_current_id_count() {
        let bundles = [
            bundle("current", "abc", 2, 2),
            bundle("old-commit", "old", 1, 1),
            bundle("unobserved", "abc", 3, 2),
        ];
        let deployments = [
            deployment("current", "s-2:x", "s-2:x", true),
            // Ready, but for the content it held before (a restart left the old status).
            deployment("current", "s-2:x", "s-1:x", true),
            deployment("current", "s-2:x", "s-2:x", false),
            deployment("old-commit", "s-9:x", "s-9:x", true),
            deployment("unobserved", "s-3:x", "s-3:x", true),
        ];
        assert_eq!(count_current_and_ready(&bundles, &deployments, "abc"), 1);
    }
}
