//! Rollout of a new bundle version across clusters, partition by partition: a partition's
//! clusters take the new version one at a time while fewer of them than its
//! `maxUnavailable` (and fewer of all clusters than the strategy's) are unavailable, and
//! the next partition starts only while no more than `maxUnavailablePartitions` of the
//! ones before it are over their limit. A cluster held
//! back keeps its current deployment, with the new one staged.

use fleet_api::{BundleTarget, Partition, RolloutStrategy};
use fleet_renderer::bundle::ClusterInfo;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// One targeted cluster as the rollout sees it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The cluster.
    pub cluster: ClusterInfo,
    /// The deployment it runs now, if any.
    pub current: Option<String>,
    /// The deployment it should run.
    pub wanted: String,
    /// Its current deployment is applied and ready.
    pub available: bool,
}

/// `count` of `total` as Kubernetes reads an int-or-percentage (percentages round down,
/// but never below 1 when the value is positive).
fn scaled(value: Option<&IntOrString>, total: usize, default: usize) -> usize {
    match value {
        None => default,
        Some(IntOrString::Int(n)) => (*n).max(0) as usize,
        Some(IntOrString::String(text)) => {
            let percent: f64 = text.trim_end_matches('%').trim().parse().unwrap_or(100.0);
            let count = (total as f64 * percent / 100.0).floor() as usize;
            if percent > 0.0 {
                count.max(1)
            } else {
                0
            }
        }
    }
}

fn selects(partition: &Partition, cluster: &ClusterInfo) -> bool {
    cluster.matches(&BundleTarget {
        cluster_name: partition.cluster_name.clone(),
        cluster_selector: partition.cluster_selector.clone(),
        cluster_group: partition.cluster_group.clone(),
        cluster_group_selector: partition.cluster_group_selector.clone(),
        ..BundleTarget::default()
    })
}

/// The partitions of `candidates` (indexes), each with its own `maxUnavailable` setting:
/// the explicit ones in order (a cluster goes to the first that selects it; the rest to a
/// last one), else blocks of `autoPartitionSize` (default 25%) once there are
/// `autoPartitionThreshold` clusters (default 200), else one partition of all.
fn partitions<'s>(
    strategy: &'s RolloutStrategy,
    candidates: &[Candidate],
) -> Vec<(Vec<usize>, Option<&'s IntOrString>)> {
    let fallback = strategy.max_unavailable.as_ref();
    if !strategy.partitions.is_empty() {
        let mut out: Vec<(Vec<usize>, Option<&IntOrString>)> = strategy
            .partitions
            .iter()
            .map(|p| (Vec::new(), p.max_unavailable.as_ref().or(fallback)))
            .collect();
        let mut rest = Vec::new();
        for (index, candidate) in candidates.iter().enumerate() {
            match strategy
                .partitions
                .iter()
                .position(|p| selects(p, &candidate.cluster))
            {
                Some(p) => out[p].0.push(index),
                None => rest.push(index),
            }
        }
        out.push((rest, fallback));
        out.retain(|(members, _)| !members.is_empty());
        return out;
    }
    let all: Vec<usize> = (0..candidates.len()).collect();
    let threshold = strategy
        .auto_partition_threshold
        .unwrap_or(AUTO_PARTITION_THRESHOLD)
        .max(0) as usize;
    let size = scaled(
        Some(
            strategy
                .auto_partition_size
                .as_ref()
                .unwrap_or(&IntOrString::String(AUTO_PARTITION_SIZE.into())),
        ),
        candidates.len(),
        candidates.len(),
    );
    if candidates.len() < threshold || size == 0 {
        return vec![(all, fallback)];
    }
    all.chunks(size)
        .map(|chunk| (chunk.to_vec(), fallback))
        .collect()
}

/// Clusters below which no automatic partitions are made, as in Fleet.
const AUTO_PARTITION_THRESHOLD: i32 = 200;
/// The size of automatic partitions, as in Fleet.
const AUTO_PARTITION_SIZE: &str = "25%";

