//! sprig functions through templates, each expected value taken from sprig's documentation.

use serde_json::json;

use crate::template::{builtins, Exec, Templates, Value};

fn render(source: &str, data: serde_json::Value) -> Result<String, String> {
    let mut funcs = builtins::functions();
    funcs.extend(super::functions());
    let mut set = Templates::default();
    set.add("t", source, &funcs).map_err(|e| e.to_string())?;
    let mut exec = Exec::new(&set, &funcs);
    exec.execute("t", &Value::from_json_floats(&data))
        .map_err(|e| e.to_string())
}

fn ok(source: &str) -> String {
    render(source, json!({"n": 3, "list": ["b", "a", "b"], "map": {"x": 1, "y": {"z": 2}}, "s": "Hello World"}))
        .unwrap_or_else(|e| panic!("{source}: {e}"))
}

#[test]
fn strings() {
    let cases = [
        (
            r#"{{ trim "  hi  " }}|{{ trimAll "$" "$5.00$" }}|{{ trimPrefix "-" "-x" }}|{{ trimSuffix "-" "x-" }}"#,
            "hi|5.00|x|x",
        ),
        (
            r#"{{ upper "ab" }}{{ lower "CD" }} {{ title "hello world" }}"#,
            "ABcd Hello World",
        ),
        (
            r#"{{ quote "a" 1 }} {{ squote "b" }} {{ .s | quote }}"#,
            r#""a" "1" 'b' "Hello World""#,
        ),
        (
            r#"{{ replace " " "-" .s }} {{ contains "World" .s }} {{ hasPrefix "He" .s }} {{ hasSuffix "x" .s }}"#,
            "Hello-World true true false",
        ),
        (
            r#"{{ trunc 5 .s }}|{{ substr 0 5 .s }}|{{ repeat 3 "ab" }}|{{ nospace .s }}"#,
            "Hello|Hello|ababab|HelloWorld",
        ),
        (
            "{{ indent 2 \"a\\nb\" }}|{{ nindent 2 \"c\" }}",
            "  a\n  b|\n  c",
        ),
        (
            r#"{{ regexMatch "^[a-z]+$" "abc" }} {{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }} {{ regexFind "[0-9]+" "ab12cd" }}"#,
            "true -W-xxW- 12",
        ),
        (
            r#"{{ splitList "," "a,b" }} {{ join "-" .list }} {{ (split "." "a.b")._1 }}"#,
            "[a b] b-a-b b",
        ),
        (
            r#"{{ "hi" | b64enc }} {{ "aGk=" | b64dec }} {{ sha256sum "hi" | trunc 12 }}"#,
            "aGk= hi 8f434346648f",
        ),
        (
            r#"{{ snakecase "FirstName" }} {{ kebabcase "FirstName" }} {{ camelcase "http_server" }} {{ abbrev 5 "hello world" }}"#,
            "first_name first-name HttpServer he...",
        ),
        (
            r#"{{ cat "a" 1 nil "b" }} {{ toString 5 }} {{ atoi "42" | add 1 }} {{ int "12" }} {{ float64 "1.5" }}"#,
            "a 1 b 5 43 12 1.5",
        ),
    ];
    for (source, expected) in cases {
        assert_eq!(ok(source), expected, "{source}");
    }
}

#[test]
fn lists() {
    let cases = [
        ("{{ list 1 2 3 }} {{ first .list }} {{ last .list }} {{ rest .list }} {{ initial .list }}", "[1 2 3] b b [a b] [b a]"),
        ("{{ append .list \"c\" }} {{ prepend .list \"z\" }} {{ concat .list (list 1) }}", "[b a b c] [z b a b] [b a b 1]"),
        ("{{ has \"a\" .list }} {{ uniq .list }} {{ without .list \"b\" }} {{ sortAlpha .list }}", "true [b a] [a] [a b b]"),
        ("{{ compact (list 1 \"\" nil 0 \"x\") }} {{ reverse .list }} {{ until 3 }} {{ untilStep 1 7 2 }} {{ seq 3 }}", "[1 x] [b a b] [0 1 2] [1 3 5] 1 2 3"),
    ];
    for (source, expected) in cases {
        assert_eq!(ok(source), expected, "{source}");
    }
    assert!(render("{{ until 100000000 }}", json!({}))
        .expect_err("too long")
        .contains("more than 1000000 items"));
}

