//! Bad charts fail with Helm's own words (checked against real Helm 4 through helm-sdkpy,
//! see testdata/charts/make-goldens.sh), and hostile ones stop at documented limits.

use std::path::Path;

use fleet_renderer::helm::{chart, engine};

fn chart_with(dir: &Path, name: &str, template: &str, values: &str) -> std::path::PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("templates")).expect("dirs");
    std::fs::write(
        root.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    )
    .expect("chart");
    std::fs::write(root.join("values.yaml"), values).expect("values");
    std::fs::write(root.join("templates/cm.yaml"), template).expect("template");
    root
}

fn render_error(template: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = chart_with(dir.path(), "bad", template, "");
    let loaded = chart::load(&root).expect("loads");
    let options = engine::Options {
        release_name: "r".into(),
        ..engine::Options::default()
    };
    engine::render(&loaded, &serde_json::json!({}), &options)
        .expect_err("fails")
        .message
}

#[test]
fn syntax_errors_are_worded_as_helm_words_them() {
    // Each expected message is what Helm 4 printed for the same template.
    assert_eq!(
        render_error("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }\n"),
        "parse error at (bad/templates/cm.yaml:4): unexpected \"}\" in operand"
    );
    assert_eq!(
        render_error("{{ if .Values.x }}\nkind: A\n"),
        "parse error at (bad/templates/cm.yaml:3): unexpected EOF"
    );
}

#[test]
fn required_and_fail_messages_surface_verbatim() {
    assert_eq!(
        render_error("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ required \"image.tag is required\" .Values.image }}\n"),
        "execution error at (bad/templates/cm.yaml:4:11): image.tag is required"
    );
    assert_eq!(
        render_error("{{ fail \"mode must be fast or safe\" }}"),
        "execution error at (bad/templates/cm.yaml:1:3): mode must be fast or safe"
    );
}

#[test]
fn include_recursion_and_huge_ranges_stop_with_an_error() {
    let error = render_error(
        "{{ define \"loop\" }}{{ include \"loop\" . }}{{ end }}{{ include \"loop\" . }}",
    );
    assert!(
        error.contains("exceeded maximum template depth (1000)"),
        "{error}"
    );
    let error = render_error("{{ range 1000000000 }}{{ end }}");
    assert!(
        error.contains("more than the limit of 10000000 iterations"),
        "{error}"
    );
    let error = render_error("{{ range until 2000000 }}{{ end }}");
    assert!(error.contains("more than 1000000 items"), "{error}");
    let error = render_error(
        "{{ range 9000000 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}",
    );
    assert!(error.contains("output exceeds 67108864 bytes"), "{error}");
}

#[test]
fn a_ten_megabyte_values_file_renders() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut values = String::from("items:\n");
    while values.len() < 10 * 1024 * 1024 {
        values.push_str(&format!(
            "  - name: item-{}\n    payload: {}\n",
            values.len(),
            "x".repeat(200)
        ));
    }
    let root = chart_with(
        dir.path(),
        "big",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  count: {{ len .Values.items | quote }}\n",
        &values,
    );
    let loaded = chart::load(&root).expect("loads");
    let rendered = engine::render(&loaded, &serde_json::json!({}), &engine::Options::default())
        .expect("renders");
    assert!(
        rendered.manifests[0].content.contains("count: \""),
        "{}",
        rendered.manifests[0].content
    );
}

#[test]
fn values_breaking_the_schema_are_listed_as_helm_lists_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = chart_with(
        dir.path(),
        "sch",
        "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: x\n",
        "replicas: two\n",
    );
    std::fs::write(
        root.join("values.schema.json"),
        r#"{"type": "object", "required": ["image"], "properties": {"replicas": {"type": "integer"}, "image": {"type": "string"}}}"#,
    )
    .expect("schema");
    let loaded = chart::load(&root).expect("loads");
    let error = engine::render(&loaded, &serde_json::json!({}), &engine::Options::default())
        .expect_err("invalid values");
    // Helm 4 printed exactly this for the same chart.
    assert_eq!(
        error.message,
        "values don't meet the specifications of the schema(s) in the following chart(s):\nsch:\n- at '': missing property 'image'\n- at '/replicas': got string, want integer\n"
    );
    let fixed = serde_json::json!({"replicas": 2, "image": "nginx"});
    assert!(engine::render(&loaded, &fixed, &engine::Options::default()).is_ok());
    let skipped = engine::Options {
        skip_schema_validation: true,
        ..engine::Options::default()
    };
    assert!(engine::render(&loaded, &serde_json::json!({}), &skipped).is_ok());
}
