//! Our Helm engine against real Helm: every case of testdata/charts/cases.txt must render
//! exactly as the golden that real Helm 4 produced (testdata/charts/make-goldens.sh), but for
//! the names podinfo's test hooks draw with randAlphaNum.

use fleet_helm::{Chart, Options, ValueOptions};

/// podinfo's test pods are named with `randAlphaNum 5`, in Helm as here.
fn mask_random(text: &str) -> String {
    let random = regex::Regex::new(r"-test-[a-z0-9]{5}\n").expect("valid regex");
    random.replace_all(text, "-test-RANDOM\n").into_owned()
}

fn render_case(chart_path: &str, release: &str, namespace: &str, values_files: &[&str]) -> String {
    let root = fleet_testkit::workspace_root();
    let loaded =
        Chart::load(&root.join(chart_path)).unwrap_or_else(|e| panic!("{chart_path}: {e}"));
    let user = ValueOptions {
        value_files: values_files.iter().map(|file| root.join(file)).collect(),
        ..ValueOptions::default()
    }
    .merge()
    .unwrap_or_else(|e| panic!("{chart_path}: {e}"));
    let options = Options {
        release_name: release.into(),
        namespace: namespace.into(),
        ..Options::default()
    };
    fleet_helm::render(&loaded, &user, &options)
        .unwrap_or_else(|e| panic!("{chart_path}: {e}"))
        .to_template_output(false)
}

#[test]
fn every_chart_renders_as_real_helm_renders_it() {
    let root = fleet_testkit::workspace_root();
    let cases = std::fs::read_to_string(root.join("testdata/charts/cases.txt")).expect("cases");
    let mut checked = 0;
    for line in cases
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, chart_path, release, namespace, values_files @ ..] = fields.as_slice() else {
            panic!("bad case line: {line}");
        };
        if chart_path.starts_with("../shared") && !root.join(chart_path).exists() {
            eprintln!("skipping {name}: {chart_path} is not on this machine");
            continue;
        }
        let golden =
            std::fs::read_to_string(root.join(format!("testdata/charts/goldens/{name}.yaml")))
                .expect("golden");
        let ours = render_case(chart_path, release, namespace, values_files);
        assert_eq!(
            mask_random(&ours),
            mask_random(&golden),
            "case {name} differs from real Helm"
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} charts were compared");
}
