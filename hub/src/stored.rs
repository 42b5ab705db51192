//! Objects as the hub keeps them: the JSON text they go out as, not a tree of maps. A
//! tree (`serde_json::Value`) takes three to five times the memory of its text, and the
//! hub holds every object of every cluster; the text is also what GETs, lists, watch
//! lines and the database take, so most reads copy bytes instead of encoding. A write
//! parses the object it changes.
//!
//! Each object also knows where its `metadata.managedFields` lie in the text, so that it
//! can go out without them, to clients that say they never read them, at the cost of
//! joining two slices; where its `metadata.labels` lie, so that a label selector reads
//! them alone; and where its `metadata` lies, so that a client asking for metadata only
//! (`PartialObjectMetadata`) gets it without the object being parsed.

use std::cell::RefCell;
use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use crate::status::{ApiError, ApiResult};

thread_local! {
    /// The buffer each thread writes objects into before copying them out.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The largest scratch buffer a thread keeps between objects.
const SCRATCH_KEPT: usize = 1 << 20;

/// One version of an object, as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    text: Bytes,
    api_version: Box<str>,
    /// The bytes of `metadata.managedFields` in `text`, with a comma beside them: what
    /// leaves valid JSON when cut out.
    managed_fields: Option<Range<u32>>,
    /// The bytes of the value of `metadata.labels` in `text`.
    labels: Option<Range<u32>>,
    /// The bytes of the value of `metadata` in `text`.
    metadata: Option<Range<u32>>,
}

/// Where members of `metadata` lie in an object's text.
#[derive(Default)]
struct Marks {
    managed_fields: Option<Range<u32>>,
    labels: Option<Range<u32>>,
    metadata: Option<Range<u32>>,
}

impl Stored {
    /// `object`, written as JSON.
    pub fn new(object: &Value) -> Self {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (text, marks) = SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            let marks = write(scratch, object).unwrap_or_else(|_| {
                scratch.clear();
                Marks::default()
            });
            // A copy of exactly its length: the hub keeps every object, and a buffer grown
            // by doubling is a third empty on average.
            let text = Bytes::copy_from_slice(scratch);
            if scratch.capacity() > SCRATCH_KEPT {
                *scratch = Vec::new();
            }
            (text, marks)
        });
        Self {
            text,
            api_version: api_version.into(),
            managed_fields: marks.managed_fields,
            labels: marks.labels,
            metadata: marks.metadata,
        }
    }

    /// The JSON text of `metadata.labels`, if the object has them.
    pub fn labels(&self) -> Option<&[u8]> {
        self.labels.as_ref().map(|range| self.slice(range))
    }

    fn slice(&self, range: &Range<u32>) -> &[u8] {
        let (start, end) = (range.start as usize, range.end as usize);
        self.text.get(start..end).unwrap_or_default()
    }

    /// The JSON text without `metadata.managedFields`, as the two slices around them (the
    /// second empty when there are none): what a list or a watch line copies.
    pub fn parts_without_managed_fields(&self) -> [&[u8]; 2] {
        match &self.managed_fields {
            Some(cut) => [
                self.slice(&(0..cut.start)),
                self.text.get(cut.end as usize..).unwrap_or_default(),
            ],
            None => [&self.text[..], &[]],
        }
    }

    /// The JSON text of `metadata` alone, as two slices to copy one after the other: around
    /// its managedFields when `without_managed_fields` (and it has them), else all of it
    /// and an empty one. `None` when the object has no `metadata` object.
    pub fn metadata_parts(&self, without_managed_fields: bool) -> Option<[&[u8]; 2]> {
        let metadata = self.metadata.as_ref()?;
        match &self.managed_fields {
            Some(cut) if without_managed_fields => Some([
                self.slice(&(metadata.start..cut.start)),
                self.slice(&(cut.end..metadata.end)),
            ]),
            _ => Some([self.slice(metadata), &[]]),
        }
    }

    /// The JSON text without `metadata.managedFields`, shared when it has none.
    pub fn without_managed_fields(&self) -> Bytes {
        if self.managed_fields.is_none() {
            return self.text.clone();
        }
        let [head, tail] = self.parts_without_managed_fields();
        let mut text = BytesMut::with_capacity(head.len() + tail.len());
        text.put_slice(head);
        text.put_slice(tail);
        text.freeze()
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
        crate::json::from_slice(&self.text)
            .map_err(|e| ApiError::internal(format!("a stored object is not JSON: {e}")))
    }

    /// Its `metadata.uid`, read from the text of `metadata` alone (an identity check on
    /// every request must not parse the whole object).
    pub fn uid(&self) -> Option<String> {
        /// The member of `metadata` read; the others are passed over.
        #[derive(serde::Deserialize)]
        struct Uid {
            uid: Option<String>,
        }
        let read = |text: &[u8]| serde_json::from_slice::<Uid>(text).ok();
        let parsed = match self.metadata_parts(true)? {
            [whole, []] => read(whole),
            [head, tail] => read(&[head, tail].concat()),
        };
        parsed?.uid
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

/// Writes `object` as compact JSON, exactly as `serde_json::to_writer` does; returns where
/// its `metadata.managedFields` member lies (with the comma that separates it from the
/// next member or the one before), and where the values of its `metadata.labels` and of
/// its `metadata` lie. An
/// object too large for the marks to count its bytes gets none.
fn write(out: &mut Vec<u8>, object: &Value) -> serde_json::Result<Marks> {
    let (Value::Object(map), Some(Value::Object(metadata))) = (object, object.get("metadata"))
    else {
        serde_json::to_writer(out, object)?;
        return Ok(Marks::default());
    };
    let mut marks = Marks::default();
    out.push(b'{');
    for (index, (key, value)) in map.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_key(out, key)?;
        if key == "metadata" {
            marks = write_metadata(out, metadata)?;
        } else {
            serde_json::to_writer(&mut *out, value)?;
        }
    }
    out.push(b'}');
    if u32::try_from(out.len()).is_err() {
        return Ok(Marks::default());
    }
    Ok(marks)
}

