//! One key for the many spellings of a repository URL, so that a push webhook (which names
//! the repository by its web or clone URL) finds the GitRepos that follow it.

/// `host/path` in lower case, without scheme, user, port, `.git` suffix, slashes at either
/// end or Bitbucket Server's `scm/` prefix. `git@github.com:Org/App.git`,
/// `ssh://git@github.com:22/org/app` and `https://github.com/org/app/` give one key.
pub fn repo_key(url: &str) -> String {
    let url = url.trim();
    let (host, path) = match url.split_once("://") {
        Some((_, rest)) => match rest.split_once('/') {
            Some((authority, path)) => (authority, path),
            None => (rest, ""),
        },
        // scp-like: [user@]host:path
        None => match url.split_once(':') {
            Some((authority, path)) => (authority, path),
            None => ("", url),
        },
    };
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = host.split(':').next().unwrap_or(host);
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let path = path.strip_prefix("scm/").unwrap_or(path);
    let path = path.trim_end_matches('/');
    format!("{host}/{path}").to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::repo_key;

    #[test]
    fn ssh_https_and_scp_forms_meet() {
        let key = "github.com/org/app";
        for url in [
            "https://github.com/org/app",
            "https://github.com/Org/App.git",
            "http://github.com/org/app/",
            "git@github.com:org/app.git",
            "ssh://git@github.com/org/app.git",
            "ssh://git@github.com:22/org/app",
            "git://github.com/org/app",
            "https://user:token@github.com/org/app.git",
        ] {
            assert_eq!(repo_key(url), key, "{url}");
        }
        assert_eq!(
            repo_key("https://bitbucket.example.com/scm/proj/app.git"),
            repo_key("ssh://git@bitbucket.example.com:7999/proj/app.git")
        );
        assert_ne!(
            repo_key("https://github.com/org/app"),
            repo_key("https://github.com/org/app2")
        );
        assert_ne!(
            repo_key("https://github.com/org/app"),
            repo_key("https://gitlab.com/org/app")
        );
        assert_eq!(repo_key("file:///srv/git/app.git"), "/srv/git/app");
    }
}
