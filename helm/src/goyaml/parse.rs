//! Reading YAML as `sigs.k8s.io/yaml` does: goyaml.v2's YAML 1.1 meaning of plain scalars,
//! anchors, aliases and merge keys (`<<`), later duplicate keys winning, then the JSON
//! conversion (keys become strings, timestamps stay text).

use serde_json::{Map, Number, Value as Json};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::resolve::{resolve, Resolved};
use crate::template::value::format_float32_g;

/// A YAML syntax error, or a value JSON cannot hold.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct YamlError {
    /// The 1-based line (0 when the error is about the whole text).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "error converting YAML to JSON: yaml: {}", self.message),
            line => write!(
                f,
                "error converting YAML to JSON: yaml: line {line}: {}",
                self.message
            ),
        }
    }
}

/// The largest YAML text read (values files, manifests): beyond it a clear error, not
/// minutes of parsing and gigabytes of memory.
pub(super) const MAX_TEXT_BYTES: usize = 32 * 1024 * 1024;

/// The most nodes a document may expand to through aliases (a billion laughs stops here).
const MAX_NODES: usize = 1_000_000;

/// The most bytes of scalars a document may expand to through aliases (one long anchor
/// aliased many times stops here).
const MAX_SCALAR_BYTES: usize = 2 * MAX_TEXT_BYTES;

/// A parsed node before conversion.
#[derive(Debug, Clone)]
enum Tree {
    Scalar {
        text: String,
        plain: bool,
        tag: Option<String>,
    },
    Seq(Vec<Tree>),
    /// Keys and values, in document order.
    Map(Vec<(Tree, Tree)>),
}

/// A collection being read: its items so far (a map's keys and values alternate) and its
/// anchor.
struct Frame {
    mapping: bool,
    items: Vec<Tree>,
    anchor: usize,
    /// What the collection is read as; an ignored one keeps no items.
    shape: Shape,
}

/// Builds trees from parser events.
struct Builder {
    /// What each document is read as.
    shape: Shape,
    documents: Vec<Tree>,
    stack: Vec<Frame>,
    anchors: std::collections::HashMap<usize, Tree>,
    nodes: usize,
    scalar_bytes: usize,
    error: Option<YamlError>,
    /// An alias named an anchor of an ignored part: the document must be read whole.
    needs_everything: bool,
}

/// Stands for an ignored node in its collection, keeping a map's keys and values paired.
const IGNORED: Tree = Tree::Seq(Vec::new());

impl Builder {
    fn new(shape: Shape) -> Self {
        Self {
            shape,
            documents: Vec::new(),
            stack: Vec::new(),
            anchors: std::collections::HashMap::new(),
            nodes: 0,
            scalar_bytes: 0,
            error: None,
            needs_everything: false,
        }
    }

    /// The shape of the node about to start: a map's value takes its key's field shape;
    /// keys and list items are read whole.
    fn next_shape(&self) -> Shape {
        match self.stack.last() {
            None => self.shape,
            Some(frame) if matches!(frame.shape, Shape::Ignored) => Shape::Ignored,
            Some(frame) if frame.mapping && frame.items.len() % 2 == 1 => {
                match frame.items.last() {
                    // A merge key's maps are read as the map they merge into.
                    Some(Tree::Scalar { text, .. }) if text == "<<" => frame.shape,
                    Some(Tree::Scalar { text, .. }) => frame.shape.field(text),
                    _ => Shape::Any,
                }
            }
            Some(frame) if frame.mapping => Shape::Any,
            Some(frame) => frame.shape.field(""),
        }
    }

