//! Arithmetic as sprig does it: integer functions on int64 (wrapping on overflow, Go's
//! panic on division by zero), float functions through decimals (`addf 0.1 0.2` is 0.3),
//! sprig's own `round`, `randInt`, and the sequences `until`, `untilStep` and `seq`.

use std::collections::HashMap;

use super::arity;
use super::convert::{to_float, to_int};
use super::lists::MAX_LIST;
use crate::template::{Exec, Func, Value};

const DIVIDE_BY_ZERO: &str = "runtime error: integer divide by zero";

fn int_pair(name: &str, a: &[Value]) -> Result<(i64, i64), String> {
    arity(name, a, 2)?;
    Ok((to_int(&a[0]), to_int(&a[1])))
}

/// The first argument and the rest, for functions taking `a` then `...b`.
fn head<'a>(name: &str, a: &'a [Value]) -> Result<(&'a Value, &'a [Value]), String> {
    a.split_first()
        .ok_or_else(|| format!("wrong number of args for {name}: want at least 1 got 0"))
}

/// A decimal number `mantissa × 10^exponent`, exact where shopspring/decimal is exact.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Decimal {
    mantissa: i128,
    exponent: i32,
}

/// How many decimal places `divf` keeps (shopspring/decimal's `DivisionPrecision`).
const DIVISION_PRECISION: i32 = 16;

impl Decimal {
    /// The shortest decimal that reads back as `f` (shopspring's `NewFromFloat`).
    fn from_float(f: f64) -> Option<Self> {
        if !f.is_finite() {
            return None;
        }
        let text = format!("{f:e}");
        let (digits, exponent) = text.split_once('e')?;
        let exponent: i32 = exponent.parse().ok()?;
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let mantissa: i128 = format!("{whole}{fraction}").parse().ok()?;
        let places = i32::try_from(fraction.len()).ok()?;
        Some(Decimal {
            mantissa,
            exponent: exponent - places,
        })
    }

