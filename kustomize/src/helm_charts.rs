//! `helmCharts:` (kustomize's `--enable-helm`), rendered by the fleet-rs Helm engine as
//! kustomize renders them with `helm template`: the chart from `chartHome` (`charts/` by
//! default, `<name>-<version>/<name>` inside it when a repo and version are given), values
//! from `valuesFile` (the chart's own by default) combined with `valuesInline` as
//! `valuesMerge` says, then `additionalValuesFiles`.

use std::path::Path;

use serde_json::Value;

use super::location::Location;
use super::types::{HelmChart, HelmGlobals};
use fleet_files::yaml;
use fleet_files::{Error, Result};
use fleet_helm::Chart;
use fleet_helm::{FetchedCharts, RemoteChartRef};

/// Where charts are when `helmGlobals.chartHome` does not say.
const DEFAULT_CHART_HOME: &str = "charts";

/// The chart directory an entry names, relative to the kustomization.
fn chart_dir(entry: &HelmChart, globals: &HelmGlobals) -> String {
    let home = globals
        .chart_home
        .as_deref()
        .filter(|h| !h.is_empty())
        .unwrap_or(DEFAULT_CHART_HOME);
    match (entry.version.as_deref(), entry.repo.as_deref()) {
        (Some(version), Some(repo)) if !version.is_empty() && !repo.is_empty() => {
            format!("{home}/{}-{version}/{}", entry.name, entry.name)
        }
        _ => format!("{home}/{}", entry.name),
    }
}

/// The remote chart an entry needs fetched, when its chart is not in the repository.
pub(crate) fn remote_ref(
    entry: &HelmChart,
    globals: &HelmGlobals,
    dir: &Path,
) -> Option<RemoteChartRef> {
    let repo = entry.repo.clone().filter(|r| !r.is_empty())?;
    (!dir.join(chart_dir(entry, globals)).is_dir()).then(|| RemoteChartRef {
        repo,
        chart: entry.name.clone(),
        version: entry.version.clone().unwrap_or_default(),
    })
}

/// A Helm error loading or rendering the chart `name`, reported at the `helmCharts`
/// entry.
fn chart_error(
    location: &Location<'_>,
    field: &str,
    name: &str,
    error: fleet_helm::Error,
) -> Error {
    let message = format!("chart `{name}`: {}", error.message());
    location.error(field, message).with_cause(error)
}

/// Renders one entry into resources; `default_namespace` is the release namespace when
/// the entry names none.
pub(crate) fn inflate(
    entry: &HelmChart,
    globals: &HelmGlobals,
    location: &Location<'_>,
    fetched: &FetchedCharts,
    default_namespace: &str,
) -> Result<Vec<Value>> {
    let field = "helmCharts";
    if entry.name.is_empty() {
        return Err(location.error(field, "chart name cannot be empty"));
    }
    let relative = chart_dir(entry, globals);
    let loaded = if location.dir.join(&relative).is_dir() {
        // Helm, not kustomize's loader, reads the chart: the load restrictor does not
        // apply (checked against kubectl kustomize), the repository root does.
        let dir = location.any_path(&relative)?;
        Chart::load(&dir).map_err(|e| chart_error(location, field, &entry.name, e))?
    } else {
        let Some(reference) = remote_ref(entry, globals, location.dir) else {
            return Err(location.error(
                field,
                format!(
                    "no repo specified for pull, no chart found at '{}'",
                    location.root.display(&location.dir.join(&relative))
                ),
            ));
        };
        fetched.get(&reference).cloned().ok_or_else(|| {
            location.error(
                field,
                format!(
                    "chart `{}` {} from {} is not in the repository; `fleet kustomize build` does not download charts (in a bundle, gitjob fetches them before rendering)",
                    entry.name,
                    entry.version.as_deref().unwrap_or("(latest)"),
                    reference.repo
                ),
            )
        })?
    };
    let user = user_values(entry, location, &relative)?;
    let mut options = fleet_helm::Options {
        release_name: entry
            .release_name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "release-name".into()),
        namespace: entry
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| default_namespace.into()),
        include_crds: entry.include_crds,
        ..fleet_helm::Options::default()
    };
    if let Some(version) = entry.kube_version.as_deref().filter(|v| !v.is_empty()) {
        options.kube_version = if version.starts_with('v') {
            version.to_string()
        } else {
            format!("v{version}")
        };
    }
    options
        .api_versions
        .extend(entry.api_versions.iter().cloned());
    let mut rendered = fleet_helm::render(&loaded, &user, &options)
        .map_err(|e| chart_error(location, field, &entry.name, e))?;
    if entry.skip_hooks {
        rendered.hooks.clear();
    }
    let text = rendered.to_template_output(entry.skip_tests);
    yaml::parse_documents(&text, &format!("helm template {}", entry.name))
}

/// The values `helm template` gets: the values file (the chart's own by default) with
/// `valuesInline` over it (`override`, the default), under it (`merge`) or instead of it
/// (`replace`), then every additional values file.
fn user_values(entry: &HelmChart, location: &Location<'_>, chart: &str) -> Result<Value> {
    let parse = |text: String, shown: String| -> Result<Value> {
        Ok(yaml::parse_any_documents(&text, &shown)?
            .into_iter()
            .next()
            .unwrap_or(Value::Null))
    };
    let read_values = |path: &str| -> Result<Value> {
        let (text, shown) = location.read(path)?;
        parse(text, shown)
    };
    let values_file = match entry.values_file.as_deref().filter(|f| !f.is_empty()) {
        Some(file) => Some(read_values(file)?),
        // The chart's own values.yaml, which Helm reads: outside the load restrictor.
        None => {
            let own = location.any_path(&format!("{chart}/values.yaml"))?;
            if own.is_file() {
                let text = location.root.read_to_string(&own)?;
                Some(parse(text, location.root.display(&own))?)
            } else {
                None
            }
        }
    };
    let inline = entry.values_inline.clone().filter(|v| !v.is_null());
    let mut user = match (inline, entry.values_merge.as_deref().unwrap_or("override")) {
        (None, _) => values_file.unwrap_or(Value::Null),
        (Some(inline), "override" | "") => {
            let mut base = values_file.unwrap_or(Value::Null);
            fleet_helm::merge_values(&mut base, &inline);
            base
        }
        (Some(inline), "merge") => {
            let mut base = inline;
            if let Some(file) = values_file {
                fleet_helm::merge_values(&mut base, &file);
            }
            base
        }
        (Some(inline), "replace") => inline,
        (Some(_), other) => {
            return Err(location.error(
                "helmCharts.valuesMerge",
                format!("valuesMerge must be one of override, replace or merge, not `{other}`"),
            ))
        }
    };
    for file in &entry.additional_values_files {
        let more = read_values(file)?;
        fleet_helm::merge_values(&mut user, &more);
    }
    if user.is_null() {
        user = Value::Object(Default::default());
    }
    Ok(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_remote_charts_live_in_their_own_directory() {
        let entry = HelmChart {
            name: "mini".into(),
            repo: Some("https://charts.example.com".into()),
            version: Some("1.2.3".into()),
            ..HelmChart::default()
        };
        let globals = HelmGlobals {
            chart_home: Some("vendor".into()),
            ..HelmGlobals::default()
        };
        assert_eq!(chart_dir(&entry, &globals), "vendor/mini-1.2.3/mini");
        let local = HelmChart {
            name: "mini".into(),
            ..HelmChart::default()
        };
        assert_eq!(chart_dir(&local, &HelmGlobals::default()), "charts/mini");
    }
}
