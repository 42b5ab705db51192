//! Watches: a stream of `{"type": ..., "object": ...}` lines, resumable from a
//! resourceVersion, with bookmarks and the initial-events-end marker.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::topics::Received;

use crate::call::Call;
use crate::columns::PrinterColumn;
use crate::event::{Event, EventType};
use crate::selector::Selectors;
use crate::status::{ApiError, ApiResult};
use crate::store::Store;
use crate::stored::Stored;
use crate::table::{self, Include};

/// How often a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(5);
/// The longest a watch stays open without a `timeoutSeconds` (as kube-apiserver's default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Table rendering for `kubectl get -w`.
pub(crate) struct TableFormat {
    /// Columns after Name.
    pub columns: Vec<PrinterColumn>,
    /// What each row carries.
    pub include: Include,
}

struct Watcher {
    call: Call,
    resource: String,
    selectors: Selectors,
    table: Option<TableFormat>,
    bookmarks: bool,
    sent_columns: bool,
    last_rv: u64,
}

impl Watcher {
    /// The event type this watcher sees, if any: an object that stops matching the
    /// selectors is DELETED for it, one that starts matching is ADDED.
    fn seen_as(&self, event: &Event) -> Option<&'static str> {
        let in_scope = event.rv > self.last_rv
            && (event.key).in_scope(
                &self.call.cluster,
                &self.resource,
                self.call.namespace_scope(),
            );
        if !in_scope {
            return None;
        }
        let now = self.selectors.selects(&event.object);
        let before = (event.previous.as_ref()).map_or(now, |p| self.selectors.selects(p));
        match (event.kind, before, now) {
            (EventType::Modified, true, false) => Some("DELETED"),
            (EventType::Modified, false, true) => Some("ADDED"),
            (_, _, true) => Some(event.kind.as_str()),
            _ => None,
        }
    }

    /// The line for a stored object: its text, copied, unless a Table or another version
    /// is asked for.
    fn stored_line(&mut self, kind: &str, object: &Arc<Stored>) -> Bytes {
        let presented = match &self.table {
            Some(_) => object.value().map(|value| self.line(kind, &value)),
            None => (self.call.presented(object.clone()))
                .map(|o| text_line(kind, &self.call.wire_parts(&o))),
        };
        presented.unwrap_or_else(|error| self.line("ERROR", &error.to_status()))
    }

    fn line(&mut self, kind: &str, object: &Value) -> Bytes {
        let object = match &self.table {
            Some(format) if kind != "BOOKMARK" && kind != "ERROR" => {
                let presented = self.call.present(object);
                let mut t = table::table(&[&presented], &format.columns, format.include, json!({}));
                if self.sent_columns {
                    t["columnDefinitions"] = json!([]);
                }
                self.sent_columns = true;
                t
            }
            _ if kind == "BOOKMARK" || kind == "ERROR" => object.clone(),
            _ => self.call.present(object),
        };
        encode(kind, &object)
    }

    fn bookmark(&mut self, rv: u64, initial_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = if self.call.metadata_only {
            crate::partial::object(metadata)
        } else {
            json!({"kind": self.call.resource.kind,
                   "apiVersion": self.call.resource.api_version(&self.call.version),
                   "metadata": metadata})
        };
        self.line("BOOKMARK", &object)
    }
}

