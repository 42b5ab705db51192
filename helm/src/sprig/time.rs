//! Time as sprig handles it: `now`, `date`, `dateInZone`, `htmlDate`, `htmlDateInZone`,
//! `unixEpoch`, `dateModify`, `toDate`, `ago`, with Go's reference-time layouts
//! (`2006-01-02T15:04:05Z07:00`) for both printing and parsing. Go's local zone is UTC
//! here: a GitOps render should not depend on the machine it runs on. `now` reads the
//! render's clock ([`World`](crate::template::World)).

use std::collections::HashMap;
use std::rc::Rc;

use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime};

use super::durations::{duration_of, format_duration, parse_duration, rough, SECOND};
use super::{arity, str_arg};
use crate::template::value::Object;
use crate::template::{Func, Value};

/// A `time.Time`: an instant in a zone.
#[derive(Debug, Clone)]
pub(super) struct Time(pub ZonedDateTime);

impl Time {
    /// The instant in UTC.
    pub(super) fn utc(timestamp: Timestamp) -> Self {
        Time(timestamp.to_zoned_datetime(TimeZone::UTC))
    }

    fn value(self) -> Value {
        Value::Object(Rc::new(self))
    }
}

impl Object for Time {
    fn type_name(&self) -> &'static str {
        "time.Time"
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let z = &self.0;
        let int = |i: i64| Ok(Value::Int(i));
        match (name, args) {
            ("Format", [layout]) => Ok(Value::from(format(z, &str_arg(layout)?))),
            ("String", []) => Ok(Value::from(self.go_string())),
            ("Unix", []) => Ok(Value::Int64(z.timestamp().as_second())),
            ("UnixMilli", []) => Ok(Value::Int64(z.timestamp().as_millisecond())),
            ("UnixNano", []) => Ok(Value::Int64(
                i64::try_from(z.timestamp().as_nanosecond()).unwrap_or(i64::MAX),
            )),
            ("Year", []) => int(i64::from(z.year())),
            ("Month", []) => Ok(Value::from(MONTHS[month_index(z)])),
            ("Day", []) => int(i64::from(z.day())),
            ("Hour", []) => int(i64::from(z.hour())),
            ("Minute", []) => int(i64::from(z.minute())),
            ("Second", []) => int(i64::from(z.second())),
            ("Nanosecond", []) => int(i64::from(z.subsec_nanosecond())),
            ("YearDay", []) => int(i64::from(z.day_of_year())),
            ("Weekday", []) => Ok(Value::from(DAYS[weekday_index(z)])),
            ("UTC" | "Local", []) => Ok(Time::utc(z.timestamp()).value()),
            ("IsZero", []) => Ok(Value::Bool(z.timestamp() == zero_time())),
            ("Add", [d]) => {
                let nanos = super::durations::duration_of(d)
                    .or_else(|| d.as_int())
                    .ok_or("Add takes a time.Duration")?;
                let moved = z
                    .timestamp()
                    .checked_add(jiff::SignedDuration::from_nanos(nanos))
                    .map_err(|e| e.to_string())?;
                Ok(Time(moved.to_zoned_datetime(z.time_zone().clone())).value())
            }
            ("Sub", [other]) => {
                let other = timestamp_of(other).ok_or("Sub takes a time.Time")?;
                let nanos = z.timestamp().duration_since(other).as_nanos();
                Ok(Value::Object(Rc::new(super::durations::Duration(
                    i64::try_from(nanos).unwrap_or(i64::MAX),
                ))))
            }
            ("Before" | "After" | "Equal", [other]) => {
                let other = timestamp_of(other).ok_or("compare with a time.Time")?;
                let mine = z.timestamp();
                Ok(Value::Bool(match name {
                    "Before" => mine < other,
                    "After" => mine > other,
                    _ => mine == other,
                }))
            }
            _ => Err(format!("can't evaluate field {name} in type time.Time")),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(format(&self.0, "2006-01-02T15:04:05.999999999Z07:00"))
    }

