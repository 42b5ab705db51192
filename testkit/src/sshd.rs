//! OpenSSH's `sshd` on a loopback port, with a host key and one authorised client key made
//! for the test: Git over SSH as users of Fleet's `ssh-auth` Secrets use it.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::repos::{free_port, wait_for_port};

/// A running sshd; stopped on drop.
pub struct SshServer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// The user the client logs in as (the user running the test).
    pub user: String,
    /// A `known_hosts` line for the server.
    pub known_hosts: String,
    /// The authorised client's private key (OpenSSH format).
    pub client_key: String,
    /// A key the server does not know.
    pub stranger_key: String,
}

fn keygen(path: &Path) -> String {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("ssh-keygen: {e}"));
    assert!(status.success(), "ssh-keygen failed");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("key: {e}"))
}

impl SshServer {
    /// Starts sshd with its files under `dir` (it needs OpenSSH's server: Debian's
    /// `openssh-server`).
    pub fn start(dir: &Path) -> Self {
        let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .find(|p| Path::new(p).is_file())
            .unwrap_or_else(|| panic!("sshd is needed: apt-get install openssh-server"));
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir: {e}"));
        // sshd's privilege separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        keygen(&dir.join("host_key"));
        let client_key = keygen(&dir.join("client_key"));
        let stranger_key = keygen(&dir.join("stranger_key"));
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        std::fs::write(dir.join("authorized_keys"), read("client_key.pub"))
            .unwrap_or_else(|e| panic!("authorized_keys: {e}"));
        let port = free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nAuthorizedKeysFile {keys}\nPidFile {pid}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n",
            host = dir.join("host_key").display(),
            keys = dir.join("authorized_keys").display(),
            pid = dir.join("sshd.pid").display(),
        );
        std::fs::write(dir.join("sshd_config"), config)
            .unwrap_or_else(|e| panic!("sshd_config: {e}"));
        let child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("sshd starts: {e}"));
        wait_for_port(port);
        let host_public = read("host_key.pub");
        let mut parts = host_public.split_whitespace();
        let (kind, key) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "root".into());
        Self {
            child,
            port,
            user,
            known_hosts: format!("[127.0.0.1]:{port} {kind} {key}\n"),
            client_key,
            stranger_key,
        }
    }

    /// The `ssh://` URL of a repository at an absolute path.
    pub fn url(&self, path: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            self.user,
            self.port,
            path.display()
        )
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
