//! The functions every Go template has: comparisons, `not`, `len`, `index`, `slice`,
//! `print*`, and the `html`, `js` and `urlquery` escapers. (`and` and `or` are evaluated
//! lazily by the executor.)

use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

use super::exec::{Exec, Func};
use super::printf;
use super::value::{Object, Value};

/// Go's built-in template functions.
pub fn functions() -> HashMap<&'static str, Func> {
    let mut funcs: HashMap<&'static str, Func> = HashMap::new();
    funcs.insert("eq", eq);
    funcs.insert("ne", |e, a| eq(e, a).map(|v| Value::Bool(!v.truthy())));
    funcs.insert("lt", |_, a| compare(&a, "lt", |o| o == Ordering::Less));
    funcs.insert("le", |_, a| compare(&a, "le", |o| o != Ordering::Greater));
    funcs.insert("gt", |_, a| compare(&a, "gt", |o| o == Ordering::Greater));
    funcs.insert("ge", |_, a| compare(&a, "ge", |o| o != Ordering::Less));
    funcs.insert("not", |_, a| match a.as_slice() {
        [one] => Ok(Value::Bool(!one.truthy())),
        _ => Err(format!(
            "wrong number of args for not: want 1 got {}",
            a.len()
        )),
    });
    funcs.insert("len", |_, a| match a.as_slice() {
        [Value::Str(s)] => Ok(Value::Int(s.len() as i64)),
        [Value::List(l)] => Ok(Value::Int(l.len() as i64)),
        [Value::Map(m)] => Ok(Value::Int(m.borrow().len() as i64)),
        [Value::Bytes(b)] => Ok(Value::Int(b.len() as i64)),
        [Value::Object(o)] if o.len().is_some() => {
            Ok(Value::Int(o.len().unwrap_or_default() as i64))
        }
        [other] => Err(format!("len of type {}", other.type_name())),
        _ => Err(format!(
            "wrong number of args for len: want 1 got {}",
            a.len()
        )),
    });
    funcs.insert("index", index);
    funcs.insert("slice", slice);
    funcs.insert("print", |_, a| Ok(Value::from(printf::sprint(&a))));
    funcs.insert("println", |_, a| Ok(Value::from(printf::sprintln(&a))));
    funcs.insert("printf", |_, a| match a.split_first() {
        Some((Value::Str(format), rest)) => Ok(Value::from(printf::sprintf(format, rest))),
        Some((other, _)) => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
        None => Err("wrong number of args for printf: want at least 1 got 0".into()),
    });
    funcs.insert("html", |_, a| {
        Ok(Value::from(html_escape(&printf::sprint(&a))))
    });
    funcs.insert("js", |_, a| Ok(Value::from(js_escape(&printf::sprint(&a)))));
    funcs.insert("urlquery", |_, a| {
        Ok(Value::from(query_escape(&printf::sprint(&a))))
    });
    funcs
}

fn basic_kind(value: &Value) -> Option<u8> {
    match value {
        Value::Bool(_) => Some(0),
        Value::Int(_) | Value::Int64(_) => Some(1),
        Value::Float(_) => Some(2),
        Value::Str(_) => Some(3),
        _ => None,
    }
}

