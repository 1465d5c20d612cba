//! `run --artifacts DIR`: the files the code left in `/out`, written into
//! `DIR` for `--code` and `--goal` alike, and (with `--format markdown`)
//! shown in the Markdown with links relative to where it is printed.

use std::path::Path;

use crate::github::texts::{self, FilesHome, ShownFile};
use crate::render::FilesBlock;
use crate::sandbox::{Artifact, FileKind, write_files};

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
