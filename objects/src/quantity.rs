//! Kubernetes resource quantities (`500m`, `1Gi`, `1e3`), read and written as
//! kube-apiserver does: a quantity keeps the kind of suffix it was written with (binary,
//! decimal or exponent), and its canonical form is the shortest exact one of that kind
//! (`1024Mi` is stored as `1Gi`, `0.5` as `500m`, `1000` as `1k`). Values finer than a
//! nano-unit are rounded up to one, as the API server rounds them.
//!
//! ```
//! use fleet_objects::quantity::Quantity;
//!
//! let memory: Quantity = "1024Mi".parse().unwrap();
//! assert_eq!(memory.to_string(), "1Gi");
//! assert_eq!("0.5".parse::<Quantity>().unwrap().to_string(), "500m");
//! assert!(memory.same_value(&"1073741824".parse().unwrap()));
//! ```

use std::fmt;
use std::str::FromStr;

/// How a quantity was written, which decides how it is written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `Ki`, `Mi`, ... `Ei`.
    BinarySi,
    /// `n`, `u`, `m`, none, `k`, `M`, ... `E`.
    DecimalSi,
    /// `e3`, `E-6`.
    DecimalExponent,
}

/// A quantity: the exact value `mantissa × 10^scale`, how it was written, and the text
/// itself when the API server keeps it as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    scale: i32,
    format: Format,
    kept: Option<String>,
}

/// Why a text is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAQuantity(String);

impl fmt::Display for NotAQuantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a quantity (a number with an optional suffix such as m, Mi or e3)",
            self.0
        )
    }
}

impl std::error::Error for NotAQuantity {}

/// The finest scale the API server keeps: nano-units.
const FINEST_SCALE: i32 = -9;

const DECIMAL_SUFFIXES: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

const BINARY_SUFFIXES: [(&str, u32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];

impl FromStr for Quantity {
    type Err = NotAQuantity;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse(text).ok_or_else(|| NotAQuantity(text.to_string()))
    }
}

/// Splits `text` into its number and its suffix, reads both, and rounds to nano-units.
fn parse(text: &str) -> Option<Quantity> {
    let number_end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '+' || c == '-'))))
        .map_or(text.len(), |(i, _)| i);
    let (number, suffix) = text.split_at(number_end);
    let (mut mantissa, mut scale) = parse_number(number)?;
    let (format, exponent) = if suffix.is_empty() {
        (Format::DecimalSi, 0)
    } else if let Some(&(_, power)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        mantissa = mantissa.checked_mul(1i128.checked_shl(10 * power)?)?;
        (Format::BinarySi, 0)
    } else if let Some(&(_, exponent)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        (Format::DecimalSi, exponent)
    } else {
        let exponent = suffix.strip_prefix(['e', 'E'])?;
        let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        (Format::DecimalExponent, exponent.parse::<i32>().ok()?)
    };
    scale = scale.checked_add(exponent)?;
    if scale < FINEST_SCALE {
        let divisor = 10i128.checked_pow((FINEST_SCALE - scale).unsigned_abs())?;
        let rounded = mantissa / divisor + i128::from(mantissa % divisor != 0) * mantissa.signum();
        mantissa = rounded;
        scale = FINEST_SCALE;
    }
    // A binary quantity is capped at the largest 64-bit integer, as the API server caps it.
    let max = i128::from(i64::MAX);
    if format == Format::BinarySi && exceeds(mantissa, scale, max) {
        mantissa = max * mantissa.signum();
        scale = 0;
    }
    let kept = kept_as_written(number, suffix, format, exponent).then(|| text.to_string());
    Some(
        Quantity {
            mantissa,
            scale,
            format,
            kept,
        }
        .normalised(),
    )
}

