//! What a process used (resident memory and CPU time, from /proc) and how fast the machine
//! was meanwhile.

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Resident memory of a process (`self` or a pid), in KiB, from /proc.
pub(crate) fn rss_kib(pid: &str) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// The most resident memory a process (`self` or a pid) has had, in KiB, from /proc.
pub(crate) fn peak_rss_kib(pid: &str) -> u64 {
    status_kib(pid, "VmHWM:")
}

/// How many file descriptors a process (`self` or a pid) holds, from /proc.
pub(crate) fn open_fds(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
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
pub(crate) fn cpu_of(pid: &str, children: bool) -> f64 {
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
pub(crate) fn cpu_seconds(pid: &str) -> f64 {
    cpu_of(pid, false)
}

/// A BundleDeployment as the hub stores it (2.9 KB, with its managedFields): the unit of
/// [`core_pace`]'s work.
const PACE_OBJECT: &str = r#"{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"creationTimestamp":"2026-12-06T01:56:00Z","finalizers":["fleet.cattle.io/bundle-deployment-finalizer"],"generation":1,"labels":{"fleet.cattle.io/bundle-name":"demo-hello-yaml","fleet.cattle.io/bundle-namespace":"fleet-default","fleet.cattle.io/cluster":"dev","fleet.cattle.io/cluster-namespace":"fleet-default","fleet.cattle.io/repo-name":"demo"},"managedFields":[{"apiVersion":"fleet.cattle.io/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:finalizers":{"v:\"fleet.cattle.io/bundle-deployment-finalizer\"":{}},"f:labels":{"f:fleet.cattle.io/bundle-name":{},"f:fleet.cattle.io/bundle-namespace":{},"f:fleet.cattle.io/cluster":{},"f:fleet.cattle.io/cluster-namespace":{},"f:fleet.cattle.io/repo-name":{}}},"f:spec":{"f:deploymentID":{},"f:options":{"f:defaultNamespace":{}},"f:stagedDeploymentID":{},"f:stagedOptions":{"f:defaultNamespace":{}}}},"manager":"fleet-controller","operation":"Apply","time":"2026-12-06T01:56:00Z"},{"apiVersion":"fleet.cattle.io/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:appliedDeploymentID":{},"f:conditions":{},"f:display":{"f:deployed":{},"f:monitored":{},"f:state":{}},"f:modifiedStatus":{},"f:nonModified":{},"f:nonReadyStatus":{},"f:ready":{},"f:release":{},"f:resources":{}}},"manager":"fleet-agent","operation":"Update","subresource":"status","time":"2026-12-06T01:56:00Z"}],"name":"demo-hello-yaml","namespace":"cluster-fleet-default-dev","resourceVersion":"156","uid":"a1204503-bf11-48d4-8b29-b2c328957b5c"},"spec":{"deploymentID":"s-8e1302bed8adf139bc7c816f9a4dec7552303977e93867dedceb626348b0976e:8205ed87b0a07b7f1b2371d48c4a3e6f7c8678227ce7149ae95010797682b10b","options":{"defaultNamespace":"demo-yaml"},"stagedDeploymentID":"s-8e1302bed8adf139bc7c816f9a4dec7552303977e93867dedceb626348b0976e:8205ed87b0a07b7f1b2371d48c4a3e6f7c8678227ce7149ae95010797682b10b","stagedOptions":{"defaultNamespace":"demo-yaml"}},"status":{"appliedDeploymentID":"s-8e1302bed8adf139bc7c816f9a4dec7552303977e93867dedceb626348b0976e:8205ed87b0a07b7f1b2371d48c4a3e6f7c8678227ce7149ae95010797682b10b","conditions":[{"lastUpdateTime":"2026-12-06T01:56:00.53887372Z","status":"True","type":"Deployed"},{"lastUpdateTime":"2026-12-06T01:56:00.53887372Z","status":"True","type":"Ready"},{"lastUpdateTime":"2026-12-06T01:56:00.53887372Z","status":"True","type":"Monitored"}],"display":{"deployed":"Yes","monitored":"Yes","state":"Ready"},"modifiedStatus":[],"nonModified":true,"nonReadyStatus":[],"ready":true,"release":"demo-yaml/demo-hello-yaml:1","resources":[{"apiVersion":"v1","kind":"ServiceAccount","name":"hello","namespace":"demo-yaml"},{"apiVersion":"v1","kind":"ConfigMap","name":"hello","namespace":"demo-yaml"}]}}"#;

/// Times [`PACE_OBJECT`] is parsed and written again in one timing of [`core_pace`].
pub(crate) const PACE_ROUNDS: u32 = 10_000;

/// Parses [`PACE_OBJECT`] into a JSON tree and writes it back, `rounds` times: the unit
/// of work every pace is timed on.
fn pace_work(rounds: u32) {
    for _ in 0..rounds {
        let tree = serde_json::from_str::<serde_json::Value>(std::hint::black_box(PACE_OBJECT));
        let text = tree.and_then(|tree| serde_json::to_vec(&tree));
        std::hint::black_box(text.ok());
    }
}

/// How fast one core of this machine is at the moment: the best of three timings of a
/// fixed piece of a fleet's work, a stored BundleDeployment parsed into a JSON tree and
/// written back, [`PACE_ROUNDS`] times. This machine's speed moves by up to 40% from hour
/// to hour, so a run's figures compare with another hour's only beside this one.
pub(crate) fn core_pace() -> Duration {
    let timing = || {
        let started = Instant::now();
        pace_work(PACE_ROUNDS);
        started.elapsed()
    };
    (0..3).map(|_| timing()).min().unwrap_or_default()
}

/// Rounds of [`pace_work`] in one sample of a [`PaceSampler`]: about 3 ms of one core.
const SAMPLE_ROUNDS: u32 = 200;

/// How often a [`PaceSampler`] takes a sample.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The CPU time the calling thread has used: the clock a sample is timed on while the
/// fleet runs, so that waiting for a core is not counted as a slow core.
fn thread_cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or_default(),
        u32::try_from(now.tv_nsec).unwrap_or_default(),
    )
}

