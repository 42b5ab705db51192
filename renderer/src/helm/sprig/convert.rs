//! Conversions: `toString`, `int`, `atoi`, `float64`, `toStrings`, and the serialisers
//! `toJson`, `toPrettyJson`, `fromJson`, `toYaml`, `fromYaml`, `fromYamlArray`, `b64enc`,
//! `b64dec`, `sha256sum`, `sha1sum`, and the random `uuidv4` and `randAlphaNum`.

use std::collections::HashMap;

use base64::Engine;
use sha2::Digest;

use super::{arity, int_arg, str_arg};
use crate::helm::template::{Func, Value};

/// sprig's `strval`: strings as they are, anything else as `%v` prints it.
pub fn strval(value: &Value) -> String {
    match value {
        Value::Str(s) => s.to_string(),
        Value::Nil => "<nil>".into(),
        other => other.to_go_string(),
    }
}

/// `cast.ToInt64`: numbers truncated, booleans 0 or 1, strings parsed (0 when invalid).
pub fn to_int(value: &Value) -> i64 {
    match value {
        Value::Int(i) => *i,
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::Str(s) => parse_int(s.trim()).unwrap_or(0),
        _ => 0,
    }
}

fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let lower = digits.to_ascii_lowercase();
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()?
    } else if lower.len() > 1 && lower.starts_with('0') {
        i64::from_str_radix(lower.trim_start_matches("0o").trim_start_matches('0'), 8).ok()?
    } else {
        lower.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// `cast.ToFloat64`.
pub fn to_float(value: &Value) -> f64 {
    match value {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => s.trim().parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

fn one(name: &str, args: &[Value]) -> Result<Value, String> {
    arity(name, args, 1)?;
    Ok(args[0].clone())
}

/// Go's `encoding/json` output: compact, HTML characters escaped.
fn go_json(value: &serde_json::Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value).unwrap_or_default()
    } else {
        serde_json::to_string(value).unwrap_or_default()
    };
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// `toYaml`: as Helm writes it, without the final newline.
pub fn to_yaml(value: &Value) -> String {
    let json = value.to_json();
    let text = match &json {
        serde_json::Value::Null => "null\n".to_string(),
        other => crate::emit::document(other),
    };
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

fn error_map(message: String) -> Value {
    let mut map = std::collections::BTreeMap::new();
    map.insert("Error".to_string(), Value::from(message));
    Value::from(map)
}

fn random_bytes(count: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(count);
    while bytes.len() < count {
        bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    bytes.truncate(count);
    bytes
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("toString", |_, a| {
        one("toString", &a).map(|v| Value::from(strval(&v)))
    });
    funcs.insert("toStrings", |_, a| {
        let list = super::items("toStrings", &one("toStrings", &a)?)?;
        Ok(Value::from(
            list.iter()
                .map(|v| Value::from(strval(v)))
                .collect::<Vec<_>>(),
        ))
    });
    funcs.insert("int", |_, a| one("int", &a).map(|v| Value::Int(to_int(&v))));
    funcs.insert("int64", |_, a| {
        one("int64", &a).map(|v| Value::Int(to_int(&v)))
    });
    funcs.insert("float64", |_, a| {
        one("float64", &a).map(|v| Value::Float(to_float(&v)))
    });
    funcs.insert("atoi", |_, a| {
        let v = one("atoi", &a)?;
        Ok(Value::Int(str_arg(&v)?.parse().unwrap_or(0)))
    });
    funcs.insert("toJson", |_, a| {
        one("toJson", &a).map(|v| Value::from(go_json(&v.to_json(), false)))
    });
    funcs.insert("mustToJson", |_, a| {
        one("mustToJson", &a).map(|v| Value::from(go_json(&v.to_json(), false)))
    });
    funcs.insert("toPrettyJson", |_, a| {
        one("toPrettyJson", &a).map(|v| Value::from(go_json(&v.to_json(), true)))
    });
    funcs.insert("toRawJson", |_, a| {
        let v = one("toRawJson", &a)?;
        Ok(Value::from(
            serde_json::to_string(&v.to_json()).unwrap_or_default(),
        ))
    });
    funcs.insert("fromJson", |_, a| {
        let text = strval(&one("fromJson", &a)?);
        Ok(match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(json) => Value::from_json_floats(&json),
            Err(e) => error_map(e.to_string()),
        })
    });
    funcs.insert("fromJsonArray", |_, a| {
        let text = strval(&one("fromJsonArray", &a)?);
        Ok(match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(json @ serde_json::Value::Array(_)) => Value::from_json_floats(&json),
            Ok(_) => Value::from(vec![Value::from(
                "json: cannot unmarshal into []interface {}",
            )]),
            Err(e) => Value::from(vec![Value::from(e.to_string())]),
        })
    });
    funcs.insert("toYaml", |_, a| {
        one("toYaml", &a).map(|v| Value::from(to_yaml(&v)))
    });
    funcs.insert("mustToYaml", |_, a| {
        one("mustToYaml", &a).map(|v| Value::from(to_yaml(&v)))
    });
    funcs.insert("fromYaml", |_, a| {
        let text = strval(&one("fromYaml", &a)?);
        Ok(match serde_yaml_ng::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Null) => Value::empty_map(),
            Ok(json @ serde_json::Value::Object(_)) => Value::from_json_floats(&json),
            Ok(_) => error_map("error unmarshaling JSON: cannot unmarshal into map".into()),
            Err(e) => error_map(e.to_string()),
        })
    });
    funcs.insert("fromYamlArray", |_, a| {
        let text = strval(&one("fromYamlArray", &a)?);
        Ok(match serde_yaml_ng::from_str::<serde_json::Value>(&text) {
            Ok(json @ serde_json::Value::Array(_)) => Value::from_json_floats(&json),
            Ok(serde_json::Value::Null) => Value::from(Vec::new()),
            Ok(_) => Value::from(vec![Value::from(
                "error unmarshaling JSON: cannot unmarshal into []interface {}",
            )]),
            Err(e) => Value::from(vec![Value::from(e.to_string())]),
        })
    });
    funcs.insert("b64enc", |_, a| {
        let v = one("b64enc", &a)?;
        Ok(Value::from(
            base64::engine::general_purpose::STANDARD.encode(strval(&v)),
        ))
    });
    funcs.insert("b64dec", |_, a| {
        let v = one("b64dec", &a)?;
        Ok(Value::from(
            match base64::engine::general_purpose::STANDARD.decode(str_arg(&v)?) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => e.to_string(),
            },
        ))
    });
    funcs.insert("sha256sum", |_, a| {
        let v = one("sha256sum", &a)?;
        Ok(Value::from(format!(
            "{:x}",
            sha2::Sha256::digest(strval(&v).as_bytes())
        )))
    });
    funcs.insert("uuidv4", |_, a| {
        arity("uuidv4", &a, 0)?;
        Ok(Value::from(uuid::Uuid::new_v4().to_string()))
    });
    funcs.insert("randAlphaNum", |_, a| {
        random_string(
            "randAlphaNum",
            &a,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        )
    });
    funcs.insert("randAlpha", |_, a| {
        random_string(
            "randAlpha",
            &a,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        )
    });
    funcs.insert("randNumeric", |_, a| {
        random_string("randNumeric", &a, b"0123456789")
    });
}

fn random_string(name: &str, args: &[Value], alphabet: &[u8]) -> Result<Value, String> {
    let count = usize::try_from(int_arg(&one(name, args)?)?)
        .unwrap_or(0)
        .min(1 << 20);
    let text: String = random_bytes(count)
        .iter()
        .map(|b| char::from(alphabet[usize::from(*b) % alphabet.len()]))
        .collect();
    Ok(Value::from(text))
}