#[test]
fn dicts() {
    let cases = [
        ("{{ $d := dict \"a\" 1 \"b\" 2 }}{{ $d }} {{ get $d \"a\" }} {{ hasKey $d \"c\" }} {{ keys $d }} {{ values $d }}", "map[a:1 b:2] 1 false [a b] [1 2]"),
        ("{{ $d := dict }}{{ $_ := set $d \"k\" \"v\" }}{{ $d.k }}{{ $_ := unset $d \"k\" }}{{ $d }}", "vmap[]"),
        ("{{ pluck \"x\" .map (dict \"x\" 9) }} {{ omit .map \"y\" }} {{ pick .map \"y\" }}", "[1 9] map[x:1] map[y:map[z:2]]"),
        ("{{ $dst := dict \"a\" 1 \"n\" (dict \"k\" 1) }}{{ merge $dst (dict \"a\" 2 \"b\" 3 \"n\" (dict \"k\" 2 \"j\" 3)) }}", "map[a:1 b:3 n:map[j:3 k:1]]"),
        ("{{ mergeOverwrite (dict \"a\" 1 \"c\" 5) (dict \"a\" 2 \"b\" 3) }}", "map[a:2 b:3 c:5]"),
        ("{{ $c := deepCopy .map }}{{ $_ := set $c \"x\" 7 }}{{ .map.x }} {{ $c.x }}", "1 7"),
        ("{{ dig \"y\" \"z\" \"none\" .map }} {{ dig \"y\" \"q\" \"none\" .map }}", "2 none"),
    ];
    for (source, expected) in cases {
        assert_eq!(ok(source), expected, "{source}");
    }
}

#[test]
fn defaults_logic_math_and_serialisers() {
    let cases = [
        ("{{ default \"x\" .missing }} {{ .missing | default \"y\" }} {{ default \"z\" 0 }} {{ default \"z\" .n }}", "x y z 3"),
        ("{{ empty 0 }} {{ empty .list }} {{ coalesce 0 \"\" \"c\" }} {{ ternary \"yes\" \"no\" true }}", "true false c yes"),
        ("{{ add 1 2 3 }} {{ sub 5 2 }} {{ mul 2 3 }} {{ div 7 2 }} {{ mod 7 2 }} {{ max 1 5 2 }} {{ min 3 1 }} {{ add1 .n }}", "6 3 6 3 1 5 1 4"),
        ("{{ addf 1.5 1 }} {{ floor 1.7 }} {{ ceil 1.2 }} {{ round 1.256 2 }}", "2.5 1 2 1.26"),
        ("{{ kindOf .list }} {{ kindIs \"map\" .map }} {{ typeOf .n }}", "slice true float64"),
        ("{{ toJson .map }} {{ (fromJson \"{\\\"a\\\":[1,2]}\").a }}", r#"{"x":1,"y":{"z":2}} [1 2]"#),
        ("{{ toYaml (dict \"a\" 1 \"b\" (dict \"c\" (list 2 \"x\"))) }}", "a: 1\nb:\n  c:\n  - 2\n  - x"),
        ("{{ (fromYaml \"a: b\\nc: [1]\").c }} {{ fromYamlArray \"- 1\\n- x\" }}", "[1] [1 x]"),
        ("{{ semverCompare \">=1.19-0\" \"v1.27.3\" }} {{ (semver \"1.2.3-beta\").Minor }}", "true 2"),
        ("{{ len (uuidv4) }} {{ len (randAlphaNum 12) }}", "36 12"),
    ];
    for (source, expected) in cases {
        assert_eq!(ok(source), expected, "{source}");
    }
}

#[test]
fn required_and_fail_surface_their_message() {
    let error =
        render("{{ required \"set .Values.image\" .missing }}", json!({})).expect_err("required");
    assert!(
        error.ends_with("error calling required: set .Values.image"),
        "{error}"
    );
    assert!(
        render("{{ required \"x\" 0 }}", json!({})).is_ok(),
        "zero is a value"
    );
    let error = render("{{ fail \"unsupported mode\" }}", json!({})).expect_err("fail");
    assert!(
        error.ends_with("error calling fail: unsupported mode"),
        "{error}"
    );
}
