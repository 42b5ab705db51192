//! One bare mirror per repository URL, shared by every GitRepo that names it: polls ask the
//! remote for one ref only, fetches are shallow and happen once per commit.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_charts::Egress;
use gix::remote::fetch::Shallow;
use gix::remote::Direction;
use sha2::{Digest, Sha256};

use super::{Access, GitError};

/// What a GitRepo deploys: the tip of a branch, or a fixed revision (tag or commit).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Wanted {
    /// A branch, followed as it moves.
    Branch(String),
    /// A tag, a full or abbreviated commit id, or a branch name used as a revision.
    Revision(String),
}

impl Wanted {
    /// The branch or revision as the user wrote it.
    pub fn name(&self) -> &str {
        match self {
            Wanted::Branch(name) | Wanted::Revision(name) => name,
        }
    }

    /// Remote refs that may hold it, most specific first.
    fn candidate_refs(&self) -> Vec<String> {
        match self {
            Wanted::Branch(name) => vec![format!("refs/heads/{name}")],
            Wanted::Revision(name) => {
                vec![format!("refs/tags/{name}"), format!("refs/heads/{name}")]
            }
        }
    }

    /// A commit id written out in full or abbreviated (at least 7 hex digits).
    fn as_commit_id(&self) -> Option<&str> {
        match self {
            Wanted::Revision(rev)
                if (7..=40).contains(&rev.len()) && rev.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                Some(rev)
            }
            _ => None,
        }
    }
}

/// Mirrors by URL under one directory.
pub struct MirrorCache {
    dir: PathBuf,
    mirrors: Mutex<HashMap<String, Arc<Mirror>>>,
    egress: Egress,
}

impl MirrorCache {
    /// A cache keeping its mirrors under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            mirrors: Mutex::default(),
            egress: Egress::default(),
        }
    }

    /// The same cache, mirroring only repositories `egress` allows.
    pub fn with_egress(mut self, egress: Egress) -> Self {
        self.egress = egress;
        self
    }

    /// The mirror of `url`, made on first use.
    pub fn mirror(&self, url: &str) -> Result<Arc<Mirror>, GitError> {
        self.egress
            .check(url)
            .map_err(|why| GitError::remote(url, why))?;
        let mut mirrors = self
            .mirrors
            .lock()
            .map_err(|_| GitError::remote(url, "mirror cache lock poisoned"))?;
        if let Some(mirror) = mirrors.get(url) {
            return Ok(mirror.clone());
        }
        let digest = Sha256::digest(url.as_bytes());
        let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
        let mirror = Arc::new(Mirror::open(url, &self.dir.join(name))?.with_egress(self.egress));
        mirrors.insert(url.to_string(), mirror.clone());
        Ok(mirror)
    }
}

/// A bare repository holding what was fetched from one URL.
pub struct Mirror {
    url: String,
    dir: PathBuf,
    egress: Egress,
    fetch_lock: Mutex<()>,
    fetches: AtomicU64,
}

impl Mirror {
    /// Opens (or makes) the bare mirror of `url` in `dir`.
    pub fn open(url: &str, dir: &Path) -> Result<Self, GitError> {
        if !dir.join("HEAD").is_file() {
            std::fs::create_dir_all(dir).map_err(|e| GitError::local(dir, e))?;
            gix::init_bare(dir).map_err(|e| GitError::remote(url, e))?;
        }
        Ok(Self {
            url: url.to_string(),
            dir: dir.to_path_buf(),
            egress: Egress::default(),
            fetch_lock: Mutex::new(()),
            fetches: AtomicU64::new(0),
        })
    }

    /// The same mirror, following HTTP redirects only where `egress` allows: under
    /// [`Egress::Public`] none are followed, since only the repository's own URL was
    /// checked and a redirect could lead to this machine.
    pub fn with_egress(mut self, egress: Egress) -> Self {
        self.egress = egress;
        self
    }

