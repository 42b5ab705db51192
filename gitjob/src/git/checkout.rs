//! A whole checkout: a commit's tree and, recursively, the trees of its submodules, each
//! fetched through its own mirror with the parent's access.

use std::path::Path;

use super::extract::{Extracted, Gitlink};
use super::{extract, Access, GitError, Limits, MirrorCache, Wanted};

/// How deep submodules of submodules are followed.
pub const MAX_SUBMODULE_DEPTH: usize = 4;

/// Writes `commit` of `access.url` into `dest` with its submodules (whose URLs come from
/// `.gitmodules`; relative ones are resolved against the parent's URL). Every tree is held
/// to `limits` and every fetch to `max_fetch_bytes`.
pub fn checkout(
    mirrors: &MirrorCache,
    access: &Access,
    commit: &str,
    dest: &Path,
    limits: Limits,
    max_fetch_bytes: u64,
) -> Result<Extracted, GitError> {
    let top = mirrors.mirror(&access.url)?;
    let mut extracted = extract(&top, commit, dest, limits)?;
    let mut pending: Vec<(Access, std::path::PathBuf, Vec<Gitlink>, usize)> = vec![(
        access.clone(),
        dest.to_path_buf(),
        std::mem::take(&mut extracted.gitlinks),
        1,
    )];
    while let Some((parent, root, gitlinks, depth)) = pending.pop() {
        if gitlinks.is_empty() {
            continue;
        }
        let urls = submodule_urls(&root, &parent.url)?;
        for link in gitlinks {
            let Some(url) = urls
                .iter()
                .find(|(path, _)| *path == relative(&root, &link.dir))
            else {
                return Err(GitError::UnsafePath {
                    url: parent.url.clone(),
                    path: link.path,
                    reason: "a submodule that .gitmodules does not name".into(),
                });
            };
            if depth > MAX_SUBMODULE_DEPTH {
                return Err(GitError::Limit {
                    url: url.1.clone(),
                    message: format!("submodules nest deeper than {MAX_SUBMODULE_DEPTH}"),
                });
            }
            let child = Access {
                url: url.1.clone(),
                ..parent.clone()
            };
            let mirror = mirrors.mirror(&child.url)?;
            let wanted = Wanted::Revision(link.commit.clone());
            mirror.fetch(&child, &wanted, &link.commit, max_fetch_bytes)?;
            let mut inner = extract(&mirror, &link.commit, &link.dir, limits)?;
            extracted.files += inner.files;
            extracted.bytes += inner.bytes;
            extracted.skipped.append(&mut inner.skipped);
            pending.push((child, link.dir.clone(), inner.gitlinks, depth + 1));
        }
    }
    Ok(extracted)
}

fn relative(root: &Path, dir: &Path) -> String {
    dir.strip_prefix(root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `(path, url)` of each submodule in `root/.gitmodules`, URLs resolved and checked.
fn submodule_urls(root: &Path, parent_url: &str) -> Result<Vec<(String, String)>, GitError> {
    let path = root.join(".gitmodules");
    let text = std::fs::read_to_string(&path).map_err(|e| GitError::local(&path, e))?;
    let config: gix::config::File = text.parse().map_err(|e| GitError::UnsafePath {
        url: parent_url.to_string(),
        path: ".gitmodules".into(),
        reason: format!("unreadable: {e}"),
    })?;
    let mut out = Vec::new();
    for section in config.sections_by_name("submodule").into_iter().flatten() {
        let (Some(sub_path), Some(url)) = (section.value("path"), section.value("url")) else {
            continue;
        };
        let url = resolve_url(parent_url, &url.to_string())?;
        out.push((sub_path.to_string().trim_matches('/').to_string(), url));
    }
    Ok(out)
}

/// A submodule URL made absolute against its parent's, and refused when it could turn a
/// fetch into something else: an option (`-...`), or a local path or `file://` URL under
/// a parent that is not local itself.
pub fn resolve_url(parent: &str, url: &str) -> Result<String, GitError> {
    let refuse = |reason: &str| GitError::UnsafePath {
        url: parent.to_string(),
        path: ".gitmodules".into(),
        reason: format!("submodule URL `{url}` {reason}"),
    };
    if url.starts_with('-') {
        return Err(refuse("looks like an option"));
    }
    let resolved = if url.starts_with("./") || url.starts_with("../") {
        let mut base = parent.trim_end_matches('/').to_string();
        let mut rest = url;
        loop {
            if let Some(r) = rest.strip_prefix("./") {
                rest = r;
            } else if let Some(r) = rest.strip_prefix("../") {
                let cut = base
                    .rfind(['/', ':'])
                    .ok_or_else(|| refuse("climbs above the host"))?;
                base.truncate(cut);
                rest = r;
            } else {
                break;
            }
        }
        let separator = if base.ends_with(':') { "" } else { "/" };
        format!("{base}{separator}{rest}")
    } else {
        url.to_string()
    };
    let local = |u: &str| u.starts_with("file://") || u.starts_with('/');
    if local(&resolved) && !local(parent) {
        return Err(refuse("points at this machine's files"));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::resolve_url;

    #[test]
    fn relative_submodule_urls_resolve_against_the_parent() {
        let ok = |parent: &str, url: &str| resolve_url(parent, url).expect(url);
        assert_eq!(
            ok("https://h/org/app.git", "../lib.git"),
            "https://h/org/lib.git"
        );
        assert_eq!(ok("git://h:9/app", "./sub"), "git://h:9/app/sub");
        assert_eq!(ok("git@h:org/app.git", "../lib.git"), "git@h:org/lib.git");
        assert_eq!(ok("https://h/org/app", "https://x/y"), "https://x/y");
        assert!(resolve_url("https://h/org/app", "file:///etc/repo").is_err());
        assert!(resolve_url("https://h/org/app", "/srv/repo").is_err());
        assert!(resolve_url("https://h/app", "-uhack").is_err());
        assert_eq!(ok("file:///srv/app", "../lib"), "file:///srv/lib");
    }
}