    fn go_string(&self) -> String {
        format(&self.0, "2006-01-02 15:04:05.999999999 -0700 MST")
    }
}

/// Go's zero `time.Time`, January 1 of year 1, UTC.
fn zero_time() -> Timestamp {
    "0001-01-01T00:00:00Z"
        .parse()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The instant of a `time.Time` value.
pub(super) fn timestamp_of(value: &Value) -> Option<Timestamp> {
    match value {
        Value::Object(object) if object.type_name() == "time.Time" => {
            let nanos = object.call("UnixNano", &[]).ok()?.as_int()?;
            Timestamp::from_nanosecond(i128::from(nanos)).ok()
        }
        _ => None,
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

fn month_index(z: &ZonedDateTime) -> usize {
    usize::try_from(z.month() - 1).unwrap_or(0)
}

fn weekday_index(z: &ZonedDateTime) -> usize {
    usize::try_from(z.weekday().to_sunday_zero_offset()).unwrap_or(0)
}

/// A piece of a Go layout.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Chunk {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm,
    LowerPm,
    ZoneName,
    /// A numeric zone: `Z` for UTC (ISO 8601 form) or not, with colons or not, with seconds.
    Offset {
        iso: bool,
        colons: bool,
        minutes: bool,
        seconds: bool,
    },
    /// Fractional seconds: `digits` places, trailing zeros dropped when `trim`.
    Fraction {
        digits: usize,
        trim: bool,
    },
}

/// Go's `nextStdChunk`: the text before the next layout element, the element, and the rest.
fn next_chunk(layout: &str) -> (&str, Option<(Chunk, &str)>) {
    let bytes = layout.as_bytes();
    let starts = |i: usize, s: &str| layout[i..].starts_with(s);
    for i in 0..bytes.len() {
        let found = match bytes[i] {
            b'J' if starts(i, "January") => Some((Chunk::LongMonth, 7)),
            b'J' if starts(i, "Jan") => Some((Chunk::Month, 3)),
            b'M' if starts(i, "Monday") => Some((Chunk::LongWeekDay, 6)),
            b'M' if starts(i, "Mon") => Some((Chunk::WeekDay, 3)),
            b'M' if starts(i, "MST") => Some((Chunk::ZoneName, 3)),
            b'0' if starts(i, "002") => Some((Chunk::ZeroYearDay, 3)),
            b'0' if bytes.get(i + 1).is_some_and(|b| (b'1'..=b'6').contains(b)) => {
                let chunk = match bytes[i + 1] {
                    b'1' => Chunk::ZeroMonth,
                    b'2' => Chunk::ZeroDay,
                    b'3' => Chunk::ZeroHour12,
                    b'4' => Chunk::ZeroMinute,
                    b'5' => Chunk::ZeroSecond,
                    _ => Chunk::Year,
                };
                Some((chunk, 2))
            }
            b'1' if starts(i, "15") => Some((Chunk::Hour, 2)),
            b'1' => Some((Chunk::NumMonth, 1)),
            b'2' if starts(i, "2006") => Some((Chunk::LongYear, 4)),
            b'2' => Some((Chunk::Day, 1)),
            b'_' if starts(i, "_2") && !starts(i, "_2006") => Some((Chunk::UnderDay, 2)),
            b'3' => Some((Chunk::Hour12, 1)),
            b'4' => Some((Chunk::Minute, 1)),
            b'5' => Some((Chunk::Second, 1)),
            b'P' if starts(i, "PM") => Some((Chunk::Pm, 2)),
            b'p' if starts(i, "pm") => Some((Chunk::LowerPm, 2)),
            b'-' | b'Z' => offset_chunk(&layout[i..]),
            b'.' | b',' => fraction_chunk(&layout[i..]),
            _ => None,
        };
        if let Some((chunk, len)) = found {
            return (&layout[..i], Some((chunk, &layout[i + len..])));
        }
    }
    (layout, None)
}

fn offset_chunk(text: &str) -> Option<(Chunk, usize)> {
    let iso = text.starts_with('Z');
    let body = &text[1..];
    let forms: [(&str, bool, bool, bool); 5] = [
        ("070000", false, true, true),
        ("07:00:00", true, true, true),
        ("0700", false, true, false),
        ("07:00", true, true, false),
        ("07", false, false, false),
    ];
    forms.iter().find(|(form, ..)| body.starts_with(form)).map(
        |(form, colons, minutes, seconds)| {
            (
                Chunk::Offset {
                    iso,
                    colons: *colons,
                    minutes: *minutes,
                    seconds: *seconds,
                },
                form.len() + 1,
            )
        },
    )
}

fn fraction_chunk(text: &str) -> Option<(Chunk, usize)> {
    let digit = *text.as_bytes().get(1)?;
    if digit != b'0' && digit != b'9' {
        return None;
    }
    let run = text[1..].bytes().take_while(|b| *b == digit).count();
    if text[1 + run..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some((
        Chunk::Fraction {
            digits: run,
            trim: digit == b'9',
        },
        run + 1,
    ))
}

/// `t.Format(layout)`.
pub(super) fn format(z: &ZonedDateTime, layout: &str) -> String {
    let mut out = String::new();
    let mut rest = layout;
    loop {
        let (prefix, chunk) = next_chunk(rest);
        out.push_str(prefix);
        let Some((chunk, after)) = chunk else {
            return out;
        };
        rest = after;
        let hour12 = match z.hour() % 12 {
            0 => 12,
            h => h,
        };
        let month = MONTHS[month_index(z)];
        let day = DAYS[weekday_index(z)];
        match chunk {
            Chunk::LongMonth => out.push_str(month),
            Chunk::Month => out.push_str(&month[..3]),
            Chunk::NumMonth => out.push_str(&z.month().to_string()),
            Chunk::ZeroMonth => out.push_str(&format!("{:02}", z.month())),
            Chunk::LongWeekDay => out.push_str(day),
            Chunk::WeekDay => out.push_str(&day[..3]),
            Chunk::Day => out.push_str(&z.day().to_string()),
            Chunk::UnderDay => out.push_str(&format!("{:>2}", z.day())),
            Chunk::ZeroDay => out.push_str(&format!("{:02}", z.day())),
            Chunk::ZeroYearDay => out.push_str(&format!("{:03}", z.day_of_year())),
            Chunk::Hour => out.push_str(&format!("{:02}", z.hour())),
            Chunk::Hour12 => out.push_str(&hour12.to_string()),
            Chunk::ZeroHour12 => out.push_str(&format!("{hour12:02}")),
            Chunk::Minute => out.push_str(&z.minute().to_string()),
            Chunk::ZeroMinute => out.push_str(&format!("{:02}", z.minute())),
            Chunk::Second => out.push_str(&z.second().to_string()),
            Chunk::ZeroSecond => out.push_str(&format!("{:02}", z.second())),
            Chunk::LongYear => out.push_str(&format!("{:04}", z.year())),
            Chunk::Year => out.push_str(&format!("{:02}", z.year().rem_euclid(100))),
            Chunk::Pm => out.push_str(if z.hour() >= 12 { "PM" } else { "AM" }),
            Chunk::LowerPm => out.push_str(if z.hour() >= 12 { "pm" } else { "am" }),
            Chunk::ZoneName => out.push_str(&zone_name(z)),
            Chunk::Offset {
                iso,
                colons,
                minutes,
                seconds,
            } => {
                let offset = z.offset().seconds();
                if iso && offset == 0 {
                    out.push('Z');
                } else {
                    let sign = if offset < 0 { '-' } else { '+' };
                    let abs = offset.unsigned_abs();
                    let separator = if colons { ":" } else { "" };
                    out.push_str(&format!("{sign}{:02}", abs / 3600));
                    if minutes {
                        out.push_str(&format!("{separator}{:02}", abs / 60 % 60));
                    }
                    if seconds {
                        out.push_str(&format!("{separator}{:02}", abs % 60));
                    }
                }
            }
            Chunk::Fraction { digits, trim } => {
                let nanos = format!("{:09}", z.subsec_nanosecond());
                let mut fraction = nanos[..digits.min(9)].to_string();
                fraction.extend(std::iter::repeat_n('0', digits.saturating_sub(9)));
                if trim {
                    let trimmed = fraction.trim_end_matches('0');
                    if !trimmed.is_empty() {
                        out.push_str(&layout_separator(layout, rest, digits));
                        out.push_str(trimmed);
                    }
                } else {
                    out.push_str(&layout_separator(layout, rest, digits));
                    out.push_str(&fraction);
                }
            }
        }
    }
}

/// The `.` or `,` that introduced a fraction chunk ending where `rest` starts.
fn layout_separator(layout: &str, rest: &str, digits: usize) -> String {
    let end = layout.len() - rest.len();
    layout[..end]
        .chars()
        .rev()
        .nth(digits)
        .unwrap_or('.')
        .to_string()
}

/// The zone's abbreviation (`UTC`, `CET`), or its offset where it has none.
fn zone_name(z: &ZonedDateTime) -> String {
    let info = z.time_zone().to_offset_info(z.timestamp());
    let name = info.abbreviation();
    if name.is_empty() {
        let offset = z.offset().seconds();
        let sign = if offset < 0 { '-' } else { '+' };
        format!(
            "{sign}{:02}{:02}",
            offset.unsigned_abs() / 3600,
            offset.unsigned_abs() / 60 % 60
        )
    } else {
        name.to_string()
    }
}

/// Parses `text` with a Go layout, in UTC unless it carries an offset
/// (`time.ParseInLocation(layout, text, time.Local)`).
pub(super) fn parse(layout: &str, text: &str) -> Result<ZonedDateTime, String> {
    let fail = |element: &str, value: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            go_quote(text),
            go_quote(layout),
            go_quote(value),
            go_quote(element)
        )
    };
    let (mut year, mut month, mut day, mut hour, mut minute, mut second, mut nanos) =
        (1i16, 1i8, 1i8, 0i8, 0i8, 0i8, 0i32);
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let (mut rest_layout, mut value) = (layout, text);
    loop {
        let (prefix, chunk) = next_chunk(rest_layout);
        value = value
            .strip_prefix(prefix)
            .ok_or_else(|| fail(prefix, value))?;
        let Some((chunk, after)) = chunk else {
            if !value.is_empty() {
                return Err(format!(
                    "parsing time {}: extra text: {}",
                    go_quote(text),
                    go_quote(value)
                ));
            }
            break;
        };
        let element = &rest_layout[prefix.len()..rest_layout.len() - after.len()];
        rest_layout = after;
        let digits = |value: &str, min: usize, max: usize| -> Option<(i64, usize)> {
            let n = value
                .bytes()
                .take(max)
                .take_while(u8::is_ascii_digit)
                .count();
            (n >= min).then(|| (value[..n].parse().unwrap_or(0), n))
        };
        let number = |value: &mut &str, min: usize, max: usize| -> Result<i64, String> {
            let (n, len) = digits(value, min, max).ok_or_else(|| fail(element, value))?;
            *value = &value[len..];
            Ok(n)
        };
        let name_of = |value: &mut &str, names: &[&str], len: Option<usize>| {
            names
                .iter()
                .position(|n| {
                    let n = len.map_or(*n, |l| &n[..l]);
                    value.len() >= n.len() && value[..n.len()].eq_ignore_ascii_case(n)
                })
                .inspect(|i| {
                    let n = len.unwrap_or(names[*i].len());
                    *value = &value[n..];
                })
                .ok_or_else(|| fail(element, value))
        };
        let small = |n: i64| i8::try_from(n).unwrap_or(i8::MAX);
        match chunk {
            Chunk::LongMonth => month = small(name_of(&mut value, &MONTHS, None)? as i64 + 1),
            Chunk::Month => month = small(name_of(&mut value, &MONTHS, Some(3))? as i64 + 1),
            Chunk::LongWeekDay => {
                name_of(&mut value, &DAYS, None)?;
            }
            Chunk::WeekDay => {
                name_of(&mut value, &DAYS, Some(3))?;
            }
            Chunk::NumMonth => month = small(number(&mut value, 1, 2)?),
            Chunk::ZeroMonth => month = small(number(&mut value, 2, 2)?),
            Chunk::Day => day = small(number(&mut value, 1, 2)?),
            Chunk::UnderDay => {
                value = value.strip_prefix(' ').unwrap_or(value);
                day = small(number(&mut value, 1, 2)?);
            }
            Chunk::ZeroDay => day = small(number(&mut value, 2, 2)?),
            Chunk::ZeroYearDay => {
                number(&mut value, 3, 3)?;
            }
            Chunk::Hour => hour = small(number(&mut value, 2, 2)?),
            Chunk::Hour12 => hour = small(number(&mut value, 1, 2)?),
            Chunk::ZeroHour12 => hour = small(number(&mut value, 2, 2)?),
            Chunk::Minute => minute = small(number(&mut value, 1, 2)?),
            Chunk::ZeroMinute => minute = small(number(&mut value, 2, 2)?),
            Chunk::Second | Chunk::ZeroSecond => {
                let min = if chunk == Chunk::Second { 1 } else { 2 };
                second = small(number(&mut value, min, 2)?);
                // A fraction may follow seconds even where the layout has none.
                if let Some(fraction) = value.strip_prefix(['.', ',']) {
                    if !rest_layout.starts_with(['.', ',']) {
                        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
                        nanos = fraction_nanos(&fraction[..n]);
                        value = &fraction[n..];
                    }
                }
            }
            Chunk::LongYear => year = i16::try_from(number(&mut value, 4, 4)?).unwrap_or(1),
            Chunk::Year => {
                let y = number(&mut value, 2, 2)?;
                year = i16::try_from(if y >= 69 { 1900 + y } else { 2000 + y }).unwrap_or(1);
            }
            Chunk::Pm | Chunk::LowerPm => {
                pm = Some(name_of(&mut value, &["PM", "AM"], None)? == 0);
            }
            Chunk::ZoneName => {
                let n = value.bytes().take_while(u8::is_ascii_uppercase).count();
                if n < 3 {
                    return Err(fail(element, value));
                }
                if &value[..n] == "UTC" || &value[..n] == "GMT" {
                    offset = Some(0);
                }
                value = &value[n..];
            }
            Chunk::Offset { iso, .. } => {
                if iso && value.starts_with('Z') {
                    value = &value[1..];
                    offset = Some(0);
                    continue;
                }
                let sign = match value.as_bytes().first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return Err(fail(element, value)),
                };
                value = &value[1..];
                let hours = number(&mut value, 2, 2)?;
                value = value.strip_prefix(':').unwrap_or(value);
                let minutes = digits(value, 2, 2).map_or(0, |(m, len)| {
                    value = &value[len..];
                    m
                });
                offset = Some(sign * i32::try_from(hours * 3600 + minutes * 60).unwrap_or(0));
            }
            Chunk::Fraction { .. } => {
                let Some(fraction) = value.strip_prefix(['.', ',']) else {
                    continue;
                };
                let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
                nanos = fraction_nanos(&fraction[..n]);
                value = &fraction[n..];
            }
        }
    }
    match pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let civil = jiff::civil::DateTime::new(year, month, day, hour, minute, second, nanos)
        .map_err(|_| format!("parsing time {}: day out of range", go_quote(text)))?;
    let zone = match offset {
        Some(seconds) => {
            TimeZone::fixed(jiff::tz::Offset::from_seconds(seconds).map_err(|e| e.to_string())?)
        }
        None => TimeZone::UTC,
    };
    civil.to_zoned_datetime(zone).map_err(|e| e.to_string())
}

