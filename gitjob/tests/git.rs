//! Git through gix against real servers: `file://`, `git daemon`, and `git http-backend`
//! over HTTP and HTTPS with basic auth; checkouts that refuse what could escape them.

use fleet_gitjob::git::{extract, Access, Credentials, GitError, Limits, Mirror, Wanted};
use fleet_testkit::{git, GitDaemon, GitHttpServer, TestRepo};

fn sample() -> TestRepo {
    let repo = TestRepo::new();
    repo.write("app/fleet.yaml", "namespace: demo\n").write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
    );
    repo.commit("first");
    repo.git(&["tag", "v1"]);
    repo
}

/// The sample repository cloned bare as `base/app.git`, with its head commit.
fn served_sample(base: &std::path::Path) -> (TestRepo, String) {
    let repo = sample();
    let head = repo.git(&["rev-parse", "HEAD"]);
    git(base, &["clone", "-q", "--bare", &repo.url(), "app.git"]);
    (repo, head)
}

fn mirror(url: &str) -> (tempfile::TempDir, Mirror) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mirror = Mirror::open(url, &dir.path().join("m")).expect("mirror");
    (dir, mirror)
}

fn branch(name: &str) -> Wanted {
    Wanted::Branch(name.into())
}

#[test]
fn branches_tags_and_commits_resolve_and_check_out_over_git_daemon() {
    let base = tempfile::tempdir().expect("temp dir");
    let repo = sample();
    let first = repo.git(&["rev-parse", "HEAD"]);
    let served = base.path().join("app.git");
    git(
        base.path(),
        &["clone", "-q", "--bare", &repo.url(), "app.git"],
    );
    let daemon = GitDaemon::start(base.path());
    let url = daemon.url("app.git");
    let access = Access::public(&url);
    let (work, mirror) = mirror(&url);

    assert_eq!(
        mirror.resolve(&access, &branch("main")).expect("main"),
        first
    );
    let tag = Wanted::Revision("v1".into());
    assert_eq!(mirror.resolve(&access, &tag).expect("tag"), first);
    assert!(matches!(
        mirror.resolve(&access, &branch("nope")),
        Err(GitError::NoSuchRef { .. })
    ));

    mirror
        .fetch(&access, &branch("main"), &first, u64::MAX)
        .expect("fetch");
    assert!(mirror.dir().join("shallow").is_file(), "fetched at depth 1");
    let tree = work.path().join("tree");
    let extracted = extract(&mirror, &first, &tree, Limits::default()).expect("extract");
    assert_eq!(extracted.files, 2);
    assert_eq!(
        std::fs::read_to_string(tree.join("app/fleet.yaml")).expect("file"),
        "namespace: demo\n"
    );

    // A new commit is seen by the next poll, and fetching the same commit again transfers
    // nothing (a second GitRepo on the same URL).
    repo.write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n",
    );
    let second = repo.commit("second");
    git(&served, &["fetch", "-q", &repo.url(), "+main:main"]);
    assert_eq!(
        mirror.resolve(&access, &branch("main")).expect("moved"),
        second
    );
    mirror
        .fetch(&access, &branch("main"), &second, u64::MAX)
        .expect("fetch");
    mirror
        .fetch(&access, &branch("main"), &second, u64::MAX)
        .expect("again");
    assert_eq!(mirror.fetches(), 2, "one transfer per new commit");

    // A commit no ref points at, by abbreviated id: found after a full fetch.
    let pinned = Wanted::Revision(first[..10].to_string());
    assert_eq!(
        mirror.resolve(&access, &pinned).expect("abbreviated"),
        first
    );
    let full = Wanted::Revision(first.clone());
    assert_eq!(mirror.resolve(&access, &full).expect("full id"), first);
    mirror
        .fetch(&access, &full, &first, u64::MAX)
        .expect("pinned fetch");
}

