//! `fleet helm template`: render a chart as `helm template` does.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use super::output::{print_structured, Format};
use fleet_renderer::helm::{chart, engine, values};

/// Helm operations.
#[derive(Subcommand, Debug)]
pub enum HelmCommand {
    /// Render a chart's manifests, as `helm template` prints them.
    #[command(after_help = "Examples:
  fleet helm template ../shared/charts/podinfo
  fleet helm template web ../shared/charts/podinfo --values prod.yaml --set replicaCount=3 -n apps")]
    Template(TemplateArgs),
}

/// Arguments of `fleet helm template`.
#[derive(Args, Debug)]
pub struct TemplateArgs {
    /// `[NAME] CHART`: an optional release name, then the chart directory or .tgz.
    #[arg(required = true, num_args = 1..=2)]
    args: Vec<String>,
    /// A values file (repeatable; later files win).
    #[arg(long = "values", short = 'f')]
    values: Vec<PathBuf>,
    /// `key=value` values (repeatable; win over files).
    #[arg(long = "set")]
    set: Vec<String>,
    /// The release name (default `release-name`, as Helm's).
    #[arg(long)]
    release_name: Option<String>,
    /// The release namespace.
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    /// The Kubernetes version the templates see.
    #[arg(long, default_value = "v1.32.0")]
    kube_version: String,
    /// Extra API versions for `.Capabilities.APIVersions.Has` (repeatable).
    #[arg(long = "api-versions", short = 'a')]
    api_versions: Vec<String>,
    /// Print the chart's CRDs too.
    #[arg(long)]
    include_crds: bool,
    /// Do not check values against values.schema.json.
    #[arg(long)]
    skip_schema_validation: bool,
    /// Output format: the manifests as `helm template` prints them (text), or one JSON or
    /// YAML list of the objects.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// Runs a Helm command.
pub fn run(command: HelmCommand) -> Result<()> {
    match command {
        HelmCommand::Template(args) => template(args),
    }
}

fn template(args: TemplateArgs) -> Result<()> {
    let (name, chart_path) = match args.args.as_slice() {
        [chart] => (args.release_name.clone(), chart.clone()),
        [name, chart] => (Some(name.clone()), chart.clone()),
        _ => bail!("expected [NAME] CHART"),
    };
    let chart = chart::load(std::path::Path::new(&chart_path))?;
    let mut user = serde_json::json!({});
    for file in &args.values {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let parsed: serde_json::Value =
            fleet_renderer::yaml::parse_one(&text, &file.display().to_string())?;
        if !parsed.is_null() {
            values::merge_user(&mut user, &parsed);
        }
    }
    for set in &args.set {
        let parsed = values::parse_set(set).map_err(|e| anyhow::anyhow!("--set {set}: {e}"))?;
        values::merge_user(&mut user, &parsed);
    }
    let mut options = engine::Options {
        release_name: name.unwrap_or_else(|| "release-name".into()),
        namespace: args.namespace,
        kube_version: args.kube_version,
        include_crds: args.include_crds,
        skip_schema_validation: args.skip_schema_validation,
        ..engine::Options::default()
    };
    options.api_versions.extend(args.api_versions);
    let rendered = engine::render(&chart, &user, &options)?.to_template_output();
    if args.output != Format::Text {
        let objects = fleet_renderer::yaml::parse_documents(&rendered, &chart_path)?;
        print_structured(args.output, &objects)?;
        return Ok(());
    }
    print!("{rendered}");
    Ok(())
}
