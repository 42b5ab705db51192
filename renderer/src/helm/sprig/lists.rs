//! List functions: `list`, `first`, `last`, `rest`, `initial`, `append`, `prepend`,
//! `concat`, `has`, `uniq`, `without`, `sortAlpha`, `compact`, `reverse`, `until`,
//! `untilStep`, `seq`.

use std::collections::HashMap;

use super::convert::strval;
use super::logic::empty;
use super::{arity, int_arg, items};
use crate::helm::template::{Func, Value};

/// The longest list `until` and friends may make.
pub const MAX_LIST: i64 = 1_000_000;

fn list(values: Vec<Value>) -> Result<Value, String> {
    Ok(Value::from(values))
}

fn one_list(name: &str, args: &[Value]) -> Result<Vec<Value>, String> {
    arity(name, args, 1)?;
    items(name, &args[0])
}

fn steps(start: i64, stop: i64, step: i64) -> Result<Value, String> {
    if step == 0 {
        return list(Vec::new());
    }
    let count = stop.checked_sub(start).map(|span| span / step);
    if count.is_none_or(|c| c > MAX_LIST) {
        return Err(format!("the list would have more than {MAX_LIST} items"));
    }
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(Value::Int(i));
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    list(out)
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("list", |_, a| list(a));
    funcs.insert("tuple", |_, a| list(a));
    funcs.insert("first", |_, a| {
        Ok(one_list("first", &a)?.first().cloned().unwrap_or_default())
    });
    funcs.insert("last", |_, a| {
        Ok(one_list("last", &a)?.last().cloned().unwrap_or_default())
    });
    funcs.insert("rest", |_, a| {
        let l = one_list("rest", &a)?;
        list(l.get(1..).map(<[Value]>::to_vec).unwrap_or_default())
    });
    funcs.insert("initial", |_, a| {
        let l = one_list("initial", &a)?;
        list(l[..l.len().saturating_sub(1)].to_vec())
    });
    funcs.insert("append", append);
    funcs.insert("push", append);
    funcs.insert("prepend", |_, a| {
        arity("prepend", &a, 2)?;
        let mut l = vec![a[1].clone()];
        l.extend(items("prepend", &a[0])?);
        list(l)
    });
    funcs.insert("concat", |_, a| {
        let mut out = Vec::new();
        for l in &a {
            out.extend(items("concat", l)?);
        }
        list(out)
    });
    funcs.insert("has", |_, a| {
        arity("has", &a, 2)?;
        Ok(Value::Bool(items("has", &a[1])?.contains(&a[0])))
    });
    funcs.insert("uniq", |_, a| {
        let mut out: Vec<Value> = Vec::new();
        for v in one_list("uniq", &a)? {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        list(out)
    });
    funcs.insert("without", |_, a| {
        let (first, drop) = a.split_first().ok_or("wrong number of args for without")?;
        list(
            items("without", first)?
                .into_iter()
                .filter(|v| !drop.contains(v))
                .collect(),
        )
    });
    funcs.insert("sortAlpha", |_, a| {
        let mut l: Vec<String> = match a.as_slice() {
            [Value::List(l)] => l.iter().map(strval).collect(),
            [other] => vec![strval(other)],
            _ => {
                return Err(format!(
                    "wrong number of args for sortAlpha: want 1 got {}",
                    a.len()
                ))
            }
        };
        l.sort();
        list(l.into_iter().map(Value::from).collect())
    });
    funcs.insert("compact", |_, a| {
        list(
            one_list("compact", &a)?
                .into_iter()
                .filter(|v| !empty(v))
                .collect(),
        )
    });
    funcs.insert("reverse", |_, a| {
        let mut l = one_list("reverse", &a)?;
        l.reverse();
        list(l)
    });
    funcs.insert("until", |_, a| {
        arity("until", &a, 1)?;
        let n = int_arg(&a[0])?;
        steps(0, n, if n < 0 { -1 } else { 1 })
    });
    funcs.insert("untilStep", |_, a| {
        arity("untilStep", &a, 3)?;
        steps(int_arg(&a[0])?, int_arg(&a[1])?, int_arg(&a[2])?)
    });
    funcs.insert("seq", |_, a| {
        let n = a
            .iter()
            .map(int_arg)
            .collect::<Result<Vec<i64>, String>>()?;
        let (start, step, end) = match n.as_slice() {
            [end] => (1, 1, *end),
            [start, end] => (*start, if end >= start { 1 } else { -1 }, *end),
            [start, step, end] => (*start, *step, *end),
            _ => return Err("seq takes 1 to 3 arguments".into()),
        };
        let values = steps(start, end.saturating_add(step.signum()), step)?;
        let parts: Vec<String> = items("seq", &values)?.iter().map(strval).collect();
        Ok(Value::from(parts.join(" ")))
    });
}

fn append(_: &mut crate::helm::template::Exec, a: Vec<Value>) -> Result<Value, String> {
    arity("append", &a, 2)?;
    let mut l = items("append", &a[0])?;
    l.push(a[1].clone());
    list(l)
}
