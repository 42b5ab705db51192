//! `fleet helm template`: render a chart as `helm template` does, with its flags, its
//! output and its error messages.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, Subcommand};

use super::output::{print_structured, Format};
use super::Reported;
use fleet_helm::{Chart, Options};

/// Helm operations.
#[derive(Subcommand, Debug)]
pub(super) enum HelmCommand {
    /// Render a chart's manifests, as `helm template` prints them.
    #[command(after_help = "Examples:
  fleet helm template ../shared/charts/podinfo
  fleet helm template web ../shared/charts/podinfo --values prod.yaml --set replicaCount=3 -n apps
  fleet helm template web ./chart --show-only templates/deployment.yaml --skip-tests")]
    Template(TemplateArgs),
}

/// Arguments of `fleet helm template`.
#[derive(Args, Debug)]
pub(super) struct TemplateArgs {
    /// `[NAME] CHART`: an optional release name, then the chart directory or .tgz.
    #[arg(required = true, num_args = 1..=2)]
    args: Vec<String>,
    /// Values files (repeatable, or comma-separated; later files win).
    #[arg(long = "values", short = 'f', value_delimiter = ',')]
    values: Vec<PathBuf>,
    /// `key=value` values, typed (repeatable; `a.b=c,d[0]=e`, `list={x,y}`).
    #[arg(long = "set")]
    set: Vec<String>,
    /// `key=value` values, always strings.
    #[arg(long = "set-string")]
    set_string: Vec<String>,
    /// `key=path`: the value is the file's contents.
    #[arg(long = "set-file")]
    set_file: Vec<String>,
    /// `key=JSON` values.
    #[arg(long = "set-json")]
    set_json: Vec<String>,
    /// `key=value` with the whole value one literal string.
    #[arg(long = "set-literal")]
    set_literal: Vec<String>,
    /// The release name (default `release-name`, as Helm's).
    #[arg(long)]
    release_name: Option<String>,
    /// The release namespace.
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    /// The Kubernetes version the templates see (`.Capabilities.KubeVersion`).
    #[arg(long, default_value = "v1.37.0")]
    kube_version: String,
    /// Extra API versions for `.Capabilities.APIVersions.Has` (repeatable or comma-separated).
    #[arg(long = "api-versions", short = 'a', value_delimiter = ',')]
    api_versions: Vec<String>,
    /// Print the chart's CRDs too.
    #[arg(long)]
    include_crds: bool,
    /// Leave out test hooks.
    #[arg(long)]
    skip_tests: bool,
    /// Print only the manifests of these templates (paths in the chart, globs allowed).
    #[arg(long = "show-only", short = 's')]
    show_only: Vec<String>,
    /// Do not check values against values.schema.json.
    #[arg(long)]
    skip_schema_validation: bool,
    /// Output format: the manifests as `helm template` prints them (text), or one JSON or
    /// YAML list of the objects.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// Runs a Helm command.
pub(super) fn run(command: HelmCommand) -> Result<()> {
    match command {
        HelmCommand::Template(args) => template(args),
    }
}

/// Prints an error as Helm does (`Error: ...`, and for a failed render the `--debug`
/// hint) and ends the command with failure.
fn helm_error(message: impl std::fmt::Display, rendering: bool) -> anyhow::Error {
    eprintln!("Error: {message}");
    if rendering {
        eprintln!("\nUse --debug flag to render out invalid YAML");
    }
    Reported.into()
}

fn template(args: TemplateArgs) -> Result<()> {
    let (name, chart_path) = match args.args.as_slice() {
        [chart] => (args.release_name.clone(), chart.clone()),
        [name, chart] => (Some(name.clone()), chart.clone()),
        _ => bail!("expected [NAME] CHART"),
    };
    let chart = Chart::load(Path::new(&chart_path)).map_err(|e| helm_error(e, false))?;
    let user = value_options(&args)
        .merge()
        .map_err(|e| helm_error(e, false))?;
    let mut options = Options {
        release_name: name.unwrap_or_else(|| "release-name".into()),
        namespace: args.namespace.clone(),
        kube_version: args.kube_version.clone(),
        include_crds: args.include_crds,
        skip_schema_validation: args.skip_schema_validation,
        ..Options::default()
    };
    options
        .api_versions
        .extend(args.api_versions.iter().cloned());
    let prepared =
        fleet_helm::prepare(&chart, &user, &options).map_err(|e| helm_error(e, false))?;
    for warning in prepared.warnings() {
        // As Helm 4's logger writes them.
        let quoted = serde_json::to_string(warning).unwrap_or_default();
        eprintln!("level=INFO msg={quoted}");
    }
    let rendered = prepared
        .render()
        .map_err(|e| helm_error(e, true))?
        .to_template_output(args.skip_tests);
    let rendered = if args.show_only.is_empty() {
        rendered
    } else {
        show_only(&rendered, &args.show_only).map_err(|e| helm_error(e, false))?
    };
    if args.output != Format::Text {
        let objects = fleet_files::yaml::parse_documents(&rendered, &chart_path)?;
        print_structured(args.output, &objects)?;
        return Ok(());
    }
    print!("{rendered}");
    Ok(())
}

/// The user values of the flags, as Helm merges them.
fn value_options(args: &TemplateArgs) -> fleet_helm::ValueOptions {
    fleet_helm::ValueOptions {
        value_files: args.values.clone(),
        json_values: args.set_json.clone(),
        values: args.set.clone(),
        string_values: args.set_string.clone(),
        file_values: args.set_file.clone(),
        literal_values: args.set_literal.clone(),
    }
}

/// `--show-only`: the manifests whose `# Source:` path (without the chart name) matches
/// one of the patterns, in the order of the patterns.
fn show_only(rendered: &str, patterns: &[String]) -> Result<String, String> {
    let documents = fleet_helm::split_manifests(rendered);
    let mut out = String::new();
    for pattern in patterns {
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| e.to_string())?
            .compile_matcher();
        let mut found = false;
        for document in &documents {
            let Some(path) = document
                .lines()
                .find_map(|l| l.strip_prefix("# Source: "))
                .and_then(|source| source.split_once('/').map(|(_, p)| p))
            else {
                continue;
            };
            if matcher.is_match(path) {
                out.push_str(&format!("---\n{document}\n"));
                found = true;
            }
        }
        if !found {
            return Err(format!("could not find template {pattern} in chart"));
        }
    }
    Ok(out)
}