#[test]
fn smart_http_with_basic_auth_and_a_private_ca() {
    let base = tempfile::tempdir().expect("temp dir");
    let (_repo, head) = served_sample(base.path());
    let tls = base.path().join("tls");
    let server = GitHttpServer::start(base.path(), Some(&tls), Some(("fleet", "s3cret")));
    let url = format!("{}/app.git", server.url);
    let ca = server.ca_pem.clone().expect("a CA").into_bytes();
    let (_work, mirror) = mirror(&url);
    let with = |credentials: Option<Credentials>, ca: Option<Vec<u8>>, insecure: bool| Access {
        url: url.clone(),
        credentials,
        ca_bundle: ca,
        insecure_skip_tls_verify: insecure,
        skip_host_key_check: false,
    };
    let good = Some(Credentials::Basic {
        username: "fleet".into(),
        password: "s3cret".into(),
    });
    let wrong = Some(Credentials::Basic {
        username: "fleet".into(),
        password: "guess".into(),
    });

    let resolved = mirror.resolve(
        &with(good.clone(), Some(ca.clone()), false),
        &branch("main"),
    );
    assert_eq!(resolved.expect("authorised"), head);
    let access = with(good.clone(), Some(ca.clone()), false);
    mirror
        .fetch(&access, &branch("main"), &head, u64::MAX)
        .expect("fetch over HTTPS");

    for (what, access) in [
        ("no credentials", with(None, Some(ca.clone()), false)),
        ("wrong password", with(wrong, Some(ca.clone()), false)),
    ] {
        match mirror.resolve(&access, &branch("main")) {
            Err(GitError::Auth { .. }) => {}
            other => panic!("{what}: expected an authentication error, got {other:?}"),
        }
    }
    // The system's CAs do not know ours: refused, unless verification is switched off.
    let untrusted = mirror.resolve(&with(good.clone(), None, false), &branch("main"));
    assert!(
        matches!(untrusted, Err(GitError::Remote { .. })),
        "{untrusted:?}"
    );
    let insecure = mirror.resolve(&with(good, None, true), &branch("main"));
    assert_eq!(insecure.expect("insecureSkipTLSVerify"), head);
    assert!(server.requests() > 0);
}

#[test]
fn plain_http_without_credentials() {
    let base = tempfile::tempdir().expect("temp dir");
    let (_repo, head) = served_sample(base.path());
    let server = GitHttpServer::start(base.path(), None, None);
    let url = format!("{}/app.git", server.url);
    let (_work, mirror) = mirror(&url);
    let access = Access::public(&url);
    assert_eq!(
        mirror.resolve(&access, &branch("main")).expect("main"),
        head
    );
    mirror
        .fetch(&access, &branch("main"), &head, u64::MAX)
        .expect("fetch");
}

