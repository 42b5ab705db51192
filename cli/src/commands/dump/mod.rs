//! `fleet dump`: the state of Fleet's objects, and the events and Secrets of the namespaces
//! that matter, in one `.tgz` archive to attach to a bug report, as Rancher Fleet's `fleet
//! dump` writes it: flat files `<resource>_<namespace>_<name>` of YAML, `contents_<name>`,
//! and `events_<namespace>` of JSON lines; limited to one namespace (the default
//! `fleet-local`) and optionally to one GitRepo, Bundle or HelmOp.

mod collect;

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::Args;

/// Arguments of `fleet dump`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet dump --kubeconfig ./hub-data/local.kubeconfig -p fleet-dump.tgz -A
  fleet dump -p demo.tgz -n fleet-local --gitrepo demo --with-secrets-metadata
  tar tzf fleet-dump.tgz")]
pub(super) struct DumpArgs {
    /// Kubeconfig of the cluster holding Fleet's objects (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The archive to write.
    #[arg(
        short = 'p',
        long = "dump-path",
        visible_alias = "path",
        default_value = "fleet-dump.tgz"
    )]
    path: PathBuf,
    /// How many objects each list request asks for (0: all at once).
    #[arg(
        short = 'l',
        long,
        default_value_t = 500,
        allow_negative_numbers = true
    )]
    fetch_limit: i64,
    /// Every namespace, rather than --namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// The namespace whose objects are dumped.
    #[arg(short, long, env = "NAMESPACE")]
    namespace: Option<String>,
    /// Only this GitRepo and its Bundles (needs --namespace).
    #[arg(long)]
    gitrepo: Option<String>,
    /// Only this Bundle (needs --namespace).
    #[arg(long)]
    bundle: Option<String>,
    /// Only this HelmOp and its Bundles (needs --namespace).
    #[arg(long)]
    helmop: Option<String>,
    /// Include Secrets, with their data.
    #[arg(long)]
    with_secrets: bool,
    /// Include Secrets without their data.
    #[arg(long)]
    with_secrets_metadata: bool,
    /// Include Contents, with their data.
    #[arg(long)]
    with_content: bool,
    /// Include Contents without their data.
    #[arg(long)]
    with_content_metadata: bool,
}

/// The namespace Fleet's CLI works in unless told otherwise.
const DEFAULT_NAMESPACE: &str = "fleet-local";

/// What to dump, once the flags are checked.
#[derive(Debug, Default)]
pub(crate) struct Options {
    /// The namespace dumped; `None` for all.
    pub(crate) namespace: Option<String>,
    /// The one GitRepo, Bundle or HelmOp dumped.
    pub(crate) only: Option<Only>,
    pub(crate) secrets: Include,
    pub(crate) contents: Include,
    pub(crate) page: u32,
}

/// One object a dump is limited to.
#[derive(Debug)]
pub(crate) enum Only {
    GitRepo(String),
    Bundle(String),
    HelmOp(String),
}

impl Only {
    /// The object of `kind` (`GitRepo`, `Bundle`, `HelmOp`) this filter names, if it
    /// names one of that kind.
    pub(crate) fn name_of(&self, kind: &str) -> Option<&str> {
        match (self, kind) {
            (Only::GitRepo(name), "GitRepo")
            | (Only::Bundle(name), "Bundle")
            | (Only::HelmOp(name), "HelmOp") => Some(name),
            _ => None,
        }
    }
}

/// Whether objects holding data (Secrets, Contents) are dumped, and how.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) enum Include {
    #[default]
    No,
    MetadataOnly,
    Full,
}

impl Include {
    fn of(full: bool, metadata: bool) -> Self {
        match (full, metadata) {
            (true, _) => Include::Full,
            (false, true) => Include::MetadataOnly,
            _ => Include::No,
        }
    }
}

/// Writes the archive.
pub(super) fn run(args: DumpArgs) -> Result<()> {
    let options = options(&args)?;
    eprintln!("dump path:  {}", args.path.display());
    let entries = super::runtime()?.block_on(async {
        let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
        collect::entries(&client, &options).await
    })?;
    let file = std::fs::File::create(&args.path)
        .with_context(|| format!("creating {}", args.path.display()))?;
    let gzip = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut archive = tar::Builder::new(gzip);
    for (name, bytes) in &entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        archive
            .append_data(&mut header, name, bytes.as_slice())
            .with_context(|| format!("writing {name} into {}", args.path.display()))?;
    }
    archive.into_inner()?.finish()?;
    eprintln!(
        "{} entries written to {}",
        entries.len(),
        args.path.display()
    );
    Ok(())
}

/// The flags checked in Fleet's order, with its words, and turned into [`Options`].
fn options(args: &DumpArgs) -> Result<Options> {
    if args.with_secrets && args.with_secrets_metadata {
        bail!("--with-secrets and --with-secrets-metadata are mutually exclusive");
    }
    if args.with_content && args.with_content_metadata {
        bail!("--with-content and --with-content-metadata are mutually exclusive");
    }
    let only = match (&args.gitrepo, &args.bundle, &args.helmop) {
        (Some(_), Some(_), _) => bail!("--gitrepo and --bundle are mutually exclusive"),
        (Some(_), _, Some(_)) => bail!("--gitrepo and --helmop are mutually exclusive"),
        (_, Some(_), Some(_)) => bail!("--bundle and --helmop are mutually exclusive"),
        (Some(name), None, None) => Some(Only::GitRepo(name.clone())),
        (None, Some(name), None) => Some(Only::Bundle(name.clone())),
        (None, None, Some(name)) => Some(Only::HelmOp(name.clone())),
        (None, None, None) => None,
    };
    if only.is_some() && args.namespace.is_none() {
        bail!("--gitrepo, --bundle, and --helmop filters require --namespace to be explicitly specified");
    }
    let given = args
        .namespace
        .as_deref()
        .filter(|n| *n != DEFAULT_NAMESPACE);
    if args.all_namespaces && given.is_some() {
        bail!("--namespace and --all-namespaces are mutually exclusive");
    }
    if args.fetch_limit < 0 {
        bail!("fetch limit must be non-negative, got {}", args.fetch_limit);
    }
    let namespace = match args.all_namespaces {
        true => None,
        false => Some(
            args.namespace
                .clone()
                .unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
        ),
    };
    Ok(Options {
        namespace: namespace.filter(|n| !n.is_empty()),
        only,
        secrets: Include::of(args.with_secrets, args.with_secrets_metadata),
        contents: Include::of(args.with_content, args.with_content_metadata),
        page: u32::try_from(args.fetch_limit).unwrap_or(u32::MAX),
    })
}
