//! What a plain (unquoted) scalar means to goyaml.v2, the YAML 1.1 reader under Helm's
//! `sigs.k8s.io/yaml`: `yes`, `on` and `y` are booleans, `~` is null, `0x1F` and `017` are
//! integers, `2001-12-14` is a timestamp, and so on.

/// The type and value a plain scalar resolves to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    /// `~`, `null`, or nothing.
    Null,
    /// `true`, `yes`, `on`, `y` and their false counterparts.
    Bool(bool),
    /// An integer that fits an int64.
    Int(i64),
    /// An integer that fits only a uint64.
    Uint(u64),
    /// A float, `.inf` or `.nan`.
    Float(f64),
    /// A timestamp (kept as its text when read into a generic value, as goyaml.v2 does).
    Timestamp,
    /// The merge key `<<`.
    Merge,
    /// A string.
    Str,
}

/// goyaml.v2's `resolve("", text)` for a plain scalar.
pub(crate) fn resolve(text: &str) -> Resolved {
    let Some(first) = text.bytes().next() else {
        return Resolved::Null;
    };
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Resolved::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        "<<" => return Resolved::Merge,
        _ => {}
    }
    match first {
        b'.' => match text.parse::<f64>() {
            Ok(f) if is_go_float_syntax(text) => Resolved::Float(f),
            _ => Resolved::Str,
        },
        b'0'..=b'9' | b'+' | b'-' => number_or_timestamp(text),
        _ => Resolved::Str,
    }
}

fn number_or_timestamp(text: &str) -> Resolved {
    if is_timestamp(text) {
        return Resolved::Timestamp;
    }
    let plain = text.replace('_', "");
    if let Some(i) = parse_go_int(&plain) {
        return Resolved::Int(i);
    }
    if let Some(u) = parse_go_uint(&plain) {
        return Resolved::Uint(u);
    }
    if is_yaml_style_float(&plain) {
        if let Ok(f) = plain.parse::<f64>() {
            return Resolved::Float(f);
        }
    }
    Resolved::Str
}

