//! What one BundleDeployment's status may hold, bounded so that no status nears etcd's
//! object limit however many objects its bundle has: the applied objects listed up to a
//! byte budget (the rest counted), at most ten not-ready and ten modified entries (a long
//! drift patch left out), and condition messages cut to a length. The full record of what
//! was applied stays in the member, in the release's manifest, which pruning reads.

use fleet_api::BundleDeploymentResource;
use serde_json::Value;

/// Bytes of JSON the listed applied objects may take.
pub const LISTED_RESOURCES_BYTES: usize = 24 * 1024;
/// Not-ready or modified entries listed.
pub const ENTRIES: usize = 10;
/// Bytes a not-ready summary may take.
pub const SUMMARY_BYTES: usize = 256;
/// Bytes a modified entry's patch may take; a longer one is left out.
pub const PATCH_BYTES: usize = 2 * 1024;
/// Bytes a condition message may take.
pub const MESSAGE_BYTES: usize = 1024;

/// The applied objects the status lists (in order, until the budget is spent) and how many
/// it leaves out.
pub fn listed(resources: &[BundleDeploymentResource]) -> (Vec<BundleDeploymentResource>, u64) {
    let mut spent = 0;
    let mut listed = Vec::new();
    for resource in resources {
        // Each entry's JSON: the four values, their keys and punctuation.
        spent += resource.api_version.len()
            + resource.kind.len()
            + resource.namespace.len()
            + resource.name.len()
            + 56;
        if spent > LISTED_RESOURCES_BYTES {
            break;
        }
        listed.push(resource.clone());
    }
    let omitted = (resources.len() - listed.len()) as u64;
    (listed, omitted)
}

/// The first [`ENTRIES`] not-ready summaries, each cut to [`SUMMARY_BYTES`].
pub fn summaries(not_ready: &[String]) -> Vec<String> {
    not_ready
        .iter()
        .take(ENTRIES)
        .map(|summary| cut(summary, SUMMARY_BYTES))
        .collect()
}

/// The first [`ENTRIES`] modified entries, without a patch longer than [`PATCH_BYTES`].
pub fn modified(modified: &[Value]) -> Vec<Value> {
    modified
        .iter()
        .take(ENTRIES)
        .map(|entry| {
            let mut entry = entry.clone();
            let long = entry["patch"]
                .as_str()
                .is_some_and(|p| p.len() > PATCH_BYTES);
            if let (true, Some(fields)) = (long, entry.as_object_mut()) {
                fields.remove("patch");
            }
            entry
        })
        .collect()
}

/// `parts` joined by `; ` within [`MESSAGE_BYTES`] bytes, ending `(and N more)` when some do
/// not fit; a first part too long alone is cut.
pub fn message(parts: &[String]) -> String {
    /// Room kept for the `; (and N more)` ending.
    const ENDING: usize = 24;
    let mut text = String::new();
    for (index, part) in parts.iter().enumerate() {
        let separator = if index == 0 { "" } else { "; " };
        let ending = if index + 1 == parts.len() { 0 } else { ENDING };
        if text.len() + separator.len() + part.len() + ending <= MESSAGE_BYTES {
            text.push_str(separator);
            text.push_str(part);
            continue;
        }
        let mut rest = parts.len() - index;
        if text.is_empty() {
            text = cut(part, MESSAGE_BYTES - ENDING);
            rest -= 1;
        }
        if rest > 0 {
            text.push_str(&format!("; (and {rest} more)"));
        }
        break;
    }
    text
}

/// `text` cut to at most `bytes`, on a character boundary, marked `…` when cut.
fn cut(text: &str, bytes: usize) -> String {
    if text.len() <= bytes {
        return text.to_string();
    }
    let mut end = bytes.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(index: usize) -> BundleDeploymentResource {
        BundleDeploymentResource {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "bench".into(),
            name: format!("settings-{index:05}"),
        }
    }

    #[test]
    fn a_large_set_is_listed_within_its_budget_and_the_rest_counted() {
        let small: Vec<_> = (0..20).map(resource).collect();
        assert_eq!(listed(&small), (small.clone(), 0));
        let large: Vec<_> = (0..5_000).map(resource).collect();
        let (shown, omitted) = listed(&large);
        assert_eq!(shown.len() as u64 + omitted, 5_000);
        assert_eq!(shown[..], large[..shown.len()]);
        // The estimate holds against the real encoding.
        let bytes = serde_json::to_string(&shown).expect("json").len();
        assert!(bytes <= LISTED_RESOURCES_BYTES, "{bytes}");
        assert!(bytes > LISTED_RESOURCES_BYTES * 3 / 4, "{bytes}");
    }

    #[test]
    fn entries_and_messages_are_bounded() {
        let many: Vec<String> = (0..500)
            .map(|i| format!("ConfigMap bench/settings-{i}: missing"))
            .collect();
        assert_eq!(summaries(&many).len(), ENTRIES);
        let joined = message(&many);
        assert!(joined.len() <= MESSAGE_BYTES, "{}", joined.len());
        assert!(joined.ends_with("more)"), "{joined}");
        assert!(joined.starts_with("ConfigMap bench/settings-0: missing; "));
        assert_eq!(message(&many[..2]), format!("{}; {}", many[0], many[1]));
        let long = "é".repeat(2_000);
        let one = message(std::slice::from_ref(&long));
        assert!(one.len() <= MESSAGE_BYTES, "{}", one.len());
        assert!(one.ends_with('…'), "{one}");
        let two = message(&[long.clone(), "b".into()]);
        assert!(two.ends_with("…; (and 1 more)"), "{two}");
        assert!(two.len() <= MESSAGE_BYTES, "{}", two.len());
        assert!(summaries(&[long])[0].len() <= SUMMARY_BYTES);
        let patched = vec![
            json!({"kind": "ConfigMap", "name": "a", "patch": "x".repeat(PATCH_BYTES + 1)}),
            json!({"kind": "ConfigMap", "name": "b", "patch": "{}"}),
        ];
        let kept = modified(&patched);
        assert!(kept[0].get("patch").is_none());
        assert_eq!(kept[1]["patch"], "{}");
    }
}
