//! `fleet token create`: a ClusterRegistrationToken and the kubeconfig an agent joins with.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use fleet_controller::registration::{issue_token, HubAddress};

/// Registration token operations.
#[derive(Subcommand, Debug)]
pub(super) enum TokenCommand {
    /// Create a token and print the kubeconfig an agent registers with.
    #[command(after_help = "Example:
  fleet token create --kubeconfig ./hub-data/local.kubeconfig --ttl 1h > token.kubeconfig
  fleet token create --ttl 12h --api-server-url https://fleet.example.com:6443 \\
    --api-server-ca ca.pem > token.kubeconfig
  fleet agent --register token.kubeconfig --cluster-name dev --label env=dev \\
    --kubeconfig ./hub-data/dev.kubeconfig")]
    Create(TokenArgs),
}

/// Where a registration token is made, and for whom (`fleet token create`, `fleet install
/// agent-token`).
#[derive(Args, Debug)]
pub(super) struct TokenArgs {
    /// Kubeconfig of the hub.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: PathBuf,
    /// Namespace the clusters registered with it go to.
    #[arg(short, long, default_value = "fleet-default")]
    namespace: String,
    /// How long the token works (a Go duration: 30m, 12h...).
    #[arg(long)]
    ttl: Option<String>,
    /// The API server URL agents reach the hub at (default: the kubeconfig's, which is
    /// often a loopback address members cannot reach).
    #[arg(long)]
    api_server_url: Option<String>,
    /// PEM file of the CA agents trust for --api-server-url (default: the kubeconfig's).
    #[arg(long, requires = "api_server_url")]
    api_server_ca: Option<PathBuf>,
}

impl TokenArgs {
    /// Makes the token on the hub and returns the kubeconfig agents register with, once the
    /// controller has given it a credential.
    pub(super) fn issue(&self) -> Result<String> {
        let address = HubAddress::from_flags(
            self.api_server_url.as_deref(),
            self.api_server_ca.as_deref(),
            Some(&self.kubeconfig),
        )?
        .ok_or_else(|| anyhow::anyhow!("no API server address for agents"))?;
        let runtime = super::runtime()?;
        runtime.block_on(async {
            let client = super::kube_client(&self.kubeconfig).await?;
            anyhow::Ok(issue_token(&client, &address, &self.namespace, self.ttl.clone()).await?)
        })
    }
}

/// Runs a token command.
pub(super) fn run(command: TokenCommand) -> Result<()> {
    let TokenCommand::Create(args) = command;
    print!("{}", args.issue()?);
    Ok(())
}