fn fraction_nanos(digits: &str) -> i32 {
    let mut padded = digits.chars().take(9).collect::<String>();
    while padded.len() < 9 {
        padded.push('0');
    }
    padded.parse().unwrap_or(0)
}

fn go_quote(text: &str) -> String {
    crate::template::printf::go_quote(text)
}

/// The zone a name means: `Local` is UTC here; unknown names are UTC, as sprig falls back.
fn zone(name: &str) -> TimeZone {
    match name {
        "" | "UTC" | "Local" => TimeZone::UTC,
        other => TimeZone::get(other).unwrap_or(TimeZone::UTC),
    }
}

/// sprig's `formatDate`: a time, or Unix seconds as an int, else now.
fn format_date(
    exec: &crate::template::Exec,
    date: &Value,
    layout: &str,
    zone_name: &str,
) -> String {
    let instant = match date {
        Value::Int(seconds) | Value::Int64(seconds) => Timestamp::from_second(*seconds).ok(),
        other => timestamp_of(other),
    }
    .unwrap_or_else(|| exec.world.now());
    format(&instant.to_zoned_datetime(zone(zone_name)), layout)
}

/// A `time.Time` parameter.
fn time_arg(value: &Value) -> Result<ZonedDateTime, String> {
    timestamp_of(value)
        .map(|t| t.to_zoned_datetime(TimeZone::UTC))
        .ok_or_else(|| {
            format!(
                "wrong type for value; expected time.Time; got {}",
                value.type_name()
            )
        })
}

