//! Rancher Fleet's own tests, restated as data: each case in `fleet_cases/<topic>.yaml`
//! cites the Fleet v0.16.1 file and line whose assertion it restates, gives the files of a
//! repository, the `fleet` command to run on them, and what Fleet's test expects. The
//! format is described in `fleet_cases/README.md`. The test prints how many cases of each
//! topic pass and fails naming every case that does not.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use common::workspace;

/// One restated case, as read from its topic file.
struct Case {
    name: String,
    fleet: String,
    document: Value,
}

/// What went wrong in one case, for the failure report.
type Failure = String;

#[test]
fn fleet_s_own_cases_give_fleet_s_answers() {
    let dir = workspace().join("cli/tests/fleet_cases");
    let mut topics: Vec<_> = std::fs::read_dir(&dir)
        .expect("fleet_cases directory")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    topics.sort();
    assert!(!topics.is_empty(), "no topic files in {}", dir.display());
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    let mut total = (0, 0);
    for topic in &topics {
        let name = topic
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let cases = read_cases(topic);
        let mut passed = 0;
        for case in &cases {
            match run_case(&case.document) {
                Ok(()) => passed += 1,
                Err(why) => {
                    failures.push(format!("== {name}: {} ({})\n{why}", case.name, case.fleet))
                }
            }
        }
        counts.push(format!("{name} {passed}/{}", cases.len()));
        total = (total.0 + passed, total.1 + cases.len());
    }
    println!(
        "restated Fleet cases: {}; all {}/{}",
        counts.join(", "),
        total.0,
        total.1
    );
    assert!(
        failures.is_empty(),
        "{} of {} restated Fleet cases fail:\n{}",
        failures.len(),
        total.1,
        failures.join("\n")
    );
}

/// The cases of one topic file, each checked to cite its Fleet source.
fn read_cases(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).expect("topic file");
    let file = path.display().to_string();
    let mut names = std::collections::BTreeSet::new();
    fleet_files::yaml::parse_documents(&text, &file)
        .unwrap_or_else(|error| panic!("{error}"))
        .into_iter()
        .map(|document| {
            let field = |key: &str| {
                document[key]
                    .as_str()
                    .unwrap_or_else(|| panic!("{file}: a case without `{key}`: {document}"))
                    .to_string()
            };
            let (name, fleet) = (field("name"), field("fleet"));
            assert!(
                names.insert(name.clone()),
                "{file}: two cases named {name:?}"
            );
            Case {
                name,
                fleet,
                document,
            }
        })
        .collect()
}

