//! `fleet status`: a tree of GitRepos, their Bundles and the clusters each Bundle is
//! deployed to, with each one's state.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use fleet_api::{Bundle, BundleDeployment, Condition, GitRepo};
use fleet_controller::reconcile::{
    DeploymentState, BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL, CLUSTER_LABEL,
};
use fleet_renderer::bundle::REPO_NAME_LABEL;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde::Serialize;

use super::output::{print_structured, Format};

/// Arguments of `fleet status`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet status --kubeconfig ./fleet-demo/hub/local.kubeconfig
  fleet status -n fleet-default --width 100
  fleet status demo --watch
  fleet status -o yaml")]
pub struct StatusArgs {
    /// Only this GitRepo.
    gitrepo: Option<String>,
    /// Keep watching: redraw on a terminal, else print the tree again when it changes.
    #[arg(short, long, conflicts_with = "output")]
    watch: bool,
    /// Kubeconfig of the hub (the cluster holding GitRepos and Bundles).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Only this namespace (default: all).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    output: Format,
    /// Colour the states: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
    /// Columns to fit the tree in (default: $COLUMNS, else 80).
    #[arg(long)]
    width: Option<usize>,
}

/// Everything `fleet status` shows.
#[derive(Debug, Default, Serialize)]
pub struct Snapshot {
    /// GitRepos, by namespace and name; Bundles of no GitRepo come last.
    pub repos: Vec<RepoNode>,
}

/// A GitRepo and its Bundles.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoNode {
    /// The namespace.
    pub namespace: String,
    /// The GitRepo's name; `None` gathers Bundles no GitRepo made.
    pub name: Option<String>,
    /// The commit last synced.
    pub commit: Option<String>,
    /// Ready, NotReady, Stalled...
    pub state: String,
    /// Why it is not ready.
    pub message: Option<String>,
    /// Its Bundles, by name.
    pub bundles: Vec<BundleNode>,
}

/// A Bundle and where it is deployed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleNode {
    /// The Bundle's name.
    pub name: String,
    /// Ready, NotReady...
    pub state: String,
    /// Clusters ready.
    pub ready: usize,
    /// Clusters targeted.
    pub desired: usize,
    /// Why it is not ready.
    pub message: Option<String>,
    /// One entry per targeted cluster, by name.
    pub clusters: Vec<ClusterNode>,
}

/// One cluster's deployment of a Bundle.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNode {
    /// The Cluster's name.
    pub cluster: String,
    /// Fleet's state of the deployment.
    pub state: DeploymentState,
    /// What the agent last said was wrong.
    pub message: Option<String>,
}

impl RepoNode {
    /// True when the GitRepo synced a commit, says it is Ready, and every Bundle is ready
    /// everywhere.
    pub fn is_ready(&self) -> bool {
        self.commit.is_some()
            && self.state == "Ready"
            && !self.bundles.is_empty()
            && self.bundles.iter().all(BundleNode::is_ready)
    }
}

impl BundleNode {
    /// True when the Bundle says it is Ready and every targeted cluster is ready.
    pub fn is_ready(&self) -> bool {
        self.state == "Ready"
            && self.desired > 0
            && self.ready == self.desired
            && self
                .clusters
                .iter()
                .all(|c| c.state == DeploymentState::Ready)
    }
}

/// The first condition that says something is wrong, as `Type: message`.
fn trouble(conditions: &[Condition]) -> Option<String> {
    conditions
        .iter()
        .find(|c| {
            (c.type_ == "Stalled" && c.status == "True")
                || (c.type_ != "Stalled" && c.type_ != "Reconciling" && c.status == "False")
        })
        .map(|c| match c.message.as_deref().filter(|m| !m.is_empty()) {
            Some(message) => message.to_string(),
            None => format!("{} is {}", c.type_, c.status),
        })
}

impl Snapshot {
    /// Reads GitRepos, Bundles and BundleDeployments from the hub.
    pub async fn load(client: &kube::Client, namespace: Option<&str>) -> Result<Self> {
        let params = ListParams::default();
        let (repos, bundles) = match namespace {
            Some(ns) => (
                Api::<GitRepo>::namespaced(client.clone(), ns)
                    .list(&params)
                    .await,
                Api::<Bundle>::namespaced(client.clone(), ns)
                    .list(&params)
                    .await,
            ),
            None => (
                Api::<GitRepo>::all(client.clone()).list(&params).await,
                Api::<Bundle>::all(client.clone()).list(&params).await,
            ),
        };
        let repos = repos.context("listing GitRepos")?.items;
        let bundles = bundles.context("listing Bundles")?.items;
        let deployments = Api::<BundleDeployment>::all(client.clone())
            .list(&params)
            .await
            .context("listing BundleDeployments")?
            .items;
        Ok(Self::assemble(&repos, &bundles, &deployments))
    }