/// Takes the machine's pace during a run, on a thread of its own: every second it times
/// [`SAMPLE_ROUNDS`] rounds of [`core_pace`]'s work in its own CPU time (about 0.3% of one
/// core), so a phase's CPU can be set against the machine's speed during that phase, not
/// only at the start. The thread stops when the sampler is dropped.
pub(crate) struct PaceSampler {
    samples: Arc<Mutex<Vec<(Instant, Duration)>>>,
    _stop: mpsc::Sender<()>,
}

impl PaceSampler {
    /// Starts the sampling thread.
    pub(crate) fn start() -> std::io::Result<Self> {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = mpsc::channel::<()>();
        let kept = samples.clone();
        std::thread::Builder::new()
            .name("pace-sampler".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(SAMPLE_EVERY)
                {
                    let began = thread_cpu_time();
                    pace_work(SAMPLE_ROUNDS);
                    let used = thread_cpu_time().saturating_sub(began);
                    let mut samples = kept.lock().unwrap_or_else(|p| p.into_inner());
                    samples.push((Instant::now(), used * (PACE_ROUNDS / SAMPLE_ROUNDS)));
                }
            })?;
        Ok(Self {
            samples,
            _stop: stop,
        })
    }

    /// The pace over the samples taken since `since`, scaled to [`PACE_ROUNDS`] rounds as
    /// [`core_pace`] is; `None` before the first sample.
    pub(crate) fn since(&self, since: Instant) -> Option<PaceSummary> {
        let samples = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        PaceSummary::of(&samples, since)
    }
}

impl PaceSummary {
    /// The summary of the `samples` (when each was taken, and its pace) taken since
    /// `since`; `None` when there are none.
    fn of(samples: &[(Instant, Duration)], since: Instant) -> Option<Self> {
        let mut taken: Vec<Duration> = samples
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, pace)| *pace)
            .collect();
        taken.sort_unstable();
        Some(Self {
            median: *taken.get(taken.len() / 2)?,
            lowest: *taken.first()?,
            highest: *taken.last()?,
            samples: taken.len(),
        })
    }
}

/// The machine's pace over a stretch of a run, from a [`PaceSampler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PaceSummary {
    /// The median sample.
    pub median: Duration,
    /// The fastest sample.
    pub lowest: Duration,
    /// The slowest sample.
    pub highest: Duration,
    /// How many samples were taken.
    pub samples: usize,
}

impl std::fmt::Display for PaceSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ms per {} rounds (median of {} samples of the thread's CPU time, {}-{} ms)",
            self.median.as_millis(),
            PACE_ROUNDS,
            self.samples,
            self.lowest.as_millis(),
            self.highest.as_millis()
        )
    }
}

/// The machine's CPU time so far, all cores, and the part of it the hypervisor gave to
/// other guests (steal), in clock ticks, from /proc/stat.
pub(crate) fn cpu_ticks_and_steal() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice: guest time is
    // already counted in user time.
    let total = ticks.iter().take(8).sum();
    Some((total, *ticks.get(7)?))
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

    #[test]
    fn a_summary_counts_only_the_samples_taken_since() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let ms = Duration::from_millis;
        let samples = [
            (at(1), ms(900)),
            (at(2), ms(150)),
            (at(3), ms(300)),
            (at(4), ms(200)),
        ];
        let pace = PaceSummary::of(&samples, at(2)).expect("three samples");
        assert_eq!(
            pace,
            PaceSummary {
                median: ms(200),
                lowest: ms(150),
                highest: ms(300),
                samples: 3
            }
        );
        assert_eq!(PaceSummary::of(&samples, at(5)), None);
    }

    #[test]
    fn a_sampler_samples_every_second() {
        let sampler = PaceSampler::start().expect("thread started");
        let began = Instant::now();
        std::thread::sleep(SAMPLE_EVERY * 3);
        let pace = sampler.since(began).expect("samples taken");
        assert!(pace.lowest > Duration::ZERO, "{pace}");
    }

    #[test]
    fn the_machine_reports_its_cpu_ticks() {
        let (total, steal) = cpu_ticks_and_steal().expect("/proc/stat read");
        assert!(total > 0 && steal <= total);
    }
}
