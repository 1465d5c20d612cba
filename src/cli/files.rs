//! `run --artifacts DIR`: the files the code left in `/out`, written into
//! `DIR` for `--code` and `--goal` alike, and (with `--format markdown`)
//! shown in the Markdown with links relative to where it is printed.

use std::path::Path;

use crate::github::texts::{self, FilesHome, ShownFile};
use crate::render::FilesBlock;
use crate::sandbox::{Artifact, FileKind, Outcome, write_files};

/// Percent-encodes what a Markdown link destination cannot hold as is.
fn encode(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The link of `name` written under `dir`, as given on the command line.
fn link(dir: &Path, name: &str) -> String {
    let dir = dir.to_string_lossy();
    let mut parts: Vec<String> = dir
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .map(encode)
        .collect();
    parts.extend(name.split('/').map(encode));
    let joined = parts.join("/");
    if dir.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

/// The run as a notebook to write into `dir`: named after the `--code`
/// file (`analysis.py` → `analysis.ipynb`), else `answer.ipynb`, and never
/// taking the name of a file the code left in `/out`, nor that of the
/// `--code` file itself when it sits in `dir` (`--code a.ipynb
/// --artifacts .` leaves `a.ipynb` as it was).
pub(crate) fn run_notebook(
    cells: &[(&str, &Outcome)],
    code_file: Option<&Path>,
    dir: &Path,
) -> Artifact {
    let stem = code_file
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "answer".to_string());
    let same_dir = |p: &Path| {
        let parent = p.parent().filter(|p| !p.as_os_str().is_empty());
        let here = std::fs::canonicalize(parent.unwrap_or(Path::new(".")));
        here.is_ok() && here.ok() == std::fs::canonicalize(dir).ok()
    };
    let own: Vec<String> = code_file
        .filter(|p| same_dir(p))
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .into_iter()
        .collect();
    let taken: Vec<&str> = own.iter().map(String::as_str).collect();
    crate::notebook::run_file(cells, &stem, &taken)
}

/// Writes `files` into `dir`; returns the Markdown block linking them
/// (images inline), or the error to print.
/// `result` is the run's result, which may name its images.
pub(crate) fn write_and_link(
    files: &[Artifact],
    dir: &Path,
    result: Option<&serde_json::Value>,
) -> Result<FilesBlock, String> {
    let written = write_files(files, dir)
        .map_err(|e| format!("could not write artifacts to {}: {e}", dir.display()))?;
    let shown: Vec<ShownFile> = files
        .iter()
        .filter(|a| written.iter().any(|w| w == Path::new(&a.name)))
        .map(|a| ShownFile {
            name: a.name.clone(),
            size: a.size,
            image: a.kind() == FileKind::Image,
            url: Some(link(dir, &a.name)),
        })
        .collect();
    Ok(FilesBlock::new(
        texts::image_links(&shown),
        result,
        |in_result| texts::files_md(&shown, &FilesHome::Local, &[], "", "", in_result),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_to_the_directory_as_given() {
        assert_eq!(link(Path::new("out"), "a b.png"), "out/a%20b.png");
        assert_eq!(link(Path::new("./out/"), "plots/c.csv"), "out/plots/c.csv");
        assert_eq!(link(Path::new("/tmp/x"), "d.png"), "/tmp/x/d.png");
    }
}
