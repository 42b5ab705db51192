//! Kubernetes tools and kube-apiserver read YAML with Go's yaml libraries, which take a
//! plain `0755` as the octal integer 493 (file modes are written this way). YAML 1.2
//! parsers read it as a string, so plain scalars of that form are rewritten to `0o755`
//! before parsing. Quoted values and block scalars (`|`, `>`) are left alone.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

fn pattern() -> Option<&'static Regex> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    PATTERN
        .get_or_init(|| {
            Regex::new(r"^(\s*(?:-\s+)*(?:[^\s#'\x22][^#'\x22]*?:\s+)?(?:-\s+)?)([-+]?)0([0-7]+)(\s*(?:#.*)?)$").ok()
        })
        .as_ref()
}

/// Returns `text` with legacy octal plain scalars rewritten, borrowing when none exist.
pub fn rewrite(text: &str) -> Cow<'_, str> {
    let Some(pattern) = pattern().filter(|_| text.contains(": 0") || text.contains("- 0")) else {
        return Cow::Borrowed(text);
    };
    // Filled from the first rewritten line on; until then the text is borrowed.
    let mut out: Option<String> = None;
    let mut block_indent: Option<usize> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let trimmed = body.trim_start();
        let indent = body.len() - trimmed.len();
        let keep = |out: &mut Option<String>| {
            if let Some(out) = out.as_mut() {
                out.push_str(line);
            }
        };
        if let Some(parent) = block_indent {
            if trimmed.is_empty() || indent > parent {
                keep(&mut out);
                continue;
            }
            block_indent = None;
        }
        if opens_block_scalar(body) {
            block_indent = Some(indent);
        }
        // A cheap test first: the value must start with 0 after a space or a sign.
        let candidate = trimmed.starts_with(['0', '-', '+'])
            || body.contains(" 0")
            || body.contains("-0")
            || body.contains("+0");
        match candidate.then(|| pattern.captures(body)).flatten() {
            Some(c) if !c[3].is_empty() => {
                let out = out.get_or_insert_with(|| {
                    let mut head = String::with_capacity(text.len() + 16);
                    head.push_str(&text[..start]);
                    head
                });
                out.push_str(&format!("{}{}0o{}{}", &c[1], &c[2], &c[3], &c[4]));
                out.push_str(&line[body.len()..]);
            }
            _ => keep(&mut out),
        }
    }
    match out {
        Some(out) => Cow::Owned(out),
        None => Cow::Borrowed(text),
    }
}

fn opens_block_scalar(line: &str) -> bool {
    let code = line.split(" #").next().unwrap_or(line).trim_end();
    let last = code.rsplit([' ', '\t']).next().unwrap_or("");
    last.starts_with(['|', '>'])
        && last[1..]
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == '+')
}