/// Writes the case's repository, runs its command and checks what it expects.
fn run_case(case: &Value) -> Result<(), Failure> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (path, content) in entries(&case["files"]) {
        let target = dir.path().join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let text = content
            .as_str()
            .ok_or(format!("files.{path} is not text"))?;
        std::fs::write(&target, text).map_err(|e| e.to_string())?;
    }
    for (path, files) in entries(&case["fleet_contents"]) {
        append_fleet_content(&dir.path().join(path), files)?;
    }
    for (path, target) in entries(&case["links"]) {
        let link = dir.path().join(path);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let target = target.as_str().ok_or(format!("links.{path} is not text"))?;
        std::os::unix::fs::symlink(target, &link).map_err(|e| e.to_string())?;
    }
    let args: Vec<String> = case["run"]
        .as_array()
        .ok_or("no `run` list")?
        .iter()
        .map(|arg| match arg {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    let hub = match (case.get("clusters"), case.get("objects")) {
        (None, None) => None,
        (clusters, objects) => Some(CaseHub::start(clusters, objects)?),
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleet"));
    command.args(&args).current_dir(dir.path());
    if let Some(hub) = &hub {
        command.env("KUBECONFIG", hub.hub.kubeconfig("local"));
    }
    let output = command.output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expect = &case["expect"];
    let context = || format!("fleet {}\nstderr: {}", args.join(" "), stderr.trim());
    for wanted in expect["stderr"].as_array().into_iter().flatten() {
        let wanted = wanted.as_str().unwrap_or_default();
        if !stderr.contains(wanted) {
            return Err(format!("stderr lacks {wanted:?}\n{}", context()));
        }
    }
    for wanted in expect["stdout"].as_array().into_iter().flatten() {
        let wanted = wanted.as_str().unwrap_or_default();
        if !stdout.contains(wanted) {
            return Err(format!("stdout lacks {wanted:?}\n{}", context()));
        }
    }
    for lacking in expect["stdout_lacks"].as_array().into_iter().flatten() {
        let lacking = lacking.as_str().unwrap_or_default();
        if stdout.contains(lacking) {
            return Err(format!("stdout holds {lacking:?}\n{}", context()));
        }
    }
    for (text, count) in entries(&expect["stdout_counts"]) {
        let found = stdout.matches(text.as_str()).count();
        if Some(found as u64) != count.as_u64() {
            return Err(format!(
                "stdout holds {text:?} {found} times, Fleet's {count}\n{}",
                context()
            ));
        }
    }
    if let Some(error) = expect["error"].as_str() {
        if output.status.success() {
            return Err(format!(
                "succeeded, Fleet fails with {error:?}\n{}",
                context()
            ));
        }
        if !stderr.contains(error) {
            return Err(format!("the error lacks {error:?}\n{}", context()));
        }
        return Ok(());
    }
    if !output.status.success() {
        return Err(format!("failed, Fleet succeeds\n{}", context()));
    }
    if let Some(exact) = expect["stdout_exact"].as_str() {
        if stdout.trim() != exact.trim() {
            return Err(format!(
                "stdout is not Fleet's:\n{stdout}\nFleet's:\n{exact}\n{}",
                context()
            ));
        }
    }
    if let Some(subset) = expect.get("json") {
        let printed: Value = serde_json::from_str(&stdout)
            .map_err(|error| format!("stdout is no JSON: {error}\n{stdout}\n{}", context()))?;
        contains(&printed, subset, "").map_err(|why| format!("{why}\n{stdout}\n{}", context()))?;
    }
    if let Some(archive) = expect.get("archive") {
        check_archive(dir.path(), archive).map_err(|why| format!("{why}\n{}", context()))?;
    }
    let checks_objects = ["bundles", "resources", "absent", "objects"]
        .iter()
        .any(|key| expect.get(key).is_some());
    if !checks_objects {
        return Ok(());
    }
    let outputs = printed_objects(&stdout)
        .map_err(|error| format!("output is no YAML of objects: {error}\n{}", context()))?;
    check_bundles(expect, &outputs).map_err(|why| format!("{why}\n{}", context()))?;
    check_objects(expect, &outputs).map_err(|why| format!("{why}\n{}", context()))
}

/// A hub holding the Clusters a case lists (`name`, `namespace`, `labels`) and its other
/// `objects` (any kind Fleet's hub serves, created, then given their `status`), for the
/// commands that read them (`fleet target`, `fleet bundlediff`); it serves while the
/// runtime lives.
struct CaseHub {
    hub: fleet_testkit::FleetHub,
    _runtime: tokio::runtime::Runtime,
}

impl CaseHub {
    fn start(clusters: Option<&Value>, objects: Option<&Value>) -> Result<Self, Failure> {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        let hub = runtime.block_on(async {
            let hub = fleet_testkit::FleetHub::start(&[]).await;
            for cluster in clusters.and_then(Value::as_array).into_iter().flatten() {
                let name = cluster["name"].as_str().ok_or("a cluster without name")?;
                let namespace = cluster["namespace"].as_str().unwrap_or("fleet-local");
                ensure_namespace(&hub.client, namespace).await?;
                let labels = cluster.get("labels").cloned().unwrap_or(Value::Null);
                fleet_testkit::create_cluster(&hub.client, namespace, name, labels)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            for object in objects.and_then(Value::as_array).into_iter().flatten() {
                create_object(&hub.client, object).await?;
            }
            Ok::<_, Failure>(hub)
        })?;
        Ok(Self {
            hub,
            _runtime: runtime,
        })
    }
}

async fn ensure_namespace(client: &kube::Client, namespace: &str) -> Result<(), Failure> {
    fleet_objects::client::ensure_namespace(client, namespace, "fleet-cases")
        .await
        .map_err(|e| e.to_string())
}

/// Creates `object` in its namespace (made if missing), then writes its `status`.
async fn create_object(client: &kube::Client, object: &Value) -> Result<(), Failure> {
    use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
    let text = |key: &str| object[key].as_str().unwrap_or_default().to_string();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    let gvk = kube::api::GroupVersionKind::gvk(group, version, &kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|e| format!("{api_version} {kind}: {e}"))?;
    let namespace = object["metadata"]["namespace"].as_str();
    let api: kube::Api<DynamicObject> = match namespace {
        Some(namespace) => {
            ensure_namespace(client, namespace).await?;
            kube::Api::namespaced_with(client.clone(), namespace, &resource)
        }
        None => kube::Api::all_with(client.clone(), &resource),
    };
    let mut body = object.clone();
    let status = body.as_object_mut().and_then(|o| o.remove("status"));
    let created: DynamicObject = serde_json::from_value(body).map_err(|e| e.to_string())?;
    let name = created.metadata.name.clone().unwrap_or_default();
    api.create(&PostParams::default(), &created)
        .await
        .map_err(|e| format!("creating {kind} {name}: {e}"))?;
    if let Some(status) = status {
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "status": status })),
        )
        .await
        .map_err(|e| format!("status of {kind} {name}: {e}"))?;
    }
    Ok(())
}

