//! Kustomizations kubectl refuses: the engine refuses them too, for kustomize's reason;
//! kubectl is the judge, each case first checked to fail there. And the one kind of file
//! the engine refuses beyond kubectl, to protect the service rendering it.

mod common;

use std::path::Path;

use fleet_testkit::write_file;

/// kubectl's standard error for a build it must refuse.
fn kubectl_refusal(dir: &Path) -> String {
    let output = common::kubectl_kustomize(dir);
    assert!(
        !output.status.success(),
        "kubectl kustomize {} was expected to fail",
        dir.display()
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The engine's refusal of the build of `dir`, with the whole file system as its root.
fn our_refusal(dir: &Path) -> String {
    let root = fleet_kustomize::RepoRoot::new(Path::new("/")).expect("root");
    match fleet_kustomize::build(&root, dir) {
        Ok(resources) => panic!("{} built {} resources", dir.display(), resources.len()),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_base_or_component_named_by_an_absolute_path_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    write_file(
        &root.join("base/kustomization.yaml"),
        "resources: [cm.yaml]\n",
    );
    write_file(
        &root.join("base/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    write_file(
        &root.join("component/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
    );
    let base = root.join("base");
    let component = root.join("component");
    for (case, kustomization, field) in [
        (
            "resources",
            format!("resources:\n- {}\n", base.display()),
            "resources",
        ),
        (
            "components",
            format!("components:\n- {}\n", component.display()),
            "components",
        ),
    ] {
        let overlay = root.join(format!("overlay-{case}"));
        write_file(&overlay.join("kustomization.yaml"), &kustomization);
        let theirs = kubectl_refusal(&overlay);
        assert!(
            theirs.contains("cannot be absolute"),
            "{case}: kubectl said {theirs}"
        );
        let ours = our_refusal(&overlay);
        assert!(
            ours.contains(&format!("field `{field}`")) && ours.contains("cannot be absolute"),
            "{case}: {ours}"
        );
    }
    // A file named by an absolute path inside the kustomization's directory is fine.
    write_file(
        &root.join("files/kustomization.yaml"),
        &format!("resources:\n- {}\n", root.join("files/cm.yaml").display()),
    );
    write_file(
        &root.join("files/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
    );
    let built = fleet_kustomize::build(
        &fleet_kustomize::RepoRoot::new(Path::new("/")).expect("root"),
        &root.join("files"),
    )
    .expect("builds");
    assert_eq!(built[0]["metadata"]["name"], "b");
}

#[test]
fn a_json_6902_patch_without_a_target_name_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    write_file(
        &root.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: b\n",
    );
    write_file(
        &root.join("kustomization.yaml"),
        "resources: [cm.yaml]\npatchesJson6902:\n- target:\n    kind: ConfigMap\n  patch: |-\n    - op: add\n      path: /data/z\n      value: z\n",
    );
    let theirs = kubectl_refusal(&root);
    assert!(theirs.contains("must specify the target name"), "{theirs}");
    let ours = our_refusal(&root);
    assert!(
        ours.contains("patchesJson6902[0].target.name")
            && ours.contains("must specify the target name"),
        "{ours}"
    );
}

/// A 256 KiB string aliased a thousand times under `key` (indented by `indent`): a 260 KiB
/// text that stands for 256 MiB.
fn alias_bomb(key: &str, indent: &str) -> String {
    let anchor = "x".repeat(256 << 10);
    let aliases = vec!["*big"; 1000].join(", ");
    format!("{indent}{key}: {{big: &big \"{anchor}\", many: [{aliases}]}}\n")
}

/// Not kubectl's refusal: kubectl expands such a file (a quarter of a gigabyte, seconds)
/// before it finds anything wrong with it. gitjob renders what any GitRepo's author writes,
/// so the engine reads YAML with a bound on what aliases expand to (the text's length plus
/// 8 MiB), as the hub reads request bodies.
#[test]
fn aliases_that_expand_too_far_are_refused_in_a_kustomization_and_in_a_patch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    write_file(
        &root.join("bomb/kustomization.yaml"),
        &format!(
            "helmCharts:\n- name: web\n{}",
            alias_bomb("valuesInline", "  ")
        ),
    );
    write_file(
        &root.join("patched/kustomization.yaml"),
        "resources: [cm.yaml]\npatches:\n- path: patch.yaml\n",
    );
    write_file(
        &root.join("patched/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    write_file(
        &root.join("patched/patch.yaml"),
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n{}",
            alias_bomb("data", "")
        ),
    );
    for (case, file) in [("bomb", "kustomization.yaml"), ("patched", "patch.yaml")] {
        let dir = root.join(case);
        let started = std::time::Instant::now();
        let ours = our_refusal(&dir);
        assert!(
            ours.contains(file) && ours.contains("aliases expand"),
            "{case}: {ours}"
        );
        assert!(
            started.elapsed().as_secs() < 5,
            "{case}: refused in {:?}",
            started.elapsed()
        );
    }
}

/// With `buildMetadata`, every transformer reads the origin of every object; one that
/// `commonAnnotations` set to plain text fails the build, naming the annotation.
#[test]
fn an_origin_that_is_not_an_origin_fails_the_next_transformer() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(
        &dir.path().join("kustomization.yaml"),
        "buildMetadata: [originAnnotations]\nresources: [cm.yaml]\ncommonAnnotations:\n  config.kubernetes.io/origin: hello\n",
    );
    write_file(
        &dir.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
    );
    let theirs = kubectl_refusal(dir.path());
    assert!(
        theirs.contains("cannot unmarshal string into Go value of type resource.Origin"),
        "kubectl said {theirs}"
    );
    let ours = our_refusal(dir.path());
    assert!(
        ours.contains("field `buildMetadata`")
            && ours.contains("`config.kubernetes.io/origin` annotation of ConfigMap cm")
            && ours.contains("expected struct Origin"),
        "we said {ours}"
    );
}
