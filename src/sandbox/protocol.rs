//! The wire protocol between the bot and the in-container runner.
//!
//! Bot → runner (container stdin): one JSON header line, the code, then each
//! input file's bytes. Runner → bot (container stdout): lines
//! `<nonce>:<kind>:<base64>` where kind is `o` (stdout chunk), `e` (stderr
//! chunk), `a` (artifact header), `c` (artifact chunk) or `r` (final report).
//! The nonce is random per run and known only to the bot and the runner, so
//! the code cannot forge frames even if it reaches the container's stdout.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};

use super::input::InputFile;
use super::types::{Audit, Job, Limits, RuntimeRules};

/// The runner's source, passed as `python3 -I -S -c <RUNNER>`.
pub(crate) const RUNNER: &str = include_str!("runner.py");

/// The longest frame line accepted; longer lines are treated as noise.
const MAX_LINE: usize = 1 << 20;

#[derive(Serialize)]
struct Header<'a> {
    nonce: &'a str,
    code_len: usize,
    inputs: Vec<InputHeader<'a>>,
    caps: Caps,
    rules: &'a RuntimeRules,
}

#[derive(Serialize)]
struct InputHeader<'a> {
    name: &'a str,
    size: u64,
}

#[derive(Serialize)]
struct Caps {
    stdout: u64,
    stderr: u64,
    artifacts_max_files: u32,
    artifacts_max_bytes: u64,
    /// The runner kills the code itself a little after this, so a container
    /// whose bot died does not run on until its expiry.
    timeout_ms: u64,
}

/// Encodes the start of the job written to the runner's stdin: the header
/// and the code. Each input's bytes follow in order, streamed by the
/// backend from [`InputFile::chunks`], so no input is held whole here.
pub(crate) fn encode_job(nonce: &str, job: &Job, limits: &Limits) -> Vec<u8> {
    let header = Header {
        nonce,
        code_len: job.code.len(),
        inputs: job
            .inputs
            .iter()
            .map(|f: &InputFile| InputHeader {
                name: &f.name,
                size: f.size(),
            })
            .collect(),
        caps: Caps {
            stdout: limits.stdout_cap.bytes(),
            stderr: limits.stderr_cap.bytes(),
            artifacts_max_files: limits.artifacts_max_files,
            artifacts_max_bytes: limits.artifacts_max_bytes.bytes(),
            timeout_ms: limits.timeout.as_millis() as u64,
        },
        rules: &job.rules,
    };
    let mut out = serde_json::to_vec(&header).expect("header serializes");
    out.push(b'\n');
    out.extend_from_slice(job.code.as_bytes());
    out
}

/// An artifact as announced by the runner.
#[derive(Debug, Deserialize)]
pub(crate) struct ArtifactHeader {
    /// Path relative to `/out`.
    pub(crate) name: String,
}

/// An artifact entry of the final report.
#[derive(Debug, Deserialize)]
pub(crate) struct ReportedArtifact {
    /// Path relative to `/out`.
    pub(crate) name: String,
    /// Size in bytes.
    pub(crate) size: u64,
    /// Hex SHA-256 computed inside the container.
    pub(crate) sha256: String,
}

/// The runner's final report.
#[derive(Debug, Deserialize)]
pub(crate) struct RunnerReport {
    /// Exit code of the code's process, when it exited.
    pub(crate) exit_code: Option<i64>,
    /// Signal that ended the code's process.
    pub(crate) signal: Option<i32>,
    /// Milliseconds the code's process ran.
    pub(crate) duration_ms: u64,
    /// Peak RSS of the code's process in bytes.
    pub(crate) peak_memory_bytes: u64,
    /// User + system CPU time in milliseconds.
    pub(crate) cpu_time_ms: u64,
    /// Bytes the code wrote to stdout in total.
    pub(crate) stdout_bytes: u64,
    /// Bytes the code wrote to stderr in total.
    pub(crate) stderr_bytes: u64,
    /// OOM kills in the container's cgroup while the code ran.
    pub(crate) oom_kills: Option<i64>,
    /// The audit trail.
    pub(crate) audit: Audit,
    /// Artifacts with their checksums.
    pub(crate) artifacts: Vec<ReportedArtifact>,
    /// Runner notes (dropped artifacts, ...).
    pub(crate) notes: Vec<String>,
    /// Milliseconds the code waited after handover for the child (its
    /// preload) to be ready.
    #[serde(default)]
    pub(crate) start_wait_ms: u64,
}

