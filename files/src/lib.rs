//! A repository's files as the renderer and its engines read them: a [`RepoRoot`] that
//! no path may leave, YAML streams read as JSON values with errors that name the file and
//! line ([`yaml`]), and the identity of the Kubernetes objects in them ([`ResId`]).
//!
//! ```
//! use fleet_files::{yaml, RepoRoot};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("cm.yaml"), "kind: ConfigMap\nmetadata:\n  name: a\n")?;
//! let root = RepoRoot::new(dir.path())?;
//! let text = root.read_to_string(&root.path().join("cm.yaml"))?;
//! let objects = yaml::parse_documents(&text, "cm.yaml")?;
//! assert_eq!(fleet_files::ResId::of(&objects[0]).name, "a");
//!
//! let error = root.resolve(root.path(), "../outside.yaml", root.path()).unwrap_err();
//! assert!(error.to_string().contains("outside.yaml"));
//! # Ok(())
//! # }
//! ```

mod error;
mod resource;
mod root;
pub mod yaml;

pub use error::{Error, Location, Result};
pub use resource::{is_cluster_scoped, object_at, set_metadata, sorted_keys, str_at, ResId};
pub use root::{lexical_join, RepoRoot};
