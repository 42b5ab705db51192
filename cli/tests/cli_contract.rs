//! The `fleet` command-line contract: kustomize build, test, apply, lint, crds, exit codes,
//! and clear errors for bad input.

mod common;

use common::{documents, fleet, fleet_ok, names, workspace};
use serde_json::json;

/// How long the controller may take to write a deployment.
const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

fn bad(dir: &str) -> String {
    workspace()
        .join("testdata/bad")
        .join(dir)
        .to_string_lossy()
        .to_string()
}

fn build_error(dir: &str) -> String {
    let root = bad("");
    let output = fleet(&["kustomize", "build", &bad(dir), "--root", &root]);
    assert_eq!(output.status.code(), Some(1), "input errors exit 1");
    assert!(output.stdout.is_empty(), "nothing half-printed on error");
    String::from_utf8_lossy(&output.stderr).to_string()
}

#[test]
fn bad_kustomize_input_names_file_line_and_field() {
    assert!(build_error("malformed").contains("malformed/cm.yaml:7: invalid YAML"));
    assert!(build_error("patch-nothing")
        .contains("patch-nothing/kustomization.yaml: field `patches[0]`: no matches for Id ConfigMap.v1.[noGrp]/does-not-exist.[noNs]"));
    assert!(build_error("cycle/a").contains("cycle in resources: cycle/a -> cycle/b -> cycle/a"));
    assert!(build_error("missing-file")
        .contains("missing-file/kustomization.yaml: cannot read `nowhere.yaml`"));
    assert!(build_error("escape")
        .contains("path `../../../../../../etc/passwd` leaves the repository root"));
    assert!(build_error("duplicate-id").contains(
        "duplicate-id/cms.yaml: may not add resource with an already registered id: ConfigMap/same"
    ));
    assert!(build_error("unknown-field").contains(
        "unknown-field/kustomization.yaml:2: field `namePrefx`: field `namePrefx` is not a kustomization field kustomize v5 knows"
    ));
}

#[test]
fn lint_is_strict_and_test_only_warns() {
    let output = fleet(&["lint", &bad("bad-fleet-yaml")]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "app/fleet.yaml:7: field `targetCustomizations[0].helm.valuez`: unknown field"
        ),
        "{stderr}"
    );
    // Its only target is the customization (as in Fleet, no default target is added then).
    let output = fleet(&[
        "test",
        &format!("{}/app", bad("bad-fleet-yaml")),
        "-l",
        "env=dev",
    ]);
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown field"));
    let docs = documents(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(docs[0]["metadata"]["namespace"], "x");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(fleet(&["kustomize", "build"]).status.code(), Some(2));
    assert_eq!(fleet(&["no-such-command"]).status.code(), Some(2));
    assert_eq!(
        fleet(&["test", ".", "-l", "novalue"]).status.code(),
        Some(2)
    );
}

#[test]
fn checked_in_crds_equal_the_generated_ones() {
    let dir = workspace().join("deploy/crds");
    fleet_ok(&["crds", "--output-dir", &dir.to_string_lossy(), "--check"]);
    let all = fleet_ok(&["crds"]);
    let crds = documents(&all);
    assert_eq!(
        names(&crds),
        vec![
            "gitrepos.fleet.cattle.io",
            "bundles.fleet.cattle.io",
            "bundledeployments.fleet.cattle.io",
            "clusters.fleet.cattle.io",
            "clustergroups.fleet.cattle.io",
            "contents.fleet.cattle.io",
            "clusterregistrationtokens.fleet.cattle.io",
            "clusterregistrations.fleet.cattle.io",
            "policies.fleet.cattle.io",
            "helmops.fleet.cattle.io",
            "schedules.fleet.cattle.io",
            "gitreporestrictions.fleet.cattle.io",
            "bundlenamespacemappings.fleet.cattle.io"
        ]
    );
    let columns = &crds[0]["spec"]["versions"][0]["additionalPrinterColumns"];
    let column_names: Vec<&str> = columns
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        column_names,
        vec!["Repo", "Commit", "BundleDeployments-Ready", "Status"]
    );
}

