//! From rendered templates to a release, as Helm's `releaseutil` does it: each file split
//! into documents at `---`, each document read as YAML for its kind and annotations
//! (a document that is not YAML fails the render), hooks set apart by `helm.sh/hook`, and
//! both sorted in install order by kind.

use serde_json::Value as Json;

use super::goyaml::{parse_documents_as, Shape};

/// A resource of the release.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The template it came from: `chart/templates/x.yaml`.
    pub source: String,
    /// The document's text, trimmed.
    pub content: String,
    /// Its kind.
    pub kind: String,
}

/// A hook resource (`helm.sh/hook`).
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// The resource.
    pub manifest: Manifest,
    /// Its `metadata.name`.
    pub name: String,
    /// The events it runs on (`pre-install`, `post-upgrade`, `test`...).
    pub events: Vec<String>,
    /// `helm.sh/hook-weight` (0 when absent or not a number).
    pub weight: i64,
    /// `helm.sh/hook-delete-policy`, split.
    pub delete_policies: Vec<String>,
}

/// The hook events Helm knows; a document naming another is left out of the release.
const EVENTS: [&str; 10] = [
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// The head of a document as Helm reads it (`SimpleHead`); the rest is checked as YAML
/// but not kept.
const HEAD: Shape = Shape::Only(&[
    ("apiVersion", Shape::Str),
    ("kind", Shape::Str),
    (
        "metadata",
        Shape::Only(&[
            ("name", Shape::Str),
            ("annotations", Shape::Each(&Shape::Str)),
        ]),
    ),
]);

/// Helm 4's `SplitManifests`: the documents of a file, split wherever a line starts with
/// `---` (what follows on that line starts the next document), each with its leading
/// whitespace trimmed and the rest kept; empty ones are dropped.
pub fn split(text: &str) -> Vec<String> {
    let mut documents = Vec::new();
    let mut start = 0;
    let line_starts = std::iter::once(0).chain(
        memchr::memchr_iter(b'\n', text.as_bytes())
            .map(|at| at + 1)
            .filter(|&line| line < text.len()),
    );
    for line in line_starts {
        if text[line..].starts_with("---") {
            documents.push(&text[start..line]);
            start = line + 3;
        }
    }
    documents.push(&text[start..]);
    documents
        .into_iter()
        .map(str::trim_start)
        .filter(|d| !d.is_empty())
        .map(String::from)
        .collect()
}

/// What one file of rendered templates holds.
pub(crate) struct Sorted {
    /// Its resources.
    pub manifests: Vec<Manifest>,
    /// Its hooks.
    pub hooks: Vec<Hook>,
}

/// Above this many bytes of documents, heads are read on every core.
const PARALLEL_BYTES: usize = 256 * 1024;

/// The head of each document, or why it is not YAML; on several threads when there is
/// much to read.
fn read_heads(documents: &[(&String, String)]) -> Vec<Result<Json, String>> {
    let head = |(_, doc): &(&String, String)| {
        parse_documents_as(doc, HEAD)
            .map(|docs| docs.into_iter().next().unwrap_or(Json::Null))
            .map_err(|e| e.to_string())
    };
    crate::parallel::map_in_order(
        documents,
        |(_, doc)| doc.len(),
        PARALLEL_BYTES,
        head,
        |_| Err("a YAML reader failed".into()),
    )
}

/// Reads the documents of each rendered file (`(path, text)`, in path order) as Helm's
/// `SortManifests` does, then sorts resources and hooks by kind (stable).
pub(crate) fn sort(files: &[(String, String)]) -> Result<Sorted, String> {
    let mut sorted = Sorted {
        manifests: Vec::new(),
        hooks: Vec::new(),
    };
    let documents: Vec<(&String, String)> = files
        .iter()
        .filter(|(path, text)| {
            let base = path.rsplit('/').next().unwrap_or(path);
            !base.starts_with('_') && !text.trim().is_empty()
        })
        .flat_map(|(path, text)| split(text).into_iter().map(move |doc| (path, doc)))
        .collect();
    let heads = read_heads(&documents);
    for ((path, content), head) in documents.into_iter().zip(heads) {
        let head = head.map_err(|e| format!("YAML parse error on {path}: {e}"))?;
        let text_at = |pointer: &str| {
            head.pointer(pointer)
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let manifest = Manifest {
            source: path.clone(),
            kind: text_at("/kind"),
            content,
        };
        let Some(hook_types) = head.pointer("/metadata/annotations/helm.sh~1hook") else {
            sorted.manifests.push(manifest);
            continue;
        };
        let events: Vec<String> = hook_types
            .as_str()
            .unwrap_or_default()
            .split(',')
            .map(|t| t.trim().to_ascii_lowercase())
            .collect();
        if !events.iter().all(|e| EVENTS.contains(&e.as_str())) {
            // Helm skips a document with an unknown hook type.
            continue;
        }
        sorted.hooks.push(Hook {
            name: text_at("/metadata/name"),
            events,
            weight: text_at("/metadata/annotations/helm.sh~1hook-weight")
                .parse()
                .unwrap_or(0),
            delete_policies: text_at("/metadata/annotations/helm.sh~1hook-delete-policy")
                .split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect(),
            manifest,
        });
    }
    sorted.manifests.sort_by_key(|m| install_rank(&m.kind));
    sorted.hooks.sort_by_key(|h| install_rank(&h.manifest.kind));
    Ok(sorted)
}

/// The order Helm installs kinds in (`releaseutil.InstallOrder`).
const INSTALL_ORDER: [&str; 38] = [
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Where a kind goes in Helm's install order: known kinds by their place, unknown kinds
/// after them by name.
pub fn install_rank(kind: &str) -> (u8, usize, String) {
    match INSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(index) => (0, index, String::new()),
        None => (1, 0, kind.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_split_as_helm_4_splits_them() {
        // Each case checked with Helm 4.3.1's `helm template`: a line starting with `---`
        // separates, what follows on it starts the next document; leading whitespace is
        // trimmed, trailing kept; empty documents are dropped.
        assert_eq!(split("a: 1\n---\nb: 2\n"), ["a: 1\n", "b: 2\n"]);
        assert_eq!(split("a: 1\n---   \n\n---\nb: 2"), ["a: 1\n", "b: 2"]);
        assert_eq!(split("a: 1\n---# c\nb: 2\n"), ["a: 1\n", "# c\nb: 2\n"]);
        assert_eq!(split("a: 1   \n\n---\nc: 3"), ["a: 1   \n\n", "c: 3"]);
        assert_eq!(
            split("a: 1\n--- \n --- \nc: 3\n"),
            ["a: 1\n", "--- \nc: 3\n"]
        );
        assert_eq!(split("\n\n  a: 1\n--- \nb: 2\n---\n"), ["a: 1\n", "b: 2\n"]);
        assert_eq!(
            split("a: |\n  x\n  ---\n  y\n"),
            ["a: |\n  x\n  ---\n  y\n"]
        );
        assert!(split("\n---\n").is_empty());
    }

    #[test]
    fn hooks_are_set_apart_and_unknown_hooks_dropped() {
        let files = vec![(
            "c/templates/a.yaml".to_string(),
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n---\nkind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: nonsense\n---\nkind: ConfigMap\n".to_string(),
        )];
        let sorted = sort(&files).expect("sorts");
        assert_eq!(sorted.manifests.len(), 1);
        assert_eq!(sorted.hooks.len(), 1);
        assert_eq!(sorted.hooks[0].events, ["pre-install", "post-upgrade"]);
        assert_eq!(sorted.hooks[0].weight, -5);
        let broken = vec![("c/templates/b.yaml".to_string(), "a: [".to_string())];
        assert!(sort(&broken)
            .err()
            .is_some_and(|e| e.starts_with("YAML parse error on c/templates/b.yaml: ")));
    }
}
