//! Defaults and flow: `default`, `empty`, `coalesce`, `all`, `any`, `ternary`,
//! `required`, `fail`, and `getHostByName` (answered by the render's world: empty with DNS
//! lookups off, as in Helm).

use std::collections::HashMap;

use super::arity;
use super::convert::strval;
use crate::template::{Exec, Func, Value};

/// sprig's `empty`: nil, false, 0, and empty strings, lists and maps (objects that are
/// maps or slices in Go too).
pub(super) fn empty(value: &Value) -> bool {
    match value {
        Value::Object(object) => object.is_empty(),
        other => !other.truthy(),
    }
}

/// Records a message that Helm shows verbatim, and returns it as the error.
fn user_error(exec: &mut Exec, message: String) -> Result<Value, String> {
    exec.failure = Some(crate::template::exec::Cause::User(message.clone()));
    Err(message)
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
        let Value::Bool(condition) = a[2] else {
            return Err(format!(
                "wrong type for value; expected bool; got {}",
                a[2].type_name()
            ));
        };
        Ok(if condition {
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
    funcs.insert("getHostByName", |exec, a| {
        arity("getHostByName", &a, 1)?;
        exec.world.host_by_name(&strval(&a[0])).map(Value::from)
    });
}
