//! Loading fleet.yaml: typed, with unknown fields reported by file, line and field.

use std::path::Path;

use fleet_api::{strict, FleetYaml, HelmOptions, BUNDLE_STATES};
use serde_json::Value;

use crate::RepoRoot;
use crate::{RenderError, Result};
use fleet_files::yaml;

/// A parsed fleet.yaml and what is worth a warning in it.
#[derive(Debug, Clone, Default)]
pub struct LoadedFleetYaml {
    /// The typed contents.
    pub spec: FleetYaml,
    /// Unknown fields (errors when strict), and fields Fleet reads but ignores, each
    /// naming file, line and field.
    pub warnings: Vec<RenderError>,
}

/// Reads a fleet.yaml; with `strict`, an unknown field is an error.
pub fn load_fleet_yaml(root: &RepoRoot, path: &Path, strict_mode: bool) -> Result<LoadedFleetYaml> {
    let text = root.read_to_string(path)?;
    let dir = path.parent().unwrap_or(root.path());
    parse_fleet_yaml(root, dir, &root.display(path), &text, strict_mode)
}

/// Reads a fleet.yaml given as `text` (standard input, say), shown in messages as `shown`,
/// its values files found relative to `dir` in `root`; with `strict`, an unknown field
/// is an error.
pub fn parse_fleet_yaml(
    root: &RepoRoot,
    dir: &Path,
    shown: &str,
    text: &str,
    strict_mode: bool,
) -> Result<LoadedFleetYaml> {
    let raw = yaml::parse_value(text, shown)?;
    if !(raw.is_object() || raw.is_null()) {
        return Err(RenderError::in_file(shown, "fleet.yaml must be a mapping"));
    }
    let mut spec: FleetYaml = match raw {
        Value::Null => FleetYaml::default(),
        _ => yaml::parse_one(text, shown)?,
    };
    validate(&spec, text, shown)?;
    let mut ignored = Vec::new();
    if let Some(helm) = spec.options.helm.as_mut() {
        // Fleet reads the bundle's own values files only for a chart it names.
        if names_a_chart(helm) {
            merge_values_files(root, dir, shown, "helm", helm)?;
        } else if !helm.values_files.is_empty() {
            ignored.push(
                RenderError::in_field(
                    shown,
                    "helm.valuesFiles",
                    "not read: as in Fleet, a bundle's values files are read only when \
                     helm.chart or helm.repo names its chart (write `chart: .` for the \
                     chart in this directory)",
                )
                .with_line(line_of(text, "helm.valuesFiles")),
            );
        }
    }
    for (index, target) in spec.target_customizations.iter_mut().enumerate() {
        if let Some(helm) = target.options.helm.as_mut() {
            let field = format!("targetCustomizations[{index}].helm");
            merge_values_files(root, dir, shown, &field, helm)?;
        }
    }
    let unknown = strict::unknown_fields::<FleetYaml>(&raw)
        .into_iter()
        .map(|field| {
            let line = line_of(text, &field);
            RenderError::in_field(shown, &field, "unknown field").with_line(line)
        });
    let mut warnings = Vec::new();
    for problem in unknown {
        if strict_mode {
            return Err(problem);
        }
        warnings.push(problem);
    }
    warnings.extend(ignored);
    Ok(LoadedFleetYaml { spec, warnings })
}

/// Helm's refusal of an OCI chart reference whose tag is not the `version` asked for
/// (`oci://host/chart:1.2` with `version: 1.0`), checked before anything is fetched.
fn oci_tag_mismatch(helm: &HelmOptions) -> Option<String> {
    let version = helm.version.as_deref().filter(|v| !v.is_empty())?;
    let reference = [&helm.repo, &helm.chart]
        .into_iter()
        .flatten()
        .find_map(|r| r.strip_prefix("oci://"))?;
    let last = reference.rsplit('/').next()?;
    let tag = last.split_once(':')?.1;
    (tag != version)
        .then(|| format!("chart reference and version mismatch: {version} is not {tag}"))
}

