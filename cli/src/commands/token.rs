//! `fleet token create`: a ClusterRegistrationToken and the kubeconfig an agent joins with.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand};
use fleet_api::ClusterRegistrationToken;
use fleet_controller::registration::HubAddress;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, ResourceExt};

/// Registration token operations.
#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a token and print the kubeconfig an agent registers with.
    #[command(after_help = "Example:
  fleet token create --kubeconfig ./hub-data/local.kubeconfig --ttl 1h > token.kubeconfig
  fleet agent --register token.kubeconfig --cluster-name dev --label env=dev \\
    --kubeconfig ./hub-data/dev.kubeconfig --data ./agent-dev")]
    Create(CreateArgs),
}

/// Arguments of `fleet token create`.
#[derive(Args, Debug)]
pub struct CreateArgs {
    /// Kubeconfig of the hub.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: PathBuf,
    /// Namespace the clusters registered with it go to.
    #[arg(short, long, default_value = "fleet-default")]
    namespace: String,
    /// How long the token works (a Go duration: 30m, 12h...).
    #[arg(long)]
    ttl: Option<String>,
}

/// The hub's address as a kubeconfig names it (its current context's cluster).
pub fn hub_address(kubeconfig: &Path) -> Result<HubAddress> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let wanted = file
        .contexts
        .iter()
        .find(|c| Some(&c.name) == file.current_context.as_ref())
        .and_then(|c| c.context.as_ref().map(|x| x.cluster.clone()));
    let cluster = file
        .clusters
        .iter()
        .find(|c| wanted.as_ref().is_none_or(|w| *w == c.name))
        .and_then(|c| c.cluster.clone())
        .context("the kubeconfig names no cluster")?;
    Ok(HubAddress {
        server: cluster
            .server
            .context("the kubeconfig's cluster has no server")?,
        ca_data: cluster.certificate_authority_data,
    })
}

/// Runs a token command.
pub fn run(command: TokenCommand) -> Result<()> {
    let TokenCommand::Create(args) = command;
    let address = hub_address(&args.kubeconfig)?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let text = runtime.block_on(async {
        let client = super::kube_client(&args.kubeconfig).await?;
        issue(&client, &address, &args.namespace, args.ttl.clone()).await
    })?;
    print!("{text}");
    Ok(())
}

/// Creates a ClusterRegistrationToken in `namespace`, waits for the controller to give it a
/// credential, and returns the kubeconfig agents register with.
pub async fn issue(
    client: &kube::Client,
    address: &HubAddress,
    namespace: &str,
    ttl: Option<String>,
) -> Result<String> {
    let tokens: Api<ClusterRegistrationToken> = Api::namespaced(client.clone(), namespace);
    let mut token = ClusterRegistrationToken::new("", Default::default());
    token.metadata.name = None;
    token.metadata.generate_name = Some("token-".into());
    token.spec.ttl = ttl;
    let created = tokens.create(&PostParams::default(), &token).await?;
    let name = created.name_any();
    let started = Instant::now();
    let secret_name = loop {
        let current = tokens.get(&name).await?;
        if let Some(secret) = current.status.and_then(|s| s.secret_name) {
            break secret;
        }
        if started.elapsed() > Duration::from_secs(30) {
            bail!("token {name} got no credential in 30 s: is `fleet controller` running?");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get(&secret_name)
        .await?;
    let value = secret
        .data
        .and_then(|d| d.get("token").cloned())
        .context("the token secret holds no token")?;
    let value = String::from_utf8(value.0)?;
    Ok(address.kubeconfig(&format!("import-{name}"), &value, namespace))
}
