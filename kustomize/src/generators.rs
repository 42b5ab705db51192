//! ConfigMap and Secret generators, and the content hash kustomize appends to their names.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::location::Location;
use super::provenance::{self, Origin};
use super::resmap::{Behavior, Generated, ResMap, Resource};
use super::types::{GeneratorArgs, GeneratorOptions};
use fleet_files::str_at;
use fleet_files::{Error, Result};

/// Which object a generator makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GeneratorKind {
    /// A ConfigMap: UTF-8 values in `data`, others in `binaryData`.
    ConfigMap,
    /// A Secret: every value base64 in `data`.
    Secret,
}

impl GeneratorKind {
    /// The builtin plugin kind that generates it, as origins name it.
    pub(crate) fn builtin_kind(self) -> &'static str {
        match self {
            GeneratorKind::ConfigMap => "ConfigMapGenerator",
            GeneratorKind::Secret => "SecretGenerator",
        }
    }
}

/// Where a generator reads its files from, and the kustomization's defaults.
pub(crate) struct GeneratorContext<'a> {
    /// The kustomization.
    pub location: Location<'a>,
    /// `generatorOptions` of the kustomization.
    pub defaults: Option<&'a GeneratorOptions>,
    /// The origin generated objects get while `buildMetadata` is tracked.
    pub origin: Option<&'a Origin>,
}

/// Runs one generator and adds (or merges) its object into `resources`.
pub(crate) fn generate(
    ctx: &GeneratorContext<'_>,
    kind: GeneratorKind,
    args: &GeneratorArgs,
    resources: &mut ResMap,
) -> Result<()> {
    let file = ctx.location.shown();
    let field = match kind {
        GeneratorKind::ConfigMap => "configMapGenerator",
        GeneratorKind::Secret => "secretGenerator",
    };
    let entries = collect_entries(ctx, args, &file, field)?;
    // kustomize reads any other word (`add`) as unspecified, which creates.
    let behavior = match args.behavior.as_deref() {
        Some("merge") => Behavior::Merge,
        Some("replace") => Behavior::Replace,
        _ => Behavior::Create,
    };
    let mut object = build_object(kind, args, &entries);
    let options = merge_options(ctx.defaults, args.options.as_ref());
    apply_options(&mut object, &options);
    let hash_suffix = !options.disable_name_suffix_hash.unwrap_or(false);
    // A merged object keeps the origin of the one it merges into.
    if let Some(origin) = ctx.origin.filter(|_| behavior != Behavior::Merge) {
        provenance::set_origin_if_absent(&mut object, &origin.text());
    }

    let namespace = args.namespace.clone().unwrap_or_default();
    let kind_name = str_at(&object, &["kind"]).to_string();
    // As kustomize: any id the object ever had, the empty namespace meaning `default`.
    let effective = |ns: &str| if ns.is_empty() { "default" } else { ns }.to_string();
    let existing = resources.items.iter().position(|r| {
        r.kind() == kind_name
            && r.names
                .iter()
                .any(|(ns, name)| *name == args.name && effective(ns) == effective(&namespace))
    });
    match (behavior, existing) {
        (Behavior::Create, None) => {
            let mut resource = Resource::new(object);
            resource.generated = Some(Generated { hash_suffix });
            resources.push(resource, &file)
        }
        (Behavior::Create, Some(_)) => Err(Error::in_field(
            &file,
            field,
            format!(
                "{kind_name} `{}` already exists; use behavior merge or replace",
                args.name
            ),
        )),
        (_, None) => Err(Error::in_field(
            &file,
            format!("{field}.behavior"),
            format!(
                "no existing {kind_name} `{}` to merge into or replace",
                args.name
            ),
        )),
        (behavior, Some(index)) => {
            let target = &mut resources.items[index];
            let old = std::mem::take(&mut target.value);
            target.value = take_place_of(object, &old, behavior == Behavior::Merge);
            // Checked against kubectl kustomize: the name stays hashed only when both the
            // old object and the new generator ask for it.
            target.generated = target.generated.take().map(|old| Generated {
                hash_suffix: old.hash_suffix && hash_suffix,
            });
            Ok(())
        }
    }
}

