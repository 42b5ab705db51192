//! Charts that live outside the files being rendered (a chart repository, a URL, an OCI
//! registry), fetched beforehand: the engine itself never reaches the network.

use std::collections::HashMap;

use serde_json::Value;

use crate::chart::Chart;

/// A chart named by where it is published.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RemoteChartRef {
    /// The repository URL, empty when the chart is named by a full URL or `oci://` path.
    pub repo: String,
    /// The chart's name in the repository, or its URL.
    pub chart: String,
    /// The version or semver constraint, empty for the newest.
    pub version: String,
}

/// Remote charts fetched ahead of rendering, by reference.
#[derive(Debug, Clone, Default)]
pub struct FetchedCharts(HashMap<RemoteChartRef, Chart>);

impl FetchedCharts {
    /// Records the chart fetched for a reference.
    pub fn insert(&mut self, reference: RemoteChartRef, chart: Chart) {
        self.0.insert(reference, chart);
    }

    /// The chart fetched for a reference.
    pub fn get(&self, reference: &RemoteChartRef) -> Option<&Chart> {
        self.0.get(reference)
    }

    /// The charts as JSON, to travel with a render done elsewhere.
    pub fn to_json(&self) -> Value {
        let entries: Vec<(&RemoteChartRef, &Chart)> = self.0.iter().collect();
        serde_json::to_value(entries).unwrap_or_default()
    }

    /// The charts [`FetchedCharts::to_json`] wrote.
    pub fn from_json(json: &Value) -> Result<Self, serde_json::Error> {
        if json.is_null() {
            return Ok(Self::default());
        }
        let entries: Vec<(RemoteChartRef, Chart)> = serde_json::from_value(json.clone())?;
        Ok(Self(entries.into_iter().collect()))
    }
}
