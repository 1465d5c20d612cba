//! The files a run left in `/out`, in the run record: name, size and
//! sha256 of each, so that `replay` can say which file came out different.

use serde::{Deserialize, Serialize};

use crate::sandbox::Artifact;

/// One file the code left in `/out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedFile {
    /// The name under `/out`.
    pub(crate) name: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Hex SHA-256 of its bytes.
    pub(crate) sha256: String,
}

impl RecordedFile {
    /// The record of `a`.
    pub(crate) fn of(a: &Artifact) -> RecordedFile {
        RecordedFile {
            name: a.name.clone(),
            size: a.size,
            sha256: a.sha256.clone(),
        }
    }
}

/// How the files of a replay differ from the recorded ones, one line per
/// file that differs, named: changed bytes (both hashes and sizes), a file
/// the run wrote and the replay did not, a file only the replay wrote.
pub(crate) fn file_differences(recorded: &[RecordedFile], replay: &[Artifact]) -> Vec<String> {
    let mut out = Vec::new();
    for r in recorded {
        match replay.iter().find(|a| a.name == r.name) {
            Some(a) if a.sha256 == r.sha256 => {}
            Some(a) => out.push(format!(
                "file `{}`: sha256 recorded {} ({} bytes), replay {} ({} bytes)",
                r.name, r.sha256, r.size, a.sha256, a.size
            )),
            None => out.push(format!(
                "file `{}` ({} bytes): the run wrote it, the replay did not",
                r.name, r.size
            )),
        }
    }
    for a in replay {
        if !recorded.iter().any(|r| r.name == a.name) {
            out.push(format!(
                "file `{}` ({} bytes): the replay wrote it, the run did not",
                a.name, a.size
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::sha256_hex;

    fn art(name: &str, bytes: &[u8]) -> Artifact {
        Artifact {
            name: name.into(),
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn each_file_that_differs_is_named() {
        let run = [
            art("a.png", b"one"),
            art("b.csv", b"x"),
            art("gone.txt", b"g"),
        ];
        let recorded: Vec<RecordedFile> = run.iter().map(RecordedFile::of).collect();
        let replay = [
            art("a.png", b"two!"),
            art("b.csv", b"x"),
            art("new.txt", b"n"),
        ];
        let d = file_differences(&recorded, &replay);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("file `a.png`: sha256 recorded "), "{d:?}");
        assert!(d[0].contains("(3 bytes), replay") && d[0].ends_with("(4 bytes)"));
        assert!(d[1].contains("`gone.txt`") && d[1].contains("the replay did not"));
        assert!(d[2].contains("`new.txt`") && d[2].contains("the run did not"));
        assert!(file_differences(&recorded, &run).is_empty());
    }
}
