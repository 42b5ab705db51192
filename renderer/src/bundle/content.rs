//! Output order and content addressing of rendered resources.

use serde_json::Value;
use sha2::{Digest, Sha256};

use fleet_files::ResId;
use fleet_helm::install_rank;

/// Sorts resources stably by Helm's install order; unknown kinds go last, by kind name.
pub fn helm_install_order(resources: &mut [Value]) {
    resources.sort_by_key(|object| {
        install_rank(
            object
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )
    });
}

/// The content id of a set of resources: `s-` and the sha256 of their canonical form
/// (keys sorted, documents sorted by group, kind, namespace and name). Formatting, key
/// order and document order in the source do not change it.
pub fn content_id(resources: &[Value]) -> String {
    digest_id(resources, None)
}

/// The content id of a Helm bundle's resources and release: as [`content_id`], with the
/// release (chart, values, hooks) hashed after the resources.
pub fn release_content_id(resources: &[Value], release: &fleet_api::HelmRelease) -> String {
    let release = serde_json::to_value(release).unwrap_or_default();
    digest_id(resources, Some(&release))
}

/// The content id of a render left to the agent: the sha256 of what it renders from.
pub fn member_render_id(render: &fleet_api::MemberRender) -> String {
    let render = serde_json::to_value(render).unwrap_or_default();
    digest_id(&[], Some(&render))
}

fn digest_id(resources: &[Value], release: Option<&Value>) -> String {
    let mut documents: Vec<(ResId, String)> = resources
        .iter()
        .map(|r| (ResId::of(r), canonical_json(r)))
        .collect();
    documents.sort_by(|(a, ja), (b, jb)| {
        (&a.group, &a.kind, &a.namespace, &a.name, ja).cmp(&(
            &b.group,
            &b.kind,
            &b.namespace,
            &b.name,
            jb,
        ))
    });
    let mut hasher = Sha256::new();
    for (_, json) in &documents {
        hasher.update(json.as_bytes());
        hasher.update(b"\n");
    }
    if let Some(release) = release {
        hasher.update(b"release\n");
        hasher.update(canonical_json(release).as_bytes());
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("s-{hex}")
}

fn canonical_json(value: &Value) -> String {
    serde_json::to_string(&fleet_files::sorted_keys(value)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_id_ignores_key_and_document_order() {
        let a =
            json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}});
        let a_reordered =
            json!({"data": {"y": "2", "x": "1"}, "metadata": {"name": "a"}, "kind": "ConfigMap"});
        let b = json!({"kind": "Service", "metadata": {"name": "b"}});
        assert_eq!(
            content_id(&[a.clone(), b.clone()]),
            content_id(&[b.clone(), a_reordered])
        );
        let changed = json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "2"}});
        assert_ne!(content_id(&[a, b.clone()]), content_id(&[changed, b]));
    }

    #[test]
    fn install_order_is_stable_within_a_kind() {
        let mut docs = vec![
            json!({"kind": "Deployment", "metadata": {"name": "z"}}),
            json!({"kind": "Widget"}),
            json!({"kind": "Service", "metadata": {"name": "s"}}),
            json!({"kind": "Deployment", "metadata": {"name": "a"}}),
            json!({"kind": "Namespace"}),
        ];
        helm_install_order(&mut docs);
        let kinds: Vec<String> = docs
            .iter()
            .map(|d| {
                format!(
                    "{}{}",
                    d["kind"].as_str().unwrap_or(""),
                    d["metadata"]["name"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "Namespace",
                "Services",
                "Deploymentz",
                "Deploymenta",
                "Widget"
            ]
        );
    }
}
