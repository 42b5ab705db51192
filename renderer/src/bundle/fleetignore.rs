//! Walking a bundle's tree as Rancher Fleet reads it: hidden files and directories are
//! left out, and so is whatever a `.fleetignore` names. Fleet's rules, which are not
//! gitignore's: each line is a glob matched against the *name* of an entry (Go's
//! `filepath.Match`, backslash escapes), in the directory of the `.fleetignore` and every
//! directory below it, never a neighbour's; trailing spaces are dropped unless escaped;
//! `#` starts a comment; `name/*` ignores directories called `name`, not files.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::RepoRoot;
use crate::{RenderError, Result};

/// The file that names what to leave out.
pub const FLEETIGNORE: &str = ".fleetignore";

/// One entry of a `.fleetignore`.
#[derive(Clone, Debug)]
enum Entry {
    /// `name/*`: directories called `name`.
    Directory(String),
    /// A glob over entry names.
    Glob(GlobMatcher),
}

/// The entries in force in a directory: its own `.fleetignore`'s and its parents'.
#[derive(Clone, Debug, Default)]
struct Ignores(Vec<Entry>);

impl Ignores {
    /// These and those of `dir`'s `.fleetignore`, for the entries of `dir`.
    fn within(&self, root: &RepoRoot, dir: &Path) -> Result<Self> {
        let file = dir.join(FLEETIGNORE);
        if !file.is_file() {
            return Ok(self.clone());
        }
        let shown = root.display(&file);
        let text = std::fs::read_to_string(&file)
            .map_err(|e| RenderError::in_file(&shown, e.to_string()))?;
        let mut entries = self.0.clone();
        for (number, line) in text.lines().enumerate() {
            let Some(pattern) = pattern_of(line) else {
                continue;
            };
            entries.push(entry(&pattern).map_err(|message| {
                RenderError::in_file(&shown, message).with_line(Some(number + 1))
            })?);
        }
        Ok(Self(entries))
    }

    /// Whether the entry `name` (a directory or not) is left out.
    fn ignores(&self, name: &str, is_dir: bool) -> bool {
        self.0.iter().any(|entry| match entry {
            Entry::Directory(dir) => is_dir && dir == name,
            Entry::Glob(glob) => glob.is_match(name),
        })
    }
}

/// The pattern a `.fleetignore` line holds, if any: trailing spaces trimmed unless
/// escaped, blank lines and comments dropped.
fn pattern_of(line: &str) -> Option<String> {
    let trimmed = trim_trailing_space(line);
    (!trimmed.is_empty() && !trimmed.starts_with('#')).then(|| trimmed.to_string())
}

/// Fleet's `([^\\])\s+$` replaced by `$1`: the trailing whitespace goes after a character
/// that is not a backslash; after a backslash (or at the start) one whitespace character
/// stands for that character, and the rest goes if there is more than one.
fn trim_trailing_space(line: &str) -> &str {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c);
    let bytes = line.as_bytes();
    let start = bytes.len() - bytes.iter().rev().take_while(|b| is_space(b)).count();
    let run = bytes.len() - start;
    if run == 0 {
        return line;
    }
    if start > 0 && bytes[start - 1] != b'\\' {
        return &line[..start];
    }
    if run >= 2 {
        return &line[..start + 1];
    }
    line
}

fn entry(pattern: &str) -> std::result::Result<Entry, String> {
    // Fleet's test for the directory form: `^.+/\*`.
    let directory_form = pattern.find("/*").is_some_and(|at| at > 0);
    if directory_form {
        let name = pattern.strip_suffix("/*").unwrap_or(pattern);
        return Ok(Entry::Directory(name.to_string()));
    }
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|glob| Entry::Glob(glob.compile_matcher()))
        .map_err(|e| format!("`{pattern}` is not a valid pattern: {e}"))
}

