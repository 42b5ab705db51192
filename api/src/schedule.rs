//! The Schedule kind: windows, given by a cron expression and a duration, during which the
//! clusters it targets receive new deployments.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BundleTargetRestriction, Condition};

/// When the clusters a Schedule targets may receive new deployments.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Schedule",
    namespaced,
    status = "ScheduleStatus",
    printcolumn(name = "Schedule", type_ = "string", json_path = ".spec.schedule"),
    printcolumn(name = "Duration", type_ = "string", json_path = ".spec.duration"),
    printcolumn(name = "Active", type_ = "string", json_path = ".status.active"),
    printcolumn(
        name = "NextStart",
        type_ = "string",
        json_path = ".status.nextStartTime"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSpec {
    /// When each window opens: a cron expression with seconds (`sec min hour day-of-month
    /// month day-of-week [year]`, days of the week 1-7 from Sunday), as Fleet's.
    #[serde(default)]
    pub schedule: String,
    /// How long each window stays open (a Go duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::go_duration")]
    pub duration: Option<String>,
    /// The IANA time zone the expression is read in; none is UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The clusters it applies to.
    #[serde(default)]
    pub targets: ScheduleTargets,
}

/// What a Schedule applies to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ScheduleTargets {
    /// Clusters of the Schedule's namespace: those any entry selects, an entry selecting
    /// the clusters every criterion it gives matches (one with none selects nothing); its
    /// `name` only names it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<BundleTargetRestriction>,
}

/// Observed state of a Schedule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    /// A window is open now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub active: bool,
    /// When the next window opens (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_start_time: Option<String>,
    /// `Ready`, false with the reason when the expression, duration or zone is wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The names of the clusters it applies to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matching_clusters: Vec<String>,
}
