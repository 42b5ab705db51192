//! Time: `now`, `date`, `dateInZone` (UTC only), `unixEpoch`, `toDate`. Times are in UTC
//! (Helm uses the local zone; a GitOps render should not depend on the machine's zone).
//! `now` is the current time, so it changes between renders, as in Helm.

use std::collections::HashMap;
use std::rc::Rc;

use super::{arity, str_arg};
use crate::helm::template::value::Object;
use crate::helm::template::{Func, Value};

/// A point in time.
#[derive(Debug, Clone)]
pub struct Time(jiff::Timestamp);

impl Object for Time {
    fn type_name(&self) -> &'static str {
        "time.Time"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        match name {
            "Unix" => Ok(Value::Int(self.0.as_second())),
            "UTC" | "Local" => Ok(Value::Object(Rc::new(self.clone()))),
            "Format" => match args {
                [layout] => Ok(Value::from(format(&self.0, &str_arg(layout)?))),
                _ => Err("Format takes a layout".into()),
            },
            "Year" => Ok(Value::Int(i64::from(
                jiff::ZonedDateTime::new(self.0, jiff::tz::TimeZone::UTC).year(),
            ))),
            other => Err(format!("can't evaluate field {other} in type time.Time")),
        }
    }
}

fn time_of(value: &Value) -> Result<jiff::Timestamp, String> {
    match value {
        Value::Int(seconds) => jiff::Timestamp::from_second(*seconds).map_err(|e| e.to_string()),
        Value::Float(seconds) => {
            jiff::Timestamp::from_second(*seconds as i64).map_err(|e| e.to_string())
        }
        Value::Object(object) => match object.call("Unix", &[])? {
            Value::Int(seconds) => jiff::Timestamp::from_second(seconds).map_err(|e| e.to_string()),
            _ => Err("not a time".into()),
        },
        Value::Nil => Ok(jiff::Timestamp::now()),
        other => Err(format!("date expects a time, got {}", other.type_name())),
    }
}

/// Formats with a Go layout (`2006-01-02T15:04:05Z07:00`).
pub fn format(time: &jiff::Timestamp, layout: &str) -> String {
    let zoned = jiff::ZonedDateTime::new(*time, jiff::tz::TimeZone::UTC);
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
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let month = MONTHS[usize::try_from(zoned.month() - 1).unwrap_or(0)];
    let day = DAYS[usize::try_from(zoned.weekday().to_monday_zero_offset()).unwrap_or(0)];
    let hour12 = match zoned.hour() % 12 {
        0 => 12,
        h => h,
    };
    let tokens: Vec<(&str, String)> = vec![
        ("January", month.to_string()),
        ("Monday", day.to_string()),
        ("2006", format!("{:04}", zoned.year())),
        ("Z07:00", "Z".to_string()),
        ("-07:00", "+00:00".to_string()),
        ("-0700", "+0000".to_string()),
        ("Jan", month[..3].to_string()),
        ("Mon", day[..3].to_string()),
        ("MST", "UTC".to_string()),
        (".000", format!(".{:03}", zoned.millisecond())),
        ("15", format!("{:02}", zoned.hour())),
        ("01", format!("{:02}", zoned.month())),
        ("02", format!("{:02}", zoned.day())),
        ("03", format!("{hour12:02}")),
        ("04", format!("{:02}", zoned.minute())),
        ("05", format!("{:02}", zoned.second())),
        ("06", format!("{:02}", zoned.year() % 100)),
        (
            "PM",
            if zoned.hour() >= 12 { "PM" } else { "AM" }.to_string(),
        ),
        ("_2", format!("{:>2}", zoned.day())),
        ("Z", "Z".to_string()),
        ("1", zoned.month().to_string()),
        ("2", zoned.day().to_string()),
        ("3", hour12.to_string()),
        ("4", zoned.minute().to_string()),
        ("5", zoned.second().to_string()),
    ];
    let mut out = String::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        for (token, value) in &tokens {
            if let Some(after) = rest.strip_prefix(token) {
                out.push_str(value);
                rest = after;
                continue 'outer;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("now", |_, a| {
        arity("now", &a, 0)?;
        Ok(Value::Object(Rc::new(Time(jiff::Timestamp::now()))))
    });
    funcs.insert("date", |_, a| {
        arity("date", &a, 2)?;
        Ok(Value::from(format(&time_of(&a[1])?, &str_arg(&a[0])?)))
    });
    funcs.insert("dateInZone", |_, a| {
        arity("dateInZone", &a, 3)?;
        Ok(Value::from(format(&time_of(&a[1])?, &str_arg(&a[0])?)))
    });
    funcs.insert("unixEpoch", |_, a| {
        arity("unixEpoch", &a, 1)?;
        Ok(Value::from(time_of(&a[0])?.as_second().to_string()))
    });
    funcs.insert("toDate", |_, a| {
        arity("toDate", &a, 2)?;
        let text = str_arg(&a[1])?;
        let parsed: jiff::Timestamp = text
            .parse()
            .or_else(|_| format!("{text}T00:00:00Z").parse())
            .map_err(|e: jiff::Error| e.to_string())?;
        Ok(Value::Object(Rc::new(Time(parsed))))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_layouts_format_as_go_documents() {
        let time: jiff::Timestamp = "2009-11-10T23:04:05Z".parse().expect("time");
        assert_eq!(format(&time, "2006-01-02"), "2009-11-10");
        assert_eq!(
            format(&time, "2006-01-02T15:04:05Z07:00"),
            "2009-11-10T23:04:05Z"
        );
        assert_eq!(
            format(&time, "Mon Jan _2 03:04:05 PM MST 2006"),
            "Tue Nov 10 11:04:05 PM UTC 2009"
        );
        assert_eq!(format(&time, "January 2, 06"), "November 10, 09");
    }
}
