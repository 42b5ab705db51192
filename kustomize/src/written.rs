//! What reading YAML into JSON values forgets and kustomize does not: which fields were
//! written with no value at all (`key:`, which kustomize drops where a strategic merge
//! patch walks, while it keeps `key: null`), and the text that metadata labels and
//! annotations were written as (kustomize hands some of them on as that text: `0755`,
//! `1.50`, `~`).

use std::sync::{Arc, OnceLock};

use serde_json::Value;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// One step of a path into an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A map's key.
    Key(String),
    /// A list's item.
    Index(usize),
}

/// What one document's text said beyond its value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Written {
    /// The map fields written with no value, by path.
    pub(crate) bare: Vec<Vec<Step>>,
    /// `metadata.labels` values written as plain scalars, with their text.
    pub(crate) labels: Vec<(String, String)>,
    /// `metadata.annotations` values written as plain scalars, with their text.
    pub(crate) annotations: Vec<(String, String)>,
}

impl Written {
    /// Takes the texts of the annotations a patch wrote, whose values the object now has.
    pub(crate) fn took_annotations_from(&mut self, patch: &Written) {
        for (key, text) in &patch.annotations {
            self.annotations.retain(|(k, _)| k != key);
            self.annotations.push((key.clone(), text.clone()));
        }
    }
}

/// The text of the value under `key`, as written when `texts` has it, else as JSON
/// writes it (a null is empty).
pub(crate) fn text_of(texts: &[(String, String)], key: &str, value: &Value) -> String {
    if let Some((_, text)) = texts.iter().find(|(k, _)| k == key) {
        return text.clone();
    }
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Reads the documents of a YAML stream (`*List` kinds expanded into their items) with
/// what each one's text said; expanded items, having no text of their own, said nothing.
pub(crate) fn documents(text: &str, file: &str) -> fleet_files::Result<Vec<(Value, Written)>> {
    let values = fleet_files::yaml::parse_documents(text, file)?;
    let written = aligned(read(text), values.len());
    Ok(values.into_iter().zip(written).collect())
}

/// As [`documents`], leaving what the text said to be read when first asked for: most
/// objects never need it.
pub(crate) fn documents_read_later(
    text: String,
    file: &str,
) -> fleet_files::Result<Vec<(Value, Later)>> {
    let values = fleet_files::yaml::parse_documents(&text, file)?;
    let source = Arc::new(Source {
        text,
        documents: values.len(),
        written: OnceLock::new(),
    });
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(document, value)| {
            let later = Later {
                source: Some((Arc::clone(&source), document)),
                written: None,
            };
            (value, later)
        })
        .collect())
}

/// One entry per document, or nothing at all when the texts and the values do not pair
/// up (a `*List` expanded into other than one item).
fn aligned(written: Vec<Written>, documents: usize) -> impl Iterator<Item = Written> {
    let written = if written.len() == documents {
        written
    } else {
        Vec::new()
    };
    written
        .into_iter()
        .chain(std::iter::repeat_with(Written::default))
        .take(documents)
}

/// A file's text, kept to be read again for what it said.
#[derive(Debug)]
pub(crate) struct Source {
    text: String,
    documents: usize,
    written: OnceLock<Vec<Written>>,
}

/// What an object's text said, read from its file the first time it is asked for (an
/// object made without a text said nothing).
#[derive(Debug, Clone, Default)]
pub(crate) struct Later {
    /// The file and which of its documents the object is.
    source: Option<(Arc<Source>, usize)>,
    written: Option<Written>,
}

impl Later {
    /// What the text said, read now if it was not yet.
    pub(crate) fn get(&mut self) -> &mut Written {
        let source = &self.source;
        self.written.get_or_insert_with(|| match source {
            Some((source, document)) => source
                .written
                .get_or_init(|| aligned(read(&source.text), source.documents).collect())
                .get(*document)
                .cloned()
                .unwrap_or_default(),
            None => Written::default(),
        })
    }
}

/// A collection being read, and where in it the reader is.
enum Frame {
    Map { key: Option<String> },
    List { next: usize },
}

