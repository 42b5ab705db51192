//! Conversions and reflection: `toString`, `toStrings`, `int`, `int64`, `float64`, `atoi`,
//! `toDecimal` (with spf13/cast's and strconv's rules), and `typeOf`, `typeIs`,
//! `typeIsLike`, `kindOf`, `kindIs`, `deepEqual`.

use std::collections::HashMap;

use super::{arity, str_arg};
use crate::template::{Func, Value};

/// sprig's `strval`: strings and bytes as they are, anything else as `%v` prints it.
pub(super) fn strval(value: &Value) -> String {
    match value {
        Value::Str(s) => s.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Nil => "<nil>".into(),
        other => other.to_go_string(),
    }
}

/// sprig's `strslice`: a list's items but nil as strings; nil is no strings; anything
/// else is itself as one string.
pub(super) fn strslice(value: &Value) -> Vec<String> {
    match &value.unwrapped_slice() {
        Value::List(items) => items
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(strval)
            .collect(),
        Value::Bytes(bytes) => bytes.iter().map(|b| b.to_string()).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`: an optional sign, then decimal, `0x` hex, `0o` or
/// `0` octal, or `0b` binary digits, with `_` allowed between digits.
pub(super) fn parse_go_int(s: &str) -> Option<i64> {
    let (negative, unsigned) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = unsigned.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest, true)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest, true)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    if lower.contains('_') && !underscores_ok(digits, prefixed) {
        return None;
    }
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(&digits, radix).ok()?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// strconv's `underscoreOK`: each `_` sits between digits, or right after a base prefix.
fn underscores_ok(digits: &str, prefixed: bool) -> bool {
    let mut previous = if prefixed { '0' } else { '!' };
    for c in digits.chars() {
        if c == '_' {
            if previous != '0' {
                return false;
            }
        } else if previous == '_' && !c.is_ascii_alphanumeric() {
            return false;
        }
        previous = if c == '_' {
            '_'
        } else if c.is_ascii_alphanumeric() {
            '0'
        } else {
            '!'
        };
    }
    previous != '_'
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal or `0x` hexadecimal, `Inf` and `NaN`.
pub(super) fn parse_go_float(s: &str) -> Option<f64> {
    let (negative, unsigned) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = match unsigned.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        lower => match lower.strip_prefix("0x") {
            Some(hex) => crate::template::parse::hex_float(hex)?,
            None if lower.starts_with(|c: char| c.is_ascii_digit() || c == '.') => {
                lower.parse().ok()?
            }
            None => return None,
        },
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// spf13/cast's `trimZeroDecimal`: `"1.0"` and `"1.00"` read as `"1"`.
fn trim_zero_decimal(s: &str) -> &str {
    let mut found_zero = false;
    for (i, byte) in s.bytes().enumerate().rev() {
        match byte {
            b'.' if found_zero => return &s[..i],
            b'.' => {}
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// spf13/cast's `ToInt64`: numbers truncated, booleans 0 or 1, strings parsed as Go
/// integer literals (0 when they are not one).
pub(super) fn to_int(value: &Value) -> i64 {
    match value {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::Str(s) => parse_go_int(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// spf13/cast's `ToFloat64`.
pub(super) fn to_float(value: &Value) -> f64 {
    match value {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => parse_go_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// `reflect.Kind` of the value, as `kindOf` names it.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Int64(_) => "int64",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::List(_) | Value::Bytes(_) => "slice",
        Value::Map(_) => "map",
        Value::Object(o) => o.kind(),
    }
}

/// `reflect.DeepEqual`: equal values of the same type, lists and maps element by element.
pub(super) fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(x, y)| deep_equal(x, y))
        }
        (Value::Map(x), Value::Map(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a.type_name() == b.type_name() && a == b,
    }
}

fn one(name: &str, args: &[Value]) -> Result<Value, String> {
    arity(name, args, 1)?;
    Ok(args[0].clone())
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("toString", |_, a| {
        one("toString", &a).map(|v| Value::from(strval(&v)))
    });
    funcs.insert("toStrings", |_, a| {
        let strings = strslice(&one("toStrings", &a)?);
        Ok(Value::from(
            strings.into_iter().map(Value::from).collect::<Vec<_>>(),
        ))
    });
    funcs.insert("int", |_, a| one("int", &a).map(|v| Value::Int(to_int(&v))));
    funcs.insert("int64", |_, a| {
        one("int64", &a).map(|v| Value::Int64(to_int(&v)))
    });
    funcs.insert("float64", |_, a| {
        one("float64", &a).map(|v| Value::Float(to_float(&v)))
    });
    funcs.insert("atoi", |_, a| {
        let text = str_arg(&one("atoi", &a)?)?;
        Ok(Value::Int(atoi(&text).unwrap_or(0)))
    });
    funcs.insert("toDecimal", |_, a| {
        let v = one("toDecimal", &a)?;
        let text = v.to_go_string();
        Ok(Value::Int64(parse_octal(&text).unwrap_or(0)))
    });
    funcs.insert("typeOf", |_, a| {
        Ok(Value::from(one("typeOf", &a)?.type_name()))
    });
    funcs.insert("typeIs", |_, a| {
        arity("typeIs", &a, 2)?;
        Ok(Value::Bool(str_arg(&a[0])? == a[1].type_name()))
    });
    funcs.insert("typeIsLike", |_, a| {
        arity("typeIsLike", &a, 2)?;
        let (target, actual) = (str_arg(&a[0])?, a[1].type_name());
        Ok(Value::Bool(
            target == actual || actual.strip_prefix('*') == Some(target.as_str()),
        ))
    });
    funcs.insert("kindOf", |_, a| Ok(Value::from(kind(&one("kindOf", &a)?))));
    funcs.insert("kindIs", |_, a| {
        arity("kindIs", &a, 2)?;
        Ok(Value::Bool(str_arg(&a[0])? == kind(&a[1])))
    });
    funcs.insert("deepEqual", |_, a| {
        arity("deepEqual", &a, 2)?;
        Ok(Value::Bool(deep_equal(&a[0], &a[1])))
    });
}

/// Go's `strconv.Atoi`: decimal digits with an optional sign, nothing else.
fn atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `strconv.ParseInt(s, 8, 64)`.
fn parse_octal(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return None;
    }
    i64::from_str_radix(text, 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by Helm 4.3.1 (cast v1.7, strconv).
    #[test]
    fn integers_read_as_cast_reads_them() {
        let int = |s: &str| to_int(&Value::from(s));
        assert_eq!(int("0x10"), 16);
        assert_eq!(int("010"), 8);
        assert_eq!(int("1.0"), 1);
        assert_eq!(int("1.5"), 0);
        assert_eq!(int("1_000"), 1000);
        assert_eq!(int("_1"), 0);
        assert_eq!(int(" 1"), 0);
        assert_eq!(int("-0b101"), -5);
        assert_eq!(to_int(&Value::Float(3.9)), 3);
        assert_eq!(to_int(&Value::Bool(true)), 1);
        assert_eq!(atoi("42"), Some(42));
        assert_eq!(atoi("0x10"), None);
        assert_eq!(parse_octal("0777"), Some(511));
        assert_eq!(parse_octal("9"), None);
    }

    #[test]
    fn floats_read_as_strconv_reads_them() {
        assert_eq!(parse_go_float("1.5"), Some(1.5));
        assert_eq!(parse_go_float("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_go_float("0x1p-2"), Some(0.25));
        assert_eq!(parse_go_float(".5"), Some(0.5));
        assert_eq!(parse_go_float("x"), None);
        assert_eq!(parse_go_float(""), None);
    }

    #[test]
    fn deep_equal_minds_types() {
        assert!(deep_equal(&Value::Int(1), &Value::Int(1)));
        assert!(!deep_equal(&Value::Int(1), &Value::Float(1.0)));
        assert!(!deep_equal(&Value::Int(1), &Value::Int64(1)));
        assert!(!deep_equal(&Value::from("1"), &Value::Int(1)));
        let list = |v: Vec<Value>| Value::from(v);
        assert!(deep_equal(
            &list(vec![Value::Int(1), Value::from("a")]),
            &list(vec![Value::Int(1), Value::from("a")])
        ));
    }
}
