//! TOML as Helm's `toToml` and `fromToml` see it, through BurntSushi/toml: keys sorted,
//! plain values before tables, tables indented two spaces per level, arrays of tables as
//! `[[key]]`, floats always with a point or an exponent.

use std::fmt::Write as _;

use super::template::value::format_float_g;
use super::template::Value;

/// What BurntSushi's encoder refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum TomlError {
    /// A list holds nil.
    #[error("toml: cannot encode array with nil element")]
    NilInArray,
    /// NaN and the like have no TOML form here.
    #[error("toml: cannot encode a nil value")]
    Nil,
}

/// `value` written as BurntSushi's `Encoder.Encode` writes it.
pub(crate) fn to_toml(value: &Value) -> Result<String, TomlError> {
    let mut writer = Writer::default();
    match value {
        Value::Map(_) => writer.table(&[], value)?,
        Value::Nil => return Err(TomlError::Nil),
        other => writer.element(other)?,
    }
    Ok(writer.out)
}

/// Whether BurntSushi writes `value` as a table (a map) rather than a value.
fn is_table(value: &Value) -> bool {
    matches!(value, Value::Map(_)) || is_array_of_tables(value)
}

/// A non-empty list of maps only: `[[key]]` sections.
fn is_array_of_tables(value: &Value) -> bool {
    matches!(value, Value::List(items) if !items.is_empty() && items.iter().all(|i| matches!(i, Value::Map(_))))
}

/// A key as TOML writes it: bare when it can be, else quoted.
fn key_part(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_string()
    } else {
        quote(key)
    }
}

fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|k| key_part(k))
        .collect::<Vec<_>>()
        .join(".")
}

/// A basic TOML string.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float: Go's shortest `%g`, with `.0` added to a whole number.
fn float(f: f64) -> String {
    if f.is_nan() {
        return if f.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if f.is_infinite() {
        return if f < 0.0 { "-inf" } else { "inf" }.into();
    }
    let text = format_float_g(f);
    if text.contains(['.', 'e']) {
        text
    } else {
        format!("{text}.0")
    }
}

#[derive(Default)]
struct Writer {
    out: String,
}

impl Writer {
    fn newline(&mut self) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
    }

    fn indent(&mut self, path: &[String]) {
        for _ in 1..path.len() {
            self.out.push_str("  ");
        }
    }

    /// A map at `path`: its header (unless it is the document), then its entries.
    fn table(&mut self, path: &[String], value: &Value) -> Result<(), TomlError> {
        if path.len() == 1 {
            self.newline();
        }
        if !path.is_empty() {
            self.indent(path);
            let _ = write!(self.out, "[{}]", dotted(path));
            self.newline();
        }
        self.entries(path, value)
    }

    fn entries(&mut self, path: &[String], value: &Value) -> Result<(), TomlError> {
        let Value::Map(map) = value else {
            return Ok(());
        };
        let map = map.borrow();
        let (tables, plain): (Vec<_>, Vec<_>) = map
            .iter()
            .filter(|(_, v)| !matches!(v, Value::Nil))
            .partition(|(_, v)| is_table(v));
        for (key, item) in plain.into_iter().chain(tables) {
            let mut child = path.to_vec();
            child.push(key.clone());
            if is_array_of_tables(item) {
                self.array_of_tables(&child, item)?;
            } else if matches!(item, Value::Map(_)) {
                self.table(&child, item)?;
            } else {
                self.indent(&child);
                let _ = write!(self.out, "{} = ", key_part(key));
                self.element(item)?;
                self.newline();
            }
        }
        Ok(())
    }

    fn array_of_tables(&mut self, path: &[String], value: &Value) -> Result<(), TomlError> {
        let Value::List(items) = value else {
            return Ok(());
        };
        for item in items.iter() {
            self.newline();
            self.indent(path);
            let _ = write!(self.out, "[[{}]]", dotted(path));
            self.newline();
            self.entries(path, item)?;
        }
        Ok(())
    }

    /// A value on the right of `=`, or inside an array or inline table.
    fn element(&mut self, value: &Value) -> Result<(), TomlError> {
        match value {
            Value::Nil => return Err(TomlError::Nil),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) | Value::Int64(i) => {
                let _ = write!(self.out, "{i}");
            }
            Value::Float(f) => self.out.push_str(&float(*f)),
            Value::Str(s) => self.out.push_str(&quote(s)),
            Value::Bytes(bytes) => {
                let items: Vec<Value> = bytes.iter().map(|b| Value::Int(i64::from(*b))).collect();
                self.element(&Value::from(items))?;
            }
            Value::List(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if matches!(item, Value::Nil) {
                        return Err(TomlError::NilInArray);
                    }
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.element(item)?;
                }
                self.out.push(']');
            }
            Value::Map(map) => {
                self.out.push('{');
                let map = map.borrow();
                let (tables, plain): (Vec<_>, Vec<_>) = map
                    .iter()
                    .filter(|(_, v)| !matches!(v, Value::Nil))
                    .partition(|(_, v)| is_table(v));
                for (i, (key, item)) in plain.into_iter().chain(tables).enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    let _ = write!(self.out, "{} = ", key_part(key));
                    self.element(item)?;
                }
                self.out.push('}');
            }
            Value::Object(object) => {
                let json = object.to_json();
                self.element(&Value::from_json(&json))?;
            }
        }
        Ok(())
    }
}