    /// Builds the tree from listed objects.
    pub fn assemble(
        repos: &[GitRepo],
        bundles: &[Bundle],
        deployments: &[BundleDeployment],
    ) -> Self {
        let mut clusters_of: BTreeMap<(String, String), Vec<ClusterNode>> = BTreeMap::new();
        for deployment in deployments {
            let labels = deployment.labels();
            let (Some(namespace), Some(bundle)) = (
                labels.get(BUNDLE_NAMESPACE_LABEL),
                labels.get(BUNDLE_NAME_LABEL),
            ) else {
                continue;
            };
            let status = deployment.status.clone().unwrap_or_default();
            clusters_of
                .entry((namespace.clone(), bundle.clone()))
                .or_default()
                .push(ClusterNode {
                    cluster: labels
                        .get(CLUSTER_LABEL)
                        .cloned()
                        .unwrap_or_else(|| deployment.name_any()),
                    state: DeploymentState::of(deployment),
                    message: trouble(&status.conditions),
                });
        }
        let mut by_repo: BTreeMap<(String, Option<String>), Vec<BundleNode>> = BTreeMap::new();
        for bundle in bundles {
            let namespace = bundle.namespace().unwrap_or_default();
            let mut clusters = clusters_of
                .remove(&(namespace.clone(), bundle.name_any()))
                .unwrap_or_default();
            clusters.sort_by(|a, b| a.cluster.cmp(&b.cluster));
            let status = bundle.status.clone().unwrap_or_default();
            let ready = clusters
                .iter()
                .filter(|c| c.state == DeploymentState::Ready)
                .count();
            let node = BundleNode {
                name: bundle.name_any(),
                state: status
                    .display
                    .and_then(|d| d.state)
                    .unwrap_or_else(|| "Pending".into()),
                ready,
                desired: clusters.len(),
                message: trouble(&status.conditions),
                clusters,
            };
            let repo = bundle.labels().get(REPO_NAME_LABEL).cloned();
            by_repo.entry((namespace, repo)).or_default().push(node);
        }
        let mut nodes: Vec<RepoNode> = repos
            .iter()
            .map(|repo| {
                let namespace = repo.namespace().unwrap_or_default();
                let mut bundles = by_repo
                    .remove(&(namespace.clone(), Some(repo.name_any())))
                    .unwrap_or_default();
                bundles.sort_by(|a, b| a.name.cmp(&b.name));
                let status = repo.status.clone().unwrap_or_default();
                RepoNode {
                    namespace,
                    name: Some(repo.name_any()),
                    commit: status.commit,
                    state: status
                        .display
                        .and_then(|d| d.state)
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "Pending".into()),
                    message: trouble(&status.conditions),
                    bundles,
                }
            })
            .collect();
        nodes.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for ((namespace, _), mut bundles) in by_repo {
            bundles.sort_by(|a, b| a.name.cmp(&b.name));
            nodes.push(RepoNode {
                namespace,
                name: None,
                commit: None,
                state: String::new(),
                message: None,
                bundles,
            });
        }
        Self { repos: nodes }
    }

    /// The tree as text lines no wider than `width` columns, states coloured if `color`.
    /// A message that does not fit beside its row is wrapped on the lines below it.
    pub fn render(&self, width: usize, color: bool) -> String {
        let mut rows = Vec::new();
        for repo in &self.repos {
            rows.push(repo_row(repo));
            for (i, bundle) in repo.bundles.iter().enumerate() {
                let stem = if i + 1 == repo.bundles.len() {
                    "    "
                } else {
                    "│   "
                };
                let below = if bundle.clusters.is_empty() {
                    "  "
                } else {
                    "│ "
                };
                rows.push(Row {
                    tree: branch(stem).into(),
                    continuation: format!("{stem}{below}"),
                    name: bundle.name.clone(),
                    state: bundle.state.clone(),
                    detail: format!("{}/{}", bundle.ready, bundle.desired),
                    message: bundle.message.clone(),
                });
                for (j, cluster) in bundle.clusters.iter().enumerate() {
                    let twig = if j + 1 == bundle.clusters.len() {
                        "    "
                    } else {
                        "│   "
                    };
                    rows.push(Row {
                        tree: format!("{stem}{}", branch(twig)),
                        continuation: format!("{stem}{twig}  "),
                        name: cluster.cluster.clone(),
                        state: cluster.state.as_str().into(),
                        detail: String::new(),
                        message: cluster.message.clone(),
                    });
                }
            }
        }
        if rows.is_empty() {
            return "No GitRepos or Bundles found.\n".into();
        }
        let name_width = rows
            .iter()
            .filter(|r| !r.tree.is_empty())
            .map(|r| r.tree.chars().count() + r.name.chars().count())
            .max()
            .unwrap_or(0)
            .min(width / 2);
        let mut out = String::new();
        for row in rows {
            row.render(name_width, width, color, &mut out);
        }
        out
    }
}

/// The branch drawn before an item, given what is drawn below it for the next one.
fn branch(stem: &str) -> &'static str {
    if stem.starts_with('│') {
        "├── "
    } else {
        "└── "
    }
}