/// Appends to `path` a Content as Rancher Fleet's controller writes one: the bundle's
/// `files` (name -> text) as `{"resources": [{"name", "content"}]}`, gzipped and
/// base64-encoded, named after its sha256 as Fleet names it.
fn append_fleet_content(path: &Path, files: &Value) -> Result<(), Failure> {
    use base64::Engine;
    use sha2::Digest;
    use std::io::Write;
    let resources: Vec<Value> = entries(files)
        .into_iter()
        .map(|(name, content)| serde_json::json!({"name": name, "content": content}))
        .collect();
    let json = serde_json::json!({ "resources": resources }).to_string();
    let sha256 = format!("{:x}", sha2::Sha256::digest(json.as_bytes()));
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(json.as_bytes()).map_err(|e| e.to_string())?;
    let packed = gzip.finish().map_err(|e| e.to_string())?;
    let document = format!(
        "---\napiVersion: fleet.cattle.io/v1alpha1\nkind: Content\nmetadata:\n  name: s-{sha256}\n\
         sha256sum: {sha256}\ncontent: {}\n",
        base64::engine::general_purpose::STANDARD.encode(packed)
    );
    let mut text = std::fs::read_to_string(path).unwrap_or_default();
    text.push_str(&document);
    std::fs::write(path, text).map_err(|e| e.to_string())
}

/// The `.tgz` archive a command wrote (`fleet dump`) against `archive`: `path` (in the
/// case's directory); `parts`, how many `_`-separated parts every entry's name has;
/// `has`, names present; `lacks_prefix`; `objects`, entries read as YAML and matched as
/// subsets; `lines`, entries of JSON lines, each matched as a subset, as many as listed.
fn check_archive(dir: &Path, archive: &Value) -> Result<(), Failure> {
    use std::io::Read;
    let path = dir.join(archive["path"].as_str().ok_or("archive without path")?);
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut files = std::collections::BTreeMap::new();
    for entry in tar.entries().map_err(|e| e.to_string())? {
        let mut entry = entry.map_err(|e| e.to_string())?;
        let name = entry
            .path()
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(format!("{name} is not a regular file"));
        }
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(|e| format!("{name}: {e}"))?;
        files.insert(name, text);
    }
    let names: Vec<&String> = files.keys().collect();
    if let Some(parts) = archive["parts"].as_u64() {
        if let Some(odd) = names.iter().find(|n| n.split('_').count() as u64 != parts) {
            return Err(format!("entry {odd} has not {parts} parts: {names:?}"));
        }
    }
    for wanted in archive["has"].as_array().into_iter().flatten() {
        let wanted = wanted.as_str().unwrap_or_default();
        if !files.contains_key(wanted) {
            return Err(format!("no entry {wanted}: {names:?}"));
        }
    }
    for prefix in archive["lacks_prefix"].as_array().into_iter().flatten() {
        let prefix = prefix.as_str().unwrap_or_default();
        if let Some(found) = names.iter().find(|n| n.starts_with(prefix)) {
            return Err(format!("entry {found} starts with {prefix}"));
        }
    }
    for (name, subset) in entries(&archive["objects"]) {
        let text = files
            .get(name)
            .ok_or(format!("no entry {name}: {names:?}"))?;
        let object = fleet_files::yaml::parse_value(text, name).map_err(|e| e.to_string())?;
        contains(&object, subset, name)?;
    }
    for (name, wanted) in entries(&archive["lines"]) {
        let text = files
            .get(name)
            .ok_or(format!("no entry {name}: {names:?}"))?;
        let lines: Vec<Value> = text
            .split('\n')
            .map(|line| serde_json::from_str(line).map_err(|e| format!("{name}: {e}: {line:?}")))
            .collect::<Result<_, _>>()?;
        contains(&Value::Array(lines), wanted, name)?;
    }
    Ok(())
}