/// Whether `|mantissa × 10^scale|` is greater than `max`.
fn exceeds(mantissa: i128, scale: i32, max: i128) -> bool {
    let power = 10i128.checked_pow(scale.unsigned_abs());
    match (scale >= 0, power) {
        (true, Some(power)) => mantissa.abs().checked_mul(power).is_none_or(|v| v > max),
        (true, None) => mantissa != 0,
        (false, Some(power)) => max
            .checked_mul(power)
            .is_some_and(|limit| mantissa.abs() > limit),
        (false, None) => false,
    }
}

/// Whether the API server keeps `number` + `suffix` as written rather than writing its
/// canonical form: it does when the text looks canonical by its own quick test (a binary
/// number not divisible by 8; a decimal one with an exponent that is a multiple of three,
/// no leading zero and no trailing `000`), for numbers of up to 18 digits.
fn kept_as_written(number: &str, suffix: &str, format: Format, exponent: i32) -> bool {
    if number
        .trim_start_matches(['+', '-'])
        .trim_start_matches('0')
        .is_empty()
    {
        // Zero, or only a sign: written as `0`, unless it is `0` already.
        return number == "0" && suffix.is_empty();
    }
    let unsigned = number.trim_start_matches(['+', '-']);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let whole = match whole.trim_start_matches('0') {
        "" => "0",
        digits => digits,
    };
    let digits = format!("{whole}{fraction}");
    let Ok(value) = digits.parse::<i64>() else {
        return false;
    };
    let Ok(fraction_len) = i32::try_from(fraction.len()) else {
        return false;
    };
    match format {
        Format::BinarySi => {
            let power = BINARY_SUFFIXES
                .iter()
                .find(|(s, _)| *s == suffix)
                .map_or(0, |(_, p)| *p as i32);
            let precision = 15 - whole.len() as i32 - (power * 10 * 3) / 10 - 1;
            fraction.is_empty()
                && precision >= 0
                && value.checked_mul(1i64 << (10 * power)).is_some()
                && value & 0x07 != 0
        }
        Format::DecimalSi | Format::DecimalExponent => {
            let scale = exponent - fraction_len;
            let precision = 18 - (whole.len() + fraction.len()) as i32;
            precision >= 0
                && scale >= FINEST_SCALE
                && scale % 3 == 0
                && !digits.ends_with("000")
                && !digits.starts_with('0')
        }
    }
}

/// `[+-]digits[.digits]` or `[+-].digits` as `mantissa × 10^scale`.
fn parse_number(text: &str) -> Option<(i128, i32)> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole
        .bytes()
        .chain(fraction.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut mantissa: i128 = 0;
    for digit in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(digit - b'0'))?;
    }
    let scale = -i32::try_from(fraction.len()).ok()?;
    Some((if negative { -mantissa } else { mantissa }, scale))
}

impl Quantity {
    /// The same value with the trailing zeros of its mantissa moved into its scale, so that
    /// equal values have equal parts.
    fn normalised(mut self) -> Self {
        if self.mantissa == 0 {
            self.scale = 0;
            return self;
        }
        while self.mantissa % 10 == 0 {
            self.mantissa /= 10;
            self.scale += 1;
        }
        self
    }

    /// Whether both are the same value, however written (`1Gi` and `1024Mi`, `1` and
    /// `1000m`).
    pub fn same_value(&self, other: &Quantity) -> bool {
        self.mantissa == other.mantissa && self.scale == other.scale
    }

    /// The value as a whole number, if it is one.
    fn whole(&self) -> Option<i128> {
        if self.scale >= 0 {
            self.mantissa
                .checked_mul(10i128.checked_pow(self.scale.unsigned_abs())?)
        } else {
            None
        }
    }

    /// The decimal canonical form: the mantissa without trailing zeros, the exponent
    /// brought down to a multiple of three.
    fn decimal_parts(&self) -> Option<(i128, i32)> {
        let down = self.scale.rem_euclid(3);
        let mantissa = self.mantissa.checked_mul(10i128.pow(down.unsigned_abs()))?;
        Some((mantissa, self.scale - down))
    }
}

