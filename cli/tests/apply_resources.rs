//! How `fleet apply` stores a bundle's files in the Bundle, restated from Rancher Fleet
//! v0.16 (`internal/bundlereader/loaddirectory.go`): UTF-8 text as it is, anything else
//! gzipped and base64-encoded (`base64+gz`), which `base64 -d | gzip -d` turns back into
//! the file's bytes.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{documents, fleet_ok};
use fleet_testkit::write_file;

/// `content` decoded by the system's `base64` and `gzip`.
fn decoded(content: &str) -> Vec<u8> {
    let mut shell = Command::new("sh")
        .args(["-c", "base64 -d | gzip -d"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh runs");
    shell
        .stdin
        .take()
        .expect("stdin")
        .write_all(content.as_bytes())
        .expect("written");
    let output = shell.wait_with_output().expect("decoded");
    assert!(output.status.success(), "base64 -d | gzip -d failed");
    output.stdout
}

#[test]
fn text_is_kept_and_other_files_are_gzipped_and_base64_encoded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let binary: Vec<u8> = vec![0xff, 0xfe, 0x00, 0x01, b'a', 0x80];
    write_file(
        &dir.path().join("app/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    std::fs::write(dir.path().join("app/blob.bin"), &binary).expect("binary file");
    let root = dir.path().to_string_lossy().into_owned();
    let bundles = documents(&fleet_ok(&[
        "apply", "--root", &root, "-o", "-", "repo", "app",
    ]));
    let resources = bundles[0]["spec"]["resources"]
        .as_array()
        .expect("resources");
    let by_name = |name: &str| {
        resources
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {resources:?}"))
    };
    let text = by_name("cm.yaml");
    assert!(text.get("encoding").is_none(), "{text}");
    assert!(text["content"]
        .as_str()
        .expect("content")
        .contains("kind: ConfigMap"));
    let blob = by_name("blob.bin");
    assert_eq!(blob["encoding"], "base64+gz");
    assert_eq!(decoded(blob["content"].as_str().expect("content")), binary);
}

/// Restated from Fleet's `TestGetContent_InternalSymlinkAllowed` and
/// `TestGetContent_EscapingSymlinkRejected` (`internal/bundlereader/loaddirectory_test.go`):
/// a link to a file inside the bundle is a file of its own name with the target's
/// contents; a link whose target lies outside the bundle (even inside the repository) is
/// refused without reading it.
#[test]
fn links_inside_the_bundle_are_followed_and_links_out_of_it_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: real\n";
    write_file(&dir.path().join("repo/app/real.yaml"), config);
    std::os::unix::fs::symlink("real.yaml", dir.path().join("repo/app/link.yaml")).expect("link");
    let root = dir.path().join("repo").to_string_lossy().into_owned();
    let bundles = documents(&fleet_ok(&[
        "apply", "--root", &root, "-o", "-", "repo", "app",
    ]));
    let resources = bundles[0]["spec"]["resources"]
        .as_array()
        .expect("resources");
    let names: Vec<&str> = resources
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["link.yaml", "real.yaml"]);
    assert!(resources.iter().all(|r| r["content"] == config));

    write_file(&dir.path().join("secret.txt"), "sensitive content");
    write_file(&dir.path().join("repo/other/o.yaml"), config);
    for (link, target) in [
        ("evil.txt", dir.path().join("secret.txt")),
        ("sibling", dir.path().join("repo/other")),
    ] {
        let path = dir.path().join("repo/app").join(link);
        std::os::unix::fs::symlink(&target, &path).expect("link");
        let output = common::fleet(&["apply", "--root", &root, "-o", "-", "repo", "app"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{link} accepted");
        assert!(
            stderr.contains(&format!("app/{link}")) && stderr.contains("escapes bundle directory"),
            "{link}: {stderr}"
        );
        assert!(!stderr.contains("sensitive content"));
        std::fs::remove_file(&path).expect("unlinked");
    }
}

/// Restated from Rancher Fleet v0.16 `internal/bundlereader/resources.go`
/// (`ignoreApplyConfigs`): fleet.yaml and the values files it and its customizations name
/// only configure the bundle, and are not among its resources; other files are.
#[test]
fn fleet_yaml_and_the_values_files_it_names_are_not_resources() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(
        &dir.path().join("app/fleet.yaml"),
        "helm:\n  valuesFiles: [values/base.yaml]\ntargetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  helm:\n    valuesFiles: [prod.yaml]\n",
    );
    write_file(&dir.path().join("app/values/base.yaml"), "a: 1\n");
    write_file(&dir.path().join("app/prod.yaml"), "a: 2\n");
    write_file(&dir.path().join("app/values/other.yaml"), "b: 1\n");
    write_file(
        &dir.path().join("app/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    let root = dir.path().to_string_lossy().into_owned();
    let bundles = documents(&fleet_ok(&[
        "apply", "--root", &root, "-o", "-", "repo", "app",
    ]));
    let mut names: Vec<&str> = bundles[0]["spec"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["cm.yaml", "values/other.yaml"]);
}

/// `fleet apply -f FILE NAME` reads the bundle's options from FILE ("Location of the
/// fleet.yaml", Fleet's usage says), and `-f -` from standard input; the working directory
/// is the bundle, and values files are found there.
#[test]
fn options_read_from_standard_input_describe_the_working_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(
        &dir.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    write_file(&dir.path().join("extra.yaml"), "b: 2\n");
    let mut apply = Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["apply", "-o", "-", "-f", "-", "test"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fleet runs");
    apply
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            b"namespace: piped\nhelm:\n  chart: x\n  values: {a: 1}\n  valuesFiles: [extra.yaml]\n",
        )
        .expect("written");
    let output = apply.wait_with_output().expect("fleet ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let bundles = documents(&String::from_utf8_lossy(&output.stdout));
    let [bundle] = bundles.as_slice() else {
        panic!("one bundle: {bundles:?}")
    };
    assert_eq!(bundle["spec"]["namespace"], "piped");
    assert_eq!(
        bundle["spec"]["helm"]["values"],
        serde_json::json!({"a": 1, "b": 2})
    );
    let names: Vec<&str> = bundle["spec"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["cm.yaml"], "the values file is no resource");
}
