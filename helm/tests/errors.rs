//! Bad charts fail with Helm's own words (checked against real Helm 4.3.1), and hostile
//! ones (endless recursion, a 50 MB values file, a .tgz bomb, a gigabyte of output) stop
//! at documented limits with a clear error, in bounded time and memory.

use std::path::Path;

use fleet_helm::{Chart, Options};

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
    failure_of(&chart_with(dir.path(), "bad", template, ""))
}

/// The error rendering the chart at `root` fails with.
fn failure_of(root: &Path) -> String {
    let loaded = Chart::load(root).expect("loads");
    let options = Options {
        release_name: "r".into(),
        ..Options::default()
    };
    fleet_helm::render(&loaded, &serde_json::json!({}), &options)
        .expect_err("fails")
        .to_string()
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
    // An action left open is reported where the text ends, and where it started.
    assert_eq!(
        render_error("{{ .x \n"),
        "parse error at (bad/templates/cm.yaml:2): unclosed action started at bad/templates/cm.yaml:1"
    );
    assert_eq!(
        render_error("{{\n\n\n\n\n"),
        "parse error at (bad/templates/cm.yaml:6): unclosed action started at bad/templates/cm.yaml:1"
    );
    assert_eq!(
        render_error("line1\n{{ .x"),
        "parse error at (bad/templates/cm.yaml:2): unclosed action"
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
    let loaded = Chart::load(&root).expect("loads");
    let rendered =
        fleet_helm::render(&loaded, &serde_json::json!({}), &Options::default()).expect("renders");
    assert!(
        rendered.manifests[0].content.contains("count: \""),
        "{}",
        rendered.manifests[0].content
    );
}

#[test]
fn a_fifty_megabyte_values_file_is_refused_clearly_and_quickly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let line = format!("  - payload: {}\n", "x".repeat(100));
    let values = format!("items:\n{}", line.repeat(50 * 1024 * 1024 / line.len() + 1));
    let root = chart_with(dir.path(), "huge", "kind: ConfigMap\n", &values);
    let started = std::time::Instant::now();
    let error = Chart::load(&root).expect_err("refused");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(error.file().ends_with("huge/values.yaml"), "{error}");
    assert!(
        error
            .message()
            .contains("more than the 33554432 read at most"),
        "{error}"
    );
}

/// A gzipped tar of `files` (path, size of zeros), compressed as far as it goes.
fn tgz(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::best(),
    ));
    for (path, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, data.as_slice())
            .expect("tar entry");
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("tgz")
}

#[test]
fn a_tgz_bomb_is_refused_before_it_is_unpacked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chart_yaml = b"apiVersion: v2\nname: bomb\nversion: 0.1.0\n".to_vec();
    let zeros = vec![0u8; 60 * 1024 * 1024];
    // One archive of 120 MB of zeros, and one whose three subcharts unpack to 60 MB each.
    let flat = tgz(&[
        ("bomb/Chart.yaml", chart_yaml.clone()),
        ("bomb/a.bin", zeros.clone()),
        ("bomb/b.bin", zeros.clone()),
    ]);
    let sub = tgz(&[
        (
            "sub/Chart.yaml",
            b"apiVersion: v2\nname: sub\nversion: 0.1.0\n".to_vec(),
        ),
        ("sub/zeros.bin", zeros),
    ]);
    let nested = tgz(&[
        ("bomb/Chart.yaml", chart_yaml),
        ("bomb/charts/a.tgz", sub.clone()),
        ("bomb/charts/b.tgz", sub.clone()),
        ("bomb/charts/c.tgz", sub),
    ]);
    assert!(flat.len() < 1024 * 1024 && nested.len() < 1024 * 1024);
    for (name, bytes) in [("flat.tgz", flat), ("nested.tgz", nested)] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("archive");
        let error = Chart::load(&path).expect_err("refused");
        assert!(
            error
                .message()
                .contains("unpacks to more than 104857600 bytes"),
            "{name}: {error}"
        );
    }
}