    fn finish(&mut self, tree: Tree, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, tree.clone());
        }
        match self.stack.last_mut() {
            None => self.documents.push(tree),
            Some(frame) if matches!(frame.shape, Shape::Ignored) => {}
            Some(frame) => frame.items.push(tree),
        }
    }

    /// Counts a node about to be added (with everything under it), or records the error
    /// once the document has grown beyond its bounds; an alias is counted before its
    /// anchor is copied.
    fn count(&mut self, (nodes, bytes): (usize, usize), mark: Marker) -> bool {
        self.nodes += nodes;
        self.scalar_bytes += bytes;
        let message = if self.nodes > MAX_NODES {
            format!("document expands to more than {MAX_NODES} nodes")
        } else if self.scalar_bytes > MAX_SCALAR_BYTES {
            format!("document expands to more than {MAX_SCALAR_BYTES} bytes")
        } else {
            return true;
        };
        if self.error.is_none() {
            self.error = Some(YamlError {
                line: mark.line(),
                message,
            });
        }
        false
    }
}

/// How many nodes a tree holds and how many bytes its scalars.
fn size(tree: &Tree) -> (usize, usize) {
    match tree {
        Tree::Scalar { text, .. } => (1, text.len()),
        Tree::Seq(items) => items.iter().map(size).fold((1, 0), add),
        Tree::Map(entries) => entries
            .iter()
            .flat_map(|(k, v)| [size(k), size(v)])
            .fold((1, 0), add),
    }
}

fn add(a: (usize, usize), b: (usize, usize)) -> (usize, usize) {
    (a.0 + b.0, a.1 + b.1)
}

fn tag_name(tag: Option<Tag>) -> Option<String> {
    tag.map(|t| match t.handle.as_str() {
        "!!" | "tag:yaml.org,2002:" => format!("!!{}", t.suffix),
        handle => format!("{handle}{}", t.suffix),
    })
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                if matches!(self.next_shape(), Shape::Ignored) && anchor == 0 {
                    self.nodes += 1;
                    self.finish(IGNORED, 0);
                    return;
                }
                let tree = Tree::Scalar {
                    text,
                    plain: style == TScalarStyle::Plain,
                    tag: tag_name(tag),
                };
                if self.count(size(&tree), mark) {
                    self.finish(tree, anchor);
                }
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                let shape = match self.next_shape() {
                    // An anchored part may be used where it matters: keep it.
                    Shape::Ignored if anchor > 0 => Shape::Any,
                    shape => shape,
                };
                self.stack.push(Frame {
                    mapping: matches!(event, Event::MappingStart(..)),
                    items: Vec::new(),
                    anchor,
                    shape,
                })
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(frame) = self.stack.pop() {
                    if matches!(frame.shape, Shape::Ignored) {
                        self.finish(IGNORED, 0);
                        return;
                    }
                    let tree = if frame.mapping {
                        let mut items = frame.items.into_iter();
                        let mut entries = Vec::new();
                        while let (Some(key), Some(value)) = (items.next(), items.next()) {
                            entries.push((key, value));
                        }
                        Tree::Map(entries)
                    } else {
                        Tree::Seq(frame.items)
                    };
                    self.finish(tree, frame.anchor);
                }
            }
            Event::Alias(id) => match self.anchors.get(&id).map(size) {
                Some(counted) => {
                    if self.count(counted, mark) {
                        if let Some(tree) = self.anchors.get(&id).cloned() {
                            self.finish(tree, 0);
                        }
                    }
                }
                None if self.stack.iter().any(|f| matches!(f.shape, Shape::Ignored)) => {
                    self.finish(IGNORED, 0);
                }
                None if !matches!(self.shape, Shape::Any) => self.needs_everything = true,
                None => {
                    self.error = Some(YamlError {
                        line: mark.line(),
                        message: "unknown anchor referenced".into(),
                    })
                }
            },
            _ => {}
        }
    }
}

/// What Go type a document is read into, where it matters: `sigs.k8s.io/yaml` gives a
/// `string` field the scalar as written (`appVersion: 1.10` is `"1.10"`, not 1.1).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// `interface{}`: scalars take their YAML 1.1 meaning.
    Any,
    /// A `string`.
    Str,
    /// A struct: the shape of each named field (others are `Any`).
    Struct(&'static [(&'static str, Shape)]),
    /// A slice, or a map with string keys: the shape of each element.
    Each(&'static Shape),
    /// A struct read only for the named fields: the others are checked as YAML but not
    /// kept (reading a manifest's head need not build its spec).
    Only(&'static [(&'static str, Shape)]),
    /// A part nobody reads.
    Ignored,
}

