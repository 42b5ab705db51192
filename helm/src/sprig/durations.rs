//! Go's `time.Duration`: exact parsing (`time.ParseDuration`) and printing
//! (`Duration.String`), sprig's `duration` and `durationRound`, and Helm 4's duration
//! helpers (`mustToDuration`, `durationSeconds` ... `durationWeeks`, `durationRoundTo`,
//! `durationTruncateTo`).

use std::collections::HashMap;
use std::rc::Rc;

use super::arity;
use super::convert::parse_go_float;
use crate::template::value::Object;
use crate::template::{Func, Value};

const NANOSECOND: i64 = 1;
const MICROSECOND: i64 = 1_000;
const MILLISECOND: i64 = 1_000_000;
/// Nanoseconds in a second.
pub(super) const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;

/// A `time.Duration`: signed nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Duration(pub i64);

impl Object for Duration {
    fn type_name(&self) -> &'static str {
        "time.Duration"
    }

    fn kind(&self) -> &'static str {
        "int64"
    }

    fn call(&self, name: &str, _: &[Value]) -> Result<Value, String> {
        match name {
            "String" => Ok(Value::from(format_duration(self.0))),
            "Seconds" => Ok(Value::Float(self.0 as f64 / SECOND as f64)),
            "Minutes" => Ok(Value::Float(self.0 as f64 / MINUTE as f64)),
            "Hours" => Ok(Value::Float(self.0 as f64 / HOUR as f64)),
            "Milliseconds" => Ok(Value::Int64(self.0 / MILLISECOND)),
            "Microseconds" => Ok(Value::Int64(self.0 / MICROSECOND)),
            "Nanoseconds" => Ok(Value::Int64(self.0)),
            other => Err(format!(
                "can't evaluate field {other} in type time.Duration"
            )),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::from(self.0)
    }

    fn go_string(&self) -> String {
        format_duration(self.0)
    }
}

/// The value, when it is a `time.Duration`.
pub(super) fn duration_of(value: &Value) -> Option<i64> {
    match value {
        Value::Object(object) if object.type_name() == "time.Duration" => {
            object.call("Nanoseconds", &[]).ok()?.as_int()
        }
        _ => None,
    }
}

fn duration_value(nanos: i64) -> Value {
    Value::Object(Rc::new(Duration(nanos)))
}

/// Go's `time.ParseDuration`: `[-+]` then numbers with units (`ns`, `us`, `µs`, `ms`, `s`,
/// `m`, `h`), e.g. `1h15m30.5s`; `0` alone needs no unit.
pub(super) fn parse_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(text));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let whole_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let whole_digits = &rest[..whole_end];
        rest = &rest[whole_end..];
        let mut fraction_digits = "";
        if let Some(after_point) = rest.strip_prefix('.') {
            let end = after_point
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after_point.len());
            fraction_digits = &after_point[..end];
            rest = &after_point[end..];
        }
        if whole_digits.is_empty() && fraction_digits.is_empty() {
            return Err(invalid());
        }
        let unit_end = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_end] {
            "" => return Err(format!("time: missing unit in duration {}", go_quote(text))),
            "ns" => NANOSECOND,
            "us" | "µs" | "μs" => MICROSECOND,
            "ms" => MILLISECOND,
            "s" => SECOND,
            "m" => MINUTE,
            "h" => HOUR,
            other => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_quote(other),
                    go_quote(text)
                ))
            }
        } as u64;
        rest = &rest[unit_end..];
        let whole: u64 = if whole_digits.is_empty() {
            0
        } else {
            whole_digits.parse().map_err(|_| invalid())?
        };
        let mut amount = whole.checked_mul(unit).ok_or_else(invalid)?;
        if !fraction_digits.is_empty() {
            // The fraction in nanoseconds, rounded down as Go does.
            let mut scale = 1f64;
            let mut fraction = 0u64;
            for digit in fraction_digits.bytes().take(18) {
                fraction = fraction * 10 + u64::from(digit - b'0');
                scale *= 10.0;
            }
            amount = amount
                .checked_add((fraction as f64 * (unit as f64 / scale)) as u64)
                .ok_or_else(invalid)?;
        }
        total = total.checked_add(amount).ok_or_else(invalid)?;
    }
    let limit = if negative {
        i64::MIN.unsigned_abs()
    } else {
        i64::MAX as u64
    };
    if total > limit {
        return Err(invalid());
    }
    Ok(if negative {
        0i64.wrapping_sub_unsigned(total)
    } else {
        total as i64
    })
}

fn go_quote(text: &str) -> String {
    crate::template::printf::go_quote(text)
}