#[test]
fn apply_writes_fleet_bundles_for_every_directory() {
    let examples = common::shared_real().join("fleet-examples");
    let out = tempfile::tempdir().expect("tempdir");
    let file = out.path().join("bundles.yaml");
    fleet_ok(&[
        "apply",
        "-n",
        "fleet-local",
        "-o",
        &file.to_string_lossy(),
        "examples",
        "multi-cluster/manifests",
        "single-cluster/kustomize",
        "--root",
        &examples.to_string_lossy(),
    ]);
    let bundles = documents(&std::fs::read_to_string(&file).expect("output"));
    assert_eq!(
        names(&bundles),
        vec![
            "examples-multi-cluster-manifests",
            "examples-single-cluster-kustomize"
        ]
    );
    let first = &bundles[0];
    assert_eq!(first["apiVersion"], "fleet.cattle.io/v1alpha1");
    assert_eq!(first["kind"], "Bundle");
    assert_eq!(first["metadata"]["namespace"], "fleet-local");
    assert_eq!(first["spec"]["namespace"], "fleet-mc-manifest-example");
    assert_eq!(first["spec"]["targets"][2]["name"], "prod");
    let files: Vec<&str> = first["spec"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        files.contains(&"overlays/scale3/frontend-deployment_patch.yaml"),
        "{files:?}"
    );
    // fleet.yaml configures the bundle and is not one of its resources, as in Fleet.
    assert!(!files.contains(&"fleet.yaml"), "{files:?}");
}

#[test]
fn kustomize_build_matches_kubectl_on_a_fixture() {
    let dir = workspace().join("testdata/kustomize/38-overlay-chain");
    let root = workspace().join("testdata/kustomize");
    let ours = fleet_ok(&[
        "kustomize",
        "build",
        &dir.to_string_lossy(),
        "--root",
        &root.to_string_lossy(),
    ]);
    let kubectl = std::process::Command::new(fleet_testkit::real_tool("kubectl137"))
        .arg("kustomize")
        .arg(&dir)
        .output()
        .expect("kubectl 1.37");
    assert_eq!(ours, String::from_utf8_lossy(&kubectl.stdout));
}

#[test]
fn formatting_only_edits_keep_the_content_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    std::fs::write(
        a.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: v\n  j: w\n",
    )
    .expect("write");
    std::fs::write(b.join("cm.yaml"), "# reformatted\nkind: ConfigMap\napiVersion: \"v1\"\nmetadata: {name: x}\ndata: {j: w,   k: 'v'}\n").expect("write");
    let id = |dir: &std::path::Path| {
        let root = fleet_renderer::RepoRoot::new(dir).expect("root");
        let bundle = &fleet_renderer::bundle::discover(&root, &[]).expect("discover")[0];
        fleet_renderer::bundle::render(&root, bundle, "x", &Default::default(), &Default::default())
            .expect("render")
            .id
    };
    assert_eq!(id(&a), id(&b));
    assert!(id(&a).starts_with("s-"));
}