/// Writes `metadata`; returns where it and its members lie (see [`write`]).
fn write_metadata(out: &mut Vec<u8>, metadata: &Map<String, Value>) -> serde_json::Result<Marks> {
    let mut marks = Marks::default();
    let offset = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
    let metadata_start = out.len();
    out.push(b'{');
    for (index, (key, value)) in metadata.iter().enumerate() {
        let start = out.len();
        if index > 0 {
            out.push(b',');
        }
        write_key(out, key)?;
        let value_start = out.len();
        serde_json::to_writer(&mut *out, value)?;
        match key.as_str() {
            "managedFields" => {
                // The first member takes the comma after it, when another follows.
                let comma_after = usize::from(index == 0 && metadata.len() > 1);
                marks.managed_fields = Some(offset(start)..offset(out.len() + comma_after));
            }
            "labels" => marks.labels = Some(offset(value_start)..offset(out.len())),
            _ => {}
        }
    }
    out.push(b'}');
    marks.metadata = Some(offset(metadata_start)..offset(out.len()));
    Ok(marks)
}

fn write_key(out: &mut Vec<u8>, key: &str) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, key)?;
    out.push(b':');
    Ok(())
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
    fn the_text_is_what_serde_json_writes_and_its_marks_find_managed_fields_labels_and_metadata() {
        let managed = json!([{"manager": "m", "fieldsV1": {"f:data": {"f:k": {}}}}]);
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "managedFields": managed, "labels": {"l": "x"}},
                "data": {"managedFields": "a user's", "k": "v\"\n"}}),
            json!({"metadata": {"managedFields": managed, "name": "first"}, "data": {}}),
            json!({"metadata": {"name": "u", "managedFields": managed, "uid": "after"}}),
            json!({"metadata": {"uid": "before", "managedFields": managed}, "uid": "not it"}),
            json!({"metadata": {"name": "last", "managedFields": managed}}),
            json!({"kind": "K", "metadata": {"managedFields": managed}}),
            json!({"metadata": {"name": "none"}, "data": {"managedFields": "kept"}}),
            json!({"metadata": {"labels": {"only": "labels"}}, "data": {"labels": "a user's"}}),
            json!({"metadata": "not an object"}),
            json!(["not", "an", "object"]),
        ];
        for object in objects {
            let stored = Stored::new(&object);
            let expected = serde_json::to_vec(&object).expect("JSON");
            assert_eq!(stored.text()[..], expected[..], "{object}");
            let without: Value =
                serde_json::from_slice(&stored.without_managed_fields()).expect("still JSON");
            let mut wanted = object.clone();
            if let Some(metadata) = wanted.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("managedFields");
            }
            assert_eq!(without, wanted);
            let joined = |[head, tail]: [&[u8]; 2]| [head, tail].concat();
            let metadata = stored.metadata_parts(false).map(joined);
            let metadata = metadata.map(|text| serde_json::from_slice::<Value>(&text));
            let wanted_metadata = object.get("metadata").filter(|m| m.is_object());
            assert_eq!(
                metadata.transpose().expect("JSON").as_ref(),
                wanted_metadata
            );
            let trimmed = stored.metadata_parts(true).map(joined);
            let trimmed = trimmed.map(|text| serde_json::from_slice::<Value>(&text));
            assert_eq!(
                trimmed.transpose().expect("JSON").as_ref(),
                wanted.get("metadata").filter(|m| m.is_object()),
                "{object}"
            );
            let uid = object.pointer("/metadata/uid").and_then(Value::as_str);
            assert_eq!(stored.uid().as_deref(), uid, "{object}");
            let labels = stored.labels().map(serde_json::from_slice::<Value>);
            let wanted_labels = object.pointer("/metadata/labels").cloned();
            assert_eq!(labels.transpose().expect("JSON"), wanted_labels, "{object}");
        }
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
