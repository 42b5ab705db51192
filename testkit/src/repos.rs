//! Real Git repositories made with the `git` command, and `git daemon` serving them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Runs `git` in `dir` with a fixed identity; panics (this is test support) on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A non-bare repository on branch `main`, in a temporary directory of its own or in a
/// directory a [`GitDaemon`] serves.
pub struct TestRepo {
    dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl TestRepo {
    /// An empty repository in a temporary directory.
    pub fn new() -> Self {
        let temp = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        git(temp.path(), &["init", "-q"]);
        Self {
            dir: temp.path().to_path_buf(),
            _temp: Some(temp),
        }
    }

    /// An empty repository at `parent/name` (removed with `parent`).
    pub fn in_dir(parent: &Path, name: &str) -> Self {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
        git(&dir, &["init", "-q"]);
        Self { dir, _temp: None }
    }

    /// The work tree.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `file://` URL of the repository.
    pub fn url(&self) -> String {
        format!("file://{}", self.path().display())
    }

    /// Writes a file (making its directories).
    pub fn write(&self, rel: &str, content: &str) -> &Self {
        let path = self.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
        }
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {rel}: {e}"));
        self
    }

    /// Removes a file or directory.
    pub fn remove(&self, rel: &str) -> &Self {
        let path = self.path().join(rel);
        let _ = std::fs::remove_dir_all(&path);
        let _ = std::fs::remove_file(&path);
        self
    }

    /// Commits everything; returns the commit id.
    pub fn commit(&self, message: &str) -> String {
        git(self.path(), &["add", "-A"]);
        git(self.path(), &["commit", "-qm", message, "--allow-empty"]);
        git(self.path(), &["rev-parse", "HEAD"])
    }

    /// Runs git in the repository.
    pub fn git(&self, args: &[&str]) -> String {
        git(self.path(), args)
    }
}

impl Default for TestRepo {
    fn default() -> Self {
        Self::new()
    }
}

/// `git daemon` serving every repository under a directory; stopped on drop.
pub struct GitDaemon {
    child: Child,
    pid_file: PathBuf,
    daemon_pid: Option<String>,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
}

impl GitDaemon {
    /// Serves the repositories under `base` as `git://127.0.0.1:PORT/<dir name>`.
    pub fn start(base: &Path) -> Self {
        let port = free_port();
        let pid_file = base.join(format!(".git-daemon-{port}.pid"));
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
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("git daemon starts: {e}"));
        wait_for_port(port);
        // `git` runs the daemon as its child: remember the daemon's own pid now, while its
        // pid file exists (the directory may be gone by the time this is dropped).
        let daemon_pid = std::fs::read_to_string(&pid_file)
            .ok()
            .map(|p| p.trim().to_string());
        Self {
            child,
            pid_file,
            daemon_pid,
            port,
        }
    }

    /// The URL of repository directory `name` under the base.
    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        if let Some(pid) = &self.daemon_pid {
            let _ = Command::new("kill").arg(pid).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.pid_file);
    }
}

/// An address on 127.0.0.1 free right now (the port the kernel gave a socket just closed).
pub fn free_address() -> std::io::Result<std::net::SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr())
}

/// A port free on 127.0.0.1 right now; for tests, which panic when there is none.
pub fn free_port() -> u16 {
    free_address()
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("a free port: {e}"))
}

/// Waits until something listens on `port` (127.0.0.1).
pub fn wait_for_port(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("nothing listens on port {port}");
}