/// Whether `helm` names the chart it deploys (`chart` or `repo`).
pub(super) fn names_a_chart(helm: &HelmOptions) -> bool {
    let set = |field: &Option<String>| field.as_deref().is_some_and(|v| !v.is_empty());
    set(&helm.chart) || set(&helm.repo)
}

/// The checks Fleet's bundle reader makes of a fleet.yaml before it builds the Bundle
/// (`internal/bundlereader/validate_fleetyaml.go`, `read.go`): each `dependsOn` entry names
/// a bundle or selects some, and accepts only states bundles have; `imageScans` are refused
/// as Fleet refuses them with image scanning disabled.
fn validate(spec: &FleetYaml, text: &str, shown: &str) -> Result<()> {
    for (index, dependency) in spec.depends_on.iter().enumerate() {
        let field = format!("dependsOn[{index}]");
        let named = dependency.name.as_deref().is_some_and(|n| !n.is_empty());
        if !named && dependency.selector.is_none() {
            return Err(RenderError::in_field(
                shown,
                &field,
                format!("{field}: must specify either 'name' or 'selector'"),
            )
            .with_line(line_of(text, &field)));
        }
        for (position, state) in dependency.accepted_states.iter().enumerate() {
            if !BUNDLE_STATES.contains(&state.as_str()) {
                let field = format!("{field}.acceptedStates[{position}]");
                return Err(RenderError::in_field(
                    shown,
                    &field,
                    format!(
                        "{field}: invalid state {state:?}, valid values are: [{}]",
                        BUNDLE_STATES.join(" ")
                    ),
                )
                .with_line(line_of(text, &field)));
            }
        }
    }
    let helms = std::iter::once(("helm".to_string(), &spec.options))
        .chain(
            spec.target_customizations
                .iter()
                .enumerate()
                .map(|(index, target)| {
                    (
                        format!("targetCustomizations[{index}].helm"),
                        &target.options,
                    )
                }),
        )
        .filter_map(|(field, options)| options.helm.as_deref().map(|helm| (field, helm)));
    for (field, helm) in helms {
        if let Some(problem) = oci_tag_mismatch(helm) {
            let field = format!("{field}.version");
            return Err(
                RenderError::in_field(shown, &field, problem).with_line(line_of(text, &field))
            );
        }
    }
    // fleet-rs has no image scanning yet: Fleet with it disabled refuses the field so.
    if !spec.image_scans.is_empty() {
        return Err(RenderError::in_field(
            shown,
            "imageScans",
            "imagescan is disabled; remove imagescans from your config files, or enable imagescan",
        )
        .with_line(line_of(text, "imageScans")));
    }
    Ok(())
}

/// Merges each of `helm.valuesFiles` (paths relative to the bundle directory `dir`) over
/// `helm.values`, later files winning, as Fleet reads them when it builds the Bundle: its
/// values are then the merged ones, which `${ }` templating and target customizations work
/// on in turn.
fn merge_values_files(
    root: &RepoRoot,
    dir: &Path,
    shown: &str,
    field: &str,
    helm: &mut HelmOptions,
) -> Result<()> {
    if helm.values_files.is_empty() {
        return Ok(());
    }
    let mut merged = Value::Object(helm.values.clone().unwrap_or_default());
    let fleet_yaml = dir.join("fleet.yaml");
    for file in &helm.values_files {
        let path = root
            .resolve(dir, file, &fleet_yaml)
            .map_err(|e| RenderError::in_field(shown, format!("{field}.valuesFiles"), e.message))?;
        let file_shown = root.display(&path);
        let text = root.read_to_string(&path)?;
        match yaml::parse_value(&text, &file_shown)? {
            Value::Null => {}
            values @ Value::Object(_) => super::options::deep_merge(&mut merged, &values),
            _ => {
                return Err(RenderError::in_file(
                    file_shown,
                    "a values file must hold a mapping",
                ))
            }
        }
    }
    if let Value::Object(values) = merged {
        if !values.is_empty() {
            helm.values = Some(values);
        }
    }
    Ok(())
}