#[test]
fn bash_completion_completes_commands_and_flags() {
    let complete = |words: &str| {
        let script = format!(
            "source <({fleet} completions bash)\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\nCOMP_LINE=\"{words}\"; COMP_POINT=${{#COMP_LINE}}\n_fleet fleet \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
            fleet = env!("CARGO_BIN_EXE_fleet")
        );
        let output = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .expect("bash runs");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert_eq!(complete("fleet st"), "status");
    assert_eq!(complete("fleet status --co"), "--color");
    assert_eq!(complete("fleet up --exit"), "--exit-when-ready");
}

#[test]
fn read_commands_print_the_same_objects_as_json_and_yaml() {
    let examples = common::shared_real().join("fleet-examples/multi-cluster/manifests");
    let examples = examples.display().to_string();
    let kustomization = common::workspace().join("testdata/kustomize/38-overlay-chain");
    let root = common::workspace().join("testdata/kustomize");
    let (kustomization, root) = (
        kustomization.display().to_string(),
        root.display().to_string(),
    );
    let chart = common::workspace().join("testdata/demo/helm-chart/chart");
    let chart = chart.display().to_string();
    let commands: [Vec<&str>; 3] = [
        vec!["test", &examples, "-l", "env=prod"],
        vec!["kustomize", "build", &kustomization, "--root", &root],
        vec!["helm", "template", "web", &chart],
    ];
    for command in commands {
        let text = common::documents(&common::fleet_ok(&command));
        assert!(!text.is_empty(), "{command:?} printed objects");
        let with = |format: &str| {
            let mut args = command.clone();
            args.extend(["-o", format]);
            common::fleet_ok(&args)
        };
        let json: Vec<serde_json::Value> = serde_json::from_str(&with("json")).expect("JSON list");
        let yaml: Vec<serde_json::Value> =
            serde_yaml_ng::from_str(&with("yaml")).expect("YAML list");
        assert_eq!(json, text, "{command:?} -o json");
        assert_eq!(yaml, text, "{command:?} -o yaml");
    }
}

#[test]
fn ci_runs_exactly_the_readme_test_command() {
    let readme = std::fs::read_to_string(common::workspace().join("README.md")).expect("README");
    let command = readme
        .lines()
        .find(|l| l.starts_with("cargo fmt --check && "))
        .expect("the README gives the test command on a line of its own");
    let ci = std::fs::read_to_string(common::workspace().join(".ci/run")).expect(".ci/run");
    let last = ci
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .expect(".ci/run is not empty");
    assert_eq!(last, command, ".ci/run ends with the README's test command");
}

#[test]
fn a_reader_that_leaves_early_is_no_error() {
    let kustomization = common::workspace().join("testdata/kustomize/46-fifty-resource-overlay");
    let root = common::workspace().join("testdata/kustomize");
    let (kustomization, root) = (
        kustomization.display().to_string(),
        root.display().to_string(),
    );
    for args in [
        vec!["completions", "bash"],
        vec!["kustomize", "build", &kustomization, "--root", &root],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fleet"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("fleet starts");
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("fleet ends");
        assert!(output.status.success(), "{args:?}: {:?}", output.status);
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{args:?}");
    }
}

#[test]
fn lint_reports_as_json_with_the_same_problems() {
    let dir = bad("bad-fleet-yaml");
    let output = common::fleet(&["lint", &dir, "-o", "json"]);
    assert_eq!(output.status.code(), Some(1), "problems fail the run");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    assert_eq!(report["bundles"], 1);
    let problems = report["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 1);
    let problem = problems[0].as_str().unwrap_or_default();
    assert!(
        problem.starts_with("app/fleet.yaml:7: field `targetCustomizations[0].helm.valuez`"),
        "{problem}"
    );
}

/// A repository with one directory declared twice by a driven scan (two options files)
/// and one with a fleet.yaml.
fn driven_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().expect("tempdir");
    let write = |path: &str, text: &str| {
        let path = repo.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
    );
    write("app/dev.yaml", "defaultNamespace: dev-ns\n");
    write("app/prod.yaml", "defaultNamespace: prod-ns\n");
    write("other/fleet.yaml", "defaultNamespace: other\n");
    write(
        "other/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
    );
    repo
}

fn resource_names(bundle: &serde_json::Value) -> Vec<&str> {
    bundle["spec"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect()
}

#[test]
fn apply_driven_scan_names_bundles_as_fleet_and_leaves_its_options_file_out() {
    let repo = driven_repo();
    let root = repo.path().to_string_lossy().to_string();
    let out = fleet_ok(&[
        "apply",
        "--driven-scan",
        "-o",
        "-",
        "--root",
        &root,
        "repo",
        "app:dev.yaml",
        "app:prod.yaml",
        "other",
    ]);
    let bundles = documents(&out);
    // Fleet names a driven bundle after its directory and its options file's stem.
    assert_eq!(
        names(&bundles),
        vec!["repo-app-dev", "repo-app-prod", "repo-other"]
    );
    assert_eq!(bundles[0]["spec"]["defaultNamespace"], "dev-ns");
    assert_eq!(bundles[1]["spec"]["defaultNamespace"], "prod-ns");
    // Each leaves its own options file out and keeps the other's, as Fleet does
    // (integrationtests/cli/apply/apply_test.go, "multiple_paths"); the agent deploys
    // nothing from it, as it has no kind.
    assert_eq!(resource_names(&bundles[0]), vec!["cm.yaml", "prod.yaml"]);
    assert_eq!(resource_names(&bundles[1]), vec!["cm.yaml", "dev.yaml"]);
    // -b: another options file for a scanned directory, left out of the bundle too.
    let out = fleet_ok(&[
        "apply", "-o", "-", "--root", &root, "-b", "dev.yaml", "repo", "other",
    ]);
    let bundles = documents(&out);
    assert_eq!(names(&bundles), vec!["repo-other"]);
    assert_eq!(bundles[0]["spec"]["defaultNamespace"], "other");
}

/// Fleet's names for driven bundles (integrationtests/cli/apply/apply_test.go, driven
/// scans on its `assets` tree), restated: the options path without its extension is part
/// of the name whatever the file is called, and names past 53 characters are cut with a
/// hash as Helm release names are.
#[test]
fn driven_bundles_are_named_as_fleets_tests_name_them() {
    let repo = tempfile::tempdir().expect("tempdir");
    let write = |path: &str, text: &str| {
        let path = repo.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";
    write("driven_fleet_yaml_subfolder/helm/cm.yaml", cm);
    write(
        "driven_fleet_yaml_subfolder/helm/test/fleet.yaml",
        "defaultNamespace: t\n",
    );
    write("driven2/kustomize/cm.yaml", cm);
    write("driven2/kustomize/fleetDev.yaml", "defaultNamespace: d\n");
    let root = repo.path().to_string_lossy().to_string();
    let cases = [
        (
            "driven_fleet_yaml_subfolder/helm",
            "assets-driven-fleet-yaml-subfolder-helm-f49dc35c",
        ),
        (
            "driven_fleet_yaml_subfolder/helm:test/fleet.yaml",
            "assets-driven-fleet-yaml-subfolder-helm-test-fl-b676f",
        ),
        (
            "driven2/kustomize:fleetDev.yaml",
            "assets-driven2-kustomize-fleetdev-2946f474",
        ),
    ];
    for (declared, expected) in cases {
        let out = fleet_ok(&[
            "apply",
            "--driven-scan",
            "-o",
            "-",
            "--root",
            &root,
            "assets",
            declared,
        ]);
        assert_eq!(names(&documents(&out)), vec![expected], "{declared}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_to_a_live_cluster_writes_bundles_and_prunes_those_gone() {
    let hub = fleet_testkit::FleetHub::start(&[]).await;
    let kubeconfig = hub.kubeconfig("local").to_string_lossy().to_string();
    let repo = driven_repo();
    let root = repo.path().to_string_lossy().to_string();
    let apply = |declared: &[&str]| {
        let mut args = vec![
            "apply",
            "--kubeconfig",
            &kubeconfig,
            "--root",
            &root,
            "--driven-scan",
            "repo",
        ];
        args.extend(declared);
        fleet_ok(&args)
    };
    let listed = |kubectl: &fleet_testkit::Kubectl| {
        let run = kubectl.run_blocking(&["get", "bundles", "-n", "fleet-local", "-o", "name"]);
        run.stdout
    };
    let kubectl = hub.hub.kubectl("local");
    let said = apply(&["app:dev.yaml", "app:prod.yaml"]);
    assert!(
        said.contains("bundle fleet-local/repo-app-prod applied"),
        "{said}"
    );
    assert_eq!(
        listed(&kubectl),
        "bundle.fleet.cattle.io/repo-app-dev\nbundle.fleet.cattle.io/repo-app-prod\n"
    );
    let said = apply(&["app:dev.yaml"]);
    assert!(
        said.contains("bundle fleet-local/repo-app-prod deleted: no longer found"),
        "{said}"
    );
    assert_eq!(listed(&kubectl), "bundle.fleet.cattle.io/repo-app-dev\n");

    // A Bundle a HelmOp made is not overwritten, as Fleet's `fleet apply` refuses it.
    let helmop_bundle = r#"{"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
        "metadata": {"name": "repo-app-prod", "namespace": "fleet-local"},
        "spec": {"helm": {"repo": "https://charts.example.com", "chart": "app"},
                 "helmOpOptions": {"helmOpSecretName": "creds"}}}"#;
    kubectl
        .run_with(&["apply", "-f", "-"], helmop_bundle)
        .await
        .success();
    let refused = fleet(&[
        "apply",
        "--kubeconfig",
        &kubeconfig,
        "--root",
        &root,
        "--driven-scan",
        "repo",
        "app:prod.yaml",
    ]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("a helmOps bundle with name \"repo-app-prod\" already exists"),
        "{said}"
    );
}

/// A temporary directory holding the bundle `app`: one ConfigMap, and `options` as its
/// fleet.yaml.
fn bundle_directory(options: &str) -> tempfile::TempDir {
    let work = tempfile::tempdir().expect("tempdir");
    let app = work.path().join("app");
    std::fs::create_dir_all(&app).expect("mkdir");
    std::fs::write(app.join("fleet.yaml"), options).expect("write");
    std::fs::write(
        app.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n",
    )
    .expect("write");
    work
}

const CUSTOMIZED: &str = "targetCustomizations:
- name: dev
  clusterSelector: {matchLabels: {env: dev}}
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  defaultNamespace: prod-ns
";

/// A BundleDeployment whose agent reported a changed field.
const MODIFIED: &str = r#"{"status":{"nonModified":false,"modifiedStatus":[{"apiVersion":"v1","kind":"ConfigMap","namespace":"app","name":"settings","paths":["/data/mode"],"patch":"{\"data\":{\"mode\":\"hacked\"}}"}]}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_deploy_dry_run_bundlediff_and_dump_against_a_live_hub() {
    let hub = fleet_testkit::FleetHub::start(&[]).await;
    for (name, env) in [("dev", "dev"), ("prod", "prod")] {
        fleet_testkit::create_cluster(
            &hub.client,
            "fleet-local",
            name,
            serde_json::json!({"env": env}),
        )
        .await
        .expect("cluster");
    }
    let kubeconfig = hub.kubeconfig("local").to_string_lossy().to_string();
    let work = bundle_directory(CUSTOMIZED);
    let path = |name: &str| work.path().join(name).to_string_lossy().to_string();
    let root = work.path().to_string_lossy().to_string();
    fleet_ok(&[
        "apply",
        "-o",
        &path("bundle.yaml"),
        "--root",
        &root,
        "demo",
        "app",
    ]);

    // fleet target: the Contents, a deployment per cluster with its customization, and, on
    // standard error, how each cluster was judged.
    let targeted = common::fleet(&[
        "target",
        "--kubeconfig",
        &kubeconfig,
        "--bundle-file",
        &path("bundle.yaml"),
        "--dump-input-list",
        "-o",
        &path("bd.yaml"),
    ]);
    let judged = String::from_utf8_lossy(&targeted.stderr);
    assert!(targeted.status.success(), "{judged}");
    let judged: Vec<serde_json::Value> =
        fleet_files::yaml::parse_one(&judged, "stderr").expect("a YAML list");
    let prod = judged
        .iter()
        .find(|input| input["Cluster"] == "fleet-local/prod")
        .expect("prod judged");
    assert_eq!(prod["Bundle"], "fleet-local/demo-app");
    assert_eq!(prod["Targeted"], true);
    assert_eq!(prod["Customization"], "prod");
    let text = std::fs::read_to_string(path("bd.yaml")).expect("bd.yaml");
    let items = documents(&text);
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    // A Content per variant: the release each records names its namespace.
    assert_eq!(
        kinds,
        ["Content", "Content", "BundleDeployment", "BundleDeployment"]
    );
    let prod = &items[3];
    assert_eq!(prod["metadata"]["namespace"], "cluster-fleet-local-prod");
    assert_eq!(prod["spec"]["options"]["defaultNamespace"], "prod-ns");

    // fleet deploy --dry-run: what each deployment would deploy.
    let printed = fleet_ok(&["deploy", "--input-file", &path("bd.yaml"), "--dry-run"]);
    assert!(
        printed.contains(
            "# dry run: BundleDeployment cluster-fleet-local-prod/demo-app: 1 resource(s), namespace prod-ns"
        ),
        "{printed}"
    );
    assert!(printed.contains("name: settings"), "{printed}");
    let refused = fleet(&["deploy", "--input-file", &path("bd.yaml")]);
    assert!(!refused.status.success(), "deploying is the agent's work");

    // fleet bundlediff: the changes an agent reported.
    let kubectl = hub.hub.kubectl("local");
    let deployment = serde_json::to_string(prod).expect("json");
    kubectl
        .run(&["create", "namespace", "cluster-fleet-local-prod"])
        .await
        .success();
    kubectl
        .run_with(&["apply", "-f", "-"], &deployment)
        .await
        .success();
    kubectl
        .patch(
            "bundledeployment demo-app -n cluster-fleet-local-prod --subresource=status",
            "merge",
            MODIFIED,
        )
        .await
        .success();
    let diff = fleet_ok(&["bundlediff", "--kubeconfig", &kubeconfig]);
    let rule = "\u{2501}".repeat(66);
    assert_eq!(
        diff,
        format!("Bundle: demo-app\nBundleDeployments with diffs: 1\n{rule}\n\n  BundleDeployment: cluster-fleet-local-prod/demo-app\n  Modified Resources (1):\n    Resource: ConfigMap.v1 app/settings\n    Status: Modified\n    Patch:\n      {{\n        \"data\": {{\n          \"mode\": \"hacked\"\n        }}\n      }}\n")
    );
    // The compare patches are merged with the Bundle's own: it must exist.
    let bundle_text = std::fs::read_to_string(path("bundle.yaml")).expect("bundle.yaml");
    kubectl
        .run_with(&["apply", "-f", "-"], &bundle_text)
        .await
        .success();
    let snippet = fleet_ok(&[
        "bundlediff",
        "--kubeconfig",
        &kubeconfig,
        "--fleet-yaml",
        "--bundle-deployment",
        "demo-app",
        "-n",
        "cluster-fleet-local-prod",
    ]);
    let snippet: serde_json::Value = serde_yaml_ng::from_str(&snippet).expect("YAML");
    assert_eq!(
        snippet,
        serde_json::json!({"diff": {"comparePatches": [{"apiVersion": "v1", "kind": "ConfigMap",
            "name": "settings", "namespace": "app",
            "operations": [{"op": "remove", "path": "/data/mode"}]}]}})
    );

    // fleet dump: an archive of Fleet's objects (and of events, where there are some).
    fleet_ok(&["dump", "--kubeconfig", &kubeconfig, "-p", &path("dump.tgz")]);
    let listing = std::process::Command::new("tar")
        .args(["tzf", &path("dump.tgz")])
        .output()
        .expect("tar");
    let listing = String::from_utf8_lossy(&listing.stdout);
    // fleet-local by default: its Clusters, and its Bundles' deployments wherever they are.
    for entry in [
        "clusters_fleet-local_dev",
        "bundles_fleet-local_demo-app",
        "bundledeployments_cluster-fleet-local-prod_demo-app",
    ] {
        assert!(listing.lines().any(|l| l == entry), "{entry} in {listing}");
    }
}

/// A bundle of one ConfigMap for the dev clusters, copying the Secret `creds` downstream,
/// deployed under the service account `tenant`.
const WITH_SURROUNDINGS: &str = "defaultNamespace: app
serviceAccount: tenant
downstreamResources:
- kind: Secret
  name: creds
targetCustomizations:
- name: dev
  clusterSelector: {matchLabels: {env: dev}}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_previews_the_deployments_the_controller_writes_under_policies_and_downstream_resources(
) {
    let hub = fleet_testkit::FleetHub::start(&[]).await;
    fleet_testkit::create_cluster(&hub.client, "fleet-local", "dev", json!({"env": "dev"}))
        .await
        .expect("cluster");
    let kubectl = hub.hub.kubectl("local");
    let apply = |yaml: String| {
        let kubectl = &kubectl;
        async move {
            kubectl
                .run_with(&["apply", "-f", "-"], &yaml)
                .await
                .success()
        }
    };
    let secret = |value: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: fleet-local}}\nstringData: {{token: {value}}}\n")
    };
    let policy = |account: &str| {
        format!("apiVersion: fleet.cattle.io/v1alpha1\nkind: Policy\nmetadata: {{name: tenants, namespace: fleet-local}}\nrequireServiceAccount: true\nallowedServiceAccounts: [{account}]\n")
    };
    apply(secret("one")).await;
    apply(policy("tenant")).await;

    let kubeconfig = hub.kubeconfig("local").to_string_lossy().to_string();
    let work = bundle_directory(WITH_SURROUNDINGS);
    let path = |name: &str| work.path().join(name).to_string_lossy().to_string();
    let root = work.path().to_string_lossy().to_string();
    let bundle = ["--root", &root, "demo", "app"];
    fleet_ok(&[&["apply", "--kubeconfig", &kubeconfig][..], &bundle].concat());
    fleet_ok(&[&["apply", "-o", &path("bundle.yaml")][..], &bundle].concat());
    let target = || {
        common::fleet(&[
            "target",
            "--kubeconfig",
            &kubeconfig,
            "--bundle-file",
            &path("bundle.yaml"),
        ])
    };
    let previewed = || {
        let output = target();
        let text = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let deployments: Vec<serde_json::Value> = documents(&text)
            .into_iter()
            .filter(|d| d["kind"] == "BundleDeployment")
            .collect();
        assert_eq!(deployments.len(), 1, "{text}");
        deployments[0].clone()
    };

    // The oracle: the controller itself, deploying the same bundle.
    let data = tempfile::tempdir().expect("tempdir");
    let ctx = fleet_controller::Context::new(hub.client.clone(), data.path());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(fleet_controller::run(ctx, async {
        let _ = stopped.await;
    }));
    let deployments: kube::Api<fleet_api::BundleDeployment> =
        kube::Api::namespaced(hub.client.clone(), "cluster-fleet-local-dev");
    let written = |other_than: Option<String>| {
        let deployments = &deployments;
        fleet_testkit::eventually("the controller's deployment", WAIT, move || {
            let other_than = other_than.clone();
            async move {
                let written = deployments.get("demo-app").await.ok()?;
                let id = written.spec.deployment_id.clone()?;
                (Some(&id) != other_than.as_ref()).then_some(written)
            }
        })
    };
    let first = written(None).await;
    let preview = previewed();
    assert_eq!(
        preview["spec"]["deploymentID"].as_str(),
        first.spec.deployment_id.as_deref()
    );
    // The Policies require a service account: the agent creates no namespace, as the
    // controller marks it.
    let annotations = serde_json::to_value(&first.metadata.annotations).expect("json");
    assert_eq!(preview["metadata"]["annotations"], annotations);
    assert!(!annotations.is_null(), "the controller marks it");

    // A changed Secret is a new deployment, for both.
    apply(secret("two")).await;
    let second = written(first.spec.deployment_id.clone()).await;
    assert_eq!(
        previewed()["spec"]["deploymentID"].as_str(),
        second.spec.deployment_id.as_deref()
    );

    // Refused by the Policies: no preview, and why.
    apply(policy("someone-else")).await;
    let output = target();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        said.contains("bundle fleet-local/demo-app") && said.contains("refused by the Policies"),
        "{said}"
    );
    assert!(
        said.contains("serviceAccount tenant is not allowed"),
        "{said}"
    );
    let _ = stop.send(());
    let _ = controller.await;
    // A cluster that does not serve Policies has none: the preview is made again.
    kubectl
        .run(&["delete", "crd", "policies.fleet.cattle.io"])
        .await
        .success();
    assert_eq!(
        previewed()["spec"]["deploymentID"].as_str(),
        second.spec.deployment_id.as_deref()
    );
}
