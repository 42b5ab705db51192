//! Template values with Go's semantics: maps are shared references (sprig's `set` mutates
//! them in place), numbers are int64 or float64, and printing follows `fmt`'s `%v`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::rc::Rc;

/// A shared, mutable map with Go's sorted iteration order.
pub type Map = Rc<RefCell<BTreeMap<String, Value>>>;

/// A value with fields and methods of its own, such as Helm's `.Files` or
/// `.Capabilities.APIVersions`.
pub trait Object: std::fmt::Debug {
    /// The type name shown in error messages.
    fn type_name(&self) -> &'static str;
    /// A field (no arguments) or a method call.
    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String>;
    /// What `encoding/json` writes for it (`toJson`, `toYaml`).
    fn to_json(&self) -> serde_json::Value;
    /// What `fmt`'s `%v` prints for it (its `String` method, or its fields).
    fn go_string(&self) -> String {
        format!("&{{{}}}", self.type_name())
    }
    /// Its `reflect.Kind` (`kindOf`): `ptr` for a pointer, `struct`, `map` or `slice`.
    fn kind(&self) -> &'static str {
        "ptr"
    }
    /// Whether it is a map or slice without elements (sprig's `empty`).
    fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
    /// Its length, for objects that are maps or slices in Go (`len`).
    fn len(&self) -> Option<usize> {
        None
    }
    /// Its keys (or indexes) and elements, for objects `range` can walk.
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        None
    }
}

/// A value a template works on.
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// Go's nil (a missing map key, an unset value).
    #[default]
    Nil,
    /// A boolean.
    Bool(bool),
    /// A Go `int`: template literals, `len`, `atoi`, `int`, range indexes.
    Int(i64),
    /// A Go `int64`: what sprig's integer arithmetic and `int64` return. It prints and
    /// compares as `Int` does; only `typeOf`, `kindOf` and `deepEqual` tell them apart.
    Int64(i64),
    /// A float64 (Helm reads every number in values files as one).
    Float(f64),
    /// A string.
    Str(Rc<str>),
    /// A `[]byte` (a file of `.Files.Glob`, `randBytes`' input).
    Bytes(Rc<[u8]>),
    /// A list.
    List(Rc<Vec<Value>>),
    /// A map with string keys.
    Map(Map),
    /// An object with methods.
    Object(Rc<dyn Object>),
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a) | Value::Int64(a), Value::Int(b) | Value::Int64(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Int(a) | Value::Int64(a), Value::Float(b))
            | (Value::Float(b), Value::Int(a) | Value::Int64(a)) => (*a as f64) == *b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => Rc::ptr_eq(a, b) || *a.borrow() == *b.borrow(),
            (Value::Object(a), Value::Object(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(Rc::from(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(Rc::from(s))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Self {
        Value::List(Rc::new(items))
    }
}

impl From<BTreeMap<String, Value>> for Value {
    fn from(map: BTreeMap<String, Value>) -> Self {
        Value::Map(Rc::new(RefCell::new(map)))
    }
}

impl Value {
    /// A new empty map.
    pub fn empty_map() -> Self {
        Value::from(BTreeMap::new())
    }

    /// Go's truth: false, 0, nil and empty strings, lists and maps are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Object(_) => true,
        }
    }

    /// The Go type name used in error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::Bytes(_) => "[]uint8",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
            Value::Object(o) => o.type_name(),
        }
    }

    /// The integer, if this is one (`int` or `int64`).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) | Value::Int64(i) => Some(*i),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A Go slice of one of Helm's own types (`.Capabilities.APIVersions`) as the list it
    /// holds, for the functions that walk slices by reflection; any other value as it is.
    pub(crate) fn unwrapped_slice(&self) -> Value {
        match self {
            Value::Object(object) if object.kind() == "slice" => Value::from(
                object
                    .entries()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(_, item)| item)
                    .collect::<Vec<_>>(),
            ),
            other => other.clone(),
        }
    }

    /// A map field; nil when missing or when this is not a map.
    pub fn get(&self, key: &str) -> Value {
        match self {
            Value::Map(m) => m.borrow().get(key).cloned().unwrap_or_default(),
            _ => Value::Nil,
        }
    }

    /// The value as `fmt.Sprint` prints it.
    pub fn to_go_string(&self) -> String {
        let mut out = String::new();
        self.write_go(&mut out, true);
        out
    }

    fn write_go(&self, out: &mut String, top: bool) {
        match self {
            Value::Nil if top => out.push_str("<no value>"),
            Value::Nil => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) | Value::Int64(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => out.push_str(&format_float_g(*f)),
            Value::Str(s) => out.push_str(s),
            Value::Bytes(bytes) => {
                out.push('[');
                for (i, byte) in bytes.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{byte}");
                }
                out.push(']');
            }
            Value::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    item.write_go(out, false);
                }
                out.push(']');
            }
            Value::Map(map) => {
                out.push_str("map[");
                for (i, (key, value)) in map.borrow().iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(key);
                    out.push(':');
                    value.write_go(out, false);
                }
                out.push(']');
            }
            Value::Object(o) => out.push_str(&o.go_string()),
        }
    }

    /// A deep copy: maps are copied, not shared.
    pub fn deep_copy(&self) -> Value {
        match self {
            Value::List(items) => {
                Value::from(items.iter().map(Value::deep_copy).collect::<Vec<_>>())
            }
            Value::Map(map) => Value::from(
                map.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.deep_copy()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            other => other.clone(),
        }
    }

    /// Converts from JSON, keeping integers as int64 (as sprig's `fromJson` does not, see
    /// `from_json_floats`).
    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(s) => Value::from(s.as_str()),
            serde_json::Value::Array(items) => {
                Value::from(items.iter().map(Value::from_json).collect::<Vec<_>>())
            }
            serde_json::Value::Object(map) => Value::from(
                map.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect::<BTreeMap<_, _>>(),
            ),
        }
    }

    /// Converts from JSON with every number a float64, as Go's `encoding/json` decodes into
    /// `interface{}` (how Helm reads values files).
    pub fn from_json_floats(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::Array(items) => Value::from(
                items
                    .iter()
                    .map(Value::from_json_floats)
                    .collect::<Vec<_>>(),
            ),
            serde_json::Value::Object(map) => Value::from(
                map.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json_floats(v)))
                    .collect::<BTreeMap<_, _>>(),
            ),
            other => Value::from_json(other),
        }
    }

    /// Converts to JSON (maps in key order).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => {
                serde_json::Value::from(*f as i64)
            }
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::Bytes(bytes) => {
                use base64::Engine;
                serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect())
            }
            Value::Map(map) => serde_json::Value::Object(
                map.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
            Value::Object(o) => o.to_json(),
        }
    }
}