/// A commit on branch `evil` whose tree holds `name` as an entry (`git mktree` writes
/// what `git add` never would).
fn commit_with_entry(repo: &TestRepo, name: &str) -> String {
    let blob = repo.git(&["hash-object", "-w", "app/fleet.yaml"]);
    let listing = format!("100644 blob {blob}\t{name}\n");
    let tree = {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .arg("mktree")
            .current_dir(repo.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git mktree");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(listing.as_bytes())
            .expect("listing");
        let out = child.wait_with_output().expect("tree");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let commit = repo.git(&["commit-tree", &tree, "-m", "evil"]);
    repo.git(&["branch", "-f", "evil", &commit]);
    commit
}

#[test]
fn tree_entries_that_would_escape_are_refused() {
    let repo = sample();
    for name in ["..", ".git", ".GIT"] {
        let commit = commit_with_entry(&repo, name);
        let (work, mirror) = mirror(&repo.url());
        let access = Access::public(repo.url());
        mirror
            .fetch(&access, &branch("evil"), &commit, u64::MAX)
            .expect("fetch");
        let error = extract(
            &mirror,
            &commit,
            &work.path().join("tree"),
            Limits::default(),
        )
        .expect_err(name);
        assert!(
            matches!(&error, GitError::UnsafePath { path, .. } if path == name),
            "{name}: {error}"
        );
        assert!(!work.path().join(".git").exists());
    }
}

#[test]
fn symlinks_are_kept_inside_the_checkout_only() {
    let repo = sample();
    std::os::unix::fs::symlink("/etc/passwd", repo.path().join("app/passwd.yaml")).expect("link");
    std::os::unix::fs::symlink("../../..", repo.path().join("app/up")).expect("link");
    std::os::unix::fs::symlink("cm.yaml", repo.path().join("app/same.yaml")).expect("link");
    let head = repo.commit("links");
    let (work, mirror) = mirror(&repo.url());
    let access = Access::public(repo.url());
    mirror
        .fetch(&access, &branch("main"), &head, u64::MAX)
        .expect("fetch");
    let tree = work.path().join("tree");
    let extracted = extract(&mirror, &head, &tree, Limits::default()).expect("extract");
    assert!(
        !tree.join("app/passwd.yaml").exists(),
        "absolute link left out"
    );
    assert!(
        std::fs::symlink_metadata(tree.join("app/up")).is_err(),
        "upward link left out"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("app/same.yaml")).expect("inside link"),
        std::fs::read_to_string(tree.join("app/cm.yaml")).expect("file")
    );
    assert_eq!(extracted.skipped.len(), 2, "{:?}", extracted.skipped);
    assert!(extracted.skipped[0].contains("resolves outside the repository"));
}

#[test]
fn limits_stop_large_trees_and_transfers() {
    let repo = sample();
    for i in 0..30 {
        repo.write(&format!("many/f{i}.yaml"), &format!("i: {i}\n"));
    }
    // Incompressible bytes, so the pack is as large as the file.
    let noise = fleet_testkit::incompressible(400_000, 0x9e37_79b9_7f4a_7c15);
    repo.write("big/noise.txt", &noise);
    let head = repo.commit("large");
    let access = Access::public(repo.url());

    let (_work, small) = mirror(&repo.url());
    let stopped = small.fetch(&access, &branch("main"), &head, 64 * 1024);
    assert!(
        matches!(&stopped, Err(GitError::Limit { message, .. }) if message.contains("fetch stopped")),
        "{stopped:?}"
    );

    let (work, mirror) = mirror(&repo.url());
    mirror
        .fetch(&access, &branch("main"), &head, u64::MAX)
        .expect("fetch");
    let files = extract(
        &mirror,
        &head,
        &work.path().join("a"),
        Limits {
            max_files: 10,
            max_bytes: u64::MAX,
        },
    );
    assert!(
        matches!(&files, Err(GitError::Limit { message, .. }) if message.contains("more than 10 files")),
        "{files:?}"
    );
    let bytes = extract(
        &mirror,
        &head,
        &work.path().join("b"),
        Limits {
            max_files: 1000,
            max_bytes: 1024 * 1024 / 4,
        },
    );
    assert!(matches!(bytes, Err(GitError::Limit { .. })), "{bytes:?}");
}

#[test]
fn ssh_with_a_key_and_known_hosts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = fleet_testkit::SshServer::start(&dir.path().join("sshd"));
    let (_repo, head) = served_sample(dir.path());
    let url = server.url(&dir.path().join("app.git"));
    let (_work, mirror) = mirror(&url);
    let access = |key: &str, known_hosts: Option<&str>, skip: bool| Access {
        url: url.clone(),
        credentials: Some(Credentials::Ssh(fleet_gitjob::git::SshKey {
            private_key: key.to_string(),
            known_hosts: known_hosts.map(String::from),
        })),
        skip_host_key_check: skip,
        ..Access::default()
    };
    let good = access(&server.client_key, Some(&server.known_hosts), false);
    assert_eq!(
        mirror.resolve(&good, &branch("main")).expect("over SSH"),
        head
    );
    mirror
        .fetch(&good, &branch("main"), &head, u64::MAX)
        .expect("fetch over SSH");

    // Host keys are checked: an unknown host is refused unless checks are switched off.
    let unknown_host = mirror.resolve(&access(&server.client_key, None, false), &branch("main"));
    assert!(unknown_host.is_err(), "{unknown_host:?}");
    let skipped = mirror.resolve(&access(&server.client_key, None, true), &branch("main"));
    assert_eq!(skipped.expect("host key check skipped"), head);
    // A key the server does not know is an authentication failure.
    let stranger = mirror.resolve(
        &access(&server.stranger_key, Some(&server.known_hosts), false),
        &branch("main"),
    );
    assert!(
        matches!(stranger, Err(GitError::Auth { .. })),
        "{stranger:?}"
    );
}

