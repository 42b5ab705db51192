//! gitjob: where bundles come from. For now, remote Helm charts (`charts`); Git
//! repositories and the GitRepo controller come with their issue.

pub mod charts;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