impl Shape {
    fn field(self, key: &str) -> Shape {
        let find = |fields: &[(&str, Shape)]| {
            fields
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, shape)| *shape)
        };
        match self {
            Shape::Struct(fields) => find(fields).unwrap_or(Shape::Any),
            Shape::Only(fields) => find(fields).unwrap_or(Shape::Ignored),
            Shape::Ignored => Shape::Ignored,
            Shape::Each(element) => *element,
            _ => Shape::Any,
        }
    }
}

/// Every document of `text`, converted to JSON as `sigs.k8s.io/yaml` converts it. An empty
/// document is JSON `null`.
pub fn parse_documents(text: &str) -> Result<Vec<Json>, YamlError> {
    parse_documents_as(text, Shape::Any)
}

/// As [`parse_documents`], reading each document into a Go value of the given shape.
pub(crate) fn parse_documents_as(text: &str, shape: Shape) -> Result<Vec<Json>, YamlError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(YamlError {
            line: 0,
            message: format!(
                "the text is {} bytes, more than the {MAX_TEXT_BYTES} read at most",
                text.len()
            ),
        });
    }
    let mut builder = Builder::new(shape);
    Parser::new_from_str(text)
        .load(&mut builder, true)
        .map_err(|e| go_error(text, &e))?;
    if let Some(error) = builder.error {
        return Err(error);
    }
    if builder.needs_everything {
        return parse_documents_as(text, Shape::Any);
    }
    builder
        .documents
        .iter()
        .map(|document| to_json(document, shape))
        .collect()
}

/// The problems goyaml's (libyaml's) parser reports, as opposed to its scanner: it words
/// their lines differently.
const PARSER_PROBLEMS: [&str; 7] = [
    "did not find expected node content",
    "did not find expected key",
    "did not find expected ',' or '}'",
    "did not find expected ',' or ']'",
    "did not find expected '-' indicator",
    "did not find expected <document start>",
    "did not find expected <stream-start>",
];

/// A syntax error as goyaml.v2 words it: libyaml's problem without its context, on the
/// line goyaml names (a parser problem's 0-based line, a scanner problem's 1-based one,
/// none on the first line).
fn go_error(text: &str, error: &yaml_rust2::ScanError) -> YamlError {
    let info = error.info();
    let problem = match info.strip_prefix("while ") {
        Some(rest) => rest.split_once(", ").map_or(info, |(_, problem)| problem),
        None => info,
    };
    let mark = error.marker();
    let problem = match problem {
        "expected ',' or ']'" => "did not find expected ',' or ']'".to_string(),
        "simple key expect ':'" | "simple key expected" => "could not find expected ':'".into(),
        "found unknown anchor" => {
            // goyaml's decoder names the anchor and gives no line.
            let alias = text.get(mark.index()..).unwrap_or_default();
            let name: String = alias
                .trim_start_matches('*')
                .chars()
                .take_while(|c| !c.is_whitespace() && !",[]{}".contains(*c))
                .collect();
            return YamlError {
                line: 0,
                message: format!("unknown anchor '{name}' referenced"),
            };
        }
        p if p.starts_with("unexpected character") || p.starts_with("tab") => {
            "found character that cannot start any token".into()
        }
        p => p.to_string(),
    };
    let zero_based = mark.line().saturating_sub(1);
    let line = if zero_based == 0 {
        0
    } else if PARSER_PROBLEMS.contains(&problem.as_str()) {
        zero_based
    } else {
        zero_based + 1
    };
    YamlError {
        line,
        message: problem,
    }
}