/// `fromToml`: the document as a map (integers int64, floats float64, datetimes as
/// their text), or the parser's complaint.
pub(crate) fn from_toml(text: &str) -> Result<Value, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(1);
        format!("toml: line {line}: {}", e.message())
    })?;
    Ok(from_toml_value(&toml::Value::Table(table)))
}

fn from_toml_value(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::from(s.as_str()),
        toml::Value::Integer(i) => Value::Int64(*i),
        toml::Value::Float(f) => Value::Float(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::from(d.to_string()),
        toml::Value::Array(items) => {
            Value::from(items.iter().map(from_toml_value).collect::<Vec<_>>())
        }
        toml::Value::Table(table) => Value::from(
            table
                .iter()
                .map(|(k, v)| (k.clone(), from_toml_value(v)))
                .collect::<std::collections::BTreeMap<_, _>>(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn map(entries: Vec<(&str, Value)>) -> Value {
        Value::from(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    // Expected texts printed by Helm 4.3.1's toToml.
    #[test]
    fn tables_nest_and_indent() {
        let value = map(vec![
            ("a", Value::Int(1)),
            (
                "d",
                map(vec![
                    ("e", Value::Float(1.5)),
                    ("j", Value::Int(2)),
                    (
                        "f",
                        map(vec![
                            ("g", Value::Bool(true)),
                            ("h", map(vec![("i", Value::Int(1))])),
                        ]),
                    ),
                ]),
            ),
            ("t", Value::empty_map()),
            (
                "z",
                map(vec![(
                    "q",
                    Value::from(vec![map(vec![("r", Value::Int(1))])]),
                )]),
            ),
            ("skipped", Value::Nil),
        ]);
        assert_eq!(
            to_toml(&value).as_deref(),
            Ok("a = 1\n\n[d]\n  e = 1.5\n  j = 2\n  [d.f]\n    g = true\n    [d.f.h]\n      i = 1\n\n[t]\n\n[z]\n\n  [[z.q]]\n    r = 1\n")
        );
    }

    #[test]
    fn values_as_burntsushi_writes_them() {
        let value = map(vec![
            ("a", Value::Float(1e6)),
            ("b", Value::Float(3.0)),
            ("c", Value::Float(0.0001)),
            ("d", Value::Float(-0.0)),
            (
                "g",
                Value::from(vec![map(vec![("x", Value::Int(1))]), Value::Int(2)]),
            ),
            ("sp ace", Value::from("a\"b\\c\u{7f}\r")),
            ("", Value::from(vec![])),
        ]);
        assert_eq!(
            to_toml(&value).as_deref(),
            Ok("\"\" = []\na = 1e+06\nb = 3.0\nc = 0.0001\nd = -0.0\ng = [{x = 1}, 2]\n\"sp ace\" = \"a\\\"b\\\\c\\u007f\\r\"\n")
        );
        assert_eq!(
            to_toml(&Value::from(vec![Value::Int(1)])).as_deref(),
            Ok("[1]")
        );
        assert_eq!(
            to_toml(&map(vec![("l", Value::from(vec![Value::Nil]))])),
            Err(TomlError::NilInArray)
        );
    }

    #[test]
    fn reads_documents() {
        let value = from_toml("a = 1\nb = 1.5\nc = [1, \"x\"]\n[d]\ne = true").expect("toml");
        assert_eq!(value.to_go_string(), "map[a:1 b:1.5 c:[1 x] d:map[e:true]]");
        assert_eq!(value.get("a"), Value::Int64(1));
        assert!(from_toml("a = 1\na = 2").is_err_and(|e| e.starts_with("toml: line 2")));
    }
}
