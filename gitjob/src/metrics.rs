//! gitjob's counters, served as Prometheus text at `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Outcomes of webhook requests, one counter each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookResult {
    /// Matched GitRepos and triggered their sync.
    Synced,
    /// Valid, but no GitRepo follows that repository and branch (or a ping).
    Ignored,
    /// The signature or token did not verify.
    Unauthorized,
    /// A delivery id seen before.
    Replayed,
    /// Not a push payload we understand.
    BadRequest,
    /// Reading GitRepos or Secrets failed.
    Error,
}

impl WebhookResult {
    const ALL: [WebhookResult; 6] = [
        WebhookResult::Synced,
        WebhookResult::Ignored,
        WebhookResult::Unauthorized,
        WebhookResult::Replayed,
        WebhookResult::BadRequest,
        WebhookResult::Error,
    ];

    fn label(self) -> &'static str {
        match self {
            WebhookResult::Synced => "synced",
            WebhookResult::Ignored => "ignored",
            WebhookResult::Unauthorized => "unauthorized",
            WebhookResult::Replayed => "replayed",
            WebhookResult::BadRequest => "bad_request",
            WebhookResult::Error => "error",
        }
    }
}

/// Counters shared by the controller and the webhook receiver.
#[derive(Debug, Default)]
pub struct Metrics {
    polls: AtomicU64,
    poll_errors: AtomicU64,
    fetches: AtomicU64,
    syncs: AtomicU64,
    sync_errors: AtomicU64,
    render_micros: AtomicU64,
    renders: AtomicU64,
    webhooks: [AtomicU64; 6],
}

impl Metrics {
    /// A ref advertisement was asked for (or served from the poll cache).
    pub fn poll(&self, ok: bool) {
        self.polls.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.poll_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A commit was fetched and extracted.
    pub fn fetch(&self) {
        self.fetches.fetch_add(1, Ordering::Relaxed);
    }

    /// A commit was turned into Bundles, taking `seconds` to render.
    pub fn sync(&self, ok: bool, seconds: f64) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.sync_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.renders.fetch_add(1, Ordering::Relaxed);
        self.render_micros
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }

    /// A webhook request ended with `result`.
    pub fn webhook(&self, result: WebhookResult) {
        let index = WebhookResult::ALL
            .iter()
            .position(|r| *r == result)
            .unwrap_or(0);
        self.webhooks[index].fetch_add(1, Ordering::Relaxed);
    }

    /// How many webhook requests ended with `result`.
    pub fn webhooks(&self, result: WebhookResult) -> u64 {
        WebhookResult::ALL
            .iter()
            .position(|r| *r == result)
            .map(|i| self.webhooks[i].load(Ordering::Relaxed))
            .unwrap_or(0)
    }

    /// Fetches so far.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        };
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        counter(
            &mut out,
            "fleet_gitjob_polls_total",
            "Ref advertisements asked for.",
            load(&self.polls),
        );
        counter(
            &mut out,
            "fleet_gitjob_poll_errors_total",
            "Polls that failed.",
            load(&self.poll_errors),
        );
        counter(
            &mut out,
            "fleet_gitjob_fetches_total",
            "Commits fetched and checked out.",
            load(&self.fetches),
        );
        counter(
            &mut out,
            "fleet_gitjob_syncs_total",
            "Commits turned into Bundles.",
            load(&self.syncs),
        );
        counter(
            &mut out,
            "fleet_gitjob_sync_errors_total",
            "Syncs with a broken bundle or a failed write.",
            load(&self.sync_errors),
        );
        let _ = writeln!(
            out,
            "# HELP fleet_gitjob_render_seconds Time spent rendering commits into Bundles.\n# TYPE fleet_gitjob_render_seconds summary\nfleet_gitjob_render_seconds_sum {:.6}\nfleet_gitjob_render_seconds_count {}",
            load(&self.render_micros) as f64 / 1e6,
            load(&self.renders)
        );
        let _ = writeln!(
            out,
            "# HELP fleet_gitjob_webhook_requests_total Webhook requests by result.\n# TYPE fleet_gitjob_webhook_requests_total counter"
        );
        for (result, value) in WebhookResult::ALL.iter().zip(&self.webhooks) {
            let _ = writeln!(
                out,
                "fleet_gitjob_webhook_requests_total{{result=\"{}\"}} {}",
                result.label(),
                load(value)
            );
        }
        out
    }
}
