//! Files only their owner may read: keys, tokens, kubeconfigs.

use std::path::Path;

/// Writes `bytes` to `path`, readable and writable by this user only (mode 0600).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    std::io::Write::write_all(&mut file, bytes)
}

/// Makes an existing file readable and writable by this user only (mode 0600), and creates
/// it empty with that mode when it does not exist.
pub fn restrict(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// Creates a directory (and its parents) that only this user may enter (mode 0700), or
/// narrows an existing one to that.
pub fn private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_the_owner_may_read_it() {
        let dir = std::env::temp_dir().join(format!("fleet-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("key");
        super::write(&path, b"one").expect("written");
        super::write(&path, b"two").expect("rewritten");
        assert_eq!(std::fs::read(&path).expect("read"), b"two");
        let mode = std::fs::metadata(&path)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).expect("cleaned");
    }
}