/// Key/value pairs in the order kustomize reads them: envs, literals, files.
fn collect_entries(
    ctx: &GeneratorContext<'_>,
    args: &GeneratorArgs,
    file: &str,
    field: &str,
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut entries = BTreeMap::new();
    let insert = |key: String, value: Vec<u8>, entries: &mut BTreeMap<String, Vec<u8>>| {
        if entries.contains_key(&key) {
            return Err(Error::in_field(
                file,
                field,
                format!("generator `{}` has the key `{key}` twice", args.name),
            ));
        }
        entries.insert(key, value);
        Ok(())
    };
    for env_file in args.envs.iter().chain(args.env.iter()) {
        let path = ctx.location.file_path(env_file)?;
        let text = ctx.location.root.read_to_string(&path)?;
        for (number, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // A line without `=` names a variable of the environment, as in kustomize.
            let (key, value) = match line.split_once('=') {
                Some((key, value)) => (key.trim().to_string(), value.to_string()),
                None => {
                    let key = line.trim().to_string();
                    let value = std::env::var(&key).unwrap_or_default();
                    (key, value)
                }
            };
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(Error::in_file(
                    ctx.location.root.display(&path),
                    format!("line `{line}` has no key"),
                )
                .with_line(Some(number + 1)));
            }
            insert(key, value.into_bytes(), &mut entries)?;
        }
    }
    for literal in &args.literals {
        let Some((key, value)) = literal.split_once('=') else {
            return Err(Error::in_field(
                file,
                format!("{field}.literals"),
                format!("`{literal}` is not key=value"),
            ));
        };
        insert(
            key.to_string(),
            unquote(value).as_bytes().to_vec(),
            &mut entries,
        )?;
    }
    for source in &args.files {
        let (key, path) = match source.split_once('=') {
            Some((key, path)) => (key.to_string(), path),
            None => {
                let base = Path::new(source)
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_else(|| source.clone());
                (base, source.as_str())
            }
        };
        let resolved = ctx.location.file_path(path)?;
        insert(key, ctx.location.root.read(&resolved)?, &mut entries)?;
    }
    Ok(entries)
}

/// Strips one pair of matching surrounding quotes, as kustomize does for literals.
fn unquote(value: &str) -> &str {
    let bytes = value.as_bytes();
    if bytes.len() >= 2 {
        let (first, last) = (bytes[0], bytes[bytes.len() - 1]);
        if first == last && (first == b'"' || first == b'\'') {
            return &value[1..value.len() - 1];
        }
    }
    value
}

/// Base64 as kustomize writes generated values: when the encoding is 70 characters or
/// longer, every 70-character line (the last one too) ends with a newline.
fn wrapped_base64(bytes: &[u8]) -> String {
    const LINE: usize = 70;
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    if encoded.len() < LINE {
        return encoded;
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for line in encoded.as_bytes().chunks(LINE) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out
}

fn build_object(
    kind: GeneratorKind,
    args: &GeneratorArgs,
    entries: &BTreeMap<String, Vec<u8>>,
) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(args.name.clone()));
    if let Some(namespace) = &args.namespace {
        metadata.insert("namespace".into(), Value::String(namespace.clone()));
    }
    let mut data = Map::new();
    let mut binary = Map::new();
    for (key, value) in entries {
        match (kind, std::str::from_utf8(value)) {
            (GeneratorKind::ConfigMap, Ok(text)) => {
                data.insert(key.clone(), Value::String(text.to_string()));
            }
            (GeneratorKind::ConfigMap, Err(_)) => {
                binary.insert(key.clone(), Value::String(wrapped_base64(value)));
            }
            (GeneratorKind::Secret, _) => {
                data.insert(key.clone(), Value::String(wrapped_base64(value)));
            }
        }
    }
    let mut object = match kind {
        GeneratorKind::ConfigMap => json!({"apiVersion": "v1", "kind": "ConfigMap"}),
        GeneratorKind::Secret => json!({"apiVersion": "v1", "kind": "Secret"}),
    };
    if let Some(map) = object.as_object_mut() {
        map.insert("metadata".into(), Value::Object(metadata));
        // kustomize writes `data: {}` for a Secret without entries, not for a ConfigMap.
        if !data.is_empty() || kind == GeneratorKind::Secret {
            map.insert("data".into(), Value::Object(data));
        }
        if !binary.is_empty() {
            map.insert("binaryData".into(), Value::Object(binary));
        }
        if kind == GeneratorKind::Secret {
            let type_ = args.type_.clone().unwrap_or_else(|| "Opaque".to_string());
            map.insert("type".into(), Value::String(type_));
        }
    }
    object
}

