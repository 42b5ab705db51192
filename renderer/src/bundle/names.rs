//! Names as Rancher Fleet makes them: a Bundle is named after its GitRepo and path with
//! Fleet's release-name rules, so that a repository moved from Fleet keeps its Bundle names
//! (and `dependsOn` by name keeps working). The rules: `/` becomes `-`; a name with upper
//! case or characters outside `[a-zA-Z0-9-]` gets the first 8 hex digits of the md5 of the
//! name appended before it is cleaned (so `App` and `app` do not collide); then lower case,
//! runs of other characters become one `-`, no `-` at either end; a name longer than 53
//! characters (Helm's limit for release names) is cut and ends in 5 hex digits of its md5;
//! a name that cannot be made valid is 24 hex digits of the md5 of the input.

use md5::{Digest, Md5};

/// The longest Helm release name, which Fleet's Bundle names keep to.
pub const MAX_RELEASE_NAME: usize = 53;

/// The first `length` hex digits of the md5 of `text`.
fn md5_hex(text: &str, length: usize) -> String {
    let digest = Md5::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..length.min(hex.len())].to_string()
}

/// `text` cut to `count` bytes, ending in `-` and 5 hex digits of its md5 when it was
/// longer (no `--` where the cut falls after a dash; cut bare when `count` leaves no room
/// for the hash). `text` is ASCII wherever Fleet's names call this.
pub fn limit(text: &str, count: usize) -> String {
    const HEX: usize = 5;
    if text.len() <= count {
        return text.to_string();
    }
    if count <= HEX + 1 || !text.is_ascii() {
        return text.chars().take(count).collect();
    }
    let kept = &text[..count - HEX - 1];
    let separator = if kept.ends_with('-') { "" } else { "-" };
    format!("{kept}{separator}{}", md5_hex(text, HEX))
}

/// Whether `c` may stay in a name as it is.
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// A DNS label's shape: lower-case alphanumerics and `-`, alphanumeric at both ends.
fn label_shaped(name: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    edge(name.chars().next())
        && edge(name.chars().last())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Fleet's release name for `input` (its `HelmReleaseName`).
pub fn release_name(input: &str) -> String {
    let slashless = input.replace('/', "-");
    let needs_hex = slashless != slashless.to_lowercase() || !slashless.chars().all(allowed);
    let marked = if needs_hex {
        format!("{slashless}-{}", md5_hex(&slashless, 8))
    } else {
        slashless
    };
    let mut cleaned = String::with_capacity(marked.len());
    for c in marked.to_lowercase().chars() {
        let c = if allowed(c) { c } else { '-' };
        if !(c == '-' && cleaned.ends_with('-')) {
            cleaned.push(c);
        }
    }
    let cleaned = cleaned.trim_matches('-');
    if label_shaped(cleaned) {
        return limit(cleaned, MAX_RELEASE_NAME);
    }
    md5_hex(input, 24)
}

/// The Bundle name Fleet gives the directory `rel` of the GitRepo (or name prefix)
/// `prefix`.
pub fn bundle_name(prefix: &str, rel: &str) -> String {
    release_name(&go_join(prefix, rel))
}

/// `prefix` and `rel` joined as Go's `filepath.Join` joins them: `.` segments and empty
/// ones dropped, `..` taking the segment before it away.
fn go_join(prefix: &str, rel: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for segment in prefix.split('/').chain(rel.split('/')) {
        match segment {
            "" | "." => {}
            ".." if kept.last().is_some_and(|last| *last != "..") => {
                kept.pop();
            }
            other => kept.push(other),
        }
    }
    kept.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    const STR50: &str = "12345678901234567890123456789012345678901234567890";

    /// Fleet's own expectations for its `Limit` (internal/names/name_test.go), as data.
    #[test]
    fn limit_matches_fleets_cases() {
        let cases = [
            ("1234567", 5, "12345"),
            ("1234567", 6, "123456"),
            ("1234567", 7, "1234567"),
            ("1234567", 8, "1234567"),
            ("12345678", 8, "12345678"),
            ("12345678", 7, "1-25d55"),
            ("123456789", 8, "12-25f9e"),
            ("1-3456789", 8, "1-9b657"),
        ];
        for (text, count, expected) in cases {
            assert_eq!(limit(text, count), expected, "{text} {count}");
        }
    }

    /// Fleet's own expectations for its `HelmReleaseName`, as data.
    #[test]
    fn release_names_match_fleets_cases() {
        let str53 = format!("{STR50}123");
        let str63 = format!("{STR50}1234567890123");
        let cases = [
            (str53.clone(), str53.clone()),
            (
                format!("{str53}a"),
                "12345678901234567890123456789012345678901234567-fdba4".to_string(),
            ),
            (
                format!("{str63}a"),
                "12345678901234567890123456789012345678901234567-eb12d".to_string(),
            ),
            (
                "long-name-test-shortpath-with@char".to_string(),
                "long-name-test-shortpath-with-char-031bab5e".to_string(),
            ),
            (
                "long-name-test-shortpath-with+char".to_string(),
                "long-name-test-shortpath-with-char-21c88393".to_string(),
            ),
            (
                "long-name-test-0.App_ ".to_string(),
                "long-name-test-0-app-5bf6b3fb".to_string(),
            ),
            (
                "long-name-test--App_-_12.factor".to_string(),
                "long-name-test-app-12-factor-0efbac37".to_string(),
            ),
            (
                "bundle.name.example.com".to_string(),
                "bundle-name-example-com-645ef821".to_string(),
            ),
            (
                format!("{}-1234567", &str53[..46]),
                "1234567890123456789012345678901234567890123456-d0bce".to_string(),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(release_name(&input), expected, "{input}");
        }
    }

    #[test]
    fn bundle_names_join_the_prefix_and_the_path() {
        assert_eq!(bundle_name("repo", "."), "repo");
        assert_eq!(
            bundle_name("repo", "multi-cluster/helm"),
            "repo-multi-cluster-helm"
        );
        assert_eq!(
            bundle_name("repo", "multi-cluster/helm/"),
            "repo-multi-cluster-helm"
        );
        // Upper case and `_` mark the name with a hash, so `a_b` and `a-b` stay apart.
        assert_ne!(bundle_name("repo", "a_b"), bundle_name("repo", "a-b"));
        assert!(bundle_name("repo", "a_b").starts_with("repo-a-b-"));
        let long = bundle_name("repo", &"x/".repeat(60));
        assert!(
            long.len() <= MAX_RELEASE_NAME && long.len() >= MAX_RELEASE_NAME - 1,
            "{long}"
        );
        // Only the hash is left of a name of nothing but other characters; nothing at all
        // is left of an empty one, named by the md5 of the input.
        assert_eq!(release_name("___").len(), 8);
        assert_eq!(release_name(""), "d41d8cd98f00b204e9800998");
    }
}