/// What `fleet` printed: a stream of objects (`apply -o -`), or one list of them (`test
/// -o yaml`).
fn printed_objects(stdout: &str) -> Result<Vec<Value>, fleet_files::Error> {
    let mut objects = Vec::new();
    for document in fleet_files::yaml::parse_any_documents(stdout, "stdout")? {
        match document {
            Value::Array(items) => objects.extend(items),
            Value::Null => {}
            object => objects.push(object),
        }
    }
    Ok(objects)
}

/// The entries of a map in the case (none when it is absent).
fn entries(value: &Value) -> Vec<(&String, &Value)> {
    value
        .as_object()
        .map(|map| map.iter().collect())
        .unwrap_or_default()
}

/// `bundles`, `resources` and `absent` against the Bundles printed.
fn check_bundles(expect: &Value, outputs: &[Value]) -> Result<(), Failure> {
    let by_name = |name: &str| {
        outputs
            .iter()
            .find(|bundle| bundle["metadata"]["name"] == name)
            .ok_or(format!(
                "no bundle {name}; printed: {:?}",
                common::names(outputs)
            ))
    };
    if let Some(bundles) = expect["bundles"].as_object() {
        let mut printed: Vec<&str> = common::names(outputs);
        printed.sort_unstable();
        let mut wanted: Vec<&str> = bundles.keys().map(String::as_str).collect();
        wanted.sort_unstable();
        if printed != wanted {
            return Err(format!("bundles {printed:?}, Fleet's {wanted:?}"));
        }
        for (name, subset) in bundles {
            contains(by_name(name)?, subset, "").map_err(|why| format!("bundle {name}: {why}"))?;
        }
    }
    for (name, wanted) in entries(&expect["resources"]) {
        let bundle = by_name(name)?;
        let mut printed: Vec<&str> = bundle["spec"]["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|resource| resource["name"].as_str())
            .collect();
        printed.sort_unstable();
        let mut wanted: Vec<&str> = wanted
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        wanted.sort_unstable();
        if printed != wanted {
            return Err(format!(
                "bundle {name}: resources {printed:?}, Fleet's {wanted:?}"
            ));
        }
    }
    for (name, pointers) in entries(&expect["absent"]) {
        let bundle = by_name(name)?;
        for pointer in pointers.as_array().into_iter().flatten() {
            let pointer = pointer.as_str().unwrap_or_default();
            if let Some(found) = bundle.pointer(pointer) {
                return Err(format!(
                    "bundle {name}: {pointer} is {found}, Fleet has none"
                ));
            }
        }
    }
    Ok(())
}

/// `objects` against the objects `fleet test` printed, in order.
fn check_objects(expect: &Value, outputs: &[Value]) -> Result<(), Failure> {
    let Some(wanted) = expect["objects"].as_array() else {
        return Ok(());
    };
    let key = |object: &Value| {
        format!(
            "{}/{}",
            object["kind"].as_str().unwrap_or_default(),
            object["metadata"]["name"].as_str().unwrap_or_default()
        )
    };
    let printed: Vec<String> = outputs.iter().map(key).collect();
    let expected: Vec<String> = wanted.iter().map(key).collect();
    if printed != expected {
        return Err(format!("objects {printed:?}, Fleet's {expected:?}"));
    }
    for (object, subset) in outputs.iter().zip(wanted) {
        contains(object, subset, "").map_err(|why| format!("{}: {why}", key(object)))?;
    }
    Ok(())
}

/// Whether `actual` holds `subset`: every key a map lists, lists element by element.
fn contains(actual: &Value, subset: &Value, at: &str) -> Result<(), Failure> {
    match (actual, subset) {
        (Value::Object(actual), Value::Object(subset)) => {
            for (key, wanted) in subset {
                let here = format!("{at}/{key}");
                match actual.get(key) {
                    Some(found) => contains(found, wanted, &here)?,
                    None if wanted.is_null() => {}
                    None => return Err(format!("{here} missing, Fleet's {wanted}")),
                }
            }
            Ok(())
        }
        (Value::Array(actual), Value::Array(subset)) if actual.len() == subset.len() => actual
            .iter()
            .zip(subset)
            .enumerate()
            .try_for_each(|(i, (found, wanted))| contains(found, wanted, &format!("{at}/{i}"))),
        _ if actual == subset => Ok(()),
        _ => Err(format!("{at} is {actual}, Fleet's {subset}")),
    }
}