fn merge_options(
    defaults: Option<&GeneratorOptions>,
    own: Option<&GeneratorOptions>,
) -> GeneratorOptions {
    let mut out = defaults.cloned().unwrap_or_default();
    if let Some(own) = own {
        out.labels.extend(own.labels.clone());
        out.annotations.extend(own.annotations.clone());
        if own.disable_name_suffix_hash.is_some() {
            out.disable_name_suffix_hash = own.disable_name_suffix_hash;
        }
        if own.immutable.is_some() {
            out.immutable = own.immutable;
        }
    }
    out
}

fn apply_options(object: &mut Value, options: &GeneratorOptions) {
    for (field, entries) in [
        ("labels", &options.labels),
        ("annotations", &options.annotations),
    ] {
        if entries.is_empty() {
            continue;
        }
        if let Some(map) = fleet_files::object_at(object, &["metadata", field]) {
            for (k, v) in entries {
                map.insert(k.clone(), Value::String(v.clone()));
            }
        }
    }
    if options.immutable == Some(true) {
        if let Some(map) = object.as_object_mut() {
            map.insert("immutable".into(), Value::Bool(true));
        }
    }
}

/// The generated object that replaces (or merges into) `old`, as kustomize does it: the
/// new object with the old name and namespace, the old labels and annotations under the
/// new ones and, for a merge, the old `data` and `binaryData` under the new.
fn take_place_of(mut object: Value, old: &Value, merge: bool) -> Value {
    let mut fields: Vec<&[&str]> = vec![&["metadata", "labels"], &["metadata", "annotations"]];
    if merge {
        fields.extend([&["data"][..], &["binaryData"][..]]);
    }
    for path in fields {
        let Some(Value::Object(old_entries)) = path.iter().try_fold(old, |v, key| v.get(key))
        else {
            continue;
        };
        if let Some(map) = fleet_files::object_at(&mut object, path) {
            for (key, value) in old_entries {
                map.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        for key in ["name", "namespace"] {
            match old.get("metadata").and_then(|m| m.get(key)) {
                Some(value) => metadata.insert(key.into(), value.clone()),
                None => metadata.remove(key),
            };
        }
    }
    object
}

/// The name suffix kustomize computes for a ConfigMap or Secret: a hash of its kind,
/// `data` (an empty string when absent), `binaryData` (ConfigMap) or `type` and
/// `stringData` (Secret) when they are maps, and a name that kustomize's lookup always
/// finds empty, so the suffix does not depend on prefixes or suffixes (checked against
/// kubectl kustomize).
pub(crate) fn content_hash(object: &Value) -> String {
    let kind = str_at(object, &["kind"]);
    let field = |key: &str| match object.get(key) {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        Some(Value::String(text)) => Value::String(text.clone()),
        Some(Value::Null) | None => Value::String(String::new()),
        Some(other) => Value::String(other.to_string()),
    };
    let mut encoded = Map::new();
    encoded.insert("kind".into(), Value::String(kind.to_string()));
    encoded.insert("name".into(), Value::String(String::new()));
    encoded.insert("data".into(), field("data"));
    let optional = if kind == "Secret" {
        encoded.insert("type".into(), field("type"));
        "stringData"
    } else {
        "binaryData"
    };
    if let Some(map @ Value::Object(_)) = object.get(optional) {
        encoded.insert(optional.into(), map.clone());
    }
    let text = go_json(&Value::Object(encoded));
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex.chars()
        .take(10)
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            other => other,
        })
        .collect()
}

/// JSON as Go's encoding/json writes it: keys sorted, HTML characters escaped.
fn go_json(value: &Value) -> String {
    let sorted = fleet_files::sorted_keys(value);
    let text = serde_json::to_string(&sorted).unwrap_or_default();
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}
