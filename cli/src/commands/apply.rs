//! `fleet apply NAME [DIR...]`: the Bundle objects Rancher Fleet would create, written to
//! a file (`-o`) or applied to a cluster (and the bundles of NAME no longer found pruned),
//! as Fleet's `fleet apply` does.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use fleet_renderer::bundle;
use fleet_renderer::RepoRoot;

/// Arguments of `fleet apply`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  fleet apply -n fleet-local -o bundles.yaml my-repo multi-cluster/manifests\n  fleet apply --kubeconfig hub/local.kubeconfig my-repo multi-cluster/manifests\n  fleet apply --driven-scan -o - my-repo app:dev.yaml app:prod.yaml\n  fleet apply --targets-file targets.yaml -o - my-repo ."
)]
pub(super) struct ApplyArgs {
    /// Namespace of the Bundle objects.
    #[arg(short, long, env = "NAMESPACE", default_value = "fleet-local")]
    pub namespace: String,
    /// File to write the Bundles to (`-` for stdout); without it, they are applied to the
    /// cluster of `--kubeconfig`.
    #[arg(short, long)]
    pub output: Option<String>,
    /// Kubeconfig of the cluster to apply the Bundles to (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Name prefix of the bundles (the GitRepo name).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// Directories scanned for bundles (default: the current directory); with
    /// `--driven-scan`, bundle directories, each optionally followed by the separator and
    /// its options file (`base:options.yaml`).
    pub dirs: Vec<String>,
    /// Repository root the directories are relative to, which no path may leave (default:
    /// the working directory, widened to hold every directory named, as Fleet reads
    /// `../path` too).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Each argument is one bundle, not a directory to scan (Fleet's driven scan).
    #[arg(long)]
    pub driven_scan: bool,
    /// What separates a bundle directory from its options file under `--driven-scan`.
    #[arg(long = "driven-scan-sep", default_value = ":")]
    pub driven_scan_separator: String,
    /// The options file to read in each bundle directory instead of fleet.yaml (relative
    /// to the directory), as with `-b` in Fleet.
    #[arg(short = 'b', long)]
    pub bundle_file: Option<String>,
    /// A file of targets and target restrictions (a Bundle spec's `targets` and
    /// `targetRestrictions`, as a GitRepo's controller writes them) added to each Bundle
    /// whose fleet.yaml has no `overrideTargets`.
    #[arg(long)]
    pub targets_file: Option<PathBuf>,
    /// Bundle labels, `key=value` (several separated by commas; repeatable); fleet.yaml's
    /// labels win over them.
    #[arg(short, long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// The commit the bundles come from, as the `fleet.cattle.io/commit` label (default:
    /// the working directory's Git HEAD, if it is in a repository).
    #[arg(long, env = "COMMIT")]
    pub commit: Option<String>,
    /// Gzip and base64-encode every resource.
    #[arg(short, long)]
    pub compress: bool,
    /// The service account the bundles are deployed with.
    #[arg(short = 'a', long)]
    pub service_account: Option<String>,
    /// Force a redeploy of the bundles when it changes (`spec.forceSyncGeneration`).
    #[arg(long, default_value_t = 0)]
    pub sync_generation: i64,
    /// The namespace every object of the bundles is deployed into.
    #[arg(long)]
    pub target_namespace: Option<String>,
    /// Write the bundles paused.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub paused: bool,
    /// Keep the bundles' objects when a bundle is deleted.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub keep_resources: bool,
    /// Delete the bundles' namespace when a bundle is deleted.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub delete_namespace: bool,
    /// Correct drift of the bundles' objects.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub correct_drift: bool,
    /// Correct drift by deleting and recreating objects (with `--correct-drift`).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub correct_drift_force: bool,
    /// Keep failed Helm releases' history when correcting drift (with `--correct-drift`).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub correct_drift_keep_fail_history: bool,
    /// Read one Bundle from this file (`-` for standard input) instead of directories;
    /// NAME is then the only argument.
    #[arg(short = 'f', long)]
    pub file: Option<String>,
    #[command(flatten)]
    pub downloads: ChartDownloads,
    #[command(flatten)]
    pub accepted: AcceptedFlags,
}