/// A watch line holding JSON text, given in slices, as its object.
fn text_line(kind: &str, object: &[&[u8]]) -> Bytes {
    let length: usize = object.iter().map(|part| part.len()).sum();
    let mut line = Vec::with_capacity(length + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    for part in object {
        line.extend_from_slice(part);
    }
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

fn encode(kind: &str, object: &Value) -> Bytes {
    text_line(kind, &[&serde_json::to_vec(object).unwrap_or_default()])
}

/// Starts a watch; the returned receiver yields the response body's chunks.
pub(crate) fn start(
    store: Arc<Store>,
    call: Call,
    table: Option<TableFormat>,
) -> ApiResult<mpsc::Receiver<Bytes>> {
    let param = |name: &str| call.query.get(name).map(String::as_str);
    let mut watcher = Watcher {
        selectors: call.selectors()?,
        resource: call.resource.storage_key(),
        bookmarks: crate::call::flag(param("allowWatchBookmarks")),
        table,
        sent_columns: false,
        last_rv: 0,
        call: call.clone(),
    };
    let timeout = param("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    let initial_events = crate::call::flag(param("sendInitialEvents"));
    let from = param("resourceVersion")
        .filter(|rv| !rv.is_empty() && *rv != "0" && !initial_events)
        .map(|rv| {
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))
        })
        .transpose()?;
    let (sender, receiver) = mpsc::channel(256);
    let mut opening = Vec::new();
    let live = match from {
        Some(rv) => match store.subscribe_after(
            rv,
            &call.cluster,
            &watcher.resource,
            call.namespace_scope(),
        ) {
            Ok(subscription) => {
                watcher.last_rv = rv;
                for event in subscription.replay {
                    if let Some(kind) = watcher.seen_as(&event) {
                        opening.push(watcher.stored_line(kind, &event.object));
                    }
                    watcher.last_rv = watcher.last_rv.max(event.rv);
                }
                subscription.live
            }
            Err(oldest) => {
                let gone = ApiError::gone(rv, oldest).to_status();
                opening.push(watcher.line("ERROR", &gone));
                tokio::spawn(send_all(sender, opening));
                return Ok(receiver);
            }
        },
        None => {
            let snapshot = store.snapshot_and_subscribe(
                &call.cluster,
                &watcher.resource,
                call.namespace_scope(),
            )?;
            let (rv, objects, live) = (snapshot.rv, snapshot.objects, snapshot.live);
            for object in &objects {
                if watcher.selectors.selects(object) {
                    opening.push(watcher.stored_line("ADDED", object));
                }
            }
            watcher.last_rv = rv;
            if initial_events && watcher.bookmarks {
                opening.push(watcher.bookmark(rv, true));
            }
            live
        }
    };
    tokio::spawn(run(watcher, store, live, sender, opening, timeout));
    Ok(receiver)
}

async fn send_all(sender: mpsc::Sender<Bytes>, lines: Vec<Bytes>) -> bool {
    for line in lines {
        if sender.send(line).await.is_err() {
            return false;
        }
    }
    true
}

async fn run(
    mut watcher: Watcher,
    store: Arc<Store>,
    mut live: crate::topics::Live,
    sender: mpsc::Sender<Bytes>,
    opening: Vec<Bytes>,
    timeout: Duration,
) {
    if !send_all(sender.clone(), opening).await {
        return;
    }
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut bookmarks = tokio::time::interval(BOOKMARK_EVERY);
    bookmarks.tick().await;
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            _ = sender.closed() => return,
            _ = bookmarks.tick(), if watcher.bookmarks => {
                // Only this watch's changes reach it: with none waiting, it has seen every
                // change up to the last one handed out.
                let published = store.published_rv();
                if live.is_empty() {
                    watcher.last_rv = watcher.last_rv.max(published);
                }
                let rv = watcher.last_rv;
                let line = watcher.bookmark(rv, false);
                if sender.send(line).await.is_err() {
                    return;
                }
            }
            received = live.recv() => match received {
                Received::Event(event) => {
                    if let Some(kind) = watcher.seen_as(&event) {
                        let line = watcher.stored_line(kind, &event.object);
                        if sender.send(line).await.is_err() {
                            return;
                        }
                    }
                    watcher.last_rv = watcher.last_rv.max(event.rv);
                }
                Received::Lagged => {
                    let gone = ApiError::gone(watcher.last_rv, store.current_rv()).to_status();
                    let line = watcher.line("ERROR", &gone);
                    // The watch ends either way; the client re-lists.
                    let _ = sender.send(line).await;
                    return;
                }
                Received::Closed => return,
            },
        }
    }
}
