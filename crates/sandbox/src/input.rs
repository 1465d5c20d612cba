//! One input file and how its bytes reach the sandbox: held in memory (a
//! small file a test or a caller made), or read from the workspace file in
//! chunks while it is sent, so a big input never sits whole in the bot's
//! memory. A file read from disk is checked against the size and SHA-256
//! it was admitted with as it streams; the last chunk is held back until
//! the check passes, so a file that changed after admission never reaches
//! the code complete.

use std::path::{Path, PathBuf};

use futures_util::Stream;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use super::sha256_hex;

/// Bytes read from a file per chunk while streaming it.
const CHUNK: usize = 256 * 1024;

/// One input file, copied into the sandbox as `/data/<name>` (read-only).
#[derive(Debug, Clone, PartialEq)]
pub struct InputFile {
    /// The name inside `/data`: a plain file name, or `github/<source>.csv`
    /// in the bot's one folder (see `Job`'s check).
    pub name: String,
    contents: Contents,
}

#[derive(Debug, Clone, PartialEq)]
enum Contents {
    Memory(Vec<u8>),
    File {
        path: PathBuf,
        size: u64,
        sha256: String,
    },
}

impl InputFile {
    /// An input whose bytes are held in memory.
    pub fn new(name: impl Into<String>, bytes: Vec<u8>) -> InputFile {
        InputFile {
            name: name.into(),
            contents: Contents::Memory(bytes),
        }
    }

    /// An input read from `path` when it is sent; `size` and `sha256` are
    /// what the file had when it was admitted, and are checked again then.
    pub fn from_file(
        name: impl Into<String>,
        path: impl Into<PathBuf>,
        size: u64,
        sha256: String,
    ) -> InputFile {
        InputFile {
            name: name.into(),
            contents: Contents::File {
                path: path.into(),
                size,
                sha256,
            },
        }
    }

    /// Hashes the file at `path` in chunks and returns it as an input named
    /// `name` (`Err`: the read failed).
    pub fn hash_file(name: String, path: &Path) -> std::io::Result<InputFile> {
        use std::io::Read;
        let mut f = std::fs::File::open(path)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; CHUNK];
        let mut size = 0u64;
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
            size += n as u64;
        }
        Ok(InputFile::from_file(
            name,
            path,
            size,
            hex::encode(hasher.finalize()),
        ))
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        match &self.contents {
            Contents::Memory(b) => b.len() as u64,
            Contents::File { size, .. } => *size,
        }
    }

    /// Hex SHA-256 of the contents.
    pub fn sha256(&self) -> String {
        match &self.contents {
            Contents::Memory(b) => sha256_hex(b),
            Contents::File { sha256, .. } => sha256.clone(),
        }
    }

    /// At most the first `max` bytes (for previews); empty when the file
    /// can no longer be read.
    pub fn head(&self, max: usize) -> Vec<u8> {
        match &self.contents {
            Contents::Memory(b) => b[..b.len().min(max)].to_vec(),
            Contents::File { path, .. } => {
                use std::io::Read;
                let mut out = Vec::new();
                if let Ok(f) = std::fs::File::open(path) {
                    let _ = f.take(max as u64).read_to_end(&mut out);
                }
                out
            }
        }
    }

    /// At most the last `max` bytes (a Parquet footer); empty when the file
    /// can no longer be read.
    pub fn tail(&self, max: usize) -> Vec<u8> {
        match &self.contents {
            Contents::Memory(b) => b[b.len().saturating_sub(max)..].to_vec(),
            Contents::File { path, size, .. } => {
                use std::io::{Read, Seek, SeekFrom};
                let mut out = Vec::new();
                if let Ok(mut f) = std::fs::File::open(path)
                    && f.seek(SeekFrom::Start(size.saturating_sub(max as u64)))
                        .is_ok()
                {
                    let _ = f.take(max as u64).read_to_end(&mut out);
                }
                out
            }
        }
    }

    /// The contents as one buffer (reads a file whole: for tests and small
    /// files only).
    pub fn read_all(&self) -> std::io::Result<Vec<u8>> {
        match &self.contents {
            Contents::Memory(b) => Ok(b.clone()),
            Contents::File { path, .. } => std::fs::read(path),
        }
    }

    /// The contents as chunks of at most 256 KiB. A file is read as the
    /// stream is polled and checked against its admitted size and SHA-256;
    /// on a mismatch the stream ends with an error instead of its last
    /// chunk.
    pub(crate) fn chunks(
        &self,
    ) -> impl Stream<Item = Result<Vec<u8>, InputChanged>> + Send + use<> {
        let name = self.name.clone();
        let contents = self.contents.clone();
        async_stream(name, contents)
    }
}

/// Why an input could not be sent as admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputChanged {
    /// The input's name under `/data`.
    pub(crate) name: String,
    /// What went wrong, worded for the user.
    pub(crate) problem: String,
}

