//! Schedules: windows (a cron expression, a duration, a time zone) outside which the
//! clusters a Schedule targets receive nothing new. Every second the controller works out,
//! from the clock alone, whether each Schedule's window is open, writes that and the next
//! start in its status, and marks each Cluster `scheduled` (some Schedule targets it) and
//! `activeSchedule` (one of those is open). Deployments to a scheduled cluster outside every
//! window carry `offSchedule`, and its agent leaves them be until a window opens. Being
//! worked out from the clock, a window survives a restart, and a cluster under several
//! Schedules is open while any of them is.

mod cron;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fleet_api::{BundleTarget, Cluster, Schedule, ScheduleSpec, ScheduleStatus};
use fleet_objects::client::patch_params;
use fleet_objects::conditions::set_condition;
use futures::StreamExt;
use jiff::tz::TimeZone;
use jiff::Timestamp;
use kube::api::Patch;
use kube::runtime::reflector::Store;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::caches::Caches;
use crate::placement::cluster_info;
use crate::FIELD_MANAGER;

pub use cron::{Cron, CronError};

/// How often windows are looked at.
const TICK: Duration = Duration::from_secs(1);

/// Where a Schedule stands at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Window {
    active: bool,
    next_start: Option<Timestamp>,
}

/// Whether `spec`'s window is open at `now`, and when the next one opens; or why the
/// Schedule cannot be read (its expression, zone or duration, in Fleet's words where it
/// has them).
fn window(spec: &ScheduleSpec, now: Timestamp) -> Result<Window, String> {
    let cron = Cron::parse(&spec.schedule).map_err(|e| e.to_string())?;
    let zone = match spec.location.as_deref().filter(|l| !l.is_empty()) {
        Some(name) => TimeZone::get(name).map_err(|_| format!("unknown time zone {name}"))?,
        None => TimeZone::UTC,
    };
    let duration = spec
        .duration
        .as_deref()
        .map_or(
            Some(Duration::ZERO),
            fleet_objects::duration::parse_go_duration,
        )
        .ok_or_else(|| "duration is not a Go duration".to_string())?;
    let span = jiff::SignedDuration::try_from(duration).map_err(|e| e.to_string())?;
    let first = cron.next_after(now, &zone);
    if let Some(second) = first.and_then(|f| cron.next_after(f, &zone)) {
        if first.is_some_and(|f| span >= second.duration_since(f)) {
            return Err("duration is too long and overlaps with the next execution time".into());
        }
    }
    // The window that opened last: the first firing after `now - duration`, if it is
    // not later than now.
    let opened = now
        .checked_sub(span)
        .ok()
        .and_then(|since| cron.next_after(since, &zone))
        .filter(|opened| *opened <= now && !span.is_zero());
    Ok(Window {
        active: opened.is_some(),
        next_start: first,
    })
}

/// Runs the Schedules of the cluster `client` reaches against the clusters `clusters`
/// holds (and the groups of `caches`), until `shutdown` resolves.
pub(crate) async fn run(
    client: kube::Client,
    clusters: Store<Cluster>,
    caches: &Caches,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let (schedules, writer) = reflector::store::<Schedule>();
    let watch = reflector(
        writer,
        watcher(
            Api::<Schedule>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .default_backoff()
    .touched_objects()
    .for_each(|_| async {});
    let mut tick = tokio::time::interval(TICK);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut watch = std::pin::pin!(watch);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = &mut watch => return,
            _ = tick.tick() => {}
        }
        if let Err(error) = look(&client, &schedules.state(), &clusters.state(), caches).await {
            tracing::warn!(%error, "schedules: writing status failed; trying again");
        }
    }
}