/// `eq a b c...`: whether `a` equals any of the others, with Go's type rules.
fn eq(_: &mut Exec, args: Vec<Value>) -> Result<Value, String> {
    let Some((first, others)) = args.split_first() else {
        return Err("missing argument for comparison".into());
    };
    if others.is_empty() {
        return Err("missing argument for comparison".into());
    }
    for other in others {
        let equal = match (first, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Nil, _) | (_, Value::Nil) => false,
            (Value::Object(a), Value::Object(b)) if is_time(a) && is_time(b) => {
                a.to_json() == b.to_json()
            }
            (a, b) => match (basic_kind(a), basic_kind(b)) {
                (Some(x), Some(y)) if x == y => a == b,
                (None, None) => not_comparable(a, b)?,
                _ => {
                    return Err(format!(
                        "incompatible types for comparison: {} and {}",
                        a.type_name(),
                        b.type_name()
                    ))
                }
            },
        };
        if equal {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

/// Go's `eq` on two values of no basic kind (lists, maps, objects): an error unless both
/// are structs, which compare by identity here.
fn not_comparable(a: &Value, b: &Value) -> Result<bool, String> {
    let kind = |v: &Value| match v {
        Value::List(_) | Value::Bytes(_) => "slice",
        Value::Map(_) => "map",
        Value::Object(object) => object.kind(),
        _ => "invalid",
    };
    let shown = |verb: &str, v: &Value| printf::sprintf(verb, std::slice::from_ref(v));
    match (kind(a), kind(b)) {
        ("struct", "struct") => Ok(a == b),
        (x, y) if x != y => Err(format!(
            "non-comparable types {}: {}, {}: {}",
            shown("%s", a),
            a.type_name(),
            b.type_name(),
            shown("%v", b)
        )),
        _ => Err(format!(
            "non-comparable type {}: {}",
            shown("%s", b),
            b.type_name()
        )),
    }
}

/// Whether `object` is a `time.Time`, a comparable struct Go's `eq` compares by value:
/// the same instant written the same way.
fn is_time(object: &Rc<dyn Object>) -> bool {
    object.type_name() == "time.Time"
}

fn compare(args: &[Value], name: &str, test: fn(Ordering) -> bool) -> Result<Value, String> {
    let [a, b] = args else {
        return Err(format!(
            "wrong number of args for {name}: want 2 got {}",
            args.len()
        ));
    };
    let ordering = match (a, b) {
        (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => {
            x.partial_cmp(y).ok_or("invalid comparison of NaN")?
        }
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (x, y)
            if basic_kind(x).is_some() && basic_kind(y).is_some() && basic_kind(x) != Some(0) =>
        {
            return Err("incompatible types for comparison".into())
        }
        _ => return Err("invalid type for comparison".into()),
    };
    Ok(Value::Bool(test(ordering)))
}

fn int_index(value: &Value) -> Result<i64, String> {
    match value {
        Value::Int(i) | Value::Int64(i) => Ok(*i),
        Value::Float(f) if f.fract() == 0.0 => Ok(*f as i64),
        other => Err(format!(
            "cannot index slice/array with type {}",
            other.type_name()
        )),
    }
}

fn index(_: &mut Exec, args: Vec<Value>) -> Result<Value, String> {
    let Some((mut value, keys)) = args.split_first().map(|(f, r)| (f.clone(), r)) else {
        return Err("wrong number of args for index: want at least 1 got 0".into());
    };
    for key in keys {
        value = match &value.unwrapped_slice() {
            Value::List(items) => {
                let i = int_index(key)?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| items.get(i))
                    .cloned()
                    .ok_or_else(|| format!("error calling index: index out of range: {i}"))?
            }
            Value::Map(map) => match key {
                Value::Str(k) => map.borrow().get(&**k).cloned().unwrap_or_default(),
                other => {
                    return Err(format!(
                        "value has type {}; should be string",
                        other.type_name()
                    ))
                }
            },
            Value::Str(s) => {
                let i = int_index(key)?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| s.as_bytes().get(i))
                    .map(|b| Value::Int(i64::from(*b)))
                    .ok_or_else(|| format!("error calling index: index out of range: {i}"))?
            }
            Value::Nil => return Err("index of untyped nil".into()),
            other => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(value)
}

fn slice(_: &mut Exec, args: Vec<Value>) -> Result<Value, String> {
    let Some((value, bounds)) = args.split_first() else {
        return Err("wrong number of args for slice: want at least 1 got 0".into());
    };
    let length = match value {
        Value::Str(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Nil => return Err("slice of untyped nil".into()),
        other => return Err(format!("can't slice item of type {}", other.type_name())),
    };
    if bounds.len() > 2 {
        return Err("too many slice indexes".into());
    }
    let bound = |i: usize, default: usize| -> Result<usize, String> {
        match bounds.get(i) {
            Some(v) => {
                usize::try_from(int_index(v)?).map_err(|_| "negative slice index".to_string())
            }
            None => Ok(default),
        }
    };
    let (start, end) = (bound(0, 0)?, bound(1, length)?);
    if start > end || end > length {
        return Err(format!("index out of range: {start}:{end}"));
    }
    Ok(match value {
        Value::Str(s) => Value::from(
            s.get(start..end)
                .ok_or("slice splits a multi-byte character")?
                .to_string(),
        ),
        Value::List(l) => Value::from(l[start..end].to_vec()),
        _ => Value::Nil,
    })
}

/// `html`: escapes `<>&'"` and NUL as Go's `template.HTMLEscapeString`.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `js`: escapes as Go's `template.JSEscapeString`.
pub fn js_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `urlquery`: escapes as Go's `url.QueryEscape`.
pub fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}