/// What a walk found: directories (the start first) and files, each sorted.
#[derive(Debug, Default)]
pub struct Walked {
    /// The directories entered.
    pub dirs: Vec<PathBuf>,
    /// The files (and symbolic links, not followed) in them.
    pub files: Vec<PathBuf>,
}

/// Walks `base` (inside `root`), entering the directories `enter` accepts, leaving out
/// hidden and `.fleetignore`d entries.
pub fn walk(root: &RepoRoot, base: &Path, enter: &dyn Fn(&Path) -> bool) -> Result<Walked> {
    let mut walked = Walked::default();
    visit(root, base, &Ignores::default(), enter, &mut walked)?;
    walked.dirs.sort();
    walked.files.sort();
    Ok(walked)
}

fn visit(
    root: &RepoRoot,
    dir: &Path,
    inherited: &Ignores,
    enter: &dyn Fn(&Path) -> bool,
    walked: &mut Walked,
) -> Result<()> {
    walked.dirs.push(dir.to_path_buf());
    let ignores = inherited.within(root, dir)?;
    let broken = |e: std::io::Error| RenderError::in_file(root.display(dir), e.to_string());
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .map_err(broken)?
        .collect::<std::io::Result<_>>()
        .map_err(broken)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = entry.file_type().map_err(broken)?.is_dir();
        if name.starts_with('.') || ignores.ignores(&name, is_dir) {
            continue;
        }
        let path = entry.path();
        if !is_dir {
            walked.files.push(path);
        } else if enter(&path) {
            visit(root, &path, &ignores, enter, walked)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rancher Fleet's own `.fleetignore` cases (its bundle reader's tests), restated as
    /// data: the tree, then the files Fleet keeps.
    /// A case: its name, the tree (`path`, contents), the files kept.
    type Case = (
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static [&'static str],
    );

    const FLEET_CASES: &[Case] = &[
        (
            "empty .fleetignore",
            &[("something.yaml", "foo"), (".fleetignore", "")],
            &["something.yaml"],
        ),
        (
            "ignore lines with leading # unless escaped",
            &[
                ("something.yaml", "foo"),
                ("#something_else.yaml", "bar"),
                (".fleetignore", "#something.yaml\n\\#something_else.yaml"),
            ],
            &["something.yaml"],
        ),
        (
            "simple .fleetignore",
            &[
                ("something.yaml", "foo"),
                ("something_else.yaml", "bar"),
                (".fleetignore", "not_here.txt\nsomething.yaml"),
            ],
            &["something_else.yaml"],
        ),
        (
            "glob syntax",
            &[("something.yaml", "foo"), (".fleetignore", "something*")],
            &[],
        ),
        (
            "ignore trailing spaces unless escaped",
            &[
                ("something.yaml ", "foo"),
                ("something_else.yaml  ", "bar"),
                (".fleetignore", "something_else.yaml\\ \\ \nsomething.yaml "),
            ],
            &["something.yaml "],
        ),
        (
            "ignore directories",
            &[
                ("something.yaml", "foo"),
                (".fleetignore", "subdir"),
                ("subdir/in_dir.yaml", "baz"),
            ],
            &["something.yaml"],
        ),
        (
            "ignore file multiple levels below .fleetignore",
            &[
                ("something.yaml", "foo"),
                (".fleetignore", "in_dir.yaml"),
                ("subdir/subsubdir/in_dir.yaml", "bar"),
            ],
            &["something.yaml"],
        ),
        (
            ".fleetignore files in neighbour dirs do not interfere with one another",
            &[
                ("something.yaml", "foo"),
                ("subdir1/in_dir.yaml", "from dir 1"),
                ("subdir1/.fleetignore", "in_dir.yaml"),
                ("subdir2/in_dir.yaml", "from dir 2"),
            ],
            &["something.yaml", "subdir2/in_dir.yaml"],
        ),
        (
            "entries from parent directories' .fleetignore files are added in lower directories",
            &[
                ("something.yaml", "foo"),
                (".fleetignore", "ignore-always.yaml"),
                ("foo/ignore-always.yaml", "will be ignored"),
                ("foo/something.yaml", "something"),
                ("bar/.fleetignore", "something.yaml"),
                ("bar/something.yaml", "something"),
                ("bar/something2.yaml", "something2"),
                ("bar/ignore-always.yaml", "will be ignored"),
            ],
            &[
                "bar/something2.yaml",
                "foo/something.yaml",
                "something.yaml",
            ],
        ),
        (
            "root .fleetignore contains folder/* entries",
            &[
                ("something.yaml", "foo"),
                (".fleetignore", "foo/*\n"),
                ("foo/ignore-always.yaml", "will be ignored"),
                ("foo/something.yaml", "will be ignored"),
                ("bar/something.yaml", "something"),
                ("bar/something2.yaml", "something2"),
                ("bar/foo/ignore.yaml", "will be ignored"),
                ("bar/foo/something.yaml", "will be ignored"),
            ],
            &[
                "bar/something.yaml",
                "bar/something2.yaml",
                "something.yaml",
            ],
        ),
        (
            "non root .fleetignore contains folder/* entries",
            &[
                ("something.yaml", "foo"),
                ("foo/something1.yaml", "something1"),
                ("foo/something2.yaml", "something2"),
                ("bar/something.yaml", "something"),
                ("bar/something2.yaml", "something2"),
                ("bar/.fleetignore", "foo/*\n"),
                ("bar/foo/ignore.yaml", "will be ignored"),
                ("bar/foo/something.yaml", "will be ignored"),
            ],
            &[
                "bar/something.yaml",
                "bar/something2.yaml",
                "foo/something1.yaml",
                "foo/something2.yaml",
                "something.yaml",
            ],
        ),
        (
            ".fleetignore contains folder/* entry does not apply to files",
            &[
                ("something.yaml", "foo"),
                (".fleetignore", "foo/*\n"),
                ("foo", "everybody was a kung-foo fighting"),
                ("bar/something.yaml", "something"),
                ("bar/something2.yaml", "something2"),
                ("bar/.fleetignore", "foo/*\n"),
                ("bar/foo/ignore.yaml", "will be ignored"),
            ],
            &[
                "bar/something.yaml",
                "bar/something2.yaml",
                "foo",
                "something.yaml",
            ],
        ),
    ];

    #[test]
    fn fleets_own_cases_keep_the_files_fleet_keeps() {
        for (name, tree, expected) in FLEET_CASES {
            let dir = tempfile::tempdir().expect("tempdir");
            for (path, text) in *tree {
                let file = dir.path().join(path);
                std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
                std::fs::write(&file, text).expect("write");
            }
            let root = RepoRoot::new(dir.path()).expect("root");
            let walked = walk(&root, root.path(), &|_| true).expect("walks");
            let found: Vec<String> = walked
                .files
                .iter()
                .map(|f| {
                    f.strip_prefix(root.path())
                        .expect("inside")
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            assert_eq!(found, *expected, "{name}");
        }
    }

    #[test]
    fn trailing_spaces_go_as_fleets_expression_drops_them() {
        assert_eq!(trim_trailing_space("a.yaml  "), "a.yaml");
        assert_eq!(trim_trailing_space("a.yaml\\ "), "a.yaml\\ ");
        assert_eq!(trim_trailing_space("a.yaml\\   "), "a.yaml\\ ");
        assert_eq!(trim_trailing_space("   "), " ");
        assert_eq!(trim_trailing_space(" "), " ");
        assert_eq!(trim_trailing_space("plain"), "plain");
    }

    #[test]
    fn a_broken_pattern_names_its_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(".fleetignore"), "ok.yaml\n[broken\n").expect("write");
        let root = RepoRoot::new(dir.path()).expect("root");
        let error = walk(&root, root.path(), &|_| true).expect_err("refused");
        let text = error.to_string();
        assert!(text.contains(".fleetignore:2"), "{text}");
        assert!(text.contains("[broken"), "{text}");
    }
}