/// One look: each Schedule's status, and each cluster's flags, written where they changed.
async fn look(
    client: &kube::Client,
    schedules: &[Arc<Schedule>],
    clusters: &[Arc<Cluster>],
    caches: &Caches,
) -> Result<(), kube::Error> {
    let now = Timestamp::now();
    // (scheduled, active) per cluster, by namespace/name.
    let mut flags: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for schedule in schedules {
        let namespace = schedule.namespace().unwrap_or_default();
        let old = schedule.status.clone().unwrap_or_default();
        let mut status = ScheduleStatus {
            conditions: old.conditions.clone(),
            ..ScheduleStatus::default()
        };
        match window(&schedule.spec, now) {
            Err(why) => {
                let now = now.to_string();
                set_condition(&mut status.conditions, "Ready", false, "Error", &why, &now);
            }
            Ok(window) => {
                status.conditions.retain(|c| c.type_ != "Ready");
                status.active = window.active;
                status.next_start_time = window
                    .next_start
                    .map(|t| t.round(jiff::Unit::Second).unwrap_or(t).to_string());
                let groups = caches.groups(&namespace);
                // The caches hold each namespace's clusters apart: no scan of all of them
                // per Schedule.
                for cluster in caches.clusters(&namespace) {
                    let info = cluster_info(&cluster, &groups);
                    if schedule
                        .spec
                        .targets
                        .clusters
                        .iter()
                        .any(|t| info.matches(&BundleTarget::from(t)))
                    {
                        status.matching_clusters.push(cluster.name_any());
                        let entry = flags
                            .entry(format!("{namespace}/{}", cluster.name_any()))
                            .or_default();
                        entry.0 = true;
                        entry.1 |= window.active;
                    }
                }
                status.matching_clusters.sort();
            }
        }
        if status != old {
            Api::<Schedule>::namespaced(client.clone(), &namespace)
                .patch_status(
                    &schedule.name_any(),
                    &patch_params(FIELD_MANAGER),
                    &Patch::Merge(&json!({ "status": {
                        "active": status.active,
                        "nextStartTime": status.next_start_time,
                        "matchingClusters": status.matching_clusters,
                        "conditions": status.conditions,
                    }})),
                )
                .await?;
        }
    }
    for cluster in clusters {
        let namespace = cluster.namespace().unwrap_or_default();
        let wanted = flags
            .get(&format!("{namespace}/{}", cluster.name_any()))
            .copied()
            .unwrap_or_default();
        let status = cluster.status.clone().unwrap_or_default();
        if (status.scheduled, status.active_schedule) != wanted {
            Api::<Cluster>::namespaced(client.clone(), &namespace)
                .patch_status(
                    &cluster.name_any(),
                    &patch_params(FIELD_MANAGER),
                    &Patch::Merge(&json!({ "status": {
                        "scheduled": wanted.0,
                        "activeSchedule": wanted.1,
                    }})),
                )
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(schedule: &str, duration: &str) -> ScheduleSpec {
        ScheduleSpec {
            schedule: schedule.into(),
            duration: Some(duration.into()),
            ..ScheduleSpec::default()
        }
    }

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    /// Windows worked out by hand: every minute on its first second, for 30 seconds.
    #[test]
    fn a_window_is_open_from_each_firing_for_its_duration() {
        let every_minute = spec("0 */1 * * * *", "30s");
        let open = window(&every_minute, at("2026-12-07T18:00:10Z")).expect("valid");
        assert_eq!(
            open,
            Window {
                active: true,
                next_start: Some(at("2026-12-07T18:01:00Z"))
            }
        );
        let shut = window(&every_minute, at("2026-12-07T18:00:45Z")).expect("valid");
        assert!(!shut.active);
        assert!(
            window(&every_minute, at("2026-12-07T18:00:00Z"))
                .expect("valid")
                .active
        );
        assert!(
            !window(&every_minute, at("2026-12-07T18:00:30Z"))
                .expect("valid")
                .active
        );
    }

    #[test]
    fn a_window_as_long_as_the_gap_or_a_bad_zone_is_refused() {
        assert_eq!(
            window(&spec("0 */1 * * * *", "1m"), at("2026-12-07T18:00:10Z")),
            Err("duration is too long and overlaps with the next execution time".into())
        );
        let mut elsewhere = spec("0 */1 * * * *", "30s");
        elsewhere.location = Some("Mars/Olympus".into());
        assert_eq!(
            window(&elsewhere, at("2026-12-07T18:00:10Z")),
            Err("unknown time zone Mars/Olympus".into())
        );
        assert_eq!(
            window(&spec("0 * * * *", "30s"), at("2026-12-07T18:00:10Z")),
            Err("parse cron expression: invalid expression length".into())
        );
    }
}
