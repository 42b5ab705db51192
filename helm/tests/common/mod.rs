//! Helpers shared by the engine's tests: where the inputs are, and `helm template` as
//! Helm's command prints it.
#![allow(dead_code)] // Each test crate uses its own part of these helpers.

use std::path::Path;

use fleet_helm::{Chart, Options, ValueOptions};

/// What `helm template` prints for `chart`: its standard output, or on failure its
/// standard error (`Error: ` and the message, and after a failed render the `--debug`
/// hint), as Helm 4 writes them.
pub(crate) fn helm_template(
    chart: &Path,
    values: &ValueOptions,
    options: &Options,
) -> Result<String, String> {
    let failed = |error: fleet_helm::Error, rendering: bool| {
        let hint = if rendering {
            "\nUse --debug flag to render out invalid YAML\n"
        } else {
            ""
        };
        format!("Error: {error}\n{hint}")
    };
    let chart = Chart::load(chart).map_err(|e| failed(e, false))?;
    let user = values.merge().map_err(|e| failed(e, false))?;
    let prepared = fleet_helm::prepare(&chart, &user, options).map_err(|e| failed(e, false))?;
    let logged: String = prepared
        .warnings()
        .iter()
        .map(|w| format!("{}\n", logged_warning(w)))
        .collect();
    let rendered = prepared
        .render()
        .map_err(|e| format!("{logged}{}", failed(e, true)))?;
    Ok(rendered.to_template_output(false))
}

/// A warning as Helm 4's logger writes it on standard error.
pub(crate) fn logged_warning(warning: &str) -> String {
    format!(
        "level=INFO msg={}",
        serde_json::to_string(warning).unwrap_or_default()
    )
}