    /// The nearest float.
    fn to_float(self) -> f64 {
        format!("{}e{}", self.mantissa, self.exponent)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// Both with the smaller exponent.
    fn aligned(self, other: Self) -> Option<(i128, i128, i32)> {
        let exponent = self.exponent.min(other.exponent);
        let scale = |d: Decimal| {
            let shift = u32::try_from(d.exponent - exponent).ok()?;
            d.mantissa.checked_mul(10i128.checked_pow(shift)?)
        };
        Some((scale(self)?, scale(other)?, exponent))
    }

    fn add(self, other: Self) -> Option<Self> {
        let (a, b, exponent) = self.aligned(other)?;
        Some(Decimal {
            mantissa: a.checked_add(b)?,
            exponent,
        })
    }

    fn sub(self, other: Self) -> Option<Self> {
        self.add(Decimal {
            mantissa: other.mantissa.checked_neg()?,
            exponent: other.exponent,
        })
    }

    fn mul(self, other: Self) -> Option<Self> {
        Some(Decimal {
            mantissa: self.mantissa.checked_mul(other.mantissa)?,
            exponent: self.exponent.checked_add(other.exponent)?,
        })
    }

    /// The quotient rounded half away from zero to 16 places (`DivRound`).
    fn div(self, other: Self) -> Option<Self> {
        // self / other = (m1 / m2) × 10^(e1 - e2); scaled to 10^-16.
        let shift = self.exponent - other.exponent + DIVISION_PRECISION;
        let (numerator, denominator) = if shift >= 0 {
            (
                self.mantissa
                    .checked_mul(10i128.checked_pow(u32::try_from(shift).ok()?)?)?,
                other.mantissa,
            )
        } else {
            (
                self.mantissa,
                other
                    .mantissa
                    .checked_mul(10i128.checked_pow(u32::try_from(-shift).ok()?)?)?,
            )
        };
        let (quotient, remainder) = (numerator / denominator, numerator % denominator);
        let round_away = remainder.checked_mul(2)?.abs() >= denominator.abs();
        let sign = if (numerator < 0) == (denominator < 0) {
            1
        } else {
            -1
        };
        Some(Decimal {
            mantissa: quotient + if round_away { sign } else { 0 },
            exponent: -DIVISION_PRECISION,
        })
    }
}

/// A float function of sprig's `execDecimalOp`: each argument read as a decimal and
/// folded with `op`; plain float arithmetic where a number is beyond a decimal's range.
fn decimal_fold(
    first: &Value,
    rest: &[Value],
    op: fn(Decimal, Decimal) -> Option<Decimal>,
    fallback: fn(f64, f64) -> f64,
) -> f64 {
    let mut float = to_float(first);
    let mut exact = Decimal::from_float(float);
    for value in rest {
        let next = to_float(value);
        exact = exact.and_then(|d| op(d, Decimal::from_float(next)?));
        float = exact.map_or_else(|| fallback(float, next), Decimal::to_float);
    }
    float
}

fn divf(_: &mut Exec, a: Vec<Value>) -> Result<Value, String> {
    let (first, rest) = head("divf", &a)?;
    if rest.iter().any(|v| to_float(v) == 0.0) {
        return Err("decimal division by 0".into());
    }
    Ok(Value::Float(decimal_fold(
        first,
        rest,
        Decimal::div,
        |x, y| x / y,
    )))
}

/// sprig's `round`: up when the fraction at `places` is at least `round_on` (0.5), else
/// down; negative numbers round down (sprig compares the signed fraction).
fn round(value: f64, places: f64, round_on: f64) -> f64 {
    let pow = 10f64.powf(places);
    let digit = pow * value;
    let fraction = digit.fract();
    let rounded = if fraction >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    rounded / pow
}

/// sprig's `untilStep`: `start`, `start+step`, ... short of `stop`; nothing when the step
/// goes the wrong way.
fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, String> {
    let ascending = stop >= start;
    if (ascending && step <= 0) || (!ascending && step >= 0) {
        return Ok(Vec::new());
    }
    let span = stop.abs_diff(start);
    let count = span.div_ceil(step.unsigned_abs());
    if count > MAX_LIST as u64 {
        return Err(format!("the list would have more than {MAX_LIST} items"));
    }
    let mut out = Vec::new();
    let mut i = start;
    while (ascending && i < stop) || (!ascending && i > stop) {
        out.push(i);
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    Ok(out)
}

fn int_list(values: Vec<i64>) -> Value {
    Value::from(values.into_iter().map(Value::Int).collect::<Vec<_>>())
}

/// sprig's `seq`: like the shell's, counting up or down to `end` inclusive.
fn seq(params: &[i64]) -> Result<String, String> {
    let numbers = match *params {
        [end] => {
            let step = if end < 1 { -1 } else { 1 };
            until_step(1, end.saturating_add(step), step)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            until_step(start, end.saturating_add(step), step)?
        }
        [start, step, end] => {
            let increment = if end < start { -1 } else { 1 };
            if end < start && step > 0 {
                return Ok(String::new());
            }
            until_step(start, end.saturating_add(increment), step)?
        }
        _ => Vec::new(),
    };
    let parts: Vec<String> = numbers.iter().map(i64::to_string).collect();
    Ok(parts.join(" "))
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("add", |_, a| {
        Ok(Value::Int64(
            a.iter().fold(0i64, |sum, v| sum.wrapping_add(to_int(v))),
        ))
    });
    funcs.insert("add1", |_, a| {
        arity("add1", &a, 1)?;
        Ok(Value::Int64(to_int(&a[0]).wrapping_add(1)))
    });
    funcs.insert("sub", |_, a| {
        let (x, y) = int_pair("sub", &a)?;
        Ok(Value::Int64(x.wrapping_sub(y)))
    });
    funcs.insert("mul", |_, a| {
        let (first, rest) = head("mul", &a)?;
        Ok(Value::Int64(
            rest.iter()
                .fold(to_int(first), |product, v| product.wrapping_mul(to_int(v))),
        ))
    });
    funcs.insert("div", |_, a| {
        let (x, y) = int_pair("div", &a)?;
        x.checked_div(y)
            .or_else(|| (y == -1).then(|| x.wrapping_neg()))
            .map(Value::Int64)
            .ok_or_else(|| DIVIDE_BY_ZERO.into())
    });
    funcs.insert("mod", |_, a| {
        let (x, y) = int_pair("mod", &a)?;
        x.checked_rem(y)
            .or_else(|| (y == -1).then_some(0))
            .map(Value::Int64)
            .ok_or_else(|| DIVIDE_BY_ZERO.into())
    });
    let extremes: [(&'static str, Func); 3] = [
        ("max", |_, a| {
            let (first, rest) = head("max", &a)?;
            Ok(Value::Int64(
                rest.iter().map(to_int).fold(to_int(first), i64::max),
            ))
        }),
        ("biggest", |_, a| {
            let (first, rest) = head("biggest", &a)?;
            Ok(Value::Int64(
                rest.iter().map(to_int).fold(to_int(first), i64::max),
            ))
        }),
        ("min", |_, a| {
            let (first, rest) = head("min", &a)?;
            Ok(Value::Int64(
                rest.iter().map(to_int).fold(to_int(first), i64::min),
            ))
        }),
    ];
    funcs.extend(extremes);
    funcs.insert("maxf", |_, a| {
        let (first, rest) = head("maxf", &a)?;
        Ok(Value::Float(
            rest.iter().map(to_float).fold(to_float(first), go_max),
        ))
    });
    funcs.insert("minf", |_, a| {
        let (first, rest) = head("minf", &a)?;
        Ok(Value::Float(
            rest.iter().map(to_float).fold(to_float(first), go_min),
        ))
    });
    funcs.insert("addf", |_, a| {
        Ok(Value::Float(decimal_fold(
            &Value::Float(0.0),
            &a,
            Decimal::add,
            |x, y| x + y,
        )))
    });
    funcs.insert("add1f", |_, a| {
        arity("add1f", &a, 1)?;
        Ok(Value::Float(decimal_fold(
            &a[0],
            &[Value::Int(1)],
            Decimal::add,
            |x, y| x + y,
        )))
    });
    funcs.insert("subf", |_, a| {
        let (first, rest) = head("subf", &a)?;
        Ok(Value::Float(decimal_fold(
            first,
            rest,
            Decimal::sub,
            |x, y| x - y,
        )))
    });
    funcs.insert("mulf", |_, a| {
        let (first, rest) = head("mulf", &a)?;
        Ok(Value::Float(decimal_fold(
            first,
            rest,
            Decimal::mul,
            |x, y| x * y,
        )))
    });
    funcs.insert("divf", divf);
    funcs.insert("floor", |_, a| {
        arity("floor", &a, 1)?;
        Ok(Value::Float(to_float(&a[0]).floor()))
    });
    funcs.insert("ceil", |_, a| {
        arity("ceil", &a, 1)?;
        Ok(Value::Float(to_float(&a[0]).ceil()))
    });
    funcs.insert("round", |_, a| {
        let (value, places, round_on) = match a.as_slice() {
            [v, p] => (to_float(v), super::int_arg(p)?, 0.5),
            [v, p, on, ..] => (to_float(v), super::int_arg(p)?, to_float(on)),
            _ => {
                return Err(format!(
                    "wrong number of args for round: want at least 2 got {}",
                    a.len()
                ))
            }
        };
        Ok(Value::Float(round(value, places as f64, round_on)))
    });
    funcs.insert("randInt", |exec, a| {
        arity("randInt", &a, 2)?;
        let (min, max) = (super::int_arg(&a[0])?, super::int_arg(&a[1])?);
        let span = max
            .checked_sub(min)
            .and_then(|s| u64::try_from(s).ok())
            .filter(|s| *s > 0)
            .ok_or("invalid argument to Intn")?;
        let draw = i64::try_from(exec.world.below(span)).unwrap_or(0);
        Ok(Value::Int(min + draw))
    });
    funcs.insert("until", |_, a| {
        arity("until", &a, 1)?;
        let n = super::int_arg(&a[0])?;
        Ok(int_list(until_step(0, n, if n < 0 { -1 } else { 1 })?))
    });
    funcs.insert("untilStep", |_, a| {
        arity("untilStep", &a, 3)?;
        let [start, stop, step] = [&a[0], &a[1], &a[2]].map(super::int_arg);
        Ok(int_list(until_step(start?, stop?, step?)?))
    });
    funcs.insert("seq", |_, a| {
        let params = a
            .iter()
            .map(super::int_arg)
            .collect::<Result<Vec<i64>, String>>()?;
        seq(&params).map(Value::from)
    });
}

/// Go's `math.Max`: NaN wins.
fn go_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        x.max(y)
    }
}

/// Go's `math.Min`: NaN wins.
fn go_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        x.min(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(op: fn(Decimal, Decimal) -> Option<Decimal>, x: f64, y: f64) -> f64 {
        decimal_fold(&Value::Float(x), &[Value::Float(y)], op, |x, y| x + y)
    }

    // Expected values printed by Helm 4.3.1 (sprig's decimal float functions).
    #[test]
    fn float_functions_are_decimal() {
        assert_eq!(decimal(Decimal::add, 0.1, 0.2), 0.3);
        assert_eq!(decimal(Decimal::mul, 1.1, 3.0), 3.3);
        assert_eq!(decimal(Decimal::sub, 1.5, 0.3), 1.2);
        assert_eq!(decimal(Decimal::div, 1.0, 3.0), 0.3333333333333333);
        assert_eq!(decimal(Decimal::div, 2.0, 3.0), 0.6666666666666667);
        assert_eq!(decimal(Decimal::div, -2.0, 3.0), -0.6666666666666667);
        assert_eq!(decimal(Decimal::add, 1e300, 1.0), 1e300);
    }

    #[test]
    fn round_is_sprigs() {
        assert_eq!(round(1.23456, 2.0, 0.5), 1.23);
        assert_eq!(round(2.5, 0.0, 0.5), 3.0);
        assert_eq!(round(-2.4, 0.0, 0.5), -3.0);
        assert_eq!(round(1.23, 1.0, 0.3), 1.3);
        assert_eq!(round(1.21, 1.0, 0.3), 1.2);
    }

    #[test]
    fn sequences_count_like_sprig() {
        assert_eq!(until_step(0, 5, 2), Ok(vec![0, 2, 4]));
        assert_eq!(until_step(5, 0, -2), Ok(vec![5, 3, 1]));
        assert_eq!(until_step(0, 5, -1), Ok(vec![]));
        assert!(until_step(0, i64::MAX, 1).is_err());
        assert_eq!(seq(&[3]).as_deref(), Ok("1 2 3"));
        assert_eq!(seq(&[-2]).as_deref(), Ok("1 0 -1 -2"));
        assert_eq!(seq(&[2, 5]).as_deref(), Ok("2 3 4 5"));
        assert_eq!(seq(&[5, 2]).as_deref(), Ok("5 4 3 2"));
        assert_eq!(seq(&[0, 2, 6]).as_deref(), Ok("0 2 4 6"));
        assert_eq!(seq(&[6, 2, 0]).as_deref(), Ok(""));
        assert_eq!(seq(&[6, -2, 0]).as_deref(), Ok("6 4 2 0"));
        assert_eq!(seq(&[]).as_deref(), Ok(""));
    }
}
