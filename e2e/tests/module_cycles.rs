//! No file import cycles inside a crate: read from the sources, each file's `crate::` and
//! `super::` paths are edges to the module files they name; two sibling modules that reach
//! each other (directly or through others) are a cycle. References between a module and
//! its own descendants (a `mod.rs` re-exporting its children, a child using its parent's
//! items) are structure, not cycles, and are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace crates' source directories.
fn crates() -> Vec<(String, PathBuf)> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml")).expect("Cargo.toml");
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("a members list");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| (m.to_string(), workspace.join(m).join("src")))
        .filter(|(_, src)| src.is_dir())
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("a source directory")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file (`a/b.rs` and `a/b/mod.rs` are `["a", "b"]`; `lib.rs` and
/// `main.rs` are the root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") || !parts.is_empty() && stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The paths a file names, starting with `crate` or `super`, with `use` groups expanded.
fn named_paths(text: &str) -> Vec<Vec<String>> {
    let code: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut at = 0;
    while at < bytes.len() {
        let rest: String = bytes[at..bytes.len().min(at + 6)].iter().collect();
        let boundary = at == 0
            || !(bytes[at - 1].is_alphanumeric() || bytes[at - 1] == '_' || bytes[at - 1] == ':');
        if boundary && (rest.starts_with("crate:") || rest.starts_with("super:")) {
            let (paths, end) = parse_tree(&bytes, at);
            out.extend(paths);
            at = end.max(at + 1);
        } else {
            at += 1;
        }
    }
    out
}

/// Parses a path or `use` tree at `at`: its expanded paths and where it ends.
fn parse_tree(chars: &[char], mut at: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        let start = at;
        while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
            at += 1;
        }
        if at > start {
            prefix.push(chars[start..at].iter().collect::<String>());
        }
        if chars.get(at) == Some(&':') && chars.get(at + 1) == Some(&':') {
            at += 2;
            if chars.get(at) == Some(&'{') {
                let mut paths = Vec::new();
                at += 1;
                loop {
                    while chars
                        .get(at)
                        .is_some_and(|c| c.is_whitespace() || *c == ',')
                    {
                        at += 1;
                    }
                    match chars.get(at) {
                        None => return (paths, at),
                        Some('}') => return (paths, at + 1),
                        _ => {}
                    }
                    let (inner, end) = parse_tree(chars, at);
                    paths.extend(inner.into_iter().map(|p| [prefix.clone(), p].concat()));
                    at = end.max(at + 1);
                    // Skip `as name` and anything else up to the next item.
                    while chars.get(at).is_some_and(|c| *c != ',' && *c != '}') {
                        at += 1;
                    }
                }
            }
            continue;
        }
        return (vec![prefix], at);
    }
}

/// The module a path names: the longest prefix that is a module of the crate.
fn resolve(
    path: &[String],
    from: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut absolute: Vec<String> = Vec::new();
    let mut rest = path;
    if rest.first().map(String::as_str) == Some("crate") {
        rest = &rest[1..];
    } else {
        absolute = from.to_vec();
        while rest.first().map(String::as_str) == Some("super") {
            absolute.pop();
            rest = &rest[1..];
        }
    }
    absolute.extend(rest.iter().cloned());
    (0..=absolute.len())
        .rev()
        .map(|n| absolute[..n].to_vec())
        .find(|candidate| modules.contains(candidate))
}

/// The cycles among a crate's modules: groups of two or more that reach each other.
fn cycles(src: &Path) -> Vec<BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|file| (module_of(src, file), file.clone()))
        .collect();
    let names: BTreeSet<Vec<String>> = modules.keys().cloned().collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).expect("a source file");
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for path in named_paths(text) {
            let Some(target) = resolve(&path, module, &names) else {
                continue;
            };
            let related = target.starts_with(module) || module.starts_with(&target);
            if !related {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    let reach = |start: &Vec<String>| -> BTreeSet<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut pending = vec![start.clone()];
        while let Some(next) = pending.pop() {
            for target in edges.get(&next).into_iter().flatten() {
                if seen.insert(target.clone()) {
                    pending.push(target.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
        names.iter().map(|m| (m, reach(m))).collect();
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for module in &names {
        let group: BTreeSet<String> = names
            .iter()
            .filter(|other| *other != module)
            .filter(|other| reaches[module].contains(*other) && reaches[*other].contains(module))
            .chain(std::iter::once(module))
            .map(|m| {
                if m.is_empty() {
                    "crate".to_string()
                } else {
                    m.join("::")
                }
            })
            .collect();
        if group.len() > 1 && !found.contains(&group) {
            found.push(group);
        }
    }
    found
}

#[test]
fn no_crate_has_file_import_cycles() {
    let mut complaints = Vec::new();
    let mut checked = 0;
    for (name, src) in crates() {
        checked += 1;
        for cycle in cycles(&src) {
            complaints.push(format!("{name}: modules import each other: {cycle:?}"));
        }
    }
    assert!(checked >= 15, "{checked} crates read");
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

#[test]
fn a_cycle_between_two_files_is_seen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").expect("lib.rs");
    std::fs::write(src.join("a.rs"), "use crate::b::{self, B as Bee};\n").expect("a.rs");
    std::fs::write(src.join("b.rs"), "pub fn f() { super::a::g() }\n").expect("b.rs");
    let expected: BTreeSet<String> = ["a", "b"].iter().map(|m| m.to_string()).collect();
    assert_eq!(cycles(src), vec![expected]);
    std::fs::write(src.join("b.rs"), "// uses crate::a, only in a comment\n").expect("b.rs");
    assert!(cycles(src).is_empty());
}
