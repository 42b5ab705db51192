//! gitjob: where bundles come from. The GitRepo controller (`controller`) polls Git
//! repositories through bare mirrors (`git`), turns each new commit into Bundle objects
//! (`bundles`), and syncs at once on a Git host's push webhook (`webhook`). Remote Helm
//! charts come through `fleet-charts`; remote Kustomize bases are fetched into each bundle
//! (`remote_bases`) before it renders.

pub mod bundles;
pub mod controller;
pub mod git;
pub mod helmops;
pub mod metrics;
pub mod remote_bases;
pub mod repo_url;
pub mod webhook;
