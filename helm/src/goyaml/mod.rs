//! YAML as Helm reads and writes it: through `sigs.k8s.io/yaml`, which is goyaml.v2 (a
//! YAML 1.1 reader: `yes` is true, `0755` is octal) with a JSON round trip in between.
//!
//! - [`to_yaml`] is Helm's `toYaml`: the value as `encoding/json` writes it, read back and
//!   written by goyaml.v2 ([`emit`]): keys in goyaml.v2's natural order, strings quoted
//!   only when they would read back as something else, long lines folded at 80 columns.
//! - [`parse_documents`] reads values files, `Chart.yaml` and `fromYaml` input the same way
//!   Helm does ([`resolve`] gives plain scalars their YAML 1.1 meaning).

pub(crate) mod emit;
mod parse;
pub(crate) mod resolve;

use std::cmp::Ordering;

use emit::Node;
pub use parse::{parse_documents, YamlError};
pub(crate) use parse::{parse_documents_as, Shape};
use resolve::{resolve as resolve_plain, Resolved};

use super::template::Value;

/// Helm's `toYaml`: the YAML of `value` without the final newline; empty when the value
/// has no JSON form (NaN or an infinity), as Helm swallows the error.
pub fn to_yaml(value: &Value) -> String {
    write(value, emit::Dialect::V2)
}

/// Helm's `toYamlPretty`: as [`to_yaml`], but written by goyaml.v3 with an indent of 2
/// (sequences indented under their key, no folding).
pub(crate) fn to_yaml_pretty(value: &Value) -> String {
    write(value, emit::Dialect::V3_INDENT_2)
}

fn write(value: &Value, dialect: emit::Dialect) -> String {
    let Some(node) = json_round_trip(value) else {
        return String::new();
    };
    let text = emit::document(&node, dialect);
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

/// What goyaml.v2 holds after reading the JSON `encoding/json` writes for `value`.
fn json_round_trip(value: &Value) -> Option<Node> {
    Some(match value {
        Value::Nil => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Int(i) | Value::Int64(i) => Node::Int(*i),
        Value::Float(f) => {
            let text = go_json_float(*f)?;
            match resolve_plain(&text) {
                Resolved::Int(i) => Node::Int(i),
                Resolved::Uint(u) => Node::Uint(u),
                _ => Node::Float(*f),
            }
        }
        Value::Str(s) => Node::Str(s.to_string()),
        Value::Bytes(_) => return json_round_trip(&Value::from_json(&value.to_json())),
        Value::List(items) => Node::Seq(
            items
                .iter()
                .map(json_round_trip)
                .collect::<Option<Vec<_>>>()?,
        ),
        Value::Map(map) => {
            let mut entries = map
                .borrow()
                .iter()
                .map(|(k, v)| Some((k.clone(), json_round_trip(v)?)))
                .collect::<Option<Vec<_>>>()?;
            entries.sort_by(|a, b| natural_order(&a.0, &b.0));
            Node::Map(entries)
        }
        Value::Object(object) => json_round_trip(&Value::from_json(&object.to_json()))?,
    })
}

/// A float64 as `encoding/json` writes it: `%f`-like digits between 1e-6 and 1e21, else
/// the exponent form with a two-digit-or-shorter exponent (`1e+21`, `1e-7`). None for NaN
/// and the infinities, which it refuses.
pub(crate) fn go_json_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let magnitude = f.abs();
    if magnitude == 0.0 || (1e-6..1e21).contains(&magnitude) {
        // Shortest round-trip digits, without an exponent.
        let text = format!("{f}");
        return Some(text);
    }
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e')?;
    let exponent: i32 = exponent.parse().ok()?;
    let sign = if exponent < 0 { '-' } else { '+' };
    Some(format!("{mantissa}e{sign}{:02}", exponent.abs()).replace("e-0", "e-"))
}

/// goyaml.v2's order of map keys (`keyList.Less`): runs of digits compare as numbers, a
/// letter sorts after a non-letter, otherwise by code point.
pub(crate) fn natural_order(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(u32::from(ar[ai]) - u32::from('0')));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(u32::from(br[bi]) - u32::from('0')));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

#[cfg(test)]
mod tests;
