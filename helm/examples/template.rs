//! `helm template [NAME] CHART [-f VALUES]...` in a dozen lines:
//! `cargo run -p fleet-helm --example template -- web ../shared/real/podinfo/charts/podinfo`.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let value_files = take_values_files(&mut args);
    let (release, chart) = match args.as_slice() {
        [chart] => ("release-name".to_string(), chart.clone()),
        [release, chart] => (release.clone(), chart.clone()),
        _ => return Err("usage: template [NAME] CHART [-f VALUES]...".into()),
    };
    let chart = fleet_helm::Chart::load(chart.as_ref())?;
    let values = fleet_helm::ValueOptions {
        value_files,
        ..Default::default()
    }
    .merge()?;
    let options = fleet_helm::Options {
        release_name: release,
        ..Default::default()
    };
    let rendered = fleet_helm::render(&chart, &values, &options)?;
    print!("{}", rendered.to_template_output(false));
    Ok(())
}

/// Removes each `-f FILE` from `args` and returns the files.
fn take_values_files(args: &mut Vec<String>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    while let Some(at) = args.iter().position(|a| a == "-f") {
        args.remove(at);
        if at < args.len() {
            files.push(PathBuf::from(args.remove(at)));
        }
    }
    files
}
