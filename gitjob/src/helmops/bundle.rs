//! What a HelmOp asks for, checked, and the Bundle that deploys it: the HelmOp's own Bundle
//! fields with the chart's version resolved, no files (the chart is fetched), labelled and
//! owned so that it goes with its HelmOp.

use fleet_api::labels::HELMOP_LABEL;
use fleet_api::{Bundle, BundleHelmOptions, BundleTarget, HelmOp, HelmOptions};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};

/// Why the HelmOp's `helm` options cannot name a chart, in Fleet's words.
pub(super) fn refusal(helm: Option<&HelmOptions>) -> Option<String> {
    let Some(helm) = helm else {
        return Some("helm options are empty in the HelmOp's spec".into());
    };
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    let (chart, repo, version) = (text(&helm.chart), text(&helm.repo), text(&helm.version));
    let invalid = |why: &str| Some(format!("helm options invalid: {why}"));
    if chart.to_ascii_lowercase().ends_with(".tgz") {
        if !repo.is_empty() {
            return invalid("tarball chart with a non-empty repo field");
        }
        if !version.is_empty() {
            return invalid("tarball chart with a non-empty version field");
        }
        return None;
    }
    if repo.starts_with("oci://") {
        return (!chart.is_empty()).then(|| {
            "helm options invalid: OCI repository with a non-empty chart field".to_string()
        });
    }
    if chart.is_empty() {
        return invalid("non-OCI repository with an empty chart field");
    }
    if repo.is_empty() {
        return invalid("non-tarball chart with an empty repo field");
    }
    None
}

/// Whether `version` names one version exactly (`1.2.3`, `1.2.3-rc.1+build`), which no
/// poll can change, rather than a range.
pub(super) fn is_exact(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the chart is an archive's URL, which has no versions to follow.
pub(super) fn is_tarball(helm: &HelmOptions) -> bool {
    helm.chart
        .as_deref()
        .is_some_and(|c| c.to_ascii_lowercase().ends_with(".tgz"))
}

/// The chart as the chart cache names it: an `oci://` repository is the chart itself.
pub(super) fn remote_chart(helm: &HelmOptions) -> fleet_charts::RemoteChart {
    let repo = helm.repo.clone().unwrap_or_default();
    if repo.starts_with("oci://") {
        return fleet_charts::RemoteChart {
            repo: None,
            chart: repo,
            version: helm.version.clone(),
        };
    }
    fleet_charts::RemoteChart {
        repo: Some(repo).filter(|r| !r.is_empty()),
        chart: helm.chart.clone().unwrap_or_default(),
        version: helm.version.clone(),
    }
}

/// The Bundle deploying `helmop` at chart version `version`.
pub(super) fn bundle_for(helmop: &HelmOp, version: &str) -> Bundle {
    let mut spec = helmop.spec.bundle.clone();
    spec.resources.clear();
    if let Some(helm) = spec.options.helm.as_mut() {
        helm.version = Some(version.to_string()).filter(|v| !v.is_empty());
    }
    let top = spec.options.helm.clone();
    if spec.targets.is_empty() {
        spec.targets.push(BundleTarget {
            name: Some("default".into()),
            cluster_group: Some("default".into()),
            ..BundleTarget::default()
        });
    }
    for (index, target) in spec.targets.iter_mut().enumerate() {
        if target.name.as_deref().unwrap_or_default().is_empty() {
            target.name = Some(format!("target{index:03}"));
        }
        // A customization naming its own chart options takes the HelmOp's chart where
        // it leaves it out.
        if let (Some(own), Some(top)) = (target.options.helm.as_mut(), top.as_ref()) {
            for (field, from) in [
                (&mut own.repo, &top.repo),
                (&mut own.chart, &top.chart),
                (&mut own.version, &top.version),
            ] {
                if field.as_deref().unwrap_or_default().is_empty() {
                    field.clone_from(from);
                }
            }
        }
    }
    spec.helm_op_options = Some(BundleHelmOptions {
        secret_name: helmop.spec.helm_secret_name.clone(),
        insecure_skip_tls_verify: helmop.spec.insecure_skip_tls_verify,
        ca_bundle: None,
    });
    let mut bundle = Bundle::new(&helmop.name_any(), spec);
    bundle.metadata.namespace = helmop.namespace();
    let mut labels = helmop.spec.labels.clone();
    labels.insert(HELMOP_LABEL.into(), helmop.name_any());
    bundle.metadata.labels = Some(labels);
    bundle.metadata.owner_references = owner(helmop).map(|o| vec![o]);
    bundle
}

/// The HelmOp as the owner of its Bundle: the Bundle is deleted with it.
fn owner(helmop: &HelmOp) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: HelmOp::api_version(&()).into_owned(),
        kind: HelmOp::kind(&()).into_owned(),
        name: helmop.name_any(),
        uid: helmop.uid()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helm(chart: &str, repo: &str, version: &str) -> HelmOptions {
        let text = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
        HelmOptions {
            chart: text(chart),
            repo: text(repo),
            version: text(version),
            ..HelmOptions::default()
        }
    }

    /// Fleet's `TestReconcile_Validate` cases, with its messages.
    #[test]
    fn charts_are_refused_as_fleet_refuses_them() {
        let cases = [
            (
                "",
                "",
                "",
                Some("non-OCI repository with an empty chart field"),
            ),
            (
                "x.tgz",
                "https://r",
                "",
                Some("tarball chart with a non-empty repo field"),
            ),
            (
                "x.TGZ",
                "",
                "1.0.0",
                Some("tarball chart with a non-empty version field"),
            ),
            (
                "x",
                "oci://r/x",
                "",
                Some("OCI repository with a non-empty chart field"),
            ),
            (
                "x",
                "",
                "",
                Some("non-tarball chart with an empty repo field"),
            ),
            ("https://r/x.tgz", "", "", None),
            ("", "oci://r/x", "1.0.0", None),
            ("alpine", "https://r", "0.x.x", None),
        ];
        for (chart, repo, version, refused) in cases {
            let got = refusal(Some(&helm(chart, repo, version)));
            assert_eq!(
                got,
                refused.map(|why| format!("helm options invalid: {why}")),
                "{chart} {repo} {version}"
            );
        }
        assert_eq!(
            refusal(None).as_deref(),
            Some("helm options are empty in the HelmOp's spec")
        );
    }

    #[test]
    fn exact_versions_are_told_from_ranges() {
        for exact in ["0.1.0", "1.2.3-rc.1", "10.20.30+build"] {
            assert!(is_exact(exact), "{exact}");
        }
        for range in [
            "", "*", "0.x.x", "> 0.1", "^1.2.3", "v1.2.3", "1.2", "latest",
        ] {
            assert!(!is_exact(range), "{range}");
        }
    }
}