/// `strconv.ParseInt(s, 0, 64)`: an optional sign, then `0x`, `0o`, `0b`, a leading `0`
/// (octal) or decimal digits.
pub(crate) fn parse_go_int(text: &str) -> Option<i64> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = parse_go_unsigned(rest)?;
    if negative {
        if magnitude == 1u64 << 63 {
            Some(i64::MIN)
        } else {
            i64::try_from(magnitude).ok().map(|m| -m)
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strconv.ParseUint(s, 0, 64)`.
fn parse_go_uint(text: &str) -> Option<u64> {
    if text.starts_with(['+', '-']) {
        return None;
    }
    parse_go_unsigned(text)
}

fn parse_go_unsigned(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let (digits, radix) = if let Some(rest) = lower.strip_prefix("0x") {
        (rest, 16)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (rest, 8)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (rest, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    if matches!(bytes.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == bytes.len()
}

/// Whether Go's `strconv.ParseFloat` reads `text` (which starts with a `.`): decimal
/// digits, an optional exponent.
fn is_go_float_syntax(text: &str) -> bool {
    is_yaml_style_float(&text.replace('_', ""))
}

/// goyaml.v2's timestamps: `YYYY-M-D`, optionally followed by a time (`T`, `t` or a space,
/// `H:M:S`, fractional seconds, a zone for the `T` forms).
pub(crate) fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    let year_digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if year_digits != 4 || bytes.get(4) != Some(&b'-') {
        return false;
    }
    let rest = &text[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(at) => (&rest[..at], Some((rest.as_bytes()[at], &rest[at + 1..]))),
        None => (rest, None),
    };
    let Some((month, day)) = date.split_once('-') else {
        return false;
    };
    let (Some(month), Some(day)) = (short_number(month, 1, 12), short_number(day, 1, 31)) else {
        return false;
    };
    let year: u32 = text[..4].parse().unwrap_or(0);
    if day > days_in_month(year, month) {
        return false;
    }
    match time {
        None => true,
        Some((b' ', clock)) => is_clock(clock, false),
        Some((_, clock)) => is_clock(clock, true),
    }
}

/// One or two digits between `min` and `max`, as Go's `1` and `2` layout fields.
fn short_number(text: &str, min: u32, max: u32) -> Option<u32> {
    if text.is_empty() || text.len() > 2 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|n| (min..=max).contains(n))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `15:4:5.999999999` and, with `zone`, `Z07:00` after it.
fn is_clock(text: &str, zone: bool) -> bool {
    let (clock, offset) = if zone {
        match text.find(['Z', '+', '-']) {
            Some(at) => (&text[..at], &text[at..]),
            None => return false,
        }
    } else {
        (text, "")
    };
    let mut parts = clock.splitn(3, ':');
    let (Some(hour), Some(minute), Some(second)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (second, fraction) = second.split_once('.').unwrap_or((second, "0"));
    let fraction_ok = !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit());
    let clock_ok = short_number(hour, 0, 23).is_some()
        && short_number(minute, 0, 59).is_some()
        && short_number(second, 0, 59).is_some()
        && fraction_ok;
    clock_ok
        && (!zone || offset == "Z" || {
            let sign_free = &offset[1..];
            sign_free.len() == 5
                && sign_free.as_bytes()[2] == b':'
                && short_number(&sign_free[..2], 0, 23).is_some()
                && short_number(&sign_free[3..], 0, 59).is_some()
        })
}

/// goyaml.v2's `isBase60Float`: `1:20`, `-3:25:45.5`. Such strings are quoted on output.
pub(crate) fn is_base60_float(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let Some(first) = body.bytes().next() else {
        return false;
    };
    if !first.is_ascii_digit() || !body.contains(':') {
        return false;
    }
    let (main, fraction) = body.split_once('.').unwrap_or((body, ""));
    if !fraction.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return false;
    }
    let mut groups = main.split(':');
    let head = groups.next().unwrap_or_default();
    if !head.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return false;
    }
    groups.all(|g| {
        let bytes = g.as_bytes();
        match bytes {
            [d] => d.is_ascii_digit(),
            [a, b] => (b'0'..=b'5').contains(a) && b.is_ascii_digit(),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_scalars_resolve_as_goyaml_v2_resolves_them() {
        // goyaml.v2's resolve table and its documented number forms.
        assert_eq!(resolve("yes"), Resolved::Bool(true));
        assert_eq!(resolve("Off"), Resolved::Bool(false));
        assert_eq!(resolve("n"), Resolved::Bool(false));
        assert_eq!(resolve("~"), Resolved::Null);
        assert_eq!(resolve(""), Resolved::Null);
        assert_eq!(resolve("0x1F"), Resolved::Int(31));
        assert_eq!(resolve("017"), Resolved::Int(15));
        assert_eq!(resolve("0b101"), Resolved::Int(5));
        assert_eq!(resolve("1_000"), Resolved::Int(1000));
        assert_eq!(resolve("-12"), Resolved::Int(-12));
        assert_eq!(
            resolve("12345678901234567890"),
            Resolved::Uint(12_345_678_901_234_567_890)
        );
        assert_eq!(resolve("1.5"), Resolved::Float(1.5));
        assert_eq!(resolve("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve(".5"), Resolved::Float(0.5));
        assert_eq!(resolve("8.2.1"), Resolved::Str);
        assert_eq!(resolve("1e"), Resolved::Str);
        assert_eq!(resolve("2001-12-14"), Resolved::Timestamp);
        assert_eq!(resolve("2001-12-14T21:59:43.10Z"), Resolved::Timestamp);
        assert_eq!(resolve("2001-12-14 21:59:43.10"), Resolved::Timestamp);
        assert_eq!(resolve("2001-02-30"), Resolved::Str);
        assert_eq!(resolve("<<"), Resolved::Merge);
        assert_eq!(resolve("on-call"), Resolved::Str);
        assert!(is_base60_float("1:20"));
        assert!(is_base60_float("190:20:30.15"));
        assert!(!is_base60_float("1:70"));
        assert!(!is_base60_float("a:1"));
    }
}
