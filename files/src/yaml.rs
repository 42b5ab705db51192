//! Reading YAML streams as JSON values, with errors naming the file and line.

use serde_json::Value;

use crate::error::{Error, Result};

/// Parses every document of a YAML stream; empty documents are dropped and `*List` kinds
/// holding `items` are expanded into their items.
pub fn parse_documents(text: &str, file: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for value in parse_any_documents(text, file)? {
        push_expanding_lists(value, file, &mut out)?;
    }
    Ok(out)
}

/// Parses every document of a YAML stream as it is (mappings, lists or scalars); empty
/// documents are dropped.
pub fn parse_any_documents(text: &str, file: &str) -> Result<Vec<Value>> {
    refuse_deep_nesting(text, file)?;
    let text = fleet_objects::yaml_octal::rewrite(text);
    let documents =
        fleet_objects::yaml_value::read_documents(&text).map_err(|e| yaml_error(file, e))?;
    Ok(documents.into_iter().filter(|v| !v.is_null()).collect())
}

/// Parses one YAML document into a typed value. The text is first read with a bound on
/// what its aliases expand to, which typed reading does not have.
pub fn parse_one<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<T> {
    parse_value(text, file)?;
    serde_yaml_ng::from_str(text).map_err(|e| yaml_error(file, e))
}

/// Parses one YAML document as it is (an empty one is null), read once, with the bounds
/// [`parse_one`] has on nesting and on what aliases expand to.
pub fn parse_value(text: &str, file: &str) -> Result<Value> {
    refuse_deep_nesting(text, file)?;
    fleet_objects::yaml_value::read_document(text).map_err(|e| yaml_error(file, e))
}

/// Refuses, in time linear in its length, a text nesting flow collections deeper than any
/// object does: the YAML reader takes time quadratic in that depth.
fn refuse_deep_nesting(text: &str, file: &str) -> Result<()> {
    use fleet_objects::yaml_depth::{too_deep, MAX_FLOW_DEPTH};
    match too_deep(text, MAX_FLOW_DEPTH) {
        Some((line, _)) => Err(Error::in_file(
            file,
            format!("invalid YAML: nested more than {MAX_FLOW_DEPTH} levels deep"),
        )
        .with_line(Some(line))),
        None => Ok(()),
    }
}

/// Converts a YAML parse error into one naming the file and line.
pub fn yaml_error(file: &str, error: serde_yaml_ng::Error) -> Error {
    let line = error.location().map(|l| l.line());
    let message = error.to_string();
    let message = match message.find(" at line ") {
        Some(cut) => message[..cut].to_string(),
        None => message,
    };
    Error::in_file(file, format!("invalid YAML: {message}"))
        .with_line(line)
        .with_cause(error)
}

fn push_expanding_lists(value: Value, file: &str, out: &mut Vec<Value>) -> Result<()> {
    match value {
        Value::Null => Ok(()),
        Value::Object(ref map) if is_list(map) => {
            let Some(Value::Array(items)) = map.get("items").cloned() else {
                return Ok(());
            };
            for item in items {
                push_expanding_lists(item, file, out)?;
            }
            Ok(())
        }
        Value::Object(_) => {
            out.push(value);
            Ok(())
        }
        _ => Err(Error::in_file(
            file,
            "a YAML document must be a mapping (a Kubernetes object)",
        )),
    }
}

fn is_list(map: &serde_json::Map<String, Value>) -> bool {
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    kind.ends_with("List") && map.get("items").is_some_and(Value::is_array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_and_expands_lists() {
        let text = "a: 1\n---\n---\nkind: List\nitems:\n- {kind: A}\n- {kind: B}\n";
        let docs = parse_documents(text, "f.yaml").expect("parse");
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[2]["kind"], "B");
    }

    #[test]
    fn reports_file_and_line_of_bad_yaml() {
        let err = parse_documents("a: 1\nb: [\n", "x/f.yaml").expect_err("bad");
        assert!(err.to_string().starts_with("x/f.yaml:"), "{err}");
        assert!(err.location.line.is_some());
    }

    #[test]
    fn a_typed_document_nested_too_deep_is_refused_at_once() {
        let text = format!(
            "helm:\n  values: {}{}\n",
            "[".repeat(60_000),
            "]".repeat(60_000)
        );
        let started = std::time::Instant::now();
        let err = parse_one::<Value>(&text, "fleet.yaml").expect_err("too deep");
        assert!(err.to_string().contains("nested more than"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn aliases_that_expand_too_far_are_refused_in_every_reader() {
        let text = format!(
            "a: &a {}\nb: [{}]\n",
            "x".repeat(1 << 20),
            "*a, ".repeat(64)
        );
        for refused in [
            parse_one::<Value>(&text, "fleet.yaml").expect_err("typed"),
            parse_documents(&text, "m.yaml").expect_err("documents"),
        ] {
            assert!(refused.to_string().contains("aliases expand"), "{refused}");
        }
    }

    #[test]
    fn reads_legacy_octal_like_kubernetes_tools() {
        let text = "mode: 0755\nquoted: \"0755\"\nlist:\n- 0644\nscript: |\n  chmod 0755 x\n  a: 0755\nzero: 0\nnine: 089\n";
        let docs = parse_documents(text, "f.yaml").expect("parse");
        assert_eq!(docs[0]["mode"], 493);
        assert_eq!(docs[0]["quoted"], "0755");
        assert_eq!(docs[0]["list"][0], 420);
        assert_eq!(docs[0]["script"], "chmod 0755 x\na: 0755\n");
        assert_eq!(docs[0]["zero"], 0);
        assert_eq!(docs[0]["nine"], "089");
    }

    #[test]
    fn refuses_scalar_documents() {
        assert!(parse_documents("just text", "f.yaml").is_err());
    }
}