    /// The repository URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The mirror's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many fetches this mirror has made.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn repository(&self, access: &Access) -> Result<gix::Repository, GitError> {
        let mut overrides = access.config_overrides(&self.dir.join("fleet-access"))?;
        overrides.push("gitoxide.http.connectTimeout=15000".into());
        if self.egress == Egress::Public {
            overrides.push("http.followRedirects=false".into());
        }
        gix::open_opts(
            &self.dir,
            gix::open::Options::isolated().config_overrides(overrides),
        )
        .map_err(|e| GitError::from_gix(&self.url, &e))
    }

    /// Refs the remote advertises for `refspecs` (sources only), with the commits they
    /// point to, tags peeled. This is the cheap poll: no objects are transferred.
    pub fn ls_remote(
        &self,
        access: &Access,
        sources: &[String],
    ) -> Result<Vec<(String, String)>, GitError> {
        let repo = self.repository(access)?;
        let specs: Vec<String> = sources.iter().map(|s| format!("{s}:{s}")).collect();
        let remote = repo
            .remote_at(self.url.as_str())
            .map_err(|e| GitError::from_gix(&self.url, &e))?
            .with_refspecs(specs.iter().map(String::as_str), Direction::Fetch)
            .map_err(|e| GitError::from_gix(&self.url, &e))?;
        let connection = remote
            .connect(Direction::Fetch)
            .map_err(|e| GitError::from_gix(&self.url, &e))?
            .with_credentials(|action| access.credential_answer(action));
        let (ref_map, _) = connection
            .ref_map(gix::progress::Discard, Default::default())
            .map_err(|e| GitError::from_gix(&self.url, &e))?;
        let mut refs = Vec::new();
        for advertised in ref_map.remote_refs {
            let (name, target, peeled) = advertised.unpack();
            if let Some(id) = peeled.or(target) {
                refs.push((name.to_string(), id.to_string()));
            }
        }
        Ok(refs)
    }

    /// The commit `wanted` stands for now. A branch or tag costs one ref advertisement; a
    /// full commit id costs nothing; an abbreviated one is looked up after a full fetch.
    pub fn resolve(&self, access: &Access, wanted: &Wanted) -> Result<String, GitError> {
        if let Some(id) = wanted.as_commit_id() {
            if id.len() == 40 {
                return Ok(id.to_lowercase());
            }
        }
        let candidates = wanted.candidate_refs();
        let refs = self.ls_remote(access, &candidates)?;
        let found = candidates
            .iter()
            .find_map(|c| refs.iter().find(|(name, _)| name == c))
            .map(|(_, id)| id.clone());
        if let Some(commit) = found {
            return Ok(commit);
        }
        if let Some(prefix) = wanted.as_commit_id() {
            self.fetch_everything(access, u64::MAX)?;
            return self
                .local_commit(prefix)
                .ok_or_else(|| self.no_such(wanted));
        }
        Err(self.no_such(wanted))
    }

    fn no_such(&self, wanted: &Wanted) -> GitError {
        GitError::NoSuchRef {
            url: self.url.clone(),
            reference: wanted.name().to_string(),
        }
    }

    /// The full id of a commit the mirror already holds, by full or abbreviated id.
    fn local_commit(&self, id: &str) -> Option<String> {
        let repo = gix::open_opts(&self.dir, gix::open::Options::isolated()).ok()?;
        let object = repo.rev_parse_single(id).ok()?.object().ok()?;
        let commit = object.peel_to_commit().ok()?;
        Some(commit.id.to_string())
    }

    /// Makes sure `commit` (what `resolve` returned for `wanted`) is in the mirror: nothing
    /// is transferred when it already is (another GitRepo on the same URL fetched it);
    /// otherwise the ref is fetched at depth 1, and failing that, everything. A transfer
    /// larger than `max_bytes` is stopped.
    pub fn fetch(
        &self,
        access: &Access,
        wanted: &Wanted,
        commit: &str,
        max_bytes: u64,
    ) -> Result<(), GitError> {
        let _serialised = self
            .fetch_lock
            .lock()
            .map_err(|_| GitError::remote(&self.url, "mirror lock poisoned"))?;
        if self.local_commit(commit).is_some() {
            return Ok(());
        }
        let depth_one = NonZeroU32::MIN;
        let shallow_specs: Vec<String> = match wanted.as_commit_id() {
            Some(_) => vec![format!("+{commit}:refs/fleet/pinned/{commit}")],
            None => wanted
                .candidate_refs()
                .into_iter()
                .map(|r| format!("+{r}:refs/fleet/{}", r.trim_start_matches("refs/")))
                .collect(),
        };
        let shallow = self.transfer(
            access,
            &shallow_specs,
            Shallow::DepthAtRemote(depth_one),
            max_bytes,
        );
        if let Err(error @ GitError::Limit { .. }) = shallow {
            return Err(error);
        }
        if self.local_commit(commit).is_some() {
            return Ok(());
        }
        self.fetch_everything(access, max_bytes)?;
        match self.local_commit(commit) {
            Some(_) => Ok(()),
            None => Err(self.no_such(wanted)),
        }
    }

    /// Fetches every branch and tag with full history (for commits no ref points at).
    fn fetch_everything(&self, access: &Access, max_bytes: u64) -> Result<(), GitError> {
        let specs = [
            "+refs/heads/*:refs/fleet/heads/*".to_string(),
            "+refs/tags/*:refs/fleet/tags/*".to_string(),
        ];
        self.transfer(access, &specs, Shallow::undo(), max_bytes)
    }

    fn transfer(
        &self,
        access: &Access,
        specs: &[String],
        shallow: Shallow,
        max_bytes: u64,
    ) -> Result<(), GitError> {
        let repo = self.repository(access)?;
        let remote = repo
            .remote_at(self.url.as_str())
            .map_err(|e| GitError::from_gix(&self.url, &e))?
            .with_refspecs(specs.iter().map(String::as_str), Direction::Fetch)
            .map_err(|e| GitError::from_gix(&self.url, &e))?
            .with_fetch_tags(gix::remote::fetch::Tags::None);
        let interrupt = AtomicBool::new(false);
        let over_limit = AtomicBool::new(false);
        let done = AtomicBool::new(false);
        let pack_dir = self.dir.join("objects").join("pack");
        let before = dir_size(&pack_dir);
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let outcome = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if dir_size(&pack_dir).saturating_sub(before) > max_bytes {
                        over_limit.store(true, Ordering::Relaxed);
                        interrupt.store(true, Ordering::Relaxed);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            let result = (|| {
                let connection = remote
                    .connect(Direction::Fetch)
                    .map_err(|e| GitError::from_gix(&self.url, &e))?
                    .with_credentials(|action| access.credential_answer(action));
                connection
                    .prepare_fetch(gix::progress::Discard, Default::default())
                    .map_err(|e| GitError::from_gix(&self.url, &e))?
                    .with_shallow(shallow)
                    .receive(gix::progress::Discard, &interrupt)
                    .map_err(|e| GitError::from_gix(&self.url, &e))
            })();
            done.store(true, Ordering::Relaxed);
            result
        });
        // A fast transfer may end between two looks of the watcher: measure once more.
        let grown = dir_size(&pack_dir).saturating_sub(before);
        if over_limit.load(Ordering::Relaxed) || grown > max_bytes {
            return Err(GitError::Limit {
                url: self.url.clone(),
                message: format!(
                    "fetch stopped: the repository sends more than {} (the limit)",
                    super::human_bytes(max_bytes)
                ),
            });
        }
        outcome.map(|_| ())
    }
}

/// Total size of the files directly in `dir` (pack files, including ones being written).
fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
