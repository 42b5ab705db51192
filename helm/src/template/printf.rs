//! Go's `fmt.Sprintf`, `Sprint` and `Sprintln` over template values, for `printf`,
//! `print` and `println`.

use super::value::{format_float_g, Value};

/// The widest field Go's fmt accepts.
const MAX_WIDTH: usize = 1_000_000;

#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    zero: bool,
    space: bool,
    sharp: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

fn pad(text: String, spec: &Spec, numeric: bool) -> String {
    let Some(width) = spec.width else {
        return text;
    };
    let length = text.chars().count();
    if length >= width {
        return text;
    }
    let fill = width - length;
    if spec.minus {
        return format!("{text}{}", " ".repeat(fill));
    }
    if spec.zero && numeric {
        let (sign, digits) = match text.strip_prefix(['-', '+']) {
            Some(rest) => (&text[..1], rest),
            None => ("", text.as_str()),
        };
        return format!("{sign}{}{digits}", "0".repeat(fill));
    }
    format!("{}{text}", " ".repeat(fill))
}

fn bad_verb(verb: char, value: &Value) -> String {
    format!("%!{verb}({}={})", value.type_name(), value.to_go_string())
}

fn signed(number: String, spec: &Spec) -> String {
    if number.starts_with('-') {
        number
    } else if spec.plus {
        format!("+{number}")
    } else if spec.space {
        format!(" {number}")
    } else {
        number
    }
}

/// Go's `%q` of a string: double-quoted with Go escapes.
pub fn go_quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_control() && c.is_ascii() => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn format_one(verb: char, spec: &Spec, value: &Value) -> String {
    if let (Value::Int64(i), false) = (value, verb == 'T') {
        // Go formats every integer type alike; only the type name in errors differs.
        let formatted = format_one(verb, spec, &Value::Int(*i));
        return if formatted.starts_with("%!") {
            bad_verb(verb, value)
        } else {
            formatted
        };
    }
    match (verb, value) {
        ('v', Value::Float(f)) | ('g', Value::Float(f)) if spec.precision.is_none() => {
            pad(signed(format_float_g(*f), spec), spec, true)
        }
        ('v', Value::Int(i)) | ('d', Value::Int(i)) => pad(signed(i.to_string(), spec), spec, true),
        ('v', _) | ('s', Value::Str(_) | Value::List(_) | Value::Map(_) | Value::Object(_)) => {
            let mut text = if verb == 's' {
                as_s(value)
            } else {
                plain(value)
            };
            if let Some(precision) = spec.precision {
                text = text.chars().take(precision).collect();
            }
            pad(text, spec, false)
        }
        ('t', Value::Bool(b)) => pad(b.to_string(), spec, false),
        ('T', _) => pad(value.type_name().to_string(), spec, false),
        ('q', Value::Str(s)) => pad(go_quote(s), spec, false),
        ('q', Value::Int(i)) => {
            let c = u32::try_from(*i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{fffd}');
            pad(format!("'{c}'"), spec, false)
        }
        ('c', Value::Int(i)) => {
            let c = u32::try_from(*i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{fffd}');
            pad(c.to_string(), spec, false)
        }
        ('x' | 'X', Value::Int(i)) => {
            let digits = if verb == 'x' {
                format!("{:x}", i.unsigned_abs())
            } else {
                format!("{:X}", i.unsigned_abs())
            };
            let prefix = if spec.sharp {
                if verb == 'x' {
                    "0x"
                } else {
                    "0X"
                }
            } else {
                ""
            };
            let sign = if *i < 0 { "-" } else { "" };
            pad(signed(format!("{sign}{prefix}{digits}"), spec), spec, true)
        }
        ('x' | 'X', Value::Str(s)) => {
            let hex: String = s
                .bytes()
                .map(|b| {
                    if verb == 'x' {
                        format!("{b:02x}")
                    } else {
                        format!("{b:02X}")
                    }
                })
                .collect();
            pad(hex, spec, false)
        }
        ('o', Value::Int(i)) => pad(signed(format!("{:o}", i), spec), spec, true),
        ('b', Value::Int(i)) => pad(signed(format!("{:b}", i), spec), spec, true),
        ('f' | 'F', Value::Float(f)) => pad(
            signed(format!("{:.*}", spec.precision.unwrap_or(6), f), spec),
            spec,
            true,
        ),
        ('f' | 'F', Value::Int(i)) => bad_verb(verb, &Value::Int(*i)),
        ('e' | 'E', Value::Float(f)) => {
            let text = go_exponent(*f, spec.precision.unwrap_or(6), verb == 'E');
            pad(signed(text, spec), spec, true)
        }
        ('g', Value::Float(f)) => {
            let text = format_float_g(*f);
            pad(signed(text, spec), spec, true)
        }
        (_, other) => bad_verb(verb, other),
    }
}

fn go_exponent(f: f64, precision: usize, upper: bool) -> String {
    let text = format!("{:.*e}", precision, f);
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mantissa}{e}{sign}{:02}", exponent.abs())
}

/// `fmt.Sprintf(format, args...)`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    let mut next_arg = 0;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '0' => spec.zero = true,
                ' ' => spec.space = true,
                '#' => spec.sharp = true,
                _ => break,
            }
            chars.next();
        }
        let number = |chars: &mut std::iter::Peekable<std::str::Chars>| {
            let mut digits = String::new();
            while let Some(&d) = chars.peek() {
                if !d.is_ascii_digit() {
                    break;
                }
                digits.push(d);
                chars.next();
            }
            // Go stops reading a width or precision above a million and drops the rest of
            // the format: %!(NOVERB).
            match digits.parse::<usize>() {
                Ok(n) if n <= MAX_WIDTH => Ok(Some(n)),
                Ok(_) | Err(_) if !digits.is_empty() => Err(()),
                _ => Ok(None),
            }
        };
        let Ok(width) = number(&mut chars) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        spec.width = width;
        if chars.peek() == Some(&'.') {
            chars.next();
            match number(&mut chars) {
                Ok(precision) => spec.precision = Some(precision.unwrap_or(0)),
                Err(()) => {
                    out.push_str("%!(NOVERB)");
                    break;
                }
            }
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(next_arg) {
            Some(value) => out.push_str(&format_one(verb, &spec, value)),
            None => out.push_str(&format!("%!{verb}(MISSING)")),
        }
        next_arg += 1;
    }
    if next_arg < args.len() {
        let extra: Vec<String> = args[next_arg..]
            .iter()
            .map(|a| format!("{}={}", a.type_name(), a.to_go_string()))
            .collect();
        out.push_str(&format!("%!(EXTRA {})", extra.join(", ")));
    }
    out
}