/// How charts named by the bundles are downloaded, as Fleet's flags give it; fleet-rs's
/// `apply` fetches no chart (they are fetched when rendered), so these are checked and
/// otherwise unused, and never written into a Bundle.
#[derive(Args, Debug)]
pub(super) struct ChartDownloads {
    /// User name for Helm repositories.
    #[arg(long, env = "HELM_USERNAME")]
    pub username: Option<String>,
    /// File holding the password for Helm repositories.
    #[arg(long)]
    pub password_file: Option<PathBuf>,
    /// File of CA certificates for Helm repositories.
    #[arg(long)]
    pub cacerts_file: Option<PathBuf>,
    /// File holding an SSH private key for Git-hosted charts.
    #[arg(long)]
    pub ssh_privatekey_file: Option<PathBuf>,
    /// YAML file of credentials by bundle path (glob), over `--username`.
    #[arg(long)]
    pub helm_credentials_by_path_file: Option<PathBuf>,
    /// Only repositories whose URL matches this regular expression get the credentials.
    #[arg(long)]
    pub helm_repo_url_regex: Option<String>,
    /// Use plain HTTP for Helm repositories.
    #[arg(long)]
    pub helm_basic_http: bool,
    /// Skip TLS verification of Helm repositories.
    #[arg(long)]
    pub helm_insecure_skip_tls: bool,
}

impl ChartDownloads {
    /// Fleet's checks of these flags: the files they name must be readable, the
    /// credentials file YAML, and the regular expression valid.
    fn check(&self) -> Result<()> {
        let unreadable =
            |file: &PathBuf| format!("adding auth to opts: reading {}", file.display());
        for file in [
            &self.password_file,
            &self.cacerts_file,
            &self.ssh_privatekey_file,
        ]
        .into_iter()
        .flatten()
        {
            std::fs::read(file).with_context(|| unreadable(file))?;
        }
        if let Some(file) = &self.helm_credentials_by_path_file {
            let text = std::fs::read_to_string(file).with_context(|| unreadable(file))?;
            fleet_files::yaml::parse_value(&text, &file.display().to_string())
                .context("adding auth to opts")?;
        }
        if let Some(pattern) = &self.helm_repo_url_regex {
            regex::Regex::new(pattern)
                .with_context(|| format!("error parsing regexp: {pattern:?}"))?;
        }
        Ok(())
    }
}

/// Flags of Fleet's `fleet apply` that change nothing here, accepted so its command lines
/// run unchanged.
#[derive(Args, Debug)]
pub(super) struct AcceptedFlags {
    /// Enable debug logging (use `FLEET_LOG` for fleet-rs's logs).
    #[arg(long)]
    pub debug: bool,
    /// Debug log level.
    #[arg(long, default_value_t = 0)]
    pub debug_level: i64,
    /// Bundles written at once.
    #[arg(
        long,
        env = "FLEET_BUNDLE_CREATION_MAX_CONCURRENCY",
        default_value_t = 4
    )]
    pub bundle_creation_max_concurrency: i64,
    /// Accept `imageScans` (fleet-rs has no image scanning yet: they are still refused).
    #[arg(long)]
    pub imagescan_enabled: bool,
    /// Secret of the OCI registry bundles are stored in (not supported yet).
    #[arg(long)]
    pub oci_registry_secret: Option<String>,
}

/// The bundle directories `args` name: scanned, or declared one by one.
fn bundle_dirs(
    root: &RepoRoot,
    args: &ApplyArgs,
    paths: &[String],
) -> Result<Vec<bundle::BundleDir>> {
    // `-f`: the working directory is the one bundle, described by that file (read by the
    // caller when it is standard input).
    if let Some(file) = &args.file {
        let declared = fleet_api::BundlePath {
            base: ".".into(),
            options: Some(file.clone()).filter(|file| file != "-"),
        };
        return Ok(bundle::discover_driven(root, &[declared], "fleet apply")?);
    }
    if !args.driven_scan {
        let mut dirs = bundle::discover(root, paths)?;
        if let Some(file) = &args.bundle_file {
            for dir in &mut dirs {
                let options = dir.dir.join(file);
                if options.is_file() {
                    dir.left_out = vec![options.clone()];
                    dir.fleet_yaml = Some(options);
                    dir.options = Some(file.clone());
                }
            }
        }
        return Ok(dirs);
    }
    let mut declared = Vec::new();
    for arg in paths {
        let parts: Vec<&str> = arg.split(args.driven_scan_separator.as_str()).collect();
        let (base, options) = match parts.as_slice() {
            // Fleet's driven scan reads a bare base's own fleet.yaml, whatever `-b` says.
            [base] => (*base, None),
            [base, options] => (*base, Some(options.to_string())),
            _ => anyhow::bail!("invalid bundle path: {arg:?}"),
        };
        declared.push(fleet_api::BundlePath {
            base: base.to_string(),
            options,
        });
    }
    if declared.is_empty() {
        declared.push(fleet_api::BundlePath {
            base: ".".into(),
            options: args.bundle_file.clone(),
        });
    }
    Ok(bundle::discover_driven(root, &declared, "fleet apply")?)
}