fn repo_row(repo: &RepoNode) -> Row {
    let below = if repo.bundles.is_empty() { "" } else { "│ " };
    let Some(name) = &repo.name else {
        return Row {
            tree: String::new(),
            continuation: below.into(),
            name: format!("{}/(bundles of no GitRepo)", repo.namespace),
            state: String::new(),
            detail: String::new(),
            message: None,
        };
    };
    let ready = repo.bundles.iter().filter(|b| b.is_ready()).count();
    let commit = repo
        .commit
        .as_deref()
        .map(|c| format!("  commit {}", c.chars().take(7).collect::<String>()))
        .unwrap_or_default();
    Row {
        tree: String::new(),
        continuation: below.into(),
        name: format!("{}/{name}", repo.namespace),
        state: repo.state.clone(),
        detail: format!("{ready}/{} bundles{commit}", repo.bundles.len()),
        message: repo.message.clone(),
    }
}

/// One item of the tree: drawing, name, state, counts, and what is wrong.
struct Row {
    tree: String,
    /// What is drawn before the lines of its wrapped message.
    continuation: String,
    name: String,
    state: String,
    detail: String,
    message: Option<String>,
}

const STATE_WIDTH: usize = 11;

impl Row {
    fn render(&self, name_width: usize, width: usize, color: bool, out: &mut String) {
        let head = format!("{}{}", self.tree, self.name);
        let head = if self.tree.is_empty() {
            format!("{head}  ")
        } else {
            format!("{:<name_width$}  ", fit(&head, name_width))
        };
        let room = width.saturating_sub(head.chars().count());
        let state = fit(&self.state, room);
        let pad = STATE_WIDTH.saturating_sub(state.chars().count()) + 1;
        let room = room.saturating_sub(state.chars().count() + pad);
        let mut detail = fit(&self.detail, room);
        let message = self.message.as_deref().unwrap_or_default();
        let gap = if detail.is_empty() { "" } else { "  " };
        let inline = !message.is_empty()
            && detail.chars().count() + gap.len() + message.chars().count() <= room;
        if inline {
            detail = format!("{detail}{gap}{message}");
        }
        let state = if color { paint(&state) } else { state };
        let line = format!("{head}{state}{}{detail}", " ".repeat(pad));
        out.push_str(line.trim_end());
        out.push('\n');
        if inline || message.is_empty() {
            return;
        }
        let indent = format!("{}  ", self.continuation);
        let room = width.saturating_sub(indent.chars().count()).max(20);
        for piece in wrap(message, room) {
            out.push_str(&indent);
            out.push_str(&piece);
            out.push('\n');
        }
    }
}

/// `text` in lines of at most `room` columns, broken at spaces (a longer word is cut).
fn wrap(text: &str, room: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        while word.chars().count() > room {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let head: String = word.chars().take(room).collect();
            word = word.chars().skip(room).collect();
            lines.push(head);
        }
        let needed = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if !line.is_empty() && needed > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` cut to `room` columns, with an ellipsis where it was cut.
fn fit(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    if room > 0 {
        cut.push('…');
    }
    cut
}

/// `state` in green, yellow or red.
fn paint(state: &str) -> String {
    let code = match state {
        "Ready" => "32",
        "ErrApplied" | "Modified" | "Stalled" | "Failed" | "RenderFailed" => "31",
        "" => return String::new(),
        _ => "33",
    };
    format!("\x1b[{code}m{state}\x1b[0m")
}

/// Prints the status tree of the hub (and again on changes, with `--watch`).
pub fn run(args: StatusArgs) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let terminal = std::io::stdout().is_terminal();
    let color = match args.color.as_str() {
        "always" => true,
        "never" => false,
        _ => terminal && std::env::var_os("NO_COLOR").is_none(),
    };
    let width = args
        .width
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
        .unwrap_or(80)
        .max(40);
    runtime.block_on(async {
        let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
        let load = || async {
            let mut snapshot = Snapshot::load(&client, args.namespace.as_deref()).await?;
            if let Some(name) = &args.gitrepo {
                snapshot.repos.retain(|r| r.name.as_ref() == Some(name));
            }
            anyhow::Ok(snapshot)
        };
        let snapshot = load().await?;
        if print_structured(args.output, &snapshot)? {
            return Ok(());
        }
        let mut shown = snapshot.render(width, color);
        print!("{shown}");
        if !args.watch {
            return Ok(());
        }
        let watching = async {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let tree = load().await?.render(width, color);
                if tree == shown {
                    continue;
                }
                if terminal {
                    // Home and clear, then the new tree.
                    print!("\x1b[H\x1b[2J{tree}");
                } else {
                    print!("\n{tree}");
                }
                std::io::Write::flush(&mut std::io::stdout())?;
                shown = tree;
            }
        };
        tokio::select! {
            result = watching => result,
            _ = super::shutdown_signal() => Ok(()),
        }
    })
}
