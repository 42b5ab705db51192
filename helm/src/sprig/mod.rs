//! Every function of sprig v3 that Helm 4 keeps, and Helm's own serialisers, with
//! sprig's argument order (the piped value last), its conversions and its error texts.
//! Random and time functions draw on the render's
//! [`World`](crate::template::World): really random and current, unless a test
//! seeds it.

mod case;
mod convert;
mod crypto;
mod dicts;
mod durations;
mod encoding;
mod lists;
mod logic;
mod math;
mod paths;
mod random;
mod regex;
pub(crate) mod semver;
mod strings;
mod time;

use std::collections::HashMap;

use super::template::{Func, Value};

/// Every sprig function this engine has, by name.
pub(crate) fn functions() -> HashMap<&'static str, Func> {
    let mut funcs = HashMap::new();
    let registers: [fn(&mut HashMap<&'static str, Func>); 14] = [
        strings::register,
        lists::register,
        dicts::register,
        logic::register,
        math::register,
        regex::register,
        convert::register,
        encoding::register,
        paths::register,
        random::register,
        crypto::register,
        semver::register,
        time::register,
        durations::register,
    ];
    for register in registers {
        register(&mut funcs);
    }
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

/// An `int` parameter: Go's template passes only an `int` to it (an `int64` from
/// sprig's arithmetic, or a float64 from values, is refused).
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

#[cfg(test)]
mod tests;
