//! The documentation as a test subject: every relative link in the README,
//! ARCHITECTURE.md, CONTRIBUTING.md, CHANGELOG.md, docs/ and the crates'
//! READMEs (crates/*/README.md) resolves, and the README's picture is what
//! the current code renders from its real run; ARCHITECTURE.md's recipes
//! name files and items that exist.
//!
//! One test crate per area (each links the library once); each file is a module.

mod links;
mod picture;
mod recipes;

use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A file of the repository, read whole.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Markdown files whose links are checked: the four at the root, every
/// `.md` under `docs/` and each crate's README (sorted, as paths relative to
/// the root).
fn documents() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    for e in std::fs::read_dir(root().join("crates")).unwrap() {
        let readme = PathBuf::from("crates")
            .join(e.unwrap().file_name())
            .join("README.md");
        if root().join(&readme).is_file() {
            out.push(readme);
        }
    }
    let mut dirs = vec![PathBuf::from("docs")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(root().join(&dir)).unwrap() {
            let e = e.unwrap();
            let rel = dir.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                dirs.push(rel);
            } else if rel.extension().is_some_and(|x| x == "md") {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}
