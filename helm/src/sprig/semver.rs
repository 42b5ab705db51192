//! `semver` and `semverCompare` with the constraint syntax of Masterminds/semver v3:
//! `=`, `!=`, `>`, `<`, `>=`, `<=`, `~`, `^`, wildcards (`1.2.x`, `1.2`), hyphen ranges,
//! `,` (and) and `||` (or). A version with a prerelease only satisfies constraints that
//! carry one, which is why charts write `>=1.19-0`.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::arity;
use super::convert::strval;
use crate::template::value::Object;
use crate::template::{Func, Value};

/// A parsed version; missing minor or patch parts are recorded for wildcard matching.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    prerelease: String,
    metadata: String,
    original: String,
    /// How many of major, minor, patch were given as numbers (wildcards excluded).
    given: u8,
}

fn number_or_wildcard(part: Option<&str>) -> Result<Option<u64>, String> {
    match part {
        None | Some("x" | "X" | "*") => Ok(None),
        Some(digits) => digits
            .parse()
            .map(Some)
            .map_err(|_| format!("Invalid Semantic Version: {digits}")),
    }
}

impl Version {
    /// Parses `v1.2.3-pre+meta`, `1.2`, `1`, `1.2.x`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let original = text.to_string();
        let trimmed = text.trim().trim_start_matches(['v', 'V', '=']);
        let (rest, metadata) = trimmed.split_once('+').unwrap_or((trimmed, ""));
        let (core, prerelease) = rest.split_once('-').unwrap_or((rest, ""));
        let mut parts = core.split('.');
        let major = number_or_wildcard(parts.next())?;
        let minor = number_or_wildcard(parts.next())?;
        let patch = number_or_wildcard(parts.next())?;
        if parts.next().is_some() || core.is_empty() {
            return Err("Invalid Semantic Version".into());
        }
        let given = match (major, minor, patch) {
            (Some(_), Some(_), Some(_)) => 3,
            (Some(_), Some(_), None) => 2,
            (Some(_), None, _) => 1,
            (None, _, _) => 0,
        };
        Ok(Self {
            major: major.unwrap_or(0),
            minor: minor.unwrap_or(0),
            patch: patch.unwrap_or(0),
            prerelease: prerelease.to_string(),
            metadata: metadata.to_string(),
            original,
            given,
        })
    }

    /// Parses a version as Masterminds' `NewVersion` does: an optional `v`, one to three
    /// numbers, then an optional prerelease and metadata; wildcards are for constraints.
    pub fn parse_version(text: &str) -> Result<Self, String> {
        const INVALID: &str = "invalid semantic version";
        let body = text.strip_prefix(['v', 'V']).unwrap_or(text);
        let (rest, metadata) = body.split_once('+').unwrap_or((body, ""));
        let (core, prerelease) = rest.split_once('-').unwrap_or((rest, ""));
        let identifiers_ok = |part: &str| {
            part.split('.').all(|id| {
                !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
        };
        let numbers_ok = core
            .split('.')
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !numbers_ok
            || core.split('.').count() > 3
            || (rest.contains('-') && !identifiers_ok(prerelease))
            || (body.contains('+') && !identifiers_ok(metadata))
        {
            return Err(INVALID.into());
        }
        Self::parse(text).map_err(|_| INVALID.to_string())
    }

    /// Whether the version has a prerelease part (`1.2.0-rc.1`).
    pub fn is_prerelease(&self) -> bool {
        !self.prerelease.is_empty()
    }

    /// The major version.
    pub fn major(&self) -> u64 {
        self.major
    }

    /// The minor version.
    pub fn minor(&self) -> u64 {
        self.minor
    }

    /// The same version without its prerelease and build parts (`1.27.0-gke.1` is
    /// `1.27.0`).
    pub fn release(&self) -> Version {
        Version {
            prerelease: String::new(),
            metadata: String::new(),
            original: format!("{}.{}.{}", self.major, self.minor, self.patch),
            ..self.clone()
        }
    }

    fn core(&self) -> (u64, u64, u64) {
        (self.major, self.minor, self.patch)
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let ordering = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    _ => x.cmp(y),
                };
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
        }
    }
}

