//! Objects as the hub keeps them: the JSON text they go out as, not a tree of maps. A
//! tree (`serde_json::Value`) takes three to five times the memory of its text, and the
//! hub holds every object of every cluster; the text is also what GETs, lists, watch
//! lines and the database take, so most reads copy bytes instead of encoding. A write
//! parses the object it changes.

use bytes::Bytes;
use serde_json::Value;

use crate::status::{ApiError, ApiResult};

/// One version of an object, as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    text: Bytes,
    api_version: Box<str>,
}

impl Stored {
    /// `object`, written as JSON.
    pub fn new(object: &Value) -> Self {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Self {
            text: Bytes::from(serde_json::to_vec(object).unwrap_or_default()),
            api_version: api_version.into(),
        }
    }

    /// An object read from a database that an earlier version wrote, which kept each
    /// object's `metadata.managedFields` as the JSON text of the list: the list again.
    pub fn upgraded(mut object: Value) -> Value {
        let managed = object.pointer_mut("/metadata/managedFields");
        if let Some(field) = managed {
            if let Value::String(text) = field {
                if let Ok(list @ Value::Array(_)) = serde_json::from_str::<Value>(text) {
                    *field = list;
                }
            }
        }
        object
    }

    /// The JSON text.
    pub fn text(&self) -> &Bytes {
        &self.text
    }

    /// The `apiVersion` it is stored at.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// The object, parsed.
    pub fn value(&self) -> ApiResult<Value> {
        serde_json::from_slice(&self.text)
            .map_err(|e| ApiError::internal(format!("a stored object is not JSON: {e}")))
    }

    /// Whether the text holds `needle` anywhere: a cheap test before parsing, for
    /// searches whose answers must hold it (an owner's uid, a Secret's type).
    pub fn mentions(&self, needle: &str) -> bool {
        memchr::memmem::find(&self.text, needle.as_bytes()).is_some()
    }

    /// How many bytes it takes.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether the text is empty (never, for an object made by [`Stored::new`]).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_comes_back_as_it_went_in() {
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "managedFields": [{"manager": "m"}]},
            "data": {"k": "v"},
        });
        let stored = Stored::new(&object);
        assert_eq!(stored.api_version(), "v1");
        assert_eq!(stored.value().expect("JSON"), object);
        assert_eq!(stored.len(), stored.text().len());
        assert!(stored.mentions("\"manager\":\"m\""));
        assert!(!stored.mentions("other"));
    }

    #[test]
    fn managed_fields_kept_as_text_by_earlier_versions_become_the_list() {
        let old = json!({"metadata": {"name": "a",
            "managedFields": "[{\"manager\":\"m\",\"fieldsV1\":{\"f:data\":{}}}]"},
            "data": {"managedFields": "[\"a user's string\"]"}});
        let upgraded = Stored::upgraded(old.clone());
        assert_eq!(
            upgraded["metadata"]["managedFields"],
            json!([{"manager": "m", "fieldsV1": {"f:data": {}}}])
        );
        assert_eq!(upgraded["data"], old["data"], "only metadata is touched");
        let not_a_list = json!({"metadata": {"managedFields": "not json"}});
        assert_eq!(Stored::upgraded(not_a_list.clone()), not_a_list);
    }
}