/// `%s` of a value: lists and maps with `%s` applied to their items, as Go's fmt applies
/// it (`[a %!s(int=1)]`); objects as they print (Helm's are Stringers, as `time.Time`).
fn as_s(value: &Value) -> String {
    match value {
        Value::Str(text) => text.to_string(),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(as_s).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Map(map) => {
            let entries: Vec<String> = (map.borrow().iter())
                .map(|(key, item)| format!("{key}:{}", as_s(item)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
        Value::Object(_) => plain(value),
        other => bad_verb('s', other),
    }
}

fn plain(value: &Value) -> String {
    match value {
        Value::Nil => "<nil>".into(),
        other => other.to_go_string(),
    }
}

/// `fmt.Sprint(args...)`: spaces between operands when neither side is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg, Value::Str(_));
        if i > 0 && !is_string && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        out.push_str(&plain(arg));
    }
    out
}

/// `fmt.Sprintln(args...)`: always spaces, and a newline.
pub fn sprintln(args: &[Value]) -> String {
    let parts: Vec<String> = args.iter().map(plain).collect();
    format!("{}\n", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_format_as_go_documents() {
        let s = |f: &str, args: &[Value]| sprintf(f, args);
        assert_eq!(s("%s-%d", &["a".into(), Value::Int(7)]), "a-7");
        assert_eq!(
            s("%05d|%-4s|%4s", &[Value::Int(42), "ab".into(), "cd".into()]),
            "00042|ab  |  cd"
        );
        assert_eq!(
            s("%q %v %t", &["a\"b".into(), Value::Float(1.5), true.into()]),
            "\"a\\\"b\" 1.5 true"
        );
        assert_eq!(
            s(
                "%x %X %#x",
                &[Value::Int(255), Value::Int(255), Value::Int(255)]
            ),
            "ff FF 0xff"
        );
        assert_eq!(s("%x", &["hi".into()]), "6869");
        assert_eq!(
            s("%.2f %e", &[Value::Float(4.56789), Value::Float(1234.5)]),
            "4.57 1.234500e+03"
        );
        assert_eq!(s("%d", &["x".into()]), "%!d(string=x)");
        assert_eq!(s("%s %s", &["x".into()]), "x %!s(MISSING)");
        assert_eq!(s("%s", &["x".into(), Value::Int(1)]), "x%!(EXTRA int=1)");
        assert_eq!(s("100%%", &[]), "100%");
        assert_eq!(s("%v", &[Value::Nil]), "<nil>");
        assert_eq!(s("%.3s", &["abcdef".into()]), "abc");
        assert_eq!(s("%s", &[true.into()]), "%!s(bool=true)");
        assert_eq!(
            s("a%7777777777777777x|", &[Value::Int(1)]),
            "a%!(NOVERB)%!(EXTRA int=1)"
        );
    }

    #[test]
    fn print_spaces_only_between_non_strings() {
        assert_eq!(sprint(&["a".into(), "b".into()]), "ab");
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2)]), "1 2");
        assert_eq!(
            sprint(&["a".into(), Value::Int(1), Value::Int(2), "b".into()]),
            "a1 2b"
        );
        assert_eq!(sprintln(&["a".into(), Value::Int(1)]), "a 1\n");
    }
}
