//! Cron expressions as Fleet's Schedules write them (Quartz's form): `sec min hour
//! day-of-month month day-of-week [year]`, with `*`, `?`, lists, ranges, steps, month and
//! day names, days of the week 1-7 from Sunday, and the `@yearly`... shorthands; and the
//! next time one fires, in a time zone.

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// Why an expression cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// Not 6 or 7 fields.
    #[error("parse cron expression: invalid expression length")]
    Length,
    /// A field holds something it cannot.
    #[error("parse cron expression: {field}: {message}")]
    Field {
        /// The field's name.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// A parsed expression: the values each field admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    seconds: u64,
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    /// Days of the week, bit 0 for Sunday.
    weekdays: u8,
    /// The years it fires in, when the seventh field names them.
    years: Option<(i16, i16)>,
    /// `?` or `*` in the day-of-month field.
    any_day: bool,
    /// `?` or `*` in the day-of-week field.
    any_weekday: bool,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// The values one field admits, as a bit set from `low` to `high`.
fn field(
    text: &str,
    name: &'static str,
    low: u32,
    high: u32,
    names: &[&str],
    first_name: u32,
) -> Result<u64, CronError> {
    let fail = |message: String| CronError::Field {
        field: name,
        message,
    };
    let value = |token: &str| -> Result<u32, CronError> {
        let upper = token.to_ascii_uppercase();
        if let Some(index) = names.iter().position(|n| *n == upper) {
            return Ok(first_name + index as u32);
        }
        let number: u32 = token
            .parse()
            .map_err(|_| fail(format!("`{token}` is not a number")))?;
        if !(low..=high).contains(&number) {
            return Err(fail(format!("{number} is outside {low}-{high}")));
        }
        Ok(number)
    };
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| fail(format!("`{step}` is not a step")))?;
                (range, step)
            }
            None => (part, 1),
        };
        let (from, to) = match range {
            "*" | "?" => (low, high),
            _ => match range.split_once('-') {
                Some((from, to)) => (value(from)?, value(to)?),
                // `5/15`: from 5 to the end, every 15.
                None if step > 1 => (value(range)?, high),
                None => {
                    let single = value(range)?;
                    (single, single)
                }
            },
        };
        if from > to {
            return Err(fail(format!("the range {from}-{to} is empty")));
        }
        let mut at = from;
        while at <= to {
            set |= 1 << at;
            at += step;
        }
    }
    Ok(set)
}