/// One decoded frame.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A chunk of the code's stdout.
    Stdout(Vec<u8>),
    /// A chunk of the code's stderr.
    Stderr(Vec<u8>),
    /// The start of an artifact.
    Artifact(ArtifactHeader),
    /// A chunk of the current artifact.
    ArtifactChunk(Vec<u8>),
    /// The code has started (the child finished preloading); the deadline
    /// counts from here.
    Started,
    /// The final report.
    Report(Box<RunnerReport>),
    /// A line with the nonce that does not decode: the runner's own output
    /// damaged or misread (a bug, never the code's doing). What failed.
    Unreadable {
        /// The frame kind (`r` is the report).
        kind: char,
        /// Why it could not be read.
        problem: String,
    },
}

/// Splits the container's stdout into frames, with bounded memory.
#[derive(Debug)]
pub(crate) struct FrameReader {
    prefix: Vec<u8>,
    pending: Vec<u8>,
    overlong: bool,
    /// Bytes seen that were not valid frames (e.g. the code writing to the
    /// container's stdout directly).
    pub(crate) noise_bytes: u64,
}

impl FrameReader {
    /// A reader for frames tagged with `nonce`.
    pub(crate) fn new(nonce: &str) -> Self {
        FrameReader {
            prefix: format!("{nonce}:").into_bytes(),
            pending: Vec::new(),
            overlong: false,
            noise_bytes: 0,
        }
    }

    /// Feeds bytes and returns the complete frames found in them.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(pos);
            bytes = &rest[1..];
            if self.overlong {
                self.noise_bytes += head.len() as u64 + 1;
                self.overlong = false;
                continue;
            }
            self.pending.extend_from_slice(head);
            let line = std::mem::take(&mut self.pending);
            match self.decode(&line) {
                Some(frame) => frames.push(frame),
                None => self.noise_bytes += line.len() as u64 + 1,
            }
        }
        if self.overlong || self.pending.len() + bytes.len() > MAX_LINE {
            self.noise_bytes += (self.pending.len() + bytes.len()) as u64;
            self.pending.clear();
            self.overlong = true;
        } else {
            self.pending.extend_from_slice(bytes);
        }
        frames
    }

    /// `None` for a line without the nonce (noise); a line with it is a
    /// frame, or [`Frame::Unreadable`] saying what failed.
    fn decode(&self, line: &[u8]) -> Option<Frame> {
        let rest = line.strip_prefix(self.prefix.as_slice())?;
        let (&kind, rest) = rest.split_first().unwrap_or((&b'?', &[]));
        let unreadable = |problem: String| Frame::Unreadable {
            kind: char::from(kind),
            problem,
        };
        let payload = match rest.strip_prefix(b":").map(|p| B64.decode(p)) {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Some(unreadable(format!("not base64: {e}"))),
            None => return Some(unreadable("no `:` after the kind".into())),
        };
        Some(match kind {
            b'o' => Frame::Stdout(payload),
            b'e' => Frame::Stderr(payload),
            b'a' => match serde_json::from_slice(&payload) {
                Ok(h) => Frame::Artifact(h),
                Err(e) => unreadable(e.to_string()),
            },
            b'c' => Frame::ArtifactChunk(payload),
            b's' => Frame::Started,
            b'r' => match serde_json::from_slice(&payload) {
                Ok(r) => Frame::Report(Box::new(r)),
                Err(e) => unreadable(e.to_string()),
            },
            _ => unreadable("unknown kind".into()),
        })
    }
}

