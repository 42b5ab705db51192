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
    use fleet_objects::yaml_depth::{too_deep, MAX_FLOW_DEPTH};
    if let Some((line, _)) = too_deep(text, MAX_FLOW_DEPTH) {
        return Err(Error::in_file(
            file,
            format!("invalid YAML: nested more than {MAX_FLOW_DEPTH} levels deep"),
        )
        .with_line(Some(line)));
    }
    let text = fleet_objects::yaml_octal::rewrite(text);
    let documents =
        fleet_objects::yaml_value::read_documents(&text).map_err(|e| yaml_error(file, e))?;
    Ok(documents.into_iter().filter(|v| !v.is_null()).collect())
}

/// Parses one YAML document into a typed value. The text is first read with a bound on
/// what its aliases expand to, which typed reading does not have.
pub fn parse_one<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<T> {
    fleet_objects::yaml_value::read_document(text).map_err(|e| yaml_error(file, e))?;
    serde_yaml_ng::from_str(text).map_err(|e| yaml_error(file, e))
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
