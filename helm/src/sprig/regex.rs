//! sprig's regular expression functions, with Go's RE2 syntax (see `goregex`) and Go's
//! error handling: `regexMatch` swallows a bad pattern, the other plain functions fail as
//! `regexp.MustCompile` panics, and the `must` ones return the compile error.

use std::collections::HashMap;

use super::{arity, int_arg, str_arg};
use crate::goregex;
use crate::template::{Func, Value};

thread_local! {
    /// Compiled patterns: charts call the regex functions in loops with a few patterns.
    static PATTERNS: std::cell::RefCell<HashMap<String, regex::Regex>> =
        std::cell::RefCell::new(HashMap::new());
}

/// Go's `regexp.Compile`.
fn compile(pattern: &str) -> Result<regex::Regex, String> {
    if let Some(found) = PATTERNS.with(|p| p.borrow().get(pattern).cloned()) {
        return Ok(found);
    }
    let translated = goregex::translate(pattern)?;
    let compiled = regex::RegexBuilder::new(&translated)
        .size_limit(1 << 24)
        .build()
        .map_err(|e| goregex::compile_error(pattern, &translated, &e))?;
    PATTERNS.with(|p| {
        let mut patterns = p.borrow_mut();
        if patterns.len() > 256 {
            patterns.clear();
        }
        patterns.insert(pattern.to_string(), compiled.clone());
    });
    Ok(compiled)
}

/// Go's `regexp.MustCompile`, whose panic the template reports.
fn must_compile(pattern: &str) -> Result<regex::Regex, String> {
    compile(pattern).map_err(|e| format!("regexp: Compile(`{pattern}`): {e}"))
}

/// The compile function of a plain (`must == false`) or `must` variant.
fn compiler(must: bool) -> fn(&str) -> Result<regex::Regex, String> {
    if must {
        compile
    } else {
        must_compile
    }
}