fn modify(layout: &Value, date: &Value) -> Result<Result<Value, String>, String> {
    let z = time_arg(date)?;
    let change = str_arg(layout)?;
    Ok(parse_duration(&change).and_then(|nanos| {
        z.timestamp()
            .checked_add(jiff::SignedDuration::from_nanos(nanos))
            .map(|t| Time(t.to_zoned_datetime(z.time_zone().clone())).value())
            .map_err(|e| e.to_string())
    }))
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    // `durationRound` takes a duration, or a time whose age it rounds.
    funcs.insert("durationRound", |exec, a| {
        arity("durationRound", &a, 1)?;
        let nanos = match &a[0] {
            Value::Str(s) => parse_duration(s).unwrap_or(0),
            Value::Int64(i) => *i,
            Value::Object(_) => match timestamp_of(&a[0]) {
                Some(then) => {
                    let since = exec.world.now().duration_since(then);
                    i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
                }
                None => duration_of(&a[0]).unwrap_or(0),
            },
            _ => 0,
        };
        Ok(Value::from(rough(nanos)))
    });
    funcs.insert("now", |exec, a| {
        arity("now", &a, 0)?;
        Ok(Time::utc(exec.world.now()).value())
    });
    funcs.insert("date", |exec, a| {
        arity("date", &a, 2)?;
        Ok(Value::from(format_date(
            exec,
            &a[1],
            &str_arg(&a[0])?,
            "Local",
        )))
    });
    let in_zone: Func = |exec, a| {
        arity("dateInZone", &a, 3)?;
        Ok(Value::from(format_date(
            exec,
            &a[1],
            &str_arg(&a[0])?,
            &str_arg(&a[2])?,
        )))
    };
    funcs.insert("dateInZone", in_zone);
    funcs.insert("date_in_zone", in_zone);
    funcs.insert("htmlDate", |exec, a| {
        arity("htmlDate", &a, 1)?;
        Ok(Value::from(format_date(exec, &a[0], "2006-01-02", "Local")))
    });
    funcs.insert("htmlDateInZone", |exec, a| {
        arity("htmlDateInZone", &a, 2)?;
        Ok(Value::from(format_date(
            exec,
            &a[0],
            "2006-01-02",
            &str_arg(&a[1])?,
        )))
    });
    funcs.insert("unixEpoch", |_, a| {
        arity("unixEpoch", &a, 1)?;
        Ok(Value::from(
            time_arg(&a[0])?.timestamp().as_second().to_string(),
        ))
    });
    let lenient: Func = |_, a| {
        arity("dateModify", &a, 2)?;
        Ok(modify(&a[0], &a[1])?.unwrap_or_else(|_| a[1].clone()))
    };
    let strict: Func = |_, a| {
        arity("mustDateModify", &a, 2)?;
        modify(&a[0], &a[1])?
    };
    funcs.insert("dateModify", lenient);
    funcs.insert("date_modify", lenient);
    funcs.insert("mustDateModify", strict);
    funcs.insert("must_date_modify", strict);
    funcs.insert("toDate", |_, a| {
        arity("toDate", &a, 2)?;
        let parsed = parse(&str_arg(&a[0])?, &str_arg(&a[1])?)
            .unwrap_or_else(|_| zero_time().to_zoned_datetime(TimeZone::UTC));
        Ok(Time(parsed).value())
    });
    funcs.insert("mustToDate", |_, a| {
        arity("mustToDate", &a, 2)?;
        Ok(Time(parse(&str_arg(&a[0])?, &str_arg(&a[1])?)?).value())
    });
    funcs.insert("ago", |exec, a| {
        arity("ago", &a, 1)?;
        let then = match &a[0] {
            Value::Int(seconds) | Value::Int64(seconds) => Timestamp::from_second(*seconds).ok(),
            other => timestamp_of(other),
        }
        .unwrap_or_else(|| exec.world.now());
        let since = exec.world.now().duration_since(then);
        let nanos = i64::try_from(since.as_nanos()).unwrap_or(i64::MAX);
        let rounded = (nanos + nanos.signum() * SECOND / 2) / SECOND * SECOND;
        Ok(Value::from(format_duration(rounded)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> ZonedDateTime {
        text.parse::<Timestamp>()
            .expect("a timestamp")
            .to_zoned_datetime(TimeZone::UTC)
    }

    // Layouts and results from Go's time package documentation.
    #[test]
    fn formats_go_layouts() {
        let t = at("2009-11-10T23:04:05.120Z");
        assert_eq!(format(&t, "2006-01-02"), "2009-11-10");
        assert_eq!(
            format(&t, "2006-01-02T15:04:05Z07:00"),
            "2009-11-10T23:04:05Z"
        );
        assert_eq!(
            format(&t, "Mon Jan _2 03:04:05 PM MST 2006"),
            "Tue Nov 10 11:04:05 PM UTC 2009"
        );
        assert_eq!(format(&t, "15:04:05.000"), "23:04:05.120");
        assert_eq!(format(&t, "15:04:05.999"), "23:04:05.12");
        assert_eq!(format(&t, "-07:00 -0700 Z0700"), "+00:00 +0000 Z");
        assert_eq!(format(&t, "v1 January 2"), "v11 November 10");
        assert_eq!(
            format(&t, "2006-01-02 15:04:05.999999999 -0700 MST"),
            "2009-11-10 23:04:05.12 +0000 UTC"
        );
    }

    #[test]
    fn parses_go_layouts() {
        let parsed = parse("2006-01-02", "2024-03-05").expect("a date");
        assert_eq!(format(&parsed, time_layout()), "2024-03-05T00:00:00Z");
        let parsed =
            parse("2006-01-02T15:04:05Z07:00", "2024-03-05T06:07:08+02:00").expect("a time");
        assert_eq!(parsed.timestamp().as_second(), 1_709_611_628);
        let parsed = parse("Jan 2 2006 3:04pm", "Mar 5 2024 6:07pm").expect("a time");
        assert_eq!(format(&parsed, time_layout()), "2024-03-05T18:07:00Z");
        assert_eq!(
            parse("2006-01-02", "x"),
            Err("parsing time \"x\" as \"2006-01-02\": cannot parse \"x\" as \"2006\"".into())
        );
    }

    fn time_layout() -> &'static str {
        "2006-01-02T15:04:05Z07:00"
    }
}
