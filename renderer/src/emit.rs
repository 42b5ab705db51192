//! A YAML writer for JSON values in the style kubectl prints: two-space indent, lists at the
//! indent of their key, and every string quoted that a YAML 1.1 reader (Go's yaml.v2, which
//! kubectl uses) would take for something else (`yes`, `0755`, `1e3`, `~`...).

use serde_json::Value;

/// Writes one document (without a leading `---`).
pub fn document(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => write_list(&mut out, items, 0),
        scalar => {
            out.push_str(&scalar_text(scalar, 0));
            out.push('\n');
        }
    }
    out
}

fn indent(out: &mut String, level: usize) {
    out.extend(std::iter::repeat_n(' ', level));
}

fn write_map(out: &mut String, map: &serde_json::Map<String, Value>, level: usize) {
    for (key, value) in map {
        indent(out, level);
        out.push_str(&quote_if_needed(key));
        out.push(':');
        write_value_after_key(out, value, level);
    }
}

fn write_value_after_key(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Object(inner) if !inner.is_empty() => {
            out.push('\n');
            write_map(out, inner, level + 2);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_list(out, items, level);
        }
        scalar => {
            out.push(' ');
            out.push_str(&scalar_text(scalar, level + 2));
            out.push('\n');
        }
    }
}

fn write_list(out: &mut String, items: &[Value], level: usize) {
    for item in items {
        indent(out, level);
        out.push_str("- ");
        match item {
            Value::Object(map) if !map.is_empty() => {
                let mut first = true;
                for (key, value) in map {
                    if !first {
                        indent(out, level + 2);
                    }
                    first = false;
                    out.push_str(&quote_if_needed(key));
                    out.push(':');
                    write_value_after_key(out, value, level + 2);
                }
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                write_list(out, inner, level + 2);
            }
            scalar => {
                out.push_str(&scalar_text(scalar, level + 2));
                out.push('\n');
            }
        }
    }
}

fn scalar_text(value: &Value, level: usize) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if is_block_safe(s) => block(s, level),
        Value::String(s) => quote_if_needed(s),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
    }
}

/// Multi-line text without tabs or trailing spaces goes in a literal block.
fn is_block_safe(s: &str) -> bool {
    s.contains('\n')
        && !s.contains('\t')
        && !s.contains('\r')
        && !s.starts_with([' ', '\n'])
        && s.lines().all(|l| !l.ends_with(' '))
        && !s.chars().any(|c| c.is_control() && c != '\n')
}

fn block(s: &str, level: usize) -> String {
    let chomp = if s.ends_with("\n\n") {
        "+"
    } else if s.ends_with('\n') {
        ""
    } else {
        "-"
    };
    let mut out = format!("|{chomp}\n");
    let body = s.strip_suffix('\n').unwrap_or(s);
    for (i, line) in body.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !line.is_empty() {
            out.extend(std::iter::repeat_n(' ', level));
            out.push_str(line);
        }
    }
    out
}

/// The string as kubectl writes it: plain when a YAML 1.1 reader reads it back as the same
/// string; double-quoted when it would read as another type (`yes`, `0755`) or needs
/// escapes; single-quoted when only its characters keep it from being plain.
pub fn quote_if_needed(s: &str) -> String {
    let needs_escapes = s.chars().any(|c| c.is_control() || c == '\u{feff}');
    if s.is_empty() || is_yaml11_special(s) || looks_numeric(s) || needs_escapes {
        serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
    } else if is_plain_safe(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    // A leading `-` is fine when followed by text (`-x`); other indicators never are.
    let dash_text = first == '-' && s.len() > 1 && !s[1..].starts_with(' ');
    if "-?:,[]{}#&*!|>'\"%@`= ".contains(first) && !dash_text {
        return false;
    }
    if s.ends_with([' ', ':']) || s.contains(": ") || s.contains(" #") || s.contains('\n') {
        return false;
    }
    if s.chars().any(|c| c.is_control() || c == '\u{feff}') {
        return false;
    }
    !is_yaml11_special(s) && !looks_numeric(s)
}

fn is_yaml11_special(s: &str) -> bool {
    matches!(
        s,
        "~" | "null"
            | "Null"
            | "NULL"
            | "y"
            | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
            | "<<"
    )
}

/// Anything a YAML 1.1 or 1.2 reader may take for a number (ints in any base, floats,
/// sexagesimal, `.inf`, `.nan`).
fn looks_numeric(s: &str) -> bool {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if lower == ".inf" || lower == ".nan" {
        return true;
    }
    let starts_numeric = body.starts_with(|c: char| c.is_ascii_digit())
        || (body.starts_with('.') && body[1..].starts_with(|c: char| c.is_ascii_digit()));
    starts_numeric
        && body
            .chars()
            .all(|c| c.is_ascii_hexdigit() || "._:xXoObB+-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_what_yaml_1_1_would_misread() {
        for s in [
            "yes", "on", "0755", "1e3", "1.5", "~", "", "123", "0x1F", "1:20", "-1", ".5",
        ] {
            assert!(
                quote_if_needed(s).starts_with('"'),
                "{s} must be double-quoted"
            );
        }
        assert_eq!(quote_if_needed("*/10 * * * *"), "'*/10 * * * *'");
        assert_eq!(quote_if_needed("it's: x"), "'it''s: x'");
        for s in [
            "nginx:1.25",
            "hello world",
            "web-config",
            "a=b",
            "v1",
            "-x",
            "/etc/conf",
        ] {
            assert_eq!(quote_if_needed(s), s, "{s} can stay plain");
        }
    }

    #[test]
    fn writes_kubectl_style_documents() {
        let value = json!({
            "kind": "Deployment",
            "spec": {"containers": [{"name": "a", "args": ["x", "1"]}], "empty": {}},
            "data": {"script": "line1\nline2\n"}
        });
        assert_eq!(
            document(&value),
            "kind: Deployment\nspec:\n  containers:\n  - name: a\n    args:\n    - x\n    - \"1\"\n  empty: {}\ndata:\n  script: |\n    line1\n    line2\n"
        );
    }
}
