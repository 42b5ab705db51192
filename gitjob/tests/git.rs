//! Git through gix against real repositories: `file://` and `git daemon` on loopback.

use std::path::Path;
use std::process::{Child, Command};

use fleet_gitjob::git;

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    git(dir.path(), &["init", "-q"]);
    std::fs::create_dir_all(dir.path().join("app")).expect("dir");
    std::fs::write(dir.path().join("app/fleet.yaml"), "namespace: demo\n").expect("write");
    std::fs::write(
        dir.path().join("app/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
    )
    .expect("write");
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "first"]);
    git(dir.path(), &["tag", "v1"]);
    dir
}

/// `git daemon` forks the real server; its pid file names the process to stop.
struct Daemon(Child, std::path::PathBuf);

impl Drop for Daemon {
    fn drop(&mut self) {
        // The daemon is ours; it may already be gone.
        if let Ok(pid) = std::fs::read_to_string(&self.1) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(base: &Path) -> (Daemon, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let pid_file = base.with_extension("pid");
    let child = Command::new("git")
        .args([
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
        ])
        .arg(format!("--pid-file={}", pid_file.display()))
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", base.display()))
        .arg(base)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("git daemon starts");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (Daemon(child, pid_file), port)
}

#[test]
fn a_poll_sees_only_the_advertised_commit_and_a_checkout_brings_the_tree() {
    let repo = repository();
    let url = format!("file://{}", repo.path().display());
    let first = git(repo.path(), &["rev-parse", "HEAD"]);
    assert_eq!(git::resolve(&url, "main").expect("resolved"), first);
    assert_eq!(git::resolve(&url, "v1").expect("tag"), first);
    assert!(matches!(
        git::resolve(&url, "nope"),
        Err(git::GitError::NoSuchRef { .. })
    ));

    let work = tempfile::tempdir().expect("temp dir");
    let checked_out = git::checkout(&url, "main", &work.path().join("clone")).expect("checkout");
    assert_eq!(checked_out, first);
    let fleet_yaml =
        std::fs::read_to_string(work.path().join("clone/app/fleet.yaml")).expect("file");
    assert_eq!(fleet_yaml, "namespace: demo\n");

    std::fs::write(
        repo.path().join("app/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n",
    )
    .expect("write");
    git(repo.path(), &["commit", "-qam", "second"]);
    let second = git(repo.path(), &["rev-parse", "HEAD"]);
    assert_ne!(first, second);
    assert_eq!(
        git::resolve(&url, "main").expect("moved"),
        second,
        "the poll sees the new commit"
    );
}

#[test]
fn git_daemon_serves_refs_and_shallow_checkouts() {
    let base = tempfile::tempdir().expect("temp dir");
    let repo = repository();
    std::fs::rename(repo.path(), base.path().join("fleet-examples")).expect("moved");
    let (_daemon, port) = serve(base.path());
    let url = format!("git://127.0.0.1:{port}/fleet-examples");
    let refs = git::ls_remote(&url).expect("advertised");
    assert!(
        refs.iter().any(|(name, _)| name == "refs/heads/main"),
        "{refs:?}"
    );
    assert!(
        refs.iter().any(|(name, _)| name == "refs/tags/v1"),
        "{refs:?}"
    );
    let work = tempfile::tempdir().expect("temp dir");
    let commit = git::checkout(&url, "main", &work.path().join("clone")).expect("checkout");
    assert_eq!(commit, git::resolve(&url, "main").expect("resolved"));
    assert!(work.path().join("clone/app/cm.yaml").is_file());
    let shallow = git(
        &work.path().join("clone"),
        &["rev-parse", "--is-shallow-repository"],
    );
    assert_eq!(shallow, "true");

    let error =
        git::ls_remote(&format!("git://127.0.0.1:{port}/missing")).expect_err("no such repository");
    assert!(error.to_string().contains("/missing"), "{error}");
}
