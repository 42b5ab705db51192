//! String functions as sprig and its helpers (goutils, xstrings) write them: trimming,
//! case, quoting, searching, cutting (byte-based, as Go slices strings), wrapping,
//! indenting, splitting and joining.

use std::collections::{BTreeMap, HashMap};

use super::case;
use super::convert::{strslice, strval};
use super::{arity, int_arg, str_arg};
use crate::template::exec::MAX_OUTPUT;
use crate::template::{Func, Value};

fn text(name: &str, args: &[Value], count: usize) -> Result<Vec<String>, String> {
    arity(name, args, count)?;
    args.iter().map(str_arg).collect()
}

fn string(s: impl Into<String>) -> Result<Value, String> {
    Ok(Value::from(s.into()))
}

/// `s[start..end]` on bytes, as Go slices a string; a cut through a character leaves
/// U+FFFD where Go would leave the broken bytes.
fn bytes_of(s: &str, start: usize, end: usize) -> String {
    String::from_utf8_lossy(s.as_bytes().get(start..end).unwrap_or_default()).into_owned()
}

/// A Go slice-bounds panic, as a template reports it.
fn out_of_range(start: i64, end: i64, len: usize) -> String {
    if start > end {
        format!("runtime error: slice bounds out of range [{start}:{end}]")
    } else {
        format!("runtime error: slice bounds out of range [:{end}] with length {len}")
    }
}

/// Go's simple (one character to one) case mapping: a character whose full mapping is
/// several characters (`ß`) stays as it is.
fn map_case(c: char, mapped: impl Iterator<Item = char>) -> char {
    let mut mapped = mapped;
    match (mapped.next(), mapped.next()) {
        (Some(one), None) => one,
        _ => c,
    }
}

fn upper(c: char) -> char {
    map_case(c, c.to_uppercase())
}

fn lower(c: char) -> char {
    map_case(c, c.to_lowercase())
}

/// Go's `strings.Title`: the first letter of every word upper-cased, where words are
/// separated by ASCII characters other than letters, digits and `_`, and by spaces.
fn title(s: &str) -> String {
    let separates = |c: char| {
        if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else {
            !c.is_alphanumeric() && c.is_whitespace()
        }
    };
    let mut previous_separates = true;
    s.chars()
        .map(|c| {
            let out = if previous_separates { upper(c) } else { c };
            previous_separates = separates(c);
            out
        })
        .collect()
}

/// goutils' `Uncapitalize`: the first letter of every whitespace-separated word lowered.
fn untitle(s: &str) -> String {
    let mut after_space = true;
    s.chars()
        .map(|c| {
            let out = if after_space { lower(c) } else { c };
            after_space = c.is_whitespace();
            out
        })
        .collect()
}

/// goutils' `SwapCase`: upper to lower, lower to upper, and a lower-case letter that
/// starts a word to title case.
fn swap_case(s: &str) -> String {
    let mut word_start = true;
    s.chars()
        .map(|c| {
            if c.is_uppercase() {
                word_start = false;
                lower(c)
            } else if c.is_lowercase() {
                word_start = false;
                upper(c)
            } else {
                word_start = c.is_whitespace();
                c
            }
        })
        .collect()
}

/// goutils' `Initials`: the first character of every whitespace-separated word.
fn initials(s: &str) -> String {
    s.split_whitespace()
        .filter_map(|w| w.chars().next())
        .collect()
}

/// goutils' `AbbreviateFull`: `s` cut to `width` bytes with `...` marking what is left
/// out, keeping the text from `offset` on where it can.
fn abbreviate(s: &str, offset: usize, width: usize) -> Option<String> {
    let len = s.len();
    if s.is_empty() {
        return Some(String::new());
    }
    if width < 4 {
        return None;
    }
    if len <= width {
        return Some(s.to_string());
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return Some(format!("{}...", bytes_of(s, 0, width - 3)));
    }
    if width < 7 {
        return None;
    }
    if offset + width - 3 < len {
        let rest = abbreviate(&bytes_of(s, offset, len), 0, width - 3)?;
        return Some(format!("...{rest}"));
    }
    Some(format!("...{}", bytes_of(s, len - (width - 3), len)))
}