/// Orders versions by precedence (metadata ignored).
pub fn compare(a: &Version, b: &Version) -> Ordering {
    a.core()
        .cmp(&b.core())
        .then_with(|| compare_prerelease(&a.prerelease, &b.prerelease))
}

fn bump(version: &Version, part: u8) -> Version {
    let mut next = version.clone();
    next.prerelease.clear();
    match part {
        0 => (next.major, next.minor, next.patch) = (version.major.saturating_add(1), 0, 0),
        1 => (next.minor, next.patch) = (version.minor.saturating_add(1), 0),
        _ => next.patch = version.patch.saturating_add(1),
    }
    next
}

/// Whether `version` satisfies one constraint like `>=1.2`.
fn satisfies_one(version: &Version, constraint: &str) -> Result<bool, String> {
    let constraint = constraint.trim();
    let split = constraint
        .find(|c: char| c.is_ascii_digit() || c == 'v' || c == 'x' || c == 'X' || c == '*')
        .unwrap_or(constraint.len());
    let (operator, rest) = constraint.split_at(split);
    let target = Version::parse(rest)?;
    if !version.prerelease.is_empty() && target.prerelease.is_empty() {
        return Ok(false);
    }
    let at_least = compare(version, &target) != Ordering::Less;
    let below = |upper: &Version| compare(version, upper) == Ordering::Less;
    // The version just above what a partial constraint covers: 1.2 -> 1.3.0.
    let wildcard_end = || bump(&target, target.given.saturating_sub(1));
    Ok(match operator.trim() {
        "" | "=" => {
            if target.given == 3 {
                compare(version, &target) == Ordering::Equal
            } else {
                target.given == 0 || (at_least && below(&wildcard_end()))
            }
        }
        "!=" => {
            if target.given == 3 {
                compare(version, &target) != Ordering::Equal
            } else {
                !(at_least && below(&wildcard_end()))
            }
        }
        ">" => {
            if target.given == 3 {
                compare(version, &target) == Ordering::Greater
            } else {
                !below(&wildcard_end())
            }
        }
        ">=" | "=>" => at_least,
        "<" => below(&target),
        "<=" | "=<" => {
            if target.given == 3 {
                compare(version, &target) != Ordering::Greater
            } else {
                below(&wildcard_end())
            }
        }
        "~" | "~>" => at_least && below(&bump(&target, if target.given >= 2 { 1 } else { 0 })),
        "^" => {
            let part = if target.major > 0 || target.given == 1 {
                0
            } else if target.minor > 0 || target.given == 2 {
                1
            } else {
                2
            };
            at_least && below(&bump(&target, part))
        }
        other => return Err(format!("improper constraint: {other}{rest}")),
    })
}

/// The single constraints of an and-group: split on commas and spaces, with an operator
/// written apart from its version (`>= 1.2`) joined to it again.
fn constraints(group: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending = String::new();
    for token in group.split([',', ' ']).filter(|t| !t.trim().is_empty()) {
        let operator_only = token.chars().all(|c| "=!<>~^".contains(c));
        if operator_only {
            pending.push_str(token);
        } else {
            out.push(format!("{pending}{token}"));
            pending.clear();
        }
    }
    out
}

