//! `fleet status`: a tree of GitRepos, their Bundles and the clusters each Bundle is
//! deployed to, with each one's state.

mod snapshot;
mod tree;

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::output::{print_structured, Format};
pub(super) use snapshot::{RepoNode, Snapshot};

/// Arguments of `fleet status`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet status --kubeconfig ./fleet-demo/hub/local.kubeconfig
  fleet status -n fleet-default --width 100
  fleet status demo --watch
  fleet status -o yaml")]
pub(super) struct StatusArgs {
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

/// Prints the status tree of the hub (and again on changes, with `--watch`).
pub(super) fn run(args: StatusArgs) -> Result<()> {
    let runtime = super::runtime()?;
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