/// The line of a dotted field path, found by following its keys down the text in order.
pub(super) fn line_of(text: &str, field: &str) -> Option<usize> {
    let keys: Vec<&str> = field
        .split('.')
        .map(|part| part.split('[').next().unwrap_or(part))
        .collect();
    let lines: Vec<&str> = text.lines().collect();
    let mut start = 0;
    let mut found = None;
    for key in keys {
        let position = lines[start..].iter().position(|line| {
            let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
            trimmed
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })?;
        found = Some(start + position + 1);
        start += position + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fleet's own cases for `dependsOn` (`internal/bundlereader/validate_fleetyaml_test.go`):
    /// the fleet.yaml, then the error it must give (`None`: it is valid).
    const DEPENDS_ON_CASES: &[(&str, Option<&str>)] = &[
        ("dependsOn:\n- name: my-dependency\n", None),
        ("dependsOn:\n- name: my-dependency\n  acceptedStates: [Ready]\n", None),
        ("dependsOn:\n- name: my-dependency\n  acceptedStates: [Ready, Modified]\n", None),
        (
            "dependsOn:\n- name: d\n  acceptedStates: [Ready, NotReady, WaitApplied, ErrApplied, OutOfSync, Pending, Modified]\n",
            None,
        ),
        (
            "dependsOn:\n- selector:\n    matchLabels: {app: database}\n  acceptedStates: [Ready, Modified]\n",
            None,
        ),
        (
            "dependsOn:\n- name: my-dependency\n  acceptedStates: [InvalidState]\n",
            Some("dependsOn[0].acceptedStates[0]: invalid state \"InvalidState\""),
        ),
        (
            "dependsOn:\n- name: my-dependency\n  acceptedStates: [ready]\n",
            Some("dependsOn[0].acceptedStates[0]: invalid state \"ready\""),
        ),
        (
            "dependsOn:\n- name: my-dependency\n  acceptedStates: [Ready, Foo, Modified]\n",
            Some("dependsOn[0].acceptedStates[1]: invalid state \"Foo\""),
        ),
        (
            "dependsOn:\n- name: my-dependency\n  acceptedStates: [\"\"]\n",
            Some("dependsOn[0].acceptedStates[0]: invalid state \"\""),
        ),
        (
            "dependsOn:\n- acceptedStates: [Ready]\n",
            Some("must specify either 'name' or 'selector'"),
        ),
        // `internal/bundlereader/read.go`: image scans with the feature disabled.
        (
            "imageScans:\n- image: nginx\n  tagName: t\n",
            Some("fleet.yaml:1: field `imageScans`: imagescan is disabled; remove imagescans from your config files, or enable imagescan"),
        ),
    ];

    #[test]
    fn depends_on_is_checked_as_fleet_checks_it() {
        for (text, expected) in DEPENDS_ON_CASES {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join("fleet.yaml"), text).expect("write");
            let root = RepoRoot::new(dir.path()).expect("root");
            let loaded = load_fleet_yaml(&root, &root.path().join("fleet.yaml"), true);
            match (loaded, expected) {
                (Ok(_), None) => {}
                (Err(error), Some(wanted)) => {
                    let message = error.to_string();
                    assert!(message.contains(wanted), "{text}: {message}");
                    assert!(message.starts_with("fleet.yaml:"), "{text}: {message}");
                }
                (Ok(_), Some(wanted)) => panic!("{text}: accepted, Fleet says {wanted}"),
                (Err(error), None) => panic!("{text}: refused: {error}"),
            }
        }
    }

    #[test]
    fn finds_the_line_of_nested_fields() {
        let text = "namespace: x\ntargetCustomizations:\n- name: a\n  helm:\n    valuez: 1\n";
        assert_eq!(
            line_of(text, "targetCustomizations[0].helm.valuez"),
            Some(5)
        );
        assert_eq!(line_of(text, "namespace"), Some(1));
        assert_eq!(line_of(text, "missing"), None);
    }
}
