//! Metadata-only answers: a client whose `Accept` says `as=PartialObjectMetadata` (or
//! `as=PartialObjectMetadataList` for a list) gets each object as a `PartialObjectMetadata`
//! of `meta.k8s.io/v1`, its kind, apiVersion and `metadata` only, as kube-apiserver
//! answers client-go's metadata informers and kube-rs's `metadata_watcher`. The hub cuts
//! the metadata out of the stored text, and a client watching many objects for their
//! labels or versions reads a fraction of the bytes.

use serde_json::{json, Value};

/// The `apiVersion` of metadata-only objects and lists.
pub(crate) const API_VERSION: &str = "meta.k8s.io/v1";

/// The kind of one metadata-only object.
pub(crate) const KIND: &str = "PartialObjectMetadata";

/// The kind of a metadata-only list.
pub(crate) const LIST_KIND: &str = "PartialObjectMetadataList";

/// The text before an object's `metadata` in its metadata-only form.
pub(crate) const HEAD: &[u8] =
    b"{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":";

/// The text after it.
pub(crate) const TAIL: &[u8] = b"}";

/// Whether an `Accept` header asks for metadata only: its first media type names
/// `PartialObjectMetadata` or `PartialObjectMetadataList` (client-go puts protobuf first,
/// which the hub answers in JSON, as every other answer).
pub(crate) fn wanted(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        first.split(';').any(|parameter| {
            matches!(
                parameter.trim(),
                "as=PartialObjectMetadata" | "as=PartialObjectMetadataList"
            )
        })
    })
}

/// `metadata` as a metadata-only object.
pub(crate) fn object(metadata: Value) -> Value {
    json!({"kind": KIND, "apiVersion": API_VERSION, "metadata": metadata})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_media_type_says_whether_metadata_only_is_wanted() {
        let client_go = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;\
                         g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;\
                         g=meta.k8s.io;v=v1,application/json";
        assert!(wanted(client_go));
        assert!(wanted(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
        ));
        assert!(!wanted("application/json;as=Table;v=v1;g=meta.k8s.io"));
        assert!(!wanted(
            "application/json, application/json;as=PartialObjectMetadata"
        ));
        assert!(!wanted("application/json;as=PartialObjectMetadataTable"));
        assert!(!wanted(""));
    }

    #[test]
    fn the_head_and_tail_around_metadata_make_the_object() {
        let metadata = json!({"name": "a", "labels": {"l": "x"}});
        let text = [HEAD, metadata.to_string().as_bytes(), TAIL].concat();
        let parsed: Value = serde_json::from_slice(&text).expect("JSON");
        assert_eq!(parsed, object(metadata));
    }
}
