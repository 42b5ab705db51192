//! The marks Rancher Fleet's agent leaves on every object it deploys (from wrangler's
//! object sets), written the same way here so that tools and people looking for them find
//! them, and a cluster taken over from Fleet keeps them: the set's id as an annotation, its
//! SHA-1 as a label, and Helm's keep policy on CRDs unless the bundle deletes them.

use sha1::Digest as _;

/// The label holding the SHA-1 (hex) of the object set's id.
pub const HASH_LABEL: &str = "objectset.rio.cattle.io/hash";
/// The annotation holding the object set's id.
pub const ID_ANNOTATION: &str = "objectset.rio.cattle.io/id";

/// A deployment's object set: its id and the id's hash, computed once for all its objects.
pub struct ObjectSet {
    /// The id (the `objectset.rio.cattle.io/id` annotation).
    pub id: String,
    /// Its SHA-1 (the `objectset.rio.cattle.io/hash` label).
    pub hash: String,
}

impl ObjectSet {
    /// The object set of the deployment named `deployment`.
    pub fn of(deployment: &str) -> Self {
        let id = set_id(deployment);
        let hash = set_hash(&id);
        Self { id, hash }
    }
}

/// The object set id of a deployment named `deployment`, as Fleet's agent names it:
/// `default-NAME` (the agent's own bundle, `fleet-agent`, is `fleet-agent-bootstrap`),
/// kept under 64 characters as Fleet's `SafeConcatName` keeps it.
fn set_id(deployment: &str) -> String {
    if deployment == "fleet-agent" {
        return "fleet-agent-bootstrap".to_string();
    }
    safe_concat_name(&["default", deployment])
}

/// The value of the hash label for `set_id`.
fn set_hash(set_id: &str) -> String {
    hex(&sha1::Sha1::digest(set_id.as_bytes()))
}

/// `parts` joined with `-`; from 64 characters on, cut to 57 (56 when the 57th is not a
/// lowercase letter or digit) and ended with `-` and the first hex digits of the whole
/// name's SHA-256, to 63 characters.
fn safe_concat_name(parts: &[&str]) -> String {
    let full = parts.join("-");
    if full.len() < 64 {
        return full;
    }
    let digest = hex(&sha2::Sha256::digest(full.as_bytes()));
    let bytes = full.as_bytes();
    let keep = match bytes[56] {
        b'a'..=b'z' | b'0'..=b'9' => 57,
        _ => 56,
    };
    let head = String::from_utf8_lossy(&bytes[..keep]);
    format!("{head}-{}", &digest[..63 - keep - 1])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values checked by hand with Python's hashlib (`sha1(b"default-test-app")`) and the one
    /// Fleet's own integration test hard-codes (`integrationtests/agent/adoption_test.go`).
    #[test]
    fn ids_and_hashes_are_fleets() {
        assert_eq!(set_id("test-app"), "default-test-app");
        assert_eq!(
            set_hash("default-test-app"),
            "a8f0967b0582e8d75956dc572dec416fda66930c"
        );
        assert_eq!(
            set_hash(&set_id("remove-metadata")),
            "0f3e1d9d146fa8b290c0de403881184751430e59"
        );
        assert_eq!(set_id("fleet-agent"), "fleet-agent-bootstrap");
    }

    #[test]
    fn long_ids_are_cut_as_fleet_cuts_them() {
        let name = "a".repeat(70);
        let id = set_id(&name);
        assert_eq!(id.len(), 63);
        assert!(id.starts_with(&format!("default-{}", "a".repeat(49))));
        // A cut that would end on a dash keeps one character less.
        let dashed = format!("{}-{}", "b".repeat(48), "c".repeat(20));
        let id = set_id(&dashed);
        assert_eq!(id.len(), 63);
        assert_eq!(&id[..56], &format!("default-{}", "b".repeat(48)));
    }
}
