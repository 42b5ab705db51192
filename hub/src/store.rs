//! Object storage: every object in memory for reads, every acknowledged write in SQLite.
//!
//! Writes are serialised under one lock, which assigns the next resourceVersion and updates
//! the in-memory map, then queued to a single writer thread. The writer commits queued
//! writes in batches (group commit), one SQLite transaction each, in WAL mode with
//! `synchronous=FULL`, so a commit returns only after the WAL is fsynced. A batch that
//! goes to disk waits a quarter of a millisecond for more writes to share its fsync (at
//! 3,000 clusters x 10 bundles, half the fsyncs). Only then are the
//! writes acknowledged to their callers and published to watchers, so an acknowledged write
//! survives `kill -9`, and no watcher ever sees a write that a crash could take back.
//!
//! A failed commit poisons the store: every later request fails, and health checks say so,
//! until a probe write commits again; the state is then reloaded from disk, which is the
//! source of truth.
//!
//! Clusters opened as memory-only (the simulated members of a benchmark, whose real
//! counterparts keep their objects in their own API servers) go through the same queue, so
//! that their changes are ordered and published with every other, but are never written
//! to the database: they are gone when the hub stops (and the resourceVersions of their
//! last changes may then be given again).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::event::{Event, EventType, Key};
use crate::pair::Pair;
use crate::recent::Recent;
use crate::status::{ApiError, ApiResult};
use crate::stored::Stored;
use crate::subjects::{BindingKey, SubjectIndex};

/// How many events are kept for watches that resume from an older resourceVersion.
pub const HISTORY: usize = 20_000;
/// The most memory those events may hold (objects as stored, and the previous versions of
/// modified ones): a client writing large objects over and over must not grow the hub
/// without bound. Older events are forgotten first; a watch from before them gets 410.
const HISTORY_BYTES: usize = 256 << 20;
/// How many times a write decides without the store's lock before it decides under it
/// (see [`Store::write`]).
const OPTIMISTIC_TRIES: usize = 3;
/// The most writes committed in one transaction.
const BATCH: usize = 2_048;
/// How long a batch with a write to the database waits for more writes, to share its
/// fsync (a batch of memory-only writes never waits).
const GATHER: std::time::Duration = std::time::Duration::from_micros(250);

/// What a write decides to do with the object.
pub enum Change {
    /// Store this new state.
    Put(Value),
    /// Remove the object.
    Delete,
    /// Leave it as it is.
    Keep,
}

/// An object as a write left it: as stored, and parsed.
#[derive(Debug, Clone)]
pub struct Version {
    /// As stored.
    pub stored: Arc<Stored>,
    /// Parsed.
    pub value: Value,
}

/// A logical cluster record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRecord {
    /// Cluster name.
    pub name: String,
    /// The admin bearer token of the cluster.
    pub token: String,
}