fn scalar_json(text: &str, plain: bool, tag: Option<&str>, shape: Shape) -> Json {
    if matches!(shape, Shape::Str) && plain && tag.is_none() {
        // A number or boolean read into a string field is written back as Go formats it.
        return match resolve(text) {
            Resolved::Null => Json::Null,
            Resolved::Bool(b) => Json::String(b.to_string()),
            Resolved::Int(i) => Json::String(i.to_string()),
            Resolved::Uint(u) => Json::String(u.to_string()),
            Resolved::Float(f) => Json::String(format_float32_g(f as f32)),
            Resolved::Timestamp | Resolved::Merge | Resolved::Str => Json::String(text.to_string()),
        };
    }
    if tag == Some("!!str") {
        return Json::String(text.to_string());
    }
    if !plain && tag.is_none() {
        return Json::String(text.to_string());
    }
    match resolve(text) {
        Resolved::Null => Json::Null,
        Resolved::Bool(b) => Json::Bool(b),
        Resolved::Int(i) => Json::from(i),
        Resolved::Uint(u) => Json::from(u),
        Resolved::Float(f) => Number::from_f64(f)
            .map(Json::Number)
            .unwrap_or_else(|| Json::String(text.to_string())),
        Resolved::Timestamp | Resolved::Merge | Resolved::Str => Json::String(text.to_string()),
    }
}

/// A map key as `sigs.k8s.io/yaml` writes it into JSON.
fn key_string(key: &Tree) -> Result<String, YamlError> {
    let unsupported = || YamlError {
        line: 0,
        message: "unsupported map key".into(),
    };
    match key {
        Tree::Scalar { text, plain, tag } => Ok(
            match scalar_json(text, *plain, tag.as_deref(), Shape::Any) {
                Json::String(s) => s,
                Json::Bool(b) => b.to_string(),
                Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                    (Some(i), _, _) => i.to_string(),
                    (_, Some(u), _) => u.to_string(),
                    // strconv.FormatFloat(f, 'g', -1, 32)
                    (_, _, Some(f)) => format_float32_g(f as f32),
                    _ => return Err(unsupported()),
                },
                _ => return Err(unsupported()),
            },
        ),
        _ => Err(unsupported()),
    }
}

fn to_json(tree: &Tree, shape: Shape) -> Result<Json, YamlError> {
    Ok(match tree {
        Tree::Scalar { text, tag, .. } if tag.as_deref() == Some("!!binary") => {
            use base64::Engine;
            let data: String = text.split_whitespace().collect();
            let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&data) else {
                return Err(YamlError {
                    line: 0,
                    message: "!!binary value contains invalid base64 data".into(),
                });
            };
            // goyaml decodes the data; the JSON conversion writes it as a string.
            Json::String(String::from_utf8_lossy(&bytes).into_owned())
        }
        Tree::Scalar { text, plain, tag } => scalar_json(text, *plain, tag.as_deref(), shape),
        Tree::Seq(items) => Json::Array(
            items
                .iter()
                .map(|item| to_json(item, shape.field("")))
                .collect::<Result<_, _>>()?,
        ),
        Tree::Map(entries) => {
            let mut map = Map::new();
            // In document order, each key overwriting what came before, as goyaml.v2
            // decodes into one map: a merge writes its maps' keys where it stands.
            for (key, value) in entries {
                if is_merge(key) {
                    merge_into(&mut map, value, shape)?;
                } else {
                    let key = key_string(key)?;
                    let field = shape.field(&key);
                    if matches!(field, Shape::Ignored) {
                        continue;
                    }
                    let value = to_json(value, field)?;
                    map.insert(key, value);
                }
            }
            Json::Object(map)
        }
    })
}

fn is_merge(key: &Tree) -> bool {
    matches!(key, Tree::Scalar { text, plain: true, tag: None } if text == "<<")
}

/// `<<: *base` or `<<: [*a, *b]` (earlier maps win over later ones: they are written last).
fn merge_into(map: &mut Map<String, Json>, value: &Tree, shape: Shape) -> Result<(), YamlError> {
    let sources: Vec<&Tree> = match value {
        Tree::Seq(items) => items.iter().rev().collect(),
        other => vec![other],
    };
    for source in sources {
        let Json::Object(merged) = to_json(source, shape)? else {
            return Err(YamlError {
                line: 0,
                message: "map merge requires map or sequence of maps as the value".into(),
            });
        };
        map.extend(merged);
    }
    Ok(())
}
