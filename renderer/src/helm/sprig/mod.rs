//! The sprig functions real charts use, with sprig's argument order (the piped value
//! last) and its conversions. Non-deterministic ones (`uuidv4`, `randAlphaNum`, `now`)
//! really are random or current, as in Helm.

mod convert;
mod dicts;
mod lists;
mod logic;
pub mod semver;
mod strings;
mod time;

use std::collections::HashMap;

use super::template::{Func, Value};

pub use convert::{strval, to_float, to_int, to_yaml};

/// Every sprig function this engine has, by name.
pub fn functions() -> HashMap<&'static str, Func> {
    let mut funcs = HashMap::new();
    strings::register(&mut funcs);
    lists::register(&mut funcs);
    dicts::register(&mut funcs);
    logic::register(&mut funcs);
    convert::register(&mut funcs);
    semver::register(&mut funcs);
    time::register(&mut funcs);
    funcs
}

/// Checks the argument count.
fn arity(name: &str, args: &[Value], want: usize) -> Result<(), String> {
    if args.len() == want {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args for {name}: want {want} got {}",
            args.len()
        ))
    }
}

/// An `int` parameter: Go's template passes only integers to it.
fn int_arg(value: &Value) -> Result<i64, String> {
    match value {
        Value::Int(i) => Ok(*i),
        other => Err(format!(
            "wrong type for value; expected int; got {}",
            other.type_name()
        )),
    }
}

/// A `string` parameter: Go's template passes only strings to it.
fn str_arg(value: &Value) -> Result<String, String> {
    match value {
        Value::Str(s) => Ok(s.to_string()),
        Value::Nil => Err("invalid value; expected string".into()),
        other => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
    }
}

/// The items of a list argument; nil is an empty list.
fn items(name: &str, value: &Value) -> Result<Vec<Value>, String> {
    match value {
        Value::List(items) => Ok(items.to_vec()),
        Value::Nil => Ok(Vec::new()),
        other => Err(format!("Cannot {name} on type {}", other.type_name())),
    }
}

#[cfg(test)]
mod tests;