/// Where the directories are read: the root, the directories relative to it, and, when
/// the root was widened past the working directory, the working directory's path in it
/// (bundles are then named after their paths from the working directory, as in Fleet).
struct Layout {
    root: RepoRoot,
    dirs: Vec<String>,
    working: Option<PathBuf>,
}

/// The layout of `args`: with `--root`, its directories as given; without, as Fleet reads
/// them: relative to the working directory (a leading `/` dropped), `../` allowed, and a
/// directory that does not exist skipped with a warning.
fn layout(args: &ApplyArgs) -> Result<Layout> {
    if let Some(root) = &args.root {
        return Ok(Layout {
            root: RepoRoot::new(root)?,
            dirs: args.dirs.clone(),
            working: None,
        });
    }
    let cwd = std::env::current_dir()?.canonicalize()?;
    let mut dirs = Vec::new();
    let mut top = cwd.clone();
    for arg in &args.dirs {
        let path = arg.trim_start_matches('/');
        let path = if path.is_empty() { "." } else { path };
        // A driven scan's argument may name its options file after the separator.
        let base = match args.driven_scan {
            true => path
                .split(args.driven_scan_separator.as_str())
                .next()
                .unwrap_or(path),
            false => path,
        };
        let lexical = fleet_files::lexical_join(&cwd, std::path::Path::new(base));
        if !path.contains(['*', '?', '[']) {
            if !args.driven_scan && !lexical.is_dir() {
                eprintln!("warning: {arg}: no such directory, skipped");
                continue;
            }
            while !lexical.starts_with(&top) {
                if !top.pop() {
                    break;
                }
            }
        }
        dirs.push(path.to_string());
    }
    if top == cwd {
        return Ok(Layout {
            root: RepoRoot::new(&cwd)?,
            dirs,
            working: None,
        });
    }
    let working = cwd.strip_prefix(&top).unwrap_or(&cwd).to_path_buf();
    let dirs = dirs
        .iter()
        .map(|dir| working.join(dir).to_string_lossy().into_owned())
        .collect();
    Ok(Layout {
        root: RepoRoot::new(&top)?,
        dirs,
        working: Some(working),
    })
}

/// `to` as a path from `from` (both relative to the same root): `../` for each of
/// `from`'s segments that `to` does not share.
fn path_from(from: &std::path::Path, to: &str) -> String {
    let to = std::path::Path::new(to);
    let mut up = from.to_path_buf();
    let mut climbs = 0;
    while !to.starts_with(&up) {
        up.pop();
        climbs += 1;
    }
    let rest = to.strip_prefix(&up).unwrap_or(to);
    let mut parts = vec![".."; climbs];
    let rest = rest.to_string_lossy();
    if !rest.is_empty() {
        parts.push(&rest);
    }
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// Runs `fleet apply`.
pub(super) fn run(args: ApplyArgs) -> Result<()> {
    let Layout {
        root,
        dirs,
        working,
    } = layout(&args)?;
    let name = match (&args.name, &args.file) {
        (None, _) => anyhow::bail!("at least one argument is required: BUNDLE_NAME"),
        (Some(_), Some(_)) if !args.dirs.is_empty() => {
            anyhow::bail!("the bundle name is required as the first argument")
        }
        (Some(name), _) => name.as_str(),
    };
    args.downloads.check()?;
    let repo_targets = match &args.targets_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let shown = path.display().to_string();
            Some(fleet_files::yaml::parse_one::<bundle::RepoTargets>(
                &text, &shown,
            )?)
        }
        None => None,
    };
    let settings = bundle::ApplySettings {
        labels: labels(&args)?,
        compress: args.compress,
        targets: repo_targets,
        service_account: args.service_account.clone(),
        sync_generation: args.sync_generation,
        target_namespace: args.target_namespace.clone(),
        paused: args.paused,
        keep_resources: args.keep_resources,
        delete_namespace: args.delete_namespace,
        correct_drift: args.correct_drift.then_some(fleet_api::CorrectDrift {
            enabled: true,
            force: Some(args.correct_drift_force),
            keep_fail_history: Some(args.correct_drift_keep_fail_history),
        }),
    };
    let from_stdin = match args.file.as_deref() {
        Some("-") => {
            Some(std::io::read_to_string(std::io::stdin()).context("reading standard input")?)
        }
        _ => None,
    };
    let mut bundles = Vec::new();
    for mut dir in bundle_dirs(&root, &args, &dirs)? {
        if let Some(working) = &working {
            dir.rel = path_from(working, &dir.rel);
        }
        let loaded = match (&from_stdin, &dir.fleet_yaml) {
            (Some(text), _) => Some(bundle::parse_fleet_yaml(
                &root, &dir.dir, "<stdin>", text, false,
            )?),
            (None, Some(path)) => Some(bundle::load_fleet_yaml(&root, path, false)?),
            (None, None) => None,
        };
        let fleet = match loaded {
            Some(loaded) => {
                for warning in &loaded.warnings {
                    eprintln!("warning: {warning}");
                }
                loaded.spec
            }
            None => Default::default(),
        };
        let object = bundle::bundle_object(&root, &dir, &fleet, name, &args.namespace, &settings)?;
        // As Fleet, a bundle with nothing to deploy is left out, with a word why.
        if bundle::has_nothing_to_deploy(&object, &fleet) {
            eprintln!("warning: {}: no resources found to deploy", dir.rel);
            continue;
        }
        bundles.push(object);
    }
    let Some(output) = &args.output else {
        // As Fleet, what no longer exists is pruned even when nothing is left.
        super::runtime()?.block_on(apply_live(&args, name, &mut bundles))?;
        return found_some(&args, &bundles);
    };
    found_some(&args, &bundles)?;
    let documents: Vec<serde_json::Value> = bundles
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let text = fleet_helm::yaml::to_kubectl_stream(&documents);
    if output == "-" {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        std::fs::write(output, text).with_context(|| format!("writing {output}"))?;
    }
    Ok(())
}

