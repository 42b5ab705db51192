//! Writes JSON values as YAML the way kubectl and kustomize print them: through
//! `sigs.k8s.io/yaml`, that is the JSON text read back and written by goyaml.v2 (keys in
//! its natural order, strings quoted only where a YAML 1.1 reader would take them for
//! something else, long plain lines folded at 80 columns).

use serde_json::Value;

use crate::goyaml::emit::{self as goyaml_emit, Dialect, Node};
use crate::goyaml::resolve::{resolve, Resolved};
use crate::goyaml::{go_json_float, natural_order};

/// Writes one document (without a leading `---`).
pub fn document(value: &Value) -> String {
    goyaml_emit::document(&node(value, Keys::Sorted), Dialect::V2)
}

/// Writes a value as kustomize's kyaml library writes one (goyaml.v3: no folding,
/// sequences not indented under their key), its mapping keys in the value's own order.
pub fn kyaml_document(value: &Value) -> String {
    goyaml_emit::document(&node(value, Keys::AsGiven), Dialect::KYAML)
}

/// Writes documents as one YAML stream, `---` between them, as `kubectl kustomize` prints
/// it.
pub fn stream(documents: &[Value]) -> String {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_stream(&mut out, documents);
    String::from_utf8(out).unwrap_or_default()
}

/// [`stream`], written document by document.
pub fn write_stream(out: &mut impl std::io::Write, documents: &[Value]) -> std::io::Result<()> {
    for (index, value) in documents.iter().enumerate() {
        if index > 0 {
            out.write_all(b"---\n")?;
        }
        out.write_all(document(value).as_bytes())?;
    }
    Ok(())
}

/// The order mapping keys are written in.
#[derive(Clone, Copy)]
enum Keys {
    /// goyaml's natural order, as a Go map comes out.
    Sorted,
    /// The value's own order, as a Go struct's fields come out.
    AsGiven,
}

/// What goyaml holds after reading the JSON `encoding/json` writes for `value`.
fn node(value: &Value, keys: Keys) -> Node {
    match value {
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Node::Int(i)
            } else if let Some(u) = n.as_u64() {
                Node::Uint(u)
            } else {
                let f = n.as_f64().unwrap_or_default();
                match go_json_float(f).map(|text| resolve(&text)) {
                    Some(Resolved::Int(i)) => Node::Int(i),
                    Some(Resolved::Uint(u)) => Node::Uint(u),
                    _ => Node::Float(f),
                }
            }
        }
        Value::String(s) => Node::Str(s.clone()),
        Value::Array(items) => Node::Seq(items.iter().map(|item| node(item, keys)).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(String, Node)> = map
                .iter()
                .map(|(k, v)| (k.clone(), node(v, keys)))
                .collect();
            if let Keys::Sorted = keys {
                entries.sort_by(|a, b| natural_order(&a.0, &b.0));
            }
            Node::Map(entries)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Expected text as `kubectl create configmap --dry-run=client -o yaml` and
    /// `kubectl kustomize` print these values.
    #[test]
    fn writes_as_kubectl_prints() {
        let value = json!({
            "b": ["yes", "0755", "1e3", "", "*/10 * * * *", "it's: x", "plain text"],
            "a": {"n": 1, "f": 1.5, "whole": 2.0, "empty": {}, "none": []},
            "text": "line one\nline two\n",
        });
        assert_eq!(
            document(&value),
            "a:\n  empty: {}\n  f: 1.5\n  \"n\": 1\n  none: []\n  whole: 2\nb:\n- \"yes\"\n- \"0755\"\n- \"1e3\"\n- \"\"\n- '*/10 * * * *'\n- 'it''s: x'\n- plain text\ntext: |\n  line one\n  line two\n"
        );
    }

    /// `kubectl create configmap x --from-literal=command="..." --dry-run=client -o yaml`
    /// printed this `data` (kubectl 1.32).
    #[test]
    fn folds_long_plain_lines_at_80_columns() {
        let value = json!({"data": {"command": "mysql -h 127.0.0.1 -D ${MYSQL_DATABASE} -u root -p${MYSQL_ROOT_PASSWORD} -e 'SELECT 1'"}});
        assert_eq!(
            document(&value),
            "data:\n  command: mysql -h 127.0.0.1 -D ${MYSQL_DATABASE} -u root -p${MYSQL_ROOT_PASSWORD}\n    -e 'SELECT 1'\n"
        );
    }
}