/// A loop that prints nothing never reaches the output limit: the render's time limit or
/// its cancel flag stops it (with neither, its budget of steps does).
#[test]
fn a_template_that_never_ends_stops_at_its_time_limit_or_when_cancelled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let endless = "{{- range until 1000000 }}{{- range until 1000000 }}{{- end }}{{- end }}";
    let loaded = Chart::load(&chart_with(dir.path(), "endless", endless, "")).expect("loads");
    let render = |options: Options| {
        let started = std::time::Instant::now();
        let error = fleet_helm::render(&loaded, &serde_json::json!({}), &options)
            .expect_err("stops")
            .to_string();
        (error, started.elapsed())
    };
    let (error, took) = render(Options {
        time_limit: Some(std::time::Duration::from_secs(1)),
        ..Options::default()
    });
    assert!(error.contains("rendering stopped after 1s"), "{error}");
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");

    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let (error, took) = render(Options {
        cancel: Some(cancel),
        ..Options::default()
    });
    canceller.join().expect("the canceller");
    assert!(error.contains("rendering was cancelled"), "{error}");
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_template_printing_a_gigabyte_stops_at_the_output_limit() {
    let started = std::time::Instant::now();
    let error = render_error("{{ range until 1000000 }}{{ repeat 1000 \"x\" }}{{ end }}");
    assert!(error.contains("output exceeds 67108864 bytes"), "{error}");
    let error = render_error("{{ repeat 1073741824 \"x\" }}");
    assert!(error.contains("more than a render may print"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
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
    let loaded = Chart::load(&root).expect("loads");
    let error = fleet_helm::render(&loaded, &serde_json::json!({}), &Options::default())
        .expect_err("invalid values");
    // Helm 4 printed exactly this for the same chart.
    assert_eq!(
        error.message(),
        "values don't meet the specifications of the schema(s) in the following chart(s):\nsch:\n- at '': missing property 'image'\n- at '/replicas': got string, want integer\n"
    );
    let fixed = serde_json::json!({"replicas": 2, "image": "nginx"});
    assert!(fleet_helm::render(&loaded, &fixed, &Options::default()).is_ok());
    let skipped = Options {
        skip_schema_validation: true,
        ..Options::default()
    };
    assert!(fleet_helm::render(&loaded, &serde_json::json!({}), &skipped).is_ok());
}

/// What real Helm 4.3.1 answered for each range and `--kube-version` (run by hand):
/// `None` renders, `Some` is its error.
#[test]
fn a_chart_s_kube_version_range_is_checked_as_helm_4_checks_it() {
    let cases = [
        (">= 1.26.0", "v1.27.0", None),
        (">= 1.26.0", "1.26", None),
        (
            ">= 1.26.0",
            "v1.25.0",
            Some("chart requires kubeVersion: >= 1.26.0 which is incompatible with Kubernetes v1.25.0"),
        ),
        (">= 1.26.0", "v1.27.0-gke.1", None),
        ("= 1.27.0", "v1.27.0-gke.1", None),
        (
            "< 1.27.0",
            "v1.27.0-gke.1",
            Some("chart requires kubeVersion: < 1.27.0 which is incompatible with Kubernetes v1.27.0-gke.1"),
        ),
        (
            "not a range",
            "v1.37.0",
            Some("chart requires kubeVersion: not a range which is incompatible with Kubernetes v1.37.0"),
        ),
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let root = chart_with(dir.path(), "c", "kind: ConfigMap\n", "");
    for (range, kube_version, wanted) in cases {
        std::fs::write(
            root.join("Chart.yaml"),
            format!("apiVersion: v2\nname: c\nversion: 0.1.0\nkubeVersion: {range:?}\n"),
        )
        .expect("chart");
        let loaded = Chart::load(&root).expect("loads");
        let options = Options {
            release_name: "r".into(),
            kube_version: kube_version.into(),
            ..Options::default()
        };
        let answer = fleet_helm::render(&loaded, &serde_json::json!({}), &options)
            .err()
            .map(|e| e.to_string());
        assert_eq!(answer.as_deref(), wanted, "{range} on {kube_version}");
    }
}

#[test]
fn the_first_error_is_the_one_helm_meets_first() {
    // Helm runs a chart's templates deepest path first, then in reverse order of name:
    // a subchart's before the chart's own, `templates/deep/` before `templates/`, `b`
    // before `a`. Each expected message is what Helm 4.3.1 printed for the same chart.
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("order");
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
        std::fs::write(path, text).expect("written");
    };
    write(
        "Chart.yaml",
        "apiVersion: v2\nname: order\nversion: 0.1.0\n",
    );
    write(
        "charts/sub/Chart.yaml",
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    );
    for (path, who) in [
        ("templates/a.yaml", "a"),
        ("templates/b.yaml", "b"),
        ("templates/deep/c.yaml", "deep"),
        ("charts/sub/templates/s.yaml", "sub"),
    ] {
        write(path, &format!("{{{{ fail \"{who} fails\" }}}}\n"));
    }
    let first_error = || failure_of(&root);
    assert_eq!(
        first_error(),
        "execution error at (order/charts/sub/templates/s.yaml:1:3): sub fails"
    );
    std::fs::remove_dir_all(root.join("charts")).expect("removed");
    assert_eq!(
        first_error(),
        "execution error at (order/templates/deep/c.yaml:1:3): deep fails"
    );
    std::fs::remove_dir_all(root.join("templates/deep")).expect("removed");
    assert_eq!(
        first_error(),
        "execution error at (order/templates/b.yaml:1:3): b fails"
    );
}