/// The labels of `-l` (each `key=value`, or `key` for an empty value; several separated by
/// commas), and the commit label: `--commit`, else the working directory's Git HEAD.
fn labels(args: &ApplyArgs) -> Result<std::collections::BTreeMap<String, String>> {
    let mut labels = std::collections::BTreeMap::new();
    for pair in args.labels.iter().flat_map(|l| l.split(',')) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key.is_empty() {
            anyhow::bail!("label {pair:?}: the key is empty");
        }
        labels.insert(key.to_string(), value.to_string());
    }
    let commit = args
        .commit
        .clone()
        .filter(|c| !c.is_empty())
        .or_else(head_commit);
    if let Some(commit) = commit {
        labels.insert(fleet_api::labels::COMMIT_LABEL.to_string(), commit);
    }
    Ok(labels)
}

/// The commit HEAD names in the Git repository holding the working directory, if any.
fn head_commit() -> Option<String> {
    let repository = gix::discover(".").ok()?;
    Some(repository.head_id().ok()?.to_string())
}

/// Fleet's error when no directory gave a bundle.
fn found_some(args: &ApplyArgs, bundles: &[fleet_api::Bundle]) -> Result<()> {
    if bundles.is_empty() {
        anyhow::bail!(
            "no resource found at the following paths to deploy: [{}]",
            args.dirs.join(" ")
        );
    }
    Ok(())
}

/// Applies `bundles` (server-side, as `fleet-apply`), each labelled with its name prefix
/// `repo` (`fleet.cattle.io/repo-name`), and deletes the Bundles of that label no longer
/// among them.
async fn apply_live(args: &ApplyArgs, repo: &str, bundles: &mut [fleet_api::Bundle]) -> Result<()> {
    use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
    let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
    let api: kube::Api<fleet_api::Bundle> = kube::Api::namespaced(client, &args.namespace);
    let apply = PatchParams::apply("fleet-apply").force();
    let mut names = Vec::new();
    for bundle in bundles.iter_mut() {
        kube::ResourceExt::labels_mut(bundle)
            .insert(fleet_api::labels::REPO_NAME_LABEL.into(), repo.to_string());
        let name = kube::ResourceExt::name_any(bundle);
        // As Fleet: a HelmOp's Bundle is its HelmOp's to write.
        let existing = api.get_opt(&name).await?;
        if existing.is_some_and(|b| b.spec.helm_op_options.is_some()) {
            anyhow::bail!("a helmOps bundle with name {name:?} already exists");
        }
        api.patch(&name, &apply, &Patch::Apply(bundle))
            .await
            .with_context(|| format!("applying bundle {}/{name}", args.namespace))?;
        println!("bundle {}/{name} applied", args.namespace);
        names.push(name);
    }
    let selector = format!("{}={repo}", fleet_api::labels::REPO_NAME_LABEL);
    for stale in api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
    {
        let name = kube::ResourceExt::name_any(&stale);
        if !names.contains(&name) {
            api.delete(&name, &DeleteParams::default())
                .await
                .with_context(|| format!("deleting bundle {}/{name}", args.namespace))?;
            println!("bundle {}/{name} deleted: no longer found", args.namespace);
        }
    }
    Ok(())
}
