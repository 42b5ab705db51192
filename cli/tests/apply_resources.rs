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
