//! Defaults and flow: `default`, `empty`, `coalesce`, `ternary`, `required`, `fail`;
//! type tests (`kindOf`, `kindIs`, `typeOf`, `typeIs`, `deepEqual`); and integer and float
//! arithmetic (`add`, `sub`, `mul`, `div`, `mod`, `max`, `min`, `add1`, `floor`, `ceil`,
//! `round`, `addf`, `subf`, `mulf`, `divf`).

use std::collections::HashMap;

use super::arity;
use super::convert::{strval, to_float, to_int};
use crate::helm::template::{Exec, Func, Value};

/// sprig's `empty`: nil, false, 0, and empty strings, lists and maps.
pub fn empty(value: &Value) -> bool {
    !value.truthy()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int64",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Object(_) => "ptr",
    }
}

/// Records a message that Helm shows verbatim, and returns it as the error.
fn user_error(exec: &mut Exec, message: String) -> Result<Value, String> {
    exec.user_message = Some(message.clone());
    Err(message)
}

fn integers(
    name: &str,
    args: &[Value],
    fold: fn(i64, i64) -> Option<i64>,
) -> Result<Value, String> {
    let mut values = args.iter().map(to_int);
    let first = values
        .next()
        .ok_or_else(|| format!("wrong number of args for {name}"))?;
    values
        .try_fold(first, |acc, v| {
            fold(acc, v).ok_or_else(|| format!("{name}: integer overflow or division by zero"))
        })
        .map(Value::Int)
}

fn floats(name: &str, args: &[Value], fold: fn(f64, f64) -> f64) -> Result<Value, String> {
    let mut values = args.iter().map(to_float);
    let first = values
        .next()
        .ok_or_else(|| format!("wrong number of args for {name}"))?;
    Ok(Value::Float(values.fold(first, fold)))
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("default", |_, a| match a.as_slice() {
        [fallback] => Ok(fallback.clone()),
        [fallback, given, ..] => Ok(if empty(given) {
            fallback.clone()
        } else {
            given.clone()
        }),
        [] => Err("wrong number of args for default: want at least 1 got 0".into()),
    });
    funcs.insert("empty", |_, a| {
        arity("empty", &a, 1)?;
        Ok(Value::Bool(empty(&a[0])))
    });
    funcs.insert("coalesce", |_, a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or_default())
    });
    funcs.insert("all", |_, a| Ok(Value::Bool(a.iter().all(|v| !empty(v)))));
    funcs.insert("any", |_, a| Ok(Value::Bool(a.iter().any(|v| !empty(v)))));
    funcs.insert("ternary", |_, a| {
        arity("ternary", &a, 3)?;
        Ok(if a[2].truthy() {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    funcs.insert("required", |exec, a| {
        arity("required", &a, 2)?;
        let missing = match &a[1] {
            Value::Nil => true,
            Value::Str(s) => s.is_empty(),
            _ => false,
        };
        if missing {
            return user_error(exec, strval(&a[0]));
        }
        Ok(a[1].clone())
    });
    funcs.insert("fail", |exec, a| {
        arity("fail", &a, 1)?;
        user_error(exec, strval(&a[0]))
    });
    funcs.insert("kindOf", |_, a| {
        arity("kindOf", &a, 1)?;
        Ok(Value::from(kind(&a[0])))
    });
    funcs.insert("kindIs", |_, a| {
        arity("kindIs", &a, 2)?;
        Ok(Value::Bool(strval(&a[0]) == kind(&a[1])))
    });
    funcs.insert("typeOf", |_, a| {
        arity("typeOf", &a, 1)?;
        Ok(Value::from(a[0].type_name()))
    });
    funcs.insert("typeIs", |_, a| {
        arity("typeIs", &a, 2)?;
        Ok(Value::Bool(strval(&a[0]) == a[1].type_name()))
    });
    funcs.insert("deepEqual", |_, a| {
        arity("deepEqual", &a, 2)?;
        Ok(Value::Bool(a[0] == a[1]))
    });
    funcs.insert("add", |_, a| integers("add", &a, i64::checked_add));
    funcs.insert("add1", |_, a| {
        arity("add1", &a, 1)?;
        Ok(Value::Int(to_int(&a[0]).saturating_add(1)))
    });
    funcs.insert("sub", |_, a| integers("sub", &a, i64::checked_sub));
    funcs.insert("mul", |_, a| integers("mul", &a, i64::checked_mul));
    funcs.insert("div", |_, a| integers("div", &a, i64::checked_div));
    funcs.insert("mod", |_, a| integers("mod", &a, i64::checked_rem));
    funcs.insert("max", |_, a| integers("max", &a, |x, y| Some(x.max(y))));
    funcs.insert("min", |_, a| integers("min", &a, |x, y| Some(x.min(y))));
    funcs.insert("addf", |_, a| floats("addf", &a, |x, y| x + y));
    funcs.insert("subf", |_, a| floats("subf", &a, |x, y| x - y));
    funcs.insert("mulf", |_, a| floats("mulf", &a, |x, y| x * y));
    funcs.insert("divf", |_, a| floats("divf", &a, |x, y| x / y));
    funcs.insert("floor", |_, a| {
        arity("floor", &a, 1)?;
        Ok(Value::Float(to_float(&a[0]).floor()))
    });
    funcs.insert("ceil", |_, a| {
        arity("ceil", &a, 1)?;
        Ok(Value::Float(to_float(&a[0]).ceil()))
    });
    funcs.insert("round", |_, a| {
        let (value, places) = match a.as_slice() {
            [v, p, ..] => (to_float(v), to_int(p)),
            _ => return Err("wrong number of args for round".into()),
        };
        let scale = 10f64.powi(i32::try_from(places).unwrap_or(0));
        Ok(Value::Float((value * scale).round() / scale))
    });
}