/// Keeps at most `cap` bytes of a stream and remembers whether more came.
#[derive(Debug)]
pub(crate) struct CappedBuffer {
    cap: usize,
    buf: Vec<u8>,
    /// True once bytes beyond the cap arrived.
    pub(crate) truncated: bool,
}

impl CappedBuffer {
    /// An empty buffer keeping at most `cap` bytes.
    pub(crate) fn new(cap: u64) -> Self {
        CappedBuffer {
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
            buf: Vec::new(),
            truncated: false,
        }
    }

    /// Appends what fits; marks truncation for the rest.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.buf.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(nonce: &str, kind: char, payload: &[u8]) -> Vec<u8> {
        format!("{nonce}:{kind}:{}\n", B64.encode(payload)).into_bytes()
    }

    #[test]
    fn frames_split_across_chunks_are_reassembled() {
        let mut r = FrameReader::new("n1");
        let mut all = line("n1", 'o', b"hello\n");
        all.extend(line("n1", 'e', b"oops"));
        let (a, b) = all.split_at(7);
        assert!(r.push(a).is_empty());
        let frames = r.push(b);
        assert!(matches!(&frames[0], Frame::Stdout(p) if p == b"hello\n"));
        assert!(matches!(&frames[1], Frame::Stderr(p) if p == b"oops"));
        assert_eq!(r.noise_bytes, 0);
    }

    #[test]
    fn lines_without_the_nonce_are_noise() {
        let mut r = FrameReader::new("secret");
        let mut bytes = line("guess", 'o', b"forged");
        bytes.extend(b"plain text\n");
        bytes.extend(line("secret", 'o', b"real"));
        let frames = r.push(&bytes);
        assert_eq!(frames.len(), 1);
        assert!(matches!(&frames[0], Frame::Stdout(p) if p == b"real"));
        assert!(r.noise_bytes > 0);
    }

    #[test]
    fn a_damaged_report_is_named_not_dropped_as_noise() {
        let mut r = FrameReader::new("n");
        let frames = r.push(&line("n", 'r', br#"{"duration_ms": -3}"#));
        assert_eq!(r.noise_bytes, 0);
        match &frames[..] {
            [Frame::Unreadable { kind: 'r', problem }] => {
                assert!(
                    problem.contains("duration_ms") || problem.contains("-3"),
                    "{problem}"
                )
            }
            other => panic!("{other:?}"),
        }
        let frames = r.push(b"n:o:%%%\n");
        assert!(matches!(&frames[..], [Frame::Unreadable { kind: 'o', .. }]));
    }

    #[test]
    fn an_endless_line_does_not_grow_memory() {
        let mut r = FrameReader::new("n");
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            assert!(r.push(&chunk).is_empty());
        }
        assert!(r.pending.len() <= MAX_LINE);
        let frames = r.push(&[b"\n".as_slice(), &line("n", 'o', b"after")].concat());
        assert_eq!(frames.len(), 1);
        assert_eq!(r.noise_bytes, 64 * 64 * 1024 + 1);
    }

    #[test]
    fn capped_buffer_keeps_the_head_and_flags_the_rest() {
        let mut b = CappedBuffer::new(5);
        b.push(b"abc");
        assert!(!b.truncated);
        b.push(b"defg");
        assert!(b.truncated);
        assert_eq!(b.text(), "abcde");
    }

    #[test]
    fn job_encoding_puts_the_code_after_the_header_and_leaves_inputs_to_the_stream() {
        let job = Job {
            code: "print(1)".into(),
            inputs: vec![InputFile::new("a.csv", b"x\n1\n".to_vec())],
            rules: RuntimeRules::default(),
        };
        let bytes = encode_job("nn", &job, &Limits::default());
        let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
        let header: serde_json::Value = serde_json::from_slice(&bytes[..nl]).unwrap();
        assert_eq!(header["code_len"], 8);
        assert_eq!(header["inputs"][0]["size"], 4);
        assert_eq!(&bytes[nl + 1..], b"print(1)");
    }
}
