//! String functions: trimming, case, quoting, replacing, searching, slicing, indenting,
//! regular expressions, splitting and joining.

use std::collections::{BTreeMap, HashMap};

use super::convert::strval;
use super::{arity, int_arg, items, str_arg};
use crate::helm::template::{Func, Value};

fn text(name: &str, args: &[Value], count: usize) -> Result<Vec<String>, String> {
    arity(name, args, count)?;
    args.iter().map(str_arg).collect()
}

fn string(s: impl Into<String>) -> Result<Value, String> {
    Ok(Value::from(s.into()))
}

/// Go's `strings.Title`: the first letter of every word upper-cased.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut previous_letter = false;
    for c in s.chars() {
        let letter = c.is_alphanumeric() || c == '_' || c == '\'';
        if letter && !previous_letter {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        previous_letter = letter;
    }
    out
}

thread_local! {
    /// Compiled patterns: charts call the regex functions in loops with a few patterns.
    static PATTERNS: std::cell::RefCell<HashMap<String, regex::Regex>> = std::cell::RefCell::new(HashMap::new());
}

fn regex(pattern: &str) -> Result<regex::Regex, String> {
    if let Some(found) = PATTERNS.with(|p| p.borrow().get(pattern).cloned()) {
        return Ok(found);
    }
    let compiled = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
    PATTERNS.with(|p| {
        let mut patterns = p.borrow_mut();
        if patterns.len() > 256 {
            patterns.clear();
        }
        patterns.insert(pattern.to_string(), compiled.clone());
    });
    Ok(compiled)
}

/// Go's `Regexp.Expand` template syntax (`$1`, `${name}`) is what the regex crate uses.
fn replace_all(
    pattern: &str,
    input: &str,
    replacement: &str,
    literal: bool,
) -> Result<String, String> {
    let re = regex(pattern)?;
    Ok(if literal {
        re.replace_all(input, regex::NoExpand(replacement))
            .into_owned()
    } else {
        re.replace_all(input, replacement).into_owned()
    })
}

fn indent(spaces: i64, s: &str) -> Result<String, String> {
    let spaces = usize::try_from(spaces).unwrap_or(0);
    let lines = s.matches('\n').count() + 1;
    if spaces.saturating_mul(lines) > crate::helm::template::exec::MAX_OUTPUT {
        return Err(format!(
            "indent: {spaces} spaces on {lines} lines is too large"
        ));
    }
    let pad = " ".repeat(spaces);
    Ok(format!("{pad}{}", s.replace('\n', &format!("\n{pad}"))))
}

fn substring(start: i64, end: i64, s: &str) -> String {
    let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let (start, end) = if start < 0 { (0, end) } else { (start, end) };
    let end = if end < 0 || end > len { len } else { end };
    if start > end {
        return String::new();
    }
    s.get(usize::try_from(start).unwrap_or(0)..usize::try_from(end).unwrap_or(0))
        .unwrap_or_default()
        .to_string()
}

fn truncate(n: i64, s: &str) -> String {
    let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let part = if n < 0 {
        s.get(usize::try_from((len + n).max(0)).unwrap_or(0)..)
    } else if n < len {
        s.get(..usize::try_from(n).unwrap_or(0))
    } else {
        Some(s)
    };
    part.unwrap_or_default().to_string()
}

fn quote_all(args: &[Value], quote: char) -> Value {
    let parts: Vec<String> = args
        .iter()
        .filter(|a| !matches!(a, Value::Nil))
        .map(|a| {
            if quote == '"' {
                crate::helm::template::printf::go_quote(&strval(a))
            } else {
                format!("'{}'", strval(a))
            }
        })
        .collect();
    Value::from(parts.join(" "))
}

fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        let boundary = c.is_uppercase()
            && !current.is_empty()
            && (current
                .chars()
                .last()
                .is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
                || chars.get(i + 1).is_some_and(|n| n.is_lowercase()));
        if boundary {
            out.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The words of `s`, lower-cased and joined by `separator` (`snakecase`, `kebabcase`).
fn joined_words(s: &str, separator: &str) -> String {
    words(s)
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(separator)
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("trim", |_, a| string(text("trim", &a, 1)?[0].trim()));
    funcs.insert("trimAll", |_, a| {
        let t = text("trimAll", &a, 2)?;
        string(t[1].trim_matches(|c| t[0].contains(c)))
    });
    funcs.insert("trimPrefix", |_, a| {
        let t = text("trimPrefix", &a, 2)?;
        string(t[1].strip_prefix(t[0].as_str()).unwrap_or(&t[1]))
    });
    funcs.insert("trimSuffix", |_, a| {
        let t = text("trimSuffix", &a, 2)?;
        string(t[1].strip_suffix(t[0].as_str()).unwrap_or(&t[1]))
    });
    funcs.insert("upper", |_, a| {
        string(text("upper", &a, 1)?[0].to_uppercase())
    });
    funcs.insert("lower", |_, a| {
        string(text("lower", &a, 1)?[0].to_lowercase())
    });
    funcs.insert("title", |_, a| string(title(&text("title", &a, 1)?[0])));
    funcs.insert("untitle", |_, a| {
        let t = text("untitle", &a, 1)?;
        let mut out = String::new();
        let mut start = true;
        for c in t[0].chars() {
            if start && c.is_alphabetic() {
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
            start = c.is_whitespace();
        }
        string(out)
    });
    funcs.insert("quote", |_, a| Ok(quote_all(&a, '"')));
    funcs.insert("squote", |_, a| Ok(quote_all(&a, '\'')));
    funcs.insert("replace", |_, a| {
        let t = text("replace", &a, 3)?;
        string(t[2].replace(&t[0], &t[1]))
    });
    funcs.insert("contains", |_, a| {
        let t = text("contains", &a, 2)?;
        Ok(Value::Bool(t[1].contains(&t[0])))
    });
    funcs.insert("hasPrefix", |_, a| {
        let t = text("hasPrefix", &a, 2)?;
        Ok(Value::Bool(t[1].starts_with(&t[0])))
    });
    funcs.insert("hasSuffix", |_, a| {
        let t = text("hasSuffix", &a, 2)?;
        Ok(Value::Bool(t[1].ends_with(&t[0])))
    });
    funcs.insert("trunc", |_, a| {
        arity("trunc", &a, 2)?;
        string(truncate(int_arg(&a[0])?, &str_arg(&a[1])?))
    });
    funcs.insert("substr", |_, a| {
        arity("substr", &a, 3)?;
        string(substring(
            int_arg(&a[0])?,
            int_arg(&a[1])?,
            &str_arg(&a[2])?,
        ))
    });
    funcs.insert("repeat", |_, a| {
        arity("repeat", &a, 2)?;
        let count = usize::try_from(int_arg(&a[0])?).unwrap_or(0);
        let s = str_arg(&a[1])?;
        if count.saturating_mul(s.len()) > crate::helm::template::exec::MAX_OUTPUT {
            return Err("repeat: the result would be too large".into());
        }
        string(s.repeat(count))
    });
    funcs.insert("nospace", |_, a| {
        string(
            text("nospace", &a, 1)?[0]
                .split_whitespace()
                .collect::<String>(),
        )
    });
    funcs.insert("indent", |_, a| {
        arity("indent", &a, 2)?;
        string(indent(int_arg(&a[0])?, &str_arg(&a[1])?)?)
    });
    funcs.insert("nindent", |_, a| {
        arity("nindent", &a, 2)?;
        string(format!("\n{}", indent(int_arg(&a[0])?, &str_arg(&a[1])?)?))
    });
    funcs.insert("regexMatch", |_, a| {
        let t = text("regexMatch", &a, 2)?;
        Ok(Value::Bool(regex(&t[0])?.is_match(&t[1])))
    });
    funcs.insert("regexFind", |_, a| {
        let t = text("regexFind", &a, 2)?;
        string(
            regex(&t[0])?
                .find(&t[1])
                .map(|m| m.as_str())
                .unwrap_or_default(),
        )
    });
    funcs.insert("regexFindAll", |_, a| {
        arity("regexFindAll", &a, 3)?;
        let re = regex(&str_arg(&a[0])?)?;
        let input = str_arg(&a[1])?;
        let limit = int_arg(&a[2])?;
        let found: Vec<Value> = re
            .find_iter(&input)
            .take(if limit < 0 {
                usize::MAX
            } else {
                usize::try_from(limit).unwrap_or(0)
            })
            .map(|m| Value::from(m.as_str()))
            .collect();
        Ok(Value::from(found))
    });
    funcs.insert("regexReplaceAll", |_, a| {
        let t = text("regexReplaceAll", &a, 3)?;
        string(replace_all(&t[0], &t[1], &t[2], false)?)
    });
    funcs.insert("regexReplaceAllLiteral", |_, a| {
        let t = text("regexReplaceAllLiteral", &a, 3)?;
        string(replace_all(&t[0], &t[1], &t[2], true)?)
    });
    funcs.insert("regexSplit", |_, a| {
        arity("regexSplit", &a, 3)?;
        let re = regex(&str_arg(&a[0])?)?;
        let input = str_arg(&a[1])?;
        let parts: Vec<Value> = re.split(&input).map(Value::from).collect();
        Ok(Value::from(parts))
    });
    funcs.insert("splitList", |_, a| {
        let t = text("splitList", &a, 2)?;
        Ok(Value::from(
            t[1].split(t[0].as_str())
                .map(Value::from)
                .collect::<Vec<_>>(),
        ))
    });
    funcs.insert("split", |_, a| {
        let t = text("split", &a, 2)?;
        let parts: BTreeMap<String, Value> = t[1]
            .split(t[0].as_str())
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::from(p)))
            .collect();
        Ok(Value::from(parts))
    });
    funcs.insert("join", |_, a| {
        arity("join", &a, 2)?;
        let parts = match &a[1] {
            Value::List(_) | Value::Nil => items("join", &a[1])?
                .iter()
                .filter(|v| !matches!(v, Value::Nil))
                .map(strval)
                .collect::<Vec<_>>(),
            other => vec![strval(other)],
        };
        string(parts.join(&strval(&a[0])))
    });
    funcs.insert("cat", |_, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(strval)
            .collect();
        string(parts.join(" "))
    });
    funcs.insert("camelcase", |_, a| {
        let t = text("camelcase", &a, 1)?;
        string(t[0].split('_').map(title).collect::<String>())
    });
    funcs.insert("snakecase", |_, a| {
        string(joined_words(&text("snakecase", &a, 1)?[0], "_"))
    });
    funcs.insert("kebabcase", |_, a| {
        string(joined_words(&text("kebabcase", &a, 1)?[0], "-"))
    });
    funcs.insert("abbrev", |_, a| {
        arity("abbrev", &a, 2)?;
        let width = usize::try_from(int_arg(&a[0])?).unwrap_or(0);
        let s = str_arg(&a[1])?;
        if width < 4 || s.chars().count() <= width {
            return string(s);
        }
        string(format!(
            "{}...",
            s.chars().take(width - 3).collect::<String>()
        ))
    });
    funcs.insert("plural", |_, a| {
        arity("plural", &a, 3)?;
        string(if int_arg(&a[2])? == 1 {
            str_arg(&a[0])?
        } else {
            str_arg(&a[1])?
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_match_go_strings() {
        assert_eq!(title("hello wide world"), "Hello Wide World");
        assert_eq!(indent(2, "a\nb").expect("small"), "  a\n  b");
        assert!(indent(i64::MAX, "x").is_err());
        assert_eq!(truncate(3, "abcdef"), "abc");
        assert_eq!(truncate(-2, "abcdef"), "ef");
        assert_eq!(truncate(63, "short"), "short");
        assert_eq!(substring(1, 3, "abcdef"), "bc");
        assert_eq!(substring(2, -1, "abcdef"), "cdef");
        assert_eq!(words("fooBarBAZ qux"), ["foo", "Bar", "BAZ", "qux"]);
        assert_eq!(
            replace_all("a(x*)b", "-ab-axxb-", "${1}W", false).expect("valid"),
            "-W-xxW-"
        );
    }
}