/// goutils' `WrapCustom`: lines of at most `width` bytes broken at spaces, with
/// `newline` between them; words longer than a line are cut when `cut_long_words`.
fn wrap(s: &str, width: i64, newline: &str, cut_long_words: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = usize::try_from(width).unwrap_or(0).max(1);
    let bytes = s.as_bytes();
    let len = bytes.len();
    let mut out: Vec<u8> = Vec::with_capacity(len + len / width * newline.len());
    let mut offset = 0;
    while len - offset > width {
        if bytes[offset] == b' ' {
            offset += 1;
            continue;
        }
        let window = &bytes[offset..offset + width + 1];
        if let Some(space) = window.iter().rposition(|b| *b == b' ') {
            out.extend_from_slice(&bytes[offset..offset + space]);
            out.extend_from_slice(newline.as_bytes());
            offset += space + 1;
        } else if cut_long_words {
            out.extend_from_slice(&bytes[offset..offset + width]);
            out.extend_from_slice(newline.as_bytes());
            offset += width;
        } else {
            let end = offset + width;
            match bytes[end..].iter().position(|b| *b == b' ') {
                None => {
                    out.extend_from_slice(&bytes[offset..]);
                    offset = len;
                }
                Some(space) => {
                    out.extend_from_slice(&bytes[offset..end + space]);
                    out.extend_from_slice(newline.as_bytes());
                    offset = end + space + 1;
                }
            }
        }
    }
    out.extend_from_slice(&bytes[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

/// sprig's `substr`: bytes `start..end`, a negative start meaning 0 and a negative or
/// too large end meaning the end.
fn substring(start: i64, end: i64, s: &str) -> Result<String, String> {
    let len = s.len();
    let at = |i: i64| usize::try_from(i).unwrap_or(0);
    let (from, to) = if start < 0 {
        (0, end)
    } else if end < 0 || at(end) > len {
        (start, i64::try_from(len).unwrap_or(i64::MAX))
    } else {
        (start, end)
    };
    if to < 0 || from > to || at(to) > len {
        return Err(out_of_range(from, to, len));
    }
    Ok(bytes_of(s, at(from), at(to)))
}

/// sprig's `trunc`: the first `n` bytes, or with a negative `n` the last `-n`.
fn truncate(n: i64, s: &str) -> String {
    let len = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let at = |i: i64| usize::try_from(i).unwrap_or(0);
    if n < 0 && len + n > 0 {
        bytes_of(s, at(len + n), s.len())
    } else if n >= 0 && len > n {
        bytes_of(s, 0, at(n))
    } else {
        s.to_string()
    }
}

/// Go's `strings.Repeat`, refusing what would not fit in a render's output.
fn repeat(count: i64, s: &str) -> Result<String, String> {
    let count = usize::try_from(count).map_err(|_| "strings: negative Repeat count")?;
    if count.saturating_mul(s.len()) > MAX_OUTPUT {
        return Err(format!(
            "repeating {} bytes {count} times is more than a render may print",
            s.len()
        ));
    }
    Ok(s.repeat(count))
}

fn indent(spaces: i64, s: &str) -> Result<String, String> {
    let lines = s.matches('\n').count() + 1;
    let pad = repeat(spaces, " ")?;
    if pad.len().saturating_mul(lines) > MAX_OUTPUT {
        return Err(format!(
            "indenting {lines} lines by {spaces} is more than a render may print"
        ));
    }
    Ok(format!("{pad}{}", s.replace('\n', &format!("\n{pad}"))))
}

/// Go's `strings.SplitN` (`n < 0`: every part; `n == 0`: none); an empty separator
/// splits between characters.
fn split(s: &str, separator: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    if separator.is_empty() {
        let chars: Vec<&str> = s
            .char_indices()
            .map(|(i, c)| &s[i..i + c.len_utf8()])
            .collect();
        if chars.len() <= limit {
            return chars.into_iter().map(String::from).collect();
        }
        let mut parts: Vec<String> = chars[..limit - 1].iter().map(|c| c.to_string()).collect();
        let consumed: usize = parts.iter().map(String::len).sum();
        parts.push(s[consumed..].to_string());
        return parts;
    }
    s.splitn(limit, separator).map(String::from).collect()
}

/// The parts as sprig's `split` returns them: a dict of `_0`, `_1`, ...
fn indexed(parts: Vec<String>) -> Value {
    let map: BTreeMap<String, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::from(p)))
        .collect();
    Value::from(map)
}

/// `quote` and `squote`: every argument but nil, quoted and joined by spaces.
fn quote_all(args: &[Value], double: bool) -> Value {
    let parts: Vec<String> = args
        .iter()
        .filter(|a| !matches!(a, Value::Nil))
        .map(|a| {
            if double {
                crate::template::printf::go_quote(&strval(a))
            } else {
                format!("'{}'", a.to_go_string())
            }
        })
        .collect();
    Value::from(parts.join(" "))
}

fn shuffle(exec: &mut crate::template::Exec, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for i in (1..chars.len()).rev() {
        let j = exec.world.below(i as u64 + 1) as usize;
        chars.swap(i, j);
    }
    chars.into_iter().collect()
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("hello", |_, a| {
        arity("hello", &a, 0)?;
        string("Hello!")
    });
    funcs.insert("trim", |_, a| string(text("trim", &a, 1)?[0].trim()));
    funcs.insert("trimAll", |_, a| {
        let t = text("trimAll", &a, 2)?;
        string(t[1].trim_matches(|c| t[0].contains(c)))
    });
    funcs.insert("trimall", |_, a| {
        let t = text("trimall", &a, 2)?;
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
        string(
            text("upper", &a, 1)?[0]
                .chars()
                .map(upper)
                .collect::<String>(),
        )
    });
    funcs.insert("lower", |_, a| {
        string(
            text("lower", &a, 1)?[0]
                .chars()
                .map(lower)
                .collect::<String>(),
        )
    });
    funcs.insert("title", |_, a| string(title(&text("title", &a, 1)?[0])));
    funcs.insert("untitle", |_, a| {
        string(untitle(&text("untitle", &a, 1)?[0]))
    });
    funcs.insert("swapcase", |_, a| {
        string(swap_case(&text("swapcase", &a, 1)?[0]))
    });
    funcs.insert("initials", |_, a| {
        string(initials(&text("initials", &a, 1)?[0]))
    });
    funcs.insert("snakecase", |_, a| {
        string(case::to_lower_case(&text("snakecase", &a, 1)?[0], '_'))
    });
    funcs.insert("kebabcase", |_, a| {
        string(case::to_lower_case(&text("kebabcase", &a, 1)?[0], '-'))
    });
    funcs.insert("camelcase", |_, a| {
        string(case::to_camel_case(&text("camelcase", &a, 1)?[0]))
    });
    funcs.insert("shuffle", |exec, a| {
        let t = text("shuffle", &a, 1)?;
        string(shuffle(exec, &t[0]))
    });
    funcs.insert("quote", |_, a| Ok(quote_all(&a, true)));
    funcs.insert("squote", |_, a| Ok(quote_all(&a, false)));
    funcs.insert("cat", |_, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, Value::Nil))
            .map(Value::to_go_string)
            .collect();
        string(parts.join(" "))
    });
    funcs.insert("replace", |_, a| {
        let t = text("replace", &a, 3)?;
        if t[0].is_empty() && (t[2].len() + 1).saturating_mul(t[1].len()) > MAX_OUTPUT {
            return Err("replace: the result would be more than a render may print".into());
        }
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
        )?)
    });
    funcs.insert("abbrev", |_, a| {
        arity("abbrev", &a, 2)?;
        let (width, s) = (int_arg(&a[0])?, str_arg(&a[1])?);
        let width = usize::try_from(width).unwrap_or(0);
        if width < 4 {
            return string(s);
        }
        string(abbreviate(&s, 0, width).unwrap_or_default())
    });
    funcs.insert("abbrevboth", |_, a| {
        arity("abbrevboth", &a, 3)?;
        let (left, right, s) = (int_arg(&a[0])?, int_arg(&a[1])?, str_arg(&a[2])?);
        if right < 4 || (left > 0 && right < 7) {
            return string(s);
        }
        let (left, right) = (
            usize::try_from(left).unwrap_or(0),
            usize::try_from(right).unwrap_or(0),
        );
        string(abbreviate(&s, left, right).unwrap_or_default())
    });
    funcs.insert("wrap", |_, a| {
        arity("wrap", &a, 2)?;
        string(wrap(&str_arg(&a[1])?, int_arg(&a[0])?, "", false))
    });
    funcs.insert("wrapWith", |_, a| {
        arity("wrapWith", &a, 3)?;
        string(wrap(
            &str_arg(&a[2])?,
            int_arg(&a[0])?,
            &str_arg(&a[1])?,
            true,
        ))
    });
    funcs.insert("repeat", |_, a| {
        arity("repeat", &a, 2)?;
        string(repeat(int_arg(&a[0])?, &str_arg(&a[1])?)?)
    });
    funcs.insert("nospace", |_, a| {
        string(
            text("nospace", &a, 1)?[0]
                .chars()
                .filter(|c| !c.is_whitespace())
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
    funcs.insert("plural", |_, a| {
        arity("plural", &a, 3)?;
        string(if int_arg(&a[2])? == 1 {
            str_arg(&a[0])?
        } else {
            str_arg(&a[1])?
        })
    });
    funcs.insert("split", |_, a| {
        let t = text("split", &a, 2)?;
        Ok(indexed(split(&t[1], &t[0], -1)))
    });
    funcs.insert("splitn", |_, a| {
        arity("splitn", &a, 3)?;
        let (separator, n, s) = (str_arg(&a[0])?, int_arg(&a[1])?, str_arg(&a[2])?);
        Ok(indexed(split(&s, &separator, n)))
    });
    funcs.insert("splitList", |_, a| {
        let t = text("splitList", &a, 2)?;
        Ok(Value::from(
            split(&t[1], &t[0], -1)
                .into_iter()
                .map(Value::from)
                .collect::<Vec<_>>(),
        ))
    });
    funcs.insert("join", |_, a| {
        arity("join", &a, 2)?;
        string(strslice(&a[1]).join(&strval(&a[0])))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by Helm 4.3.1 (sprig v3 with goutils and xstrings).
    #[test]
    fn case_and_words() {
        assert_eq!(title("hello wide-world o'neil"), "Hello Wide-World O'Neil");
        assert_eq!(title("snake_case x1y"), "Snake_case X1y");
        assert_eq!(untitle("Hello World FOO"), "hello world fOO");
        assert_eq!(swap_case("This Is A.Test"), "tHIS iS a.tEST");
        assert_eq!(swap_case("hello wORLD 9x"), "HELLO World 9X");
        assert_eq!(initials("hello wide world"), "hww");
        assert_eq!(initials("  Foo  bar"), "Fb");
        assert_eq!(upper('ß'), 'ß');
    }

    #[test]
    fn cutting_is_by_bytes() {
        assert_eq!(truncate(3, "abcdef"), "abc");
        assert_eq!(truncate(-2, "abcdef"), "ef");
        assert_eq!(truncate(63, "short"), "short");
        assert_eq!(truncate(-9, "abc"), "abc");
        assert_eq!(substring(1, 3, "abcdef").as_deref(), Ok("bc"));
        assert_eq!(substring(2, -1, "abcdef").as_deref(), Ok("cdef"));
        assert_eq!(substring(-1, 2, "abcdef").as_deref(), Ok("ab"));
        assert_eq!(substring(0, 99, "abc").as_deref(), Ok("abc"));
        assert!(substring(3, 1, "abcdef").is_err());
        assert_eq!(abbreviate("hello world", 0, 5).as_deref(), Some("he..."));
        assert_eq!(
            abbreviate("1234 5678 9123", 5, 10).as_deref(),
            Some("...5678...")
        );
        assert_eq!(abbreviate("abcdefghijk", 0, 6).as_deref(), Some("abc..."));
        assert_eq!(abbreviate("short", 0, 20).as_deref(), Some("short"));
    }

    #[test]
    fn wrapping_breaks_at_spaces() {
        assert_eq!(
            wrap("Hello World how are you", 5, "", false),
            "Hello\nWorld\nhow\nare\nyou"
        );
        assert_eq!(wrap("Hello World", 5, "\t", true), "Hello\tWorld");
        assert_eq!(wrap("abcdefgh ij", 3, "", false), "abcdefgh\nij");
        assert_eq!(wrap("abcdefgh ij", 3, "|", true), "abc|def|gh|ij");
    }

    #[test]
    fn splitting_as_go_does() {
        assert_eq!(split("a,b,,c", ",", -1), ["a", "b", "", "c"]);
        assert_eq!(split("foo$bar$baz", "$", 2), ["foo", "bar$baz"]);
        assert_eq!(split("abc", "", -1), ["a", "b", "c"]);
        assert_eq!(split("abc", "", 2), ["a", "bc"]);
        assert!(split("abc", ",", 0).is_empty());
        assert_eq!(indent(2, "a\nb").as_deref(), Ok("  a\n  b"));
        assert!(indent(-1, "x").is_err());
        assert!(indent(i64::MAX, "x").is_err());
    }
}