/// Go's `n` limit of `FindAll` and `Split`: negative is all.
fn limit(n: i64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn find_all(args: &[Value], must: bool) -> Result<Value, String> {
    arity("regexFindAll", args, 3)?;
    let re = compiler(must)(&str_arg(&args[0])?)?;
    let input = str_arg(&args[1])?;
    let found: Vec<Value> = re
        .find_iter(&input)
        .take(limit(int_arg(&args[2])?))
        .map(|m| Value::from(m.as_str()))
        .collect();
    Ok(Value::from(found))
}

fn find(args: &[Value], must: bool) -> Result<Value, String> {
    arity("regexFind", args, 2)?;
    let re = compiler(must)(&str_arg(&args[0])?)?;
    let input = str_arg(&args[1])?;
    Ok(Value::from(
        re.find(&input).map(|m| m.as_str()).unwrap_or_default(),
    ))
}

/// Go's `ReplaceAllString` (`$1`, `${name}` expanded, the regex crate's syntax too) or
/// `ReplaceAllLiteralString`.
fn replace_all(args: &[Value], must: bool, literal: bool) -> Result<Value, String> {
    arity("regexReplaceAll", args, 3)?;
    let re = compiler(must)(&str_arg(&args[0])?)?;
    let input = str_arg(&args[1])?;
    let replacement = str_arg(&args[2])?;
    Ok(Value::from(if literal {
        re.replace_all(&input, regex::NoExpand(&replacement))
            .into_owned()
    } else {
        re.replace_all(&input, replacement.as_str()).into_owned()
    }))
}

/// Go's `Regexp.Split`.
fn split(args: &[Value], must: bool) -> Result<Value, String> {
    arity("regexSplit", args, 3)?;
    let pattern = str_arg(&args[0])?;
    let re = compiler(must)(&pattern)?;
    let input = str_arg(&args[1])?;
    let n = int_arg(&args[2])?;
    if n == 0 {
        return Ok(Value::from(Vec::new()));
    }
    if !pattern.is_empty() && input.is_empty() {
        return Ok(Value::from(vec![Value::from("")]));
    }
    let mut parts = Vec::new();
    let (mut begin, mut end) = (0, 0);
    for found in re.find_iter(&input).take(limit(n)) {
        if n > 0 && parts.len() == limit(n) - 1 {
            break;
        }
        end = found.start();
        if found.end() != 0 {
            parts.push(Value::from(&input[begin..end]));
        }
        begin = found.end();
    }
    if end != input.len() {
        parts.push(Value::from(&input[begin..]));
    }
    Ok(Value::from(parts))
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("regexMatch", |_, a| {
        arity("regexMatch", &a, 2)?;
        let input = str_arg(&a[1])?;
        let re = compile(&str_arg(&a[0])?);
        Ok(Value::Bool(re.is_ok_and(|re| re.is_match(&input))))
    });
    funcs.insert("mustRegexMatch", |_, a| {
        arity("mustRegexMatch", &a, 2)?;
        let input = str_arg(&a[1])?;
        Ok(Value::Bool(compile(&str_arg(&a[0])?)?.is_match(&input)))
    });
    funcs.insert("regexFind", |_, a| find(&a, false));
    funcs.insert("mustRegexFind", |_, a| find(&a, true));
    funcs.insert("regexFindAll", |_, a| find_all(&a, false));
    funcs.insert("mustRegexFindAll", |_, a| find_all(&a, true));
    funcs.insert("regexReplaceAll", |_, a| replace_all(&a, false, false));
    funcs.insert("mustRegexReplaceAll", |_, a| replace_all(&a, true, false));
    funcs.insert("regexReplaceAllLiteral", |_, a| {
        replace_all(&a, false, true)
    });
    funcs.insert("mustRegexReplaceAllLiteral", |_, a| {
        replace_all(&a, true, true)
    });
    funcs.insert("regexSplit", |_, a| split(&a, false));
    funcs.insert("mustRegexSplit", |_, a| split(&a, true));
    funcs.insert("regexQuoteMeta", |_, a| {
        arity("regexQuoteMeta", &a, 1)?;
        Ok(Value::from(quote_meta(&str_arg(&a[0])?)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, String> {
        let funcs = crate::sprig::functions();
        let templates = crate::template::Templates::default();
        let mut exec = crate::template::Exec::new(&templates, &funcs);
        funcs[name](&mut exec, args)
    }

    fn strings(value: &Value) -> Vec<String> {
        match value {
            Value::List(items) => items.iter().map(Value::to_go_string).collect(),
            other => panic!("not a list: {other:?}"),
        }
    }

    #[test]
    fn split_follows_go() {
        // regexp.Split's documented examples.
        let split = |pattern: &str, text: &str, n: i64| {
            strings(
                &call(
                    "regexSplit",
                    vec![pattern.into(), text.into(), Value::Int(n)],
                )
                .expect("splits"),
            )
        };
        assert_eq!(split("a", "banana", -1), ["b", "n", "n", ""]);
        assert_eq!(split("a", "banana", 0), Vec::<String>::new());
        assert_eq!(split("a", "banana", 1), ["banana"]);
        assert_eq!(split("a", "banana", 2), ["b", "nana"]);
        assert_eq!(split("z+", "pizza", -1), ["pi", "a"]);
        assert_eq!(split("z+", "pizza", 2), ["pi", "a"]);
    }

    #[test]
    fn bad_patterns_fail_as_go_fails() {
        assert_eq!(
            call("regexMatch", vec!["[".into(), "x".into()]).expect("swallowed"),
            Value::Bool(false)
        );
        let plain = call("regexFind", vec!["[".into(), "x".into()]).expect_err("fails");
        assert!(plain.starts_with("regexp: Compile(`[`): error parsing regexp: missing closing ]"));
        let must = call("mustRegexFind", vec!["[".into(), "x".into()]).expect_err("fails");
        assert!(must.starts_with("error parsing regexp: missing closing ]"));
    }

    #[test]
    fn replacements_expand_groups() {
        let replaced = call(
            "regexReplaceAll",
            vec!["a(x*)b".into(), "-ab-axxb-".into(), "${1}W".into()],
        )
        .expect("replaces");
        assert_eq!(replaced.to_go_string(), "-W-xxW-");
        let literal = call(
            "mustRegexReplaceAllLiteral",
            vec!["@sha.*".into(), "1.2@sha256:ab".into(), "$1".into()],
        )
        .expect("replaces");
        assert_eq!(literal.to_go_string(), "1.2$1");
        assert_eq!(quote_meta("1.5-2.0?"), "1\\.5-2\\.0\\?");
    }
}