/// A float as Go's `%v` prints it (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest
/// digits, in exponent form when the decimal exponent is below -4 or at least 6.
pub fn format_float_g(f: f64) -> String {
    format_shortest_g(f, format!("{f:e}"))
}

/// `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits that read back as the same
/// float32.
pub fn format_float32_g(f: f32) -> String {
    format_shortest_g(f64::from(f), format!("{f:e}"))
}

/// Go's `'g'` format of `f` from its shortest round-tripping digits in Rust's `{:e}` form
/// (`1.234567e6`).
fn format_shortest_g(f: f64, scientific: String) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // strconv with the shortest digits uses %e when exp < -4 || exp >= 6.
    let count = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let eprec = 6;
    let sign = if negative { "-" } else { "" };
    if exponent < -4 || exponent >= eprec {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{fraction}e{exp_sign}{:02}", exponent.abs());
    }
    let point = exponent + 1;
    if point <= 0 {
        let zeros = "0".repeat(usize::try_from(-point).unwrap_or(0));
        format!("{sign}0.{zeros}{digits}")
    } else if point >= count {
        let zeros = "0".repeat(usize::try_from(point - count).unwrap_or(0));
        format!("{sign}{digits}{zeros}")
    } else {
        let (whole, fraction) = digits.split_at(usize::try_from(point).unwrap_or(0));
        format!("{sign}{whole}.{fraction}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_prints_them() {
        // Checked against Go's documented strconv 'g' / fmt %v behaviour.
        let cases = [
            (3.0, "3"),
            (0.5, "0.5"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (123456.0, "123456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
            (12345678.9, "1.23456789e+07"),
        ];
        for (value, printed) in cases {
            assert_eq!(format_float_g(value), printed, "{value}");
        }
    }

    #[test]
    fn values_print_with_percent_v() {
        let map = Value::from(BTreeMap::from([
            (
                "b".to_string(),
                Value::from(vec![Value::Int(1), Value::from("x")]),
            ),
            ("a".to_string(), Value::Nil),
        ]));
        assert_eq!(map.to_go_string(), "map[a:<nil> b:[1 x]]");
        assert_eq!(Value::Nil.to_go_string(), "<no value>");
        assert!(!Value::from("").truthy());
        assert!(Value::Float(0.1).truthy());
        assert!(!Value::empty_map().truthy());
    }
}
