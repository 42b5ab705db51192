//! Dictionary functions: `dict`, `get`, `set`, `unset`, `hasKey`, `keys`, `values`, `pluck`,
//! `merge`, `mergeOverwrite`, `deepCopy`, `omit`, `pick`, `dig`. `set` and `unset` change the
//! dict in place, as in Go. `keys` returns keys sorted (Go's order is random).

use std::collections::{BTreeMap, HashMap};

use super::arity;
use super::convert::strval;
use crate::template::{Func, Value};

/// A `map[string]interface{}` parameter. Go's template passes nil as a nil map, which reads
/// as empty (and cannot be written: see [`writable_map_arg`]).
fn map_arg(value: &Value) -> Result<crate::template::value::Map, String> {
    match value {
        Value::Map(m) => Ok(m.clone()),
        Value::Nil => Ok(std::rc::Rc::default()),
        other => Err(format!(
            "wrong type for value; expected map[string]interface {{}}; got {}",
            other.type_name()
        )),
    }
}

/// A map parameter that is written to: a nil map panics in Go.
fn writable_map_arg(value: &Value) -> Result<crate::template::value::Map, String> {
    match value {
        Value::Nil => Err("assignment to entry in nil map".into()),
        other => map_arg(other),
    }
}

/// Merges `source` into `target` as mergo does for sprig: a dict into a non-empty dict
/// merges key by key; otherwise a value fills a missing or empty key, or with `overwrite`
/// replaces what is there (nil included, which plain merging never copies).
pub(super) fn merge_into(target: &Value, source: &Value, overwrite: bool) {
    let (Value::Map(target), Value::Map(source)) = (target, source) else {
        return;
    };
    if std::rc::Rc::ptr_eq(target, source) {
        return;
    }
    let source = source.borrow();
    for (key, value) in source.iter() {
        let existing = target.borrow().get(key).cloned();
        match (value, existing) {
            (Value::Nil, _) => {
                if overwrite {
                    target.borrow_mut().insert(key.clone(), Value::Nil);
                }
            }
            (Value::Map(_), Some(current @ Value::Map(_))) if current.truthy() => {
                merge_into(&current, value, overwrite)
            }
            (_, Some(current)) if !overwrite && !super::logic::empty(&current) => {}
            _ => {
                target.borrow_mut().insert(key.clone(), value.deep_copy());
            }
        }
    }
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("dict", |_, a| {
        let mut map = BTreeMap::new();
        for pair in a.chunks(2) {
            let value = pair.get(1).cloned().unwrap_or_else(|| Value::from(""));
            map.insert(strval(&pair[0]), value);
        }
        Ok(Value::from(map))
    });
    funcs.insert("get", |_, a| {
        arity("get", &a, 2)?;
        let map = map_arg(&a[0])?;
        let found = map.borrow().get(&strval(&a[1])).cloned();
        Ok(found.unwrap_or_else(|| Value::from("")))
    });
    funcs.insert("set", |_, a| {
        arity("set", &a, 3)?;
        writable_map_arg(&a[0])?
            .borrow_mut()
            .insert(strval(&a[1]), a[2].clone());
        Ok(a[0].clone())
    });
    funcs.insert("unset", |_, a| {
        arity("unset", &a, 2)?;
        writable_map_arg(&a[0])?.borrow_mut().remove(&strval(&a[1]));
        Ok(a[0].clone())
    });
    funcs.insert("hasKey", |_, a| {
        arity("hasKey", &a, 2)?;
        Ok(Value::Bool(
            map_arg(&a[0])?.borrow().contains_key(&strval(&a[1])),
        ))
    });
    funcs.insert("keys", |_, a| {
        let mut keys = Vec::new();
        for d in &a {
            keys.extend(map_arg(d)?.borrow().keys().map(|k| Value::from(k.as_str())));
        }
        Ok(Value::from(keys))
    });
    funcs.insert("values", |_, a| {
        arity("values", &a, 1)?;
        Ok(Value::from(
            map_arg(&a[0])?
                .borrow()
                .values()
                .cloned()
                .collect::<Vec<_>>(),
        ))
    });
    funcs.insert("pluck", |_, a| {
        let (key, dicts) = a.split_first().ok_or("wrong number of args for pluck")?;
        let key = strval(key);
        let mut out = Vec::new();
        for d in dicts {
            if let Some(v) = map_arg(d)?.borrow().get(&key) {
                out.push(v.clone());
            }
        }
        Ok(Value::from(out))
    });
    funcs.insert("merge", |_, a| merge(a, false));
    funcs.insert("mustMerge", |_, a| merge(a, false));
    funcs.insert("mergeOverwrite", |_, a| merge(a, true));
    funcs.insert("mustMergeOverwrite", |_, a| merge(a, true));
    funcs.insert("deepCopy", |_, a| {
        arity("deepCopy", &a, 1)?;
        Ok(a[0].deep_copy())
    });
    funcs.insert("mustDeepCopy", |_, a| {
        arity("mustDeepCopy", &a, 1)?;
        Ok(a[0].deep_copy())
    });
    funcs.insert("omit", |_, a| select(&a, "omit", false));
    funcs.insert("pick", |_, a| select(&a, "pick", true));
    funcs.insert("dig", |_, a| {
        if a.len() < 3 {
            return Err("dig needs at least three arguments".into());
        }
        let (dict, rest) = a.split_last().ok_or("dig")?;
        let (default, keys) = rest.split_last().ok_or("dig")?;
        let mut current = dict.clone();
        for key in keys {
            match &current {
                Value::Map(m) => {
                    let next = m.borrow().get(&strval(key)).cloned();
                    match next {
                        Some(v) => current = v,
                        None => return Ok(default.clone()),
                    }
                }
                _ => return Ok(default.clone()),
            }
        }
        Ok(current)
    });
}

fn merge(args: Vec<Value>, overwrite: bool) -> Result<Value, String> {
    let (target, sources) = args.split_first().ok_or("merge needs a destination")?;
    map_arg(target)?;
    for source in sources {
        merge_into(target, source, overwrite);
    }
    Ok(target.clone())
}

fn select(args: &[Value], name: &str, keep: bool) -> Result<Value, String> {
    let (dict, keys) = args
        .split_first()
        .ok_or_else(|| format!("wrong number of args for {name}"))?;
    let keys: Vec<String> = keys.iter().map(strval).collect();
    let map = map_arg(dict)?;
    let map = map.borrow();
    let chosen: BTreeMap<String, Value> = map
        .iter()
        .filter(|(k, _)| keys.contains(k) == keep)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Value::from(chosen))
}