/// Errors opening the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// The cause.
        source: rusqlite::Error,
    },
    /// A stored object is not valid JSON.
    #[error("database {path}: object {key} is corrupt: {source}")]
    Corrupt {
        /// The database file.
        path: String,
        /// The object.
        key: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// The database file could not be created or its mode set.
    #[error("database {path}: {source}")]
    Io {
        /// The database file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

type Objects = BTreeMap<(String, String), Arc<Stored>>;

struct Memory {
    rv: u64,
    objects: HashMap<(String, String), Objects>,
    clusters: BTreeMap<String, ClusterRecord>,
    /// The resourceVersion when the objects were loaded: what was derived from them before
    /// is stale, and the subject index's versions are no earlier (see
    /// [`Store::account_bindings_changed`]).
    loaded: u64,
    /// The RBAC bindings naming each subject.
    subjects: SubjectIndex,
}

/// The changes kept for watches that resume from a resourceVersion.
///
/// Which resumes it can answer is kept per scope: a burst of one resource (a commit
/// reaching 100,000 BundleDeployments, each agent's Secrets) pushes out events of every
/// resource, but a watch of one namespace's BundleDeployments only needs the events of its
/// own scope kept since it left, and those are rare.
struct History {
    /// The resourceVersion the history starts at (the store's when opened): what came
    /// before is not known.
    start: u64,
    /// The newest event forgotten, by cluster and resource.
    forgotten: HashMap<(String, String), Forgotten>,
    events: VecDeque<Arc<Event>>,
    /// The estimated size of each event in `events`, in the same order.
    sizes: VecDeque<usize>,
    /// Their sum.
    bytes: usize,
}

/// The resourceVersion of the newest event forgotten of one resource of one cluster, in
/// any namespace and in each.
#[derive(Default)]
struct Forgotten {
    any: u64,
    by_namespace: HashMap<String, u64>,
}

impl History {
    fn new(start: u64) -> Self {
        Self {
            start,
            forgotten: HashMap::new(),
            events: VecDeque::new(),
            sizes: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Keeps `event`, forgetting the oldest ones past [`HISTORY`] events or
    /// [`HISTORY_BYTES`].
    fn push(&mut self, event: Arc<Event>, size: usize) {
        while !self.events.is_empty()
            && (self.events.len() >= HISTORY || self.bytes + size > HISTORY_BYTES)
        {
            if let Some(dropped) = self.events.pop_front() {
                let key = &dropped.key;
                let forgotten = (self.forgotten)
                    .entry((key.cluster.clone(), key.resource.clone()))
                    .or_default();
                forgotten.any = dropped.rv;
                (forgotten.by_namespace).insert(key.namespace.clone(), dropped.rv);
            }
            self.bytes -= self.sizes.pop_front().unwrap_or(0);
        }
        self.events.push_back(event);
        self.sizes.push_back(size);
        self.bytes += size;
    }

    /// The oldest resourceVersion a watch of `resource` of `cluster` (in `namespace`, or
    /// every namespace) can resume from: every change of that scope after it is kept.
    fn floor(&self, cluster: &str, resource: &str, namespace: Option<&str>) -> u64 {
        let forgotten = (self.forgotten)
            .get(&(cluster.to_string(), resource.to_string()))
            .map_or(0, |f| match namespace {
                Some(namespace) => f.by_namespace.get(namespace).copied().unwrap_or(0),
                None => f.any,
            });
        self.start.max(forgotten)
    }
}

enum Op {
    Put(Key, u64, Arc<Stored>),
    Delete(Key),
    Cluster(ClusterRecord),
}

impl Op {
    /// The cluster the write is to.
    fn cluster(&self) -> &str {
        match self {
            Op::Put(key, ..) | Op::Delete(key) => &key.cluster,
            Op::Cluster(record) => &record.name,
        }
    }

    /// Whether the write goes to the database: its cluster is not kept in memory only.
    fn is_durable(&self, memory_only: &HashSet<String>) -> bool {
        !memory_only.contains(self.cluster())
    }
}

struct Pending {
    op: Op,
    rv: u64,
    event: Option<Arc<Event>>,
    ack: oneshot::Sender<bool>,
}

struct Shared {
    /// Every object, for reads; the database is the source of truth after a failure.
    memory: Mutex<Memory>,
    /// The clusters kept in memory only.
    memory_only: HashSet<String>,
    history: Mutex<History>,
    /// The trees of the versions written last, for the writes that follow them.
    recent: Mutex<Recent>,
    topics: crate::topics::Topics,
    /// The resourceVersion of the last change handed to the watches.
    published: AtomicU64,
    poisoned: AtomicBool,
}

/// The object store.
pub struct Store {
    queue: Mutex<mpsc::Sender<Pending>>,
    /// The writer thread, until [`Store::close`] waits for it.
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    shared: Arc<Shared>,
    file: DatabaseFile,
}

/// The database file and its write-ahead log as the hub opened them: either deleted or
/// replaced under a running hub, what the hub writes would be lost at its restart.
struct DatabaseFile {
    path: PathBuf,
    /// The database's and the log's paths, with their device and inode when opened.
    opened: Vec<(PathBuf, (u64, u64))>,
    /// When requests last looked (they look at most once a [`DatabaseFile::LOOK_EVERY`]).
    looked: Mutex<std::time::Instant>,
    /// Seen gone or replaced: for good, as the file the hub holds open is no longer it.
    gone: AtomicBool,
}

impl DatabaseFile {
    /// How often requests look at the file: a look is a system call, and requests are many.
    const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

    fn new(path: &Path) -> Self {
        let mut log = path.as_os_str().to_owned();
        log.push("-wal");
        let opened = [path.to_path_buf(), PathBuf::from(log)]
            .into_iter()
            .filter_map(|file| Some((file.clone(), file_identity(&file)?)))
            .collect();
        Self {
            path: path.to_path_buf(),
            opened,
            looked: Mutex::new(std::time::Instant::now()),
            gone: AtomicBool::new(false),
        }
    }

    /// Whether the file was deleted or replaced; `now` looks at once, else a look is made
    /// only when the last is older than [`DatabaseFile::LOOK_EVERY`].
    fn gone(&self, now: bool) -> bool {
        if self.gone.load(Ordering::Acquire) {
            return true;
        }
        let due = {
            let mut looked = lock(&self.looked);
            let due = now || looked.elapsed() >= Self::LOOK_EVERY;
            if due {
                *looked = std::time::Instant::now();
            }
            due
        };
        let gone =
            due && (self.opened.iter()).any(|(file, opened)| file_identity(file) != Some(*opened));
        if gone {
            self.gone.store(true, Ordering::Release);
        }
        gone
    }
}

/// The device and inode of `path`, if it exists.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The objects of a resource at one resourceVersion, and every change after it.
pub struct Snapshot {
    /// The resourceVersion of the snapshot.
    pub rv: u64,
    /// The objects.
    pub objects: Vec<Arc<Stored>>,
    /// Changes; those at or below `rv` must be skipped.
    pub live: crate::topics::Live,
}

/// A subscription to changes, with the events to replay first.
pub struct Subscription {
    /// Events to deliver before the live ones.
    pub replay: Vec<Arc<Event>>,
    /// Live events; those at or below `replay`'s last resourceVersion must be skipped.
    pub live: crate::topics::Live,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Store {
    /// Opens (or creates) the database at `path` and loads every object; the objects and
    /// records of the clusters in `memory_only` are kept in memory only.
    pub fn open(path: &Path, memory_only: HashSet<String>) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let sqlite = |source| StoreError::Sqlite {
            path: shown.clone(),
            source,
        };
        // Tokens are stored here: readable by the hub's user only (SQLite gives its WAL
        // and shared-memory files the database's mode).
        fleet_objects::secret_file::restrict(path).map_err(|source| StoreError::Io {
            path: shown.clone(),
            source,
        })?;
        let mut conn = Connection::open(path).map_err(sqlite)?;
        crate::storage_layout::prepare(&mut conn).map_err(sqlite)?;
        forget(&mut conn, &memory_only).map_err(sqlite)?;
        let memory = load(&conn, &shown)?;
        let published = AtomicU64::new(memory.rv);
        let shared = Arc::new(Shared {
            history: Mutex::new(History::new(memory.rv)),
            memory: Mutex::new(memory),
            recent: Mutex::default(),
            memory_only,
            topics: crate::topics::Topics::default(),
            published,
            poisoned: AtomicBool::new(false),
        });
        let (queue, receiver) = mpsc::channel();
        let writer_shared = shared.clone();
        let writer_path = shown.clone();
        let writer = std::thread::Builder::new()
            .name("hub-store-writer".into())
            .spawn(move || run_writer(conn, receiver, &writer_shared, &writer_path))
            .map_err(|e| sqlite(rusqlite::Error::ToSqlConversionFailure(Box::new(e))))?;
        Ok(Self {
            queue: Mutex::new(queue),
            writer: Mutex::new(Some(writer)),
            shared,
            file: DatabaseFile::new(path),
        })
    }

    /// [`Store::health`] as each request checks it: the database file looked at no more
    /// than once a second.
    fn check(&self) -> ApiResult<()> {
        self.state(false).map_err(ApiError::internal)
    }

    /// Whether the store takes requests: not after a failed commit, until the database
    /// takes writes again and the state is reloaded from it, nor once its file is gone.
    pub fn health(&self) -> Result<(), String> {
        self.state(true)
    }

    fn state(&self, look_now: bool) -> Result<(), String> {
        if self.shared.poisoned.load(Ordering::Acquire) {
            return Err(
                "the hub's storage failed a commit; requests are refused until it takes writes again"
                    .into(),
            );
        }
        if self.file.gone(look_now) {
            return Err(format!(
                "the hub's database {} was removed or replaced while the hub runs: what it writes now would be lost when it restarts; restart it (with the file put back, if it held what you need)",
                self.file.path.display()
            ));
        }
        Ok(())
    }

    /// The resourceVersion of the last change handed to the watches: a watch whose queue
    /// is empty after reading it has seen every change up to it that concerns it.
    pub fn published_rv(&self) -> u64 {
        self.shared.published.load(Ordering::Acquire)
    }

    /// The RBAC bindings of `cluster` that name the service account `namespace`/`name` (as
    /// itself, its user name or a group of it): its ClusterRoleBindings, and its
    /// RoleBindings in `scope` when that is a namespace; with
    /// [`Store::account_bindings_changed`] as it was when they were read.
    pub fn bindings_naming_account(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        scope: &str,
    ) -> (u64, Vec<Arc<Stored>>) {
        let [cluster_wide, namespaced] = crate::subjects::BINDING_RESOURCES;
        let memory = lock(&self.shared.memory);
        let (keys, changed) = memory.subjects.naming_account(cluster, namespace, name);
        let bindings = (keys.into_iter())
            .filter(|(resource, ns, _)| {
                resource == cluster_wide
                    || (!scope.is_empty() && resource == namespaced && ns == scope)
            })
            .filter_map(|(resource, namespace, name)| {
                let key = Key {
                    cluster: cluster.to_string(),
                    resource,
                    namespace,
                    name,
                };
                find(&memory, &key)
            })
            .collect();
        (changed.max(memory.loaded), bindings)
    }

    /// A resourceVersion that changes whenever a binding of `cluster` naming the service
    /// account `namespace`/`name` is written or deleted (or the objects are loaded again):
    /// what a grant worked out from its bindings is kept against.
    pub fn account_bindings_changed(&self, cluster: &str, namespace: &str, name: &str) -> u64 {
        let memory = lock(&self.shared.memory);
        let changed = memory.subjects.account_changed(cluster, namespace, name);
        changed.max(memory.loaded)
    }

    /// The latest assigned resourceVersion.
    pub fn current_rv(&self) -> u64 {
        lock(&self.shared.memory).rv
    }

    /// One object.
    pub fn get(&self, key: &Key) -> ApiResult<Option<Arc<Stored>>> {
        self.check()?;
        let memory = lock(&self.shared.memory);
        Ok(find(&memory, key))
    }

    /// Objects of a resource, in one namespace or all, ordered by namespace and name, with
    /// the resourceVersion of the snapshot; only those after `after` (a namespace and
    /// name), when it is given.
    pub fn list(
        &self,
        cluster: &str,
        resource: &str,
        namespace: Option<&str>,
        after: Option<(&str, &str)>,
    ) -> ApiResult<(u64, Vec<Arc<Stored>>)> {
        self.check()?;
        let memory = lock(&self.shared.memory);
        Ok((
            memory.rv,
            select(&memory, cluster, resource, namespace, after),
        ))
    }

    /// How many objects the store holds, in every cluster.
    pub fn object_count(&self) -> usize {
        let memory = lock(&self.shared.memory);
        memory.objects.values().map(|objects| objects.len()).sum()
    }

    /// How many objects the store holds in `cluster`, by resource (`group/plural`, the
    /// group empty for the core group).
    pub fn object_counts(&self, cluster: &str) -> Vec<(String, usize)> {
        let memory = lock(&self.shared.memory);
        (memory.objects.iter())
            .filter(|((c, _), objects)| c == cluster && !objects.is_empty())
            .map(|((_, resource), objects)| (resource.clone(), objects.len()))
            .collect()
    }

    /// The objects of a cluster that `wanted` picks (given the resource, the namespace and
    /// the object), with their resource.
    pub fn cluster_objects(
        &self,
        cluster: &str,
        wanted: impl Fn(&str, &str, &Stored) -> bool,
    ) -> Vec<(String, Arc<Stored>)> {
        let memory = lock(&self.shared.memory);
        let mut picked = Vec::new();
        for ((c, resource), objects) in &memory.objects {
            if c != cluster {
                continue;
            }
            for ((namespace, _), object) in objects {
                if wanted(resource, namespace, object) {
                    picked.push((resource.clone(), object.clone()));
                }
            }
        }
        picked
    }

    /// The logical cluster `name`, if there is one.
    pub fn cluster(&self, name: &str) -> Option<ClusterRecord> {
        lock(&self.shared.memory).clusters.get(name).cloned()
    }

    /// The logical clusters.
    pub fn clusters(&self) -> Vec<ClusterRecord> {
        lock(&self.shared.memory)
            .clusters
            .values()
            .cloned()
            .collect()
    }

    /// Records a logical cluster durably.
    pub async fn put_cluster(&self, record: ClusterRecord) -> ApiResult<()> {
        self.check()?;
        let ack = {
            let mut memory = lock(&self.shared.memory);
            memory.clusters.insert(record.name.clone(), record.clone());
            self.enqueue(Op::Cluster(record), memory.rv, None)?
        };
        wait(ack).await
    }

    /// Reads the object at `key`, lets `decide` choose the change, and commits it
    /// atomically. `decide` gets the current object, parsed, and may take it (a write
    /// that edits the tree itself rather than a copy of it); the store reads the text
    /// again where it still needs the tree. Returns what `decide` returned with the
    /// object as stored (its last state, for a delete), once it is durable.
    ///
    /// `decide` runs without the store's lock, which every write waits for: the change
    /// commits only if the object is still the one it was shown, and `decide` runs again
    /// on the newer one otherwise. After [`OPTIMISTIC_TRIES`] such races it runs under
    /// the lock, so a write contended without end still completes. A `Keep`, or an error,
    /// answers as of the object `decide` was shown.
    pub async fn write<T>(
        &self,
        key: &Key,
        mut decide: impl FnMut(&mut Option<Value>) -> ApiResult<(Change, T)>,
    ) -> ApiResult<(T, Option<Version>)> {
        self.check()?;
        let mut tries = 0;
        let (result, version, ack) = loop {
            let seen = find(&lock(&self.shared.memory), key);
            let mut parsed = seen.as_ref().map(|s| self.parsed(s)).transpose()?;
            let decided = if tries < OPTIMISTIC_TRIES {
                let (change, result) = decide(&mut parsed)?;
                if let Change::Keep = change {
                    return Ok((result, version_of(seen, parsed)?));
                }
                Some((change, result))
            } else {
                None
            };
            let mut memory = lock(&self.shared.memory);
            let existing = find(&memory, key);
            let unchanged = match (&existing, &seen) {
                (Some(now), Some(before)) => Arc::ptr_eq(now, before),
                (None, None) => true,
                _ => false,
            };
            let (change, result) = match decided {
                Some(decided) if unchanged => decided,
                Some(_) => {
                    tries += 1;
                    continue;
                }
                None => {
                    if !unchanged {
                        parsed = existing.as_ref().map(|s| self.parsed(s)).transpose()?;
                    }
                    decide(&mut parsed)?
                }
            };
            let rv = memory.rv + 1;
            match change {
                Change::Keep => return Ok((result, version_of(existing, parsed)?)),
                Change::Put(mut value) => {
                    crate::meta::set_resource_version(&mut value, rv);
                    if SubjectIndex::indexes(&key.resource) {
                        let binding = binding_key(key);
                        let old = tree_of(existing.as_ref(), parsed)?;
                        let old = old.as_ref();
                        (memory.subjects).update(&key.cluster, binding, old, Some(&value), rv);
                    }
                    let stored = Arc::new(Stored::new(&value));
                    let kind = if existing.is_some() {
                        EventType::Modified
                    } else {
                        EventType::Added
                    };
                    memory.rv = rv;
                    insert(&mut memory.objects, key, stored.clone());
                    let event = event(kind, key, rv, stored.clone(), existing);
                    let ack =
                        self.enqueue(Op::Put(key.clone(), rv, stored.clone()), rv, Some(event))?;
                    break (result, Some(Version { stored, value }), ack);
                }
                Change::Delete => {
                    let Some(mut last) = tree_of(existing.as_ref(), parsed)? else {
                        return Ok((result, None));
                    };
                    if SubjectIndex::indexes(&key.resource) {
                        let binding = binding_key(key);
                        (memory.subjects).update(&key.cluster, binding, Some(&last), None, rv);
                    }
                    crate::meta::set_resource_version(&mut last, rv);
                    memory.rv = rv;
                    remove(&mut memory.objects, key);
                    let stored = Arc::new(Stored::new(&last));
                    let event = event(EventType::Deleted, key, rv, stored.clone(), None);
                    let ack = self.enqueue(Op::Delete(key.clone()), rv, Some(event))?;
                    let version = Version {
                        stored,
                        value: last,
                    };
                    break (result, Some(version), ack);
                }
            }
        };
        wait(ack).await?;
        Ok((result, version))
    }

    /// `stored`, parsed: the tree its write handed back (see [`Store::keep_parsed`]), or
    /// its text read again.
    fn parsed(&self, stored: &Arc<Stored>) -> ApiResult<Value> {
        let kept = lock(&self.shared.recent).take(stored);
        kept.map_or_else(|| stored.value(), Ok)
    }

    /// Hands back a version that [`Store::write`] returned, its tree unchanged, for the
    /// next write of that object to take instead of parsing the text again.
    pub fn keep_parsed(&self, version: Version) {
        let forgotten = lock(&self.shared.recent).keep(version.stored, version.value);
        // Dropped after the lock: a tree takes a while to free, and every write waits
        // for the lock.
        drop(forgotten);
    }

    /// Commits what is queued and closes the database, which the hub holds locked while it
    /// is open; writes after this are refused. Blocks until the writer is done.
    pub fn close(&self) {
        // The writer stops once its queue has no sender left.
        let (closed, _) = mpsc::channel();
        drop(std::mem::replace(&mut *lock(&self.queue), closed));
        if let Some(writer) = lock(&self.writer).take() {
            let _ = writer.join();
        }
    }

    fn enqueue(
        &self,
        op: Op,
        rv: u64,
        event: Option<Arc<Event>>,
    ) -> ApiResult<oneshot::Receiver<bool>> {
        let (ack, receiver) = oneshot::channel();
        lock(&self.queue)
            .send(Pending { op, rv, event, ack })
            .map_err(|_| ApiError::internal("the hub's storage writer has stopped"))?;
        Ok(receiver)
    }

    /// The oldest resourceVersion from which every change of `resource` of `cluster` (in
    /// `namespace`, or every namespace) is still kept.
    pub fn oldest_kept(&self, cluster: &str, resource: &str, namespace: Option<&str>) -> u64 {
        lock(&self.shared.history).floor(cluster, resource, namespace)
    }

    /// Subscribes to the changes of `resource` of `cluster` (in `namespace`, or every
    /// namespace) after `rv`, or fails with the oldest resourceVersion kept. The replay
    /// holds every kept change after `rv`; the watch picks its own.
    pub fn subscribe_after(
        &self,
        rv: u64,
        cluster: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<Subscription, u64> {
        let history = lock(&self.shared.history);
        let floor = history.floor(cluster, resource, namespace);
        if rv < floor {
            return Err(floor);
        }
        // The history is in resourceVersion order: the replay starts after `rv` without
        // reading what came before (10,000 agents starting watches near the end of a full
        // history each read all of it, with the writer waiting on the lock).
        let first = history.events.partition_point(|e| e.rv <= rv);
        let replay = (history.events.range(first..))
            .filter(|e| e.key.in_scope(cluster, resource, namespace))
            .cloned()
            .collect();
        Ok(Subscription {
            replay,
            live: self.shared.topics.subscribe(cluster, resource, namespace),
        })
    }

    /// The current objects of a resource and a subscription to every later change.
    pub fn snapshot_and_subscribe(
        &self,
        cluster: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> ApiResult<Snapshot> {
        self.check()?;
        let memory = lock(&self.shared.memory);
        let live = self.shared.topics.subscribe(cluster, resource, namespace);
        Ok(Snapshot {
            rv: memory.rv,
            objects: select(&memory, cluster, resource, namespace, None),
            live,
        })
    }
}

/// Where a binding is, in [`SubjectIndex`]'s terms.
fn binding_key(key: &Key) -> BindingKey {
    (
        key.resource.clone(),
        key.namespace.clone(),
        key.name.clone(),
    )
}

/// The tree of `stored`: `parsed`, unless a write's `decide` took it; then its text read
/// again.
fn tree_of(stored: Option<&Arc<Stored>>, parsed: Option<Value>) -> ApiResult<Option<Value>> {
    match (stored, parsed) {
        (None, _) => Ok(None),
        (Some(_), Some(tree)) => Ok(Some(tree)),
        (Some(stored), None) => stored.value().map(Some),
    }
}

/// `stored` with its tree (see [`tree_of`]): what a write that changes nothing answers.
fn version_of(stored: Option<Arc<Stored>>, parsed: Option<Value>) -> ApiResult<Option<Version>> {
    let value = tree_of(stored.as_ref(), parsed)?;
    Ok(stored
        .zip(value)
        .map(|(stored, value)| Version { stored, value }))
}

/// The object at `key`, found without copying its names into map keys.
fn find(memory: &Memory, key: &Key) -> Option<Arc<Stored>> {
    let objects = memory.objects.get(&group_of(key) as &dyn Pair)?;
    objects.get(&place_of(key) as &dyn Pair).cloned()
}

/// The resource of a cluster `key` is in: the first key of the store's maps.
fn group_of(key: &Key) -> (&str, &str) {
    (&key.cluster, &key.resource)
}

/// The namespace and name of `key`: the second key of the store's maps.
fn place_of(key: &Key) -> (&str, &str) {
    (&key.namespace, &key.name)
}

/// Takes the object at `key` out of `objects`.
fn remove(objects: &mut HashMap<(String, String), Objects>, key: &Key) {
    if let Some(group) = objects.get_mut(&group_of(key) as &dyn Pair) {
        group.remove(&place_of(key) as &dyn Pair);
    }
}

/// Puts `stored` at `key`, copying the names into new map keys only where there were none.
fn insert(objects: &mut HashMap<(String, String), Objects>, key: &Key, stored: Arc<Stored>) {
    let group = match objects.get_mut(&group_of(key) as &dyn Pair) {
        Some(group) => group,
        None => objects
            .entry((key.cluster.clone(), key.resource.clone()))
            .or_default(),
    };
    match group.get_mut(&place_of(key) as &dyn Pair) {
        Some(kept) => *kept = stored,
        None => {
            group.insert((key.namespace.clone(), key.name.clone()), stored);
        }
    }
}

fn select(
    memory: &Memory,
    cluster: &str,
    resource: &str,
    namespace: Option<&str>,
    after: Option<(&str, &str)>,
) -> Vec<Arc<Stored>> {
    use std::ops::Bound;
    let Some(objects) = memory
        .objects
        .get(&(cluster.to_string(), resource.to_string()))
    else {
        return Vec::new();
    };
    // Whichever starts later: the namespace's first object, or the one after `after`
    // (which a continue token from another namespace may place before it).
    let start = match (after, namespace) {
        (Some((after_ns, _)), Some(ns)) if after_ns < ns => {
            Bound::Included((ns.to_string(), String::new()))
        }
        (Some((after_ns, name)), _) => Bound::Excluded((after_ns.to_string(), name.to_string())),
        (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
        (None, None) => Bound::Unbounded,
    };
    objects
        .range((start, Bound::Unbounded))
        .take_while(|((n, _), _)| namespace.is_none_or(|ns| n == ns))
        .map(|(_, o)| o.clone())
        .collect()
}

fn event(
    kind: EventType,
    key: &Key,
    rv: u64,
    object: Arc<Stored>,
    previous: Option<Arc<Stored>>,
) -> Arc<Event> {
    Arc::new(Event {
        kind,
        key: key.clone(),
        rv,
        object,
        previous,
    })
}

async fn wait(ack: oneshot::Receiver<bool>) -> ApiResult<()> {
    match ack.await {
        Ok(true) => Ok(()),
        _ => Err(ApiError::internal(
            "the hub could not commit the write to disk",
        )),
    }
}

/// Removes what the database holds of `clusters`, in one transaction: a cluster kept on
/// disk before starts empty once it is kept in memory only.
fn forget(conn: &mut Connection, clusters: &HashSet<String>) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut objects = tx.prepare("DELETE FROM objects WHERE cluster = ?1")?;
        let mut records = tx.prepare("DELETE FROM clusters WHERE name = ?1")?;
        for cluster in clusters {
            objects.execute([cluster])?;
            records.execute([cluster])?;
        }
    }
    tx.commit()
}

fn load(conn: &Connection, path: &str) -> Result<Memory, StoreError> {
    let sqlite = |source| StoreError::Sqlite {
        path: path.to_string(),
        source,
    };
    let mut memory = Memory {
        rv: conn
            .query_row("SELECT value FROM meta WHERE key = 'rv'", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|v| u64::try_from(v).unwrap_or(0))
            .unwrap_or(0),
        objects: HashMap::new(),
        clusters: BTreeMap::new(),
        loaded: 0,
        subjects: SubjectIndex::default(),
    };
    let mut statement = conn
        .prepare("SELECT cluster, resource, namespace, name, rv, body FROM objects")
        .map_err(sqlite)?;
    let rows = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, i64>(4)?,
                row.get::<_, Vec<u8>>(5)?,
            ))
        })
        .map_err(sqlite)?;
    for row in rows {
        let (cluster, resource, namespace, name, rv, body) = row.map_err(sqlite)?;
        let value: Value =
            crate::json::from_slice(&body).map_err(|source| StoreError::Corrupt {
                path: path.to_string(),
                key: format!("{cluster}/{resource}/{namespace}/{name}"),
                source,
            })?;
        memory.rv = memory.rv.max(u64::try_from(rv).unwrap_or(0));
        if SubjectIndex::indexes(&resource) {
            let binding = (resource.clone(), namespace.clone(), name.clone());
            (memory.subjects).update(&cluster, binding, None, Some(&value), 0);
        }
        memory
            .objects
            .entry((cluster, resource))
            .or_default()
            .insert(
                (namespace, name),
                Arc::new(Stored::new(&Stored::upgraded(value))),
            );
    }
    let mut statement = conn
        .prepare("SELECT name, token FROM clusters")
        .map_err(sqlite)?;
    let rows = statement
        .query_map([], |row| {
            Ok(ClusterRecord {
                name: row.get(0)?,
                token: row.get(1)?,
            })
        })
        .map_err(sqlite)?;
    for row in rows {
        let record = row.map_err(sqlite)?;
        memory.clusters.insert(record.name.clone(), record);
    }
    memory.loaded = memory.rv;
    Ok(memory)
}

/// How often a failed store checks whether the database takes writes again.
const RECOVERY_PROBE: std::time::Duration = std::time::Duration::from_secs(1);

fn run_writer(
    mut conn: Connection,
    receiver: mpsc::Receiver<Pending>,
    shared: &Shared,
    path: &str,
) {
    loop {
        if shared.poisoned.load(Ordering::Acquire) {
            match receiver.recv_timeout(RECOVERY_PROBE) {
                // Writes queued before the failure was seen cannot be trusted: refused.
                Ok(pending) => {
                    let _ = pending.ack.send(false);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => recover(&mut conn, shared, path),
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
            continue;
        }
        let Ok(first) = receiver.recv() else {
            return;
        };
        let batch = next_batch(first, &receiver, &shared.memory_only);
        let committed = match commit(&mut conn, &batch, &shared.memory_only) {
            Ok(()) => true,
            Err(error) => {
                tracing::error!(%error, "storage commit failed; the hub refuses requests until it recovers");
                shared.poisoned.store(true, Ordering::Release);
                false
            }
        };
        if committed {
            let mut history = lock(&shared.history);
            for pending in &batch {
                let Some(event) = pending.event.clone() else {
                    continue;
                };
                // A modification keeps the previous version alive too.
                let size = event.object.len() + event.previous.as_ref().map_or(0, |p| p.len());
                history.push(event.clone(), size);
                shared.topics.publish(&event);
                shared.published.store(event.rv, Ordering::Release);
            }
        }
        for pending in batch {
            // The caller may have gone away; its write is committed all the same.
            let _ = pending.ack.send(committed);
        }
    }
}

/// The writes committed together: `first`, those queued behind it, and, when any of them
/// goes to the database, those that come within [`GATHER`]. The writer sleeps through that
/// wait rather than waiting on the queue: a sender wakes a writer waiting on the queue (a
/// futex call and a context switch per write, 3% of a commit's CPU at 3,000 x 10), but
/// not one asleep.
fn next_batch(
    first: Pending,
    receiver: &mpsc::Receiver<Pending>,
    memory_only: &HashSet<String>,
) -> Vec<Pending> {
    let mut batch = vec![first];
    take_queued(receiver, &mut batch);
    if batch.len() < BATCH && batch.iter().any(|p| p.op.is_durable(memory_only)) {
        std::thread::sleep(GATHER);
        take_queued(receiver, &mut batch);
    }
    batch
}

/// Moves the writes queued now into `batch`, up to [`BATCH`].
fn take_queued(receiver: &mpsc::Receiver<Pending>, batch: &mut Vec<Pending>) {
    while batch.len() < BATCH {
        match receiver.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
}

/// After a failed commit: once a probe write commits again, reloads every object from the
/// database (the memory may hold writes that never committed) and accepts requests again.
fn recover(conn: &mut Connection, shared: &Shared, path: &str) {
    let probe = conn.transaction().and_then(|tx| {
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', ?1)",
            params![jiff::Timestamp::now().as_second()],
        )?;
        tx.commit()
    });
    if probe.is_err() {
        return;
    }
    match load(conn, path) {
        Ok(mut reloaded) => {
            let mut memory = lock(&shared.memory);
            // resourceVersions never go back, even over writes that did not commit.
            reloaded.rv = reloaded.rv.max(memory.rv);
            // Whatever was derived from the objects before is derived again.
            reloaded.loaded = reloaded.rv;
            // The database never had the memory-only clusters: they stay as they are.
            let memory_only = |cluster: &String| shared.memory_only.contains(cluster);
            let old = std::mem::replace(&mut *memory, reloaded);
            (memory.objects).extend(old.objects.into_iter().filter(|((c, _), _)| memory_only(c)));
            (memory.clusters).extend(old.clusters.into_iter().filter(|(c, _)| memory_only(c)));
            memory.subjects.keep_from(old.subjects, memory_only);
            shared.poisoned.store(false, Ordering::Release);
            tracing::warn!("storage works again: state reloaded from the database");
        }
        Err(error) => tracing::error!(%error, "storage recovery: reload failed"),
    }
}

/// Commits a batch in one transaction, leaving out the writes to clusters kept in memory
/// only; a batch of nothing else touches no file.
fn commit(
    conn: &mut Connection,
    batch: &[Pending],
    memory_only: &HashSet<String>,
) -> rusqlite::Result<()> {
    let durable: Vec<&Op> = (batch.iter())
        .map(|pending| &pending.op)
        .filter(|op| op.is_durable(memory_only))
        .collect();
    if durable.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction()?;
    {
        let mut put = tx.prepare_cached(
            "INSERT INTO objects (cluster, resource, namespace, name, rv, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT DO UPDATE SET rv = excluded.rv, body = excluded.body",
        )?;
        let mut delete = tx.prepare_cached(
            "DELETE FROM objects WHERE cluster = ?1 AND resource = ?2 AND namespace = ?3 AND name = ?4",
        )?;
        let mut cluster =
            tx.prepare_cached("INSERT OR REPLACE INTO clusters (name, token) VALUES (?1, ?2)")?;
        for op in durable {
            match op {
                Op::Put(key, rv, object) => {
                    put.execute(params![
                        key.cluster,
                        key.resource,
                        key.namespace,
                        key.name,
                        i64::try_from(*rv).unwrap_or(i64::MAX),
                        &object.text()[..]
                    ])?;
                }
                Op::Delete(key) => {
                    delete.execute(params![key.cluster, key.resource, key.namespace, key.name])?;
                }
                Op::Cluster(record) => {
                    cluster.execute(params![record.name, record.token])?;
                }
            }
        }
        let last = batch.iter().map(|p| p.rv).max().unwrap_or(0);
        let mut last_rv = tx.prepare_cached(
            "INSERT INTO meta (key, value) VALUES ('rv', ?1)
             ON CONFLICT DO UPDATE SET value = max(value, excluded.value)",
        )?;
        last_rv.execute(params![i64::try_from(last).unwrap_or(i64::MAX)])?;
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A queued delete in `cluster`, its acknowledgement dropped.
    fn pending_delete(cluster: &str) -> Pending {
        let key = Key {
            cluster: cluster.into(),
            resource: "/configmaps".into(),
            namespace: "ns".into(),
            name: "o".into(),
        };
        let (ack, _) = oneshot::channel();
        Pending {
            op: Op::Delete(key),
            rv: 1,
            event: None,
            ack,
        }
    }

    #[test]
    fn a_batch_for_the_database_waits_for_more_writes_and_both_kinds_take_the_queued_ones() {
        let memory_only = HashSet::from(["member".to_string()]);
        let (sender, receiver) = mpsc::channel();
        // In memory only: the first write and those queued behind it.
        sender.send(pending_delete("member")).expect("queued");
        let batch = next_batch(pending_delete("member"), &receiver, &memory_only);
        assert_eq!(batch.len(), 2);
        // For the database: the queued ones too, and only after waiting for more.
        sender.send(pending_delete("member")).expect("queued");
        let started = std::time::Instant::now();
        let batch = next_batch(pending_delete("hub"), &receiver, &memory_only);
        assert!(
            started.elapsed() >= GATHER,
            "waited {:?}",
            started.elapsed()
        );
        assert_eq!(batch.len(), 2);
    }

    fn event(rv: u64) -> Arc<Event> {
        Arc::new(Event {
            kind: EventType::Added,
            key: Key {
                cluster: "c".into(),
                resource: "/configmaps".into(),
                namespace: "ns".into(),
                name: format!("o{rv}"),
            },
            rv,
            object: Arc::new(Stored::new(&Value::Null)),
            previous: None,
        })
    }

    #[test]
    fn a_list_after_a_position_starts_where_the_namespace_does_when_that_is_later() {
        let mut memory = Memory {
            rv: 0,
            objects: HashMap::new(),
            clusters: BTreeMap::new(),
            loaded: 0,
            subjects: SubjectIndex::default(),
        };
        let objects = memory
            .objects
            .entry(("c".into(), "/configmaps".into()))
            .or_default();
        for (ns, name) in [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y"), ("c", "x")] {
            let object = json!({"metadata": {"namespace": ns, "name": name}});
            objects.insert((ns.into(), name.into()), Arc::new(Stored::new(&object)));
        }
        let names = |namespace, after| -> Vec<String> {
            select(&memory, "c", "/configmaps", namespace, after)
                .iter()
                .map(|o| {
                    let o = o.value().expect("JSON");
                    format!("{}/{}", o["metadata"]["namespace"], o["metadata"]["name"])
                        .replace('"', "")
                })
                .collect()
        };
        assert_eq!(names(Some("b"), None), ["b/x", "b/y"]);
        assert_eq!(names(Some("b"), Some(("b", "x"))), ["b/y"]);
        assert_eq!(names(Some("b"), Some(("a", "x"))), ["b/x", "b/y"]);
        assert!(names(Some("b"), Some(("c", "x"))).is_empty());
        assert_eq!(names(None, Some(("b", "x"))), ["b/y", "c/x"]);
    }

    /// Read-modify-write increments from many tasks at once: each decides without the
    /// lock, so some race; none may be lost, though each hands its version back to be
    /// shown to the next write (which a racing one must not be shown).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_writes_lose_no_update() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Arc::new(Store::open(&dir.path().join("db"), HashSet::new()).expect("opened"));
        let key = Key {
            cluster: "c".into(),
            resource: "/configmaps".into(),
            namespace: "ns".into(),
            name: "counter".into(),
        };
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (store, key) = (store.clone(), key.clone());
                tokio::spawn(async move {
                    for _ in 0..50 {
                        let (_, written) = store
                            .write(&key, |existing| {
                                let count = existing
                                    .as_ref()
                                    .and_then(|o| o.pointer("/data/n"))
                                    .and_then(Value::as_u64)
                                    .unwrap_or(0);
                                let next = serde_json::json!({"metadata": {"name": "counter"},
                                    "data": {"n": count + 1}});
                                Ok((Change::Put(next), ()))
                            })
                            .await
                            .expect("written");
                        store.keep_parsed(written.expect("a version"));
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("task");
        }
        let counter = store.get(&key).expect("read").expect("there");
        assert_eq!(counter.value().expect("JSON")["data"]["n"], 400);
    }

    #[tokio::test]
    async fn a_write_is_shown_the_tree_the_write_before_it_handed_back_once_and_may_take_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("db"), HashSet::new()).expect("opened");
        let key = Key {
            cluster: "c".into(),
            resource: "/configmaps".into(),
            namespace: "ns".into(),
            name: "o".into(),
        };
        let object = json!({"metadata": {"name": "o"}, "data": {"n": 1}});
        let put = |_: &mut Option<Value>| Ok((Change::Put(object.clone()), ()));
        let (_, written) = store.write(&key, put).await.expect("written");
        let mut version = written.expect("a version");
        // A tree that is not the text's shows where the next write's tree comes from.
        version.value["data"]["marked"] = json!(true);
        store.keep_parsed(version);
        let shown = |existing: &mut Option<Value>| Ok((Change::Keep, existing.clone()));
        let (first, _) = store.write(&key, shown).await.expect("read");
        let (second, _) = store.write(&key, shown).await.expect("read");
        assert_eq!(first.expect("there")["data"]["marked"], true);
        assert_eq!(
            second.expect("there")["data"],
            json!({"n": 1}),
            "the text again"
        );

        // A write may take the tree: a Keep then answers with the text read again, and a
        // Put stores what the write made of the tree.
        let taken = |existing: &mut Option<Value>| Ok((Change::Keep, existing.take()));
        let (tree, kept) = store.write(&key, taken).await.expect("read");
        assert_eq!(tree.expect("taken")["data"], json!({"n": 1}));
        assert_eq!(kept.expect("answered").value["data"], json!({"n": 1}));
        let edit = |existing: &mut Option<Value>| {
            let mut tree = existing.take().expect("there");
            tree["data"]["n"] = json!(2);
            Ok((Change::Put(tree), ()))
        };
        let (_, written) = store.write(&key, edit).await.expect("written");
        assert_eq!(written.expect("a version").value["data"], json!({"n": 2}));
        let (now, _) = store.write(&key, shown).await.expect("read");
        assert_eq!(now.expect("there")["data"], json!({"n": 2}));
    }

    #[tokio::test]
    async fn bindings_are_found_by_the_accounts_they_name_after_writes_deletes_and_a_reopen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db");
        let [cluster_wide, namespaced] = crate::subjects::BINDING_RESOURCES;
        let key = |resource: &str, namespace: &str, name: &str| Key {
            cluster: "c".into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
        };
        let binding = |account: &str| {
            serde_json::json!({"subjects": [
                {"kind": "ServiceAccount", "name": account, "namespace": "home"}]})
        };
        let count = |store: &Store, scope: &str| {
            (store.bindings_naming_account("c", "home", "agent", scope))
                .1
                .len()
        };
        {
            let store = Store::open(&path, HashSet::new()).expect("opened");
            store
                .put_cluster(ClusterRecord {
                    name: "c".into(),
                    token: "t".into(),
                })
                .await
                .expect("cluster");
            for (resource, namespace, name, account) in [
                (cluster_wide, "", "contents-home", "agent"),
                (namespaced, "home", "agent", "agent"),
                (namespaced, "elsewhere", "agent", "agent"),
                (cluster_wide, "", "someone-else", "other"),
            ] {
                let object = binding(account);
                (store.write(&key(resource, namespace, name), |_| {
                    Ok((Change::Put(object.clone()), ()))
                }))
                .await
                .expect("written");
            }
            assert_eq!(
                count(&store, "home"),
                2,
                "its ClusterRoleBinding and RoleBinding"
            );
            assert_eq!(
                count(&store, ""),
                1,
                "cluster scope: its ClusterRoleBinding"
            );
            (store.write(&key(namespaced, "home", "agent"), |_| {
                Ok((Change::Delete, ()))
            }))
            .await
            .expect("deleted");
            assert_eq!(count(&store, "home"), 1, "the deleted one is gone");
        }
        let reopened = Store::open(&path, HashSet::new()).expect("reopened");
        assert_eq!(count(&reopened, "home"), 1, "indexed again on load");
        assert_eq!(count(&reopened, "elsewhere"), 2);
    }

    #[tokio::test]
    async fn memory_only_clusters_are_served_and_published_but_never_stored() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db");
        let key = |cluster: &str| Key {
            cluster: cluster.into(),
            resource: "/configmaps".into(),
            namespace: "ns".into(),
            name: "settings".into(),
        };
        async fn put(store: &Store, key: Key) -> Version {
            let object = serde_json::json!({"metadata": {"name": "settings"}});
            store
                .write(&key, |_| Ok((Change::Put(object.clone()), ())))
                .await
                .expect("written")
                .1
                .expect("stored")
        }
        let record = |name: &str| ClusterRecord {
            name: name.into(),
            token: format!("token-{name}"),
        };
        {
            let store = Store::open(&path, HashSet::from(["sim".to_string()])).expect("opened");
            store.put_cluster(record("c")).await.expect("cluster c");
            store.put_cluster(record("sim")).await.expect("cluster sim");
            put(&store, key("c")).await;
            let simulated = put(&store, key("sim")).await;
            let rv = simulated.value["metadata"]["resourceVersion"].clone();
            assert!(store.get(&key("sim")).expect("read").is_some());
            assert_eq!(store.cluster("sim"), Some(record("sim")));
            assert_eq!(rv, store.published_rv().to_string(), "published to watches");
        }
        let reopened = Store::open(&path, HashSet::new()).expect("reopened");
        assert!(reopened.get(&key("c")).expect("read").is_some());
        assert_eq!(reopened.cluster("c"), Some(record("c")));
        assert!(reopened.get(&key("sim")).expect("read").is_none());
        assert_eq!(reopened.cluster("sim"), None);
        put(&reopened, key("sim")).await;
        drop(reopened);
        // A cluster stored on disk before starts empty once it is memory-only.
        let emptied = Store::open(&path, HashSet::from(["sim".to_string()])).expect("opened");
        assert!(emptied.get(&key("sim")).expect("read").is_none());
        assert!(emptied.get(&key("c")).expect("read").is_some());
    }

    #[tokio::test]
    async fn a_watch_resumed_at_a_version_replays_only_its_later_changes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("db"), HashSet::new()).expect("opened");
        let mut versions = Vec::new();
        for (cluster, name) in [("c", "a"), ("c", "b"), ("d", "c"), ("c", "d"), ("c", "e")] {
            let key = Key {
                cluster: cluster.into(),
                resource: "/configmaps".into(),
                namespace: "ns".into(),
                name: name.into(),
            };
            let object = json!({"metadata": {"name": name}});
            store
                .write(&key, |_| Ok((Change::Put(object.clone()), ())))
                .await
                .expect("written");
            versions.push(store.current_rv());
        }
        let names = |rv| -> Vec<String> {
            let subscription = store
                .subscribe_after(rv, "c", "/configmaps", None)
                .map_err(|floor| format!("floor {floor}"))
                .expect("subscribed");
            (subscription.replay.iter())
                .map(|e| e.key.name.clone())
                .collect()
        };
        assert_eq!(names(versions[1]), ["d", "e"], "after b, not d's cluster");
        assert_eq!(names(versions[0] - 1), ["a", "b", "d", "e"]);
        assert!(names(versions[4]).is_empty());
    }

    #[test]
    fn history_is_bounded_in_bytes_as_well_as_in_events() {
        let mut history = History::new(0);
        let big = HISTORY_BYTES / 4 + 1;
        for rv in 1..=10 {
            history.push(event(rv), big);
        }
        assert_eq!(history.events.len(), 3, "three fit in the byte budget");
        assert!(history.bytes <= HISTORY_BYTES);
        let floor = |namespace| history.floor("c", "/configmaps", namespace);
        assert_eq!(floor(Some("ns")), 7, "watches from before rv 8 get 410");
        assert_eq!(floor(None), 7, "so do watches of every namespace");
        assert_eq!(
            floor(Some("other")),
            0,
            "a namespace with no change forgotten resumes"
        );
        assert_eq!(
            history.floor("c", "/secrets", None),
            0,
            "so does another resource"
        );
        for rv in 11..=(10 + HISTORY as u64 + 5) {
            history.push(event(rv), 1);
        }
        assert_eq!(history.events.len(), HISTORY);
        assert_eq!(history.bytes, HISTORY);
    }
}
