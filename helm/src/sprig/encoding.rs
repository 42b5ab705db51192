//! Encodings, digests and serialisers: `b64enc`, `b64dec`, `b32enc`, `b32dec`,
//! `sha1sum`, `sha256sum`, `sha512sum`, `adler32sum`; Helm's own `toJson`, `fromJson`,
//! `fromJsonArray`, `toYaml`, `toYamlPretty`, `fromYaml`, `fromYamlArray`, `toToml` and
//! `fromToml` (which put a parse error in the result rather than fail); and sprig's
//! `must` forms, which fail.

use std::collections::{BTreeMap, HashMap};

use base64::Engine;
use serde_json::Value as Json;
use sha2::Digest;

use super::{arity, str_arg};
use crate::gojson::{self, Style};
use crate::template::{Func, Value};
use crate::{gotoml, goyaml};

fn one_str(name: &str, args: &[Value]) -> Result<String, String> {
    arity(name, args, 1)?;
    str_arg(&args[0])
}

fn one(name: &str, args: &[Value]) -> Result<Value, String> {
    arity(name, args, 1)?;
    Ok(args[0].clone())
}

/// Go's base64 and base32 decoders skip line breaks.
fn without_newlines(text: &str) -> String {
    text.chars().filter(|c| *c != '\n' && *c != '\r').collect()
}

/// `base64.StdEncoding.DecodeString`, with Go's error text.
fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let text = without_newlines(text);
    base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|e| {
            let offset = match e {
                base64::DecodeError::InvalidByte(offset, _) => offset,
                base64::DecodeError::InvalidLastSymbol(offset, _) => offset,
                _ => text.len() - text.len() % 4,
            };
            format!("illegal base64 data at input byte {offset}")
        })
}

/// `base32.StdEncoding.DecodeString`, with Go's error text.
fn base32_decode(text: &str) -> Result<Vec<u8>, String> {
    let text = without_newlines(text);
    data_encoding::BASE32.decode(text.as_bytes()).map_err(|e| {
        let offset = match e.kind {
            data_encoding::DecodeKind::Length => text.len() - text.len() % 8,
            _ => e.position,
        };
        format!("illegal base32 data at input byte {offset}")
    })
}

fn text_of(bytes: Vec<u8>) -> Value {
    Value::from(String::from_utf8_lossy(&bytes).into_owned())
}

