//! JSON as Go's `encoding/json` writes it: map keys sorted, struct fields in order, floats
//! in Go's form (`1e+21`),
//! `<`, `>` and `&` escaped unless asked not to, U+2028 and U+2029 always escaped, and
//! `MarshalIndent`'s layout.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::goyaml::go_json_float;
use super::template::Value;

/// How to write.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Style {
    /// `MarshalIndent(v, "", "  ")` rather than compact.
    pub pretty: bool,
    /// Leave `<`, `>` and `&` as they are (`SetEscapeHTML(false)`).
    pub raw_html: bool,
}

/// `value` as JSON, or None where Go refuses (NaN, infinities).
pub(crate) fn to_string(value: &Value, style: Style) -> Option<String> {
    let mut out = String::new();
    write(&mut out, &exact_json(value)?, style, 0)?;
    Some(out)
}

/// The JSON of `value` with floats kept as floats; None for NaN and the infinities.
fn exact_json(value: &Value) -> Option<Json> {
    Some(match value {
        Value::Float(f) => Json::Number(serde_json::Number::from_f64(*f)?),
        Value::List(items) => Json::Array(items.iter().map(exact_json).collect::<Option<_>>()?),
        Value::Map(map) => Json::Object(
            map.borrow()
                .iter()
                .map(|(k, v)| Some((k.clone(), exact_json(v)?)))
                .collect::<Option<_>>()?,
        ),
        other => other.to_json(),
    })
}

fn newline(out: &mut String, style: Style, depth: usize) {
    if style.pretty {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    }
}

fn write(out: &mut String, json: &Json, style: Style, depth: usize) -> Option<()> {
    match json {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(u)) => {
                let _ = write!(out, "{u}");
            }
            _ => out.push_str(&go_json_float(n.as_f64()?)?),
        },
        Json::String(s) => write_string(out, s, style),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                write(out, item, style, depth + 1)?;
            }
            if !items.is_empty() {
                newline(out, style, depth);
            }
            out.push(']');
        }
        Json::Object(map) => {
            // Maps come sorted (Go sorts map keys); structs in their fields' order.
            let entries: Vec<(&String, &Json)> = map.iter().collect();
            out.push('{');
            for (i, (key, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                write_string(out, key, style);
                out.push(':');
                if style.pretty {
                    out.push(' ');
                }
                write(out, item, style, depth + 1)?;
            }
            if !entries.is_empty() {
                newline(out, style, depth);
            }
            out.push('}');
        }
    }
    Some(())
}

fn write_string(out: &mut String, s: &str, style: Style) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if !style.raw_html => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    // Expected texts printed by Helm 4.3.1's toJson, toPrettyJson and toRawJson.
    #[test]
    fn writes_as_encoding_json() {
        let value = Value::from(BTreeMap::from([
            ("b".to_string(), Value::from("<a&b>")),
            (
                "a".to_string(),
                Value::from(vec![Value::Float(1e21), Value::Float(0.5), Value::Int(3)]),
            ),
            ("c".to_string(), Value::empty_map()),
        ]));
        assert_eq!(
            to_string(&value, Style::default()).as_deref(),
            Some(r#"{"a":[1e+21,0.5,3],"b":"\u003ca\u0026b\u003e","c":{}}"#)
        );
        assert_eq!(
            to_string(
                &value,
                Style {
                    pretty: true,
                    raw_html: true
                }
            )
            .as_deref(),
            Some("{\n  \"a\": [\n    1e+21,\n    0.5,\n    3\n  ],\n  \"b\": \"<a&b>\",\n  \"c\": {}\n}")
        );
        assert_eq!(
            to_string(&Value::from("\u{1}\u{2028}\t"), Style::default()).as_deref(),
            Some(r#""\u0001\u2028\t""#)
        );
        assert_eq!(to_string(&Value::Float(f64::NAN), Style::default()), None);
        assert_eq!(
            to_string(&Value::Float(1e-7), Style::default()).as_deref(),
            Some("1e-7")
        );
        assert_eq!(
            to_string(&Value::Float(100.0), Style::default()).as_deref(),
            Some("100")
        );
    }
}
