//! Writing a commit's tree into a plain directory, refusing what could escape it: names
//! such as `..`, `.git` or ones holding `/`, duplicate entries, and symlinks that resolve
//! outside the checkout. Files and bytes are counted against limits.

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::object::tree::EntryKind;

use super::{GitError, Mirror};

/// Bounds on what one checkout may write.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Files (blobs and symlinks) in the whole tree.
    pub max_files: usize,
    /// Bytes of file content in the whole tree.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_files: 50_000,
            max_bytes: 1 << 30,
        }
    }
}

/// What a checkout wrote, and what it left out.
#[derive(Debug, Default)]
pub struct Extracted {
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Entries left out, with the reason (symlinks leaving the checkout).
    pub skipped: Vec<String>,
    /// Submodule entries (gitlinks), not written: see [`super::checkout`].
    pub gitlinks: Vec<Gitlink>,
}

/// A submodule entry of a tree: the commit it pins and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gitlink {
    /// Its path in the tree being extracted.
    pub path: String,
    /// Where its tree is to be written.
    pub dir: PathBuf,
    /// The pinned commit.
    pub commit: String,
}

struct Entry {
    name: Vec<u8>,
    kind: EntryKind,
    id: gix::ObjectId,
}

/// Writes the tree of `commit` from `mirror` into `dest` (which must not exist yet).
pub fn extract(
    mirror: &Mirror,
    commit: &str,
    dest: &Path,
    limits: Limits,
) -> Result<Extracted, GitError> {
    let url = mirror.url().to_string();
    let remote = |e: &dyn std::fmt::Display| GitError::remote(&url, e);
    let repo =
        gix::open_opts(mirror.dir(), gix::open::Options::isolated()).map_err(|e| remote(&e))?;
    let id = gix::ObjectId::from_hex(commit.as_bytes()).map_err(|e| remote(&e))?;
    let tree = repo
        .find_commit(id)
        .map_err(|e| remote(&e))?
        .tree_id()
        .map_err(|e| remote(&e))?
        .detach();
    std::fs::create_dir(dest).map_err(|e| GitError::local(dest, e))?;
    let mut extracted = Extracted::default();
    let mut links: Vec<(PathBuf, String, Vec<u8>)> = Vec::new();
    let mut pending = vec![(tree, dest.to_path_buf(), String::new())];
    while let Some((tree_id, dir, prefix)) = pending.pop() {
        for entry in tree_entries(&repo, tree_id).map_err(|e| remote(&e))? {
            let display = format!("{prefix}{}", entry.name.as_bstr());
            check_name(&entry.name).map_err(|reason| GitError::UnsafePath {
                url: url.clone(),
                path: display.clone(),
                reason: reason.to_string(),
            })?;
            let path = dir.join(entry.name.to_path_lossy());
            match entry.kind {
                EntryKind::Tree => {
                    std::fs::create_dir(&path).map_err(|e| duplicate(&url, &display, e))?;
                    pending.push((entry.id, path, format!("{display}/")));
                }
                EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                    let blob = repo.find_blob(entry.id).map_err(|e| remote(&e))?;
                    count(&mut extracted, blob.data.len() as u64, limits, &url)?;
                    if entry.kind == EntryKind::Link {
                        links.push((path, display, blob.data.clone()));
                    } else {
                        write_file(&path, &blob.data, entry.kind == EntryKind::BlobExecutable)
                            .map_err(|e| duplicate(&url, &display, e))?;
                    }
                }
                EntryKind::Commit => extracted.gitlinks.push(Gitlink {
                    path: display,
                    dir: path,
                    commit: entry.id.to_string(),
                }),
            }
        }
    }
    // Links last, so that no file or directory is ever written through one.
    let root = dest.canonicalize().map_err(|e| GitError::local(dest, e))?;
    for (path, display, target) in &links {
        std::os::unix::fs::symlink(target.to_path_lossy(), path)
            .map_err(|e| duplicate(&url, display, e))?;
    }
    for (path, display, target) in &links {
        let inside = path
            .canonicalize()
            .is_ok_and(|real| real.starts_with(&root));
        if !inside {
            std::fs::remove_file(path).map_err(|e| GitError::local(path, e))?;
            extracted.skipped.push(format!(
                "{display}: symlink to `{}` resolves outside the repository; left out",
                target.as_bstr()
            ));
        }
    }
    Ok(extracted)
}

fn tree_entries(
    repo: &gix::Repository,
    id: gix::ObjectId,
) -> Result<Vec<Entry>, Box<dyn std::error::Error + Send + Sync>> {
    let tree = repo.find_tree(id)?;
    let decoded = tree.decode()?;
    Ok(decoded
        .entries
        .iter()
        .map(|e| Entry {
            name: e.filename.to_vec(),
            kind: e.mode.kind(),
            id: e.oid.to_owned(),
        })
        .collect())
}

/// Why a tree entry's name may not be written, if it may not.
fn check_name(name: &[u8]) -> Result<(), &'static str> {
    if name.is_empty() || name == b"." || name == b".." {
        return Err("not a file name");
    }
    if name.contains(&b'/') || name.contains(&b'\\') || name.contains(&0) {
        return Err("a name may not hold a path separator or NUL");
    }
    if name.eq_ignore_ascii_case(b".git") {
        return Err("`.git` is reserved");
    }
    Ok(())
}

fn count(extracted: &mut Extracted, bytes: u64, limits: Limits, url: &str) -> Result<(), GitError> {
    extracted.files += 1;
    extracted.bytes += bytes;
    if extracted.files > limits.max_files {
        return Err(GitError::Limit {
            url: url.to_string(),
            message: format!(
                "the tree holds more than {} files (the limit)",
                limits.max_files
            ),
        });
    }
    if extracted.bytes > limits.max_bytes {
        return Err(GitError::Limit {
            url: url.to_string(),
            message: format!(
                "the tree holds more than {} of files (the limit)",
                super::human_bytes(limits.max_bytes)
            ),
        });
    }
    Ok(())
}

fn write_file(path: &Path, data: &[u8], executable: bool) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    std::io::Write::write_all(&mut file, data)
}

fn duplicate(url: &str, display: &str, error: std::io::Error) -> GitError {
    if error.kind() == std::io::ErrorKind::AlreadyExists {
        return GitError::UnsafePath {
            url: url.to_string(),
            path: display.to_string(),
            reason: "the tree names it twice".into(),
        };
    }
    GitError::Local {
        path: display.to_string(),
        source: error,
    }
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn refuses_names_that_leave_the_directory() {
        assert!(check_name(b"fleet.yaml").is_ok());
        assert!(check_name(b"..").is_err());
        assert!(check_name(b"a/b").is_err());
        assert!(check_name(b".GIT").is_err());
        assert!(check_name(b"").is_err());
    }
}
