//! gitjob: where bundles come from: Git repositories (`git`) and remote Helm charts
//! (`charts`). The GitRepo controller comes with its issue.

pub mod charts;
pub mod git;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