/// Which candidates may take their wanted deployment now (in `candidates`' order).
pub fn allowed(strategy: Option<&RolloutStrategy>, candidates: &[Candidate]) -> Vec<bool> {
    let mut allowed: Vec<bool> = candidates
        .iter()
        .map(|c| c.current.as_deref() == Some(c.wanted.as_str()) || c.current.is_none())
        .collect();
    let Some(strategy) = strategy else {
        return vec![true; candidates.len()];
    };
    let parts = partitions(strategy, candidates);
    let total = candidates.len();
    let global_limit = scaled(strategy.max_unavailable.as_ref(), total, total).max(1);
    let mut global_unavailable = candidates.iter().filter(|c| !c.available).count();
    let max_bad_partitions = scaled(strategy.max_unavailable_partitions.as_ref(), parts.len(), 0);
    let mut bad_partitions = 0;
    for (members, max_unavailable) in parts {
        if bad_partitions > max_bad_partitions {
            break;
        }
        let limit = scaled(max_unavailable, members.len(), members.len()).max(1);
        let mut unavailable = members
            .iter()
            .filter(|&&i| !candidates[i].available)
            .count();
        for &index in &members {
            if allowed[index] {
                continue;
            }
            if unavailable < limit && global_unavailable < global_limit {
                allowed[index] = true;
                if candidates[index].available {
                    // Taking a new version makes it unavailable until the agent reports.
                    unavailable += 1;
                    global_unavailable += 1;
                }
            }
        }
        if unavailable > scaled(max_unavailable, members.len(), members.len()) {
            bad_partitions += 1;
        }
    }
    if let Some(max_new) = strategy.max_new {
        let mut new = 0;
        for (go, candidate) in allowed.iter_mut().zip(candidates) {
            if *go && candidate.current.is_none() {
                new += 1;
                *go = new <= max_new.max(0);
            }
        }
    }
    allowed
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::LabelSelector;

    fn candidate(name: &str, env: &str, available: bool, current: &str) -> Candidate {
        Candidate {
            cluster: ClusterInfo {
                name: name.into(),
                labels: [("env".to_string(), env.to_string())].into(),
                ..ClusterInfo::default()
            },
            current: Some(current.into()),
            wanted: "v2".into(),
            available,
        }
    }

    fn strategy(max_unavailable: i32) -> RolloutStrategy {
        RolloutStrategy {
            max_unavailable_partitions: Some(IntOrString::Int(0)),
            partitions: vec![
                Partition {
                    name: Some("canary".into()),
                    cluster_name: Some("dev".into()),
                    max_unavailable: Some(IntOrString::Int(max_unavailable)),
                    ..Partition::default()
                },
                Partition {
                    name: Some("prod".into()),
                    cluster_selector: Some(LabelSelector {
                        match_labels: [("env".to_string(), "prod".to_string())].into(),
                        ..LabelSelector::default()
                    }),
                    ..Partition::default()
                },
            ],
            ..RolloutStrategy::default()
        }
    }

    #[test]
    fn a_failing_partition_stops_the_rollout() {
        // v2 reached dev, which is not ready: prod waits.
        let stuck = [
            candidate("dev", "dev", false, "v2"),
            candidate("prod-a", "prod", true, "v1"),
            candidate("prod-b", "prod", true, "v1"),
        ];
        assert_eq!(allowed(Some(&strategy(0)), &stuck), [true, false, false]);
        // Once dev is ready, prod goes.
        let healthy = [
            candidate("dev", "dev", true, "v2"),
            candidate("prod-a", "prod", true, "v1"),
            candidate("prod-b", "prod", true, "v1"),
        ];
        assert_eq!(allowed(Some(&strategy(0)), &healthy), [true, true, true]);
    }

    #[test]
    fn the_first_partition_starts_one_cluster_at_a_time_under_its_limit() {
        let fresh = [
            candidate("dev", "dev", true, "v1"),
            candidate("prod-a", "prod", true, "v1"),
        ];
        // dev takes v2 (it is within its limit); the canary is then over its limit of 0.
        assert_eq!(allowed(Some(&strategy(0)), &fresh), [true, false]);
        assert_eq!(allowed(None, &fresh), [true, true]);
    }

    #[test]
    fn percentages_and_auto_partitions() {
        assert_eq!(scaled(Some(&IntOrString::String("25%".into())), 10, 0), 2);
        assert_eq!(scaled(Some(&IntOrString::String("10%".into())), 3, 0), 1);
        assert_eq!(scaled(Some(&IntOrString::Int(3)), 10, 0), 3);
        let auto = RolloutStrategy {
            auto_partition_size: Some(IntOrString::Int(2)),
            max_unavailable: Some(IntOrString::Int(1)),
            ..RolloutStrategy::default()
        };
        let four: Vec<Candidate> = (0..4)
            .map(|i| candidate(&format!("c{i}"), "prod", true, "v1"))
            .collect();
        // Fewer clusters than autoPartitionThreshold (200 unless set): one partition.
        assert_eq!(partitions(&auto, &four).len(), 1);
        let auto = RolloutStrategy {
            auto_partition_threshold: Some(4),
            ..auto
        };
        assert_eq!(partitions(&auto, &four).len(), 2);
        // One cluster of the first block goes; the block is then at its limit of one.
        assert_eq!(allowed(Some(&auto), &four), [true, false, false, false]);
    }

    /// Fleet's automatic partitions: none below 200 clusters, blocks of 25% from there,
    /// and an `autoPartitionSize` of 0 turns them off.
    #[test]
    fn automatic_partitions_as_fleet_makes_them() {
        let many = |n: usize| -> Vec<Candidate> {
            (0..n)
                .map(|i| candidate(&format!("c{i}"), "prod", true, "v1"))
                .collect()
        };
        let default = RolloutStrategy::default();
        let sizes = |strategy: &RolloutStrategy, n: usize| -> Vec<usize> {
            partitions(strategy, &many(n))
                .iter()
                .map(|(members, _)| members.len())
                .collect()
        };
        assert_eq!(sizes(&default, 199), [199]);
        assert_eq!(sizes(&default, 200), [50, 50, 50, 50]);
        assert_eq!(sizes(&default, 201), [50, 50, 50, 50, 1]);
        let off = RolloutStrategy {
            auto_partition_size: Some(IntOrString::Int(0)),
            ..RolloutStrategy::default()
        };
        assert_eq!(sizes(&off, 400), [400]);
    }

    #[test]
    fn max_new_limits_the_deployments_created_at_once() {
        let mut fresh: Vec<Candidate> = (0..5)
            .map(|i| candidate(&format!("c{i}"), "prod", i == 0, "v1"))
            .collect();
        for c in &mut fresh[1..] {
            c.current = None;
        }
        let strategy = RolloutStrategy {
            max_new: Some(2),
            ..RolloutStrategy::default()
        };
        // c0 exists (and updates); two of the four new ones are created now.
        assert_eq!(
            allowed(Some(&strategy), &fresh),
            [true, true, true, false, false]
        );
    }
}