/// Reads what the text of each document of a YAML stream said, one entry per document
/// that is not empty (as the values are read). A text YAML refuses gives nothing: the
/// value reader reports it.
pub(crate) fn read(text: &str) -> Vec<Written> {
    let mut parser = Parser::new_from_str(text);
    let mut documents = Vec::new();
    let mut current = Written::default();
    let mut stack: Vec<(Option<Step>, Frame)> = Vec::new();
    let mut empty_document = true;
    while let Ok((event, _)) = parser.next_token() {
        match event {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                current = Written::default();
                empty_document = true;
            }
            Event::DocumentEnd => {
                if !empty_document {
                    documents.push(std::mem::take(&mut current));
                }
            }
            Event::Scalar(text, style, _, tag) => {
                let Some(step) = value_step(&mut stack, &text) else {
                    continue;
                };
                if stack.is_empty() {
                    empty_document = tag.is_none()
                        && style == TScalarStyle::Plain
                        && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL");
                    continue;
                }
                if style != TScalarStyle::Plain || tag.is_some() {
                    continue;
                }
                let path = path_to(&stack, step);
                if text.is_empty() && matches!(path.last(), Some(Step::Key(_))) {
                    current.bare.push(path.clone());
                }
                if let [Step::Key(m), Step::Key(field), Step::Key(key)] = path.as_slice() {
                    match (m.as_str(), field.as_str()) {
                        ("metadata", "labels") => current.labels.push((key.clone(), text)),
                        ("metadata", "annotations") => {
                            current.annotations.push((key.clone(), text))
                        }
                        _ => {}
                    }
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let step = value_step(&mut stack, "").flatten();
                empty_document = false;
                let frame = match event {
                    Event::MappingStart(..) => Frame::Map { key: None },
                    _ => Frame::List { next: 0 },
                };
                stack.push((step, frame));
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            Event::Alias(_) => {
                value_step(&mut stack, "");
                empty_document = false;
            }
            Event::StreamStart | Event::Nothing => {}
        }
    }
    documents
}

/// Moves the reader past one node. Returns where that node sits when it is a value (the
/// document's root has no step), or `None` when it was a map's key, which is kept.
fn value_step(stack: &mut [(Option<Step>, Frame)], key_text: &str) -> Option<Option<Step>> {
    match stack.last_mut() {
        None => Some(None),
        Some((_, Frame::List { next })) => {
            *next += 1;
            Some(Some(Step::Index(*next - 1)))
        }
        Some((_, Frame::Map { key })) => match key.take() {
            Some(key) => Some(Some(Step::Key(key))),
            None => {
                *key = Some(key_text.to_string());
                None
            }
        },
    }
}

fn path_to(stack: &[(Option<Step>, Frame)], last: Option<Step>) -> Vec<Step> {
    stack
        .iter()
        .filter_map(|(step, _)| step.clone())
        .chain(last)
        .collect()
}

/// A stand-in for a field written with no value, while a strategic merge patch walks the
/// object: the walk drops it where it goes and keeps every other null.
pub(crate) const BARE: &str = "\u{0}fleet-kustomize: a field written with no value\u{0}";

/// Whether `value` is the stand-in for a field written with no value.
pub(crate) fn is_bare(value: &Value) -> bool {
    value.as_str() == Some(BARE)
}

/// Puts the stand-in where the fields written with no value still are null.
pub(crate) fn mark_bare(value: &mut Value, bare: &[Vec<Step>]) {
    for path in bare {
        if let Some(slot) = at_mut(value, path).filter(|v| v.is_null()) {
            *slot = Value::String(BARE.to_string());
        }
    }
}

/// Turns the stand-ins the walk kept back into nulls, returning where they are now.
pub(crate) fn unmark_bare(value: &mut Value) -> Vec<Vec<Step>> {
    let mut found = Vec::new();
    unmark(value, &mut Vec::new(), &mut found);
    found
}

fn unmark(value: &mut Value, path: &mut Vec<Step>, found: &mut Vec<Vec<Step>>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                path.push(Step::Key(key.clone()));
                if is_bare(item) {
                    *item = Value::Null;
                    found.push(path.clone());
                } else {
                    unmark(item, path, found);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                path.push(Step::Index(index));
                unmark(item, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |value, step| match step {
        Step::Key(key) => value.get_mut(key.as_str()),
        Step::Index(index) => value.get_mut(*index),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Step {
        Step::Key(k.to_string())
    }

    #[test]
    fn bare_fields_and_metadata_texts_are_read_per_document() {
        let text = "---\n---\nkind: A\nmetadata:\n  annotations: {mode: 0755, e: , q: \"5\"}\n  \
                    labels:\n    f: 1.50\nspec:\n  empty:\n  nulled: null\n  list:\n  - \n  - a:\n---\nnull\n...\n---\nkind: B\n";
        let documents = read(text);
        assert_eq!(documents.len(), 2);
        let first = &documents[0];
        assert_eq!(
            first.bare,
            vec![
                vec![key("metadata"), key("annotations"), key("e")],
                vec![key("spec"), key("empty")],
                vec![key("spec"), key("list"), Step::Index(1), key("a")],
            ]
        );
        assert_eq!(
            first.annotations,
            vec![("mode".into(), "0755".into()), ("e".into(), String::new())]
        );
        assert_eq!(first.labels, vec![("f".into(), "1.50".into())]);
        assert_eq!(documents[1], Written::default());
    }

    #[test]
    fn the_stand_in_goes_where_nulls_are_and_comes_back_out() {
        let mut value = serde_json::json!({"a": null, "b": {"c": 1}, "l": [{"d": null}]});
        let bare = vec![
            vec![key("a")],
            vec![key("b"), key("c")],
            vec![key("l"), Step::Index(0), key("d")],
        ];
        mark_bare(&mut value, &bare);
        assert!(is_bare(&value["a"]) && is_bare(&value["l"][0]["d"]));
        assert_eq!(value["b"]["c"], 1, "only nulls are marked");
        let found = unmark_bare(&mut value);
        assert_eq!(found, vec![bare[0].clone(), bare[2].clone()]);
        assert!(value["a"].is_null());
    }
}