impl fmt::Display for Quantity {
    /// The form kube-apiserver stores.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = &self.kept {
            return f.write_str(text);
        }
        if self.mantissa == 0 {
            return f.write_str("0");
        }
        if self.format == Format::BinarySi {
            if let Some(value) = self.whole().filter(|v| v.abs() >= 1024) {
                let (mut amount, mut power) = (value, 0u32);
                while amount % 1024 == 0 && power < 6 {
                    amount /= 1024;
                    power += 1;
                }
                let suffix = BINARY_SUFFIXES
                    .iter()
                    .find(|(_, p)| *p == power)
                    .map_or("", |(s, _)| s);
                return write!(f, "{amount}{suffix}");
            }
        }
        let Some((mantissa, exponent)) = self.decimal_parts() else {
            return write!(f, "{}e{}", self.mantissa, self.scale);
        };
        if exponent == 0 {
            return write!(f, "{mantissa}");
        }
        let decimal = DECIMAL_SUFFIXES.iter().find(|(_, e)| *e == exponent);
        match (self.format, decimal) {
            (Format::DecimalExponent, _) | (_, None) => write!(f, "{mantissa}e{exponent}"),
            (_, Some((suffix, _))) => write!(f, "{mantissa}{suffix}"),
        }
    }
}

/// The canonical form of a quantity written as `text` (a JSON string or number), or `None`
/// if it is not one.
pub fn canonical(text: &str) -> Option<String> {
    parse(text).map(|q| q.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a real kube-apiserver 1.37 stored for each (emptyDir size limits of a
    /// PodTemplate, read back); `e2e/tests/real_cluster.rs` checks many more against one.
    pub(crate) const STORED: &[(&str, &str)] = &[
        ("1", "1"),
        ("0.5", "500m"),
        ("1000m", "1"),
        ("1500m", "1500m"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("0.5Ki", "512"),
        ("1Ki", "1Ki"),
        ("1000Ki", "1000Ki"),
        ("1e3", "1e3"),
        ("12e2", "1200"),
        ("1E6", "1E6"),
        ("12E5", "1200e3"),
        ("0.001", "1m"),
        ("0.0001", "100u"),
        ("1e-3", "1e-3"),
        ("3e-12", "1e-9"),
        ("1.G", "1.G"),
        ("5000Mi", "5000Mi"),
        ("0.9Ki", "921600m"),
        ("123456789012345678901", "123456789012345678901"),
        ("0", "0"),
        ("0Mi", "0"),
        ("100m", "100m"),
        ("0.1", "100m"),
        ("2G", "2G"),
        ("2000M", "2G"),
        ("128974848", "128974848"),
        ("129e6", "129e6"),
        ("129M", "129M"),
        ("123Mi", "123Mi"),
        ("0.0000000001", "1n"),
        ("+2", "+2"),
        ("01Gi", "01Gi"),
        ("2048Ki", "2Mi"),
        ("1.500", "1.500"),
        ("1.50", "1500m"),
        ("2.0", "2"),
        ("10", "10"),
        (".5", "500m"),
        ("0.1Ki", "102400m"),
        ("9059070.076Ti", "9223372036854775807"),
    ];

    #[test]
    fn canonical_forms_are_the_api_servers() {
        for (written, stored) in STORED {
            assert_eq!(canonical(written).as_deref(), Some(*stored), "{written}");
        }
    }

    #[test]
    fn values_compare_however_written() {
        let q = |t: &str| t.parse::<Quantity>().expect(t);
        assert!(q("1Gi").same_value(&q("1024Mi")));
        assert!(q("1").same_value(&q("1000m")));
        assert!(q("1e3").same_value(&q("1k")));
        assert!(!q("1G").same_value(&q("1Gi")));
    }

    #[test]
    fn text_that_is_not_a_quantity_is_refused() {
        for text in ["", "abc", "1.2.3", "1Mb", "e3", "1e", "--1", "1 Gi", "."] {
            assert!(text.parse::<Quantity>().is_err(), "{text:?}");
        }
    }
}
