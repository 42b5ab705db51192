//! The controller's counters, and Fleet's state metrics while it runs (see
//! [`crate::state_metrics`]), served as Prometheus text at `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use crate::state_metrics::Sources;

/// The controllers `fleet controller` runs, one set of counters each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop {
    /// Bundles to BundleDeployments.
    Bundles,
    /// Cluster and ClusterGroup status.
    Clusters,
    /// Registration tokens.
    Tokens,
    /// Cluster registrations.
    Registrations,
}

impl Loop {
    const ALL: [Loop; 4] = [
        Loop::Bundles,
        Loop::Clusters,
        Loop::Tokens,
        Loop::Registrations,
    ];

    fn label(self) -> &'static str {
        match self {
            Loop::Bundles => "bundle",
            Loop::Clusters => "cluster",
            Loop::Tokens => "token",
            Loop::Registrations => "registration",
        }
    }
}

/// Reconciles done and failed, per controller, and where the state metrics are read.
#[derive(Default)]
pub struct Metrics {
    reconciles: [AtomicU64; 4],
    failures: [AtomicU64; 4],
    sources: RwLock<Option<Sources>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// One reconcile of `what` finished, well or not.
    pub fn reconciled(&self, what: Loop, ok: bool) {
        let counters = if ok { &self.reconciles } else { &self.failures };
        counters[what as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The controllers run: state metrics are read from `sources` until [`Metrics::forget`].
    pub fn observe(&self, sources: Sources) {
        *self.sources.write().unwrap_or_else(|e| e.into_inner()) = Some(sources);
    }

    /// The controllers stopped (a standby exports its counters only).
    pub fn forget(&self) {
        *self.sources.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The counters and state metrics in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, counters) in [
            (
                "fleet_controller_reconciles_total",
                "Reconciles that finished without error.",
                &self.reconciles,
            ),
            (
                "fleet_controller_reconcile_errors_total",
                "Reconciles that failed and will be retried.",
                &self.failures,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for what in Loop::ALL {
                let value = counters[what as usize].load(Ordering::Relaxed);
                let _ = writeln!(out, "{name}{{controller=\"{}\"}} {value}", what.label());
            }
        }
        if let Some(sources) = &*self.sources.read().unwrap_or_else(|e| e.into_inner()) {
            crate::state_metrics::render(sources, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{Loop, Metrics};

    #[test]
    fn counts_per_controller_in_prometheus_text() {
        let metrics = Metrics::default();
        metrics.reconciled(Loop::Bundles, true);
        metrics.reconciled(Loop::Bundles, true);
        metrics.reconciled(Loop::Registrations, false);
        let text = metrics.render();
        assert!(text.contains("fleet_controller_reconciles_total{controller=\"bundle\"} 2\n"));
        assert!(text
            .contains("fleet_controller_reconcile_errors_total{controller=\"registration\"} 1\n"));
        assert!(text.contains("# TYPE fleet_controller_reconciles_total counter\n"));
    }
}