#[test]
fn submodules_are_checked_out_through_their_own_mirrors() {
    let base = tempfile::tempdir().expect("temp dir");
    let lib = TestRepo::in_dir(base.path(), "lib");
    lib.write(
        "common/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n",
    );
    let lib_head = lib.commit("lib");
    let app = TestRepo::in_dir(base.path(), "app");
    app.write("app/fleet.yaml", "namespace: demo\n");
    // A relative URL, as .gitmodules usually holds for repositories on one host.
    app.git(&["submodule", "add", "-q", "../lib", "vendor/lib"]);
    let head = app.commit("with a submodule");
    let daemon = GitDaemon::start(base.path());
    let url = daemon.url("app");
    let access = Access::public(&url);
    let cache_dir = tempfile::tempdir().expect("temp dir");
    let mirrors = fleet_gitjob::git::MirrorCache::new(cache_dir.path());
    let top = mirrors.mirror(&url).expect("mirror");
    top.fetch(&access, &branch("main"), &head, u64::MAX)
        .expect("fetch");
    let tree = cache_dir.path().join("tree");
    let extracted =
        fleet_gitjob::git::checkout(&mirrors, &access, &head, &tree, Limits::default(), u64::MAX)
            .expect("checkout with submodules");
    assert_eq!(
        std::fs::read_to_string(tree.join("vendor/lib/common/cm.yaml")).expect("submodule file"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n"
    );
    assert!(extracted.gitlinks.is_empty());
    let lib_mirror = mirrors.mirror(&daemon.url("lib")).expect("lib mirror");
    assert_eq!(
        lib_mirror.fetches(),
        1,
        "the pinned commit {lib_head} fetched once"
    );
}

/// Answers every request with a redirect to the same path under `target`; returns its
/// base URL.
fn redirecting_to(target: &str) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let target = target.trim_end_matches('/').to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let path = first.split(' ').nth(1).unwrap_or("/").to_string();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let answer = format!(
                "HTTP/1.1 301 Moved Permanently\r\nLocation: {target}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = (&stream).write_all(answer.as_bytes());
        }
    });
    base
}

/// A mirror restricted to public targets follows no HTTP redirect (only the repository's
/// URL was checked; a redirect could lead to this machine), where an unrestricted one does.
#[test]
fn a_public_mirror_follows_no_redirect() {
    let base = tempfile::tempdir().expect("temp dir");
    let (_repo, head) = served_sample(base.path());
    let server = GitHttpServer::start(base.path(), None, None);
    let moved = format!("{}/app.git", redirecting_to(&server.url));
    let (_dir, open) = mirror(&moved);
    let refs = open
        .ls_remote(&Access::public(&moved), &["refs/heads/main".into()])
        .expect("an unrestricted mirror follows the redirect");
    assert!(
        refs.contains(&("refs/heads/main".to_string(), head)),
        "{refs:?}"
    );
    let (_dir, public) = mirror(&moved);
    let public = public.with_egress(fleet_charts::Egress::Public);
    let error = public
        .ls_remote(&Access::public(&moved), &["refs/heads/main".into()])
        .expect_err("a public mirror stops at the redirect");
    assert!(
        error.to_string().contains("Received HTTP status 301"),
        "{error}"
    );
}
