//! Executor behaviour, each case checked against Go's documented text/template semantics.

use serde_json::json;

use super::builtins;
use super::exec::{Exec, Templates};
use super::value::Value;

fn render_with(templates: &[(&str, &str)], data: serde_json::Value) -> Result<String, String> {
    let funcs = builtins::functions();
    let mut set = Templates::default();
    for (name, source) in templates {
        set.add(name, source, &funcs).map_err(|e| e.to_string())?;
    }
    let mut exec = Exec::new(&set, &funcs);
    exec.execute(templates[0].0, &Value::from_json(&data))
        .map_err(|e| e.to_string())
}

fn render(source: &str, data: serde_json::Value) -> String {
    render_with(&[("t", source)], data).unwrap_or_else(|e| panic!("{source}: {e}"))
}

fn fails(source: &str, data: serde_json::Value) -> String {
    render_with(&[("t", source)], data).expect_err(source)
}

#[test]
fn fields_variables_and_printing() {
    let data = json!({"name": "web", "n": 3, "list": [1, "a"], "map": {"b": 2, "a": 1}, "f": 1.5});
    assert_eq!(
        render("{{ .name }}-{{ .n }}-{{ .f }}", data.clone()),
        "web-3-1.5"
    );
    assert_eq!(
        render("{{ .list }} {{ .map }}", data.clone()),
        "[1 a] map[a:1 b:2]"
    );
    assert_eq!(render("{{ .missing }}", data.clone()), "<no value>");
    assert_eq!(
        render(
            "{{ $x := .name }}{{ $x }}{{ $x = \"api\" }}{{ $x }}",
            data.clone()
        ),
        "webapi"
    );
    assert_eq!(
        render("{{ with .map }}{{ .a }}{{ $.name }}{{ end }}", data.clone()),
        "1web"
    );
    assert_eq!(render("{{ (index .list 1) }}", data.clone()), "a");
    assert_eq!(render("{{ .name | printf \"%s!\" }}", data), "web!");
}

#[test]
fn truthiness_and_else_chains() {
    let source = "{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}";
    assert_eq!(render(source, json!({"a": 1})), "A");
    assert_eq!(render(source, json!({"a": 0, "b": "x"})), "B");
    for falsy in [
        json!(false),
        json!(0),
        json!(""),
        json!([]),
        json!({}),
        json!(null),
    ] {
        assert_eq!(render(source, json!({"a": falsy, "b": falsy})), "C");
    }
    assert_eq!(
        render(
            "{{ with .x }}X{{ else with .y }}{{ . }}{{ end }}",
            json!({"y": "why"})
        ),
        "why"
    );
}

#[test]
fn range_over_lists_maps_and_integers_with_break_and_continue() {
    let data = json!({"l": ["a", "b", "c"], "m": {"z": 1, "y": 2}});
    assert_eq!(
        render("{{ range .l }}{{ . }}{{ end }}", data.clone()),
        "abc"
    );
    assert_eq!(
        render(
            "{{ range $i, $v := .l }}{{ $i }}={{ $v }} {{ end }}",
            data.clone()
        ),
        "0=a 1=b 2=c "
    );
    assert_eq!(
        render(
            "{{ range $k, $v := .m }}{{ $k }}{{ $v }}{{ end }}",
            data.clone()
        ),
        "y2z1",
        "maps in key order"
    );
    assert_eq!(
        render("{{ range .none }}x{{ else }}empty{{ end }}", data.clone()),
        "empty"
    );
    assert_eq!(render("{{ range 3 }}{{ . }}{{ end }}", data.clone()), "012");
    assert_eq!(
        render("{{ range .l }}{{ if eq . \"b\" }}{{ continue }}{{ end }}{{ if eq . \"c\" }}{{ break }}{{ end }}{{ . }}{{ end }}", data),
        "a"
    );
}

#[test]
fn whitespace_trimming() {
    let source = "items:\n{{- range .l }}\n  - {{ . }}\n{{- end }}\n";
    assert_eq!(
        render(source, json!({"l": [1, 2]})),
        "items:\n  - 1\n  - 2\n"
    );
}

#[test]
fn define_template_and_block() {
    let templates = [
        (
            "main",
            "{{ template \"greet\" .who }}|{{ block \"tail\" . }}default {{ .who }}{{ end }}",
        ),
        ("helpers", "{{ define \"greet\" }}hello {{ . }}{{ end }}"),
    ];
    let funcs = builtins::functions();
    let mut set = Templates::default();
    for (name, source) in templates.iter().rev() {
        set.add(name, source, &funcs).expect("parses");
    }
    let out = Exec::new(&set, &funcs)
        .execute("main", &Value::from_json(&json!({"who": "you"})))
        .expect("runs");
    assert_eq!(out, "hello you|default you");
}

