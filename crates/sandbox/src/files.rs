//! The files a run left in `/out` as front ends use them: what kind of file
//! each is (by its bytes, not its name), a safe relative path, and writing
//! them into a directory.

use std::path::{Component, Path, PathBuf};

use super::types::Artifact;

/// What a file in `/out` is, as far as showing it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A PNG, JPEG or GIF image (its first bytes say so): shown inline.
    Image,
    /// An SVG drawing: linked, never inlined (it can carry script and
    /// GitHub strips inline SVG).
    Svg,
    /// Anything else (CSV, JSON, ...): linked.
    Other,
}

impl FileKind {
    /// The kind of `name` with contents `bytes`: an image only when the
    /// bytes start with a PNG, JPEG or GIF signature *and* the name has
    /// that extension, so a browser shows what the name promises.
    pub fn of(name: &str, bytes: &[u8]) -> FileKind {
        let ext = Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        let image = match ext.as_str() {
            "png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "jpg" | "jpeg" => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
            "gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
            _ => false,
        };
        if image {
            FileKind::Image
        } else if ext == "svg" {
            FileKind::Svg
        } else {
            FileKind::Other
        }
    }
}

impl Artifact {
    /// What the file is (see [`FileKind::of`]).
    pub fn kind(&self) -> FileKind {
        FileKind::of(&self.name, &self.bytes)
    }

    /// The name as a relative path of plain parts (no `..`, no root), or
    /// `None` when it is not one (the sandbox never sends such a name, but
    /// it is not trusted).
    pub fn rel_path(&self) -> Option<PathBuf> {
        let p = Path::new(&self.name);
        let plain =
            !self.name.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
        plain.then(|| p.to_path_buf())
    }
}

/// Writes `files` into `dir` (created), each at its relative path; files
/// whose name is not a plain relative path are skipped. Returns the paths
/// written.
pub fn write_files(files: &[Artifact], dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for a in files {
        let Some(rel) = a.rel_path() else {
            tracing::warn!("not writing `{}`: not a plain relative path", a.name);
            continue;
        };
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &a.bytes)?;
        written.push(rel);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn art(name: &str, bytes: &[u8]) -> Artifact {
        Artifact {
            name: name.into(),
            size: bytes.len() as u64,
            sha256: String::new(),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn images_are_known_by_their_bytes_and_name() {
        assert_eq!(
            FileKind::of("a.png", b"\x89PNG\r\n\x1a\nrest"),
            FileKind::Image
        );
        assert_eq!(
            FileKind::of("a.JPG", &[0xFF, 0xD8, 0xFF, 0xE0]),
            FileKind::Image
        );
        assert_eq!(FileKind::of("a.gif", b"GIF89a.."), FileKind::Image);
        // A name that lies about the bytes is a plain file.
        assert_eq!(FileKind::of("a.png", b"<svg onload=x>"), FileKind::Other);
        assert_eq!(FileKind::of("a.csv", b"\x89PNG\r\n\x1a\n"), FileKind::Other);
        assert_eq!(FileKind::of("a.svg", b"<svg/>"), FileKind::Svg);
    }

    #[test]
    fn only_plain_relative_names_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            art("a.csv", b"x\n1\n"),
            art("plots/b.png", b"png"),
            art("../escape", b"no"),
            art("/abs", b"no"),
        ];
        let written = write_files(&files, &dir.path().join("out")).unwrap();
        assert_eq!(
            written,
            [PathBuf::from("a.csv"), PathBuf::from("plots/b.png")]
        );
        assert_eq!(
            std::fs::read(dir.path().join("out/plots/b.png")).unwrap(),
            b"png"
        );
        assert!(!dir.path().join("escape").exists());
    }
}