/// Whether `version` satisfies a constraint expression.
pub fn satisfies(version: &Version, expression: &str) -> Result<bool, String> {
    for alternative in expression.split("||") {
        let mut all = true;
        let alternative = alternative.trim();
        if let Some((low, high)) = alternative.split_once(" - ") {
            all = satisfies_one(version, &format!(">={}", low.trim()))?
                && satisfies_one(version, &format!("<={}", high.trim()))?;
        } else {
            for part in constraints(alternative) {
                if !satisfies_one(version, &part)? {
                    all = false;
                }
            }
        }
        if all {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Masterminds/semver's `String`: `1.2.3-pre+meta`.
impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.prerelease.is_empty() {
            write!(f, "-{}", self.prerelease)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

impl Object for Version {
    fn type_name(&self) -> &'static str {
        "*semver.Version"
    }

    fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let int = |n: u64| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
        if let [other] = args {
            let other = Version::parse_version(&strval(other))?;
            let ordering = compare(self, &other);
            return match name {
                "Compare" => Ok(Value::Int(ordering as i64)),
                "LessThan" => Ok(Value::Bool(ordering == Ordering::Less)),
                "GreaterThan" => Ok(Value::Bool(ordering == Ordering::Greater)),
                "Equal" => Ok(Value::Bool(ordering == Ordering::Equal)),
                other => Err(format!(
                    "can't evaluate field {other} in type *semver.Version"
                )),
            };
        }
        let bumped = |part: u8| {
            let mut next = if part == 2 && self.is_prerelease() {
                let mut same = self.clone();
                same.prerelease.clear();
                same
            } else {
                bump(self, part)
            };
            next.metadata.clear();
            next.original = next.to_string();
            Value::Object(std::rc::Rc::new(next))
        };
        Ok(match name {
            "IncMajor" => bumped(0),
            "IncMinor" => bumped(1),
            "IncPatch" => bumped(2),
            "Major" => int(self.major),
            "Minor" => int(self.minor),
            "Patch" => int(self.patch),
            "Prerelease" => Value::from(self.prerelease.as_str()),
            "Metadata" => Value::from(self.metadata.as_str()),
            "Original" => Value::from(self.original.as_str()),
            "String" => Value::from(self.to_string()),
            other => {
                return Err(format!(
                    "can't evaluate field {other} in type *semver.Version"
                ))
            }
        })
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(self.to_string())
    }

    fn go_string(&self) -> String {
        self.to_string()
    }
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("semver", |_, a| {
        arity("semver", &a, 1)?;
        Ok(Value::Object(std::rc::Rc::new(Version::parse_version(
            &strval(&a[0]),
        )?)))
    });
    funcs.insert("semverCompare", |_, a| {
        arity("semverCompare", &a, 2)?;
        let version = Version::parse_version(&strval(&a[1]))?;
        satisfies(&version, &strval(&a[0])).map(Value::Bool)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(constraint: &str, version: &str) -> bool {
        satisfies(&Version::parse(version).expect("version"), constraint).expect("constraint")
    }

    #[test]
    fn constraints_follow_masterminds_semver() {
        assert!(check(">=1.19-0", "1.27.3"));
        assert!(check(">=1.19-0", "v1.20.0-gke.100"));
        assert!(
            !check(">=1.19", "1.20.0-rc.1"),
            "a prerelease needs a prerelease constraint"
        );
        assert!(!check(">=1.19-0", "1.18.5"));
        assert!(check("^1.2.3", "1.9.0") && !check("^1.2.3", "2.0.0"));
        assert!(check("^0.2.3", "0.2.9") && !check("^0.2.3", "0.3.0"));
        assert!(check("~1.2", "1.2.7") && !check("~1.2", "1.3.0"));
        assert!(check("1.2.x", "1.2.99") && !check("1.2.x", "1.3.0"));
        assert!(check(">1.2", "1.3.0") && !check(">1.2", "1.2.5"));
        assert!(check("<1.2", "1.1.9") && !check("<1.2", "1.2.0"));
        assert!(check(">= 1.2, < 1.4", "1.3.1") && !check(">= 1.2, < 1.4", "1.4.0"));
        assert!(check("1.1 - 1.3", "1.3.0") && check("<1.0 || >=2.0", "2.1.0"));
        assert!(check("*", "3.1.4"));
        assert_eq!(
            compare(
                &Version::parse("1.0.0-alpha.1").expect("v"),
                &Version::parse("1.0.0-alpha.beta").expect("v")
            ),
            Ordering::Less
        );
    }
}