#[test]
fn and_or_short_circuit_and_comparisons() {
    assert_eq!(
        render(
            "{{ and 1 0 2 }}|{{ or 0 \"\" \"x\" }}|{{ or 0 false }}",
            json!({})
        ),
        "0|x|false"
    );
    // `and` stops before evaluating the failing index.
    assert_eq!(render("{{ and .l (index .l 0) }}", json!({"l": []})), "[]");
    assert_eq!(
        render(
            "{{ eq 1 2 1 }} {{ ne \"a\" \"b\" }} {{ lt 1 2 }} {{ ge \"b\" \"a\" }}",
            json!({})
        ),
        "true true true true"
    );
    assert_eq!(
        render(
            "{{ not .a }} {{ len .l }} {{ len \"héllo\" }}",
            json!({"l": [1, 2]})
        ),
        "true 2 6"
    );
    assert_eq!(
        render(
            "{{ slice \"abcdef\" 1 3 }} {{ slice .l 1 }}",
            json!({"l": [1, 2, 3]})
        ),
        "bc [2 3]"
    );
    assert!(fails("{{ eq 1 1.0 }}", json!({}))
        .ends_with("error calling eq: incompatible types for comparison: int and float64"));
}

#[test]
fn print_family_and_escapers() {
    assert_eq!(
        render(
            "{{ print 1 2 \"a\" }}|{{ println \"x\" 1 }}|{{ printf \"%d%%\" 5 }}",
            json!({})
        ),
        "1 2a|x 1\n|5%"
    );
    assert_eq!(
        render("{{ html \"<a href='x'>&</a>\" }}", json!({})),
        "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
    );
    assert_eq!(
        render("{{ js \"it's <b>\" }}", json!({})),
        "it\\'s \\u003Cb\\u003E"
    );
    assert_eq!(
        render("{{ urlquery \"a b&c=d\" }}", json!({})),
        "a+b%26c%3Dd"
    );
}

#[test]
fn execution_errors_name_file_line_column_and_action() {
    assert_eq!(
        fails("line one\n  {{ .a.b.c }}", json!({})),
        "template: t:2:7: executing \"t\" at <.a.b.c>: nil pointer evaluating interface {}.b"
    );
    // Checked with Helm 4.3.1: an unknown function is a syntax error, as in Go's parser.
    assert_eq!(
        fails("{{ nosuch 1 }}", json!({})),
        "template: t:1: function \"nosuch\" not defined"
    );
    assert!(
        fails("{{ .s.x }}", json!({"s": "str"})).ends_with("can't evaluate field x in type string")
    );
    assert!(fails("{{ index .l 5 }}", json!({"l": [1]})).contains("index out of range: 5"));
    assert_eq!(
        fails("{{ $u }}", json!({})),
        "template: t:1: undefined variable \"$u\""
    );
}

#[test]
fn infinite_recursion_is_an_error_not_a_crash() {
    // Runs on the test thread's small stack: template calls grow the stack on demand.
    let source = "{{ define \"loop\" }}{{ template \"loop\" . }}{{ end }}{{ template \"loop\" . }}";
    let error = render_with(&[("t", source)], json!({})).expect_err("recursion is caught");
    assert!(
        error.contains("exceeded maximum template depth (1000)"),
        "{error}"
    );
}

#[test]
fn other_delimiters_and_missing_keys_as_errors() {
    let funcs = builtins::functions();
    let delims = super::lex::Delims {
        left: "${",
        right: "}",
    };
    let run = |source: &str, missing_key_error: bool| {
        let mut set = Templates::with_options(delims, missing_key_error);
        set.add("values", source, &funcs)
            .map_err(|e| e.to_string())?;
        Exec::new(&set, &funcs)
            .execute("values", &Value::from_json(&json!({"a": {"b": "x"}})))
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        run("{{ .a }} ${ .a.b } ${- \" }\" -} !", false).as_deref(),
        Ok("{{ .a }} x }!"),
        "Go's marks are text; a closing brace in a string does not close"
    );
    assert_eq!(run("${ .a.nope }", false).as_deref(), Ok("<no value>"));
    assert_eq!(
        run("${ .a.nope }", true),
        Err("template: values:1:5: executing \"values\" at <.a.nope>: map has no entry for key \"nope\"".into())
    );
    assert_eq!(
        run("${ index .a \"nope\" }", true).as_deref(),
        Ok("<no value>")
    );
    assert!(run("${ .a ", false).is_err_and(|e| e.contains("unclosed action")));
}
