//! What a process used: resident memory and CPU time, from /proc.

/// Resident memory of a process (`self` or a pid), in KiB, from /proc.
pub fn rss_kib(pid: &str) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// The most resident memory a process (`self` or a pid) has had, in KiB, from /proc.
pub fn peak_rss_kib(pid: &str) -> u64 {
    status_kib(pid, "VmHWM:")
}

/// A KiB figure of /proc/PID/status.
fn status_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time (user + system) of a process, from /proc; with `children`, that of its
/// children it waited for instead.
pub fn cpu_of(pid: &str, children: bool) -> f64 {
    let ticks_per_second = 100.0;
    let first = if children { 13 } else { 11 };
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after_name = stat.rsplit_once(") ")?.1;
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let user: f64 = fields.get(first)?.parse().ok()?;
            let system: f64 = fields.get(first + 1)?.parse().ok()?;
            Some((user + system) / ticks_per_second)
        })
        .unwrap_or(0.0)
}

/// CPU time (user + system) of a process, from /proc.
pub fn cpu_seconds(pid: &str) -> f64 {
    cpu_of(pid, false)
}

/// A BundleDeployment as the hub stores it (2.9 KB, with its managedFields): the unit of
/// [`core_pace`]'s work.
const PACE_OBJECT: &str = r#"{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"creationTimestamp":"2026-12-06T01:56:00Z","finalizers":["fleet.cattle.io/bundle-deployment-finalizer"],"generation":1,"labels":{"fleet.cattle.io/bundle-name":"demo-hello-yaml","fleet.cattle.io/bundle-namespace":"fleet-default","fleet.cattle.io/cluster":"dev","fleet.cattle.io/cluster-namespace":"fleet-default","fleet.cattle.io/repo-name":"demo"},"managedFields":[{"apiVersion":"fleet.cattle.io/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:finalizers":{"v:\"fleet.cattle.io/bundle-deployment-finalizer\"":{}},"f:labels":{"f:fleet.cattle.io/bundle-name":{},"f:fleet.cattle.io/bundle-namespace":{},"f:fleet.cattle.io/cluster":{},"f:fleet.cattle.io/cluster-namespace":{},"f:fleet.cattle.io/repo-name":{}}},"f:spec":{"f:deploymentID":{},"f:options":{"f:defaultNamespace":{}},"f:stagedDeploymentID":{},"f:stagedOptions":{"f:defaultNamespace":{}}}},"manager":"fleet-controller","operation":"Apply","time":"2026-12-06T01:56:00Z"},{"apiVersion":"fleet.cattle.io/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:appliedDeploymentID":{},"f:conditions":{},"f:display":{"f:deployed":{},"f:monitored":{},"f:state":{}},"f:modifiedStatus":{},"f:nonModified":{},"f:nonReadyStatus":{},"f:ready":{},"f:release":{},"f:resources":{}}},"manager":"fleet-agent","operation":"Update","subresource":"status","time":"2026-12-06T01:56:00Z"}],"name":"demo-hello-yaml","namespace":"cluster-fleet-default-dev","resourceVersion":"156","uid":"a1204503-bf11-48d4-8b29-b2c328957b5c"},"spec":{"deploymentID":"s-8e1302bed8adf139bc7c816f9a4dec7552303977e93867dedceb626348b0976e:8205ed87b0a07b7f1b2371d48c4a3e6f7c8678227ce7149ae95010797682b10b","options":{"defaultNamespace":"demo-yaml"},"stagedDeploymentID":"s-8e1302bed8adf139bc7c816f9a4dec7552303977e93867dedceb626348b0976e:8205ed87b0a07b7f1b2371d48c4a3e6f7c8678227ce7149ae95010797682b10b","stagedOptions":{"defaultNamespace":"demo-yaml"}},"status":{"appliedDeploymentID":"s-8e1302bed8adf139bc7c816f9a4dec7552303977e93867dedceb626348b0976e:8205ed87b0a07b7f1b2371d48c4a3e6f7c8678227ce7149ae95010797682b10b","conditions":[{"lastUpdateTime":"2026-12-06T01:56:00.53887372Z","status":"True","type":"Deployed"},{"lastUpdateTime":"2026-12-06T01:56:00.53887372Z","status":"True","type":"Ready"},{"lastUpdateTime":"2026-12-06T01:56:00.53887372Z","status":"True","type":"Monitored"}],"display":{"deployed":"Yes","monitored":"Yes","state":"Ready"},"modifiedStatus":[],"nonModified":true,"nonReadyStatus":[],"ready":true,"release":"demo-yaml/demo-hello-yaml:1","resources":[{"apiVersion":"v1","kind":"ServiceAccount","name":"hello","namespace":"demo-yaml"},{"apiVersion":"v1","kind":"ConfigMap","name":"hello","namespace":"demo-yaml"}]}}"#;

/// Times [`PACE_OBJECT`] is parsed and written again in one timing of [`core_pace`].
pub const PACE_ROUNDS: u32 = 10_000;

/// How fast one core of this machine is at the moment: the best of three timings of a
/// fixed piece of a fleet's work, a stored BundleDeployment parsed into a JSON tree and
/// written back, [`PACE_ROUNDS`] times. This machine's speed moves by up to 40% from hour
/// to hour, so a run's figures compare with another hour's only beside this one.
pub fn core_pace() -> std::time::Duration {
    let timing = || {
        let started = std::time::Instant::now();
        for _ in 0..PACE_ROUNDS {
            let tree = serde_json::from_str::<serde_json::Value>(std::hint::black_box(PACE_OBJECT));
            let text = tree.and_then(|tree| serde_json::to_vec(&tree));
            std::hint::black_box(text.ok());
        }
        started.elapsed()
    };
    (0..3).map(|_| timing()).min().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_object_is_a_bundle_deployment_that_survives_the_round_trip() {
        let tree: serde_json::Value = serde_json::from_str(PACE_OBJECT).expect("valid JSON");
        assert_eq!(tree["kind"], "BundleDeployment");
        let text = serde_json::to_string(&tree).expect("written");
        assert_eq!(text, PACE_OBJECT);
    }
}