fn async_stream(
    name: String,
    contents: Contents,
) -> impl Stream<Item = Result<Vec<u8>, InputChanged>> + Send {
    enum State {
        Memory(Option<Vec<u8>>),
        Start {
            path: PathBuf,
            size: u64,
            sha256: String,
        },
        Reading {
            file: tokio::fs::File,
            hasher: Box<Sha256>,
            read: u64,
            size: u64,
            sha256: String,
            held: Option<Vec<u8>>,
        },
        Done,
    }
    let state = match contents {
        Contents::Memory(b) => State::Memory(Some(b)),
        Contents::File { path, size, sha256 } => State::Start { path, size, sha256 },
    };
    futures_util::stream::unfold((state, name), |(state, name)| async move {
        let fail = |problem: String, name: &String| InputChanged {
            name: name.clone(),
            problem,
        };
        let mut state = state;
        loop {
            match state {
                State::Done => return None,
                State::Memory(None) => return None,
                State::Memory(Some(b)) => {
                    return Some((Ok(b), (State::Memory(None), name)));
                }
                State::Start { path, size, sha256 } => match tokio::fs::File::open(&path).await {
                    Ok(file) => {
                        state = State::Reading {
                            file,
                            hasher: Box::default(),
                            read: 0,
                            size,
                            sha256,
                            held: None,
                        };
                    }
                    Err(e) => {
                        let err = fail(format!("can no longer be read ({e})"), &name);
                        return Some((Err(err), (State::Done, name)));
                    }
                },
                State::Reading {
                    mut file,
                    mut hasher,
                    mut read,
                    size,
                    sha256,
                    held,
                } => {
                    let mut buf = vec![0u8; CHUNK];
                    let n = match file.read(&mut buf).await {
                        Ok(n) => n,
                        Err(e) => {
                            let err = fail(format!("can no longer be read ({e})"), &name);
                            return Some((Err(err), (State::Done, name)));
                        }
                    };
                    if n == 0 {
                        // The end: the held chunk goes out only if the file is still the one admitted.
                        let got = hex::encode(hasher.finalize());
                        if read != size || got != sha256 {
                            let err = fail(
                                format!(
                                    "changed after it was admitted ({size} bytes, SHA-256 {sha256}; now {read} bytes, {got}); run again once nothing writes to it"
                                ),
                                &name,
                            );
                            return Some((Err(err), (State::Done, name)));
                        }
                        return held.map(|h| (Ok(h), (State::Done, name)));
                    }
                    buf.truncate(n);
                    hasher.update(&buf);
                    read += n as u64;
                    if read > size {
                        let err = fail(
                            format!(
                                "changed after it was admitted: it grew past its admitted {size} bytes; run again once nothing writes to it"
                            ),
                            &name,
                        );
                        return Some((Err(err), (State::Done, name)));
                    }
                    let next = State::Reading {
                        file,
                        hasher,
                        read,
                        size,
                        sha256,
                        held: Some(buf),
                    };
                    match held {
                        Some(h) => return Some((Ok(h), (next, name))),
                        None => state = next,
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    async fn collect(f: &InputFile) -> Result<Vec<u8>, InputChanged> {
        let mut out = Vec::new();
        let mut s = std::pin::pin!(f.chunks());
        while let Some(c) = s.next().await {
            out.extend_from_slice(&c?);
        }
        Ok(out)
    }

    #[tokio::test]
    async fn a_file_streams_in_chunks_as_admitted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.csv");
        let bytes: Vec<u8> = (0..(CHUNK * 2 + 17)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let f = InputFile::hash_file("a.csv".into(), &p).unwrap();
        assert_eq!(f.size(), bytes.len() as u64);
        assert_eq!(f.sha256(), sha256_hex(&bytes));
        assert_eq!(f.head(3), bytes[..3].to_vec());
        let mut s = std::pin::pin!(f.chunks());
        let mut sizes = Vec::new();
        while let Some(c) = s.next().await {
            sizes.push(c.unwrap().len());
        }
        assert_eq!(sizes, vec![CHUNK, CHUNK, 17]);
        assert_eq!(collect(&f).await.unwrap(), bytes);
        let m = InputFile::new("m.csv", b"x\n".to_vec());
        assert_eq!(collect(&m).await.unwrap(), b"x\n");
    }

    #[tokio::test]
    async fn a_file_changed_after_admission_is_not_sent_complete() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.csv");
        std::fs::write(&p, b"a,b\n1,2\n").unwrap();
        let f = InputFile::hash_file("a.csv".into(), &p).unwrap();
        // Same size, other bytes: only the hash can tell.
        std::fs::write(&p, b"a,b\n9,9\n").unwrap();
        let mut s = std::pin::pin!(f.chunks());
        let first = s.next().await.unwrap();
        let e = first.unwrap_err();
        assert_eq!(e.name, "a.csv");
        assert!(e.problem.contains("changed after it was admitted"), "{e:?}");
        assert!(s.next().await.is_none());
        std::fs::write(&p, b"a,b\n1,2\n3,4\n").unwrap();
        assert!(collect(&f).await.is_err());
        std::fs::remove_file(&p).unwrap();
        let e = collect(&f).await.unwrap_err();
        assert!(e.problem.contains("can no longer be read"), "{e:?}");
    }
}
