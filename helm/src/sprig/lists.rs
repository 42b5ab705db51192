//! List functions: `list`, `first`, `last`, `rest`, `initial`, `append`, `prepend`,
//! `concat`, `has`, `uniq`, `without`, `sortAlpha`, `compact`, `reverse`, `slice` and
//! `chunk`, each with its `must` twin (sprig's plain form panics where the `must` form
//! returns an error, and a template reports both the same way).

use std::collections::HashMap;

use super::convert::{deep_equal, kind, strslice};
use super::logic::empty;
use super::{arity, int_arg};
use crate::template::{Exec, Func, Value};

/// The most items a list function may build.
pub(super) const MAX_LIST: usize = 1_000_000;

fn list(values: Vec<Value>) -> Result<Value, String> {
    Ok(Value::from(values))
}

/// A slice argument, or sprig's `Cannot <what> on type <kind>` (Go panics on nil, which
/// has no type).
fn slice_arg(what: &str, value: &Value) -> Result<Vec<Value>, String> {
    match value.unwrapped_slice() {
        Value::List(items) => Ok(items.to_vec()),
        Value::Bytes(bytes) => Ok(bytes.iter().map(|b| Value::Int(i64::from(*b))).collect()),
        Value::Nil => Err(NIL_TYPE.into()),
        other => Err(format!("Cannot {what} on type {}", kind(&other))),
    }
}

/// What Go says when sprig asks nil for its type.
const NIL_TYPE: &str = "runtime error: invalid memory address or nil pointer dereference";

fn one_list(name: &str, what: &str, args: &[Value]) -> Result<Vec<Value>, String> {
    arity(name, args, 1)?;
    slice_arg(what, &args[0])
}

fn first(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    Ok(one_list("first", "find first", &a)?
        .first()
        .cloned()
        .unwrap_or_default())
}

fn last(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    Ok(one_list("last", "find last", &a)?
        .last()
        .cloned()
        .unwrap_or_default())
}

fn rest(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let l = one_list("rest", "find rest", &a)?;
    list(l.get(1..).unwrap_or_default().to_vec())
}

fn initial(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let l = one_list("initial", "find initial", &a)?;
    list(l[..l.len().saturating_sub(1)].to_vec())
}

fn append(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    arity("append", &a, 2)?;
    let mut l = slice_arg("push", &a[0])?;
    l.push(a[1].clone());
    list(l)
}

fn prepend(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    arity("prepend", &a, 2)?;
    let mut l = vec![a[1].clone()];
    l.extend(slice_arg("prepend", &a[0])?);
    list(l)
}

fn has(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    arity("has", &a, 2)?;
    if matches!(a[1], Value::Nil) {
        return Ok(Value::Bool(false));
    }
    let haystack = slice_arg("find has", &a[1])?;
    Ok(Value::Bool(haystack.iter().any(|v| deep_equal(v, &a[0]))))
}

fn uniq(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let mut out: Vec<Value> = Vec::new();
    for v in one_list("uniq", "find uniq", &a)? {
        if !out.iter().any(|o| deep_equal(o, &v)) {
            out.push(v);
        }
    }
    list(out)
}

fn without(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let (first, drop) = a
        .split_first()
        .ok_or("wrong number of args for without: want at least 1 got 0")?;
    list(
        slice_arg("find without", first)?
            .into_iter()
            .filter(|v| !drop.iter().any(|d| deep_equal(d, v)))
            .collect(),
    )
}

fn compact(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    list(
        one_list("compact", "compact", &a)?
            .into_iter()
            .filter(|v| !empty(v))
            .collect(),
    )
}

fn reverse(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let mut l = one_list("reverse", "find reverse", &a)?;
    l.reverse();
    list(l)
}

/// sprig's `slice`: `list[start:]` or `list[start:end]`, each bound read with cast.
fn slice(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let (value, bounds) = a
        .split_first()
        .ok_or("wrong number of args for slice: want at least 1 got 0")?;
    let l = match value.unwrapped_slice() {
        Value::List(items) => items.to_vec(),
        Value::Nil => return Err(NIL_TYPE.into()),
        other => {
            return Err(format!(
                "list should be type of slice or array but {}",
                kind(&other)
            ))
        }
    };
    const OUT_OF_BOUNDS: &str = "reflect.Value.Slice: slice index out of bounds";
    let bound = |i: usize, default: usize| match bounds.get(i) {
        Some(v) => usize::try_from(super::convert::to_int(v)).map_err(|_| OUT_OF_BOUNDS),
        None => Ok(default),
    };
    let (start, end) = (bound(0, 0)?, bound(1, l.len())?);
    if start > end || end > l.len() {
        return Err(OUT_OF_BOUNDS.into());
    }
    list(l[start..end].to_vec())
}

/// `chunk size list`: the list in pieces of `size` items, the last maybe shorter.
fn chunk(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    arity("chunk", &a, 2)?;
    let size = int_arg(&a[0])?;
    let l = match &a[1] {
        Value::List(items) => items.to_vec(),
        Value::Nil => return Err(NIL_TYPE.into()),
        other => return Err(format!("Cannot chunk type {}", kind(other))),
    };
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s > 0)
        .ok_or("runtime error: makeslice: len out of range")?;
    list(l.chunks(size).map(|c| Value::from(c.to_vec())).collect())
}

fn concat(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let mut out = Vec::new();
    for l in &a {
        match l {
            Value::List(items) => out.extend(items.iter().cloned()),
            Value::Nil => return Err(NIL_TYPE.into()),
            other => return Err(format!("Cannot concat type {} as list", kind(other))),
        }
        if out.len() > MAX_LIST {
            return Err(format!("concat: more than {MAX_LIST} items"));
        }
    }
    list(out)
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("list", |_, a| list(a));
    funcs.insert("tuple", |_, a| list(a));
    let pairs: [(&'static str, &'static str, Func); 15] = [
        ("first", "mustFirst", first),
        ("last", "mustLast", last),
        ("rest", "mustRest", rest),
        ("initial", "mustInitial", initial),
        ("append", "mustAppend", append),
        ("push", "mustPush", append),
        ("prepend", "mustPrepend", prepend),
        ("has", "mustHas", has),
        ("uniq", "mustUniq", uniq),
        ("without", "mustWithout", without),
        ("compact", "mustCompact", compact),
        ("reverse", "mustReverse", reverse),
        ("slice", "mustSlice", slice),
        ("chunk", "mustChunk", chunk),
        ("concat", "concat", concat),
    ];
    for (plain, must, func) in pairs {
        funcs.insert(plain, func);
        funcs.insert(must, func);
    }
    funcs.insert("sortAlpha", |_, a| {
        arity("sortAlpha", &a, 1)?;
        let items = a[0].unwrapped_slice();
        let mut l = strslice(&items);
        if !matches!(items, Value::List(_)) {
            l = vec![super::convert::strval(&a[0])];
        }
        l.sort();
        list(l.into_iter().map(Value::from).collect())
    });
}