impl Cron {
    /// Parses `text`; `L`, `W` and `#` (last day, nearest weekday, nth weekday) are refused
    /// as not supported.
    pub fn parse(text: &str) -> Result<Self, CronError> {
        let text = match text.trim() {
            "@yearly" | "@annually" => "0 0 0 1 1 ?",
            "@monthly" => "0 0 0 1 * ?",
            "@weekly" => "0 0 0 ? * 1",
            "@daily" | "@midnight" => "0 0 0 * * ?",
            "@hourly" => "0 0 * * * ?",
            other => other,
        };
        let fields: Vec<&str> = text.split_whitespace().collect();
        if !(6..=7).contains(&fields.len()) {
            return Err(CronError::Length);
        }
        // Day-of-month and day-of-week only (a month's name may hold an L).
        if let Some(special) = [fields[3], fields[5]].into_iter().find(|f| {
            f.to_ascii_uppercase()
                .replace("WED", "")
                .contains(['L', 'W', '#'])
        }) {
            return Err(CronError::Field {
                field: "day",
                message: format!("`{special}` (L, W, #) is not supported"),
            });
        }
        let any_day = matches!(fields[3], "*" | "?");
        let any_weekday = matches!(fields[5], "*" | "?");
        if !any_day && !any_weekday {
            return Err(CronError::Field {
                field: "day",
                message:
                    "day field set twice: one of day-of-month and day-of-week must be `?` or `*`"
                        .into(),
            });
        }
        let years = match fields.get(6) {
            None | Some(&"*") | Some(&"?") => None,
            Some(years) => {
                let fail = |message: String| CronError::Field {
                    field: "year",
                    message,
                };
                let parse = |t: &str| -> Result<i16, CronError> {
                    t.parse::<i16>()
                        .ok()
                        .filter(|y| (1970..=9999).contains(y))
                        .ok_or_else(|| fail(format!("`{t}` is not a year")))
                };
                Some(match years.split_once('-') {
                    Some((from, to)) => (parse(from)?, parse(to)?),
                    None => (parse(years)?, parse(years)?),
                })
            }
        };
        Ok(Self {
            seconds: field(fields[0], "second", 0, 59, &[], 0)?,
            minutes: field(fields[1], "minute", 0, 59, &[], 0)?,
            hours: field(fields[2], "hour", 0, 23, &[], 0)? as u32,
            days: field(fields[3], "day of month", 1, 31, &[], 0)? as u32,
            months: field(fields[4], "month", 1, 12, &MONTHS, 1)? as u16,
            // 1-7 from Sunday, kept with bit 0 for Sunday.
            weekdays: (field(fields[5], "day of week", 1, 7, &WEEKDAYS, 1)? >> 1) as u8,
            years,
            any_day,
            any_weekday,
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        let month = date.month() as u32;
        let year_ok = self
            .years
            .is_none_or(|(from, to)| (from..=to).contains(&date.year()));
        let weekday = date.weekday().to_sunday_zero_offset() as u32;
        year_ok
            && self.months & (1 << month) != 0
            && (self.any_day || self.days & (1 << date.day() as u32) != 0)
            && (self.any_weekday || self.weekdays & (1 << weekday) != 0)
    }

    /// The first time after `after` the expression fires, reading it in `zone`; none
    /// within the next 400 years (a year field in the past, a February 30th).
    pub fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        let start = zone.to_datetime(after).date();
        let mut date = start;
        while date.year() <= start.year().saturating_add(400) {
            if let Some((from, to)) = self.years {
                if date.year() > to {
                    return None;
                }
                if date.year() < from {
                    date = Date::new(from, 1, 1).ok()?;
                    continue;
                }
            }
            if self.months & (1 << date.month() as u32) == 0 {
                // On to the first day of the next month.
                date = date.last_of_month().tomorrow().ok()?;
                continue;
            }
            if self.day_matches(date) {
                if let Some(instant) = self.first_in_day(date, after, zone) {
                    return Some(instant);
                }
            }
            date = date.tomorrow().ok()?;
        }
        None
    }

    /// The first firing on `date` after `after`, if any.
    fn first_in_day(&self, date: Date, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        for hour in (0..24).filter(|h| self.hours & (1 << h) != 0) {
            for minute in (0..60).filter(|m| self.minutes & (1 << m) != 0) {
                for second in (0..60).filter(|s| self.seconds & (1 << s) != 0) {
                    let at = DateTime::new(
                        date.year(),
                        date.month(),
                        date.day(),
                        hour as i8,
                        minute as i8,
                        second as i8,
                        0,
                    )
                    .ok()?;
                    // A time a daylight saving change skips fires at its moment after the
                    // change, as `compatible` disambiguation reads it.
                    let instant = zone.to_ambiguous_timestamp(at).compatible().ok()?;
                    if instant > after {
                        return Some(instant);
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    fn next(expression: &str, after: &str, zone: &str) -> String {
        let zone = TimeZone::get(zone).expect("zone");
        Cron::parse(expression)
            .expect("parses")
            .next_after(at(after), &zone)
            .expect("fires")
            .to_string()
    }

    /// Each expected time worked out by hand from the calendar.
    #[test]
    fn next_times_are_the_calendars() {
        // Every minute, on its first second.
        assert_eq!(
            next("0 */1 * * * *", "2026-12-07T18:00:30Z", "UTC"),
            "2026-12-07T18:01:00Z"
        );
        // Every six seconds.
        assert_eq!(
            next("*/6 * * * * ?", "2026-12-07T18:00:07Z", "UTC"),
            "2026-12-07T18:00:12Z"
        );
        // Weekdays (Monday to Friday, 2-6 from Sunday) at 22:30; 2026-12-05 is a Saturday.
        assert_eq!(
            next("0 30 22 ? * 2-6", "2026-12-05T12:00:00Z", "UTC"),
            "2026-12-07T22:30:00Z"
        );
        assert_eq!(
            next("0 30 22 ? * MON-FRI", "2026-12-05T12:00:00Z", "UTC"),
            "2026-12-07T22:30:00Z"
        );
        // The first of each quarter's first month at midnight in Berlin (UTC+1 in winter).
        assert_eq!(
            next(
                "0 0 0 1 JAN,APR,JUL,OCT ?",
                "2026-12-07T00:00:00Z",
                "Europe/Berlin"
            ),
            "2026-12-31T23:00:00Z"
        );
        // Sundays (1) at 02:30 in Berlin: 2027-03-28 skips 02:00-03:00, so 02:30 is 03:30
        // summer time, 01:30 UTC.
        assert_eq!(
            next("0 30 2 ? * 1", "2027-03-27T00:00:00Z", "Europe/Berlin"),
            "2027-03-28T01:30:00Z"
        );
        assert_eq!(
            next("@daily", "2026-12-07T18:00:00Z", "UTC"),
            "2026-12-08T00:00:00Z"
        );
        // A year field.
        assert_eq!(
            next("0 0 12 1 1 ? 2030", "2026-12-07T18:00:00Z", "UTC"),
            "2030-01-01T12:00:00Z"
        );
    }

    #[test]
    fn what_cannot_fire_or_be_read_is_said() {
        assert_eq!(Cron::parse("0 * * * *"), Err(CronError::Length));
        assert!(Cron::parse("0 0 0 1 * MON").is_err(), "day field set twice");
        assert!(Cron::parse("0 0 0 L * ?").is_err(), "L is not supported");
        assert!(Cron::parse("61 * * * * ?").is_err());
        let never = Cron::parse("0 0 0 30 FEB ?").expect("parses");
        assert_eq!(
            never.next_after(at("2026-01-01T00:00:00Z"), &TimeZone::UTC),
            None
        );
        let past = Cron::parse("0 0 0 1 1 ? 2020").expect("parses");
        assert_eq!(
            past.next_after(at("2026-01-01T00:00:00Z"), &TimeZone::UTC),
            None
        );
    }
}