/// zlib's Adler-32 checksum.
fn adler32(bytes: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in bytes.chunks(5552) {
        for byte in chunk {
            a += u32::from(*byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

fn json(value: &Value, style: Style) -> Option<String> {
    gojson::to_string(value, style)
}

/// `json.Unmarshal` into `interface{}`: numbers are float64.
fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Json>(text)
        .map(|json| Value::from_json_floats(&json))
        .map_err(|e| json_error(text, &e))
}

/// Go's wording for the JSON errors templates meet most.
fn json_error(text: &str, error: &serde_json::Error) -> String {
    if error.is_eof() || text.trim().is_empty() {
        return "unexpected end of JSON input".into();
    }
    error.to_string()
}

/// The name `encoding/json` gives a JSON value's kind in a type mismatch.
fn json_kind(json: &Json) -> &'static str {
    match json {
        Json::Null => "null",
        Json::Bool(_) => "bool",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn error_map(message: String) -> Value {
    Value::from(BTreeMap::from([(
        "Error".to_string(),
        Value::from(message),
    )]))
}

/// The first YAML document as `sigs.k8s.io/yaml` converts it to JSON.
fn yaml_document(text: &str) -> Result<Json, String> {
    goyaml::parse_documents(text)
        .map(|documents| documents.into_iter().next().unwrap_or(Json::Null))
        .map_err(|e| e.to_string())
}

fn unmarshal_mismatch(json: &Json, target: &str) -> String {
    format!(
        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type {target}",
        json_kind(json)
    )
}

/// Helm's `fromYaml`: a map, with `Error` set when the text is not one.
fn from_yaml(text: &str) -> Value {
    match yaml_document(text) {
        Ok(Json::Null) => Value::empty_map(),
        Ok(json @ Json::Object(_)) => Value::from_json_floats(&json),
        Ok(other) => error_map(unmarshal_mismatch(&other, "map[string]interface {}")),
        Err(message) => error_map(message),
    }
}

/// Helm's `fromYamlArray`: a list, or a list of the one error message.
fn from_yaml_array(text: &str) -> Value {
    match yaml_document(text) {
        Ok(Json::Null) => Value::from(Vec::new()),
        Ok(json @ Json::Array(_)) => Value::from_json_floats(&json),
        Ok(other) => Value::from(vec![Value::from(unmarshal_mismatch(
            &other,
            "[]interface {}",
        ))]),
        Err(message) => Value::from(vec![Value::from(message)]),
    }
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("b64enc", |_, a| {
        let text = one_str("b64enc", &a)?;
        Ok(Value::from(
            base64::engine::general_purpose::STANDARD.encode(text),
        ))
    });
    funcs.insert("b64dec", |_, a| {
        let text = one_str("b64dec", &a)?;
        Ok(base64_decode(&text).map_or_else(Value::from, text_of))
    });
    funcs.insert("b32enc", |_, a| {
        let text = one_str("b32enc", &a)?;
        Ok(Value::from(data_encoding::BASE32.encode(text.as_bytes())))
    });
    funcs.insert("b32dec", |_, a| {
        let text = one_str("b32dec", &a)?;
        Ok(base32_decode(&text).map_or_else(Value::from, text_of))
    });
    funcs.insert("sha1sum", |_, a| {
        let text = one_str("sha1sum", &a)?;
        Ok(Value::from(format!("{:x}", sha1::Sha1::digest(text))))
    });
    funcs.insert("sha256sum", |_, a| {
        let text = one_str("sha256sum", &a)?;
        Ok(Value::from(format!("{:x}", sha2::Sha256::digest(text))))
    });
    funcs.insert("sha512sum", |_, a| {
        let text = one_str("sha512sum", &a)?;
        Ok(Value::from(format!("{:x}", sha2::Sha512::digest(text))))
    });
    funcs.insert("adler32sum", |_, a| {
        let text = one_str("adler32sum", &a)?;
        Ok(Value::from(adler32(text.as_bytes()).to_string()))
    });

    funcs.insert("toJson", |_, a| {
        let v = one("toJson", &a)?;
        Ok(Value::from(json(&v, Style::default()).unwrap_or_default()))
    });
    funcs.insert("mustToJson", |_, a| {
        let v = one("mustToJson", &a)?;
        json(&v, Style::default())
            .map(Value::from)
            .ok_or_else(|| unsupported_float(&v))
    });
    funcs.insert("toPrettyJson", |_, a| {
        let v = one("toPrettyJson", &a)?;
        Ok(Value::from(json(&v, PRETTY).unwrap_or_default()))
    });
    funcs.insert("mustToPrettyJson", |_, a| {
        let v = one("mustToPrettyJson", &a)?;
        json(&v, PRETTY)
            .map(Value::from)
            .ok_or_else(|| unsupported_float(&v))
    });
    funcs.insert("toRawJson", |_, a| {
        let v = one("toRawJson", &a)?;
        Ok(Value::from(json(&v, RAW).unwrap_or_default()))
    });
    funcs.insert("mustToRawJson", |_, a| {
        let v = one("mustToRawJson", &a)?;
        json(&v, RAW)
            .map(Value::from)
            .ok_or_else(|| unsupported_float(&v))
    });
    funcs.insert("fromJson", |_, a| {
        let text = one_str("fromJson", &a)?;
        Ok(match parse_json(&text) {
            Ok(Value::Nil) => Value::empty_map(),
            Ok(map @ Value::Map(_)) => map,
            Ok(other) => error_map(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(&other.to_json())
            )),
            Err(message) => error_map(message),
        })
    });
    funcs.insert("mustFromJson", |_, a| {
        parse_json(&one_str("mustFromJson", &a)?)
    });
    funcs.insert("fromJsonArray", |_, a| {
        let text = one_str("fromJsonArray", &a)?;
        Ok(match parse_json(&text) {
            Ok(Value::Nil) => Value::from(Vec::new()),
            Ok(list @ Value::List(_)) => list,
            Ok(other) => Value::from(vec![Value::from(format!(
                "json: cannot unmarshal {} into Go value of type []interface {{}}",
                json_kind(&other.to_json())
            ))]),
            Err(message) => Value::from(vec![Value::from(message)]),
        })
    });

    funcs.insert("toYaml", |_, a| {
        Ok(Value::from(goyaml::to_yaml(&one("toYaml", &a)?)))
    });
    funcs.insert("mustToYaml", |_, a| {
        let v = one("mustToYaml", &a)?;
        json(&v, Style::default()).ok_or_else(|| unsupported_float(&v))?;
        Ok(Value::from(goyaml::to_yaml(&v)))
    });
    funcs.insert("toYamlPretty", |_, a| {
        Ok(Value::from(goyaml::to_yaml_pretty(&one(
            "toYamlPretty",
            &a,
        )?)))
    });
    funcs.insert("fromYaml", |_, a| Ok(from_yaml(&one_str("fromYaml", &a)?)));
    funcs.insert("fromYamlArray", |_, a| {
        Ok(from_yaml_array(&one_str("fromYamlArray", &a)?))
    });

    funcs.insert("toToml", |_, a| {
        let v = one("toToml", &a)?;
        Ok(Value::from(
            gotoml::to_toml(&v).unwrap_or_else(|e| e.to_string()),
        ))
    });
    funcs.insert("mustToToml", |_, a| {
        let v = one("mustToToml", &a)?;
        gotoml::to_toml(&v)
            .map(Value::from)
            .map_err(|e| e.to_string())
    });
    funcs.insert("fromToml", |_, a| {
        let text = one_str("fromToml", &a)?;
        Ok(gotoml::from_toml(&text).unwrap_or_else(error_map))
    });
}

const PRETTY: Style = Style {
    pretty: true,
    raw_html: false,
};

const RAW: Style = Style {
    pretty: false,
    raw_html: true,
};

/// `encoding/json`'s refusal of NaN and the infinities.
fn unsupported_float(value: &Value) -> String {
    fn find(value: &Value) -> Option<f64> {
        match value {
            Value::Float(f) if !f.is_finite() => Some(*f),
            Value::List(items) => items.iter().find_map(find),
            Value::Map(map) => map.borrow().values().find_map(find),
            _ => None,
        }
    }
    let f = find(value).unwrap_or(f64::NAN);
    format!(
        "json: unsupported value: {}",
        crate::template::value::format_float_g(f)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by Helm 4.3.1.
    #[test]
    fn decoders_report_as_go() {
        assert_eq!(base64_decode("aGVsbG8="), Ok(b"hello".to_vec()));
        assert_eq!(
            base64_decode("!!"),
            Err("illegal base64 data at input byte 0".into())
        );
        assert_eq!(base32_decode("NBSWY3DP"), Ok(b"hello".to_vec()));
        assert_eq!(
            base32_decode("1"),
            Err("illegal base32 data at input byte 0".into())
        );
        assert_eq!(adler32(b"abc"), 38_600_999);
    }

    #[test]
    fn yaml_readers_put_errors_in_the_result() {
        assert_eq!(from_yaml("a: 1").to_go_string(), "map[a:1]");
        assert_eq!(from_yaml("").to_go_string(), "map[]");
        assert_eq!(
            from_yaml("- 1").get("Error").to_go_string(),
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert_eq!(from_yaml_array("- a\n- 2").to_go_string(), "[a 2]");
        assert_eq!(
            from_yaml_array("a: 1").to_go_string(),
            "[error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go value of type []interface {}]"
        );
    }
}