/// Go's `Duration.String`: `1h2m3.5s`, `1.5ms`, `0s`.
pub(super) fn format_duration(nanos: i64) -> String {
    let negative = nanos < 0;
    let mut u = nanos.unsigned_abs();
    let sign = if negative { "-" } else { "" };
    if u < SECOND as u64 {
        let (unit, digits) = match u {
            0 => return "0s".into(),
            u if u < MICROSECOND as u64 => return format!("{sign}{u}ns"),
            u if u < MILLISECOND as u64 => ("µs", 3),
            _ => ("ms", 6),
        };
        return format!("{sign}{}{unit}", fixed(u, digits));
    }
    let mut out = String::new();
    let seconds = fixed(u % (MINUTE as u64), 9);
    u /= MINUTE as u64;
    let minutes = u % 60;
    let hours = u / 60;
    if hours > 0 {
        out.push_str(&format!("{hours}h{minutes}m"));
    } else if minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    format!("{sign}{out}{seconds}s")
}

/// `value / 10^digits` with the fraction's trailing zeros (and a bare point) dropped.
fn fixed(value: u64, digits: u32) -> String {
    let scale = 10u64.pow(digits);
    let (whole, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return whole.to_string();
    }
    let fraction = format!("{fraction:0width$}", width = digits as usize);
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// Helm's `asDuration`: a duration, a Go duration string or a number of seconds (as a
/// number or a numeric string).
fn as_duration(value: &Value) -> Result<i64, String> {
    if let Some(nanos) = duration_of(value) {
        return Ok(nanos);
    }
    match value {
        Value::Str(s) => {
            let trimmed = s.trim();
            if trimmed.is_empty() {
                return Err("empty duration".into());
            }
            if let Ok(nanos) = parse_duration(trimmed) {
                return Ok(nanos);
            }
            match parse_go_float(trimmed) {
                Some(seconds) => Ok((seconds * SECOND as f64) as i64),
                None => Err(format!("could not parse duration {}", go_quote(s))),
            }
        }
        Value::Nil => Err("invalid duration".into()),
        Value::Int(i) | Value::Int64(i) => Ok(i.wrapping_mul(SECOND)),
        Value::Float(f) => Ok((f * SECOND as f64) as i64),
        other => Err(format!("unsupported duration type {}", other.type_name())),
    }
}

/// Go's `Duration.Round`: to the nearest multiple of `m`, halves away from zero.
fn round_duration(d: i64, m: i64) -> i64 {
    if m <= 0 {
        return d;
    }
    let r = d % m;
    if d < 0 {
        let r = -r;
        if r + r < m {
            return d + r;
        }
        d.checked_sub(m - r).unwrap_or(i64::MIN)
    } else {
        if r + r < m {
            return d - r;
        }
        d.checked_add(m - r).unwrap_or(i64::MAX)
    }
}

/// Go's `Duration.Truncate`: toward zero to a multiple of `m`.
fn truncate_duration(d: i64, m: i64) -> i64 {
    if m <= 0 {
        d
    } else {
        d - d % m
    }
}

/// sprig's `durationRound`: the largest whole unit (`y`, `mo`, `d`, `h`, `m`, `s`) the
/// magnitude exceeds.
pub(super) fn rough(nanos: i64) -> String {
    let u = nanos.unsigned_abs();
    let hour = HOUR as u64;
    let units = [
        (hour * 24 * 365, "y"),
        (hour * 24 * 30, "mo"),
        (hour * 24, "d"),
        (hour, "h"),
        (MINUTE as u64, "m"),
        (SECOND as u64, "s"),
    ];
    units
        .iter()
        .find(|(size, _)| u > *size)
        .map_or_else(|| "0s".into(), |(size, unit)| format!("{}{unit}", u / size))
}

/// A float-valued accessor: the duration over `unit` nanoseconds, 0 on a bad input.
fn in_units(value: &Value, unit: f64) -> Value {
    Value::Float(as_duration(value).map_or(0.0, |d| d as f64 / unit))
}

/// An integer-valued accessor.
fn whole_units(value: &Value, unit: i64) -> Value {
    Value::Int64(as_duration(value).map_or(0, |d| d / unit))
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("duration", |_, a| {
        arity("duration", &a, 1)?;
        let seconds = match &a[0] {
            Value::Str(s) => s.parse::<i64>().unwrap_or(0),
            Value::Int64(i) => *i,
            _ => 0,
        };
        Ok(Value::from(format_duration(seconds.wrapping_mul(SECOND))))
    });
    funcs.insert("mustToDuration", |_, a| {
        arity("mustToDuration", &a, 1)?;
        as_duration(&a[0]).map(duration_value)
    });
    let accessors: [(&'static str, Func); 8] = [
        ("durationSeconds", |_, a| {
            arity("durationSeconds", &a, 1)?;
            Ok(in_units(&a[0], SECOND as f64))
        }),
        ("durationMinutes", |_, a| {
            arity("durationMinutes", &a, 1)?;
            Ok(in_units(&a[0], MINUTE as f64))
        }),
        ("durationHours", |_, a| {
            arity("durationHours", &a, 1)?;
            Ok(in_units(&a[0], HOUR as f64))
        }),
        ("durationDays", |_, a| {
            arity("durationDays", &a, 1)?;
            Ok(in_units(&a[0], (24 * HOUR) as f64))
        }),
        ("durationWeeks", |_, a| {
            arity("durationWeeks", &a, 1)?;
            Ok(in_units(&a[0], (7 * 24 * HOUR) as f64))
        }),
        ("durationMilliseconds", |_, a| {
            arity("durationMilliseconds", &a, 1)?;
            Ok(whole_units(&a[0], MILLISECOND))
        }),
        ("durationMicroseconds", |_, a| {
            arity("durationMicroseconds", &a, 1)?;
            Ok(whole_units(&a[0], MICROSECOND))
        }),
        ("durationNanoseconds", |_, a| {
            arity("durationNanoseconds", &a, 1)?;
            Ok(whole_units(&a[0], NANOSECOND))
        }),
    ];
    funcs.extend(accessors);
    funcs.insert("durationRoundTo", |_, a| {
        arity("durationRoundTo", &a, 2)?;
        Ok(duration_value(match as_duration(&a[0]) {
            Err(_) => 0,
            Ok(d) => as_duration(&a[1]).map_or(d, |m| round_duration(d, m)),
        }))
    });
    funcs.insert("durationTruncateTo", |_, a| {
        arity("durationTruncateTo", &a, 2)?;
        Ok(duration_value(match as_duration(&a[0]) {
            Err(_) => 0,
            Ok(d) => as_duration(&a[1]).map_or(d, |m| truncate_duration(d, m)),
        }))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from Go's time package documentation and Helm 4.3.1's output.
    #[test]
    fn parses_go_durations_exactly() {
        assert_eq!(parse_duration("1h15m30.918273645s"), Ok(4_530_918_273_645));
        assert_eq!(parse_duration("-1.5h"), Ok(-5_400 * SECOND));
        assert_eq!(parse_duration("300ms"), Ok(300 * MILLISECOND));
        assert_eq!(parse_duration("2µs"), Ok(2_000));
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(
            parse_duration("1"),
            Err("time: missing unit in duration \"1\"".into())
        );
        assert_eq!(
            parse_duration("1x"),
            Err("time: unknown unit \"x\" in duration \"1x\"".into())
        );
        assert_eq!(
            parse_duration("x"),
            Err("time: invalid duration \"x\"".into())
        );
        assert!(parse_duration("9999999999h").is_err());
    }

    #[test]
    fn prints_as_go_does() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(1), "1ns");
        assert_eq!(format_duration(1_100), "1.1µs");
        assert_eq!(format_duration(2_200_000), "2.2ms");
        assert_eq!(format_duration(3_300_000_000), "3.3s");
        assert_eq!(format_duration(4 * MINUTE + 5 * SECOND), "4m5s");
        assert_eq!(
            format_duration(4 * MINUTE + 5_001 * MILLISECOND),
            "4m5.001s"
        );
        assert_eq!(
            format_duration(5 * HOUR + 6 * MINUTE + 7_001 * MILLISECOND),
            "5h6m7.001s"
        );
        assert_eq!(format_duration(HOUR), "1h0m0s");
        assert_eq!(format_duration(-90 * SECOND), "-1m30s");
        assert_eq!(format_duration(i64::MIN), "-2562047h47m16.854775808s");
    }

    #[test]
    fn rounds_like_go_and_sprig() {
        assert_eq!(round_duration(90 * MINUTE + 30 * SECOND, HOUR), 2 * HOUR);
        assert_eq!(round_duration(-90 * MINUTE, HOUR), -2 * HOUR);
        assert_eq!(truncate_duration(90 * MINUTE, HOUR), HOUR);
        assert_eq!(rough(2 * 24 * HOUR + 1), "2d");
        assert_eq!(rough(-3 * HOUR - 1), "3h");
        assert_eq!(rough(SECOND), "0s");
        assert_eq!(rough(400 * 24 * HOUR), "1y");
    }
}
