//! goyaml's reading and writing, with texts Helm 4.3.1 printed (`toYaml`, `toYamlPretty`,
//! `fromYaml` of the same inputs).

use serde_json::{json, Value as Json};

use super::*;

fn read(text: &str) -> Json {
    parse_documents(text)
        .expect("valid YAML")
        .into_iter()
        .next()
        .unwrap_or(Json::Null)
}

#[test]
fn plain_scalars_take_their_yaml_1_1_meaning() {
    assert_eq!(
        read("a: yes\nb: 1\nc: 1.5\nd: [1]\n0755: x\non: y\nn: 3\ne: 0x1F\nf: 1:20\ng: ~\nh: 2001-12-14"),
        json!({
            "a": true, "b": 1, "c": 1.5, "d": [1], "493": "x", "true": true, "false": 3,
            "e": 31, "f": "1:20", "g": null, "h": "2001-12-14"
        })
    );
}

#[test]
fn anchors_aliases_and_merge_keys_expand() {
    assert_eq!(
        read("base: &b {x: 1, z: 2}\nuse:\n  <<: *b\n  z: 3\nlist: [*b]"),
        json!({"base": {"x": 1, "z": 2}, "use": {"x": 1, "z": 3}, "list": [{"x": 1, "z": 2}]})
    );
}

#[test]
fn aliases_that_expand_too_far_are_refused_before_they_are_copied() {
    let long = format!(
        "a: &a {}\nb: [{}]\n",
        "x".repeat(1 << 20),
        "*a, ".repeat(100)
    );
    let refused = parse_documents(&long).expect_err("100 MiB of scalars");
    assert!(refused.message.contains("bytes"), "{}", refused.message);
    let mut laughs = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let refs = vec![format!("*a{}", level - 1); 10].join(", ");
        laughs.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
    }
    let refused = parse_documents(&laughs).expect_err("10^9 nodes");
    assert!(refused.message.contains("nodes"), "{}", refused.message);
}

#[test]
fn to_yaml_writes_as_helm_writes() {
    let values = Value::from_json_floats(&read(
        "a: 8.2.1\nb: \"1.5\"\nc: yes\nd: \"2001-12-14\"\ne: \"on\"\nf: 1e6\ni: \"\"\nj: \"~\"\nk: \"multi\\nline\\n\"\nl: [1, 2.5, \"x\"]\nm: {}\np: \"  lead\"\nq: \"a: b\"\nr: \"- x\"\ns: \"#c\"\nt: 12345678901234567890\n",
    ));
    assert_eq!(
        to_yaml(&values),
        "a: 8.2.1\nb: \"1.5\"\nc: true\nd: \"2001-12-14\"\ne: \"on\"\nf: 1000000\ni: \"\"\nj: \"~\"\nk: |\n  multi\n  line\nl:\n- 1\n- 2.5\n- x\nm: {}\np: '  lead'\nq: 'a: b'\nr: '- x'\ns: '#c'\nt: 12345678901234567000"
    );
    let keys = Value::from_json_floats(&read(
        "long: \"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.\"\nkeys: {a10: 1, a2: 2, B: 3, _x: 4, \"1\": 5, \"a-b\": 6, aa: 7}\n",
    ));
    assert_eq!(
        to_yaml(&keys),
        "keys:\n  _x: 4\n  \"1\": 5\n  B: 3\n  a-b: 6\n  a2: 2\n  a10: 1\n  aa: 7\nlong: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\n  incididunt ut labore et dolore magna aliqua."
    );
    assert_eq!(to_yaml(&Value::from("multi\nline")), "|-\n  multi\n  line");
    assert_eq!(to_yaml(&Value::Nil), "null");
    assert_eq!(to_yaml(&Value::from(Vec::new())), "[]");
    assert_eq!(
        to_yaml(&Value::Float(f64::NAN)),
        "",
        "Helm swallows the error"
    );
}

#[test]
fn to_yaml_pretty_indents_sequences() {
    let value = Value::from_json_floats(&json!({
        "a": [1, {"b": 2}],
        "c": {"d": ["x"]},
        "e": "long string that is really really long and goes past eighty columns for sure yes it does"
    }));
    assert_eq!(
        to_yaml_pretty(&value),
        "a:\n  - 1\n  - b: 2\nc:\n  d:\n    - x\ne: long string that is really really long and goes past eighty columns for sure yes it does"
    );
}

#[test]
fn syntax_errors_are_worded_as_goyaml_words_them() {
    let error = |text: &str| parse_documents(text).expect_err("invalid YAML").to_string();
    let prefix = "error converting YAML to JSON: yaml: ";
    assert_eq!(
        error("a: ["),
        format!("{prefix}line 1: did not find expected node content")
    );
    assert_eq!(
        error("a: b: c"),
        format!("{prefix}mapping values are not allowed in this context")
    );
    assert_eq!(
        error("a: 1\n b: 2"),
        format!("{prefix}line 2: mapping values are not allowed in this context")
    );
    assert_eq!(
        error("a: |\n  ok\n bad"),
        format!("{prefix}line 2: did not find expected key")
    );
    assert_eq!(
        error("a: *nope"),
        format!("{prefix}unknown anchor 'nope' referenced")
    );
    assert_eq!(
        error("a:\n\tb: 1"),
        format!("{prefix}line 2: found character that cannot start any token")
    );
}
