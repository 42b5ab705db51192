//! Who watches what. A committed change goes only to the watches of its logical cluster
//! and resource, in its namespace or in every namespace, so that it wakes the few watches
//! it concerns rather than every watch of the hub (10,000 agents each watching their own
//! namespace made every change cost 10,000 wake-ups). Each watch has its own bounded
//! queue; a watch that falls that far behind is told so, and its client lists again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use crate::event::Event;

/// The events a watch may have waiting before it is ended as too slow. A watch of every
/// BundleDeployment sees a burst of tens of thousands when a commit reaches a large fleet;
/// ending it then costs a list of them all. The queue holds events shared with the history,
/// and takes memory only as it fills.
const QUEUE: usize = 32_768;

/// One watch's end of its queue.
struct Subscriber {
    sender: mpsc::Sender<Arc<Event>>,
    lagged: Arc<AtomicBool>,
}

impl Subscriber {
    /// Queues `event`; false when the watch has gone or fell behind (it is then dropped).
    fn offer(&self, event: &Arc<Event>) -> bool {
        match self.sender.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.lagged.store(true, Ordering::Release);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// The watches of one resource of one cluster.
#[derive(Default)]
struct ResourceWatches {
    every_namespace: Vec<Subscriber>,
    by_namespace: HashMap<String, Vec<Subscriber>>,
}

/// Every watch, by cluster and resource.
#[derive(Default)]
pub(crate) struct Topics {
    watches: Mutex<HashMap<String, HashMap<String, ResourceWatches>>>,
}

/// What a watch's queue gave.
pub enum Received {
    /// A change.
    Event(Arc<Event>),
    /// The watch fell behind and was dropped: its client must list again.
    Lagged,
    /// The hub is going away.
    Closed,
}

/// A watch's live events.
pub struct Live {
    receiver: mpsc::Receiver<Arc<Event>>,
    lagged: Arc<AtomicBool>,
}

impl Live {
    /// The next event.
    pub async fn recv(&mut self) -> Received {
        match self.receiver.recv().await {
            Some(event) => Received::Event(event),
            None if self.lagged.load(Ordering::Acquire) => Received::Lagged,
            None => Received::Closed,
        }
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.receiver.is_empty()
    }
}

impl Topics {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, HashMap<String, ResourceWatches>>> {
        self.watches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A queue of the changes to `resource` of `cluster`, in `namespace` or (`None`) in
    /// every namespace.
    pub(crate) fn subscribe(&self, cluster: &str, resource: &str, namespace: Option<&str>) -> Live {
        let (sender, receiver) = mpsc::channel(QUEUE);
        let lagged = Arc::new(AtomicBool::new(false));
        let subscriber = Subscriber {
            sender,
            lagged: lagged.clone(),
        };
        let mut watches = self.lock();
        let of_resource = watches
            .entry(cluster.to_string())
            .or_default()
            .entry(resource.to_string())
            .or_default();
        let list = match namespace {
            Some(namespace) => of_resource
                .by_namespace
                .entry(namespace.to_string())
                .or_default(),
            None => &mut of_resource.every_namespace,
        };
        // Watches that ended since the last change here go now, not with the next change.
        list.retain(|s| !s.sender.is_closed());
        list.push(subscriber);
        Live { receiver, lagged }
    }

    /// Hands `event` to the watches it concerns, dropping those gone or behind.
    pub(crate) fn publish(&self, event: &Arc<Event>) {
        let mut watches = self.lock();
        let Some(of_cluster) = watches.get_mut(&event.key.cluster) else {
            return;
        };
        let Some(of_resource) = of_cluster.get_mut(&event.key.resource) else {
            return;
        };
        of_resource.every_namespace.retain(|s| s.offer(event));
        if let Some(in_namespace) = of_resource.by_namespace.get_mut(&event.key.namespace) {
            in_namespace.retain(|s| s.offer(event));
            if in_namespace.is_empty() {
                of_resource.by_namespace.remove(&event.key.namespace);
            }
        }
    }
}
