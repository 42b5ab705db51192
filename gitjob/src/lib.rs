//! gitjob: where bundles come from. The GitRepo controller (`controller`) polls Git
//! repositories through bare mirrors (`git`), turns each new commit into Bundle objects
//! (`bundles`), and syncs at once on a Git host's push webhook (`webhook`). Remote Helm
//! charts come through `fleet-charts`.

pub mod bundles;
pub mod controller;
pub mod git;
pub mod metrics;
pub mod repo_url;
pub mod webhook;
